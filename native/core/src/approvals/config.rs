//! The approvals' section of hooks.yaml (`approvals:`): who answers a Pending, how long it may wait,
//! the reviewing model. Defined here, where it is used; `config` composes it into hooks.yaml.
//! `fallback` is what an external agent's unanswered ask becomes: `deny` (the default) or `agent`
//! (the agent's own prompt; `agents/hook.rs`).

use crate::base::yaml::Problem;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The approvals settings (hooks.yaml `approvals:`). Optional; the defaults send every Pending to the
/// human and reject it when nobody decides within 300 seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalsConfig {
    /// Who answers a Pending that no handler is registered for.
    #[serde(default)]
    pub default: ApprovalRoute,
    /// Seconds a Pending may stay undecided; then it is `timed_out`, which counts as a rejection.
    #[serde(default = "default_approval_timeout")]
    pub timeout_seconds: u64,
    /// Who answers each kind of Pending (`tool_call`, `scope_expansion`, `plan`, `compaction`,
    /// `submit`), `*` for every kind not listed. Handlers the extension registers override these.
    #[serde(default)]
    #[schemars(extend("propertyNames" = { "enum": ["tool_call", "scope_expansion", "plan", "compaction", "submit", "*"] }))]
    pub handlers: BTreeMap<String, ApprovalRoute>,
    /// The reviewing model, for the `reviewer` route.
    #[serde(default)]
    pub reviewer: Option<ReviewerConfig>,
    /// What another agent's hook (Claude Code, Codex, …) answers when a hook asks about its tool call
    /// and nobody decides the Pending within the hook's deadline, or no live engine (VS Code with
    /// Chokepoint, or `chokepoint serve`) runs to show it to anyone: `deny` (the default) refuses the
    /// call saying how to approve it next time; `agent` leaves it to the agent's own permission prompt
    /// (Codex has none: it is refused there too).
    #[serde(default)]
    pub fallback: AskFallback,
}

/// What an external agent's ask becomes when no person decides it in time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AskFallback {
    /// Refuse the call, saying that nobody decided and how to approve it next time.
    #[default]
    Deny,
    /// Hand the question to the agent's own permission prompt.
    Agent,
}

crate::base::names::names!(AskFallback {
    Self::Deny => "deny",
    Self::Agent => "agent",
});

/// Who answers a Pending.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalRoute {
    /// The human, in the sidebar.
    #[default]
    Human,
    /// The configured reviewing model (`approvals.reviewer`).
    Reviewer,
    /// Approve at once.
    AutoApprove,
    /// Reject at once.
    AutoDeny,
}

crate::base::names::names!(ApprovalRoute {
    Self::Human => "human",
    Self::Reviewer => "reviewer",
    Self::AutoApprove => "auto-approve",
    Self::AutoDeny => "auto-deny",
});

/// The reviewing model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewerConfig {
    /// Any model id the agent runtime accepts (`scripted:reviewer`, `openai:<model>`...).
    pub model: String,
    /// When the reviewer hands the Pending to the human: when it would reject, when it does not
    /// decide. Both by default.
    #[serde(default = "default_escalate_on")]
    pub escalate_on: Vec<Escalation>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Escalation {
    Reject,
    Unsure,
}

impl Escalation {
    pub fn as_str(self) -> &'static str {
        match self {
            Escalation::Reject => "reject",
            Escalation::Unsure => "unsure",
        }
    }
}

fn default_approval_timeout() -> u64 {
    300
}

fn default_escalate_on() -> Vec<Escalation> {
    vec![Escalation::Reject, Escalation::Unsure]
}

impl Default for ApprovalsConfig {
    fn default() -> Self {
        ApprovalsConfig {
            default: ApprovalRoute::default(),
            timeout_seconds: default_approval_timeout(),
            handlers: BTreeMap::new(),
            reviewer: None,
            fallback: AskFallback::default(),
        }
    }
}

impl ApprovalsConfig {
    /// What is wrong with this section, each with the key to point at.
    pub fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        if self.timeout_seconds == 0 {
            problems.push(Problem::new("timeout_seconds", "`timeout_seconds` must be at least 1"));
        }
        for key in self.handlers.keys() {
            if key != "*" && !super::kind::PendingKind::ALL.iter().any(|k| k.as_str() == key) {
                problems.push(Problem::new(
                    key.trim_matches('"'),
                    format!("approval handler for unknown kind `{key}`; the kinds are tool_call, scope_expansion, plan, compaction, submit, or `*`"),
                ));
            }
        }
        let reviewer_used = self.default == ApprovalRoute::Reviewer || self.handlers.values().any(|r| *r == ApprovalRoute::Reviewer);
        if reviewer_used && self.reviewer.is_none() {
            problems.push(Problem::new("approvals", "the `reviewer` route needs `approvals.reviewer.model`"));
        }
        if self.reviewer.as_ref().is_some_and(|r| r.model.trim().is_empty()) {
            problems.push(Problem::new("model", "`approvals.reviewer.model` must name a model"));
        }
        problems
    }
}
