//! The shared brain: `.orchestration/CLAUDE.md`, which people write for every agent and commit, and
//! its generated part `.orchestration/brain.generated.md` (the hooks in force per event, the intents
//! and who holds each, the lessons of `lessons.rs`), which Chokepoint renders from this machine's
//! live state and git ignores. An agent is shown both, the people's part first ([`Brain::context`]).
//!
//! - **Never a merge conflict, never one machine's state in git.** Who holds what changes with
//!   every lease, and lessons are learnt on each branch: a generated section inside the committed
//!   file conflicted on every merge of two branches that worked, and carried one machine's leases
//!   into the history. So nothing generated is written into CLAUDE.md: it holds only what people
//!   wrote, and the generated file is a runtime file (`base::sidecar::RUNTIME_FILES`; a rewrite
//!   adds its line to an older `.orchestration/.gitignore` before it first writes the file).
//! - **An older section is taken out once, and only it.** A CLAUDE.md written by an older
//!   Chokepoint holds the section between [`BEGIN`] and [`END`]; the next rewrite (`chokepoint init`
//!   or the engine's) removes those lines, markers included, and leaves every other byte as it was
//!   ([`strip`]). Damaged markers (one without its pair, out of order, two sections) are not
//!   guessed at: the text stays the people's, and the damage is reported ([`Refreshed::damage`]).
//!   People do not take our lock, so that removal swaps the new file with the old one in one step
//!   (`renameat2(RENAME_EXCHANGE)`) and reads back what it displaced: when a person saved meanwhile,
//!   their text is stripped again and swapped in, so no save is overwritten ([`swap`]).
//! - **Atomically, one process at a time.** The generated file is rendered and written (a
//!   temporary file synced, then renamed over it) under an exclusive lock of `brain.lock` (the
//!   ledger's cross-process lock, `ledger::writer::lock_exclusive`), from the state as it is then
//!   (the lessons' table, the lease table), so two processes that each added a lesson both see
//!   both. Nobody else writes that file, so no person's save can be lost there.
//! - **Off the judging thread, and only when something changed.** A gate's answer is handed to this
//!   module after its record is durable ([`Brain::notice`]: a denial, a completion's round) and a
//!   lease taken or released asks for a rewrite ([`Brain::refresh_later`]); both go to one worker
//!   thread per engine, started on the first of them, which learns, renders and writes while the
//!   judge goes on. A generated file that already says what would be written is not written. A hook
//!   process (one call per process) starts that thread only on those events and waits for it before
//!   it exits ([`Brain::settle`]); an allowed write never reaches it.
//! - **Created by `chokepoint init`, kept by the engine.** Only [`Brain::refresh`] with `create`
//!   makes CLAUDE.md; the worker keeps the generated part only of a workspace that has a CLAUDE.md,
//!   so a workspace is never handed a brain its people did not ask for.
//!
//! What wakes the worker: a gate that denied, and every `BeforeSubmit`, hands its durable record
//! (`Appended`: `seq`, hash) from where its ticket settles (`BrainWatch`); an intent taken or released
//! (the handshake, `TaskComplete`, `SessionEnd`, a revocation, `intent release`) and a reload that
//! changed hooks.yaml or active_intents.yaml (not the first load, which every hook process does) ask
//! for a rewrite. An allowed tool call costs two comparisons. The worker learns and rewrites once per
//! batch; `Engine::before_exit` (a `chokepoint hook` process) and an engine's drop wait for it at most
//! 2 s. The rendering is independent of which process wrote it: the gatekeeper and the configured
//! hooks per event and task type, in chain order, from the last good hooks.yaml (a host's own
//! registrations are left out), the intents with their holders, the lessons.
//!
//! The strip writes a temporary file, syncs it and reads CLAUDE.md again (a person's save since the
//! first read is stripped instead) before the swap; `renameat2(RENAME_EXCHANGE)` is Linux's, elsewhere
//! it is a rename after that read. Readers: an external agent's `SessionStart` rewrites the file on
//! the hook's thread (once per session, so a hooks.yaml edited while no engine watched is listed)
//! and, with `PreCompact`, reads both files into its context (`agents::context::shared_brain`); our
//! runtime reads them every turn (`Engine.brainContext`) and pins them (`ItemKind::Brain`). Both files
//! are governance files (`.orchestration/**`): the gatekeeper refuses a write tool on CLAUDE.md by name
//! (`governance::brain_refusal`), and containment refuses a shell command's change to it, saying the
//! same. Pinned with real git by `native/cli/tests/brain.rs` (two worktrees that each took a lease
//! and learnt a lesson, merged without a conflict).

