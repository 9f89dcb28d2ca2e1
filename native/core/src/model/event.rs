//! The canonical lifecycle events and the payloads they carry into the chain.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Every point in an agent's life where the chain runs. One canonical vocabulary: adapters for other
/// agents (Claude Code, Cursor, Gemini CLI, VS Code) map their names onto these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub enum EventKind {
    SessionStart,
    TaskStart,
    TurnStart,
    TurnPrepare,
    PreToolUse,
    PostToolUse,
    PreCompact,
    TurnEnd,
    TaskComplete,
    PlanSubmit,
    PlanComplete,
    AllTasksComplete,
    SessionEnd,
    Error,
    BeforeSubmit,
    AfterSubmit,
    BeforeMerge,
    AfterMerge,
}

impl EventKind {
    pub const ALL: [EventKind; 18] = [
        EventKind::SessionStart,
        EventKind::TaskStart,
        EventKind::TurnStart,
        EventKind::TurnPrepare,
        EventKind::PreToolUse,
        EventKind::PostToolUse,
        EventKind::PreCompact,
        EventKind::TurnEnd,
        EventKind::TaskComplete,
        EventKind::PlanSubmit,
        EventKind::PlanComplete,
        EventKind::AllTasksComplete,
        EventKind::SessionEnd,
        EventKind::Error,
        EventKind::BeforeSubmit,
        EventKind::AfterSubmit,
        EventKind::BeforeMerge,
        EventKind::AfterMerge,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::SessionStart => "SessionStart",
            EventKind::TaskStart => "TaskStart",
            EventKind::TurnStart => "TurnStart",
            EventKind::TurnPrepare => "TurnPrepare",
            EventKind::PreToolUse => "PreToolUse",
            EventKind::PostToolUse => "PostToolUse",
            EventKind::PreCompact => "PreCompact",
            EventKind::TurnEnd => "TurnEnd",
            EventKind::TaskComplete => "TaskComplete",
            EventKind::PlanSubmit => "PlanSubmit",
            EventKind::PlanComplete => "PlanComplete",
            EventKind::AllTasksComplete => "AllTasksComplete",
            EventKind::SessionEnd => "SessionEnd",
            EventKind::Error => "Error",
            EventKind::BeforeSubmit => "BeforeSubmit",
            EventKind::AfterSubmit => "AfterSubmit",
            EventKind::BeforeMerge => "BeforeMerge",
            EventKind::AfterMerge => "AfterMerge",
        }
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for EventKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        EventKind::ALL.into_iter().find(|e| e.as_str() == s).ok_or_else(|| format!("unknown event `{s}`"))
    }
}

impl EventKind {
    /// What a `modify` answer rewrites on this event, or `None` where there is nothing to rewrite.
    pub fn rewrites(self) -> Option<&'static str> {
        match self {
            EventKind::PreToolUse => Some("tool input"),
            EventKind::PostToolUse => Some("tool result"),
            EventKind::TurnPrepare => Some("turn context"),
            EventKind::PlanSubmit => Some("task list"),
            EventKind::AllTasksComplete => Some("task queue"),
            _ => None,
        }
    }
}

/// The ids an event carries, where they exist at that point of the lifecycle.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventIds {
    pub session: Option<String>,
    pub agent: Option<String>,
    pub task: Option<String>,
    pub plan: Option<String>,
    pub turn: Option<u32>,
    /// The intent the session declared with `select_active_intent`.
    pub intent: Option<String>,
    /// The model that produced the action (`gpt-4o`, ...), when the caller knows it; recorded in the
    /// trace.
    pub model: Option<String>,
    /// The sub-agent that acted for the session (Claude Code's `agent_type:agent_id`), when one did:
    /// governed under the session's intent, recorded as its own.
    pub subagent: Option<String>,
}

/// One event as it reaches the chain.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub kind: EventKind,
    pub ids: EventIds,
    /// The tool's name, on tool events.
    pub tool: Option<String>,
    /// The type of the task this event belongs to; selects the task type's hooks.
    pub task_type: Option<String>,
    /// Workspace-relative paths the event touches, for path matchers.
    pub paths: Vec<String>,
    /// What hooks judge and a `modify` rewrites: tool input, tool result, turn context, task list.
    pub subject: serde_json::Value,
    /// How many hooks deep this event was raised: 0 for an agent's own action; 1 or more when a hook
    /// (a command through `CHOKEPOINT_HOOK_DEPTH`, a host hook through the event it was given) asks
    /// the engine to judge something while it runs. Such events do not run the hooks again.
    pub depth: u32,
    /// The paths this event writes, made canonical once by the engine before its chain runs; the
    /// gatekeeper judges these and the trace records them, so no path is resolved twice. `None` until
    /// the engine resolved them (an event judged by a chain alone resolves its own).
    pub writes: Option<std::sync::Arc<[ResolvedPath]>>,
    /// The folder a relative path this event names is resolved against, as the agent resolves it.
    pub base: PathBase,
}

/// Where a relative path an event names lands: the agent's rule, not ours. A relative path is
/// judged where the tool that receives it will write, or refused when nobody can say where that is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum PathBase {
    /// The workspace root: our own agent, the CLI and a host name paths relative to it.
    #[default]
    Root,
    /// An absolute folder: the agent's working folder, which its hook input gives (`cwd`).
    Dir(std::path::PathBuf),
    /// The agent resolves relative paths against a folder its input does not say: a relative path
    /// is refused, with this reason.
    Unknown(String),
}

/// A path a write names, as the agent gave it and as the workspace's canonicaliser resolved it:
/// workspace-relative and `/`-separated, or why it cannot be inside the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    pub raw: String,
    pub canonical: Result<String, String>,
}

impl Event {
    pub fn new(kind: EventKind) -> Self {
        Event {
            kind,
            ids: EventIds::default(),
            tool: None,
            task_type: None,
            paths: Vec::new(),
            subject: serde_json::Value::Null,
            depth: 0,
            writes: None,
            base: PathBase::Root,
        }
    }

    /// A tool event (`PreToolUse`, `PostToolUse`) for `tool` with `subject` as its input or result.
    pub fn tool(kind: EventKind, tool: impl Into<String>, subject: serde_json::Value) -> Self {
        Event { tool: Some(tool.into()), subject, ..Event::new(kind) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for e in EventKind::ALL {
            assert_eq!(e.as_str().parse::<EventKind>(), Ok(e));
            // serde and as_str must agree: the YAML keys are the same strings.
            assert_eq!(serde_json::to_value(e).unwrap(), serde_json::Value::from(e.as_str()));
        }
        assert!("pretooluse".parse::<EventKind>().is_err());
    }
}
