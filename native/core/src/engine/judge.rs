//! The engine: one workspace's loaded configuration and the entry point that judges events.
//!
//! Invariant: bad configuration never takes effect. A reload that fails keeps the last good value of
//! that file and reports why; a file that was never good falls back to the built-in default (no
//! project hooks, no intents), which the engine reports as such rather than pretending all is well.

use crate::base::diagnostic::Diagnostic;
use crate::base::sidecar::Sidecar;
use crate::config::hooks::{HookSpec, HooksConfig};
use crate::hooks::builtin::{BuiltinSpec, DEFAULT_BUILTIN_TIMEOUT_SECS};
use crate::hooks::chain::RunContext;
use crate::hooks::chain::{Chain, ChainHook, Evaluation, HookImpl, Matcher, NativeHook, NeedsAsync};
use crate::hooks::command::CommandSpec;
use crate::hooks::priority::{DEFAULT_TIMEOUT_SECS, FailureMode, Priority};
use crate::model::event::{Event, EventKind};
use crate::scope::intents::IntentSet;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

crate::base::error::domain_error! {
    /// The engine could not do what was asked (a contained command that could not be contained,
    /// started or recorded).
    EngineError
}

/// How one configuration file stands after the last (re)load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileStatus {
    /// Not present; built-in defaults apply.
    Missing,
    /// Read and valid; this is what runs.
    Loaded,
    /// Present but invalid; the last good version (or the default) keeps running.
    Invalid,
}

impl FileStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            FileStatus::Missing => "missing",
            FileStatus::Loaded => "loaded",
            FileStatus::Invalid => "invalid",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigStatus {
    pub path: PathBuf,
    pub status: FileStatus,
}

/// A snapshot of what the engine runs, for `Show Engine Info`, the status bar and `chokepoint info`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineInfo {
    pub version: &'static str,
    pub workspace_root: PathBuf,
    pub hooks: ConfigStatus,
    pub intents: ConfigStatus,
    pub hook_count: usize,
    pub events: Vec<EventKind>,
    pub task_types: Vec<String>,
    pub intent_ids: Vec<String>,
    pub diagnostics: Vec<Diagnostic>,
}

impl EngineInfo {
    /// What the configuration in force leaves unguarded although it loads: said loudly by `config
    /// check` (a distinct exit code), `doctor` and the status bar. Today one thing: without
    /// active_intents.yaml the gatekeeper requires no intent and judges no scope (a workspace that
    /// never declared intents runs so by design; one whose file was deleted, by a person or a
    /// command, must not look healthy). A folder without `.orchestration/` has none.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        // A folder without `.orchestration/` is not governed at all: nothing was turned off there.
        if self.intents.status == FileStatus::Missing && Sidecar::new(&self.workspace_root).exists() {
            warnings.push(format!(
                "{} is missing: scope checks are off, so any agent may write anywhere in the workspace but the governance \
                 files, without selecting an intent; restore it (`git checkout -- .orchestration/active_intents.yaml`) or \
                 declare the intents work is done under",
                self.intents.path.display()
            ));
        }
        warnings
    }
}

/// A hook the embedder registers with the engine rather than the configuration: a native hook (the
/// gatekeeper, the ledger) or a host hook (a function of the extension, `HookImpl::Host(id)`).
/// Registered hooks come before configured ones in registration order, so among equal priorities they
/// run first, in the order they were registered.
#[derive(Debug, Clone)]
pub struct Registration {
    pub name: String,
    pub priority: Priority,
    pub failure: Option<FailureMode>,
    pub events: Vec<EventKind>,
    pub matcher: Matcher,
    pub hook: HookImpl,
}

impl Registration {
    pub fn native(name: impl Into<String>, priority: Priority, events: Vec<EventKind>, hook: Arc<dyn NativeHook>) -> Self {
        Registration { name: name.into(), priority, failure: None, events, matcher: Matcher::default(), hook: HookImpl::Native(hook) }
    }
}

