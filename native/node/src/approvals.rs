//! The approvals of an engine, for the extension: the `Engine` methods over `core::approvals` and
//! their object shapes. Thin: convert, call the core, convert back. A refused decision throws an
//! Error whose `code` is `EREFUSED` (its message names what is allowed); misuse (an unknown kind, a
//! subject without its required fields, an unknown Pending) throws with `EINVAL`.
//!
//! An ask is two crossings: `openAsk` (the core builds the Pending from the ask and routes it) and
//! `settlePending` (the core waits for the decision, makes it durable, applies a grant, and answers
//! what runs next).
//!
//! A Pending crosses as `PendingDict`, the core's `to_dict()` with its snake_case keys and `null` for
//! every empty field, as the approvals contract fixes it; requests and configuration use the
//! binding's camelCase.

use crate::Engine;
use crate::errors::{Code, Result, error as coded};
use crate::evaluate::{JsAsked, event_kind};
use chokepoint_core as core;
use core::approvals::{ApprovalError, OpenRequest, PendingDict, PendingKind};
use napi::bindgen_prelude::*;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// A refusal of a decision is `EREFUSED`; anything else the caller got wrong is `EINVAL`.
fn error(e: ApprovalError) -> Error<Code> {
    coded(if e.is_refusal() { Code::Refused } else { Code::Invalid }, e.to_string())
}

fn misuse(e: ApprovalError) -> Error<Code> {
    coded(Code::Invalid, e.to_string())
}

/// What `openPending` is asked.
#[napi(object, js_name = "OpenPendingRequest")]
pub struct JsOpenPendingRequest {
    #[napi(ts_type = "PendingKindName")]
    pub kind: String,
    /// The kind's subject (see the approvals contract); its extra fields are kept.
    #[napi(ts_type = "unknown")]
    pub subject: serde_json::Value,
    /// The hook or policy that asked; a policy registered under this name hears the outcome.
    pub triggered_by: String,
    pub session_id: Option<String>,
    pub task_id: Option<String>,
    /// The caller reviews the Pending itself (route `caller`).
    pub review: Option<bool>,
}

/// What a tool call's Pending would do to its file.
#[napi(object, js_name = "WritePreview", use_nullable = true)]
pub struct JsWritePreview {
    /// The workspace-relative path written (null for a patch, which names its own files).
    pub path: Option<String>,
    /// The file now; empty when it does not exist yet.
    pub before: String,
    /// The file as the call would leave it, when the input says so in full or as replacements.
    pub after: Option<String>,
    /// The patch the call applies, as the agent wrote it.
    pub patch: Option<String>,
    /// Why `after` could not be worked out.
    pub note: Option<String>,
}

/// The agent whose call waits on a Pending, and where it works.
#[napi(object, js_name = "PendingAsker", use_nullable = true)]
pub struct JsAsker {
    /// The agent's id: `claude`, `codex`, `gemini`, `copilot`, `cursor`, `vscode`.
    pub agent: String,
    /// Its session as the ledger names it (`<agent>:<its id>`).
    pub session: Option<String>,
    /// The intent the session holds.
    pub intent: Option<String>,
    /// Its worktree's folder name.
    pub worktree: Option<String>,
    /// Its machine, for another machine's Pending.
    pub machine: Option<String>,
}

