//! The canonical lifecycle events and the payloads they carry into the chain.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Every point in an agent's life where the chain runs. One canonical vocabulary: adapters for other
/// agents (Claude Code, Cursor, Gemini CLI, VS Code) map their names onto these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
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
        EventKind::ALL
            .into_iter()
            .find(|e| e.as_str() == s)
            .ok_or_else(|| format!("unknown event `{s}`"))
    }
}

/// A tool call as it reaches the chokepoint: the tool's name and its (JSON) input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub tool: String,
    pub input: serde_json::Value,
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
