//! How an engine judges an event, whichever entry asked (synchronous, asynchronous, or answered
//! from the ledger's syncer thread): the configuration snapshot and the written paths made
//! canonical (`begin`), the chain, and the record (`conclude`), with a gate's answer held until its
//! record is durable (the write-ahead invariant, `awaits_durability`).
//!
//! **One judging path.** Every entry (`evaluate`, `evaluate_with`, `evaluate_async`,
//! `evaluate_then`, and `evaluate_in`, which a replay shares) is `begin → chain → conclude`:
//! - `begin` resolves the chain and makes a write's paths canonical once (`Event::writes`, resolved
//!   by the gatekeeper, judged by it and recorded by the trace), and asks `Gatekeeper::acting`, so a
//!   session's next call of any event renews a yielded lease's tenure;
//! - the chain judges a borrowed event: a rewrite comes back in `Evaluation::modified`, the event
//!   keeps the agent's input;
//! - `conclude` moves the event into its record, which the ledger's writer thread builds
//!   (`Ledger::enqueue_deferred`: digest, serialisation, before and after images) before its ticket
//!   settles, so the caller's thread only judges. `Evaluation::durable_wait_ns` is the wait for the
//!   record's sync, never part of a hook's duration.
//!
//! **The entries.** The synchronous entry runs native hooks only (registered native hooks and the
//! declared `deny`, `ask` and `context` rules of hooks.yaml); a matching command, builtin or host hook
//! makes it refuse (`NeedsAsync`) rather than skip that hook. The asynchronous entry runs every kind,
//! one hook after another in chain order. `evaluate_then` is the asynchronous entry for a caller whose
//! thread must never block: a chain of native hooks is judged at once on that thread and its
//! continuation runs when the record is as durable as the event needs (from the ledger thread that
//! synced it, through `ledger/ticket.rs`); other chains come back for `evaluate_async`.
//!
//! **Invariant: which events wait for their record's sync is said once**, by `awaits_durability`;
//! callers use the asynchronous entry for every event and never keep their own list. A native hook
//! that panics is a `crashed` failure, never an unwinding engine; a hook that asks the engine to judge
//! something while it runs gets `reentered: true` and no second run of the chain. A gate that denied,
//! and every `BeforeSubmit`, hands its durable record (`seq`, hash) to the brain from where its ticket
//! settles (`BrainWatch`, see `brain.rs`), never on the judging thread.

use super::engine::Engine;
use super::loaded::Loaded;
use crate::base::clock;
use crate::engine::brain::Brain;
use crate::engine::lessons::Noticed;
use crate::engine::trace;
use crate::engine::trace::Images;
use crate::hooks::chain::{Chain, Evaluation, HostHooks, NeedsAsync, RunContext, SyncError};
use crate::hooks::pipe::Delivery;
use crate::ledger::Record;
use crate::ledger::ticket::{Reply, Ticket};
use crate::model::decision::{Decision, Denial, HookOutcome};
use crate::model::event::{Event, EventKind};
use crate::scope::gatekeeper::SELECT_INTENT_TOOL;
use std::sync::Arc;

impl Engine {
    /// Runs the event's chain synchronously and combines the hooks' answers into one decision.
    ///
    /// Fails only when a hook that applies to this event cannot run synchronously (a command, builtin
    /// or host hook); the caller then uses the asynchronous entry.
    pub fn evaluate(&self, event: Event) -> Result<Evaluation, NeedsAsync> {
        self.evaluate_with(event, || Ok::<_, std::convert::Infallible>(serde_json::Value::Null)).map_err(|e| match e {
            SyncError::NeedsAsync(n) => n,
            SyncError::Subject(never) => match never {},
        })
    }

    /// `evaluate` for a caller that has not loaded the event's subject: `subject` is called only if a
    /// hook that applies reads it (see `NativeHook::needs_subject`), or the trace records it.
    ///
    /// In a governed workspace the event is recorded in the trace: its input is then read (for its
    /// digest) whether a hook needs it or not, and the record is queued, not awaited; a caller that
    /// acts on the decision and needs the record durable first calls `tracer().flush()`.
    pub fn evaluate_with<E>(
        &self,
        mut event: Event,
        subject: impl FnOnce() -> Result<serde_json::Value, E>,
    ) -> Result<Evaluation, SyncError<E>> {
        if event.depth > 0 || !self.records || !self.tracer.governed() {
            let loaded = self.snapshot();
            return loaded.chains.resolve(event.kind, event.task_type.as_deref()).run_sync_with(event, subject);
        }
        if event.subject.is_null() {
            event.subject = subject().map_err(SyncError::Subject)?;
        }
        let judging = self.begin(&mut event);
        let mut evaluation = judging.chain().judge_sync(&mut event).map_err(SyncError::NeedsAsync)?;
        // Nobody waits here: the record goes with the next sync someone waits for (or a flush).
        if let Durable::After(ticket, Some(watch)) = self.conclude(judging, event, &mut evaluation, Waits::No) {
            ticket.then(move |reply| watch.seen(&reply));
        }
        Ok(evaluation)
    }

