//! `Approvals`: the Pendings of one engine, who answers them, and what their outcomes set off.
//!
//! Opening routes a Pending (`routing.rs`) and, for the automatic routes (`auto-approve`,
//! `auto-deny`, the recursion guard), decides it at once through the kind's own table. Every change
//! (open, edit, decision, timeout) is then, outside the lock and in this order: written to the trace
//! (the record sink), told to the change listeners, and, for a decision of a Pending some policy
//! triggered, told to that policy (`on_rejection` or `on_success`).
//!
//! Invariant: no Pending is left hanging. Each has a deadline (`approvals.timeout_seconds`, or
//! shorter when a waiter asks); one timer thread per registry, started with the first Pending,
//! sleeps until the earliest deadline and times out what is still open then (`timed_out`, a
//! rejection). Waiters are futures on a watch channel of the Pending's status: no thread waits
//! for a decision.

use super::error::ApprovalError;
use super::kind::PendingKind;
use super::pending::{Decision, Effect, Pending, PendingDict, RetryOutcome, Retryable, Status, ToolDefinition, ValidationResult};
use super::record::{Phase, approval_record};
use super::routing::{ANY_KIND, Route, merged_handlers, route};
use crate::approvals::config::{ApprovalRoute, ApprovalsConfig, AskFallback, ReviewerConfig};
use crate::ledger::Record;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// How many decided Pendings stay readable (`get`, `wait`) after their decision.
const KEEP_DECIDED: usize = 256;

/// What a caller asks to be approved.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenRequest {
    pub kind: PendingKind,
    pub subject: Value,
    /// The hook or policy that asked; its policy, if one is registered by that name, hears the outcome.
    pub triggered_by: String,
    pub session_id: Option<String>,
    pub task_id: Option<String>,
    /// The caller reviews it itself (route `caller`).
    pub review: bool,
    /// Overrides `approvals.timeout_seconds` for this Pending.
    pub timeout: Option<Duration>,
}

impl OpenRequest {
    pub fn new(kind: PendingKind, subject: Value, triggered_by: impl Into<String>) -> OpenRequest {
        OpenRequest { kind, subject, triggered_by: triggered_by.into(), session_id: None, task_id: None, review: false, timeout: None }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Opened {
    pub pending: PendingDict,
    pub route: Route,
}

/// What an applied action did, and the one line a model's tool loop reads.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    pub pending: PendingDict,
    pub effect: Effect,
    pub text: String,
}

/// Who decided a rejection, for the policy that triggered it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeedbackSource {
    Human,
    Reviewer,
    /// An automatic route (auto-approve, auto-deny, the recursion guard) or a host handler.
    Policy,
    Timeout,
}

impl FeedbackSource {
    /// From a decision's `by`: `reviewer`, `timeout`, the automatic routes and `handler:<name>` are
    /// themselves; anyone else is a human.
    pub fn of(by: &str) -> FeedbackSource {
        match by {
            "reviewer" => FeedbackSource::Reviewer,
            "timeout" => FeedbackSource::Timeout,
            "auto-approve" | "auto-deny" | "guard" | "auto_retry" => FeedbackSource::Policy,
            other if other.starts_with("handler:") || other.starts_with("policy:") => FeedbackSource::Policy,
            _ => FeedbackSource::Human,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            FeedbackSource::Human => "human",
            FeedbackSource::Reviewer => "reviewer",
            FeedbackSource::Policy => "policy",
            FeedbackSource::Timeout => "timeout",
        }
    }
}

/// A rejection as the policy that triggered the Pending hears of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    pub pending: PendingDict,
    pub reason: String,
    pub source: FeedbackSource,
}

/// A policy that triggers operations and adapts to their outcomes (backs off, adjusts).
pub trait Policy: Send + Sync {
    fn on_rejection(&self, _rejection: &Rejection) {}
    fn on_success(&self, _pending: &PendingDict) {}
}

pub type ChangeListener = Arc<dyn Fn(&PendingDict) + Send + Sync>;

