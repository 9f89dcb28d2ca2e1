//! Policy replay: the tool calls the ledger recorded, judged again against another hooks.yaml and
//! active_intents.yaml (a branch's, a draft's), and the decisions that would change.
//!
//! How a team tries a policy change on last week's work before it ships. The calls are judged by an
//! [`Engine`] loaded from the other files, through the one judging path (`evaluate_in`, the
//! asynchronous entry's), so a replay cannot disagree with what the agents would hear. That engine
//! records nothing (no ledger append), and its gatekeeper takes, renews and releases no lease: each
//! call is judged with the intent its record holds, and the scope expansions approved for that
//! session and intent by the record's time (`Gatekeeper::replaying`). Command, builtin and host hooks
//! are not run unless asked (`run_commands`; host hooks never, they live in the extension): what
//! each answered then, as its record says, stands in, and a hook the record does not name (new, or
//! not reached then) counts as allowing, said on every change it touches.
//!
//! Only `PreToolUse` records are replayed: they are the gate, and the record keeps what its chain
//! matches and the gatekeeper judges (`trace::RecordedCall`). A write recorded before the ledger kept
//! a call's paths cannot be judged again, and is counted as skipped with the reason.
//!
//! **Invariant: a replay changes nothing.** The records are read through the index, filtered by
//! `since` and `intent`. The other engine is `Engine::open_replaying`: a file the given folder lacks
//! is the workspace's own, one that does not load is `ReplayError::Config` (file:line:column). It
//! runs with `records: false` (no ledger append, no approvals sink), reads the approved expansions
//! and never writes them (no state.db is created), allows a handshake when its record took the lease,
//! and takes, renews, releases or reads no lease. The chain asks the run context's `StandIn` first: it
//! answers with the record's outcome for that hook (a recorded failure fails again, under the new
//! failure mode), or allow, marked unverified, for a hook the record does not name.
//!
//! What the rebuild needs is kept by the record: a `PreToolUse` record's `data.call`
//! (`trace::RecordedCall`: the paths the caller named, the writes as resolved, the handshake's input;
//! never a write's content) beside `data.task_type` (every typed event's: the chain it was judged
//! by). Older records are judged when the tool writes nothing, and skipped, counted with the reason,
//! when it writes. The report counts calls judged, unchanged, skipped and unverified, and lists each
//! changed decision with its record (seq, time, tool, paths, session, intent), the hook it is down to,
//! and the changes grouped by hook, intent and direction.

use crate::base::diagnostic::Diagnostic;
use crate::engine::trace::RecordedCall;
use crate::engine::{engine::Engine, loaded::ConfigFiles};
use crate::hooks::chain::{RunContext, StandIn};
use crate::ledger::index::Filter;
use crate::ledger::{Record, RecordKind, RecordedHook};
use crate::model::decision::{Answer, Decision, Denial, HookAnswer, HookFailure, OutcomeKind};
use crate::model::event::{Event, EventIds, EventKind};
use crate::model::external_events::Agent;
use crate::model::governance::{SCOPE_EXPANSION_TOOL, SELECT_INTENT_TOOL};
use crate::scope::tools::ToolRole;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// What to replay, and against what.
#[derive(Debug, Clone, Default)]
pub struct ReplayOptions {
    /// The other configuration: a folder holding `hooks.yaml` and/or `active_intents.yaml`, or a
    /// checkout holding them in its `.orchestration/`. A file it lacks is the workspace's own.
    pub config: PathBuf,
    /// Only calls recorded at or after this time (RFC 3339, a date, or unix milliseconds).
    pub since: Option<String>,
    /// Only calls made under this intent.
    pub intent: Option<String>,
    /// Run command and builtin hooks rather than standing in their recorded answers.
    pub run_commands: bool,
}

/// What a replay found.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayReport {
    /// The files the calls were judged against.
    pub hooks_file: PathBuf,
    pub intents_file: PathBuf,
    /// Calls judged again.
    pub replayed: usize,
    pub unchanged: usize,
    /// Every call whose decision would change, oldest first.
    pub changes: Vec<ReplayChange>,
    /// The changes counted by hook, intent and direction, most first.
    pub groups: Vec<ChangeGroup>,
    /// Calls not judged again, counted by why.
    pub skipped: Vec<Skipped>,
    /// Calls judged with a hook that was neither run nor named by the record (counted as allowing).
    pub unverified: usize,
}

