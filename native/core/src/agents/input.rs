//! Another agent's hook input, read into one shape: which of our events it is, the session (named by
//! agent, so two agents' ids never meet), the sub-agent, the model, the tool and its input. Each
//! agent's fields are documented in docs/agents/protocols.md; this file is where they are read.
//!
//! Sub-agents: Claude Code's input carries the parent's `session_id` with `agent_id`/`agent_type`,
//! Copilot CLI's its own `sessionId` with the parent's as `parentAgentId` (`parse` takes that), Gemini
//! CLI's the parent's `session_id` unmarked. Where a relative path is resolved from is each client's
//! rule, held by `Call::base` (`scope/canonical.rs` judges it).

use crate::agents::error::InputError;
use crate::model::event::{EventKind, PathBase};
use crate::model::external_events::{self, Agent};
use crate::model::governance::{SCOPE_EXPANSION_TOOL, SELECT_INTENT_TOOL};
use serde_json::Value;
use std::path::Path;

/// The handshake's tools as our MCP server (`chokepoint mcp`, server `chokepoint`) offers them.
pub const MCP_TOOLS: [&str; 4] = ["list_intents", SELECT_INTENT_TOOL, "intent_context", SCOPE_EXPANSION_TOOL];

/// One hook call of another agent.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub agent: Agent,
    /// The agent's name for the event (`PreToolUse`, `BeforeTool`, `preToolUse`).
    pub event: String,
    /// Ours, when the agent's event maps onto one.
    pub kind: Option<EventKind>,
    /// `<agent>:<the agent's session id>`.
    pub session: Option<String>,
    /// A sub-agent acting for the session (`<type>:<id>`).
    pub subagent: Option<String>,
    pub model: Option<String>,
    /// The tool as we know it: the agent's name, or the handshake tool's bare name when the agent
    /// called it through our MCP server.
    pub tool: Option<String>,
    /// What hooks judge: the tool's input (PreToolUse), its input and result (PostToolUse), the
    /// prompt (a prompt event), else the whole hook input.
    pub subject: Value,
    /// The agent's working directory, when it says.
    pub cwd: Option<String>,
    /// Claude Code's permission mode (`default`, `acceptEdits`, `bypassPermissions`, `plan`).
    pub permission_mode: Option<String>,
}

impl Call {
    /// Whether this call is a gate: a tool about to run. Only a gate is denied when we fail; other
    /// events never block on our account.
    pub fn is_gate(&self) -> bool {
        self.kind == Some(EventKind::PreToolUse)
    }
}

impl Call {
    /// The folder a relative path of this call lands in, by the agent's own rule (checked against
    /// the real clients, docs/agents/protocols.md): every agent resolves a tool's relative path
    /// against its working folder, which its input gives as `cwd` (Cursor's, second-hand, as its
    /// first `workspace_roots` when it sends no `cwd`), except Gemini CLI's `replace`, which looks
    /// for a relative path that is not in that folder elsewhere in its workspace
    /// (`pathCorrector.ts`'s `correctPath`). Where the input does not say, nobody knows.
    pub fn base(&self) -> PathBase {
        let Some(cwd) = self.cwd.as_deref().map(Path::new).filter(|c| c.is_absolute()) else {
            return PathBase::Unknown(format!(
                "{}'s hook input does not say which folder it resolves it against (no `cwd`)",
                self.agent.as_str()
            ));
        };
        if self.agent == Agent::GeminiCli
            && self.tool.as_deref() == Some("replace")
            && let Some(rel) = self.subject.get("file_path").and_then(Value::as_str).filter(|p| !Path::new(p).is_absolute())
            && !cwd.join(rel).exists()
        {
            return PathBase::Unknown(format!(
                "Gemini CLI's `replace` looks for a file that is not in its folder (`{}`) elsewhere in its workspace",
                cwd.display()
            ));
        }
        PathBase::Dir(cwd.to_path_buf())
    }

