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
}

impl Agent {
    pub const ALL: [Agent; 5] = [Agent::ClaudeCode, Agent::Cursor, Agent::GeminiCli, Agent::VsCode, Agent::Codex];

    pub fn as_str(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "Claude Code",
            Agent::Cursor => "Cursor",
            Agent::GeminiCli => "Gemini CLI",
            Agent::VsCode => "VS Code agent hooks",
            Agent::Codex => "Codex CLI",
        }
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

use Agent::{ClaudeCode, Codex, Cursor, GeminiCli, VsCode};
use EventKind::*;

pub const EXTERNAL_EVENTS: &[ExternalEvent] = &[
    row(ClaudeCode, "SessionStart", Some(SessionStart), None, ""),
    row(ClaudeCode, "UserPromptSubmit", Some(TaskStart), None, "a prompt starts a task"),
    row(ClaudeCode, "PreToolUse", Some(PreToolUse), None, ""),
    row(ClaudeCode, "PermissionRequest", Some(PreToolUse), None, "the permission step of the same call; judged as PreToolUse"),
    row(ClaudeCode, "PostToolUse", Some(PostToolUse), None, ""),
    row(ClaudeCode, "Notification", None, None, "informational; nothing to decide"),
    row(ClaudeCode, "Stop", Some(BeforeSubmit), None, "blocking it makes the agent continue: a completion gate"),
    row(ClaudeCode, "SubagentStop", Some(BeforeSubmit), None, "a sub-agent's completion gate; sub-agents are governed like agents"),
    row(ClaudeCode, "PreCompact", Some(PreCompact), None, "`manual` or `auto` in the subject"),
    row(ClaudeCode, "SessionEnd", Some(SessionEnd), None, ""),
    row(Cursor, "sessionStart", Some(SessionStart), None, ""),
    row(Cursor, "beforeSubmitPrompt", Some(TaskStart), None, "a prompt starts a task"),
    row(Cursor, "preToolUse", Some(PreToolUse), None, ""),
    row(Cursor, "beforeShellExecution", Some(PreToolUse), Some("execute_command"), ""),
    row(Cursor, "beforeMCPExecution", Some(PreToolUse), None, "tool is the MCP tool's name"),
    row(Cursor, "beforeReadFile", Some(PreToolUse), Some("read_file"), ""),
    row(Cursor, "postToolUse", Some(PostToolUse), None, ""),
    row(Cursor, "afterShellExecution", Some(PostToolUse), Some("execute_command"), ""),
    row(Cursor, "afterFileEdit", Some(PostToolUse), Some("write_to_file"), "observes an edit already made"),
    row(Cursor, "preCompact", Some(PreCompact), None, ""),
    row(Cursor, "stop", Some(BeforeSubmit), None, "a completion gate"),
    row(Cursor, "sessionEnd", Some(SessionEnd), None, ""),
    row(GeminiCli, "SessionStart", Some(SessionStart), None, ""),
    row(GeminiCli, "BeforeAgent", Some(TaskStart), None, "after the prompt, before planning"),
    row(GeminiCli, "BeforeModel", Some(TurnPrepare), None, "the last point before inference"),
    row(GeminiCli, "BeforeToolSelection", Some(TurnPrepare), None, "may narrow the tools offered"),
    row(GeminiCli, "AfterModel", Some(TurnEnd), None, ""),
    row(GeminiCli, "BeforeTool", Some(PreToolUse), None, ""),
    row(GeminiCli, "AfterTool", Some(PostToolUse), None, ""),
    row(GeminiCli, "AfterAgent", Some(BeforeSubmit), None, "after the agent loop; a completion gate"),
    row(GeminiCli, "PreCompress", Some(PreCompact), None, ""),
    row(GeminiCli, "Notification", None, None, "informational; nothing to decide"),
    row(GeminiCli, "SessionEnd", Some(SessionEnd), None, ""),
    row(VsCode, "SessionStart", Some(SessionStart), None, ""),
    row(VsCode, "UserPromptSubmit", Some(TaskStart), None, "a prompt starts a task"),
    row(VsCode, "PreToolUse", Some(PreToolUse), None, ""),
    row(VsCode, "PostToolUse", Some(PostToolUse), None, ""),
    row(VsCode, "PreCompact", Some(PreCompact), None, ""),
    row(VsCode, "SubagentStart", Some(TaskStart), None, "a sub-agent's task"),
    row(VsCode, "SubagentStop", Some(BeforeSubmit), None, "a sub-agent's completion gate"),
    row(VsCode, "Stop", Some(BeforeSubmit), None, "a completion gate"),
    row(Codex, "SessionStart", Some(SessionStart), None, ""),
    row(Codex, "UserPromptSubmit", Some(TaskStart), None, "a prompt starts a task"),
    row(Codex, "PreToolUse", Some(PreToolUse), None, ""),
    row(Codex, "PermissionRequest", Some(PreToolUse), None, "the permission step of the same call"),
    row(Codex, "PostToolUse", Some(PostToolUse), None, ""),
    row(Codex, "Stop", Some(BeforeSubmit), None, "a completion gate"),
];

/// The canonical event (and implied tool) for another agent's event name, if it has one.
pub fn lookup(agent: Agent, name: &str) -> Option<&'static ExternalEvent> {
    EXTERNAL_EVENTS.iter().find(|e| e.agent == agent && e.name == name)
}

/// docs/event-mapping.md, rendered from the table.
pub fn render_markdown() -> String {
    let mut out = String::from(
        "# How other agents' hook events map onto Chokepoint's\n\n\
         Generated from `native/core/src/external_events.rs` (`UPDATE_DOCS=1 cargo test -p chokepoint-core --test engine`);\n\
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
