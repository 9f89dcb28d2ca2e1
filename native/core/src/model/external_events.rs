//! How other agents' hook events map onto our canonical events. One table, used by the adapters of
//! the `chokepoint` CLI and rendered into docs/event-mapping.md (a test keeps the two in step).
//!
//! Where an agent has no equivalent of ours there is no row; where one of theirs has no equivalent of
//! ours the row maps to `None` and says why, so that "this hook never fires" is written down rather
//! than discovered (peers' complaint: hooks that silently never fire).

use crate::model::event::EventKind;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    ClaudeCode,
    Cursor,
    GeminiCli,
    VsCode,
    Codex,
    Copilot,
}

impl Agent {
    pub const ALL: [Agent; 6] = [Agent::ClaudeCode, Agent::Cursor, Agent::GeminiCli, Agent::VsCode, Agent::Codex, Agent::Copilot];

    /// The agent's name for people.
    pub fn as_str(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "Claude Code",
            Agent::Cursor => "Cursor",
            Agent::GeminiCli => "Gemini CLI",
            Agent::VsCode => "VS Code's agent",
            Agent::Codex => "Codex CLI",
            Agent::Copilot => "Copilot CLI",
        }
    }

    /// The agent's id: `chokepoint hook --agent <id>`, the prefix of its sessions (`claude:<session>`)
    /// and the `agent` of its records, which is how the gatekeeper finds the agent's own tools.
    pub fn id(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude",
            Agent::Cursor => "cursor",
            Agent::GeminiCli => "gemini",
            Agent::VsCode => "vscode",
            Agent::Codex => "codex",
            Agent::Copilot => "copilot",
        }
    }

    /// The agent an id names, if any.
    pub fn from_id(id: &str) -> Option<Agent> {
        Agent::ALL.into_iter().find(|a| a.id() == id)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExternalEvent {
    pub agent: Agent,
    pub name: &'static str,
    pub maps_to: Option<EventKind>,
    /// The tool name the event implies when it is tool-specific (Cursor's `beforeShellExecution`).
    pub tool: Option<&'static str>,
    pub note: &'static str,
}

const fn row(
    agent: Agent,
    name: &'static str,
    maps_to: Option<EventKind>,
    tool: Option<&'static str>,
    note: &'static str,
) -> ExternalEvent {
    ExternalEvent { agent, name, maps_to, tool, note }
}

use Agent::{ClaudeCode, Codex, Copilot, Cursor, GeminiCli, VsCode};
use EventKind::*;

pub const EXTERNAL_EVENTS: &[ExternalEvent] = &[
    row(
        ClaudeCode,
        "SessionStart",
        Some(SessionStart),
        None,
        "also after a compaction (`source: compact`): the rules are handed over again",
    ),
    row(ClaudeCode, "UserPromptSubmit", Some(TaskStart), None, "a prompt starts a task"),
    row(ClaudeCode, "PreToolUse", Some(PreToolUse), None, ""),
    row(
        ClaudeCode,
        "PermissionRequest",
        Some(PreToolUse),
        None,
        "the permission step of the same call; judged as PreToolUse (not installed: PreToolUse already judged it)",
    ),
    row(ClaudeCode, "PostToolUse", Some(PostToolUse), None, ""),
    row(ClaudeCode, "PostToolUseFailure", Some(PostToolUse), None, "a tool that failed; recorded"),
    row(ClaudeCode, "Notification", None, None, "informational; nothing to decide"),
    row(ClaudeCode, "SubagentStart", Some(TaskStart), None, "a sub-agent's task; it works under the session's intent"),
    row(
        ClaudeCode,
        "Stop",
        Some(BeforeSubmit),
        None,
        "blocking it makes the agent continue: a completion gate; let through, the turn ends and the session's lease yields",
    ),
    row(ClaudeCode, "SubagentStop", Some(BeforeSubmit), None, "a sub-agent's completion gate; sub-agents are governed like agents"),
    row(
        ClaudeCode,
        "PreCompact",
        Some(PreCompact),
        None,
        "`manual` or `auto` in the subject; the context goes back at the SessionStart that follows",
    ),
    row(ClaudeCode, "PostCompact", None, None, "after the fact; SessionStart (`compact`) follows"),
    row(ClaudeCode, "PermissionDenied", None, None, "after the fact; the denial is already recorded"),
    row(ClaudeCode, "SessionEnd", Some(SessionEnd), None, "releases the session's intent"),
    row(Codex, "SessionStart", Some(SessionStart), None, ""),
    row(Codex, "UserPromptSubmit", Some(TaskStart), None, "a prompt starts a task"),
    row(Codex, "PreToolUse", Some(PreToolUse), None, "has no `ask`: an ask is a deny that names who approves"),
    row(Codex, "PermissionRequest", Some(PreToolUse), None, "the permission step of the same call (not installed)"),
    row(Codex, "PostToolUse", Some(PostToolUse), None, ""),
    row(Codex, "PreCompact", Some(PreCompact), None, "takes no context"),
    row(Codex, "PostCompact", None, None, "after the fact"),
    row(Codex, "SubagentStart", Some(TaskStart), None, "a sub-agent's task"),
    row(Codex, "SubagentStop", Some(BeforeSubmit), None, "a sub-agent's completion gate"),
    row(Codex, "Stop", Some(BeforeSubmit), None, "a completion gate; let through, the turn ends and the session's lease yields"),
    row(Codex, "Interrupt", None, None, "informational"),
    row(Codex, "SessionEnd", Some(SessionEnd), None, "releases the session's intent"),
    row(GeminiCli, "SessionStart", Some(SessionStart), None, ""),
    row(GeminiCli, "BeforeAgent", Some(TaskStart), None, "after the prompt, before planning"),
    row(GeminiCli, "BeforeModel", Some(TurnPrepare), None, "the last point before inference"),
    row(GeminiCli, "BeforeToolSelection", Some(TurnPrepare), None, "may narrow the tools offered"),
    row(GeminiCli, "AfterModel", None, None, "fires for every streamed chunk, not once per turn"),
    row(GeminiCli, "BeforeTool", Some(PreToolUse), None, ""),
    row(GeminiCli, "AfterTool", Some(PostToolUse), None, ""),
    row(
        GeminiCli,
        "AfterAgent",
        Some(BeforeSubmit),
        None,
        "after the agent's answer; a deny retries with the reason: a completion gate; let through, the turn ends and the session's lease yields",
    ),
    row(GeminiCli, "PreCompress", Some(PreCompact), None, "fired asynchronously; advisory"),
    row(GeminiCli, "Notification", None, None, "informational; nothing to decide"),
    row(GeminiCli, "SessionEnd", Some(SessionEnd), None, "not awaited by the agent"),
    row(Copilot, "sessionStart", Some(SessionStart), None, "fires after the first prompt's events"),
    row(Copilot, "userPromptSubmitted", Some(TaskStart), None, "a prompt starts a task"),
    row(Copilot, "userPromptTransformed", None, None, "informational"),
    row(Copilot, "preToolUse", Some(PreToolUse), None, ""),
    row(Copilot, "permissionRequest", Some(PreToolUse), None, "the permission step of the same call (not installed)"),
    row(Copilot, "preMcpToolCall", Some(PreToolUse), None, "the MCP tool's call (not installed: preToolUse sees it)"),
    row(Copilot, "postToolUse", Some(PostToolUse), None, ""),
    row(Copilot, "postToolUseFailure", Some(PostToolUse), None, "a tool that failed; recorded"),
    row(Copilot, "agentStop", Some(BeforeSubmit), None, "a completion gate; let through, the turn ends and the session's lease yields"),
    row(Copilot, "subagentStart", Some(TaskStart), None, "a sub-agent's task"),
    row(Copilot, "subagentStop", Some(BeforeSubmit), None, "a sub-agent's completion gate"),
    row(Copilot, "preCompact", Some(PreCompact), None, ""),
    row(Copilot, "notification", None, None, "informational"),
    row(Copilot, "errorOccurred", Some(Error), None, ""),
    row(Copilot, "sessionEnd", Some(SessionEnd), None, "releases the session's intent"),
    row(Cursor, "sessionStart", Some(SessionStart), None, ""),
    row(Cursor, "beforeSubmitPrompt", Some(TaskStart), None, "a prompt starts a task"),
    row(Cursor, "preToolUse", Some(PreToolUse), None, "the one installed: it sees every tool and may rewrite"),
    row(
        Cursor,
        "beforeShellExecution",
        Some(PreToolUse),
        Some("execute_command"),
        "the same call as preToolUse: not installed, or it is judged twice",
    ),
    row(Cursor, "beforeMCPExecution", Some(PreToolUse), None, "tool is the MCP tool's name; the same call as preToolUse (not installed)"),
    row(Cursor, "beforeReadFile", Some(PreToolUse), Some("read_file"), ""),
    row(Cursor, "postToolUse", Some(PostToolUse), None, ""),
    row(Cursor, "postToolUseFailure", Some(PostToolUse), None, "a tool that failed; recorded"),
    row(Cursor, "afterShellExecution", Some(PostToolUse), Some("execute_command"), ""),
    row(Cursor, "afterMCPExecution", Some(PostToolUse), None, ""),
    row(Cursor, "afterFileEdit", Some(PostToolUse), Some("write_to_file"), "observes an edit already made"),
    row(Cursor, "subagentStart", Some(TaskStart), None, "a sub-agent's task"),
    row(Cursor, "subagentStop", Some(BeforeSubmit), None, "a sub-agent's completion gate"),
    row(Cursor, "preCompact", Some(PreCompact), None, ""),
    row(Cursor, "afterAgentResponse", None, None, "informational"),
    row(Cursor, "afterAgentThought", None, None, "informational"),
    row(Cursor, "stop", Some(BeforeSubmit), None, "a completion gate; let through, the turn ends and the session's lease yields"),
    row(Cursor, "sessionEnd", Some(SessionEnd), None, ""),
    row(Cursor, "beforeTabFileRead", None, None, "Tab completions, not the agent"),
    row(Cursor, "afterTabFileEdit", None, None, "Tab completions, not the agent"),
    row(
        VsCode,
        "SessionStart",
        Some(SessionStart),
        None,
        "runs the `sessionStart` entry of .github/hooks/chokepoint.json, the file VS Code shares with Copilot CLI",
    ),
    row(VsCode, "UserPromptSubmit", Some(TaskStart), None, "a prompt starts a task; runs the `userPromptSubmitted` entry"),
    row(VsCode, "PreToolUse", Some(PreToolUse), None, "runs the `preToolUse` entry"),
    row(VsCode, "PostToolUse", Some(PostToolUse), None, "does not fire for a denied call; runs the `postToolUse` entry"),
    row(
        VsCode,
        "PreCompact",
        Some(PreCompact),
        None,
        "not installed: the shared file is in Copilot CLI's format, which has no key VS Code runs on PreCompact",
    ),
    row(
        VsCode,
        "SubagentStart",
        Some(TaskStart),
        None,
        "a sub-agent's task; not installed: VS Code does not read Copilot CLI's `subagentStart` key",
    ),
    row(VsCode, "SubagentStop", Some(BeforeSubmit), None, "a sub-agent's completion gate; runs the `subagentStop` entry"),
    row(
        VsCode,
        "Stop",
        Some(BeforeSubmit),
        None,
        "a completion gate; runs the `agentStop` entry; let through, the turn ends and the session's lease yields (the chat's only end VS Code tells)",
    ),
    row(VsCode, "SessionEnd", Some(SessionEnd), None, "read in a hooks file (`sessionEnd`), never fired by Copilot Chat 0.67"),
    row(VsCode, "ErrorOccurred", Some(Error), None, "read in a hooks file (`errorOccurred`), never fired by Copilot Chat 0.67"),
];

/// The events that end an agent's turn (not a sub-agent's): each agent's completion gate of its
/// main loop. Let through, the turn is over and the session's lease yields (`scope::leases`: free
/// for another session to take, renewed by this session's next call if nobody did); the session
/// may go on with another turn, so it is not released. `SessionEnd` releases.
pub const TURN_ENDS: &[(Agent, &str)] =
    &[(ClaudeCode, "Stop"), (Codex, "Stop"), (GeminiCli, "AfterAgent"), (Copilot, "agentStop"), (Cursor, "stop"), (VsCode, "Stop")];

/// Whether `agent`'s event `name` ends a turn of the session ([`TURN_ENDS`]).
pub fn ends_turn(agent: Agent, name: &str) -> bool {
    TURN_ENDS.iter().any(|(a, n)| *a == agent && *n == name)
}

/// The keys VS Code's agent reads in a hooks file and the event each runs on (its own, Claude
/// Code's and Copilot CLI's spellings, from the table in VS Code 1.139's workbench). Every
/// `.github/hooks/*.json` is read by both VS Code and Copilot CLI, so `chokepoint init` writes the
/// shared file in Copilot CLI's keys; this is how a key of that file becomes VS Code's event. A key
/// not listed is ignored by VS Code.
pub const VSCODE_FILE_KEYS: &[(&str, &str)] = &[
    ("SessionStart", "SessionStart"),
    ("SessionEnd", "SessionEnd"),
    ("UserPromptSubmit", "UserPromptSubmit"),
    ("PreToolUse", "PreToolUse"),
    ("PostToolUse", "PostToolUse"),
    ("PreCompact", "PreCompact"),
    ("SubagentStart", "SubagentStart"),
    ("SubagentStop", "SubagentStop"),
    ("Stop", "Stop"),
    ("ErrorOccurred", "ErrorOccurred"),
    ("sessionStart", "SessionStart"),
    ("sessionEnd", "SessionEnd"),
    ("userPromptSubmitted", "UserPromptSubmit"),
    ("preToolUse", "PreToolUse"),
    ("postToolUse", "PostToolUse"),
    ("agentStop", "Stop"),
    ("subagentStop", "SubagentStop"),
    ("errorOccurred", "ErrorOccurred"),
];

/// The event VS Code's agent runs a hooks file's `key` on, if it reads that key.
pub fn vscode_event_of_key(key: &str) -> Option<&'static str> {
    VSCODE_FILE_KEYS.iter().find(|(k, _)| *k == key).map(|(_, event)| *event)
}