/// One call whose decision would change.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayChange {
    pub seq: u64,
    pub time: String,
    pub session: Option<String>,
    pub agent: Option<String>,
    pub intent: Option<String>,
    pub tool: String,
    /// The paths it wrote (canonical where they were), else the paths it named.
    pub paths: Vec<String>,
    /// `allow`, `deny` or `ask`: recorded, and now.
    pub from: String,
    pub to: String,
    /// The hook the change is down to: the one that decides now when it denies or asks, else the one
    /// that decided then.
    pub hook: Option<String>,
    /// Why it is decided so now (a deny's reason, an ask's reasons).
    pub reason: Option<String>,
    /// The hooks that were not run for it, and what stood in.
    pub stand_ins: Vec<String>,
}

/// The changes of one hook, intent and direction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeGroup {
    pub hook: Option<String>,
    pub intent: Option<String>,
    pub from: String,
    pub to: String,
    pub count: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub reason: String,
    pub count: usize,
}

/// Why a replay could not run.
#[derive(Debug, Clone, PartialEq)]
pub enum ReplayError {
    /// The other configuration does not load: each problem with its file, line and column.
    Config(Vec<Diagnostic>),
    /// An option that means nothing (`since` that is not a time, a folder that holds no configuration).
    BadOption(String),
    /// The workspace or the ledger's index cannot be read.
    Unreadable(String),
}