use crate::base::sidecar::{BRAIN, BRAIN_GENERATED, IGNORE_HEADER, RUNTIME_FILES, Sidecar, runtime_ignore, with_lines};
use crate::base::sqlite::StateDb;
use crate::config::hooks::{HookSpec, HooksConfig};
use crate::engine::lessons::{Lesson, Lessons, Noticed, short};
use crate::hooks::priority::{FailureMode, Priority};
use crate::model::event::EventKind;
use crate::scope::intents::IntentSet;
use crate::scope::leases::Lease;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The generated part's file, relative to the workspace root.
pub const GENERATED: &str = BRAIN_GENERATED;

/// The first line of the section an older Chokepoint generated inside CLAUDE.md (a line that starts
/// with it is a begin marker): removed by the next rewrite.
pub const BEGIN: &str = "<!-- chokepoint:begin";
/// The last line of that older section.
pub const END: &str = "<!-- chokepoint:end -->";

/// The first line of the generated file: what it is, and where people write instead.
const GENERATED_LINE: &str = "<!-- generated by Chokepoint from hooks.yaml, active_intents.yaml, this machine's lease table and the lessons; \
not committed, rewritten whole: people write in .orchestration/CLAUDE.md -->";

/// What a new CLAUDE.md holds: the people's part, all of it.
const NEW_FILE: &str = "# Shared brain\n\nWhat every agent working in this workspace should know: conventions, decisions, traps. Write here \
freely: this file is yours, and meant to be committed. Chokepoint shows every agent this file and, after it, what it generates \
(the hooks in force, the intents and who holds each, the lessons) from `.orchestration/brain.generated.md`, which git ignores.\n";

/// The most of the two files an agent is shown: a brain that outgrows it is cut, and says so.
pub const MAX_CONTEXT_BYTES: usize = 32 * 1024;

/// How many times a rewrite starts over when the file changed between its read and its rename.
const ATTEMPTS: usize = 20;

crate::base::error::domain_error! {
    /// The brain could not be rewritten: its lock, its file, or the state it renders.
    BrainError
}

/// What a rewrite did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Refreshed {
    /// CLAUDE.md was made (`create`, and there was none).
    pub created: bool,
    /// An older generated section was taken out of CLAUDE.md.
    pub stripped: bool,
    /// The generated file was written (false: it already said this, or there is no brain to keep).
    pub generated: bool,
    /// An older section's markers in CLAUDE.md were damaged: what was found, by line. Nothing of
    /// the text around them was removed.
    pub damage: Vec<String>,
}

impl Refreshed {
    /// Whether any file was written.
    pub fn written(&self) -> bool {
        self.created || self.stripped || self.generated
    }
}

/// One hook of a chain, as the generated part lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookRow {
    pub name: String,
    pub priority: Priority,
    pub does: String,
    /// What of its work the agent is told.
    pub reaches_agent: String,
    pub failure: FailureMode,
}

/// One intent and who holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntentRow {
    pub id: String,
    pub name: String,
    pub status: String,
    pub scope: Vec<String>,
    pub holder: Option<String>,
}

/// Each event's hooks, in chain order.
pub type Chains = Vec<(EventKind, Vec<HookRow>)>;

/// Everything the generated part says besides the lessons, read from the last good configuration
/// and the lease table when it is rendered.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// Per event, the project's chain (with the gatekeeper where it runs).
    pub events: Chains,
    /// Per task type: its description and the chains that replace the project's.
    pub task_types: Vec<(String, Option<String>, Chains)>,
    pub intents: Vec<IntentRow>,
    /// Why the holders are missing, when the lease table could not be read.
    pub holders_unknown: Option<String>,
}