/// The canonical event (and implied tool) for another agent's event name, if it has one.
pub fn lookup(agent: Agent, name: &str) -> Option<&'static ExternalEvent> {
    EXTERNAL_EVENTS.iter().find(|e| e.agent == agent && e.name == name)
}

/// docs/event-mapping.md, rendered from the table.
pub fn render_markdown() -> String {
    let mut out = String::from(
        "# How other agents' hook events map onto Chokepoint's\n\n\
         Generated from `native/core/src/model/external_events.rs` (`UPDATE_DOCS=1 cargo test -p chokepoint-core --test engine`);\n\
         do not edit by hand. An event that maps to nothing is listed with the reason, so a hook that never\n\
         fires is documented rather than discovered.\n",
    );
    for agent in Agent::ALL {
        out += &format!("\n## {}\n\n| their event | our event | tool | note |\n|---|---|---|---|\n", agent.as_str());
        for e in EXTERNAL_EVENTS.iter().filter(|e| e.agent == agent) {
            out += &format!(
                "| `{}` | {} | {} | {} |\n",
                e.name,
                e.maps_to.map(|k| format!("`{k}`")).unwrap_or_else(|| "none".into()),
                e.tool.map(|t| format!("`{t}`")).unwrap_or_default(),
                e.note
            );
        }
    }
    out
}