/// Where the trace records of Pendings go (the engine's ledger).
pub type RecordSink = Arc<dyn Fn(Record, Phase) + Send + Sync>;

/// The approvals settings in effect: hooks.yaml's with the host's handler registrations over them.
#[derive(Debug, Clone, PartialEq)]
pub struct EffectiveConfig {
    pub default: ApprovalRoute,
    pub timeout_seconds: u64,
    /// Kind or `*` → handler name (`human`, `reviewer`, `auto-approve`, `auto-deny` or a host
    /// handler's name).
    pub handlers: BTreeMap<String, String>,
    pub reviewer: Option<ReviewerConfig>,
    /// What an external agent's hook answers when nobody decides its ask in time.
    pub fallback: AskFallback,
}

/// The Pendings of one engine. Not `Clone`: its owner's drop stops its timer thread.
pub struct Approvals {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Approvals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.inner.lock();
        f.debug_struct("Approvals").field("pending", &state.entries.len()).field("config", &state.config).finish()
    }
}

struct Inner {
    state: Mutex<State>,
    /// Wakes the timer thread: a new or earlier deadline, or shutdown.
    wake: Condvar,
    listeners: RwLock<Vec<ChangeListener>>,
    policies: RwLock<HashMap<String, Arc<dyn Policy>>>,
    sink: Option<RecordSink>,
}

#[derive(Default)]
struct State {
    config: ApprovalsConfig,
    registered: BTreeMap<String, Route>,
    /// Sessions with a handler running, and how many (handlers may nest).
    in_handler: HashMap<String, u32>,
    entries: HashMap<String, Entry>,
    next_seq: u64,
    decided: VecDeque<String>,
    timer_started: bool,
    shutdown: bool,
}

struct Entry {
    pending: Pending,
    seq: u64,
    /// The timeout that applies: the configured one, or a waiter's shorter one. The reason of a
    /// timeout names it (not the time measured, which a busy machine makes jitter).
    timeout: Duration,
    deadline: Instant,
    status: watch::Sender<Status>,
}

/// Something that happened to a Pending, told to the trace, the listeners and the policy after the
/// lock is released.
enum Happened {
    Opened(PendingDict),
    Edited(PendingDict, String),
    Decided(PendingDict),
    Warned(PendingDict, String),
    Escalated(PendingDict, String),
}

impl Default for Approvals {
    fn default() -> Self {
        Approvals::new(None)
    }
}

impl Drop for Approvals {
    fn drop(&mut self) {
        self.inner.lock().shutdown = true;
        self.inner.wake.notify_all();
    }
}

impl Approvals {
    /// A registry writing its records to `sink` (none: nothing is recorded).
    pub fn new(sink: Option<RecordSink>) -> Approvals {
        Approvals {
            inner: Arc::new(Inner {
                state: Mutex::default(),
                wake: Condvar::new(),
                listeners: RwLock::default(),
                policies: RwLock::default(),
                sink,
            }),
        }
    }

    /// Takes new settings (the engine calls this on every load with the last good hooks.yaml). Open
    /// Pendings keep their deadlines.
    pub fn configure(&self, config: &ApprovalsConfig) {
        self.inner.lock().config = config.clone();
    }

    pub fn config(&self) -> EffectiveConfig {
        let state = self.inner.lock();
        EffectiveConfig {
            default: state.config.default,
            timeout_seconds: state.config.timeout_seconds,
            handlers: merged_handlers(&state.config.handlers, &state.registered).into_iter().map(|(k, r)| (k, r.handler_name())).collect(),
            reviewer: state.config.reviewer.clone(),
            fallback: state.config.fallback,
        }
    }

    /// Registers the handler of a kind (or `*`) by name, over hooks.yaml's; `None` removes the
    /// registration (hooks.yaml's entry, if any, applies again).
    pub fn set_handler(&self, key: &str, handler: Option<&str>) -> Result<(), ApprovalError> {
        if key != ANY_KIND {
            PendingKind::parse(key).map_err(|_| ApprovalError::UnknownHandlerKey(key.to_owned()))?;
        }
        let mut state = self.inner.lock();
        match handler {
            Some(name) => state.registered.insert(key.to_owned(), Route::from_handler(name)),
            None => state.registered.remove(key),
        };
        Ok(())
    }

