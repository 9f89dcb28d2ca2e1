//! What a hook answers, and what the chain decides from all the answers.
//!
//! The combining rules, in one place (`Combiner` in `hooks/chain.rs` implements them for the
//! synchronous and asynchronous drivers alike, and its tests pin them):
//! 1. Hooks run in chain order (priority, then registration order).
//! 2. `modify` replaces the event's subject, and every later hook sees the rewritten value
//!    (rewrite, then validate).
//! 3. The first `deny` ends the chain: the most restrictive answer wins and nothing after it runs.
//! 4. `ask` is remembered and the chain goes on, so that a later `deny` still wins; if nothing denies,
//!    the decision is `ask`.
//! 5. A hook that fails (error, timeout, crash, unreadable answer) is a `deny` when its failure mode is
//!    `closed`, and is recorded and skipped when it is `open`.
//! 6. `additional_context` from every hook that ran is kept, in chain order.

use serde_json::Value;

/// Why an action is refused, and how the agent can recover.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    pub reason: String,
    /// A prompt that tells the agent how to fix what was refused.
    pub remediation: Option<String>,
    /// A tool the agent should call instead, e.g. `scope_expansion_request`.
    pub suggested_tool: Option<String>,
}

impl Denial {
    pub fn new(reason: impl Into<String>) -> Self {
        Denial { reason: reason.into(), remediation: None, suggested_tool: None }
    }
}

/// One hook's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Allow,
    Deny(Denial),
    /// Escalate: a human, a policy or a reviewer must decide.
    Ask {
        reason: String,
    },
    /// The rewritten subject of the event (tool input, tool result, turn context, task list).
    Modify(Value),
}

crate::base::names::names!(Answer {
    Self::Allow => "allow",
    Self::Deny(_) => "deny",
    Self::Ask { .. } => "ask",
    Self::Modify(_) => "modify",
});

impl Answer {
    /// An answer from its decision's name and the fields that go with it. A host hook's object and a
    /// command hook's JSON in our shape are both read through here, so the two cannot part;
    /// `approve` and `block` are Claude Code's older names for `allow` and `deny`.
    pub fn from_decision(
        decision: &str,
        reason: Option<String>,
        remediation: Option<String>,
        suggested_tool: Option<String>,
        modified: Option<Value>,
    ) -> Result<Answer, HookFailure> {
        Ok(match decision {
            "allow" | "approve" => Answer::Allow,
            "deny" | "block" => {
                Answer::Deny(Denial { reason: reason.unwrap_or_else(|| "denied by hook".into()), remediation, suggested_tool })
            }
            "ask" => Answer::Ask { reason: reason.unwrap_or_else(|| "the hook asks for a decision".into()) },
            "modify" => Answer::Modify(modified.ok_or_else(|| HookFailure::BadAnswer("`modify` without `modified`".into()))?),
            other => {
                let unknown = crate::base::names::UnknownName { what: "decision", name: other.to_owned(), names: Answer::NAMES };
                return Err(HookFailure::BadAnswer(unknown.to_string()));
            }
        })
    }
}

/// A hook's answer with the context it adds for the model.
#[derive(Debug, Clone, PartialEq)]
pub struct HookAnswer {
    pub answer: Answer,
    pub additional_context: Option<String>,
}

impl From<Answer> for HookAnswer {
    fn from(answer: Answer) -> Self {
        HookAnswer { answer, additional_context: None }
    }
}

/// How a hook failed to answer. Each becomes a structured reason in the trace and, for a hook that
/// fails closed, in the denial the agent receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookFailure {
    Error(String),
    Timeout {
        after_ms: u64,
    },
    Crashed(String),
    /// The hook answered, but not in a form we accept (garbage, oversized, a `modify` where the event
    /// has nothing to rewrite).
    BadAnswer(String),
}

impl std::fmt::Display for HookFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HookFailure::Error(e) => write!(f, "failed: {e}"),
            HookFailure::Timeout { after_ms } => write!(f, "timed out after {after_ms} ms"),
            HookFailure::Crashed(e) => write!(f, "crashed: {e}"),
            HookFailure::BadAnswer(e) => write!(f, "gave an answer that cannot be used: {e}"),
        }
    }
}

/// What the chain decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    Allow,
    Deny(Denial),
    /// Every hook that asked, in chain order (who asked is the Pending's `triggered_by`).
    Ask {
        asks: Vec<Asked>,
    },
}

crate::base::names::names!(Decision {
    Self::Allow => "allow",
    Self::Deny(_) => "deny",
    Self::Ask { .. } => "ask",
});

/// One hook's `ask`: who asked and why (as it is, on the wire of a relayed ask too).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Asked {
    pub hook: std::sync::Arc<str>,
    pub reason: String,
}

impl std::fmt::Display for Asked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.hook, self.reason)
    }
}

impl Decision {
    /// The asks as one line each, `hook: reason` (for text: a transcript, the CLI, the trace).
    pub fn ask_reasons(&self) -> Vec<String> {
        match self {
            Decision::Ask { asks } => asks.iter().map(ToString::to_string).collect(),
            _ => Vec::new(),
        }
    }
}

/// How one hook's run ended, for the trace.
#[derive(Debug, Clone, PartialEq)]
pub enum OutcomeKind {
    Allowed,
    Denied,
    Asked,
    Modified,
    /// Failed with failure mode `open`: recorded, and the chain went on.
    FailedOpen(HookFailure),
    /// Failed with failure mode `closed`: the chain denied.
    FailedClosed(HookFailure),
}

crate::base::names::names!(OutcomeKind {
    Self::Allowed => "allow",
    Self::Denied => "deny",
    Self::Asked => "ask",
    Self::Modified => "modify",
    Self::FailedOpen(_) => "failed_open",
    Self::FailedClosed(_) => "failed_closed",
});

#[derive(Debug, Clone, PartialEq)]
pub struct HookOutcome {
    pub hook: std::sync::Arc<str>,
    pub kind: OutcomeKind,
    pub duration_ns: u64,
}