    /// A call known only by its agent and event (from the hook's command line): what a failure to
    /// read the input is answered as, so that a gate is still denied in its agent's format.
    pub fn bare(agent: Agent, event: &str) -> Call {
        Call {
            agent,
            event: event.to_owned(),
            kind: external_events::lookup(agent, event).and_then(|r| r.maps_to),
            session: None,
            subagent: None,
            model: None,
            tool: None,
            subject: Value::Null,
            cwd: None,
            permission_mode: None,
        }
    }
}

/// Which agent wrote `input`, a hook input given to `chokepoint hook --agent <agent>`. VS Code's
/// agent and Copilot CLI run the same entries of `.github/hooks/chokepoint.json` (`setup.rs` says
/// why), so for either id the input's shape decides: VS Code's names its event in snake_case
/// (`hook_event_name`, with `session_id`, `tool_name`, `tool_input`), Copilot CLI's under its
/// camelCase keys never does (`sessionId`, `toolName`, `toolArgs`). Any other agent is as the
/// command line says. `None`: the input is not a JSON object, and for those two ids nobody can tell.
pub fn agent_of(agent: Agent, input: &Value) -> Option<Agent> {
    if !matches!(agent, Agent::Copilot | Agent::VsCode) {
        return Some(agent);
    }
    let map = input.as_object()?;
    Some(if map.get("hook_event_name").is_some_and(Value::is_string) { Agent::VsCode } else { Agent::Copilot })
}

/// [`agent_of`] on the input's bytes, for an answer to input that could not be read.
pub fn agent_of_bytes(agent: Agent, bytes: &[u8]) -> Option<Agent> {
    if !matches!(agent, Agent::Copilot | Agent::VsCode) {
        return Some(agent);
    }
    agent_of(agent, &serde_json::from_slice(bytes).ok()?)
}

/// The event of `agent`'s call: VS Code's agent names its own in the input, and that name wins
/// over the command line's (whose `--event` is the shared file's Copilot CLI key); the others take
/// the command line's, else the input's.
pub fn event_name(agent: Agent, input: &Value, event: Option<&str>) -> Option<String> {
    let text = |key: &str| input.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned);
    if agent == Agent::VsCode {
        return text("hook_event_name").or_else(|| event.map(|key| external_events::vscode_event_of_key(key).unwrap_or(key).to_owned()));
    }
    event.map(str::to_owned).or_else(|| text("hook_event_name")).or_else(|| text("hookEventName"))
}