    /// Runs the event's chain with every kind of hook (commands, builtins, host hooks).
    ///
    /// The configuration snapshot is taken once, at the start: a reload while hooks run affects the next
    /// event, never this one.
    ///
    /// Piped output is routed by [`crate::hooks::pipe::Delivery`]: queued for the session's next turn (see
    /// [`Engine::drain_piped`]), or left in `Evaluation::piped` for an `Error` recovery prompt, or
    /// dropped on `SessionEnd`. The evaluation always lists what was piped, for the trace.
    pub async fn evaluate_async(&self, event: Event, host: Option<Arc<dyn HostHooks>>) -> Evaluation {
        let mut ctx = RunContext::new(self.sidecar.workspace_root());
        ctx.host = host;
        self.evaluate_in(event, ctx).await
    }

    /// `evaluate_async` with the run context given: a replay's stand-ins for the hooks it does not run.
    pub(crate) async fn evaluate_in(&self, mut event: Event, ctx: RunContext) -> Evaluation {
        let judging = self.begin(&mut event);
        let mut evaluation = judging.chain().judge(&mut event, &ctx).await;
        let kind = judging.kind;
        match self.conclude(judging, event, &mut evaluation, Waits::IfGate) {
            Durable::Now => {}
            Durable::After(ticket, watch) => {
                let waited = std::time::Instant::now();
                let reply = ticket.settled().await;
                recorded(kind, &mut evaluation, waited, watch, reply);
            }
        }
        evaluation
    }

