//! What each lifecycle event carries as its subject (`Event.subject`), as our runtime raises it and
//! as a hook reads it (`chokepoint.subject` on a command hook's stdin, the event a host hook is
//! handed). Tool events are not here: their subject is the tool's own input or result.
//!
//! Defined once, here: the binding's test generates `LifecycleSubjects` in `header.d.ts` from these
//! types' JSON schemas, and the runtime's `Gate.lifecycle` takes the subject of the event it names,
//! so a subject the runtime builds that parts from this is a compile error in the extension. The
//! field names are the hook-facing JSON's (snake case), as hooks have always read them.

use super::rewrite::PlanTask;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `SessionStart`: an agent's session begins.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionStartSubject {
    /// The agent's id.
    pub agent: String,
    /// The model it starts with.
    pub model: Option<String>,
}

/// `SessionEnd`: the session ends (the run stopped or finished).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionEndSubject {
    pub agent: String,
}

/// `TaskStart`: a task is about to run; a deny rejects it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TaskStartSubject {
    pub prompt: String,
    pub title: Option<String>,
}

/// How a task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Success,
    Rejected,
    Error,
    Cancelled,
    MaxTurns,
}

// The same names as serde's, for the page's schemas (`TaskStatusName`; a test holds the two equal).
crate::base::names::names!(TaskStatus {
    Self::Success => "success",
    Self::Rejected => "rejected",
    Self::Error => "error",
    Self::Cancelled => "cancelled",
    Self::MaxTurns => "max_turns",
});

/// `TaskComplete`: a task ended, however it ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TaskCompleteSubject {
    pub status: TaskStatus,
    /// The agent's summary, or why the task ended otherwise.
    pub summary: Option<String>,
}

/// `TurnStart`: a turn (one inference and its tool calls) begins.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TurnStartSubject {
    pub turn: u32,
}

/// `TurnPrepare`: the last mutable point before inference (`rewrite::TurnRewrite` is what a hook may
/// change). The messages are not in the subject (it would cost every turn the whole history's
/// conversion and digest): a hook that rewrites them gets their count and sends the messages it wants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TurnPrepareSubject {
    pub turn: u32,
    pub system_prompt: String,
    pub model: String,
    pub message_count: u32,
}

/// `PreCompact`: a compaction of the prompt that would replace older turns with a summary; an ask
/// puts it under review (a `compaction` Pending).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PreCompactSubject {
    pub before_tokens: u64,
    pub after_tokens: u64,
    pub budget: u64,
    pub dropped_turns: u32,
    pub summarized_turns: u32,
    pub summary: String,
}

/// `TurnEnd`: a turn's inference and tool calls are done.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TurnEndSubject {
    pub turn: u32,
    pub tool_calls: u32,
}

/// `PlanSubmit`: the agent submits a plan of tasks (`rewrite::PlanRewrite` is what a hook may change).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlanSubmitSubject {
    pub title: Option<String>,
    pub tasks: Vec<PlanTask>,
}

/// `PlanComplete`: every task of a plan ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlanCompleteSubject {
    pub plan_id: String,
    pub title: Option<String>,
}

/// `AllTasksComplete`: the queue is empty; a hook may queue more (`rewrite::Rewrite::Queue`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AllTasksCompleteSubject {
    pub tasks: Vec<PlanTask>,
}

/// Where an error happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorStage {
    /// A tool threw.
    Tool,
    /// The model's endpoint failed.
    Inference,
}

/// `Error`: something failed; `pipe_output` hooks may answer with a recovery prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ErrorSubject {
    pub stage: ErrorStage,
    /// The tool, when a tool failed.
    pub tool: Option<String>,
    pub message: String,
}

/// `BeforeSubmit` and `AfterSubmit`: the agent's completion, before its hooks accept it and after.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SubmitSubject {
    pub result: String,
}

/// Every lifecycle event our runtime raises with its subject's schema, in `EventKind` order: what the
/// binding's test generates `LifecycleSubjects` from. The events not listed are tool events (their
/// subject is the tool's) and the merge events (raised by the worktree orchestrator, not a run).
pub fn schemas() -> Vec<(super::event::EventKind, schemars::Schema)> {
    use super::event::EventKind as E;
    use schemars::schema_for;
    vec![
        (E::SessionStart, schema_for!(SessionStartSubject)),
        (E::TaskStart, schema_for!(TaskStartSubject)),
        (E::TurnStart, schema_for!(TurnStartSubject)),
        (E::TurnPrepare, schema_for!(TurnPrepareSubject)),
        (E::PreCompact, schema_for!(PreCompactSubject)),
        (E::TurnEnd, schema_for!(TurnEndSubject)),
        (E::TaskComplete, schema_for!(TaskCompleteSubject)),
        (E::PlanSubmit, schema_for!(PlanSubmitSubject)),
        (E::PlanComplete, schema_for!(PlanCompleteSubject)),
        (E::AllTasksComplete, schema_for!(AllTasksCompleteSubject)),
        (E::SessionEnd, schema_for!(SessionEndSubject)),
        (E::Error, schema_for!(ErrorSubject)),
        (E::BeforeSubmit, schema_for!(SubmitSubject)),
        (E::AfterSubmit, schema_for!(SubmitSubject)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::rewrite::{Rewrite, TurnRewrite};
    use serde_json::json;

    #[test]
    fn a_subject_is_the_json_hooks_read_and_its_rewrite_reads_back() {
        // The turn's subject, echoed back by a hook that changed only the model, rewrites only the model.
        let subject = TurnPrepareSubject { turn: 2, system_prompt: "you are".into(), model: "small".into(), message_count: 4 };
        let mut echoed = serde_json::to_value(&subject).unwrap();
        assert_eq!(echoed, json!({"turn": 2, "system_prompt": "you are", "model": "small", "message_count": 4}));
        echoed["model"] = json!("bigger");
        let Some(Rewrite::Turn(turn)) = Rewrite::read(crate::EventKind::TurnPrepare, &echoed) else { panic!() };
        assert_eq!(turn, TurnRewrite { system_prompt: Some("you are".into()), model: Some("bigger".into()), messages: None });
        for name in TaskStatus::NAMES {
            assert_eq!(serde_json::to_value(TaskStatus::from_name(name).unwrap()).unwrap(), json!(name));
        }
    }

    #[test]
    fn every_lifecycle_event_but_tool_and_merge_events_has_one_subject() {
        use crate::EventKind as E;
        let listed: Vec<E> = schemas().into_iter().map(|(kind, _)| kind).collect();
        let expected: Vec<E> =
            E::ALL.into_iter().filter(|k| !matches!(k, E::PreToolUse | E::PostToolUse | E::BeforeMerge | E::AfterMerge)).collect();
        assert_eq!(listed, expected);
    }
}