    /// A handler starts running for `session`: Pendings opened for the session until the matching
    /// `exit_handler` route to `guard` (approved at once).
    pub fn enter_handler(&self, session: &str) {
        *self.inner.lock().in_handler.entry(session.to_owned()).or_default() += 1;
    }

    pub fn exit_handler(&self, session: &str) {
        let mut state = self.inner.lock();
        if let Some(depth) = state.in_handler.get_mut(session) {
            *depth -= 1;
            if *depth == 0 {
                state.in_handler.remove(session);
            }
        }
    }

    /// Listeners hear every open, edit and decision (timeouts included), in that order per Pending.
    pub fn on_change(&self, listener: ChangeListener) {
        self.inner.listeners.write().unwrap_or_else(|p| p.into_inner()).push(listener);
    }

    /// The policy that hears the outcomes of the Pendings it triggers (`triggered_by == name`).
    pub fn register_policy(&self, name: impl Into<String>, policy: Arc<dyn Policy>) {
        self.inner.policies.write().unwrap_or_else(|p| p.into_inner()).insert(name.into(), policy);
    }

    /// Opens a Pending and routes it; the automatic routes decide it before this returns.
    pub fn open(&self, request: OpenRequest) -> Result<Opened, ApprovalError> {
        let mut pending = Pending::new(request.kind, request.subject, request.triggered_by)?;
        pending.session_id = request.session_id;
        pending.task_id = request.task_id;
        let mut state = self.inner.lock();
        let in_handler = pending.session_id.as_ref().is_some_and(|s| state.in_handler.contains_key(s));
        let handlers = merged_handlers(&state.config.handlers, &state.registered);
        pending.route = route(request.review, in_handler, pending.kind, &handlers, state.config.default);
        let mut happened = vec![Happened::Opened(pending.to_dict())];
        let automatic = match pending.route {
            Route::AutoApprove => Some((true, "auto-approve", "approved without review (approvals route auto-approve)")),
            Route::AutoDeny => Some((false, "auto-deny", "rejected without review by the approvals configuration (auto-deny)")),
            Route::Guard => Some((true, "guard", "approved without review: opened while an approval handler ran for this session")),
            _ => None,
        };
        if let Some((approve, by, text)) = automatic {
            auto_decide(&mut pending, approve, by, text)?;
            happened.push(Happened::Decided(pending.to_dict()));
        }
        let opened = Opened { pending: pending.to_dict(), route: pending.route.clone() };
        let now = Instant::now();
        let timeout = request.timeout.unwrap_or(Duration::from_secs(state.config.timeout_seconds));
        let (id, open) = (pending.id.clone(), pending.is_open());
        let seq = state.next_seq;
        state.next_seq += 1;
        let (status, _) = tokio::sync::watch::channel(pending.status);
        state.entries.insert(id.clone(), Entry { pending, seq, timeout, deadline: now + timeout, status });
        if open {
            self.start_timer(&mut state);
            self.inner.wake.notify_all();
        } else {
            state.remember_decided(&id);
        }
        drop(state);
        self.inner.after(happened);
        Ok(opened)
    }

    pub fn get(&self, id: &str) -> Option<PendingDict> {
        self.inner.lock().entries.get(id).map(|e| e.pending.to_dict())
    }

    /// The open Pendings, oldest first.
    pub fn list(&self) -> Vec<PendingDict> {
        let state = self.inner.lock();
        let mut open: Vec<&Entry> = state.entries.values().filter(|e| e.pending.is_open()).collect();
        open.sort_by_key(|e| e.seq);
        open.into_iter().map(|e| e.pending.to_dict()).collect()
    }

    pub fn tools(&self, id: &str) -> Result<Vec<ToolDefinition>, ApprovalError> {
        self.read(id, Pending::to_tools)
    }