/// A Pending, as `to_dict()` gives it: every field present, `null` when empty.
#[napi(object, js_name = "PendingDict", use_nullable = true)]
pub struct JsPendingDict {
    pub id: String,
    #[napi(ts_type = "PendingKindName")]
    pub kind: String,
    #[napi(js_name = "created_at")]
    pub created_at: String,
    #[napi(js_name = "triggered_by")]
    pub triggered_by: String,
    #[napi(js_name = "session_id")]
    pub session_id: Option<String>,
    #[napi(js_name = "task_id")]
    pub task_id: Option<String>,
    /// When it lapses if nobody decides it: milliseconds since the Unix epoch (this machine's clock).
    #[napi(js_name = "deadline_ms")]
    pub deadline_ms: Option<f64>,
    /// What happens then: rejected (our runtime's asks), the agent's call denied, or handed to the
    /// agent's own permission prompt (`approvals.fallback: agent`).
    #[napi(js_name = "on_timeout", ts_type = "PendingLapseName")]
    pub on_timeout: String,
    /// Who waits on it, when another agent's call asked.
    #[napi(ts_type = "PendingAsker")]
    pub asker: Option<JsAsker>,
    #[napi(ts_type = "PendingStatusName")]
    pub status: String,
    #[napi(ts_type = "PendingRoute")]
    pub route: String,
    /// The subject as the caller gave it, with the fields a host added for its own views.
    #[napi(ts_type = "Record<string, unknown>")]
    pub subject: serde_json::Value,
    /// A `plan` Pending's tasks as the core reads its subject (edited by the decider, once decided).
    #[napi(ts_type = "Array<PlanTask>")]
    pub tasks: Option<Vec<crate::rewrite::JsPlanTask>>,
    /// A `compaction` Pending's summaries as the core reads its subject.
    #[napi(ts_type = "Array<CompactionSummary>")]
    pub summaries: Option<Vec<crate::rewrite::JsSummary>>,
    /// The kind's public actions, in order.
    pub actions: Vec<String>,
    #[napi(ts_type = "PendingDecision")]
    pub decision: Option<JsPendingDecision>,
}

#[napi(object, js_name = "PendingDecision", use_nullable = true)]
pub struct JsPendingDecision {
    pub action: String,
    /// `human`, `reviewer`, `auto-approve`, `auto-deny`, `guard`, `timeout`, or what the host said.
    pub by: String,
    pub reason: Option<String>,
    pub note: Option<String>,
    #[napi(ts_type = "unknown")]
    pub input: Option<serde_json::Value>,
    pub save: bool,
    /// The machine the decider was on, for a Pending shared through a team's database.
    pub machine: Option<String>,
}

// These From impls take the core's structs apart by every field, so a field the core adds is a
// compile error here until it is carried, never silently dropped.
impl From<PendingDict> for JsPendingDict {
    fn from(p: PendingDict) -> Self {
        let PendingDict {
            id,
            kind,
            created_at,
            triggered_by,
            session_id,
            task_id,
            deadline_ms,
            on_timeout,
            asker,
            status,
            route,
            subject,
            tasks,
            summaries,
            actions,
            decision,
        } = p;
        JsPendingDict {
            id,
            kind: kind.as_str().to_owned(),
            created_at,
            triggered_by,
            session_id,
            task_id,
            deadline_ms: deadline_ms.map(|ms| ms as f64),
            on_timeout: on_timeout.as_str().to_owned(),
            asker: asker.map(Into::into),
            status: status.as_str().to_owned(),
            route,
            subject,
            tasks: tasks.map(|t| t.into_iter().map(Into::into).collect()),
            summaries: summaries.map(|s| s.into_iter().map(Into::into).collect()),
            actions: actions.into_iter().map(str::to_owned).collect(),
            decision: decision.map(Into::into),
        }
    }
}

impl From<core::approvals::Asker> for JsAsker {
    fn from(a: core::approvals::Asker) -> Self {
        let core::approvals::Asker { agent, session, intent, worktree, machine } = a;
        JsAsker { agent, session, intent, worktree, machine }
    }
}

impl From<core::approvals::Decision> for JsPendingDecision {
    fn from(d: core::approvals::Decision) -> Self {
        let core::approvals::Decision { action, by, reason, note, input, save, machine } = d;
        JsPendingDecision { action, by, reason, note, input, save, machine }
    }
}

