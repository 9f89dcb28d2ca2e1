//! Another agent's hook input, read into one shape: which of our events it is, the session (named by
//! agent, so two agents' ids never meet), the sub-agent, the model, the tool and its input. Each
//! agent's fields are documented in docs/agents/protocols.md; this file is where they are read.

use crate::agents::error::InputError;
use crate::model::event::EventKind;
use crate::model::external_events::{self, Agent};
use crate::model::governance::{SCOPE_EXPANSION_TOOL, SELECT_INTENT_TOOL};
use serde_json::Value;

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

/// Reads `bytes`, the hook input `agent` wrote to our stdin. `event` names the event when the agent
/// does not put it in the input (Copilot CLI), from the hook's command line.
pub fn parse(agent: Agent, bytes: &[u8], event: Option<&str>) -> Result<Call, InputError> {
    let input: Value = serde_json::from_slice(bytes).map_err(|e| InputError::new(format!("the hook input is not JSON: {e}")))?;
    if !input.is_object() {
        return Err(InputError::new("the hook input is not a JSON object"));
    }
    let text = |key: &str| input.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned);
    let name = match event.map(str::to_owned).or_else(|| text("hook_event_name")).or_else(|| text("hookEventName")) {
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
        Agent::Copilot => text("sessionId").or_else(|| text("session_id")),
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