/// Reads `bytes`, the hook input `agent` wrote to our stdin. `event` names the event when the agent
/// does not put it in the input (Copilot CLI), from the hook's command line. The call's agent is
/// the one the input shows ([`agent_of`]), which for `copilot` and `vscode` may be the other.
pub fn parse(agent: Agent, bytes: &[u8], event: Option<&str>) -> Result<Call, InputError> {
    let input: Value = serde_json::from_slice(bytes).map_err(|e| InputError::new(format!("the hook input is not JSON: {e}")))?;
    let Some(agent) = agent_of(agent, &input).filter(|_| input.is_object()) else {
        return Err(InputError::new("the hook input is not a JSON object"));
    };
    let text = |key: &str| input.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned);
    let name = match event_name(agent, &input, event) {
        Some(name) => name,
        None => return Err(InputError::new("the hook input names no event (`hook_event_name`), and `--event` was not given")),
    };
    let row = external_events::lookup(agent, &name);
    let mut call = Call::bare(agent, &name);
    call.model = text("model");
    call.cwd = text("cwd");
    call.permission_mode = text("permission_mode");
    let session = match agent {
        Agent::Cursor => text("conversation_id").or_else(|| text("session_id")),
        // A Copilot CLI sub-agent's calls carry its own id as `sessionId` and its parent's as
        // `parentAgentId` (captured from 1.0.102, tests/agents/fixtures/copilot/21-*): it works for
        // the parent's session, under the parent's intent.
        Agent::Copilot => text("parentAgentId").or_else(|| text("sessionId")).or_else(|| text("session_id")),
        _ => text("session_id"),
    };
    call.session = session.map(|s| format!("{}:{s}", agent.id()));
    // Claude Code and Codex say `agent_id`/`agent_type`, Copilot CLI `agentId`/`agentType`.
    let sub_id = text("agent_id").or_else(|| text("agentId"));
    let sub_type = text("agent_type").or_else(|| text("agentType"));
    call.subagent = match (sub_type, sub_id) {
        (Some(kind), Some(id)) => Some(format!("{kind}:{id}")),
        (None, Some(id)) => Some(id),
        _ => None,
    };
    // Cursor's tool events carry `cwd`; its others only the workspace's folders [2nd].
    if call.cwd.is_none() {
        call.cwd = input.get("workspace_roots").and_then(|r| r.get(0)).and_then(Value::as_str).map(str::to_owned);
    }
    // The tool: named by the event (Cursor's `beforeShellExecution`), else by the input.
    let implied = row.and_then(|r| r.tool);
    let tool = implied.map(str::to_owned).or_else(|| text("tool_name")).or_else(|| text("toolName"));
    call.tool = tool.map(|t| our_mcp_tool(&t).map_or(t, str::to_owned));
    if call.tool.is_none() && matches!(call.kind, Some(EventKind::PreToolUse | EventKind::PostToolUse)) {
        return Err(InputError::new(format!("the `{}` input names no tool (`tool_name`)", call.event)));
    }
    call.subject = match call.kind {
        Some(EventKind::PreToolUse | EventKind::PostToolUse) => {
            let subject = tool_subject(agent, &input, call.kind, implied.is_some());
            if subject.is_null() {
                return Err(InputError::new(format!("the `{}` input holds no tool input (`tool_input`)", call.event)));
            }
            subject
        }
        Some(EventKind::TaskStart) => input.get("prompt").cloned().map_or(Value::Null, |p| serde_json::json!({ "prompt": p })),
        _ => input.clone(),
    };
    Ok(call)
}

/// A tool event's subject: its input, and on PostToolUse its result beside it.
fn tool_subject(agent: Agent, input: &Value, kind: Option<EventKind>, implied: bool) -> Value {
    let tool_input = if implied {
        // Cursor's tool-specific events carry the tool's input as the event's own fields.
        let mut own = input.clone();
        if let Some(map) = own.as_object_mut() {
            for common in
                ["hook_event_name", "conversation_id", "generation_id", "workspace_roots", "cursor_version", "user_email", "model"]
            {
                map.remove(common);
            }
        }
        own
    } else {
        match agent {
            // Copilot CLI sends the arguments as an object, or (older versions) a JSON string;
            // its permission request as `toolInput`, its MCP call (`preMcpToolCall`) as `arguments`.
            Agent::Copilot => match input.get("toolArgs").or_else(|| input.get("toolInput")).or_else(|| input.get("arguments")) {
                Some(Value::String(s)) => serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone())),
                Some(v) => v.clone(),
                None => Value::Null,
            },
            _ => input.get("tool_input").cloned().unwrap_or(Value::Null),
        }
    };
    if kind != Some(EventKind::PostToolUse) {
        return tool_input;
    }
    let result = input.get("tool_response").or_else(|| input.get("toolResult")).cloned().unwrap_or(Value::Null);
    match tool_input {
        Value::Object(mut map) => {
            map.insert("tool_response".to_owned(), result);
            Value::Object(map)
        }
        other => serde_json::json!({ "input": other, "tool_response": result }),
    }
}

