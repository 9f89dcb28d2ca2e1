//! What the agent does once a Pending is decided: the one reading of a decision that every host acts
//! on, with the line its model is told. The engine (`engine::settle`) applies what needs applying
//! (an expansion's grant, the approval's durability) before a host sees it.

use super::error::ApprovalError;
use super::kind::{PendingKind, ScopeExpansionSubject, Subject};
use super::pending::{PendingDict, Status};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The step after a decision. Serialised as [`Next::as_str`] names it (a Pending relayed from
/// another worktree's hook is answered with its settlement, `serve::relay`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Next {
    /// Go on with what was asked: the tool call as the agent made it, the plan or the compaction as
    /// decided (their subject, which the decider may have edited).
    Run,
    /// Run the decider's version of the tool call instead (`input`); the chain judges it first.
    RunModified,
    /// The scope expansion is granted (the engine has applied it): nothing else runs.
    Granted,
    /// A refused submission is accepted anyway.
    Override,
    /// Another round for the agent, with the decider's guidance.
    Retry,
    /// Nothing runs: rejected, timed out, or the approval could not be recorded or applied.
    Refuse,
}

crate::base::names::names!(Next {
    Self::Run => "run",
    Self::RunModified => "run_modified",
    Self::Granted => "granted",
    Self::Override => "override",
    Self::Retry => "retry",
    Self::Refuse => "refuse",
});

/// A decided Pending and what follows from it. Serialised without the Pending: a relayed ask's
/// settlement travels to the hook that asked (`serve::relay`), and the Pending stays in its engine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settlement {
    pub next: Next,
    /// Who decided (`human`, `reviewer`, `timeout`, `handler:<name>`, ...).
    pub by: String,
    /// A rejection's or an override's reason.
    pub reason: Option<String>,
    /// What the decider said with an approval or a modification, or a retry's guidance.
    pub note: Option<String>,
    /// The modified tool input (`RunModified`).
    pub input: Option<Value>,
    /// The line the agent's model is told: the tool's result when nothing runs, the context added to
    /// its result when something does.
    pub message: String,
    /// The decided Pending; none when there was none to decide (an unknown id), or the settlement
    /// came from another process.
    #[serde(skip)]
    pub pending: Option<PendingDict>,
}

impl Settlement {
    /// Reads a Pending's decision. A Pending still open (its wait was cut short) counts as timed out:
    /// a question nobody answered is a no.
    pub fn of(pending: PendingDict) -> Settlement {
        let decision = pending.decision.as_ref();
        let text = |s: Option<&String>| s.filter(|s| !s.is_empty()).cloned();
        let by = decision.map_or_else(|| "timeout".to_owned(), |d| d.by.clone());
        let reason = text(decision.and_then(|d| d.reason.as_ref()));
        let note = text(decision.and_then(|d| d.note.as_ref()));
        let with = |s: &Option<String>, sep: &str| s.as_ref().map(|s| format!("{sep}{s}")).unwrap_or_default();
        let note_line = with(&note.as_ref().map(|n| format!("note from {by}: {n}")), "\n");
        let (next, message) = match (pending.status, pending.kind) {
            (Status::Approved, PendingKind::ScopeExpansion) => {
                let (intent, paths) = expansion(&pending).map_or_else(|| ("the intent".to_owned(), Vec::new()), |s| (s.intent_id, s.paths));
                let saved = if decision.is_some_and(|d| d.save) { " and saved to active_intents.yaml" } else { "" };
                (Next::Granted, format!("approved by {by}: {} added to the scope of {intent}{saved}{note_line}", paths.join(", ")))
            }
            (Status::Approved, _) => (Next::Run, format!("approved by {by}{}", with(&note, ": "))),
            (Status::Modified, PendingKind::ToolCall) => {
                let input = decision.and_then(|d| d.input.as_ref()).map(Value::to_string).unwrap_or_default();
                (Next::RunModified, format!("modified by {by} before it ran; what ran: {input}{note_line}"))
            }
            (Status::Modified, _) => (Next::Run, format!("edited by {by}{}", with(&note, ": "))),
            (Status::Overridden, _) => (Next::Override, format!("accepted by {by} despite the failed checks{}", with(&reason, ": "))),
            (Status::Retry, _) => {
                let guidance = note.as_ref().or(reason.as_ref()).map(|g| format!(": {g}")).unwrap_or_default();
                (Next::Retry, format!("the completion was not accepted; {by} gives you another round{guidance}"))
            }
            (Status::Rejected | Status::TimedOut | Status::Open, kind) => {
                let why = reason.clone().map_or_else(
                    || if by == "timeout" { ": nobody decided in time".to_owned() } else { String::new() },
                    |r| format!(": {r}"),
                );
                (Next::Refuse, format!("{}rejected by {by}{why}", what(kind)))
            }
        };
        let input = if next == Next::RunModified { decision.and_then(|d| d.input.clone()) } else { None };
        Settlement { next, by, reason, note, input, message, pending: Some(pending) }
    }

    /// The answer when the Pending cannot be found (never opened, or forgotten): a no.
    pub fn unknown(error: &ApprovalError) -> Settlement {
        let message = format!("the approval could not be awaited: {error}");
        Settlement { next: Next::Refuse, by: "chokepoint".to_owned(), reason: None, note: None, input: None, message, pending: None }
    }

    /// The same Pending, refused because what its approval needs could not be done (recorded,
    /// granted): the approval must not take effect.
    pub fn refused(mut self, why: String) -> Settlement {
        self.next = Next::Refuse;
        self.input = None;
        self.message = why;
        self
    }
}

/// A scope expansion's subject as its kind reads it (every subject was checked when it was opened or
/// edited, so this fails only for another kind).
pub fn expansion(pending: &PendingDict) -> Option<ScopeExpansionSubject> {
    match Subject::parse(pending.kind, pending.subject.clone()) {
        Ok(Subject::ScopeExpansion(subject)) => Some(subject),
        _ => None,
    }
}

/// How a refusal names what was refused (a tool call's refusal is its own result: it needs no name).
fn what(kind: PendingKind) -> &'static str {
    match kind {
        PendingKind::ToolCall => "",
        PendingKind::ScopeExpansion => "the scope expansion was ",
        PendingKind::Plan => "the plan was ",
        PendingKind::Compaction => "the compaction was ",
        PendingKind::Submit => "the completion was ",
    }
}