    /// The asynchronous entry for a caller whose own thread must never block (the extension host's
    /// event loop, through the binding). When every hook that applies to the event is native, the
    /// event is judged now, on this thread, and `done` gets the evaluation once its record is durable:
    /// at once when nothing waits for a sync, else on the ledger thread that synced it, so `done` must be
    /// quick and must not block (it resolves a promise). The event and `done` come back, untouched,
    /// when its chain needs the asynchronous entry.
    ///
    /// Why: a gate's answer waits for an fdatasync either way, but here nothing else waits. Through
    /// `evaluate_async` the event crosses from the caller to an async task, and from the syncer back
    /// through it, on every tool call; on a busy two-core machine each crossing costs tens of
    /// microseconds.
    pub fn evaluate_then<F: FnOnce(Evaluation) + Send + 'static>(&self, mut event: Event, done: F) -> Result<(), Box<(Event, F)>> {
        let judging = self.begin(&mut event);
        let mut evaluation = match judging.chain().judge_sync(&mut event) {
            Ok(evaluation) => evaluation,
            // Nothing ran and nothing was recorded; the paths `begin` resolved stay resolved.
            Err(_) => return Err(Box::new((event, done))),
        };
        let kind = judging.kind;
        match self.conclude(judging, event, &mut evaluation, Waits::IfGate) {
            Durable::Now => done(evaluation),
            Durable::After(ticket, watch) => {
                let waited = std::time::Instant::now();
                ticket.then(move |reply| {
                    recorded(kind, &mut evaluation, waited, watch, reply);
                    done(evaluation);
                })
            }
        }
        Ok(())
    }

    /// The start of every judgment, whichever entry asked: the configuration snapshot, the paths the
    /// event writes made canonical (once: the gatekeeper judges them and the trace records them), and
    /// the session's intent before the chain runs (for the record).
    fn begin(&self, event: &mut Event) -> Judging {
        let loaded = self.snapshot();
        if event.writes.is_none() {
            event.writes = self.gatekeeper.resolve_writes(event);
        }
        // A hook's own question is not an agent's action; an ungoverned workspace keeps no ledger.
        let traced = event.depth == 0 && self.records && self.tracer.governed();
        // The session is acting: a lease it yielded at its last turn's end is renewed here, at its
        // next call of any kind, if nobody took the intent since (`Gatekeeper::acting`).
        let intent = if traced { event.ids.session.as_deref().and_then(|s| self.gatekeeper.acting(s)) } else { None };
        Judging { loaded, kind: event.kind, task_type: event.task_type.clone(), traced, intent }
    }

    /// The finish of every judgment: piped output routed, and the record queued. The record is built
    /// by the ledger's writer thread (the input's digest, its serialisation, a write's before- or
    /// after-image), not on the judge's: it is durable before anyone waiting on it acts, which is all
    /// the write-ahead invariant asks. A gate whose record cannot be queued is denied here.
    fn conclude(&self, judging: Judging, event: Event, evaluation: &mut Evaluation, waits: Waits) -> Durable {
        let kind = judging.kind;
        if Delivery::for_event(kind) == Delivery::NextTurn && !evaluation.piped.is_empty() {
            self.piped.push(event.ids.session.as_deref().unwrap_or_default(), evaluation.piped.iter().cloned());
        }
        if !judging.traced || evaluation.reentered {
            return Durable::Now;
        }
        let ledger = match self.tracer.ledger() {
            Ok(ledger) => ledger,
            Err(e) => {
                if awaits_durability(kind) {
                    answer_once_recorded(kind, evaluation, Err(e.to_string()));
                }
                return Durable::Now;
            }
        };
        // The intent after the chain when the chain may have changed it (a handshake just selected
        // one), else the one held before it (the end of a task releases it).
        let handshake = event.tool.as_deref() == Some(SELECT_INTENT_TOOL);
        let intent = match (handshake, event.ids.session.as_deref()) {
            (true, Some(session)) => self.gatekeeper.selected(session).or(judging.intent),
            _ => judging.intent,
        };
        let start = TraceStart { event };
        let recorded = Recorded {
            decision: evaluation.decision.clone(),
            outcomes: evaluation.outcomes.clone(),
            // An ask may be approved and the write run: its before-image is kept as an allowed
            // write's is, or its result would have no ranges and no line of it could be explained.
            may_write: matches!(evaluation.decision, Decision::Allow | Decision::Ask { .. }),
        };
        let images = Arc::clone(self.tracer.images());
        let wait = waits == Waits::IfGate && awaits_durability(kind);
        let watch = self.brain_watch(kind, handshake, &recorded.decision);
        let ticket = ledger.enqueue_deferred(!wait, move || start.record(&images, intent, recorded));
        if wait || watch.is_some() { Durable::After(ticket, watch) } else { Durable::Now }
    }

    /// What the shared brain learns from this judgment: a gate's denial and a completion's every
    /// round are noticed once their record is durable (its `seq` is the lesson's link); a lease taken
    /// or released has the section rewritten. Both on the brain's worker, never on this thread; an
    /// allowed tool call costs the comparisons below and nothing else.
    fn brain_watch(&self, kind: EventKind, handshake: bool, decision: &Decision) -> Option<BrainWatch> {
        use crate::model::decision::Decision;
        let allowed = matches!(decision, Decision::Allow);
        if matches!(kind, EventKind::TaskComplete | EventKind::SessionEnd) || (kind == EventKind::PreToolUse && handshake && allowed) {
            self.brain.refresh_later();
        }
        let denied = matches!(decision, Decision::Deny(_));
        (awaits_durability(kind) && (denied || kind == EventKind::BeforeSubmit)).then(|| BrainWatch {
            brain: Arc::clone(&self.brain),
            remediation: match decision {
                Decision::Deny(denial) => denial.remediation.clone(),
                _ => None,
            },
        })
    }
}

/// One judgment between its start and its finish ([`Engine::begin`], [`Engine::conclude`]).
struct Judging {
    loaded: Arc<Loaded>,
    kind: EventKind,
    task_type: Option<String>,
    /// False when the event is not recorded (a hook's own question, an ungoverned workspace).
    traced: bool,
    /// The session's intent before the chain ran.
    intent: Option<String>,
}

impl Judging {
    fn chain(&self) -> &Chain {
        self.loaded.chains.resolve(self.kind, self.task_type.as_deref())
    }
}

/// Whether the caller of an entry waits for a record's sync before it hears the answer.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Waits {
    /// The synchronous entry: the caller flushes before it acts, where it must.
    No,
    /// The asynchronous entries: a gate answers once its record is durable ([`awaits_durability`]).
    IfGate,
}

/// Whether an answer waits for its record's sync (or the brain for its `seq`).
enum Durable {
    Now,
    After(Ticket, Option<BrainWatch>),
}

/// A gate's answer the brain wants to see once its record is durable.
pub(super) struct BrainWatch {
    brain: Arc<Brain>,
    remediation: Option<String>,
}