    pub fn describe(&self, id: &str) -> Result<String, ApprovalError> {
        self.read(id, Pending::describe_api)
    }

    pub fn validate(&self, id: &str) -> Result<ValidationResult, ApprovalError> {
        self.read(id, Pending::validate)
    }

    /// `apply_decision` on the Pending `id`, by `by` (`human`, `reviewer`, `handler:<name>`...).
    pub fn apply_decision(&self, id: &str, decision: &Value, by: &str) -> Result<Applied, ApprovalError> {
        let action = decision.get("action").and_then(Value::as_str).unwrap_or_default().to_owned();
        self.act(id, &action, |pending| pending.apply_decision(decision, by))
    }

    /// `execute_tool` on the Pending `id`: the action `name` with `args`.
    pub fn execute_tool(&self, id: &str, name: &str, args: Value, by: &str) -> Result<Applied, ApprovalError> {
        self.act(id, name, |pending| pending.execute_tool(name, args, by))
    }

    /// Resolves when the Pending is decided or timed out. `timeout`, if given, brings its deadline
    /// forward (never back): when it passes undecided, the Pending is `timed_out`.
    pub async fn wait(&self, id: &str, timeout: Option<Duration>) -> Result<PendingDict, ApprovalError> {
        let mut status = {
            let mut state = self.inner.lock();
            let entry = state.entries.get_mut(id).ok_or_else(|| ApprovalError::UnknownPending(id.to_owned()))?;
            if let Some(timeout) = timeout {
                let deadline = Instant::now() + timeout;
                if deadline < entry.deadline {
                    entry.deadline = deadline;
                    entry.timeout = timeout;
                    self.inner.wake.notify_all();
                }
            }
            entry.status.subscribe()
        };
        // Err only if the entry was forgotten, which happens to decided Pendings alone.
        let _ = status.wait_for(|s| *s != Status::Open).await;
        self.get(id).ok_or_else(|| ApprovalError::UnknownPending(id.to_owned()))
    }

    /// A handler returned without deciding the Pending: the warning for the host's output channel,
    /// also written to the trace. The Pending stays open until its deadline, then times out.
    pub fn note_unresolved(&self, id: &str, handler: &str) -> Result<String, ApprovalError> {
        let state = self.inner.lock();
        let entry = state.entries.get(id).ok_or_else(|| ApprovalError::UnknownPending(id.to_owned()))?;
        if !entry.pending.is_open() {
            return Err(ApprovalError::NotOpen { id: id.to_owned(), status: entry.pending.status.as_str() });
        }
        let warning = format!(
            "approval handler `{handler}` returned without deciding {} pending `{id}`; it times out and counts as rejected when its timeout of {} runs out",
            entry.pending.kind.as_str(),
            seconds(entry.timeout)
        );
        let dict = entry.pending.to_dict();
        drop(state);
        self.inner.after(vec![Happened::Warned(dict, warning.clone())]);
        Ok(warning)
    }

    /// Hands the open Pending `id` to another route (`human`, `reviewer` or a host handler): the
    /// reviewer's escalation when it would reject, or cannot decide, and `escalate_on` says so. Its
    /// deadline stays; the listeners hear of it (the human's view shows it) and the trace records the
    /// note (the reviewer's reasoning). An automatic route or the caller is refused: nobody would
    /// answer there.
    pub fn escalate(&self, id: &str, to: &str, note: &str) -> Result<PendingDict, ApprovalError> {
        let route = Route::from_handler(to);
        if !matches!(route, Route::Human | Route::Reviewer | Route::Handler(_)) {
            return Err(ApprovalError::BadArguments {
                action: "escalate".to_owned(),
                message: format!("a pending can be handed to `human`, `reviewer` or a handler, not to `{to}`"),
            });
        }
        let mut state = self.inner.lock();
        let entry = state.entries.get_mut(id).ok_or_else(|| ApprovalError::UnknownPending(id.to_owned()))?;
        if !entry.pending.is_open() {
            return Err(ApprovalError::NotOpen { id: id.to_owned(), status: entry.pending.status.as_str() });
        }
        entry.pending.route = route;
        let dict = entry.pending.to_dict();
        drop(state);
        self.inner.after(vec![Happened::Escalated(dict.clone(), note.to_owned())]);
        Ok(dict)
    }