/// The facts of a workspace: its configuration and the leases held in it.
pub fn facts(hooks: &HooksConfig, intents: &IntentSet, holders: Result<Vec<Lease>, String>) -> Facts {
    let (holders, holders_unknown) = match holders {
        Ok(h) => (h, None),
        Err(e) => (Vec::new(), Some(e)),
    };
    Facts {
        events: chains(&hooks.hooks, true),
        task_types: hooks.task_types.iter().map(|(name, t)| (name.clone(), t.description.clone(), chains(&t.hooks, false))).collect(),
        intents: intents
            .active_intents
            .iter()
            .map(|i| IntentRow {
                id: i.id.clone(),
                name: i.name.clone(),
                status: i.status.as_str().to_owned(),
                scope: i.owned_scope.clone(),
                holder: holders.iter().find(|l| l.intent == i.id).map(|l| l.session.clone()),
            })
            .collect(),
        holders_unknown,
    }
}

/// The events the gatekeeper judges (`Engine::open_with` registers it for these).
const GATEKEEPER_EVENTS: [EventKind; 3] = [EventKind::PreToolUse, EventKind::TaskComplete, EventKind::SessionEnd];

/// Each event's hooks in chain order: by priority, ties in registration order (the gatekeeper,
/// registered first, then the file's order), as `Chain::new` sorts them. Only what every process on
/// the workspace runs is listed: a host's own registrations (the extension's) would make the
/// generated part differ by which process wrote it last.
fn chains(by_event: &BTreeMap<EventKind, Vec<HookSpec>>, with_gatekeeper: bool) -> Chains {
    EventKind::ALL
        .iter()
        .filter_map(|kind| {
            let mut rows: Vec<HookRow> = Vec::new();
            if with_gatekeeper && GATEKEEPER_EVENTS.contains(kind) {
                rows.push(gatekeeper_row(*kind));
            }
            rows.extend(by_event.get(kind).into_iter().flatten().map(row));
            rows.sort_by_key(|r| r.priority);
            (!rows.is_empty()).then_some((*kind, rows))
        })
        .collect()
}

fn gatekeeper_row(kind: EventKind) -> HookRow {
    let does = match kind {
        EventKind::PreToolUse => {
            "judges every write: inside the workspace, not a governance file, an intent selected, inside its owned_scope or an approved expansion; shell commands run contained"
        }
        _ => "releases the session's intent lease",
    };
    HookRow {
        name: crate::scope::gatekeeper::HOOK_NAME.to_owned(),
        priority: Priority::Critical,
        does: does.to_owned(),
        reaches_agent: if kind == EventKind::PreToolUse { "its refusal and remediation" } else { "nothing" }.to_owned(),
        failure: FailureMode::Closed,
    }
}

fn row(spec: &HookSpec) -> HookRow {
    let mut does = if let Some(deny) = &spec.deny {
        format!("denies: {}", deny.reason)
    } else if let Some(reason) = &spec.ask {
        format!("asks a person: {reason}")
    } else if let Some(context) = &spec.context {
        format!("adds context: {context}")
    } else if let Some(builtin) = &spec.builtin {
        format!("runs the builtin `{builtin}`")
    } else if let Some(argv) = &spec.command {
        format!(
            "runs `{}`{}",
            argv.join(" "),
            if !spec.shell {
                ""
            } else if cfg!(windows) {
                " through cmd"
            } else {
                " through sh"
            }
        )
    } else {
        "nothing".to_owned()
    };
    if let Some(tool) = &spec.tool {
        does.push_str(&format!("; for tools `{tool}`"));
    }
    if !spec.paths.is_empty() {
        does.push_str(&format!("; for paths `{}`", spec.paths.join("`, `")));
    }
    let reaches_agent = if spec.deny.is_some() {
        "its reason"
    } else if spec.ask.is_some() {
        "the person's answer"
    } else if spec.context.is_some() {
        "its text, as context"
    } else if spec.pipe_output {
        "its output, at the next turn, and its refusals"
    } else {
        "its refusals and context only"
    };
    HookRow {
        name: spec.name.clone(),
        priority: spec.priority,
        does,
        reaches_agent: reaches_agent.to_owned(),
        failure: spec.failure_mode(),
    }
}