impl BrainWatch {
    /// Hands the durable record to the brain's worker (a record that failed teaches nothing).
    fn seen(self, reply: &Reply) {
        let Ok(appended) = reply else { return };
        let record = &appended.record;
        let decision = record.decision.as_ref();
        self.brain.notice(Noticed {
            seq: appended.seq,
            hash: appended.hash.clone(),
            time_ms: clock::now_ms(),
            event: record.event.clone().unwrap_or_default(),
            tool: record.tool.clone(),
            intent: record.intent.clone(),
            task: record.task.clone().or_else(|| record.session.clone()),
            denied: decision.is_some_and(|d| d.decision == "deny"),
            hooks: decision
                .map(|d| d.hooks.iter().filter(|h| h.outcome == "deny" || h.outcome == "failed_closed").map(|h| h.name.clone()).collect())
                .unwrap_or_default(),
            reason: decision.and_then(|d| d.reason.clone()),
            remediation: self.remediation,
        });
    }
}

/// What an event's record is built from: the event as the agent sent it (its subject is the input
/// again once the chain has run), with the paths it writes resolved.
struct TraceStart {
    event: Event,
}

/// What the record keeps of the chain's answer.
struct Recorded {
    decision: Decision,
    outcomes: Vec<HookOutcome>,
    /// Allowed, or asked (and perhaps approved later): the write may run.
    may_write: bool,
}

impl TraceStart {
    /// Builds the record, on the ledger's writer thread: for an allowed or asked write its before-image is
    /// kept (read before the record is durable, so before the write runs), for a write's result what
    /// it changed, and the input's digest.
    fn record(self, images: &Images, intent: Option<String>, recorded: Recorded) -> Record {
        let event = &self.event;
        let session = event.ids.session.as_deref().unwrap_or_default();
        let writes: Vec<String> = event.writes.iter().flat_map(|w| w.iter()).filter_map(|p| p.canonical.as_ref().ok().cloned()).collect();
        let files = match event.kind {
            EventKind::PreToolUse if !writes.is_empty() && recorded.may_write => {
                images.before_write(session, &writes);
                Vec::new()
            }
            EventKind::PostToolUse if !writes.is_empty() => images.after_write(session, &writes),
            _ => Vec::new(),
        };
        trace::evaluation_record(event, intent, &recorded.decision, &recorded.outcomes, files)
    }
}

/// The end of a judgment whose answer waited for its record's sync, the same for either asynchronous
/// entry: how long it waited, the brain shown the durable record, and a record that could not be made
/// durable turned into the gate's denial.
fn recorded(kind: EventKind, evaluation: &mut Evaluation, waited: std::time::Instant, watch: Option<BrainWatch>, reply: Reply) {
    evaluation.durable_wait_ns = waited.elapsed().as_nanos() as u64;
    if let Some(watch) = watch {
        watch.seen(&reply);
    }
    answer_once_recorded(kind, evaluation, reply.map(drop).map_err(|e| e.to_string()));
}

/// A gate answers once its record is durable: an action that cannot be recorded is not allowed to
/// happen unrecorded, so a PreToolUse whose record failed (or could not be queued) is denied. A
/// completion or a plan is not accepted before its record is durable either; their failure to be
/// recorded is for `flush` and the output channel to report. Other events' records (a turn's start,
/// a tool's result, an error) are durable by the next gate's sync, which covers everything queued
/// before it, or by `flush`.
fn answer_once_recorded(kind: EventKind, evaluation: &mut Evaluation, durable: Result<(), String>) {
    if let Err(e) = durable
        && kind == EventKind::PreToolUse
        && !matches!(evaluation.decision, Decision::Deny(_))
    {
        evaluation.decision = Decision::Deny(Denial::new(format!("the action could not be recorded in the trace ledger: {e}")));
    }
}

/// Whether the asynchronous entry answers `kind` only once its trace record is durable: the events
/// after which something happens in the world that the trace must already hold (a tool runs, a
/// completion or a plan is accepted, a merge proceeds, a task or the session ends).
///
/// **Invariant (write-ahead): every record is durable before the next of these answers**, because
/// its sync covers everything queued before it. PostToolUse is deliberately not one: its record (the
/// hashes and ranges of what the tool wrote) is durable before the agent's next action is allowed,
/// or its task ends, not before the model hears the result. A crash in between loses at most the
/// after-image of that one call, whose PreToolUse record (allowed, paths, intent) is durable; waiting
/// for it too would cost every tool call a second sync (measured: 0.3 ms of its 0.9 ms).
fn awaits_durability(kind: EventKind) -> bool {
    matches!(
        kind,
        EventKind::PreToolUse
            | EventKind::BeforeSubmit
            | EventKind::PlanSubmit
            | EventKind::BeforeMerge
            | EventKind::TaskComplete
            | EventKind::SessionEnd
    )
}
