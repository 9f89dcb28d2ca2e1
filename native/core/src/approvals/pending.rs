//! The Pending: one ask, of any kind, waiting for a human, a reviewing model or a policy; its
//! dictionary form, its decision, and the agent interface generated from its kind's actions
//! (`to_dict`, `to_tools`, `describe_api`, `apply_decision`, `execute_tool`), with `validate` and
//! `auto_retry` for compaction summaries.
//!
//! A Pending carries its deadline as a wall-clock time (`deadline_ms`, set by the registry at open and
//! brought forward by an earlier waiter), what it becomes then (`on_timeout`), and who waits on it
//! (`asker`: another agent, its session, the intent it holds, its worktree and machine).
//!
//! **Invariant: only the kind's table is reachable.** `apply_decision` and `execute_tool` refuse an
//! action the kind does not list (`_execute`, `modify` on a plan), bad or missing arguments (naming the
//! field), and any action on a Pending that is no longer open; a refusal changes nothing (the action
//! runs on a copy). Adding an action is one table entry and one argument struct (`actions.rs`).

use super::error::ApprovalError;
use super::kind::{PendingKind, PlanTask, Subject, Summary};
use super::routing::Route;
use serde::Serialize;
use serde_json::{Map, Value};

/// Where a Pending stands. Everything but `Open` is final.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Open,
    Approved,
    Rejected,
    Modified,
    Overridden,
    /// A submission sent back to the agent for another round.
    Retry,
    /// Nobody decided within the timeout; counts as a rejection.
    TimedOut,
}

crate::base::names::names!(Status {
    Self::Open => "open",
    Self::Approved => "approved",
    Self::Rejected => "rejected",
    Self::Modified => "modified",
    Self::Overridden => "overridden",
    Self::Retry => "retry",
    Self::TimedOut => "timed_out",
});

impl Status {
    /// Whether the operation that asked goes ahead (as asked, modified, or despite failures).
    pub fn is_success(self) -> bool {
        matches!(self, Status::Approved | Status::Modified | Status::Overridden)
    }

    /// Whether the operation that asked does not go ahead: rejected, timed out, or sent back.
    pub fn is_rejection(self) -> bool {
        matches!(self, Status::Rejected | Status::TimedOut | Status::Retry)
    }
}

/// How a Pending was decided: the action, who took it, and what they said.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decision {
    pub action: String,
    /// `human`, `reviewer`, `auto-approve`, `auto-deny`, `guard`, `timeout`, `handler:<name>`...
    pub by: String,
    /// A rejection's or override's reason: what the agent is told.
    pub reason: Option<String>,
    /// An approval's or modification's note for the agent (a submission retry's guidance).
    pub note: Option<String>,
    /// A modification's input.
    pub input: Option<Value>,
    /// An approved scope expansion to be written into active_intents.yaml.
    pub save: bool,
    /// The machine the decider was on, for a Pending shared with a team's database (`approvals::team`).
    pub machine: Option<String>,
}

impl Decision {
    pub fn new(action: &str, by: &str) -> Decision {
        Decision { action: action.to_owned(), by: by.to_owned(), reason: None, note: None, input: None, save: false, machine: None }
    }
}

/// What an applied action did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// The Pending is decided (its status is final).
    Decided,
    /// Its subject changed; it is still open.
    Edited,
    /// A compaction summary is to be written again by the host; still open.
    RetryRequested { index: usize, guidance: String },
}

crate::base::names::names!(Effect {
    Self::Decided => "decided",
    Self::Edited => "edited",
    Self::RetryRequested { .. } => "retry_requested",
});

/// Who waits on a Pending: the agent whose call asked, and where it works. Set for another agent's
/// call (a hook served by the live engine, relayed from another worktree, or shown from another
/// machine); `None` for our own runtime's asks, whose task the host shows itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Asker {
    /// The agent's id (`claude`, `codex`, `gemini`, `copilot`, `cursor`, `vscode`).
    pub agent: String,
    /// Its session as the ledger names it (`<agent>:<its id>`).
    pub session: Option<String>,
    /// The intent the session holds, when it holds one.
    pub intent: Option<String>,
    /// The worktree it works in (its folder's name), when known.
    pub worktree: Option<String>,
    /// The machine it runs on, for another machine's Pending shown through the team's database.
    pub machine: Option<String>,
}