/// Every event's chain, built once per configuration load.
///
/// Resolution for an event of a task with a type: the task type's hooks for that event if it declares
/// any, else the project's hooks for that event, else the built-in defaults (none today). Native hooks
/// are part of every chain.
#[derive(Debug, Clone, Default)]
struct Chains {
    project: HashMap<EventKind, Chain>,
    by_task_type: HashMap<String, HashMap<EventKind, Chain>>,
    natives_only: HashMap<EventKind, Chain>,
}

impl Chains {
    fn build(config: &HooksConfig, natives: &[Registration]) -> Chains {
        let native_hooks = |kind: EventKind| -> Vec<ChainHook> {
            natives
                .iter()
                .enumerate()
                .filter(|(_, n)| n.events.contains(&kind))
                .map(|(i, n)| ChainHook {
                    name: n.name.as_str().into(),
                    priority: n.priority,
                    failure: n.failure.unwrap_or(FailureMode::default_for(n.priority)),
                    matcher: n.matcher.clone(),
                    imp: n.hook.clone(),
                    registration: i,
                    pipe_output: false,
                })
                .collect()
        };
        let chain = |kind: EventKind, specs: &[HookSpec]| {
            let mut hooks = native_hooks(kind);
            let first = natives.len();
            hooks.extend(specs.iter().enumerate().filter_map(|(i, spec)| configured_hook(spec, first + i)));
            Chain::new(hooks)
        };
        Chains {
            project: config.hooks.iter().map(|(kind, specs)| (*kind, chain(*kind, specs))).collect(),
            by_task_type: config
                .task_types
                .iter()
                .map(|(name, t)| (name.clone(), t.hooks.iter().map(|(kind, specs)| (*kind, chain(*kind, specs))).collect()))
                .collect(),
            natives_only: EventKind::ALL.iter().map(|k| (*k, chain(*k, &[]))).collect(),
        }
    }

    fn resolve(&self, kind: EventKind, task_type: Option<&str>) -> &Chain {
        task_type
            .and_then(|t| self.by_task_type.get(t))
            .and_then(|by_event| by_event.get(&kind))
            .or_else(|| self.project.get(&kind))
            .or_else(|| self.natives_only.get(&kind))
            .expect("natives_only holds every event")
    }
}

/// A `deny`, `ask` or `context` rule from hooks.yaml: a fixed answer for whatever its matchers match,
/// given in-process. The fast path for guards that need no program (a process costs milliseconds).
#[derive(Debug)]
struct DeclaredRule(crate::model::decision::HookAnswer);

impl DeclaredRule {
    fn from_spec(spec: &HookSpec) -> Option<DeclaredRule> {
        use crate::model::decision::{Answer, Denial, HookAnswer};
        let answer = if let Some(d) = &spec.deny {
            Answer::Deny(Denial { reason: d.reason.clone(), remediation: d.remediation.clone(), suggested_tool: d.suggested_tool.clone() })
                .into()
        } else if let Some(reason) = &spec.ask {
            Answer::Ask { reason: reason.clone() }.into()
        } else {
            HookAnswer { answer: Answer::Allow, additional_context: Some(spec.context.clone()?) }
        };
        Some(DeclaredRule(answer))
    }
}

impl NativeHook for DeclaredRule {
    fn call(&self, _event: &Event) -> Result<crate::model::decision::HookAnswer, crate::model::decision::HookFailure> {
        Ok(self.0.clone())
    }

    fn needs_subject(&self, _event: &Event) -> bool {
        false
    }
}

fn configured_hook(spec: &HookSpec, registration: usize) -> Option<ChainHook> {
    // HooksConfig::parse has already refused invalid matchers, so this cannot fail for a loaded
    // configuration; a hook that could not be built is left out rather than guessed at.
    let matcher = Matcher::new(spec.tool.as_deref(), &spec.paths).ok()?;
    let imp = match (&spec.command, &spec.builtin) {
        (Some(command), None) => HookImpl::Command(CommandSpec {
            argv: command.clone(),
            shell: spec.shell,
            timeout: Duration::from_secs(spec.timeout.unwrap_or(DEFAULT_TIMEOUT_SECS)),
        }),
        (command, Some(builtin)) => HookImpl::Builtin(BuiltinSpec {
            name: builtin.clone(),
            command: command.clone(),
            timeout: Duration::from_secs(spec.timeout.unwrap_or(DEFAULT_BUILTIN_TIMEOUT_SECS)),
        }),
        (None, None) => HookImpl::Native(Arc::new(DeclaredRule::from_spec(spec)?)),
    };
    Some(ChainHook {
        name: spec.name.as_str().into(),
        priority: spec.priority,
        failure: spec.failure_mode(),
        matcher,
        imp,
        registration,
        pipe_output: spec.pipe_output,
    })
}