impl std::fmt::Display for ReplayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReplayError::Config(diagnostics) => {
                let lines: Vec<String> = diagnostics.iter().map(|d| d.to_string()).collect();
                write!(f, "the configuration to replay against does not load: {}", lines.join("; "))
            }
            ReplayError::BadOption(message) | ReplayError::Unreadable(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for ReplayError {}

const NO_CALL_KEPT: &str = "a write recorded before the ledger kept a call's paths";
const NOT_A_WRITE_THEN: &str = "a tool that writes under this configuration's tool table but did not then (its paths were not kept)";
const NO_INPUT_KEPT: &str = "a handshake call recorded before the ledger kept its input";

/// Judges the workspace's recorded tool calls again against `options.config` and reports what would
/// change. Reads the ledger through its index (brought up to date); appends nothing to the ledger.
pub async fn replay(workspace: &Path, options: &ReplayOptions) -> Result<ReplayReport, ReplayError> {
    if let Some(since) = &options.since {
        crate::ledger::index::parse_time(since).map_err(|e| ReplayError::BadOption(format!("--since: {e}")))?;
    }
    let files = config_files(workspace, &options.config)?;
    let engine = Engine::open_replaying(workspace, files.clone())
        .map_err(|e| ReplayError::Unreadable(format!("cannot open workspace `{}`: {e}", workspace.display())))?;
    let diagnostics = engine.info().diagnostics;
    if !diagnostics.is_empty() {
        return Err(ReplayError::Config(diagnostics));
    }
    let filter =
        Filter { intent: options.intent.clone(), since: options.since.clone(), kind: Some(RecordKind::ToolCall), ..Filter::default() };
    let records = engine.tracer().query(&filter).map_err(|e| ReplayError::Unreadable(format!("cannot read the trace: {e}")))?;
    let mut report = ReplayReport {
        hooks_file: files.hooks,
        intents_file: files.intents,
        replayed: 0,
        unchanged: 0,
        changes: Vec::new(),
        groups: Vec::new(),
        skipped: Vec::new(),
        unverified: 0,
    };
    let mut skipped: BTreeMap<&'static str, usize> = BTreeMap::new();
    let clock = engine.gatekeeper().replay_clock().expect("a replaying engine's gatekeeper has a clock");
    for record in records.iter().filter(|r| r.event.as_deref() == Some(EventKind::PreToolUse.as_str())) {
        let (Some(tool), Some(recorded)) = (record.tool.as_deref(), record.decision.as_ref()) else { continue };
        let event = match event_of(&engine, record, tool) {
            Ok(event) => event,
            Err(why) => {
                *skipped.entry(why).or_default() += 1;
                continue;
            }
        };
        clock.set(crate::ledger::index::parse_time(&record.time).unwrap_or(u64::MAX));
        let stand_in = Arc::new(Recorded {
            hooks: recorded.hooks.clone(),
            reason: recorded.reason.clone(),
            run_commands: options.run_commands,
            notes: Mutex::default(),
        });
        let mut ctx = RunContext::new(workspace);
        ctx.stand_in = Some(Arc::clone(&stand_in) as Arc<dyn StandIn>);
        let paths = shown_paths(&event);
        let evaluation = engine.evaluate_in(event, ctx).await;
        report.replayed += 1;
        let notes = std::mem::take(&mut *stand_in.notes.lock().unwrap_or_else(|p| p.into_inner()));
        if notes.iter().any(|n| n.unrecorded) {
            report.unverified += 1;
        }
        let to = evaluation.decision.as_str();
        if to == recorded.decision {
            report.unchanged += 1;
            continue;
        }
        let hook = match &evaluation.decision {
            Decision::Allow => decider(&recorded.decision, &recorded.hooks),
            Decision::Deny(_) => evaluation
                .outcomes
                .iter()
                .rev()
                .find(|o| matches!(o.kind, OutcomeKind::Denied | OutcomeKind::FailedClosed(_)))
                .map(|o| o.hook.to_string()),
            Decision::Ask { asks } => asks.first().map(|a| a.hook.to_string()),
        };
        let reason = match &evaluation.decision {
            Decision::Allow => None,
            Decision::Deny(d) => Some(d.reason.clone()),
            Decision::Ask { .. } => Some(evaluation.decision.ask_reasons().join("; ")),
        };
        report.changes.push(ReplayChange {
            seq: record.seq,
            time: record.time.clone(),
            session: record.session.clone(),
            agent: record.agent.clone(),
            intent: record.intent.clone(),
            tool: tool.to_owned(),
            paths,
            from: recorded.decision.clone(),
            to: to.to_owned(),
            hook,
            reason,
            stand_ins: notes.into_iter().map(|n| n.text).collect(),
        });
    }
    report.groups = groups(&report.changes);
    report.skipped = skipped.into_iter().map(|(reason, count)| Skipped { reason: reason.to_owned(), count }).collect();
    Ok(report)
}

/// Where the other configuration's two files are: in `dir`, or in its `.orchestration/` when `dir`
/// is a checkout; a file it has not is the workspace's own.
fn config_files(workspace: &Path, dir: &Path) -> Result<ConfigFiles, ReplayError> {
    if !dir.is_dir() {
        return Err(ReplayError::BadOption(format!("`{}` is not a folder holding hooks.yaml or active_intents.yaml", dir.display())));
    }
    let own = crate::base::sidecar::Sidecar::new(workspace);
    let holds = |folder: &Path| folder.join("hooks.yaml").is_file() || folder.join("active_intents.yaml").is_file();
    let folder = if holds(dir) {
        dir.to_path_buf()
    } else if holds(&dir.join(crate::base::sidecar::SIDECAR_DIR)) {
        dir.join(crate::base::sidecar::SIDECAR_DIR)
    } else {
        return Err(ReplayError::BadOption(format!(
            "`{}` holds neither hooks.yaml nor active_intents.yaml (nor a .orchestration folder with them)",
            dir.display()
        )));
    };
    let pick = |name: &str, theirs: PathBuf| if folder.join(name).is_file() { folder.join(name) } else { theirs };
    Ok(ConfigFiles { hooks: pick("hooks.yaml", own.hooks_yaml()), intents: pick("active_intents.yaml", own.active_intents_yaml()) })
}

/// The call as the engine judged it, rebuilt from its record, or why it cannot be.
fn event_of(engine: &Engine, record: &Record, tool: &str) -> Result<Event, &'static str> {
    let call = RecordedCall::from_record(record);
    let handshake = tool == SELECT_INTENT_TOOL || tool == SCOPE_EXPANSION_TOOL;
    let (call, kept) = match call {
        Some(call) => (call, true),
        None => (RecordedCall::default(), false),
    };
    if handshake && call.input.is_none() {
        return Err(NO_INPUT_KEPT);
    }
    let agent = record.agent.as_deref().and_then(Agent::from_id);
    // Without its paths, a write would be judged as one naming none: a deny that never happened.
    if call.writes.is_none() && matches!(engine.gatekeeper().tool_role(agent, tool), Some(ToolRole::Write(_) | ToolRole::Patch(_))) {
        return Err(if kept { NOT_A_WRITE_THEN } else { NO_CALL_KEPT });
    }
    let mut event = Event::tool(EventKind::PreToolUse, tool, call.input.clone().unwrap_or(serde_json::Value::Null));
    event.ids = EventIds {
        session: record.session.clone(),
        agent: record.agent.clone(),
        task: record.task.clone(),
        plan: record.plan.clone(),
        turn: record.turn.as_deref().and_then(|t| t.parse().ok()),
        intent: record.intent.clone(),
        model: record.model.clone(),
        subagent: record.data.as_ref().and_then(|d| d.get("subagent")).and_then(|s| s.as_str()).map(str::to_owned),
    };
    event.writes = call.resolved_writes();
    event.task_type = record.data.as_ref().and_then(|d| d.get("task_type")).and_then(|t| t.as_str()).map(str::to_owned);
    event.paths = call.paths;
    Ok(event)
}