/// The generated file's text, ending with a newline.
pub fn render(facts: &Facts, lessons: &[Lesson]) -> String {
    let mut s = format!("{GENERATED_LINE}\n## Governed by Chokepoint\n\n### Hooks in force\n");
    s.push_str("Every agent's action on this workspace passes these chains, in this order.\n");
    render_chains(&mut s, &facts.events);
    for (name, description, chains) in &facts.task_types {
        s.push_str(&format!(
            "\nTasks of type `{name}`{} replace the project's chains with these:\n",
            description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default()
        ));
        if chains.is_empty() {
            s.push_str("- none: a task of this type is accepted without checks\n");
        }
        render_chains(&mut s, chains);
    }
    s.push_str("\n### Intents\n");
    if facts.intents.is_empty() {
        s.push_str("None declared: agents may write anywhere but the governance files.\n");
    }
    for i in &facts.intents {
        let holder = match (&i.holder, &facts.holders_unknown) {
            (Some(session), _) => format!("held by `{session}`"),
            (None, Some(why)) => format!("holder unknown: {}", cell(why)),
            (None, None) => "free".to_owned(),
        };
        s.push_str(&format!("- `{}` {} [{}]: `{}`; {holder}\n", i.id, cell(&i.name), i.status, i.scope.join("`, `")));
    }
    s.push_str("\n### Lessons\n");
    if lessons.is_empty() {
        s.push_str("None yet. A denial that repeats, or a completion that failed and then passed, is written here.\n");
    }
    for l in lessons {
        let date = crate::base::clock::format_utc(l.time_ms);
        let intent = l.intent.as_deref().map(|i| format!(", intent `{i}`")).unwrap_or_default();
        s.push_str(&format!("- {}{intent}: {} (ledger #{} `{}`)\n", date.get(..10).unwrap_or(&date), l.text, l.seq, short(&l.hash)));
    }
    s
}

fn render_chains(s: &mut String, chains: &[(EventKind, Vec<HookRow>)]) {
    for (kind, rows) in chains {
        s.push_str(&format!(
            "\n**{}**\n\n| hook | priority | what it does | reaches the agent | on failure |\n|---|---|---|---|---|\n",
            kind.as_str()
        ));
        for r in rows {
            let failure = match r.failure {
                FailureMode::Closed => "denies (closed)",
                FailureMode::Open => "recorded, skipped (open)",
            };
            let priority = match r.priority {
                Priority::Critical => "critical",
                Priority::High => "high",
                Priority::Normal => "normal",
                Priority::Low => "low",
            };
            s.push_str(&format!("| `{}` | {priority} | {} | {} | {failure} |\n", r.name, cell(&r.does), r.reaches_agent));
        }
    }
}

/// `text` as one table cell: on one line, its pipes escaped.
fn cell(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ").replace('|', "\\|")
}

fn is_begin(line: &str) -> bool {
    line.trim_start().starts_with(BEGIN)
}

fn is_end(line: &str) -> bool {
    line.trim() == END
}

/// `current` without the section an older Chokepoint generated in it (its lines from the begin
/// marker to the end marker, both included), `None` when it has no sound one; and what is damaged,
/// when its markers are not one begin before one end (nothing is removed then: what they frame may
/// be the people's by now). Every line outside a sound section is kept byte for byte.
pub fn strip(current: &str) -> (Option<String>, Vec<String>) {
    let lines: Vec<&str> = current.split_inclusive('\n').collect();
    let begins: Vec<usize> = lines.iter().enumerate().filter(|(_, l)| is_begin(l)).map(|(i, _)| i).collect();
    let ends: Vec<usize> = lines.iter().enumerate().filter(|(_, l)| is_end(l)).map(|(i, _)| i).collect();
    match (begins.as_slice(), ends.as_slice()) {
        ([], []) => (None, Vec::new()),
        ([begin], [end]) if begin < end => (Some(format!("{}{}", lines[..*begin].concat(), lines[end + 1..].concat())), Vec::new()),
        _ => {
            let mut damage: Vec<(usize, &str)> = begins.iter().map(|i| (*i, "begin")).chain(ends.iter().map(|i| (*i, "end"))).collect();
            damage.sort();
            let damage = damage
                .into_iter()
                .map(|(i, which)| {
                    format!(
                        "line {}: a chokepoint:{which} marker of an older generated section without its pair; Chokepoint no longer writes in this file, so delete the old section by hand",
                        i + 1
                    )
                })
                .collect();
            (None, damage)
        }
    }
}