#[derive(Debug, Clone, Default)]
struct Loaded {
    hooks: HooksConfig,
    hooks_status: Option<FileStatus>,
    intents: IntentSet,
    intents_status: Option<FileStatus>,
    /// Per file, whether what runs is the user's: loaded, missing (the defaults are then what the
    /// user chose), or invalid with an earlier good version kept running. False while a file has been
    /// invalid since this engine opened: the defaults stand in for a configuration that never loaded.
    hooks_good: bool,
    intents_good: bool,
    diagnostics: Vec<Diagnostic>,
    chains: Chains,
}

/// The two configuration files an engine loads: the workspace's own, or for a replay of its ledger
/// another version of them (`engine::replay`).
#[derive(Debug, Clone)]
pub(crate) struct ConfigFiles {
    pub(crate) hooks: PathBuf,
    pub(crate) intents: PathBuf,
}

#[derive(Debug)]
pub struct Engine {
    sidecar: Sidecar,
    files: ConfigFiles,
    /// False for an engine that replays the ledger: it judges, and records nothing.
    records: bool,
    gatekeeper: Arc<crate::scope::gatekeeper::Gatekeeper>,
    // One contained command at a time per engine: two at once would each see the other's changes as
    // their own. Keeps the last snapshot, so the next command mostly costs `stat`s.
    containment: std::sync::Mutex<crate::containment::contain::Containment>,
    /// The cancel flag of each session's contained command while it runs (queued or running).
    running: std::sync::Mutex<HashMap<String, Arc<std::sync::atomic::AtomicBool>>>,
    tracer: Arc<crate::engine::trace::Tracer>,
    /// The connection to this worktree's state.db (the ledger's head, for the tracer).
    state: Arc<crate::base::sqlite::StateDb>,
    /// The connection to the coordination database every worktree of the repository shares
    /// (`Sidecar::coordination_db`): leases, expansions, lessons, agents' processes.
    coordination: Arc<crate::base::sqlite::StateDb>,
    /// The team's database this engine coordinates on (`coordination:` in hooks.yaml, or
    /// `CHOKEPOINT_COORDINATION_URL`), resolved on every load; `Off` without one.
    team: RwLock<crate::base::team::Team>,
    /// Where the team's settings read the environment (`CHOKEPOINT_COORDINATION_URL`, `PGPASSWORD`,
    /// `CHOKEPOINT_MACHINE`): the process's, or a test's ([`Engine::open_with_env`]).
    env: crate::base::team::TeamEnv,
    /// The Pendings of this engine; reconfigured from the last good hooks.yaml on every load.
    approvals: crate::approvals::Approvals,
    registrations: RwLock<Vec<Registration>>,
    piped: crate::hooks::pipe::PipeBuffer,
    // Readers take a cheap `Arc` clone; a reload swaps the whole snapshot so no caller ever sees a
    // half-applied configuration. Shared with the brain, which renders the snapshot of its time.
    loaded: Arc<RwLock<Arc<Loaded>>>,
    /// The shared brain `.orchestration/CLAUDE.md` and the worker that keeps its section true.
    brain: Arc<crate::engine::brain::Brain>,
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
        Engine::open_configured(workspace_root.as_ref(), Vec::new(), None, false, crate::base::team::TeamEnv(Arc::new(env)))
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
        Engine::open_configured(root, registrations, replay, ledger_ahead, crate::base::team::TeamEnv::process())
    }

    fn open_configured(
        root: &Path,
        registrations: Vec<Registration>,
        replay: Option<ConfigFiles>,
        ledger_ahead: bool,
        env: crate::base::team::TeamEnv,
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
        let state = Arc::new(crate::base::sqlite::StateDb::new(sidecar.state_db()));
        let coordination = match sidecar.repo() {
            Some(_) => Arc::new(
                crate::base::sqlite::StateDb::making_folder(sidecar.coordination_db(), sidecar.dir()).adopting(sidecar.state_db(), ADOPTED),
            ),
            None => Arc::clone(&state),
        };
        // First, so that the ledger opened ahead starts before anything else is read.
        let tracer = Arc::new(crate::engine::trace::Tracer::new(sidecar.clone(), Arc::clone(&state)));
        let records = replay.is_none();
        if ledger_ahead && records && tracer.governed() {
            let tracer = Arc::clone(&tracer);
            // Whoever needs the ledger first waits for this open (`Tracer::ledger`); one that failed
            // is tried again, and reported, by the caller that needs it. No thread: opened on use.
            let _ = std::thread::Builder::new().name("chokepoint-ledger-open".into()).spawn(move || drop(tracer.ledger()));
        }
        let gatekeeper = crate::scope::gatekeeper::Gatekeeper::new(
            crate::scope::canonical::Workspace::new(root)?,
            sidecar.clone(),
            Arc::clone(&coordination),
        );
        let gatekeeper = Arc::new(if replay.is_some() { gatekeeper.replaying() } else { gatekeeper });
        let mut all = vec![Registration::native(
            crate::scope::gatekeeper::HOOK_NAME,
            Priority::Critical,
            vec![EventKind::PreToolUse, EventKind::TaskStart, EventKind::TaskComplete, EventKind::SessionEnd],
            gatekeeper.clone(),
        )];
        all.extend(registrations);
        let files = replay.unwrap_or_else(|| ConfigFiles { hooks: sidecar.hooks_yaml(), intents: sidecar.active_intents_yaml() });
        let loaded: Arc<RwLock<Arc<Loaded>>> = Arc::default();
        let brain = {
            let (loaded, gatekeeper) = (Arc::clone(&loaded), Arc::clone(&gatekeeper));
            Arc::new(crate::engine::brain::Brain::new(sidecar.clone(), Arc::clone(&coordination), move || {
                let loaded = loaded.read().unwrap_or_else(|p| p.into_inner()).clone();
                crate::engine::brain::facts(&loaded.hooks, &loaded.intents, gatekeeper.holders().map_err(|e| e.to_string()))
            }))
        };
        let engine = Engine {
            approvals: crate::approvals::Approvals::new(records.then(|| approval_sink(Arc::clone(&tracer)))),
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
    pub(crate) fn coordination_db(&self) -> &Arc<crate::base::sqlite::StateDb> {
        &self.coordination
    }

    pub fn sidecar(&self) -> &Sidecar {
        &self.sidecar
    }

    /// The team's database this engine coordinates on, as of its last load.
    pub fn team(&self) -> crate::base::team::Team {
        self.team.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The intent gatekeeper every chain of this engine runs first (selections, expansions, the
    /// shell scope of a session).
    pub fn gatekeeper(&self) -> &crate::scope::gatekeeper::Gatekeeper {
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
            *team = crate::base::team::Team::resolve(&team, &hooks.coordination, self.sidecar.repo(), &|name| self.env.get(name));
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

    fn snapshot(&self) -> Arc<Loaded> {
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

    /// Runs the event's chain synchronously and combines the hooks' answers into one decision.
    ///
    /// Fails only when a hook that applies to this event cannot run synchronously (a command, builtin
    /// or host hook); the caller then uses the asynchronous entry.
    pub fn evaluate(&self, event: Event) -> Result<Evaluation, NeedsAsync> {
        self.evaluate_with(event, || Ok::<_, std::convert::Infallible>(serde_json::Value::Null)).map_err(|e| match e {
            crate::hooks::chain::SyncError::NeedsAsync(n) => n,
            crate::hooks::chain::SyncError::Subject(never) => match never {},
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
    ) -> Result<Evaluation, crate::hooks::chain::SyncError<E>> {
        if event.depth > 0 || !self.records || !self.tracer.governed() {
            let loaded = self.snapshot();
            return loaded.chains.resolve(event.kind, event.task_type.as_deref()).run_sync_with(event, subject);
        }
        if event.subject.is_null() {
            event.subject = subject().map_err(crate::hooks::chain::SyncError::Subject)?;
        }
        let judging = self.begin(&mut event);
        let mut evaluation = judging.chain().judge_sync(&mut event).map_err(crate::hooks::chain::SyncError::NeedsAsync)?;
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
    pub async fn evaluate_async(&self, event: Event, host: Option<Arc<dyn crate::hooks::chain::HostHooks>>) -> Evaluation {
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
                evaluation.durable_wait_ns = waited.elapsed().as_nanos() as u64;
                if let Some(watch) = watch {
                    watch.seen(&reply);
                }
                answer_once_recorded(kind, &mut evaluation, reply.map(drop).map_err(|e| e.to_string()));
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
                    evaluation.durable_wait_ns = waited.elapsed().as_nanos() as u64;
                    if let Some(watch) = watch {
                        watch.seen(&reply);
                    }
                    answer_once_recorded(kind, &mut evaluation, reply.map(drop).map_err(|e| e.to_string()));
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
        if crate::hooks::pipe::Delivery::for_event(kind) == crate::hooks::pipe::Delivery::NextTurn && !evaluation.piped.is_empty() {
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
        let handshake = event.tool.as_deref() == Some(crate::scope::gatekeeper::SELECT_INTENT_TOOL);
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
            may_write: matches!(
                evaluation.decision,
                crate::model::decision::Decision::Allow | crate::model::decision::Decision::Ask { .. }
            ),
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
    fn brain_watch(&self, kind: EventKind, handshake: bool, decision: &crate::model::decision::Decision) -> Option<BrainWatch> {
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

    /// For a process that exits right after judging (`chokepoint hook` alone): makes every record
    /// queued so far durable and leaves the state database's log short, after which the process may
    /// exit without dropping the engine. Dropping it (the ledger's threads joined, the database
    /// closed, everything it built freed) was measured at about 0.9 ms of a 4 ms hook process, work
    /// the operating system does at exit anyway and faster.
    pub fn before_exit(&self) -> Result<(), crate::engine::trace::TraceError> {
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
    pub fn brain(&self) -> &crate::engine::brain::Brain {
        &self.brain
    }

    /// The Pendings of this engine (asks waiting for a human, a reviewer or a policy).
    pub fn approvals(&self) -> &crate::approvals::Approvals {
        &self.approvals
    }

    /// The trace of this workspace: its ledger, the before-images of writes in flight.
    pub fn tracer(&self) -> &crate::engine::trace::Tracer {
        &self.tracer
    }

    /// Runs a shell command of this session contained to its intent's scope (`containment::contain`):
    /// isolated by `isolator` (the `chokepoint` program) where the system allows, else observed;
    /// Landlock where the kernel has it. `Err` when the command cannot be contained or started at
    /// all; a command that ran is always a report, whatever it did.
    pub fn run_contained(
        &self,
        session: &str,
        shell: crate::containment::contain::Shell,
        isolator: Option<&std::path::Path>,
        timeout: Option<Duration>,
    ) -> Result<crate::containment::contain::ContainReport, EngineError> {
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
            let record = crate::engine::trace::containment_record(session, &argv, &report);
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
    pub fn drain_piped(&self, session: &str) -> Vec<crate::hooks::chain::Piped> {
        self.piped.drain(session)
    }

    /// The per-type agent allowlists of the last good hooks.yaml (`task_types.<type>.agents`).
    pub fn allowlists(&self) -> crate::scope::claims::Allowlists {
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
    After(crate::ledger::ticket::Ticket, Option<BrainWatch>),
}

/// How long a process that exits after judging waits for the brain's worker to finish what its
/// call gave it: a lesson and a rewrite take milliseconds; a stuck lock must not hold the agent.
const BRAIN_SETTLE: std::time::Duration = std::time::Duration::from_secs(2);

/// A gate's answer the brain wants to see once its record is durable.
struct BrainWatch {
    brain: Arc<crate::engine::brain::Brain>,
    remediation: Option<String>,
}

impl BrainWatch {
    /// Hands the durable record to the brain's worker (a record that failed teaches nothing).
    fn seen(self, reply: &crate::ledger::ticket::Reply) {
        let Ok(appended) = reply else { return };
        let record = &appended.record;
        let decision = record.decision.as_ref();
        self.brain.notice(crate::engine::lessons::Noticed {
            seq: appended.seq,
            hash: appended.hash.clone(),
            time_ms: crate::base::clock::now_ms(),
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
    decision: crate::model::decision::Decision,
    outcomes: Vec<crate::model::decision::HookOutcome>,
    /// Allowed, or asked (and perhaps approved later): the write may run.
    may_write: bool,
}

impl TraceStart {
    /// Builds the record, on the ledger's writer thread: for an allowed or asked write its before-image is
    /// kept (read before the record is durable, so before the write runs), for a write's result what
    /// it changed, and the input's digest.
    fn record(self, images: &crate::engine::trace::Images, intent: Option<String>, recorded: Recorded) -> crate::ledger::Record {
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
        crate::engine::trace::evaluation_record(event, intent, &recorded.decision, &recorded.outcomes, files)
    }
}

/// Where an engine's Pendings are recorded: its ledger, in a governed workspace (an ungoverned one
/// records nothing, as for events). Not waited for here: an outcome is synced promptly (`enqueue`),
/// an open or an edit with the next sync. The caller that carries out what an approval allows makes
/// it durable first (the runtime flushes the trace before an approved tool call runs).
fn approval_sink(tracer: Arc<crate::engine::trace::Tracer>) -> crate::approvals::RecordSink {
    Arc::new(move |record, phase: crate::approvals::Phase| {
        if let Ok(ledger) = tracer.ledger() {
            drop(if phase.is_outcome() { ledger.enqueue(record) } else { ledger.enqueue_lazy(record) });
        }
    })
}

/// Loads one YAML file, keeping the previous good value when the new text is invalid.
fn load_file<T: Clone + Default>(
    path: &Path,
    parse: fn(&Path, &str) -> Result<T, Vec<Diagnostic>>,
    previous: &T,
    previous_status: Option<FileStatus>,
    diagnostics: &mut Vec<Diagnostic>,
) -> (T, FileStatus) {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (T::default(), FileStatus::Missing),
        Err(e) => {
            diagnostics.push(Diagnostic {
                file: path.to_path_buf(),
                line: 0,
                column: 0,
                code: "io",
                message: format!("cannot read file: {e}"),
            });
            return (keep(previous, previous_status), FileStatus::Invalid);
        }
    };
    match parse(path, &text) {
        Ok(value) => (value, FileStatus::Loaded),
        Err(problems) => {
            diagnostics.extend(problems);
            (keep(previous, previous_status), FileStatus::Invalid)
        }
    }
}

/// The value that keeps running after a failed load: the last good one if there ever was one.
fn keep<T: Clone + Default>(previous: &T, previous_status: Option<FileStatus>) -> T {
    match previous_status {
        Some(FileStatus::Loaded | FileStatus::Invalid) => previous.clone(),
        _ => T::default(),
    }
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
        && !matches!(evaluation.decision, crate::model::decision::Decision::Deny(_))
    {
        evaluation.decision = crate::model::decision::Decision::Deny(crate::model::decision::Denial::new(format!(
            "the action could not be recorded in the trace ledger: {e}"
        )));
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

/// The team's side of this engine's Pendings, when it coordinates through a team's database: its
/// asks are shared there, named by this worktree and branch.
fn team_pendings(team: &crate::base::team::Team, sidecar: &Sidecar) -> Option<Arc<crate::approvals::team::TeamPendings>> {
    let db = team.db()?;
    let origin = match sidecar.repo() {
        Some(repo) => {
            let checkout = crate::scope::leases::Checkout::of(repo);
            crate::approvals::team::Origin { worktree: checkout.worktree, branch: checkout.branch }
        }
        None => crate::approvals::team::Origin {
            worktree: sidecar.workspace_root().file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
            branch: None,
        },
    };
    Some(Arc::new(crate::approvals::team::TeamPendings::new(Arc::clone(db), origin)))
}
