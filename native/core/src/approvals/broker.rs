//! `Approvals`: the Pendings of one engine, who answers them, and what their outcomes set off.
//!
//! Opening routes a Pending (`routing.rs`) and, for the automatic routes (`auto-approve`,
//! `auto-deny`, the recursion guard), decides it at once through the kind's own table. Every change
//! (open, edit, decision, timeout) is then, outside the lock and in this order: written to the trace
//! (the record sink), told to the change listeners, and, for a decision of a Pending some policy
//! triggered, told to that policy (`on_rejection` or `on_success`).
//!
//! Invariant: no Pending is left hanging. Each has a deadline (`approvals.timeout_seconds`, 300 by
//! default, or shorter when a waiter asks); one timer thread per registry, started with the first
//! Pending and ended with the engine, sleeps until the earliest deadline and times out what is still
//! open then (`timed_out`, a rejection, "no decision within N s"). Waiters are futures on a watch channel of the Pending's status: no thread waits
//! for a decision.
//!
//! Shared with a team's database (`team.rs`, `listener.rs`): a Pending a person is to answer is
//! published (`publish`), and its decision, here or on a card of another machine's registry, is
//! first claimed there; the claim that loses changes nothing and says who decided first (a live
//! engine listens for the team's Pendings of every machine: `Approvals::listen`, started by
//! `serve::server`). Another
//! machine's Pending shown here records nothing in this engine's ledger: its asker records it.

use super::error::ApprovalError;
use super::kind::PendingKind;
use super::listener::Registry;
use super::pending::{
    Asker, Decision, Effect, Lapse, Pending, PendingDict, RetryOutcome, Retryable, Status, ToolDefinition, ValidationResult,
};
use super::record::{Phase, approval_record};
use super::routing::{ANY_KIND, Route, merged_handlers, route};
use super::team::{Claim, TeamPendings, TeamRow};
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
    /// What it becomes when nobody decides it in time (a rejection, unless another agent's call
    /// has a fallback of its own).
    pub on_timeout: Lapse,
    /// Who waits on it, for another agent's call.
    pub asker: Option<Asker>,
}

impl OpenRequest {
    pub fn new(kind: PendingKind, subject: Value, triggered_by: impl Into<String>) -> OpenRequest {
        OpenRequest {
            kind,
            subject,
            triggered_by: triggered_by.into(),
            session_id: None,
            task_id: None,
            review: false,
            timeout: None,
            on_timeout: Lapse::Reject,
            asker: None,
        }
    }
}

/// The wall-clock time `left` from now, in milliseconds since the Unix epoch: a Pending's
/// deadline as a person's countdown reads it.
fn wall_deadline(left: Duration) -> u64 {
    crate::base::clock::now_ms().saturating_add(u64::try_from(left.as_millis()).unwrap_or(u64::MAX))
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

crate::base::names::names!(FeedbackSource {
    Self::Human => "human",
    Self::Reviewer => "reviewer",
    Self::Policy => "policy",
    Self::Timeout => "timeout",
});

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
    /// The team's database this registry shares its human-answered Pendings through, if any.
    team: Option<Arc<TeamPendings>>,
    /// The team whose notifications a listener thread is hearing now (`listener.rs`).
    listening: Option<Arc<TeamPendings>>,
    /// Whether other machines' Pendings are shown here (a live engine), or only this engine's own
    /// are listened for (a hook process that published its ask).
    show_others: bool,
    /// Why the listener has no connection now, for the reason of a shared Pending that times out.
    team_down: Option<String>,
}

/// Whether a Pending is this engine's alone, this engine's and shared with the team's database, or
/// another machine's shown here.
#[derive(Clone, Default)]
enum Sharing {
    #[default]
    Local,
    Published(Arc<TeamPendings>),
    /// Another machine's: deciding it writes to the database and settles nothing here; its records
    /// are the asker's.
    Remote(Arc<TeamPendings>),
}

struct Entry {
    pending: Pending,
    seq: u64,
    /// The timeout that applies: the configured one, or a waiter's shorter one. The reason of a
    /// timeout names it (not the time measured, which a busy machine makes jitter).
    timeout: Duration,
    deadline: Instant,
    status: watch::Sender<Status>,
    sharing: Sharing,
}

/// Something that happened to a Pending, told to the trace, the listeners and the policy after the
/// lock is released.
enum Happened {
    Opened(PendingDict),
    Edited(PendingDict, String),
    Decided(PendingDict),
    Warned(PendingDict, String),
    Escalated(PendingDict, String),
    /// Another machine's Pending appeared or went: told to the listeners only (its records are the
    /// asker's).
    Mirrored(PendingDict),
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