/// The shared brain of one workspace, and the worker that keeps its generated part true.
pub struct Brain {
    inner: Arc<Inner>,
    /// The worker's queue; the worker is started with the first job.
    queue: Mutex<Option<Sender<Job>>>,
    /// Jobs sent and not yet done, for [`Brain::settle`].
    pending: Arc<(Mutex<usize>, Condvar)>,
}

impl std::fmt::Debug for Brain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Brain").field("file", &self.inner.sidecar.brain()).finish_non_exhaustive()
    }
}

struct Inner {
    sidecar: Sidecar,
    lessons: Lessons,
    facts: Box<dyn Fn() -> Facts + Send + Sync>,
    /// What the last rewrite or its failure said, for whoever asks (`chokepoint init`, tests).
    last: Mutex<Option<Result<Refreshed, BrainError>>>,
}

enum Job {
    Notice(Box<Noticed>),
    Refresh,
}

impl Brain {
    /// The brain of `sidecar`'s workspace; its lessons live in `state`, the rest of its generated
    /// part comes from `facts`, called when it is rendered.
    pub(crate) fn new(sidecar: Sidecar, state: Arc<StateDb>, facts: impl Fn() -> Facts + Send + Sync + 'static) -> Brain {
        Brain {
            inner: Arc::new(Inner { sidecar, lessons: Lessons::on(state), facts: Box::new(facts), last: Mutex::default() }),
            queue: Mutex::default(),
            pending: Arc::default(),
        }
    }

    /// Rewrites the generated part now, on this thread (and takes an older section out of
    /// CLAUDE.md): creates CLAUDE.md (a people's part to write in) when `create` and it is missing;
    /// otherwise a workspace without one stays without a brain.
    pub fn refresh(&self, create: bool) -> Result<Refreshed, BrainError> {
        let result = self.inner.refresh(create);
        *self.inner.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(result.clone());
        result
    }

    /// What the last rewrite did, or why it failed; `None` before the first.
    pub fn last(&self) -> Option<Result<Refreshed, BrainError>> {
        self.inner.last.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The lessons kept, oldest first.
    pub fn lessons(&self) -> Result<Vec<Lesson>, BrainError> {
        self.inner.lessons.list().map_err(|e| BrainError::from(e.to_string()))
    }

    /// A gate's answer, its record durable: learnt from and, when it taught a lesson, rendered, on
    /// the worker. Cheap on the caller's thread (a send).
    pub(crate) fn notice(&self, noticed: Noticed) {
        self.send(Job::Notice(Box::new(noticed)));
    }

    /// Asks the worker to rewrite the generated part (a lease was taken or released, the
    /// configuration reloaded).
    pub fn refresh_later(&self) {
        if self.inner.sidecar.brain().exists() {
            self.send(Job::Refresh);
        }
    }

    /// Waits until every job sent so far is done, for at most `timeout`; false when it ran out. A
    /// process that exits right after judging calls it so that a lesson is not lost with it.
    pub fn settle(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let (count, done) = &*self.pending;
        let mut count = count.lock().unwrap_or_else(PoisonError::into_inner);
        while *count > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            count = done.wait_timeout(count, left).unwrap_or_else(PoisonError::into_inner).0;
        }
        true
    }

    /// The brain as an agent is shown it: what people wrote, then what Chokepoint generated (at
    /// most [`MAX_CONTEXT_BYTES`] of the two); `None` when the workspace has no brain.
    pub fn context(&self) -> Option<String> {
        let people = std::fs::read_to_string(self.inner.sidecar.brain()).ok()?;
        // An older section not yet taken out is not shown twice.
        let people = strip(&people).0.unwrap_or(people);
        let generated = std::fs::read_to_string(self.inner.sidecar.brain_generated()).unwrap_or_default();
        let text =
            if generated.is_empty() { people.trim_end().to_owned() } else { format!("{}\n\n{}", people.trim_end(), generated.trim_end()) };
        let mut shown = text.as_str();
        let mut cut = "";
        if shown.len() > MAX_CONTEXT_BYTES {
            let mut at = MAX_CONTEXT_BYTES;
            while !shown.is_char_boundary(at) {
                at -= 1;
            }
            shown = &shown[..at];
            cut = "\n[cut here: the brain is longer; read the rest of its two files yourself]";
        }
        Some(format!(
            "<shared_brain file=\"{BRAIN}\">\nThe shared brain of this workspace: what its people want every agent to know, then what Chokepoint generates beside it ({BRAIN_GENERATED}). You never write these files.\n{}{cut}\n</shared_brain>",
            shown.trim_end()
        ))
    }