fn shown_paths(event: &Event) -> Vec<String> {
    match &event.writes {
        Some(writes) if !writes.is_empty() => writes.iter().map(|w| w.canonical.clone().unwrap_or_else(|_| w.raw.clone())).collect(),
        _ => event.paths.clone(),
    }
}

/// The hook that decided a recorded `deny` (the last to run: a deny ends the chain) or `ask` (the
/// first that asked).
fn decider(decision: &str, hooks: &[RecordedHook]) -> Option<String> {
    let found = match decision {
        "deny" => hooks.iter().rev().find(|h| h.outcome == "deny" || h.outcome == "failed_closed"),
        "ask" => hooks.iter().find(|h| h.outcome == "ask"),
        _ => None,
    };
    found.map(|h| h.name.clone())
}

fn groups(changes: &[ReplayChange]) -> Vec<ChangeGroup> {
    let mut counts: BTreeMap<(Option<String>, Option<String>, String, String), usize> = BTreeMap::new();
    for c in changes {
        *counts.entry((c.hook.clone(), c.intent.clone(), c.from.clone(), c.to.clone())).or_default() += 1;
    }
    let mut groups: Vec<ChangeGroup> =
        counts.into_iter().map(|((hook, intent, from, to), count)| ChangeGroup { hook, intent, from, to, count }).collect();
    // Most first; the map's order (hook, intent, direction) among equals.
    groups.sort_by_key(|g| std::cmp::Reverse(g.count));
    groups
}

/// A stand-in's note on one hook of one call.
#[derive(Debug)]
struct Note {
    text: String,
    /// The record does not name the hook: it counted as allowing, unverified.
    unrecorded: bool,
}

/// The recorded answers of one call's hooks, standing in for the hooks a replay does not run.
#[derive(Debug)]
struct Recorded {
    hooks: Vec<RecordedHook>,
    /// The recorded decision's reason: a recorded deny's own words.
    reason: Option<String>,
    run_commands: bool,
    notes: Mutex<Vec<Note>>,
}

impl StandIn for Recorded {
    fn answer(&self, hook: &str, kind: &'static str) -> Option<Result<HookAnswer, HookFailure>> {
        // Host hooks are the extension's functions: there is nothing to run them in here.
        if self.run_commands && kind != "host" {
            return None;
        }
        let (note, answer) = match self.hooks.iter().find(|h| h.name == hook) {
            Some(recorded) => {
                let said = recorded.failure.as_deref().map_or(recorded.outcome.clone(), |f| format!("{} ({f})", recorded.outcome));
                (
                    Note { text: format!("{kind} hook `{hook}` not re-run: recorded answer {said}"), unrecorded: false },
                    self.answer_of(recorded),
                )
            }
            None => (
                Note {
                    text: format!("{kind} hook `{hook}` not re-run and not in the record (it did not run then): counted as allow"),
                    unrecorded: true,
                },
                Ok(Answer::Allow.into()),
            ),
        };
        self.notes.lock().unwrap_or_else(|p| p.into_inner()).push(note);
        Some(answer)
    }
}

impl Recorded {
    fn answer_of(&self, recorded: &RecordedHook) -> Result<HookAnswer, HookFailure> {
        let hook = &recorded.name;
        Ok(match recorded.outcome.as_str() {
            "deny" => {
                Answer::Deny(Denial::new(self.reason.clone().unwrap_or_else(|| format!("hook `{hook}` denied it (recorded)")))).into()
            }
            "ask" => Answer::Ask { reason: format!("hook `{hook}` asked (recorded)") }.into(),
            // The failure again, so that the failure mode of this configuration decides what it means.
            "failed_open" | "failed_closed" => {
                let failure = recorded.failure.as_deref().unwrap_or("(recorded without a reason)");
                return Err(HookFailure::Error(failure.strip_prefix("failed: ").unwrap_or(failure).to_owned()));
            }
            // `allow`, and `modify`: the rewrite itself is not in the record, the call went on.
            _ => Answer::Allow.into(),
        })
    }
}