impl From<core::approvals::Settlement> for JsSettlement {
    fn from(s: core::approvals::Settlement) -> Self {
        let core::approvals::Settlement { next, by, reason, note, input, message, pending } = s;
        JsSettlement { next: next.as_str().to_owned(), by, reason, note, input, message, pending: pending.map(Into::into) }
    }
}

impl From<core::approvals::Preview> for JsWritePreview {
    fn from(p: core::approvals::Preview) -> Self {
        let core::approvals::Preview { path, before, after, patch, note } = p;
        JsWritePreview { path, before, after, patch, note }
    }
}

#[napi(object, js_name = "OpenedPending")]
pub struct JsOpenedPending {
    pub pending: JsPendingDict,
    #[napi(ts_type = "PendingRoute")]
    pub route: String,
}

/// An ask as the chain left it (`Evaluation.asks`, the event's tool, input and paths): the core
/// makes the Pending of it (`openAsk`).
#[napi(object, js_name = "AskRequest")]
pub struct JsAskRequest {
    /// `PreToolUse` (a tool call, or a `scope_expansion_request`), `PlanSubmit` (the plan),
    /// `PreCompact` (the compaction's proposal) or `BeforeSubmit` (`{ result, failures }`).
    #[napi(ts_type = "EventName")]
    pub event: String,
    pub tool: Option<String>,
    #[napi(ts_type = "unknown")]
    pub input: serde_json::Value,
    pub paths: Option<Vec<String>>,
    /// Who asked (`Evaluation.asks`); none for a submission its hooks refused.
    #[napi(ts_type = "Array<Asked>")]
    pub asks: Option<Vec<JsAsked>>,
    pub session_id: Option<String>,
    pub task_id: Option<String>,
    /// The caller reviews the Pending itself (route `caller`).
    pub review: Option<bool>,
}

/// What follows a decided Pending (`settlePending`).
#[napi(object, js_name = "Settlement")]
pub struct JsSettlement {
    /// `run`: go on as asked (a plan or compaction as decided: `pending.subject`); `run_modified`:
    /// run `input` instead, once the chain allowed it; `granted`: the expansion is applied;
    /// `override` / `retry`: a refused submission accepted / another round; `refuse`: nothing runs.
    #[napi(ts_type = "SettlementNextName")]
    pub next: String,
    /// Who decided: `human`, `reviewer`, `timeout`, `handler:<name>`, ...
    pub by: String,
    pub reason: Option<String>,
    /// The decider's note, or a retry's guidance.
    pub note: Option<String>,
    /// The modified tool input (`run_modified`).
    pub input: Option<serde_json::Value>,
    /// What the agent's model is told: the tool's result when nothing runs, context for its result
    /// when something does.
    pub message: String,
    /// The decided Pending; absent when there was none (an unknown id, or no Pending could be opened).
    pub pending: Option<JsPendingDict>,
}

/// A public action as a model's tool definition.
#[napi(object, js_name = "PendingTool")]
pub struct JsPendingTool {
    pub name: String,
    pub description: String,
    /// JSON Schema (draft 2020-12) of the arguments: an object, `additionalProperties: false`.
    #[napi(ts_type = "Record<string, unknown>")]
    pub parameters: serde_json::Value,
}

#[napi(object, js_name = "AppliedDecision")]
pub struct JsAppliedDecision {
    pub pending: JsPendingDict,
    #[napi(ts_type = "DecisionEffectName")]
    pub effect: String,
}

#[napi(object, js_name = "PendingToolResult")]
pub struct JsPendingToolResult {
    pub pending: JsPendingDict,
    #[napi(ts_type = "DecisionEffectName")]
    pub effect: String,
    /// One line for a model's tool loop.
    pub text: String,
}

#[napi(object, js_name = "PendingValidation", use_nullable = true)]
pub struct JsPendingValidation {
    pub passed: bool,
    pub diagnosis: Option<String>,
    pub index: Option<u32>,
}

#[napi(object, js_name = "ReviewerConfig")]
pub struct JsReviewerConfig {
    pub model: String,
    pub escalate_on: Vec<String>,
}