    fn send(&self, job: Job) {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        *self.pending.0.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        let job = match queue.as_ref() {
            Some(sender) => match sender.send(job) {
                Ok(()) => return,
                // The worker is gone (it panicked): a new one takes the job.
                Err(returned) => returned.0,
            },
            None => job,
        };
        self.start(&mut queue, job);
    }

    fn start(&self, queue: &mut Option<Sender<Job>>, first: Job) {
        let (sender, receiver) = channel();
        let _ = sender.send(first);
        let inner = Arc::clone(&self.inner);
        let pending = Arc::clone(&self.pending);
        let spawned = std::thread::Builder::new().name("chokepoint-brain".into()).spawn(move || work(&inner, &receiver, &pending));
        if spawned.is_ok() {
            *queue = Some(sender);
        } else {
            // No thread: the job is dropped, counted as done, and the next one tries again.
            let (count, done) = &*self.pending;
            *count.lock().unwrap_or_else(PoisonError::into_inner) -= 1;
            done.notify_all();
        }
    }
}

impl Drop for Brain {
    /// The worker finishes what it was given (a lesson must not be lost with the engine) and ends:
    /// its queue is closed, then waited for, at most [`SETTLE_ON_DROP`].
    fn drop(&mut self) {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner).take();
        self.settle(SETTLE_ON_DROP);
    }
}

/// How long an engine's end waits for its brain's worker.
const SETTLE_ON_DROP: Duration = Duration::from_secs(2);

/// The worker: takes every job queued, learns from the notices, and rewrites the generated part
/// once if anything called for it. Ends when the brain (its sender) is dropped.
fn work(inner: &Inner, receiver: &Receiver<Job>, pending: &(Mutex<usize>, Condvar)) {
    while let Ok(first) = receiver.recv() {
        let mut jobs = vec![first];
        jobs.extend(receiver.try_iter());
        let taken = jobs.len();
        let mut rewrite = jobs.iter().any(|job| matches!(job, Job::Refresh));
        // What queued while the worker was busy is counted in one transaction.
        let notices: Vec<Noticed> = jobs
            .into_iter()
            .filter_map(|job| match job {
                Job::Notice(noticed) => Some(*noticed),
                Job::Refresh => None,
            })
            .collect();
        match inner.lessons.notice_all(&notices) {
            Ok(learnt) => rewrite |= learnt,
            Err(e) => *inner.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(Err(e.to_string().into())),
        }
        if rewrite {
            let result = inner.refresh(false);
            *inner.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(result);
        }
        let (count, done) = pending;
        let mut count = count.lock().unwrap_or_else(PoisonError::into_inner);
        *count = count.saturating_sub(taken);
        done.notify_all();
    }
}

impl Inner {
    fn refresh(&self, create: bool) -> Result<Refreshed, BrainError> {
        let file = self.sidecar.brain();
        if !self.sidecar.exists() || (!create && !file.exists()) {
            return Ok(Refreshed::default());
        }
        let lock_path = self.sidecar.brain_lock();
        let lock = crate::base::sidecar::owner_only(std::fs::OpenOptions::new().create(true).truncate(false).read(true).write(true))
            .open(&lock_path)
            .map_err(|e| format!("cannot open {}: {e}", lock_path.display()))?;
        let _locked = crate::ledger::writer::lock_exclusive(&lock, &lock_path).map_err(|e| e.to_string())?;
        let mut refreshed = self.people(&file, create)?;
        if refreshed.created || file.exists() {
            refreshed.generated = self.generate()?;
        }
        Ok(refreshed)
    }

