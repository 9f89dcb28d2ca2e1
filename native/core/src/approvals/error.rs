//! Why a request about a Pending was refused. Every message is lower-case, ends without a period,
//! and names what would have been accepted.

use std::fmt;

/// The kinds, as messages name them (`kind.rs` holds the kinds themselves; a test keeps the two
/// lists the same).
const KIND_NAMES: &str = "tool_call, scope_expansion, plan, compaction, submit";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalError {
    /// No Pending with this id (never opened, or decided long enough ago to be forgotten).
    UnknownPending(String),
    UnknownKind(String),
    /// A handler was registered for something that is neither a kind nor `*`.
    UnknownHandlerKey(String),
    /// The subject the caller passed does not have the kind's required fields.
    BadSubject {
        kind: &'static str,
        message: String,
    },
    /// The decision object is not an object with a string `action`.
    BadDecision(String),
    /// The action is not in the kind's public list.
    NotAllowed {
        action: String,
        kind: &'static str,
        allowed: Vec<&'static str>,
    },
    /// The action's arguments are missing, extra, of the wrong type, or out of range.
    BadArguments {
        action: String,
        message: String,
    },
    /// The Pending is no longer open: nothing can change it.
    NotOpen {
        id: String,
        status: &'static str,
    },
    /// An action reached a subject of another kind (a bug in the table, never a caller's mistake).
    WrongSubject(String),
    /// An ask on an event that nothing approves (the event's name).
    NotAskable(String),
    /// A shared Pending was decided first by someone else, maybe on another machine.
    DecidedElsewhere {
        id: String,
        status: String,
        by: String,
        machine: String,
    },
    /// Another machine's Pending can be decided here, not edited: its subject is the asker's.
    RemoteEdit {
        id: String,
        action: String,
    },
    /// The team's coordination database could not take a shared Pending or its decision.
    Team(crate::base::team::TeamError),
}

impl ApprovalError {
    /// Whether this is a refusal of a decision (the binding's `EREFUSED`) rather than misuse.
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            ApprovalError::BadDecision(_)
                | ApprovalError::NotAllowed { .. }
                | ApprovalError::BadArguments { .. }
                | ApprovalError::NotOpen { .. }
                | ApprovalError::DecidedElsewhere { .. }
                | ApprovalError::RemoteEdit { .. }
        )
    }
}

impl fmt::Display for ApprovalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApprovalError::UnknownPending(id) => write!(f, "no pending `{id}`"),
            ApprovalError::UnknownKind(kind) => write!(f, "unknown pending kind `{kind}`; the kinds are {}", KIND_NAMES),
            ApprovalError::UnknownHandlerKey(key) => {
                write!(f, "cannot register an approval handler for `{key}`; handlers are registered for a kind ({}) or `*`", KIND_NAMES)
            }
            ApprovalError::BadSubject { kind, message } => {
                write!(f, "invalid {kind} subject: {message}")
            }
            ApprovalError::BadDecision(message) => write!(f, "invalid decision: {message}"),
            ApprovalError::NotAllowed { action, kind, allowed } => {
                write!(f, "action `{action}` is not allowed on a {kind} pending; the allowed actions are {}", allowed.join(", "))
            }
            ApprovalError::BadArguments { action, message } => {
                write!(f, "bad arguments for `{action}`: {message}")
            }
            ApprovalError::NotOpen { id, status } => write!(f, "pending `{id}` is already {status}; no action can change it"),
            ApprovalError::NotAskable(event) => write!(
                f,
                "an ask on `{event}` cannot be approved; asks are approved on PreToolUse (a tool call or a scope_expansion_request), PlanSubmit, PreCompact and BeforeSubmit"
            ),
            ApprovalError::WrongSubject(action) => {
                write!(f, "action `{action}` reached a subject of another kind")
            }
            ApprovalError::DecidedElsewhere { id, status, by, machine } => {
                write!(f, "pending `{id}` was decided first by {by} on {machine} ({status}); the first answer counts")
            }
            ApprovalError::RemoteEdit { id, action } => write!(
                f,
                "pending `{id}` was opened on another machine: `{action}` can be done only there; here it can be decided (approve, reject, modify)"
            ),
            ApprovalError::Team(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ApprovalError {}

#[cfg(test)]
mod tests {
    #[test]
    fn the_kind_names_are_the_kinds() {
        let kinds: Vec<&str> = super::super::PendingKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(super::KIND_NAMES, kinds.join(", "));
    }
}