#[napi(object, js_name = "ApprovalsConfig", use_nullable = true)]
pub struct JsApprovalsConfig {
    #[napi(ts_type = "ApprovalRouteName")]
    pub default: String,
    pub timeout_seconds: u32,
    /// Kind or `*` → handler name: hooks.yaml's with the host's registrations over them.
    pub handlers: HashMap<String, String>,
    pub reviewer: Option<JsReviewerConfig>,
}

#[napi(object, js_name = "PolicyRejection")]
pub struct JsPolicyRejection {
    pub pending: JsPendingDict,
    pub reason: String,
    #[napi(ts_type = "FeedbackSourceName")]
    pub source: String,
}

#[napi(object, js_name = "PolicySuccess")]
pub struct JsPolicySuccess {
    pub pending: JsPendingDict,
}

/// A JavaScript callback the core calls from any thread; weak, so it never keeps Node running.
type Callback<T> = ThreadsafeFunction<T, (), T, Status, false, true>;

/// A policy of the extension's: its callbacks, called on the JavaScript thread.
struct JsPolicy {
    on_rejection: Option<Callback<JsPolicyRejection>>,
    on_success: Option<Callback<JsPolicySuccess>>,
}

impl core::approvals::Policy for JsPolicy {
    fn on_rejection(&self, r: &core::approvals::Rejection) {
        if let Some(f) = &self.on_rejection {
            let rejection =
                JsPolicyRejection { pending: r.pending.clone().into(), reason: r.reason.clone(), source: r.source.as_str().to_owned() };
            f.call(rejection, ThreadsafeFunctionCallMode::NonBlocking);
        }
    }

    fn on_success(&self, pending: &PendingDict) {
        if let Some(f) = &self.on_success {
            f.call(JsPolicySuccess { pending: pending.clone().into() }, ThreadsafeFunctionCallMode::NonBlocking);
        }
    }
}

#[napi]
impl Engine {
    /// Opens the Pending of an ask (its kind and subject built by the core from the event) and
    /// routes it, like `openPending`. Throws (`EINVAL`) for an ask on an event nothing approves.
    #[napi(catch_unwind)]
    pub fn open_ask(&self, ask: JsAskRequest) -> Result<JsOpenedPending> {
        let ask = core::approvals::Ask {
            event: event_kind(&ask.event)?,
            tool: ask.tool,
            input: ask.input,
            paths: ask.paths.unwrap_or_default(),
            asked: ask.asks.unwrap_or_default().into_iter().map(|a| core::Asked { hook: a.hook.into(), reason: a.reason }).collect(),
            session_id: ask.session_id,
            task_id: ask.task_id,
            review: ask.review.unwrap_or(false),
        };
        let opened = self.inner.open_ask(ask).map_err(misuse)?;
        Ok(JsOpenedPending { pending: opened.pending.into(), route: opened.route.to_string() })
    }

    /// Resolves once the Pending is decided (or times out, as a refusal): the approval made durable
    /// in the ledger, an approved expansion granted, and what the agent does next. Never rejects: a
    /// failure of any of these is a `refuse` that says why. No JavaScript thread waits.
    #[napi(catch_unwind)]
    pub async fn settle_pending(&self, id: String) -> napi::Result<JsSettlement> {
        Ok(self.inner.settle(&id).await.into())
    }

    /// Opens a Pending and routes it: `caller` (the request reviews it), `guard` (opened while a
    /// handler runs for the session: approved at once), the handler of its kind or of `*`, or the
    /// configured default. The automatic routes have decided it before this returns.
    #[napi(catch_unwind)]
    pub fn open_pending(&self, req: JsOpenPendingRequest) -> Result<JsOpenedPending> {
        let kind = PendingKind::parse(&req.kind).map_err(misuse)?;
        let request = OpenRequest {
            session_id: req.session_id,
            task_id: req.task_id,
            review: req.review.unwrap_or(false),
            ..OpenRequest::new(kind, req.subject, req.triggered_by)
        };
        let opened = self.inner.approvals().open(request).map_err(misuse)?;
        Ok(JsOpenedPending { pending: opened.pending.into(), route: opened.route.to_string() })
    }

