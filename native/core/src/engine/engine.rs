//! The engine: one workspace opened, its configuration loaded and reloaded, the stores and the
//! trace it judges with, and what its edges call besides judging (a contained command, the piped
//! output of a session, the plan of an event's chain). How it judges an event is `judge.rs`; what it
//! loads is `loaded.rs`.
//!
//! A live engine's point is `Engine::runs_good_configuration`: after a bad edit it keeps judging with
//! the last good configuration, where a process that opens the files anew has none and denies every
//! gate. An engine holds one connection to each state database (`base::sqlite::StateDb`): the
//! repository's coordination database and the worktree's own `state.db`. The first open that makes
//! the coordination database adopts the tables a worktree kept before (`ADOPTED`; see
//! `base/sidecar.rs` for what is shared and why). A process that exits after one call waits for the
//! brain's worker first (`Engine::before_exit`).

use super::loaded::{Chains, ConfigFiles, ConfigStatus, EngineInfo, FileStatus, Loaded, Registration, load_file};
use crate::approvals::team::{Origin, TeamPendings};
use crate::approvals::{Approvals, Phase, RecordSink};
use crate::base::diagnostic::Diagnostic;
use crate::base::sidecar::Sidecar;
use crate::base::sqlite::StateDb;
use crate::base::team::{Team, TeamEnv};
use crate::config::hooks::HooksConfig;
use crate::containment::contain::{ContainReport, Containment, Shell};
use crate::engine::brain::Brain;
use crate::engine::trace::{TraceError, Tracer};
use crate::engine::{brain, trace};
use crate::hooks::chain::Piped;
use crate::hooks::pipe::PipeBuffer;
use crate::hooks::priority::Priority;
use crate::model::event::{Event, EventKind};
use crate::scope::canonical::Workspace;
use crate::scope::claims::Allowlists;
use crate::scope::gatekeeper::{Gatekeeper, HOOK_NAME};
use crate::scope::intents::IntentSet;
use crate::scope::leases::Checkout;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, RwLock};
use std::time::Duration;

crate::base::error::domain_error! {
    /// The engine could not do what was asked (a contained command that could not be contained,
    /// started or recorded).
    EngineError
}

#[derive(Debug)]
pub struct Engine {
    pub(super) sidecar: Sidecar,
    pub(super) files: ConfigFiles,
    /// False for an engine that replays the ledger: it judges, and records nothing.
    pub(super) records: bool,
    pub(super) gatekeeper: Arc<Gatekeeper>,
    // One contained command at a time per engine: two at once would each see the other's changes as
    // their own. Keeps the last snapshot, so the next command mostly costs `stat`s.
    pub(super) containment: std::sync::Mutex<Containment>,
    /// The cancel flag of each session's contained command while it runs (queued or running).
    pub(super) running: std::sync::Mutex<HashMap<String, Arc<std::sync::atomic::AtomicBool>>>,
    pub(super) tracer: Arc<Tracer>,
    /// The connection to this worktree's state.db (the ledger's head, for the tracer).
    pub(super) state: Arc<StateDb>,
    /// The connection to the coordination database every worktree of the repository shares
    /// (`Sidecar::coordination_db`): leases, expansions, lessons, agents' processes.
    pub(super) coordination: Arc<StateDb>,
    /// The team's database this engine coordinates on (`coordination:` in hooks.yaml, or
    /// `CHOKEPOINT_COORDINATION_URL`), resolved on every load; `Off` without one.
    pub(super) team: RwLock<Team>,
    /// Where the team's settings read the environment (`CHOKEPOINT_COORDINATION_URL`, `PGPASSWORD`,
    /// `CHOKEPOINT_MACHINE`): the process's, or a test's ([`Engine::open_with_env`]).
    pub(super) env: TeamEnv,
    /// The Pendings of this engine; reconfigured from the last good hooks.yaml on every load.
    pub(super) approvals: Approvals,
    pub(super) registrations: RwLock<Vec<Registration>>,
    pub(super) piped: PipeBuffer,
    // Readers take a cheap `Arc` clone; a reload swaps the whole snapshot so no caller ever sees a
    // half-applied configuration. Shared with the brain, which renders the snapshot of its time.
    pub(super) loaded: Arc<RwLock<Arc<Loaded>>>,
    /// The shared brain `.orchestration/CLAUDE.md` and the worker that keeps its section true.
    pub(super) brain: Arc<Brain>,
}