    /// [`super::pending::auto_retry`] on the Pending `id` of this registry: its edits are recorded
    /// and told to the listeners like any other.
    pub fn auto_retry(&self, id: &str, max_retries: u32, retry: impl FnMut(usize, &str) -> Result<String, String>) -> RetryOutcome {
        super::pending::auto_retry(&mut Held { approvals: self, id }, max_retries, retry)
    }

    fn read<T>(&self, id: &str, f: impl FnOnce(&Pending) -> T) -> Result<T, ApprovalError> {
        self.inner.lock().entries.get(id).map(|e| f(&e.pending)).ok_or_else(|| ApprovalError::UnknownPending(id.to_owned()))
    }

    fn act(&self, id: &str, action: &str, f: impl FnOnce(&mut Pending) -> Result<Effect, ApprovalError>) -> Result<Applied, ApprovalError> {
        let mut state = self.inner.lock();
        let entry = state.entries.get_mut(id).ok_or_else(|| ApprovalError::UnknownPending(id.to_owned()))?;
        let effect = f(&mut entry.pending)?;
        let (dict, text) = (entry.pending.to_dict(), entry.pending.result_text(action, &effect));
        let (happened, waiters) = if effect == Effect::Decided {
            let waiters = (entry.status.clone(), entry.pending.status);
            state.remember_decided(id);
            (Happened::Decided(dict.clone()), Some(waiters))
        } else {
            (Happened::Edited(dict.clone(), action.to_owned()), None)
        };
        drop(state);
        self.inner.after(vec![happened]);
        // Only once the decision's record is queued: a waiter that makes it durable next (`settle`)
        // must find it in the queue it flushes.
        if let Some((sender, status)) = waiters {
            sender.send_replace(status);
        }
        Ok(Applied { pending: dict, effect, text })
    }

    fn start_timer(&self, state: &mut State) {
        if state.timer_started {
            return;
        }
        let inner = Arc::clone(&self.inner);
        let spawned = std::thread::Builder::new().name("chokepoint-approvals".to_owned()).spawn(move || inner.run_timer());
        // Without a timer thread (the process is out of threads) deadlines are still enforced by the
        // next open, which tries again.
        state.timer_started = spawned.is_ok();
    }
}

/// Decides at once through the kind's own table: approve (or override, for a submission, which has
/// no approve), or reject.
fn auto_decide(pending: &mut Pending, approve: bool, by: &str, text: &str) -> Result<Effect, ApprovalError> {
    let (action, args) = match (approve, pending.kind.action("approve").is_some()) {
        (true, true) => ("approve", json!({ "note": text })),
        (true, false) => ("override", json!({ "reason": text })),
        (false, _) => ("reject", json!({ "reason": text })),
    };
    pending.execute_tool(action, args, by)
}

/// `12 s`, `0.2 s`.
fn seconds(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) { format!("{} s", ms / 1000) } else { format!("{} s", ms as f64 / 1000.0) }
}

impl State {
    fn remember_decided(&mut self, id: &str) {
        self.decided.push_back(id.to_owned());
        while self.decided.len() > KEEP_DECIDED {
            if let Some(old) = self.decided.pop_front() {
                self.entries.remove(&old);
            }
        }
    }