/// What happens when nobody decides a Pending by its deadline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Lapse {
    /// It counts as rejected (our runtime's asks, and every kind but another agent's tool call).
    #[default]
    Reject,
    /// Another agent's call is denied (`approvals.fallback: deny`).
    Deny,
    /// Another agent's call goes to the agent's own permission prompt (`approvals.fallback: agent`).
    AgentPrompt,
}

crate::base::names::names!(Lapse {
    Self::Reject => "reject",
    Self::Deny => "deny",
    Self::AgentPrompt => "agent_prompt",
});

/// A Pending as callers see it (`to_dict()`): every field present, `null` when empty.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PendingDict {
    pub id: String,
    pub kind: PendingKind,
    pub created_at: String,
    pub triggered_by: String,
    pub session_id: Option<String>,
    pub task_id: Option<String>,
    /// When it lapses if nobody decides it, in milliseconds since the Unix epoch on this machine's
    /// clock (a countdown subtracts the reader's now). `None` before the registry holds it.
    pub deadline_ms: Option<u64>,
    /// What happens then.
    pub on_timeout: Lapse,
    /// Who waits on it, for another agent's call.
    pub asker: Option<Asker>,
    pub status: Status,
    pub route: String,
    pub subject: Value,
    /// A plan's tasks and a compaction's summaries, typed, for a caller that applies them (the JSON
    /// carries them in `subject`).
    #[serde(skip)]
    pub tasks: Option<Vec<PlanTask>>,
    #[serde(skip)]
    pub summaries: Option<Vec<Summary>>,
    /// The kind's public actions, in table order.
    pub actions: Vec<&'static str>,
    pub decision: Option<Decision>,
}

impl PendingDict {
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("a pending always serialises")
    }
}

/// One tool of `to_tools()`: a public action as a model's tool definition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDefinition {
    pub name: &'static str,
    pub description: String,
    /// JSON Schema (draft 2020-12) of the arguments: an object with `additionalProperties: false`.
    pub parameters: Value,
}

/// What `validate()` found: the first problem, if any, and which summary it is in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ValidationResult {
    pub passed: bool,
    pub diagnosis: Option<String>,
    pub index: Option<usize>,
}

impl ValidationResult {
    fn passed() -> ValidationResult {
        ValidationResult { passed: true, diagnosis: None, index: None }
    }

    fn failed(diagnosis: String, index: Option<usize>) -> ValidationResult {
        ValidationResult { passed: false, diagnosis: Some(diagnosis), index }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    pub id: String,
    pub kind: PendingKind,
    pub created_at: String,
    pub triggered_by: String,
    pub session_id: Option<String>,
    pub task_id: Option<String>,
    /// Set by the registry: when it lapses (epoch ms), and what it becomes then.
    pub deadline_ms: Option<u64>,
    pub on_timeout: Lapse,
    pub asker: Option<Asker>,
    pub status: Status,
    pub route: Route,
    pub subject: Subject,
    pub decision: Option<Decision>,
}

impl Pending {
    /// A new open Pending; the subject is checked against the kind's required fields.
    pub fn new(kind: PendingKind, subject: Value, triggered_by: impl Into<String>) -> Result<Pending, ApprovalError> {
        let now = crate::base::clock::now_ms();
        Ok(Pending {
            id: new_id(now),
            kind,
            created_at: crate::base::clock::format_utc(now),
            triggered_by: triggered_by.into(),
            session_id: None,
            task_id: None,
            deadline_ms: None,
            on_timeout: Lapse::Reject,
            asker: None,
            status: Status::Open,
            route: Route::Caller,
            subject: Subject::parse(kind, subject)?,
            decision: None,
        })
    }

    pub fn is_open(&self) -> bool {
        self.status == Status::Open
    }

    pub fn to_dict(&self) -> PendingDict {
        PendingDict {
            id: self.id.clone(),
            kind: self.kind,
            created_at: self.created_at.clone(),
            triggered_by: self.triggered_by.clone(),
            session_id: self.session_id.clone(),
            task_id: self.task_id.clone(),
            deadline_ms: self.deadline_ms,
            on_timeout: self.on_timeout,
            asker: self.asker.clone(),
            status: self.status,
            route: self.route.to_string(),
            subject: self.subject.to_value(),
            tasks: if let Subject::Plan(s) = &self.subject { Some(s.tasks.clone()) } else { None },
            summaries: if let Subject::Compaction(s) = &self.subject { Some(s.summaries.clone()) } else { None },
            actions: self.kind.action_names(),
            decision: self.decision.clone(),
        }
    }