    /// CLAUDE.md made when `create` and missing, or its older section taken out.
    fn people(&self, file: &Path, create: bool) -> Result<Refreshed, BrainError> {
        let read = || std::fs::read_to_string(file);
        let current = match read() {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && create => match self.create(file)? {
                true => return Ok(Refreshed { created: true, ..Refreshed::default() }),
                // Someone made it first: theirs is kept.
                false => read().map_err(|e| format!("cannot read {}: {e}", file.display()))?,
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Refreshed::default()),
            Err(e) => return Err(format!("cannot read {}: {e}", file.display()).into()),
        };
        let (stripped, damage) = strip(&current);
        let Some(mut next) = stripped else { return Ok(Refreshed { damage, ..Refreshed::default() }) };
        // What the file holds as far as this rewrite knows: a swap that displaces anything else
        // displaced a person's save, which is stripped again rather than lost.
        let mut expected = current;
        let temp = self.temp();
        for _ in 0..ATTEMPTS {
            write_synced(&temp, &next).map_err(|e| format!("cannot write {}: {e}", temp.display()))?;
            // Read again right before the swap: a save since the read is taken before the file
            // ever lacks it (an editor that reloads the file would otherwise see it gone, briefly).
            if let Ok(now) = read()
                && now != expected
            {
                let _ = std::fs::remove_file(&temp);
                match strip(&now) {
                    (Some(again), _) => next = again,
                    // The person took the section out themselves: nothing left to do.
                    (None, damage) => return Ok(Refreshed { damage, ..Refreshed::default() }),
                }
                expected = now;
                continue;
            }
            let displaced = match swap(&temp, file, &expected) {
                Ok(displaced) => displaced,
                Err(e) => {
                    let _ = std::fs::remove_file(&temp);
                    return Err(format!("cannot replace {}: {e}", file.display()).into());
                }
            };
            let _ = std::fs::remove_file(&temp);
            match displaced {
                None => return Ok(Refreshed { stripped: true, ..Refreshed::default() }),
                Some(theirs) => {
                    // Their save is back in place of ours; it may still hold the section.
                    expected = std::mem::take(&mut next);
                    match strip(&theirs) {
                        (Some(again), _) => next = again,
                        // They took the section out themselves: their text goes back in place.
                        (None, _) => next = theirs,
                    }
                }
            }
        }
        Err(format!("{} kept changing while its older generated section was taken out; it is taken out at the next change", file.display())
            .into())
    }

    /// The generated file rendered from the state as it is now, written when it says something
    /// else; its line added to the sidecar's `.gitignore` first, so it is never committed.
    fn generate(&self) -> Result<bool, BrainError> {
        // Rendered under the lock: a lesson another process added before it took the lock is in.
        let lessons = self.lessons.list().map_err(|e| e.to_string())?;
        let text = render(&(self.facts)(), &lessons);
        let generated = self.sidecar.brain_generated();
        if std::fs::read_to_string(&generated).is_ok_and(|now| now == text) {
            return Ok(false);
        }
        self.ignore_generated()?;
        let temp = self.sidecar.dir().join(format!(".brain.generated.md.{}.tmp", std::process::id()));
        write_synced(&temp, &text).map_err(|e| format!("cannot write {}: {e}", temp.display()))?;
        std::fs::rename(&temp, &generated).map_err(|e| {
            let _ = std::fs::remove_file(&temp);
            format!("cannot replace {}: {e}", generated.display())
        })?;
        Ok(true)
    }