    /// Times out every open Pending whose deadline has passed.
    fn expire(&mut self, now: Instant) -> Vec<(Happened, watch::Sender<Status>)> {
        let due: Vec<String> =
            self.entries.iter().filter(|(_, e)| e.pending.is_open() && e.deadline <= now).map(|(id, _)| id.clone()).collect();
        let mut happened = Vec::new();
        for id in due {
            let Some(entry) = self.entries.get_mut(&id) else {
                continue;
            };
            entry.pending.status = Status::TimedOut;
            entry.pending.decision = Some(Decision {
                reason: Some(format!("no decision within {}", seconds(entry.timeout))),
                ..Decision::new("timeout", "timeout")
            });
            // The waiters are told by the timer once the record is queued (as `act` does).
            happened.push((Happened::Decided(entry.pending.to_dict()), entry.status.clone()));
            self.remember_decided(&id);
        }
        happened
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The timer thread: sleeps until the earliest deadline of an open Pending, times out what is due,
    /// and ends when the registry is dropped.
    fn run_timer(self: Arc<Self>) {
        let mut state = self.lock();
        loop {
            if state.shutdown {
                return;
            }
            let now = Instant::now();
            let expired = state.expire(now);
            if !expired.is_empty() {
                drop(state);
                let (happened, waiters): (Vec<_>, Vec<_>) = expired.into_iter().unzip();
                self.after(happened);
                for sender in waiters {
                    sender.send_replace(Status::TimedOut);
                }
                state = self.lock();
                continue;
            }
            let next = state.entries.values().filter(|e| e.pending.is_open()).map(|e| e.deadline).min();
            state = match next {
                Some(deadline) => {
                    self.wake.wait_timeout(state, deadline.saturating_duration_since(now)).unwrap_or_else(|p| p.into_inner()).0
                }
                None => self.wake.wait(state).unwrap_or_else(|p| p.into_inner()),
            };
        }
    }

    /// Records, tells the listeners and gives the policies their feedback, in that order. A
    /// listener or policy that panics is skipped: it must not stop the others, nor the timer thread.
    fn after(&self, happened: Vec<Happened>) {
        let guarded = |f: &dyn Fn()| {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        };
        for event in happened {
            let (dict, phase, action, warning) = match &event {
                Happened::Opened(d) => (d, Phase::Open, None, None),
                Happened::Edited(d, action) => (d, Phase::Edit, Some(action.as_str()), None),
                Happened::Decided(d) => (d, Phase::Decision, None, None),
                Happened::Warned(d, warning) => (d, Phase::Warning, None, Some(warning.as_str())),
                Happened::Escalated(d, note) => (d, Phase::Escalation, Some("escalate"), Some(note.as_str())),
            };
            if let Some(sink) = &self.sink {
                guarded(&|| sink(approval_record(phase, dict, action, warning), phase));
            }
            if phase == Phase::Warning {
                continue;
            }
            let listeners = self.listeners.read().unwrap_or_else(|p| p.into_inner()).clone();
            for listener in &listeners {
                guarded(&|| listener(dict));
            }
            if phase != Phase::Decision {
                continue;
            }
            let policy = self.policies.read().unwrap_or_else(|p| p.into_inner()).get(&dict.triggered_by).cloned();
            let Some(policy) = policy else { continue };
            if dict.status.is_success() {
                guarded(&|| policy.on_success(dict));
            } else if dict.status.is_rejection() {
                let decision = dict.decision.as_ref();
                let rejection = Rejection {
                    pending: dict.clone(),
                    reason: decision
                        .and_then(|d| d.reason.clone().or_else(|| d.note.clone()))
                        .unwrap_or_else(|| format!("{} without a reason", dict.status.as_str())),
                    source: FeedbackSource::of(decision.map_or("", |d| d.by.as_str())),
                };
                guarded(&|| policy.on_rejection(&rejection));
            }
        }
    }
}

/// A Pending of a registry, as `auto_retry` works on it.
struct Held<'a> {
    approvals: &'a Approvals,
    id: &'a str,
}

impl Retryable for Held<'_> {
    fn validate(&mut self) -> Result<ValidationResult, ApprovalError> {
        self.approvals.validate(self.id)
    }

    fn edit_summary(&mut self, index: usize, text: String) -> Result<(), ApprovalError> {
        self.approvals.execute_tool(self.id, "edit_summary", json!({ "index": index, "text": text }), "auto_retry").map(drop)
    }
}