    /// One tool definition per public action of the kind, from the table.
    pub fn to_tools(&self) -> Vec<ToolDefinition> {
        self.kind
            .actions()
            .iter()
            .map(|a| ToolDefinition {
                name: a.name,
                description: format!("{} ({} pending `{}`)", a.description, self.kind.as_str(), self.id),
                parameters: a.parameters(),
            })
            .collect()
    }

    /// A plain-text account of what is pending and what can be done about it, generated from the
    /// kind's actions and their argument schemas.
    pub fn describe_api(&self) -> String {
        let mut text = format!(
            "pending {} `{}` ({}), triggered by {}, opened {}\nsubject: {}\n",
            self.kind.as_str(),
            self.id,
            self.status.as_str(),
            self.triggered_by,
            self.created_at,
            self.subject.summary()
        );
        if let Some(d) = &self.decision {
            text.push_str(&format!(
                "decided: {} by {}{}\n",
                d.action,
                d.by,
                d.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default()
            ));
        }
        text.push_str("actions (pass the arguments as a JSON object):\n");
        for action in self.kind.actions() {
            let parameters = action.parameters();
            let required: Vec<&str> = parameters["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            let arguments: Vec<String> = parameters["properties"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(name, schema)| {
                    let optional = if required.contains(&name.as_str()) { "" } else { "?" };
                    let about = schema["description"].as_str().map(|d| format!(" ({d})")).unwrap_or_default();
                    format!("{name}{optional}: {}{about}", type_name(schema))
                })
                .collect();
            text.push_str(&format!("- {}({}): {}\n", action.name, arguments.join(", "), action.description));
        }
        text
    }

    /// Applies `{ "action": name, ...arguments }`. Refuses, changing nothing: any action on a Pending
    /// that is no longer open, an action not in the kind's public list, bad or missing arguments.
    pub fn apply_decision(&mut self, decision: &Value, by: &str) -> Result<Effect, ApprovalError> {
        let object =
            decision.as_object().ok_or_else(|| ApprovalError::BadDecision("a decision is an object with an `action`".to_owned()))?;
        let action = object
            .get("action")
            .and_then(Value::as_str)
            .ok_or_else(|| ApprovalError::BadDecision("a decision needs a string `action`".to_owned()))?;
        let args: Map<String, Value> = object.iter().filter(|(k, _)| *k != "action").map(|(k, v)| (k.clone(), v.clone())).collect();
        self.execute_tool(action, Value::Object(args), by)
    }

    /// Applies the action `name` with `args` (an object): `apply_decision` with the action apart.
    pub fn execute_tool(&mut self, name: &str, args: Value, by: &str) -> Result<Effect, ApprovalError> {
        if !self.is_open() {
            return Err(ApprovalError::NotOpen { id: self.id.clone(), status: self.status.as_str() });
        }
        // The whitelist: only the kind's table is reachable, whatever the name.
        let spec = self.kind.action(name).ok_or_else(|| ApprovalError::NotAllowed {
            action: name.to_owned(),
            kind: self.kind.as_str(),
            allowed: self.kind.action_names(),
        })?;
        let args = if args.is_null() { Value::Object(Map::new()) } else { args };
        // Applied to a copy: an action that fails half-way leaves the Pending as it was.
        let mut next = self.clone();
        let effect = spec.apply(args, &mut next, by)?;
        *self = next;
        Ok(effect)
    }

    /// The one-line result of an applied action, for a model's tool loop.
    pub fn result_text(&self, action: &str, effect: &Effect) -> String {
        match effect {
            Effect::Decided => {
                let d = self.decision.as_ref();
                let said = d.and_then(|d| d.reason.as_deref().or(d.note.as_deref())).map(|s| format!(": {s}")).unwrap_or_default();
                format!("pending `{}` is {}{said}", self.id, self.status.as_str())
            }
            Effect::Edited => format!("`{action}` applied; pending `{}` is still open for a decision", self.id),
            Effect::RetryRequested { index, .. } => {
                format!("summary {index} will be written again; pending `{}` is still open for a decision", self.id)
            }
        }
    }