/// The tables a worktree's own state.db held before what the worktrees coordinate on moved to the
/// repository's shared database, carried over by the first worktree that makes it
/// (`StateDb::adopting`): the lessons, the approved scope expansions and the revocations not yet
/// answered. Not the leases (their holders select again; the table is versioned) nor the agents'
/// processes (learnt again from the next hook).
const ADOPTED: &[&str] = &["brain_lessons_v1", "brain_denials_v1", "brain_submits_v1", "scope_expansions_v1", "lease_revocations_v1"];

impl Engine {
    /// Opens the engine on a workspace. Fails only when the workspace itself is not a directory;
    /// configuration problems are reported through [`EngineInfo::diagnostics`].
    pub fn open(workspace_root: impl AsRef<Path>) -> std::io::Result<Engine> {
        Engine::open_with(workspace_root, Vec::new())
    }

    /// Opens the engine with native hooks registered ahead of the configured ones (after the
    /// gatekeeper, which every engine registers first).
    pub fn open_with(workspace_root: impl AsRef<Path>, registrations: Vec<Registration>) -> std::io::Result<Engine> {
        Engine::open_in(workspace_root.as_ref(), registrations, None, false)
    }

    /// [`Engine::open`] with the team's settings read from `env` instead of the process's
    /// environment: how a test gives two engines in one process two machines' settings.
    pub fn open_with_env(
        workspace_root: impl AsRef<Path>,
        env: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> std::io::Result<Engine> {
        Engine::open_configured(workspace_root.as_ref(), Vec::new(), None, false, TeamEnv(Arc::new(env)))
    }

    /// Opens the engine for a process that judges one call and exits (`chokepoint hook` alone): as
    /// [`Engine::open`], with the ledger opened on another thread from the start (the state
    /// database, its log's index rebuilt, the ledger's lock and tail, its writer thread) while this
    /// one parses the configuration. A cold process pays for both each time; on two cores the
    /// record's open then hides behind the judging instead of following it.
    pub fn open_for_one_call(workspace_root: impl AsRef<Path>) -> std::io::Result<Engine> {
        Engine::open_in(workspace_root.as_ref(), Vec::new(), None, true)
    }

    /// An engine for a replay of the workspace's ledger against `files` (`engine::replay`): the same
    /// chains and judging path, but nothing is recorded and its gatekeeper takes no lease.
    pub(crate) fn open_replaying(workspace_root: &Path, files: ConfigFiles) -> std::io::Result<Engine> {
        Engine::open_in(workspace_root, Vec::new(), Some(files), false)
    }

    fn open_in(root: &Path, registrations: Vec<Registration>, replay: Option<ConfigFiles>, ledger_ahead: bool) -> std::io::Result<Engine> {
        Engine::open_configured(root, registrations, replay, ledger_ahead, TeamEnv::process())
    }

    fn open_configured(
        root: &Path,
        registrations: Vec<Registration>,
        replay: Option<ConfigFiles>,
        ledger_ahead: bool,
        env: TeamEnv,
    ) -> std::io::Result<Engine> {
        if !std::fs::metadata(root)?.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                format!("workspace `{}` is not a directory", root.display()),
            ));
        }
        let sidecar = Sidecar::new(root);
        // One connection to the worktree's state.db for the ledger's head, and one to the database
        // the repository's worktrees share for what they coordinate on; outside a repository they
        // are one file, and one connection. The repository is looked up here, once per engine (the
        // sidecar's clones share what it found).
        let state = Arc::new(StateDb::new(sidecar.state_db()));
        let coordination = match sidecar.repo() {
            Some(_) => Arc::new(StateDb::making_folder(sidecar.coordination_db(), sidecar.dir()).adopting(sidecar.state_db(), ADOPTED)),
            None => Arc::clone(&state),
        };
        // First, so that the ledger opened ahead starts before anything else is read.
        let tracer = Arc::new(Tracer::new(sidecar.clone(), Arc::clone(&state)));
        let records = replay.is_none();
        if ledger_ahead && records && tracer.governed() {
            let tracer = Arc::clone(&tracer);
            // Whoever needs the ledger first waits for this open (`Tracer::ledger`); one that failed
            // is tried again, and reported, by the caller that needs it. No thread: opened on use.
            let _ = std::thread::Builder::new().name("chokepoint-ledger-open".into()).spawn(move || drop(tracer.ledger()));
        }
        let gatekeeper = Gatekeeper::new(Workspace::new(root)?, sidecar.clone(), Arc::clone(&coordination));
        let gatekeeper = Arc::new(if replay.is_some() { gatekeeper.replaying() } else { gatekeeper });
        let mut all = vec![Registration::native(
            HOOK_NAME,
            Priority::Critical,
            vec![EventKind::PreToolUse, EventKind::TaskStart, EventKind::TaskComplete, EventKind::SessionEnd],
            gatekeeper.clone(),
        )];
        all.extend(registrations);
        let files = replay.unwrap_or_else(|| ConfigFiles { hooks: sidecar.hooks_yaml(), intents: sidecar.active_intents_yaml() });
        let loaded: Arc<RwLock<Arc<Loaded>>> = Arc::default();
        let brain = {
            let (loaded, gatekeeper) = (Arc::clone(&loaded), Arc::clone(&gatekeeper));
            Arc::new(Brain::new(sidecar.clone(), Arc::clone(&coordination), move || {
                let loaded = loaded.read().unwrap_or_else(|p| p.into_inner()).clone();
                brain::facts(&loaded.hooks, &loaded.intents, gatekeeper.holders().map_err(|e| e.to_string()))
            }))
        };
        let engine = Engine {
            approvals: Approvals::new(records.then(|| approval_sink(Arc::clone(&tracer)))),
            sidecar,
            files,
            records,
            gatekeeper,
            containment: Default::default(),
            running: Default::default(),
            tracer,
            state,
            coordination,
            team: RwLock::default(),
            env,
            registrations: RwLock::new(all),
            piped: Default::default(),
            loaded,
            brain,
        };
        engine.reload();
        Ok(engine)
    }

    /// The connection to the coordination database the worktrees of the repository share
    /// (`Sidecar::coordination_db`; the serve layer keeps its registry of agents' processes there).
    pub(crate) fn coordination_db(&self) -> &Arc<StateDb> {
        &self.coordination
    }

    pub fn sidecar(&self) -> &Sidecar {
        &self.sidecar
    }

    /// The team's database this engine coordinates on, as of its last load.
    pub fn team(&self) -> Team {
        self.team.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The intent gatekeeper every chain of this engine runs first (selections, expansions, the
    /// shell scope of a session).
    pub fn gatekeeper(&self) -> &Gatekeeper {
        &self.gatekeeper
    }

    /// Re-reads the configuration files. Returns the diagnostics of this load (empty when all good).
    pub fn reload(&self) -> Vec<Diagnostic> {
        // Held to the end, and always taken before `loaded`: a concurrent `register` cannot slip in
        // between building the chains and publishing them.
        let registrations = self.registrations.read().unwrap_or_else(|p| p.into_inner());
        let previous = self.snapshot();
        let mut diagnostics = Vec::new();
        let (hooks, hooks_status) =
            load_file(&self.files.hooks, HooksConfig::parse, &previous.hooks, previous.hooks_status, &mut diagnostics);
        let (intents, intents_status) =
            load_file(&self.files.intents, IntentSet::parse, &previous.intents, previous.intents_status, &mut diagnostics);
        let hooks_good = hooks_status != FileStatus::Invalid || previous.hooks_good;
        let intents_good = intents_status != FileStatus::Invalid || previous.intents_good;
        // The brain lists hooks and intents: a reload that changed them (not the first load, which
        // every hook process does) has its section rewritten, on the brain's worker.
        let brain_stale = previous.hooks_status.is_some() && (hooks != previous.hooks || intents != previous.intents);
        self.gatekeeper.configure(intents.clone(), intents_status != FileStatus::Missing, hooks.gatekeeper.clone(), hooks.allowlists());
        self.approvals.configure(&hooks.approvals);
        let team = {
            let mut team = self.team.write().unwrap_or_else(|p| p.into_inner());
            *team = Team::resolve(&team, &hooks.coordination, self.sidecar.repo(), &|name| self.env.get(name));
            team.clone()
        };
        self.approvals.share(team_pendings(&team, &self.sidecar));
        self.tracer.follow_team(&team);
        self.gatekeeper.coordinate(team);
        let chains = Chains::build(&hooks, &registrations);
        let next = Loaded {
            chains,
            hooks,
            hooks_status: Some(hooks_status),
            intents,
            intents_status: Some(intents_status),
            diagnostics: diagnostics.clone(),
            hooks_good,
            intents_good,
        };
        *self.loaded.write().unwrap_or_else(|poisoned| poisoned.into_inner()) = Arc::new(next);
        if brain_stale {
            self.brain.refresh_later();
        }
        diagnostics
    }

    /// Adds a registered hook (see [`Registration`]) to every chain it applies to, from now on.
    pub fn register(&self, registration: Registration) {
        let mut registrations = self.registrations.write().unwrap_or_else(|p| p.into_inner());
        registrations.push(registration);
        let mut loaded = self.loaded.write().unwrap_or_else(|p| p.into_inner());
        let chains = Chains::build(&loaded.hooks, &registrations);
        *loaded = Arc::new(Loaded { chains, ..(**loaded).clone() });
    }

    pub(super) fn snapshot(&self) -> Arc<Loaded> {
        self.loaded.read().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    pub fn info(&self) -> EngineInfo {
        let loaded = self.snapshot();
        EngineInfo {
            version: crate::VERSION,
            workspace_root: self.sidecar.workspace_root().to_path_buf(),
            hooks: ConfigStatus { path: self.files.hooks.clone(), status: loaded.hooks_status.unwrap_or(FileStatus::Missing) },
            intents: ConfigStatus { path: self.files.intents.clone(), status: loaded.intents_status.unwrap_or(FileStatus::Missing) },
            hook_count: loaded.hooks.hook_count(),
            events: loaded.hooks.hooks.keys().copied().collect(),
            task_types: loaded.hooks.task_types.keys().cloned().collect(),
            intent_ids: loaded.intents.active_intents.iter().map(|i| i.id.clone()).collect(),
            diagnostics: loaded.diagnostics.clone(),
        }
    }

    /// Whether the configuration in force is the user's: each file loaded, missing, or invalid with
    /// its last good version still running. False when a file has not loaded since the engine opened
    /// (defaults stand in for it): a gate of another agent is then denied until it is fixed.
    pub fn runs_good_configuration(&self) -> bool {
        let loaded = self.snapshot();
        loaded.hooks_good && loaded.intents_good
    }

    /// The intents of the last good active_intents.yaml (none when it is missing or was never
    /// valid): what the gatekeeper judges with, for edges that show them (`chokepoint mcp`).
    pub fn intents(&self) -> IntentSet {
        self.snapshot().intents.clone()
    }

    /// For a process that exits right after judging (`chokepoint hook` alone): makes every record
    /// queued so far durable and leaves the state database's log short, after which the process may
    /// exit without dropping the engine. Dropping it (the ledger's threads joined, the database
    /// closed, everything it built freed) was measured at about 0.9 ms of a 4 ms hook process, work
    /// the operating system does at exit anyway and faster.
    pub fn before_exit(&self) -> Result<(), TraceError> {
        let flushed = self.tracer.flush();
        // The texts of writes just recorded, kept for their diffs (nothing to wait for unless this
        // process recorded a write's result with its before-image).
        self.tracer.settle_images();
        // A lesson learnt from this process's call is written before it goes (only a denial, a
        // completion or a lease change gave the brain anything to do).
        self.brain.settle(BRAIN_SETTLE);
        self.state.shorten_log();
        if !Arc::ptr_eq(&self.state, &self.coordination) {
            self.coordination.shorten_log();
        }
        flushed
    }

    /// The shared brain of this workspace (`.orchestration/CLAUDE.md`).
    pub fn brain(&self) -> &Brain {
        &self.brain
    }

    /// The Pendings of this engine (asks waiting for a human, a reviewer or a policy).
    pub fn approvals(&self) -> &Approvals {
        &self.approvals
    }

    /// The trace of this workspace: its ledger, the before-images of writes in flight.
    pub fn tracer(&self) -> &Tracer {
        &self.tracer
    }

    /// Runs a shell command of this session contained to its intent's scope (`containment::contain`):
    /// isolated by `isolator` (the `chokepoint` program) where the system allows, else observed;
    /// Landlock where the kernel has it. `Err` when the command cannot be contained or started at
    /// all; a command that ran is always a report, whatever it did.
    pub fn run_contained(
        &self,
        session: &str,
        shell: Shell,
        isolator: Option<&std::path::Path>,
        timeout: Option<Duration>,
    ) -> Result<ContainReport, EngineError> {
        let mut plan = self.gatekeeper.contain_plan(session, isolator).map_err(|e| EngineError::from(e.to_string()))?;
        let argv: Vec<String> = shell.argv.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        let cancel = Arc::new(std::sync::atomic::AtomicBool::new(false));
        plan.cancel = Some(Arc::clone(&cancel));
        self.running.lock().unwrap_or_else(|p| p.into_inner()).insert(session.to_owned(), cancel);
        let report = {
            let mut containment = self.containment.lock().unwrap_or_else(|p| p.into_inner());
            // Cancelled while it waited its turn: it still runs, and is stopped at once.
            containment.run(&plan, shell, timeout).map_err(|e| format!("cannot run the command contained: {e}"))
        };
        self.running.lock().unwrap_or_else(|p| p.into_inner()).remove(session);
        let report = report?;
        if self.sidecar.exists() {
            // Recorded and durable before the caller hears of it: never silent, also in the trace.
            let record = trace::containment_record(session, &argv, &report);
            if let Err(e) = self.tracer.append(record) {
                return Err(format!("the command ran, but its containment could not be recorded in the trace ledger: {e}").into());
            }
        }
        Ok(report)
    }

    /// Stops the contained command `session` is running (with everything it started; what it changed
    /// is judged as when it ends by itself). Returns whether one was running.
    pub fn cancel_contained(&self, session: &str) -> bool {
        match self.running.lock().unwrap_or_else(|p| p.into_inner()).get(session) {
            Some(flag) => {
                flag.store(true, std::sync::atomic::Ordering::Release);
                true
            }
            None => false,
        }
    }

    /// The piped output waiting for this session's next turn, oldest first, and empties the queue.
    pub fn drain_piped(&self, session: &str) -> Vec<Piped> {
        self.piped.drain(session)
    }

    /// The per-type agent allowlists of the last good hooks.yaml (`task_types.<type>.agents`).
    pub fn allowlists(&self) -> Allowlists {
        self.snapshot().hooks.allowlists()
    }

    /// The names of the hooks that would run for this event, in order (for `explain` and tests).
    pub fn plan(&self, event: &Event) -> Vec<String> {
        self.chain_plan(event).into_iter().filter(|(_, matches)| *matches).map(|(name, _)| name.to_string()).collect()
    }

    /// Every hook of the chain this event resolves to, in chain order, each with whether it applies
    /// to the event (its matchers). What ran is the applying ones, in this order, up to a deny.
    pub(crate) fn chain_plan(&self, event: &Event) -> Vec<(Arc<str>, bool)> {
        let loaded = self.snapshot();
        let chain = loaded.chains.resolve(event.kind, event.task_type.as_deref());
        let matching = chain.matching(event);
        chain.hooks().iter().map(|h| (Arc::clone(&h.name), matching.iter().any(|m| std::ptr::eq(*m, h)))).collect()
    }
}

/// How long a process that exits after judging waits for the brain's worker to finish what its
/// call gave it: a lesson and a rewrite take milliseconds; a stuck lock must not hold the agent.
pub(super) const BRAIN_SETTLE: std::time::Duration = std::time::Duration::from_secs(2);

/// Where an engine's Pendings are recorded: its ledger, in a governed workspace (an ungoverned one
/// records nothing, as for events). Not waited for here: an outcome is synced promptly (`enqueue`),
/// an open or an edit with the next sync. The caller that carries out what an approval allows makes
/// it durable first (the runtime flushes the trace before an approved tool call runs).
fn approval_sink(tracer: Arc<Tracer>) -> RecordSink {
    Arc::new(move |record, phase: Phase| {
        if let Ok(ledger) = tracer.ledger() {
            drop(if phase.is_outcome() { ledger.enqueue(record) } else { ledger.enqueue_lazy(record) });
        }
    })
}

/// The team's side of this engine's Pendings, when it coordinates through a team's database: its
/// asks are shared there, named by this worktree and branch.
fn team_pendings(team: &Team, sidecar: &Sidecar) -> Option<Arc<TeamPendings>> {
    let db = team.db()?;
    let origin = match sidecar.repo() {
        Some(repo) => {
            let checkout = Checkout::of(repo);
            Origin { worktree: checkout.worktree, branch: checkout.branch }
        }
        None => Origin {
            worktree: sidecar.workspace_root().file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
            branch: None,
        },
    };
    Some(Arc::new(TeamPendings::new(Arc::clone(db), origin)))
}