/// The bare name of one of our MCP server's tools, as an agent names it: `mcp__chokepoint__<tool>`
/// (Claude Code, Codex), `chokepoint__<tool>` (Gemini CLI), `MCP:<tool>` (Cursor), or bare.
pub fn our_mcp_tool(tool: &str) -> Option<&'static str> {
    let bare = ["mcp__chokepoint__", "chokepoint__", "mcp_chokepoint_", "MCP:", "chokepoint/", "chokepoint-"]
        .iter()
        .find_map(|prefix| tool.strip_prefix(prefix))
        .unwrap_or(tool);
    MCP_TOOLS.into_iter().find(|t| *t == bare)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claude_pre_tool_use_is_read() {
        let input = br#"{"session_id":"abc","transcript_path":"/t","cwd":"/ws","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"/ws/a.txt","content":"x"},"tool_use_id":"t1"}"#;
        let call = parse(Agent::ClaudeCode, input, None).unwrap();
        assert_eq!(call.kind, Some(EventKind::PreToolUse));
        assert_eq!(call.session.as_deref(), Some("claude:abc"));
        assert_eq!(call.tool.as_deref(), Some("Write"));
        assert_eq!(call.subject["file_path"], "/ws/a.txt");
        assert!(call.is_gate());
    }

    #[test]
    fn our_mcp_tools_lose_their_prefix_and_nothing_else_does() {
        assert_eq!(our_mcp_tool("mcp__chokepoint__select_active_intent"), Some("select_active_intent"));
        assert_eq!(our_mcp_tool("chokepoint__scope_expansion_request"), Some("scope_expansion_request"));
        assert_eq!(our_mcp_tool("select_active_intent"), Some("select_active_intent"));
        assert_eq!(our_mcp_tool("mcp__other__select_active_intent"), None);
        assert_eq!(our_mcp_tool("Write"), None);
    }

    #[test]
    fn a_sub_agents_call_stays_in_its_session() {
        let input = br#"{"session_id":"abc","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"agent_id":"a1","agent_type":"general-purpose"}"#;
        let call = parse(Agent::ClaudeCode, input, None).unwrap();
        assert_eq!(call.session.as_deref(), Some("claude:abc"));
        assert_eq!(call.subagent.as_deref(), Some("general-purpose:a1"));
        // Copilot CLI gives the sub-agent its own `sessionId` and names the parent's.
        let copilot = br#"{"sessionId":"sub","cwd":"/ws","toolName":"create","toolArgs":{"path":"/ws/a"},"agentId":"sub","agentType":"general-purpose","parentAgentId":"top"}"#;
        let call = parse(Agent::Copilot, copilot, Some("preToolUse")).unwrap();
        assert_eq!(call.session.as_deref(), Some("copilot:top"));
        assert_eq!(call.subagent.as_deref(), Some("general-purpose:sub"));
    }

    /// VS Code's agent's input, as it runs the entries of the file it shares with Copilot CLI.
    const VSCODE: &[u8] = br#"{"timestamp":"2026-11-26T10:00:00.000Z","hook_event_name":"PreToolUse","session_id":"v-1","transcript_path":"/t.json","tool_name":"create_file","tool_input":{"filePath":"/ws/src/a.ts","content":"x"},"tool_use_id":"call_1","cwd":"/ws"}"#;
    /// Copilot CLI's input for the same entries: camelCase, no event name.
    const COPILOT: &[u8] =
        br#"{"sessionId":"c-1","timestamp":1795587897007,"cwd":"/ws","toolName":"create","toolArgs":{"path":"src/a.ts","file_text":"x"}}"#;

    #[test]
    fn the_shared_entries_tell_vs_code_from_copilot_cli_by_the_inputs_shape() {
        for id in [Agent::Copilot, Agent::VsCode] {
            let vscode = parse(id, VSCODE, Some("preToolUse")).unwrap();
            assert_eq!(vscode.agent, Agent::VsCode, "under --agent {}", id.id());
            assert_eq!(vscode.event, "PreToolUse", "VS Code's own name wins over --event");
            assert_eq!(vscode.kind, Some(EventKind::PreToolUse));
            assert_eq!(vscode.session.as_deref(), Some("vscode:v-1"));
            assert_eq!(vscode.tool.as_deref(), Some("create_file"));
            assert_eq!(vscode.subject["filePath"], "/ws/src/a.ts");

            let copilot = parse(id, COPILOT, Some("preToolUse")).unwrap();
            assert_eq!(copilot.agent, Agent::Copilot, "under --agent {}", id.id());
            assert_eq!(copilot.event, "preToolUse");
            assert_eq!(copilot.session.as_deref(), Some("copilot:c-1"));
            assert_eq!(copilot.subject["path"], "src/a.ts");
        }
        // `agentStop` runs on VS Code's Stop, which its input names.
        let stop = br#"{"hook_event_name":"Stop","session_id":"v-1","stop_hook_active":false}"#;
        let call = parse(Agent::Copilot, stop, Some("agentStop")).unwrap();
        assert_eq!((call.agent, call.event.as_str(), call.kind), (Agent::VsCode, "Stop", Some(EventKind::BeforeSubmit)));
        // Without a name in the input, VS Code's is the key's.
        assert_eq!(event_name(Agent::VsCode, &serde_json::json!({}), Some("agentStop")).as_deref(), Some("Stop"));
        // Any other agent is what its command line says, whatever the input looks like.
        assert_eq!(agent_of(Agent::ClaudeCode, &serde_json::from_slice(VSCODE).unwrap()), Some(Agent::ClaudeCode));
        assert_eq!(agent_of(Agent::Cursor, &serde_json::from_slice(COPILOT).unwrap()), Some(Agent::Cursor));
        // Not an object: nobody can tell, and it is not a call.
        assert_eq!(agent_of_bytes(Agent::Copilot, b"[1]"), None);
        assert_eq!(agent_of_bytes(Agent::VsCode, b"not json"), None);
        assert!(parse(Agent::VsCode, b"[1]", Some("preToolUse")).is_err());
    }

    #[test]
    fn a_calls_relative_paths_land_in_the_agents_working_folder_or_nowhere_known() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path().to_str().unwrap();
        let claude = |cwd: &str| {
            let input = serde_json::json!({"session_id":"s","cwd":cwd,"hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"a","content":""}});
            parse(Agent::ClaudeCode, input.to_string().as_bytes(), None).unwrap()
        };
        assert_eq!(claude(cwd).base(), PathBase::Dir(dir.path().to_path_buf()));
        assert!(matches!(claude("").base(), PathBase::Unknown(why) if why.contains("no `cwd`")));
        assert!(matches!(claude("relative/dir").base(), PathBase::Unknown(_)));
        // Cursor without `cwd`: its first workspace root [2nd].
        let cursor = serde_json::json!({"conversation_id":"k","hook_event_name":"preToolUse","workspace_roots":[cwd],"tool_name":"Write","tool_input":{"file_path":"a"}});
        assert_eq!(parse(Agent::Cursor, cursor.to_string().as_bytes(), None).unwrap().base(), PathBase::Dir(dir.path().to_path_buf()));
        // Gemini CLI's `replace` searches its workspace for a relative path missing from its folder.
        let replace = |file: &str| {
            let input = serde_json::json!({"session_id":"g","cwd":cwd,"hook_event_name":"BeforeTool","tool_name":"replace","tool_input":{"file_path":file,"old_string":"a","new_string":"b"}});
            parse(Agent::GeminiCli, input.to_string().as_bytes(), None).unwrap().base()
        };
        assert!(matches!(replace("missing.ts"), PathBase::Unknown(why) if why.contains("replace")));
        std::fs::write(dir.path().join("here.ts"), "a").unwrap();
        assert_eq!(replace("here.ts"), PathBase::Dir(dir.path().to_path_buf()));
    }

    #[test]
    fn input_that_is_not_a_hook_call_is_an_error() {
        assert!(parse(Agent::ClaudeCode, b"not json", None).is_err());
        assert!(parse(Agent::ClaudeCode, b"[1]", None).is_err());
        assert!(parse(Agent::ClaudeCode, b"{}", None).unwrap_err().to_string().contains("names no event"));
        // An event we do not map is read, with no kind: it is passed, not judged.
        assert_eq!(parse(Agent::ClaudeCode, br#"{"hook_event_name":"Notification"}"#, None).unwrap().kind, None);
    }
}
