//! From an ask to a Pending: the one place that knows which Pending each ask opens and what its
//! subject holds, so that every host (our runtime, the CLI, a hook server) asks the same way and none
//! builds subjects by hand.

use super::broker::OpenRequest;
use super::error::ApprovalError;
use super::kind::PendingKind;
use super::pending::Asker;
use crate::model::decision::Asked;
use crate::model::event::EventKind;
use crate::model::external_events::Agent;
use crate::model::governance::SCOPE_EXPANSION_TOOL;
use serde_json::{Value, json};

/// An ask as the chain left it: the event it judged (its input as the chain saw it, after any
/// rewrite) and the hooks that asked.
#[derive(Debug, Clone, PartialEq)]
pub struct Ask {
    pub event: EventKind,
    pub tool: Option<String>,
    /// The tool input; for `PlanSubmit` the plan, for `PreCompact` the compaction's proposal, for
    /// `BeforeSubmit` `{ result, failures: [{ hook, reason, output }] }`.
    pub input: Value,
    /// The workspace paths the call writes.
    pub paths: Vec<String>,
    /// Who asked, in chain order (empty for a submission refused by hooks that denied).
    pub asked: Vec<Asked>,
    pub session_id: Option<String>,
    pub task_id: Option<String>,
    /// The caller reviews the Pending itself (route `caller`).
    pub review: bool,
}

impl Ask {
    /// The kind of Pending this ask opens.
    pub fn kind(&self) -> Result<PendingKind, ApprovalError> {
        Ok(match self.event {
            EventKind::PreToolUse if self.tool.as_deref() == Some(SCOPE_EXPANSION_TOOL) => PendingKind::ScopeExpansion,
            EventKind::PreToolUse => PendingKind::ToolCall,
            EventKind::PlanSubmit => PendingKind::Plan,
            EventKind::PreCompact => PendingKind::Compaction,
            EventKind::BeforeSubmit => PendingKind::Submit,
            other => return Err(ApprovalError::NotAskable(other.as_str().to_owned())),
        })
    }

    /// The request that opens its Pending: the kind, the subject in the kind's shape, and who asked.
    pub fn into_request(self) -> Result<OpenRequest, ApprovalError> {
        self.into_request_of(None)
    }

    /// The request of an ask about `agent`'s call (another agent's hook, served by the live engine):
    /// a tool call's subject also names the agent (`agent`, its id: `claude`, `codex`, …), so whoever
    /// decides knows which agent waits; the session (`<agent>:<its id>`) is the Pending's own, and
    /// both are its `asker` (the engine adds the intent and worktree it knows).
    pub fn into_request_of(self, agent: Option<Agent>) -> Result<OpenRequest, ApprovalError> {
        let kind = self.kind()?;
        let reason = (!self.asked.is_empty()).then(|| self.asked.iter().map(|a| a.reason.as_str()).collect::<Vec<_>>().join("; "));
        let field = |name: &str| self.input.get(name).cloned().unwrap_or(Value::Null);
        let subject = match kind {
            PendingKind::ToolCall => {
                let mut subject = json!({
                    "tool": self.tool,
                    "input": self.input,
                    "paths": (!self.paths.is_empty()).then_some(&self.paths),
                    "reason": reason,
                });
                if let Some(agent) = agent {
                    subject["agent"] = agent.id().into();
                }
                subject
            }
            PendingKind::ScopeExpansion => {
                json!({ "intent_id": field("intent_id"), "paths": field("paths"), "justification": field("justification") })
            }
            PendingKind::Plan => {
                // Only what a plan's task is: a host's extra fields would make the subject invalid.
                let tasks: Vec<Value> = match self.input.get("tasks") {
                    Some(Value::Array(tasks)) => tasks
                        .iter()
                        .map(|t| json!({ "prompt": t.get("prompt"), "title": t.get("title").unwrap_or(&Value::Null) }))
                        .collect(),
                    _ => Vec::new(),
                };
                json!({ "title": field("title"), "tasks": tasks })
            }
            PendingKind::Compaction => {
                let summaries = match self.input.get("summary").and_then(Value::as_str) {
                    Some(text) if !text.is_empty() => {
                        let turns = self.input.get("summarized_turns").and_then(Value::as_u64).unwrap_or(0);
                        vec![json!({ "text": text, "source": format!("{turns} earlier turn(s)") })]
                    }
                    _ => Vec::new(),
                };
                json!({
                    "summaries": summaries,
                    "guidance": null,
                    "original_tokens": field("before_tokens"),
                    "estimated_tokens": field("after_tokens"),
                    "budget": field("budget"),
                })
            }
            PendingKind::Submit => {
                json!({ "result": field("result"), "failures": self.input.get("failures").cloned().unwrap_or(json!([])) })
            }
        };
        let triggered_by = match (self.asked.first(), kind) {
            (Some(asked), _) => asked.hook.to_string(),
            (None, PendingKind::Submit) => {
                self.input.pointer("/failures/0/hook").and_then(Value::as_str).unwrap_or(EventKind::BeforeSubmit.as_str()).to_owned()
            }
            (None, _) => "chain".to_owned(),
        };
        let asker = agent.map(|agent| Asker {
            agent: agent.id().to_owned(),
            session: self.session_id.clone(),
            intent: None,
            worktree: None,
            machine: None,
        });
        Ok(OpenRequest {
            session_id: self.session_id,
            task_id: self.task_id,
            review: self.review,
            asker,
            ..OpenRequest::new(kind, subject, triggered_by)
        })
    }
}