    /// Checks a compaction's summaries: the first that is empty or larger than its share of the
    /// budget, else a total over the budget. Sizes are estimates (the model is not known here; see
    /// `tokens.rs`: they err high). Other kinds have nothing to validate and pass.
    pub fn validate(&self) -> ValidationResult {
        let Subject::Compaction(subject) = &self.subject else {
            return ValidationResult::passed();
        };
        if subject.summaries.is_empty() {
            return ValidationResult::failed("there are no summaries".to_owned(), None);
        }
        let counter = crate::budget::tokens::TokenCounter::for_model("");
        let share = subject.budget / subject.summaries.len() as u64;
        let mut total = 0u64;
        for (i, summary) in subject.summaries.iter().enumerate() {
            if summary.text.trim().is_empty() {
                return ValidationResult::failed(format!("summary {i} is empty"), Some(i));
            }
            let tokens = u64::from(counter.count(&summary.text));
            if tokens > share {
                return ValidationResult::failed(
                    format!(
                        "summary {i} is about {tokens} tokens, over its share of the budget ({share} of {}); make it shorter",
                        subject.budget
                    ),
                    Some(i),
                );
            }
            total += tokens;
        }
        if total > subject.budget {
            return ValidationResult::failed(
                format!("the summaries total about {total} tokens, over the budget of {}", subject.budget),
                None,
            );
        }
        ValidationResult::passed()
    }
}

/// What [`auto_retry`] ended with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryOutcome {
    /// The last validation (passed, or the problem that remained).
    pub validation: ValidationResult,
    /// How many summaries were written again.
    pub retries: u32,
    /// Why it stopped early: the retry function failed, or an edit was refused.
    pub error: Option<String>,
}

/// What `auto_retry` works on: a Pending held by the caller, or one in an `Approvals` registry.
pub trait Retryable {
    fn validate(&mut self) -> Result<ValidationResult, ApprovalError>;
    fn edit_summary(&mut self, index: usize, text: String) -> Result<(), ApprovalError>;
}

impl Retryable for Pending {
    fn validate(&mut self) -> Result<ValidationResult, ApprovalError> {
        Ok(Pending::validate(self))
    }

    fn edit_summary(&mut self, index: usize, text: String) -> Result<(), ApprovalError> {
        self.execute_tool("edit_summary", serde_json::json!({ "index": index, "text": text }), "auto_retry").map(drop)
    }
}

/// The standard validate → retry loop for compaction summaries: while validation fails on a summary
/// and retries are left, `retry(index, diagnosis)` writes that summary again (the diagnosis is its
/// guidance) and the new text replaces it through `edit_summary` (so the whitelist and the open
/// state apply as to any caller). The handler that calls it owns the loop's limits; a failure with
/// no index (a total over budget) is not retried, there being no one summary to blame.
pub fn auto_retry(
    pending: &mut impl Retryable,
    max_retries: u32,
    mut retry: impl FnMut(usize, &str) -> Result<String, String>,
) -> RetryOutcome {
    let mut retries = 0;
    loop {
        let validation = match pending.validate() {
            Ok(v) => v,
            Err(e) => {
                return RetryOutcome { validation: ValidationResult::failed(e.to_string(), None), retries, error: Some(e.to_string()) };
            }
        };
        let (Some(index), Some(diagnosis)) = (validation.index, validation.diagnosis.clone()) else {
            return RetryOutcome { validation, retries, error: None };
        };
        if validation.passed || retries >= max_retries {
            return RetryOutcome { validation, retries, error: None };
        }
        let text = match retry(index, &diagnosis) {
            Ok(text) => text,
            Err(e) => {
                return RetryOutcome { validation, retries, error: Some(e) };
            }
        };
        retries += 1;
        if let Err(e) = pending.edit_summary(index, text) {
            return RetryOutcome { validation, retries, error: Some(e.to_string()) };
        }
    }
}

fn type_name(schema: &Value) -> String {
    match &schema["type"] {
        Value::String(t) => t.clone(),
        Value::Array(types) => types.iter().filter_map(Value::as_str).filter(|t| *t != "null").collect::<Vec<_>>().join(" | "),
        _ => "any".to_owned(),
    }
}

/// A fresh, opaque id: `pnd-` and 16 hex digits from the process's random hasher keys, the time and
/// a counter, so two ids never repeat within a process and are not guessable across processes.
fn new_id(now_ms: u64) -> String {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(now_ms);
    hasher.write_u64(COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    hasher.write_u32(std::process::id());
    format!("pnd-{:016x}", hasher.finish())
}