    /// The Pending, open or recently decided; null if unknown.
    #[napi(catch_unwind)]
    pub fn get_pending(&self, id: String) -> Option<JsPendingDict> {
        self.inner.approvals().get(&id).map(Into::into)
    }

    /// What the write of the Pending `id` would do to its file, read now: the file on disk and as the
    /// call would leave it (any agent's write tool, read as the core reads it); null for an unknown
    /// Pending or one that writes no one file.
    #[napi(catch_unwind)]
    pub fn preview_pending(&self, id: String) -> Option<JsWritePreview> {
        self.inner.pending_preview(&id).map(Into::into)
    }

    /// The open Pendings, oldest first.
    #[napi(catch_unwind)]
    pub fn list_pending(&self) -> Vec<JsPendingDict> {
        self.inner.approvals().list().into_iter().map(Into::into).collect()
    }

    /// The Pending's public actions as tool definitions for a model.
    #[napi(catch_unwind)]
    pub fn pending_tools(&self, id: String) -> Result<Vec<JsPendingTool>> {
        let tools = self.inner.approvals().tools(&id).map_err(misuse)?;
        Ok(tools
            .into_iter()
            .map(|t| JsPendingTool { name: t.name.to_owned(), description: t.description, parameters: t.parameters })
            .collect())
    }

    /// What is pending and what can be done about it, in plain text.
    #[napi(catch_unwind)]
    pub fn describe_pending(&self, id: String) -> Result<String> {
        self.inner.approvals().describe(&id).map_err(misuse)
    }

    /// Applies `{ action, ...arguments }`. Throws `EREFUSED` for an action the kind does not list,
    /// bad or missing arguments, or a Pending that is no longer open.
    #[napi(catch_unwind, ts_args_type = "id: string, decision: { action: string; [argument: string]: unknown }, decidedBy: string")]
    pub fn apply_decision(&self, id: String, decision: serde_json::Value, decided_by: String) -> Result<JsAppliedDecision> {
        let applied = self.inner.approvals().apply_decision(&id, &decision, &decided_by).map_err(error)?;
        Ok(JsAppliedDecision { pending: applied.pending.into(), effect: applied.effect.as_str().to_owned() })
    }

    /// `applyDecision` with the action apart, for a model's tool call; `text` is the tool's result.
    #[napi(catch_unwind, ts_args_type = "id: string, name: string, args: Record<string, unknown>, decidedBy: string")]
    pub fn execute_pending_tool(
        &self,
        id: String,
        name: String,
        args: serde_json::Value,
        decided_by: String,
    ) -> Result<JsPendingToolResult> {
        let applied = self.inner.approvals().execute_tool(&id, &name, args, &decided_by).map_err(error)?;
        Ok(JsPendingToolResult { pending: applied.pending.into(), effect: applied.effect.as_str().to_owned(), text: applied.text })
    }

    /// A compaction's summaries checked: the first empty one or one over its share of the budget.
    #[napi(catch_unwind)]
    pub fn validate_pending(&self, id: String) -> Result<JsPendingValidation> {
        let v = self.inner.approvals().validate(&id).map_err(misuse)?;
        Ok(JsPendingValidation { passed: v.passed, diagnosis: v.diagnosis, index: v.index.map(|i| i as u32) })
    }