    /// The sidecar's `.gitignore` with the runtime files (the generated brain among them) in it: an
    /// older Chokepoint's gets the lines added since, at its end, the rest kept as it is.
    fn ignore_generated(&self) -> Result<(), BrainError> {
        let file = self.sidecar.dir().join(".gitignore");
        let current = match std::fs::read_to_string(&file) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(format!("cannot read {}: {e}", file.display()).into()),
        };
        let next = match &current {
            None => runtime_ignore(),
            Some(_) => with_lines(current.as_deref(), IGNORE_HEADER, RUNTIME_FILES),
        };
        if current.as_deref() == Some(next.as_str()) {
            return Ok(());
        }
        let temp = self.sidecar.dir().join(format!(".gitignore.{}.tmp", std::process::id()));
        write_synced(&temp, &next).map_err(|e| format!("cannot write {}: {e}", temp.display()))?;
        std::fs::rename(&temp, &file).map_err(|e| {
            let _ = std::fs::remove_file(&temp);
            format!("cannot replace {}: {e}", file.display()).into()
        })
    }

    /// A new CLAUDE.md, the people's part only, linked into place only if nobody made the file
    /// meanwhile (a link never replaces); false when somebody did.
    fn create(&self, file: &Path) -> Result<bool, BrainError> {
        let temp = self.temp();
        write_synced(&temp, NEW_FILE).map_err(|e| format!("cannot write {}: {e}", temp.display()))?;
        let linked = std::fs::hard_link(&temp, file);
        let _ = std::fs::remove_file(&temp);
        match linked {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(format!("cannot create {}: {e}", file.display()).into()),
        }
    }

    /// A temporary file beside the brain (same file system, so a rename or swap is atomic).
    fn temp(&self) -> std::path::PathBuf {
        self.sidecar.dir().join(format!(".CLAUDE.md.{}.tmp", std::process::id()))
    }
}

/// Puts `temp` in place of `file`, which should hold `expected`; `Some(what it held)` when that was
/// something else (a person saved since it was read), for the caller to splice again.
///
/// On Linux the two are exchanged in one step (`renameat2(RENAME_EXCHANGE)`) and what was displaced
/// is read back from `temp`'s name: a save that lands at any moment before the swap is caught, not
/// overwritten. Elsewhere the file is read again right before a rename, which leaves the moment
/// between the two.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn swap(temp: &Path, file: &Path, expected: &str) -> std::io::Result<Option<String>> {
    use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
    renameat2(AT_FDCWD, temp, AT_FDCWD, file, RenameFlags::RENAME_EXCHANGE).map_err(std::io::Error::from)?;
    let displaced = std::fs::read_to_string(temp)?;
    Ok((displaced != expected).then_some(displaced))
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn swap(temp: &Path, file: &Path, expected: &str) -> std::io::Result<Option<String>> {
    let now = std::fs::read_to_string(file)?;
    if now != expected {
        return Ok(Some(now));
    }
    std::fs::rename(temp, file).map(|()| None)
}

fn write_synced(path: &Path, text: &str) -> std::io::Result<()> {
    let mut file = std::fs::File::create(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECTION: &str = "<!-- chokepoint:begin: x -->\nold\n<!-- chokepoint:end -->\n";

    #[test]
    fn an_older_section_is_taken_out_and_every_other_byte_kept() {
        let current = format!("# Notes\r\nmine\n{SECTION}tail without newline");
        let (next, damage) = strip(&current);
        assert_eq!(next.as_deref(), Some("# Notes\r\nmine\ntail without newline"));
        assert!(damage.is_empty());
        assert_eq!(strip(next.as_deref().unwrap()), (None, Vec::new()), "taken out once: nothing more to do");
        assert_eq!(strip(&format!("mine\n\n{SECTION}")).0.as_deref(), Some("mine\n\n"));
        assert_eq!(strip("").0, None);
    }

    #[test]
    fn damaged_markers_remove_nothing_and_say_where() {
        let current = "mine\n<!-- chokepoint:begin: old -->\nold generated\nmy note below\n";
        let (next, damage) = strip(current);
        assert_eq!(next, None, "what the marker framed may be the people's now");
        assert_eq!(damage.len(), 1);
        assert!(damage[0].starts_with("line 2: a chokepoint:begin marker of an older generated section without its pair"), "{damage:?}");
        let (next, damage) = strip("<!-- chokepoint:end -->\n<!-- chokepoint:begin -->\n");
        assert_eq!((next, damage.len()), (None, 2), "an end before its begin is damage too");
    }

    #[test]
    fn the_generated_part_has_no_marker_an_older_strip_would_take_for_its_own() {
        let text = render(&Facts::default(), &[]);
        assert!(text.starts_with(GENERATED_LINE) && text.contains("### Lessons"), "{text}");
        assert_eq!(strip(&text), (None, Vec::new()));
    }
}