    /// Listeners hear every open, edit and decision (timeouts included), in that order per Pending,
    /// and a deadline a waiter brought forward (the Pending still open), so a countdown shows it.
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
        pending.on_timeout = request.on_timeout;
        pending.asker = request.asker;
        let mut state = self.inner.lock();
        let timeout = request.timeout.unwrap_or(Duration::from_secs(state.config.timeout_seconds));
        let now = Instant::now();
        pending.deadline_ms = Some(wall_deadline(timeout));
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
        let (id, open) = (pending.id.clone(), pending.is_open());
        let seq = state.next_seq;
        state.next_seq += 1;
        let (status, _) = tokio::sync::watch::channel(pending.status);
        state.entries.insert(id.clone(), Entry { pending, seq, timeout, deadline: now + timeout, status, sharing: Sharing::Local });
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
        self.act(id, &action, decision.clone(), |pending| pending.apply_decision(decision, by))
    }

    /// `execute_tool` on the Pending `id`: the action `name` with `args`.
    pub fn execute_tool(&self, id: &str, name: &str, args: Value, by: &str) -> Result<Applied, ApprovalError> {
        let mut request = if args.is_object() { args.clone() } else { json!({}) };
        request["action"] = name.into();
        self.act(id, name, request, |pending| pending.execute_tool(name, args, by))
    }

    /// Resolves when the Pending is decided or timed out. `timeout`, if given, brings its deadline
    /// forward (never back): when it passes undecided, the Pending is `timed_out`.
    pub async fn wait(&self, id: &str, timeout: Option<Duration>) -> Result<PendingDict, ApprovalError> {
        let mut changed = None;
        let mut status = {
            let mut state = self.inner.lock();
            let entry = state.entries.get_mut(id).ok_or_else(|| ApprovalError::UnknownPending(id.to_owned()))?;
            if let Some(timeout) = timeout {
                let deadline = Instant::now() + timeout;
                if deadline < entry.deadline {
                    entry.deadline = deadline;
                    entry.timeout = timeout;
                    entry.pending.deadline_ms = Some(wall_deadline(timeout));
                    self.inner.wake.notify_all();
                    changed = entry.pending.is_open().then(|| entry.pending.to_dict());
                }
            }
            entry.status.subscribe()
        };
        // A card counting down shows the deadline it has now.
        if let Some(dict) = changed {
            self.inner.after(vec![Happened::Mirrored(dict)]);
        }
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
            return Err(not_open(id, &entry.pending, &entry.sharing));
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
            return Err(not_open(id, &entry.pending, &entry.sharing));
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

    /// Applies an action. On a Pending shared with the team's database, a decision is first claimed
    /// there (compare-and-set, outside the lock): the first answer on any machine wins, and a later
    /// one is refused with who decided. Another machine's Pending is only claimed: its asker settles it.
    fn act(
        &self,
        id: &str,
        action: &str,
        request: Value,
        f: impl FnOnce(&mut Pending) -> Result<Effect, ApprovalError>,
    ) -> Result<Applied, ApprovalError> {
        let mut state = self.inner.lock();
        let entry = state.entries.get_mut(id).ok_or_else(|| ApprovalError::UnknownPending(id.to_owned()))?;
        // Applied to a copy: a decision a shared Pending's claim loses changes nothing here. A decided
        // Pending refuses the action itself; on a shared one whose decision this engine already heard
        // from another machine, the refusal says who decided first, as a claim that lost the race does.
        let mut next = entry.pending.clone();
        let effect = f(&mut next).map_err(|e| match e {
            ApprovalError::NotOpen { .. } => not_open(id, &entry.pending, &entry.sharing),
            e => e,
        })?;
        let sharing = entry.sharing.clone();
        let claim = match (&sharing, &effect) {
            (Sharing::Local, _) => None,
            (Sharing::Remote(_), Effect::Edited | Effect::RetryRequested { .. }) => {
                return Err(ApprovalError::RemoteEdit { id: id.to_owned(), action: action.to_owned() });
            }
            (Sharing::Published(_), Effect::Edited | Effect::RetryRequested { .. }) => None,
            (Sharing::Published(team) | Sharing::Remote(team), Effect::Decided) => Some(Arc::clone(team)),
        };
        if let Some(team) = claim {
            drop(state);
            let by = next.decision.as_ref().map(|d| d.by.clone()).unwrap_or_default();
            match team.claim(id, &request, next.status, &by) {
                Ok(Claim::Won) => {}
                Ok(Claim::Missing) if matches!(sharing, Sharing::Published(_)) => {}
                Ok(Claim::Missing) => return Err(ApprovalError::UnknownPending(id.to_owned())),
                Ok(Claim::Expired) => return Err(ApprovalError::NotOpen { id: id.to_owned(), status: Status::TimedOut.as_str() }),
                Ok(Claim::Lost(row)) => {
                    self.inner.apply_row(&row);
                    return Err(ApprovalError::DecidedElsewhere {
                        id: id.to_owned(),
                        status: row.status.clone().unwrap_or_default(),
                        by: row.decided_by.clone().unwrap_or_default(),
                        machine: row.decided_machine.clone().unwrap_or_default(),
                    });
                }
                // The database cannot be reached: this machine's person decides its own Pending
                // only where hooks.yaml lets it coordinate alone meanwhile.
                Err(e)
                    if e.is_unreachable()
                        && matches!(sharing, Sharing::Published(_))
                        && team.db().unreachable() == crate::base::team::Unreachable::Local => {}
                Err(e) => return Err(ApprovalError::Team(e)),
            }
            if let Some(decision) = next.decision.as_mut() {
                decision.machine = Some(team.machine().to_owned());
            }
            state = self.inner.lock();
        }
        let entry = state.entries.get_mut(id).ok_or_else(|| ApprovalError::UnknownPending(id.to_owned()))?;
        if !entry.pending.is_open() {
            // Our own claim's notification was heard first, and the listener applied this decision.
            let dict = entry.pending.to_dict();
            let text = entry.pending.result_text(action, &effect);
            return if dict.decision.as_ref().map(|d| &d.by) == next.decision.as_ref().map(|d| &d.by) {
                Ok(Applied { pending: dict, effect, text })
            } else {
                Err(not_open(id, &entry.pending, &entry.sharing))
            };
        }
        entry.pending = next;
        let (dict, text) = (entry.pending.to_dict(), entry.pending.result_text(action, &effect));
        let remote = matches!(entry.sharing, Sharing::Remote(_));
        let (happened, waiters) = if effect == Effect::Decided {
            let waiters = (entry.status.clone(), entry.pending.status);
            state.remember_decided(id);
            (if remote { Happened::Mirrored(dict.clone()) } else { Happened::Decided(dict.clone()) }, Some(waiters))
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

    /// Shares the human-answered Pendings of this registry through `team` from now on (`None`: no
    /// longer). The same database from the same place keeps the current handle and its listener.
    pub fn share(&self, team: Option<Arc<TeamPendings>>) {
        let mut state = self.inner.lock();
        match (&state.team, &team) {
            (Some(current), Some(new)) if current.same(new) => return,
            (None, None) => return,
            _ => {}
        }
        state.team = team;
        let show = state.show_others;
        drop(state);
        if show {
            self.listen(true);
        }
    }

    /// Listens to the team's notifications (if a database is shared): decisions of this registry's
    /// published Pendings are applied as they come; with `show_others`, other machines' open
    /// Pendings are shown here too (a live engine's view), caught up on every connection.
    pub fn listen(&self, show_others: bool) {
        let mut state = self.inner.lock();
        state.show_others |= show_others;
        let Some(team) = state.team.clone() else { return };
        if state.listening.as_ref().is_some_and(|l| Arc::ptr_eq(l, &team)) {
            return;
        }
        state.listening = Some(Arc::clone(&team));
        let weak = Arc::downgrade(&self.inner);
        let spawned = std::thread::Builder::new().name("chokepoint-team-asks".to_owned()).spawn(move || super::listener::run(&weak, &team));
        if spawned.is_err() {
            state.listening = None;
        }
    }

    /// Shares the open Pending `id` with the team's database, if one is set and a person is to
    /// answer it (the human route): its row is written and every engine of the team told. `Ok(false)`
    /// when there is nothing to share. On `Err` the Pending stays this engine's alone.
    pub fn publish(&self, id: &str) -> Result<bool, ApprovalError> {
        let (team, dict, left) = {
            let mut state = self.inner.lock();
            let Some(team) = state.team.clone() else { return Ok(false) };
            let entry = state.entries.get_mut(id).ok_or_else(|| ApprovalError::UnknownPending(id.to_owned()))?;
            if !entry.pending.is_open() || entry.pending.route != Route::Human || !matches!(entry.sharing, Sharing::Local) {
                return Ok(false);
            }
            // Marked before the row is written: a decision taken meanwhile is claimed after the
            // insert (one worker thread runs the database's operations in order).
            entry.sharing = Sharing::Published(Arc::clone(&team));
            (team, entry.pending.to_dict(), entry.deadline.saturating_duration_since(Instant::now()))
        };
        self.listen(false);
        match team.publish(&dict, left) {
            Ok(()) => Ok(true),
            Err(e) => {
                let mut state = self.inner.lock();
                if let Some(entry) = state.entries.get_mut(id)
                    && entry.pending.is_open()
                {
                    entry.sharing = Sharing::Local;
                }
                Err(ApprovalError::Team(e))
            }
        }
    }

    fn start_timer(&self, state: &mut State) {
        start_timer(&self.inner, state);
    }
}

fn start_timer(inner: &Arc<Inner>, state: &mut State) {
    if state.timer_started {
        return;
    }
    let inner = Arc::clone(inner);
    let spawned = std::thread::Builder::new().name("chokepoint-approvals".to_owned()).spawn(move || inner.run_timer());
    // Without a timer thread (the process is out of threads) deadlines are still enforced by the
    // next open, which tries again.
    state.timer_started = spawned.is_ok();
}

/// The team's side of the registry, for the listener thread (`listener.rs`).
impl Registry for Inner {
    /// Whether the listener of `team` should go on: the registry lives and still shares through it.
    fn still_listening(&self, team: &Arc<TeamPendings>) -> bool {
        let mut state = self.lock();
        let current = !state.shutdown && state.team.as_ref().is_some_and(|t| Arc::ptr_eq(t, team));
        if !current && state.listening.as_ref().is_some_and(|l| Arc::ptr_eq(l, team)) {
            state.listening = None;
        }
        current
    }

    fn shows_others(&self) -> bool {
        self.lock().show_others
    }

    /// Why the listener has no connection (`None`: it has one again).
    fn set_team_down(&self, why: Option<String>) {
        self.lock().team_down = why;
    }

    /// The open Pendings this registry published, and the other machines' it shows.
    fn shared_open(&self) -> (Vec<String>, Vec<String>) {
        let state = self.lock();
        let (mut published, mut remote) = (Vec::new(), Vec::new());
        for (id, entry) in state.entries.iter().filter(|(_, e)| e.pending.is_open()) {
            match entry.sharing {
                Sharing::Published(_) => published.push(id.clone()),
                Sharing::Remote(_) => remote.push(id.clone()),
                Sharing::Local => {}
            }
        }
        (published, remote)
    }

    /// Shows another machine's open Pending `row` here until it is decided or `left` passes.
    fn mirror(self: &Arc<Self>, team: &Arc<TeamPendings>, row: &TeamRow, left: Duration) {
        let Ok(kind) = row.kind() else { return };
        let Ok(mut pending) = Pending::new(kind, row.placed_subject(), row.triggered_by.clone()) else { return };
        pending.id = row.id.clone();
        pending.created_at = row.created_at.clone();
        pending.session_id = row.session.clone();
        pending.route = Route::Human;
        pending.deadline_ms = Some(wall_deadline(left));
        pending.on_timeout = row.on_timeout();
        pending.asker = row.asker();
        let mut state = self.lock();
        if state.entries.contains_key(&row.id) {
            return;
        }
        let dict = pending.to_dict();
        let seq = state.next_seq;
        state.next_seq += 1;
        let (status, _) = watch::channel(Status::Open);
        let entry =
            Entry { pending, seq, timeout: left, deadline: Instant::now() + left, status, sharing: Sharing::Remote(Arc::clone(team)) };
        state.entries.insert(row.id.clone(), entry);
        start_timer(self, &mut state);
        self.wake.notify_all();
        drop(state);
        self.after(vec![Happened::Mirrored(dict)]);
    }

    /// A decision found in the database for the Pending of `row`: this engine's own is settled as a
    /// local decision is (the decider's action through the kind's table, recorded with their
    /// machine); another machine's card goes.
    fn apply_row(&self, row: &TeamRow) {
        let (Some(decision), Some(status)) = (&row.decision, row.status.as_deref()) else { return };
        let by = row.decided_by.clone().unwrap_or_else(|| "someone".to_owned());
        let mut state = self.lock();
        let Some(entry) = state.entries.get_mut(&row.id) else { return };
        if !entry.pending.is_open() {
            return;
        }
        let mut next = entry.pending.clone();
        let remote = match entry.sharing {
            Sharing::Local => return,
            // Our own timeout, marked there: the timer decides it here.
            Sharing::Published(_) if status == Status::TimedOut.as_str() => return,
            Sharing::Published(_) => {
                if next.apply_decision(decision, &by).is_err() {
                    // Not a decision this kind takes: left open, it times out (a no).
                    return;
                }
                false
            }
            Sharing::Remote(_) => {
                next.status = status_named(status);
                let text = |k: &str| decision.get(k).and_then(Value::as_str).map(str::to_owned);
                next.decision = Some(Decision {
                    reason: text("reason"),
                    note: text("note"),
                    ..Decision::new(decision.get("action").and_then(Value::as_str).unwrap_or("decide"), &by)
                });
                true
            }
        };
        if let Some(d) = next.decision.as_mut() {
            d.machine = row.decided_machine.clone();
        }
        entry.pending = next;
        let dict = entry.pending.to_dict();
        let (sender, status) = (entry.status.clone(), entry.pending.status);
        state.remember_decided(&row.id);
        drop(state);
        self.after(vec![if remote { Happened::Mirrored(dict) } else { Happened::Decided(dict) }]);
        sender.send_replace(status);
    }
}

/// A status as the database names it; an unknown name is a rejection's.
fn status_named(name: &str) -> Status {
    match name {
        "approved" => Status::Approved,
        "modified" => Status::Modified,
        "overridden" => Status::Overridden,
        "retry" => Status::Retry,
        "timed_out" => Status::TimedOut,
        _ => Status::Rejected,
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
    fn expire(&mut self, now: Instant) -> Vec<(Happened, watch::Sender<Status>, Option<Arc<TeamPendings>>)> {
        let due: Vec<String> =
            self.entries.iter().filter(|(_, e)| e.pending.is_open() && e.deadline <= now).map(|(id, _)| id.clone()).collect();
        let mut happened = Vec::new();
        for id in due {
            let Some(entry) = self.entries.get_mut(&id) else {
                continue;
            };
            entry.pending.status = Status::TimedOut;
            // A shared Pending's reason says when nobody on another machine could have seen it.
            let unseen = match (&entry.sharing, &self.team_down) {
                (Sharing::Published(_), Some(why)) => format!("; other machines could not be asked: {why}"),
                _ => String::new(),
            };
            entry.pending.decision = Some(Decision {
                reason: Some(format!("no decision within {}{unseen}", seconds(entry.timeout))),
                ..Decision::new("timeout", "timeout")
            });
            let dict = entry.pending.to_dict();
            // The waiters are told by the timer once the record is queued (as `act` does). Another
            // machine's card just goes; this engine's shared one is marked in the database too.
            let (event, team) = match &entry.sharing {
                Sharing::Local => (Happened::Decided(dict), None),
                Sharing::Published(team) => (Happened::Decided(dict), Some(Arc::clone(team))),
                Sharing::Remote(_) => (Happened::Mirrored(dict), None),
            };
            happened.push((event, entry.status.clone(), team));
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
                let mut shared = Vec::new();
                let mut happened = Vec::with_capacity(expired.len());
                let mut waiters = Vec::with_capacity(expired.len());
                for (event, sender, team) in expired {
                    if let (Happened::Decided(dict), Some(team)) = (&event, team) {
                        shared.push((dict.id.clone(), team));
                    }
                    happened.push(event);
                    waiters.push(sender);
                }
                self.after(happened);
                for sender in waiters {
                    sender.send_replace(Status::TimedOut);
                }
                if !shared.is_empty() {
                    // Off this thread: a database that does not answer must not hold other deadlines.
                    let _ = std::thread::Builder::new().name("chokepoint-team-timeout".to_owned()).spawn(move || {
                        for (id, team) in shared {
                            let _ = team.claim(&id, &json!({ "action": "timeout" }), Status::TimedOut, "timeout");
                        }
                    });
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
                Happened::Mirrored(d) => {
                    let listeners = self.listeners.read().unwrap_or_else(|p| p.into_inner()).clone();
                    for listener in &listeners {
                        guarded(&|| listener(d));
                    }
                    continue;
                }
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

/// Why a decided Pending refuses another action: for one shared with the team's database, who
/// decided it first and where (as a lost claim says it); otherwise its state.
fn not_open(id: &str, pending: &Pending, sharing: &Sharing) -> ApprovalError {
    match (&pending.decision, sharing) {
        (Some(decision), Sharing::Published(_) | Sharing::Remote(_)) => ApprovalError::DecidedElsewhere {
            id: id.to_owned(),
            status: pending.status.as_str().to_owned(),
            by: decision.by.clone(),
            machine: decision.machine.clone().unwrap_or_else(|| "this machine".to_owned()),
        },
        _ => ApprovalError::NotOpen { id: id.to_owned(), status: pending.status.as_str() },
    }
}