    /// Resolves when the Pending is decided or timed out. `timeoutMs` brings its deadline forward:
    /// undecided then, it is `timed_out` (a rejection). No thread waits.
    #[napi(catch_unwind)]
    pub async fn wait_pending(&self, id: String, timeout_ms: Option<f64>) -> napi::Result<JsPendingDict> {
        let timeout = timeout_ms.filter(|ms| ms.is_finite() && *ms >= 0.0).map(|ms| Duration::from_millis(ms as u64));
        let engine = self.inner.clone();
        let pending = engine.approvals().wait(&id, timeout).await.map_err(|e| Error::new(Status::InvalidArg, e.to_string()))?;
        Ok(pending.into())
    }

    /// Registers the handler of a kind (or `*`) by name (`human`, `reviewer`, `auto-approve`,
    /// `auto-deny`, or a handler of the host's, routed as `handler:<name>`), over hooks.yaml's;
    /// null removes the registration.
    #[napi(catch_unwind)]
    pub fn set_approval_handler(&self, kind: String, handler: Option<String>) -> Result<()> {
        self.inner.approvals().set_handler(&kind, handler.as_deref()).map_err(misuse)
    }

    /// A handler starts running for this session: its Pendings route to `guard` until the exit.
    #[napi(catch_unwind)]
    pub fn enter_approval_handler(&self, session_id: String) {
        self.inner.approvals().enter_handler(&session_id);
    }

    #[napi(catch_unwind)]
    pub fn exit_approval_handler(&self, session_id: String) {
        self.inner.approvals().exit_handler(&session_id);
    }

    /// A handler returned without deciding: returns the warning (also written to the trace). The
    /// Pending times out at its deadline.
    #[napi(catch_unwind)]
    pub fn note_unresolved(&self, id: String, handler: String) -> Result<String> {
        self.inner.approvals().note_unresolved(&id, &handler).map_err(error)
    }

    /// Hands an open Pending to another route (`human`, `reviewer`, a handler's name), recording
    /// `note` (the reviewer's reasoning) in the trace; listeners hear of it. Refused (`EREFUSED`) for
    /// a decided Pending or an automatic route.
    #[napi(catch_unwind)]
    pub fn escalate_pending(&self, id: String, to: String, note: String) -> Result<JsPendingDict> {
        self.inner.approvals().escalate(&id, &to, &note).map(JsPendingDict::from).map_err(error)
    }

    /// The approvals settings in effect.
    #[napi(catch_unwind)]
    pub fn approvals_config(&self) -> JsApprovalsConfig {
        let c = self.inner.approvals().config();
        JsApprovalsConfig {
            default: c.default.as_str().to_owned(),
            timeout_seconds: u32::try_from(c.timeout_seconds).unwrap_or(u32::MAX),
            handlers: c.handlers.into_iter().collect(),
            reviewer: c
                .reviewer
                .map(|r| JsReviewerConfig { model: r.model, escalate_on: r.escalate_on.iter().map(|e| e.as_str().to_owned()).collect() }),
        }
    }

    /// Calls `cb` on the JavaScript thread for every open, edit and decision (timeouts included).
    #[napi(catch_unwind, ts_args_type = "cb: (pending: PendingDict) => void")]
    pub fn on_pending_change(&self, cb: Callback<JsPendingDict>) {
        let cb = Arc::new(cb);
        self.inner.approvals().on_change(Arc::new(move |pending: &PendingDict| {
            cb.call(pending.clone().into(), ThreadsafeFunctionCallMode::NonBlocking);
        }));
    }

    /// The policy that hears the outcomes of the Pendings it triggered (`triggeredBy == name`).
    #[napi(
        catch_unwind,
        ts_args_type = "name: string, policy: { onRejection?: (rejection: PolicyRejection) => void; onSuccess?: (success: PolicySuccess) => void }"
    )]
    pub fn register_policy(&self, name: String, policy: Object) -> Result<()> {
        let on_rejection = policy.get("onRejection").map_err(crate::errors::from_napi)?;
        let policy = JsPolicy { on_rejection, on_success: policy.get("onSuccess").map_err(crate::errors::from_napi)? };
        self.inner.approvals().register_policy(name, Arc::new(policy));
        Ok(())
    }
}
