//! The intent gatekeeper: the critical native hook that makes an agent declare which intent it works
//! on before it may write, and then lets it write only inside that intent's owned scope.
//!
//! Order of the checks, most fundamental first, so the agent always hears the most useful reason:
//! 1. every path a write names is made canonical (canonical.rs); one that lands outside the workspace,
//!    or cannot be judged, is refused;
//! 2. the governance files (`model::governance`: `.orchestration/`, every agent's hooks, MCP servers and
//!    settings) are never writable, and the refusal says who reads the file;
//! 3. a session that has not selected an intent cannot write (the handshake, which takes the intent's
//!    lease in the coordination database: one holder at a time across processes and worktrees);
//! 4. a write outside the selected intent's `owned_scope`, and outside what was approved for this
//!    session through `scope_expansion_request`, is refused with that tool suggested.
//!
//! Where a session's selection lives: in the lease table, shared by every process on the workspace.
//! This hook keeps a copy per session for at most [`RECHECK`], so the hot path is a map look-up and
//! a glob match, and a release or takeover seen by another process is honoured within that time.
//! A lease the session yielded at the end of its last turn (`scope::leases`: free to take, still its
//! own) is renewed by the session's next call if nobody took it ([`Gatekeeper::acting`]); if someone
//! did, the session's write is told it lost it, to whom, and what to do.
//! Intent gating applies when the workspace has an `active_intents.yaml`; governance files are
//! protected whether it has one or not.
//!
//! Which lease table: the one the engine's last load chose ([`Gatekeeper::coordinate`]). Without a
//! team's database, this repository's SQLite file (`scope::leases`); with one, its PostgreSQL
//! tables (`scope::team_leases`, `scope::team_expansions`), through the same [`LeaseStore`] and
//! [`ExpansionStore`] so both judge alike. A team setting that cannot work denies every write that
//! needs a lease with its message. A database that cannot be reached denies the same way, unless
//! `coordination.unreachable: local`: then this machine's SQLite file serves meanwhile and every
//! answer says so (a denial's reason, an allowance's added context). Each operation tries the team's
//! database first, so it is used again as soon as it answers; leases taken locally meanwhile are not
//! copied to it (another machine may have taken the intent meanwhile: the session selects again).
//! A reload that changes the database forgets every cached selection.
//!
//! The handshake (`select_active_intent`) is refused to an agent the intent's `task_type` does not
//! allow (`scope::claims`). A session's write without a selection is denied with what happened to
//! its lease when a person revoked it (`Gatekeeper::unselected`: who and why, whether the intent is
//! free now, and to ask the person before selecting it again), not with "select an intent first"; the
//! revocation is read only on that deny path, never on the hot path. The governance refusal and the
//! order above are pinned by `tests/gatekeeper.rs`; the team's database by `tests/team_leases.rs`
//! (100 rounds of two machines racing: exactly one holder each) and the CLI's `tests/team.rs`.

use crate::base::sidecar::Sidecar;
use crate::base::sqlite::StateDb;
use crate::base::team::{Team, TeamDb, TeamError};
use crate::hooks::chain::NativeHook;
use crate::model::decision::{Answer, Denial, HookAnswer, HookFailure};
use crate::model::event::{Event, EventKind, ResolvedPath};
use crate::model::external_events::Agent;
use crate::model::governance;
use crate::scope::canonical::{Names, PathRefusal, Workspace};
use crate::scope::claims::Allowlists;
use crate::scope::error::ScopeError;
use crate::scope::expansion::{Expansion, ExpansionStore, Expansions};
use crate::scope::intents::{Intent, IntentSet, IntentStatus};
use crate::scope::leases::{AcquireError, Holder, Lease, LeaseError, LeaseStore, Leases, Revocation, Tenure};
use crate::scope::patch;
use crate::scope::settings::GatekeeperConfig;
use crate::scope::team_expansions::TeamExpansions;
use crate::scope::team_leases::TeamLeases;
use crate::scope::tools::{ToolRole, ToolTable};
use globset::{GlobSet, GlobSetBuilder};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};
use std::time::{Duration, Instant};

/// The gatekeeper's name in chains, outcomes and the trace.
pub const HOOK_NAME: &str = "gatekeeper";

// The handshake's tools and the governance files are the model's vocabulary: containment, below
// this layer, protects the same files and names the same tool.
pub use crate::model::governance::{SCOPE_EXPANSION_TOOL, SELECT_INTENT_TOOL};

/// How long a session's selection is trusted without asking the lease table again.
pub const RECHECK: Duration = Duration::from_secs(1);

/// What the gatekeeper judges with: the intents and settings of the last good configuration, with
/// every intent's scope compiled once per load rather than once per write.
#[derive(Debug)]
struct GateConfig {
    /// False when the workspace has no active_intents.yaml: intent gating is off.
    gating: bool,
    intents: IntentSet,
    scopes: HashMap<String, (usize, GlobSet)>,
    tools: ToolTable,
    settings: GatekeeperConfig,
    /// Who may select an intent whose `task_type` has an allowlist.
    claims: Allowlists,
}

impl GateConfig {
    fn new(intents: IntentSet, gating: bool, settings: GatekeeperConfig, claims: Allowlists, names: Names) -> GateConfig {
        let tools = settings.tool_table();
        let scopes = intents
            .active_intents
            .iter()
            .enumerate()
            .map(|(i, intent)| (intent.id.clone(), (i, glob_set(&intent.owned_scope, names))))
            .collect();
        GateConfig { gating, intents, scopes, tools, settings, claims }
    }

    /// What the event's tool does, for the agent that called it, when it writes: a write tool, a
    /// patch, a shell command that carries a patch, or a tool the table does not know whose input
    /// names a path (judged as a write of it, `tools::unknown_tool_role`). The handshake's tools
    /// are judged by their own rules, and a `Read` row writes nothing.
    fn write_role<'a>(&'a self, event: &Event) -> Option<Cow<'a, ToolRole>> {
        let tool = event.tool.as_deref()?;
        if tool == SELECT_INTENT_TOOL || tool == SCOPE_EXPANSION_TOOL {
            return None;
        }
        let agent = event.ids.agent.as_deref().and_then(Agent::from_id);
        let Some(role) = self.tools.role(agent, tool) else {
            return crate::scope::tools::unknown_tool_role(&event.subject).map(Cow::Owned);
        };
        match role {
            ToolRole::Shell(field) => event
                .subject
                .get(field)
                .or(Some(&event.subject))
                .and_then(|c| c.as_str())
                .is_some_and(patch::contains_patch)
                .then_some(Cow::Borrowed(role)),
            ToolRole::Read => None,
            _ => Some(Cow::Borrowed(role)),
        }
    }

    fn intent(&self, id: &str) -> Option<(&Intent, &GlobSet)> {
        self.scopes.get(id).map(|(i, set)| (&self.intents.active_intents[*i], set))
    }

    fn lease_ttl(&self) -> Duration {
        Duration::from_secs(self.settings.lease_seconds)
    }
}

/// A session's selected intent as last read from the lease table, with its approved expansions.
#[derive(Debug, Clone)]
struct Selection {
    intent: String,
    expansions: Vec<String>,
    expansion_set: GlobSet,
    expires_at_ms: u64,
    checked: Instant,
    /// Set when the selection was read from this machine's state because the team's database could
    /// not be reached (`coordination.unreachable: local`): what every answer then says.
    note: Option<String>,
}

/// The stores the last load chose: this repository's SQLite file (`Off`), a team's database, or a
/// team setting that cannot work.
#[derive(Debug, Clone, Default)]
enum Coordination {
    #[default]
    Off,
    On {
        db: Arc<TeamDb>,
        leases: Arc<TeamLeases>,
        expansions: Arc<TeamExpansions>,
    },
    Broken(TeamError),
}

impl Coordination {
    fn same(&self, other: &Coordination) -> bool {
        match (self, other) {
            (Coordination::Off, Coordination::Off) => true,
            (Coordination::On { db: a, .. }, Coordination::On { db: b, .. }) => Arc::ptr_eq(a, b),
            (Coordination::Broken(a), Coordination::Broken(b)) => a == b,
            _ => false,
        }
    }
}

/// What the gatekeeper coordinates on, as of its last operation: for the status bar and the binding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoordinationState {
    /// This repository's own SQLite file: no team's database is configured.
    Off,
    /// The team's database, as its URL shows without a password, for a repository, from a machine.
    Team { database: String, namespace: String, machine: String },
    /// The team's database could not be reached at the last operation, and this machine coordinates
    /// alone meanwhile (`coordination.unreachable: local`): the note its answers carry.
    LocalFallback { database: String, cause: String },
    /// The team's setting cannot work: every write that needs a lease is denied with this.
    Broken { message: String },
}

// What the status bar and the page call each state (the binding's `CoordinationModeName`).
crate::base::names::names!(CoordinationState {
    Self::Off => "off",
    Self::Team { .. } => "team",
    Self::LocalFallback { .. } => "local-fallback",
    Self::Broken { .. } => "broken",
});

/// Where one operation ran: the team's database, or this machine's SQLite file (with the note to
/// give every answer when that was a fallback).
#[derive(Clone)]
enum Place {
    Local(Option<String>),
    Team(Arc<TeamLeases>, Arc<TeamExpansions>),
}

impl Place {
    fn note(&self) -> Option<&str> {
        match self {
            Place::Local(note) => note.as_deref(),
            Place::Team(..) => None,
        }
    }
}

/// A failure of a lease operation that may be the team's database being out of reach.
trait StoreFailure: From<LeaseError> {
    /// The team's database's failure, when it could not be reached.
    fn unreachable(&self) -> Option<&TeamError>;
}

impl StoreFailure for LeaseError {
    fn unreachable(&self) -> Option<&TeamError> {
        match self {
            LeaseError::Team(e) if e.is_unreachable() => Some(e),
            _ => None,
        }
    }
}

impl StoreFailure for AcquireError {
    fn unreachable(&self) -> Option<&TeamError> {
        match self {
            AcquireError::Store(e) => e.unreachable(),
            _ => None,
        }
    }
}

/// What every answer says while the team's database cannot be reached and this machine coordinates
/// alone.
fn local_note(error: &TeamError) -> String {
    let why = match error {
        TeamError::Unreachable { target, cause } => format!("the team's database `{target}` cannot be reached ({cause})"),
        TeamError::Deadline { target, .. } => format!("the team's database `{target}` does not answer"),
        other => other.to_string(),
    };
    format!(
        "coordinating on this machine alone: {why}, and coordination.unreachable is `local`; other machines' leases are not \
         seen until it answers again"
    )
}

/// A path a write names, and what the canonicaliser made of it (for `chokepoint explain`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JudgedPath {
    pub raw: String,
    pub canonical: Result<String, PathRefusal>,
}

/// What a contained shell command may change: the session's intent, its scope and approved
/// expansions. The shell containment asks [`ShellScope::allows`] for every changed path.
#[derive(Debug, Clone)]
pub struct ShellScope {
    pub intent: Option<String>,
    /// The intent's owned scope followed by the session's approved expansions.
    pub globs: Vec<String>,
    set: GlobSet,
    governance: GlobSet,
}

impl ShellScope {
    /// Whether a shell command may leave `rel` (workspace-relative, `/`-separated) changed.
    pub fn allows(&self, rel: &str) -> bool {
        !self.governance.is_match(rel) && self.set.is_match(rel)
    }
}

#[derive(Debug)]
pub struct Gatekeeper {
    workspace: Workspace,
    sidecar: Sidecar,
    state: Arc<StateDb>,
    governance: GlobSet,
    config: RwLock<Arc<GateConfig>>,
    // Opened on first use: judging a read-only workspace, or one nobody selects intents in, creates
    // no database.
    leases: OnceLock<Result<Arc<Leases>, String>>,
    expansions: OnceLock<Result<Arc<Expansions>, ScopeError>>,
    /// The team's database, when one coordinates this repository across machines (each load's).
    team: RwLock<Coordination>,
    /// This machine's name for leases taken without a team's database (with one, the database's).
    machine: OnceLock<String>,
    /// The note of the last operation that fell back to this machine's state; cleared by one the
    /// team's database served.
    fallback: RwLock<Option<String>>,
    // Shared, not cloned, on the hot path: a selection holds a compiled glob set.
    selections: RwLock<HashMap<String, Arc<Selection>>>,
    /// Set for a replay of the ledger (`engine::replay`): the session's selection is the intent the
    /// record holds (`Event::ids.intent`), with the expansions approved for it by the record's time,
    /// and the lease table is never read or written.
    replay: Option<ReplayClock>,
}

/// The time of the record a replaying gatekeeper judges (unix ms): expansions approved after it did
/// not exist when the call was made. One record at a time: a replay judges its records in order.
#[derive(Debug, Default)]
pub(crate) struct ReplayClock(std::sync::atomic::AtomicU64);

impl ReplayClock {
    pub(crate) fn set(&self, at_ms: u64) {
        self.0.store(at_ms, std::sync::atomic::Ordering::Release);
    }

    fn get(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::Acquire)
    }
}

impl Gatekeeper {
    /// A gatekeeper for `workspace`, with intent gating off until [`Gatekeeper::configure`] gives it
    /// intents; its leases and expansions are kept on `state`, the connection the engine shares
    /// between its stores.
    pub(crate) fn new(workspace: Workspace, sidecar: Sidecar, state: Arc<StateDb>) -> Gatekeeper {
        Gatekeeper {
            workspace,
            sidecar,
            state,
            governance: governance::governance_set(),
            config: RwLock::new(Arc::new(GateConfig::new(
                IntentSet::default(),
                false,
                GatekeeperConfig::default(),
                Allowlists::default(),
                Names::default(),
            ))),
            leases: OnceLock::new(),
            expansions: OnceLock::new(),
            team: RwLock::default(),
            machine: OnceLock::new(),
            fallback: RwLock::default(),
            selections: RwLock::default(),
            replay: None,
        }
    }

    /// A gatekeeper for a replay of the ledger: it judges with the intent each record holds and
    /// takes, renews and releases no lease.
    pub(crate) fn replaying(self) -> Gatekeeper {
        Gatekeeper { replay: Some(ReplayClock::default()), ..self }
    }

    /// The clock of a replaying gatekeeper (`None` for a live one).
    pub(crate) fn replay_clock(&self) -> Option<&ReplayClock> {
        self.replay.as_ref()
    }

    /// The selection a write or an expansion request is judged with: the lease table's, or in a replay
    /// the intent the record holds with the expansions approved for it by the record's time.
    fn selection_of(&self, event: &Event, session: &str, config: &GateConfig) -> Result<Option<Arc<Selection>>, String> {
        let Some(clock) = &self.replay else { return self.selection(session, config, true) };
        let Some(intent) = event.ids.intent.clone() else { return Ok(None) };
        let at = clock.get();
        // A workspace without a state database approved nothing; a replay does not create one.
        let approved = if self.state.path().exists() { self.expansion_store()?.list(Some(session))? } else { Vec::new() };
        // A replay reads this machine's approvals (a team's are not replayed yet).
        let expansions: Vec<String> =
            approved.into_iter().filter(|e| e.intent == intent && e.approved_at_ms <= at).flat_map(|e| e.paths).collect();
        Ok(Some(Arc::new(Selection {
            expansion_set: glob_set(&expansions, self.workspace.names()),
            expansions,
            intent,
            expires_at_ms: u64::MAX,
            checked: Instant::now(),
            note: None,
        })))
    }

    /// Takes the intents and settings of a (re)load. `gating` is false when the workspace has no
    /// active_intents.yaml at all.
    /// Takes the team's database of a (re)load (`Team::Off`: this repository's SQLite file). A
    /// different choice than before forgets every cached selection: it was read from the other store.
    pub fn coordinate(&self, team: Team) {
        let next = match team {
            Team::Off => Coordination::Off,
            Team::Broken(e) => Coordination::Broken(e),
            Team::On(db) => {
                let current = self.team.read().unwrap_or_else(|p| p.into_inner()).clone();
                match current {
                    // The same handle: keep its stores (and what they migrated).
                    Coordination::On { db: old, leases, expansions } if Arc::ptr_eq(&old, &db) => {
                        Coordination::On { db: old, leases, expansions }
                    }
                    _ => Coordination::On {
                        leases: Arc::new(TeamLeases::new(Arc::clone(&db))),
                        expansions: Arc::new(TeamExpansions::new(Arc::clone(&db))),
                        db,
                    },
                }
            }
        };
        let mut team = self.team.write().unwrap_or_else(|p| p.into_inner());
        if !team.same(&next) {
            self.selections.write().unwrap_or_else(|p| p.into_inner()).clear();
            *self.fallback.write().unwrap_or_else(|p| p.into_inner()) = None;
        }
        *team = next;
    }

    /// What this gatekeeper coordinates on, as of its last operation.
    pub fn coordination(&self) -> CoordinationState {
        match &*self.team.read().unwrap_or_else(|p| p.into_inner()) {
            Coordination::Off => CoordinationState::Off,
            Coordination::Broken(e) => CoordinationState::Broken { message: e.to_string() },
            Coordination::On { db, .. } => match self.fallback.read().unwrap_or_else(|p| p.into_inner()).clone() {
                Some(cause) => CoordinationState::LocalFallback { database: db.shown().to_owned(), cause },
                None => CoordinationState::Team {
                    database: db.shown().to_owned(),
                    namespace: db.namespace().to_owned(),
                    machine: db.machine().to_owned(),
                },
            },
        }
    }

    /// This machine's name, as leases record it.
    fn machine(&self) -> String {
        match &*self.team.read().unwrap_or_else(|p| p.into_inner()) {
            Coordination::On { db, .. } => db.machine().to_owned(),
            _ => self.machine.get_or_init(|| crate::base::team::machine_name(&Team::process_env)).clone(),
        }
    }

    /// Runs `op` on the lease table the last load chose: this machine's SQLite file, or the team's
    /// database; on a team setting that cannot work, its error; on a database that cannot be
    /// reached, its error, or with `coordination.unreachable: local` this machine's table with the
    /// note every answer then carries. `Err` only when this machine's table cannot be opened.
    fn leased<T, E: StoreFailure>(&self, op: impl Fn(&dyn LeaseStore) -> Result<T, E>) -> Result<(Result<T, E>, Place), String> {
        let team = self.team.read().unwrap_or_else(|p| p.into_inner()).clone();
        match team {
            Coordination::Off => Ok((op(self.leases()?), Place::Local(None))),
            Coordination::Broken(e) => Ok((Err(E::from(LeaseError::Team(e))), Place::Local(None))),
            Coordination::On { db, leases, expansions } => {
                let result = op(&*leases);
                let note = match &result {
                    Err(e) if db.unreachable() == crate::base::team::Unreachable::Local => e.unreachable().map(local_note),
                    _ => None,
                };
                let mut fallback = self.fallback.write().unwrap_or_else(|p| p.into_inner());
                fallback.clone_from(&note);
                drop(fallback);
                match note {
                    Some(note) => Ok((op(self.leases()?), Place::Local(Some(note)))),
                    None => Ok((result, Place::Team(leases, expansions))),
                }
            }
        }
    }

    /// The approved expansions where a lease operation ran.
    fn expansions_at(&self, place: &Place) -> Result<Arc<dyn ExpansionStore>, ScopeError> {
        match place {
            Place::Local(_) => Ok(self.expansion_store()? as Arc<dyn ExpansionStore>),
            Place::Team(_, expansions) => Ok(Arc::clone(expansions) as Arc<dyn ExpansionStore>),
        }
    }

    pub fn configure(&self, intents: IntentSet, gating: bool, settings: GatekeeperConfig, claims: Allowlists) {
        *self.config.write().unwrap_or_else(|p| p.into_inner()) =
            Arc::new(GateConfig::new(intents, gating, settings, claims, self.workspace.names()));
    }

    fn config(&self) -> Arc<GateConfig> {
        self.config.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    fn leases(&self) -> Result<&Leases, String> {
        self.leases
            .get_or_init(|| {
                self.sidecar.ignore_runtime_files();
                Leases::on(Arc::clone(&self.state), crate::base::clock::now_ms)
                    .map(Arc::new)
                    .map_err(|e| format!("cannot open the intent lock database: {e}"))
            })
            .as_ref()
            .map(|l| &**l)
            .map_err(Clone::clone)
    }

    fn expansion_store(&self) -> Result<Arc<Expansions>, ScopeError> {
        self.expansions.get_or_init(|| Expansions::on(Arc::clone(&self.state)).map(Arc::new)).as_ref().map(Arc::clone).map_err(Clone::clone)
    }

    fn forget(&self, session: &str) {
        self.selections.write().unwrap_or_else(|p| p.into_inner()).remove(session);
    }

    /// The intent a session holds, from the cache when it is fresh, else from the lease table (and
    /// then renewed when half its time is gone: holders renew while they are active). With
    /// `resume` (the session itself is acting), a lease whose time is up and that nobody took since
    /// (its turn ended and it yielded, or it lapsed) is renewed: the same tenure goes on. Without it
    /// (someone looking: `chokepoint explain`, the binding), only a live lease counts.
    fn selection(&self, session: &str, config: &GateConfig, resume: bool) -> Result<Option<Arc<Selection>>, String> {
        if let Some(s) = self.selections.read().unwrap_or_else(|p| p.into_inner()).get(session)
            && s.checked.elapsed() < RECHECK
            && s.expires_at_ms > crate::base::clock::now_ms()
        {
            return Ok(Some(Arc::clone(s)));
        }
        let ttl = config.lease_ttl();
        // The lease and, when half its time is gone, its renewal (holders renew while they are
        // active), in one operation: a fallback to this machine's table takes both from it. The
        // expiry is compared with the time the store answers in (the database's, for a team).
        let (found, place) = self.leased(|leases| -> Result<Option<(Lease, u64)>, AcquireError> {
            let (lease, now) = match leases.tenure(session)? {
                (Tenure::Live(lease), now) => (lease, now),
                (Tenure::Idle(idle), _) if resume => match leases.renew(&idle.intent, session, ttl) {
                    Ok(renewed) => {
                        let now = renewed.renewed_at_ms;
                        return Ok(Some((renewed, now)));
                    }
                    // Taken (or released) between the read and the renewal: the session holds
                    // nothing, and its write is told why (`unselected`).
                    Err(AcquireError::Store(e)) => return Err(AcquireError::Store(e)),
                    Err(_) => return Ok(None),
                },
                _ => return Ok(None),
            };
            if lease.expires_at_ms.saturating_sub(now) < (ttl.as_millis() as u64) / 2 {
                let renewed = leases.renew(&lease.intent, session, ttl)?;
                let now = renewed.renewed_at_ms;
                return Ok(Some((renewed, now)));
            }
            Ok(Some((lease, now)))
        })?;
        let Some((lease, now)) = found.map_err(|e| e.to_string())? else {
            self.forget(session);
            return Ok(None);
        };
        let expansions = self.expansions_at(&place)?.globs(session, &lease.intent)?;
        let selection = Arc::new(Selection {
            expansion_set: glob_set(&expansions, self.workspace.names()),
            expansions,
            intent: lease.intent,
            // Kept for at most RECHECK on this machine's clock: a team's lease's expiry is on the
            // database's, and compared with ours only through the lease's own remaining time.
            expires_at_ms: crate::base::clock::now_ms().saturating_add(lease.expires_at_ms.saturating_sub(now)),
            checked: Instant::now(),
            note: place.note().map(str::to_owned),
        });
        self.selections.write().unwrap_or_else(|p| p.into_inner()).insert(session.to_owned(), Arc::clone(&selection));
        Ok(Some(selection))
    }

    /// The intent a session selected, if any (as every process on the workspace sees it). A lease
    /// whose time is up counts as none here: looking does not renew it.
    pub fn selected(&self, session: &str) -> Option<String> {
        self.selection(session, &self.config(), false).ok().flatten().map(|s| s.intent.clone())
    }

    /// The intent of a session that is acting now (the engine judging one of its events): a lease
    /// it yielded at the end of its last turn, or that lapsed, is renewed if nobody took it since.
    pub(crate) fn acting(&self, session: &str) -> Option<String> {
        self.selection(session, &self.config(), true).ok().flatten().map(|s| s.intent.clone())
    }

    /// The end of a turn of `session` that its completion gate let finish: its lease yields
    /// (`scope::leases`' module doc), free for another session to take at once and renewed by this
    /// session's next call if nobody did. Returns how many leases yielded.
    pub fn yield_turn(&self, session: &str) -> Result<usize, ScopeError> {
        self.forget(session);
        if self.is_local() && !self.state.path().exists() {
            return Ok(0);
        }
        let (yielded, _) = self.leased(|leases| leases.yield_session(session))?;
        // A call judged while the lease yielded may have cached the selection again.
        self.forget(session);
        yielded.map_err(|e| e.to_string().into())
    }

    /// Leases whose time is up but whose holders may renew them, because nobody took the intents
    /// since (their turns ended, or they lapsed): free to take, by intent.
    pub fn idle_holders(&self) -> Result<Vec<Lease>, ScopeError> {
        if self.is_local() && !self.state.path().exists() {
            return Ok(Vec::new());
        }
        let (idle, _) = self.leased(|leases| leases.idle())?;
        idle.map_err(|e| e.to_string().into())
    }

    /// Releases whatever intent the session holds (the end of a task or session, or a human's
    /// `chokepoint intent release`). Returns how many leases were released.
    pub fn release(&self, session: &str) -> Result<usize, ScopeError> {
        self.forget(session);
        let (released, _) = self.leased(|leases| leases.release_session(session))?;
        released.map_err(|e| e.to_string().into())
    }

    /// A person takes the session's lease away (`chokepoint sessions revoke`, the sidebar's Revoke).
    /// This process forgets the session's selection at once; another process that cached it (a live
    /// engine serving the session's hooks) asks the lease table again within [`RECHECK`], so the
    /// session's next write after that bound is denied with the revocation. `None` when the session
    /// held nothing.
    pub fn revoke(&self, session: &str, by: &str, reason: Option<&str>) -> Result<Option<Revocation>, ScopeError> {
        self.forget(session);
        let (revoked, _) = self.leased(|leases| leases.revoke(session, by, reason))?;
        let revoked = revoked.map_err(|e| ScopeError::from(e.to_string()))?;
        // A write judged while the revocation was being made may have cached the selection again.
        self.forget(session);
        Ok(revoked)
    }

    /// Revocations sessions have not answered yet (by selecting an intent again), newest first.
    pub fn revocations(&self) -> Result<Vec<Revocation>, ScopeError> {
        if self.is_local() && !self.state.path().exists() {
            return Ok(Vec::new());
        }
        let (revocations, _) = self.leased(|leases| leases.revocations())?;
        revocations.map_err(|e| e.to_string().into())
    }

    /// Whether the last load chose this repository's SQLite file (no team's database).
    fn is_local(&self) -> bool {
        matches!(*self.team.read().unwrap_or_else(|p| p.into_inner()), Coordination::Off)
    }

    /// Why a session that holds no intent cannot write: its lease was revoked by a person (said with
    /// who, when and why, and what to do), else another session took it over after its time was up
    /// (its turn ended, or it lapsed), else it never selected one.
    fn unselected(&self, session: &str, config: &GateConfig, generic: impl FnOnce() -> Answer, note: &mut Option<String>) -> Answer {
        let found = self.leased(|leases| -> Result<_, LeaseError> {
            let Some(revocation) = leases.revocation(session)? else {
                return Ok(match leases.tenure(session)? {
                    (Tenure::Lost(by), now) => Err((by, now)),
                    _ => Ok(None),
                });
            };
            let holder = leases.get(&revocation.intent);
            Ok(Ok(Some((revocation, holder))))
        });
        let (found, place) = match found {
            Ok(found) => found,
            Err(e) => return deny(&format!("cannot tell which intent this session holds: {e}"), None),
        };
        *note = place.note().map(str::to_owned);
        let (revocation, holder) = match found {
            Ok(Ok(Some(found))) => found,
            Ok(Ok(None)) => return generic(),
            Ok(Err((by, now))) => {
                let lost = AcquireError::Lost { session: session.to_owned(), by: Box::new(by.clone()) };
                // Point at the other intents, not at the one just lost.
                let others = IntentSet {
                    active_intents: config.intents.active_intents.iter().filter(|i| i.id != by.intent).cloned().collect(),
                    ..config.intents.clone()
                };
                // The taker's own turn may have ended since: then the intent is free to take again,
                // which "wait until it is released" would hide.
                let (reason, next) = if by.expires_at_ms <= now {
                    (
                        format!("{lost}; that session's turn has ended since, so the intent is free to take now"),
                        format!(
                            "Call {SELECT_INTENT_TOOL}(\"{}\") again to take it back if this work should go on under it (session `{}` is then \
                             told it lost it), or select another intent ({}).",
                            by.intent,
                            by.session,
                            available(&others)
                        ),
                    )
                } else {
                    (
                        lost.to_string(),
                        format!(
                            "Do not write under `{}` any more. Call {SELECT_INTENT_TOOL} with another intent ({}), or wait until session `{}` \
                             is done with this one (its turn ends) and select it again.",
                            by.intent,
                            available(&others),
                            by.session
                        ),
                    )
                };
                return Answer::Deny(Denial { reason, remediation: Some(next), suggested_tool: Some(SELECT_INTENT_TOOL.to_owned()) });
            }
            Err(e) => return deny(&format!("cannot tell which intent this session holds: {e}"), None),
        };
        let now = match holder {
            Ok(Some(lease)) => format!("intent `{}` is held by session `{}` now", revocation.intent, lease.session),
            Ok(None) if config.intent(&revocation.intent).is_some() => format!("intent `{}` is free now", revocation.intent),
            Ok(None) => format!("intent `{}` is no longer declared; {}", revocation.intent, available(&config.intents)),
            Err(e) => format!("whether intent `{}` is free cannot be read: {e}", revocation.intent),
        };
        Answer::Deny(Denial {
            reason: format!("{revocation}; this session holds no intent and may not write; {now}"),
            remediation: Some(format!(
                "Stop writing and ask the person who revoked the lease before going on. If they agree, call \
                 {SELECT_INTENT_TOOL}(\"{}\") again (it works while the intent is free), then retry the write.",
                revocation.intent
            )),
            suggested_tool: Some(SELECT_INTENT_TOOL.to_owned()),
        })
    }

    fn select(&self, event: &Event, config: &GateConfig) -> HookAnswer {
        let Some(session) = &event.ids.session else {
            return deny("select_active_intent needs a session id", None).into();
        };
        let id = event.subject.get("intent_id").and_then(|v| v.as_str()).unwrap_or_default();
        if !config.gating {
            return deny("this workspace declares no intents (.orchestration/active_intents.yaml is missing)", None).into();
        }
        let Some((intent, _)) = config.intent(id) else {
            return deny(
                &format!("there is no intent `{id}`; {}", available(&config.intents)),
                Some("Call select_active_intent with one of the listed intent ids."),
            )
            .into();
        };
        if matches!(intent.status, IntentStatus::Blocked | IntentStatus::Completed) {
            return deny(&format!("intent `{id}` is {} and takes no work; {}", intent.status.as_str(), available(&config.intents)), None)
                .into();
        }
        // Selecting an intent of a task type claims a task of that type: the same check, and the same
        // refusal, as `chokepoint task claim`.
        if let Some(task_type) = &intent.task_type
            && let Err(refusal) = config.claims.check(task_type, event.ids.agent.as_deref())
        {
            // Point at the intents this agent may select, not at every intent.
            let open = IntentSet {
                active_intents: config
                    .intents
                    .active_intents
                    .iter()
                    .filter(|i| i.task_type.as_deref().is_none_or(|t| config.claims.check(t, event.ids.agent.as_deref()).is_ok()))
                    .cloned()
                    .collect(),
                ..config.intents.clone()
            };
            let remediation = format!(
                "Intent `{id}` is a task of type `{task_type}`. Select an intent this agent may work on ({}), or ask a person to add \
                 the agent to the type's `agents` in hooks.yaml.",
                available(&open)
            );
            return deny(&refusal.to_string(), Some(&remediation)).into();
        }
        if self.replay.is_some() {
            // Whether another session held the intent is a fact of that moment, not of the policy:
            // the record says whether the lease was taken (its intent is the one selected).
            return if event.ids.intent.as_deref() == Some(id) {
                HookAnswer { answer: Answer::Allow, additional_context: Some(intent_context(intent)) }
            } else {
                deny(&format!("intent `{id}` was not taken when this call was made (a replay takes no lease)"), None).into()
            };
        }
        // Where the session works, said to whoever is refused the intent (the branch is read now: a
        // checkout may have switched it since the engine opened).
        let checkout = self.sidecar.repo().map(crate::scope::leases::Checkout::of);
        let holder = Holder { session: session.clone(), agent: event.ids.agent.clone(), checkout, machine: Some(self.machine()) };
        let ttl = config.lease_ttl();
        let (taken, place) = match self.leased(|leases| leases.acquire(id, &holder, ttl)) {
            Ok(taken) => taken,
            Err(e) => return deny(&e, None).into(),
        };
        noted(self.selected_answer(taken, id, intent, session, config, &place), place.note())
    }

    /// The handshake's answer once the take ran at `place`.
    fn selected_answer(
        &self,
        taken: Result<Lease, AcquireError>,
        id: &str,
        intent: &Intent,
        session: &str,
        config: &GateConfig,
        place: &Place,
    ) -> HookAnswer {
        match taken {
            Ok(_) => {
                self.forget(session);
                HookAnswer { answer: Answer::Allow, additional_context: Some(intent_context(intent)) }
            }
            // Another live session holds it: say who and since when, and how to go on. Never wait.
            Err(held @ AcquireError::Held(_)) => Answer::Deny(Denial {
                reason: held.to_string(),
                remediation: Some({
                    // Point at what is free now, not at what is held (this one included).
                    let listed = match place {
                        Place::Local(_) => self.leases().ok().and_then(|l| l.list().ok()),
                        Place::Team(leases, _) => leases.list().ok(),
                    };
                    let held: Vec<String> = listed.unwrap_or_default().into_iter().map(|l| l.intent).collect();
                    let free = IntentSet {
                        active_intents: config.intents.active_intents.iter().filter(|i| !held.contains(&i.id)).cloned().collect(),
                        ..config.intents.clone()
                    };
                    format!("Select another intent ({}) or wait for this one to be released.", available(&free))
                }),
                suggested_tool: Some(SELECT_INTENT_TOOL.to_owned()),
            })
            .into(),
            Err(e) => deny(&format!("cannot take the lock on intent `{id}`: {e}"), None).into(),
        }
    }

    /// The paths a write names: the event's own, else those its input holds where the tool's row
    /// says (path fields, each a string or a list of strings; or the files of a patch). A patch that
    /// cannot be read is one path that cannot be judged.
    fn write_paths(event: &Event, role: &ToolRole) -> Vec<Result<String, String>> {
        if !event.paths.is_empty() {
            return event.paths.iter().cloned().map(Ok).collect();
        }
        match role {
            ToolRole::Write(fields) => {
                fields.iter().flat_map(|f| crate::scope::tools::paths_in(&event.subject, f)).map(|p| Ok(p.to_owned())).collect()
            }
            ToolRole::Read => Vec::new(),
            ToolRole::Patch(field) | ToolRole::Shell(field) => {
                // An agent that sends the tool's argument alone (Copilot CLI's patch) sends a string.
                let text = event.subject.get(field).or(Some(&event.subject)).and_then(|v| v.as_str()).unwrap_or_default();
                match patch::paths(text) {
                    Ok(paths) => paths.into_iter().map(Ok).collect(),
                    Err(e) => vec![Err(format!("cannot read the patch: {e}"))],
                }
            }
        }
    }

    /// What the canonicaliser makes of every path this event writes (empty for a tool that does not
    /// write). For `chokepoint explain`.
    pub fn judged_paths(&self, event: &Event) -> Vec<JudgedPath> {
        let config = self.config();
        let Some(role) = config.write_role(event) else { return Vec::new() };
        Self::write_paths(event, &role)
            .into_iter()
            .filter_map(Result::ok)
            .map(|raw| JudgedPath { canonical: self.workspace.canonicalize_from(&raw, &event.base), raw })
            .collect()
    }

    /// Every path a write tool's event names, made canonical: what the engine resolves once per
    /// evaluation (into [`Event::writes`]) for this gatekeeper to judge and the trace to record.
    /// `None` for a tool that writes nothing.
    pub fn resolve_writes(&self, event: &Event) -> Option<Arc<[ResolvedPath]>> {
        let config = self.config();
        let role = config.write_role(event)?;
        Some(self.resolve(event, &role))
    }

    /// Whether the tool table of the last good configuration has a row for `tool` of `agent` (or
    /// of any agent), or it is one of the handshake's: a tool Chokepoint knows.
    pub fn knows_tool(&self, agent: Option<Agent>, tool: &str) -> bool {
        tool == SELECT_INTENT_TOOL || tool == SCOPE_EXPANSION_TOOL || self.config().tools.knows(agent, tool)
    }

    /// What `tool` does when `agent` calls it, by the tool table of the last good configuration.
    pub fn tool_role(&self, agent: Option<Agent>, tool: &str) -> Option<ToolRole> {
        self.config().tools.role(agent, tool).cloned()
    }

    fn resolve(&self, event: &Event, role: &ToolRole) -> Arc<[ResolvedPath]> {
        Self::write_paths(event, role)
            .into_iter()
            .map(|raw| match raw {
                Ok(raw) => ResolvedPath {
                    canonical: self.workspace.canonicalize_from(&raw, &event.base).map_err(|refusal| refusal.to_string()),
                    raw,
                },
                Err(unreadable) => ResolvedPath { raw: event.tool.clone().unwrap_or_default(), canonical: Err(unreadable) },
            })
            .collect()
    }

    /// Judges a write whose paths are `resolved` (made canonical once, by the engine's `begin`).
    fn judge_write(&self, event: &Event, resolved: Arc<[ResolvedPath]>, config: &GateConfig) -> HookAnswer {
        let mut note = None;
        let answer = self.judge_write_noting(event, resolved, config, &mut note);
        noted(answer.into(), note.as_deref())
    }

    /// [`Gatekeeper::judge_write`], setting `note` when the answer was read from this machine's
    /// state in place of the team's unreachable database.
    fn judge_write_noting(&self, event: &Event, resolved: Arc<[ResolvedPath]>, config: &GateConfig, note: &mut Option<String>) -> Answer {
        if resolved.is_empty() {
            return deny(&format!("`{}` names no path to write", event.tool.as_deref().unwrap_or_default()), None);
        }
        let mut canonical = Vec::with_capacity(resolved.len());
        for path in resolved.iter() {
            match &path.canonical {
                Ok(rel) if self.governance.is_match(rel) => {
                    let reason = governance::refusal(rel).unwrap_or_else(|| format!("`{rel}` is a governance file"));
                    return deny(&reason, Some(&governance::remediation(rel)));
                }
                Ok(rel) => canonical.push(rel),
                Err(refusal) => return deny(&format!("cannot write `{}`: {refusal}", path.raw), None),
            }
        }
        if !config.gating {
            return Answer::Allow;
        }
        let no_selection = || {
            deny(
                &format!("no intent is selected for this session: call `{SELECT_INTENT_TOOL}` first; {}", available(&config.intents)),
                Some("Call select_active_intent(intent_id) with the intent this change serves, then retry the write."),
            )
        };
        let Some(session) = event.ids.session.as_deref() else { return no_selection() };
        let selection = match self.selection_of(event, session, config) {
            Ok(Some(s)) => s,
            // A replay judges the moment of the record: a revocation since then is not its reason.
            Ok(None) if self.replay.is_some() => return no_selection(),
            // Only a write without a selection looks for a revocation: the hot path never reads it.
            Ok(None) => return self.unselected(session, config, no_selection, note),
            Err(e) => return deny(&format!("cannot tell which intent this session holds: {e}"), None),
        };
        note.clone_from(&selection.note);
        let Some((intent, scope)) = config.intent(&selection.intent) else {
            return deny(
                &format!("intent `{}` is no longer declared in active_intents.yaml; {}", selection.intent, available(&config.intents)),
                Some("Call select_active_intent with one of the listed intent ids."),
            );
        };
        for rel in canonical {
            if !scope.is_match(rel) && !selection.expansion_set.is_match(rel) {
                let mut owned = intent.owned_scope.clone();
                owned.extend(selection.expansions.iter().cloned());
                return Answer::Deny(Denial {
                    reason: format!("`{rel}` is outside the scope of intent `{}` ({})", intent.id, owned.join(", ")),
                    remediation: Some(format!(
                        "Write only inside {}, or ask for more with {SCOPE_EXPANSION_TOOL}(intent_id, paths, justification).",
                        owned.join(", ")
                    )),
                    suggested_tool: Some(SCOPE_EXPANSION_TOOL.to_owned()),
                });
            }
        }
        Answer::Allow
    }

    /// `scope_expansion_request(intent_id, paths, justification)`: checked here, then escalated. The
    /// answer is an `ask`, decided by whoever answers asks; an approval comes back through
    /// [`Gatekeeper::approve_expansion`].
    fn request_expansion(&self, event: &Event, config: &GateConfig) -> Answer {
        let id = event.subject.get("intent_id").and_then(|v| v.as_str()).unwrap_or_default();
        let justification = event.subject.get("justification").and_then(|v| v.as_str()).unwrap_or_default().trim();
        let paths: Vec<String> = match event.subject.get("paths") {
            Some(serde_json::Value::Array(items)) => items.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect(),
            Some(serde_json::Value::String(one)) => vec![one.clone()],
            _ => Vec::new(),
        };
        let selected = event.ids.session.as_deref().and_then(|s| self.selection_of(event, s, config).ok().flatten());
        if selected.as_ref().is_none_or(|s| s.intent != id) {
            return deny(
                &format!(
                    "a scope expansion is asked for the intent this session holds; it holds {}",
                    selected.map_or("none".to_owned(), |s| format!("`{}`", s.intent))
                ),
                Some("Call select_active_intent first, then ask to expand that intent's scope."),
            );
        }
        if justification.is_empty() {
            return deny("a scope expansion needs a justification", Some("Say why the change needs these paths."));
        }
        let globs = match crate::scope::expansion::check_globs(&paths) {
            Ok(g) => g,
            Err(e) => return deny(e.message(), None),
        };
        if let Some(g) = globs.iter().find(|g| governance::covers_governance(g)) {
            return deny(&format!("`{g}` covers governance files; no scope can include them"), None);
        }
        Answer::Ask { reason: format!("scope expansion for intent `{id}`: {} (justification: {justification})", globs.join(", ")) }
    }

    /// Records an approved expansion for the session's intent; from now on the session may write
    /// there. With `save`, the globs are also written into active_intents.yaml for good.
    pub fn approve_expansion(&self, expansion: &Expansion, save: bool) -> Result<(), ScopeError> {
        let globs = crate::scope::expansion::check_globs(&expansion.paths)?;
        if let Some(g) = globs.iter().find(|g| governance::covers_governance(g)) {
            return Err(format!("`{g}` covers governance files; no scope can include them").into());
        }
        // Recorded where the session's lease is read from now (the team's database, or this
        // machine's while it cannot be reached and `coordination.unreachable` is `local`).
        let (checked, place) = self.leased(|leases| leases.held_by(&expansion.session))?;
        checked.map_err(|e| ScopeError::from(e.to_string()))?;
        self.expansions_at(&place)?.approve(&Expansion { paths: globs.clone(), ..expansion.clone() })?;
        self.forget(&expansion.session);
        if save {
            crate::scope::expansion::write_back(&self.sidecar.active_intents_yaml(), &expansion.intent, &globs)?;
        }
        Ok(())
    }

    /// What a contained shell command of this session may change. A session without an intent may
    /// run commands, but may change nothing in the workspace.
    pub fn shell_scope(&self, session: &str) -> Result<ShellScope, ScopeError> {
        let config = self.config();
        // A contained command is the session acting: a lease it yielded is renewed, as for a write.
        let selection = if config.gating { self.selection(session, &config, true)? } else { None };
        let mut globs = Vec::new();
        if let Some(s) = &selection {
            if let Some((intent, _)) = config.intent(&s.intent) {
                globs.extend(intent.owned_scope.iter().cloned());
            }
            globs.extend(s.expansions.iter().cloned());
        }
        if !config.gating {
            // No intents declared: the shell may change anything but the governance files.
            globs.push("**".to_owned());
        }
        Ok(ShellScope {
            intent: selection.map(|s| s.intent.clone()),
            set: glob_set(&globs, self.workspace.names()),
            globs,
            governance: self.governance.clone(),
        })
    }

    /// How to contain a shell command of this session: its shell scope as the judge and the Landlock
    /// grant, the configured writable directories (and `$TMPDIR`), the engine's own runtime files left
    /// alone, the sidecar's snapshot store.
    /// `isolator` is the `chokepoint` program that runs the command isolated; it is used unless
    /// `gatekeeper.isolation` is `off`.
    pub fn contain_plan(
        &self,
        session: &str,
        isolator: Option<&std::path::Path>,
    ) -> Result<crate::containment::contain::ContainPlan, ScopeError> {
        use crate::containment::contain::{ContainPlan, DEFAULT_OUTPUT_CAP, LandlockMode, default_excluded};
        let scope = self.shell_scope(session)?;
        let settings = self.settings();
        let mut writable: Vec<std::path::PathBuf> = settings.writable.iter().map(std::path::PathBuf::from).collect();
        if let Some(tmp) = std::env::var_os("TMPDIR").filter(|t| !t.is_empty()) {
            writable.push(tmp.into());
        }
        self.sidecar.ignore_runtime_files();
        let judged = scope.clone();
        Ok(ContainPlan {
            root: self.workspace.root().to_path_buf(),
            judge: Box::new(move |path| judged.allows(path)),
            intent_id: scope.intent,
            scope_globs: scope.globs,
            writable,
            excluded: default_excluded(),
            store: self.sidecar.snapshot_store(),
            landlock: match settings.landlock {
                crate::scope::settings::LandlockSetting::Auto => LandlockMode::Auto,
                crate::scope::settings::LandlockSetting::Off => LandlockMode::Off,
            },
            isolator: isolator
                .filter(|_| settings.isolation == crate::scope::settings::IsolationSetting::Auto)
                .map(std::path::Path::to_path_buf),
            max_held_bytes: settings.max_held_mib.saturating_mul(1024 * 1024),
            output_cap: DEFAULT_OUTPUT_CAP,
            cancel: None,
        })
    }

    /// Who holds which intent now, across every process on the workspace.
    pub fn holders(&self) -> Result<Vec<crate::scope::leases::Lease>, ScopeError> {
        if self.is_local() && !self.state.path().exists() {
            return Ok(Vec::new());
        }
        let (holders, _) = self.leased(|leases| leases.list())?;
        holders.map_err(|e| e.to_string().into())
    }

    /// The gatekeeper's settings from the last good hooks.yaml (shell tools, writable dirs, Landlock).
    pub fn settings(&self) -> GatekeeperConfig {
        self.config().settings.clone()
    }
}

/// The `<intent_context>` block the model receives after the handshake.
pub fn intent_context(intent: &Intent) -> String {
    let list = |items: &[String]| items.iter().map(|i| format!("  - {i}\n")).collect::<String>();
    format!(
        "<intent_context>\nid: {}\nname: {}\nowned_scope:\n{}constraints:\n{}acceptance_criteria:\n{}</intent_context>",
        intent.id,
        intent.name,
        list(&intent.owned_scope),
        list(&intent.constraints),
        list(&intent.acceptance_criteria)
    )
}

fn available(intents: &IntentSet) -> String {
    let open: Vec<String> = intents
        .active_intents
        .iter()
        .filter(|i| matches!(i.status, IntentStatus::InProgress | IntentStatus::Planned))
        .map(|i| format!("{} ({})", i.id, i.name))
        .collect();
    if open.is_empty() { "no intent is open for work".to_owned() } else { format!("available intents: {}", open.join(", ")) }
}

/// Compiles scope globs as owned scopes are compiled (`*` stops at `/`), to match the canonical paths
/// of the workspace's file system (`Names::glob`: without case where it ignores case). A glob that
/// does not compile matches nothing (active_intents.yaml reports it), so a typo narrows a scope, never
/// widens it.
fn glob_set(globs: &[String], names: Names) -> GlobSet {
    let mut b = GlobSetBuilder::new();
    for g in globs {
        if let Ok(glob) = names.glob(g) {
            b.add(glob);
        }
    }
    b.build().unwrap_or_else(|_| GlobSet::empty())
}

/// `answer` with the note of a fallback to this machine's state, if any: appended to a denial's or
/// an ask's reason, and given as context with an allowance (which has no reason of its own).
fn noted(mut answer: HookAnswer, note: Option<&str>) -> HookAnswer {
    let Some(note) = note else { return answer };
    match &mut answer.answer {
        Answer::Deny(denial) => denial.reason = format!("{}; {note}", denial.reason),
        Answer::Ask { reason } => *reason = format!("{reason}; {note}"),
        Answer::Allow | Answer::Modify(_) => {
            answer.additional_context = Some(match answer.additional_context.take() {
                Some(context) => format!("{context}\n{note}"),
                None => note.to_owned(),
            })
        }
    }
    answer
}

fn deny(reason: &str, remediation: Option<&str>) -> Answer {
    Answer::Deny(Denial { reason: reason.to_owned(), remediation: remediation.map(str::to_owned), suggested_tool: None })
}

impl NativeHook for Gatekeeper {
    fn call(&self, event: &Event) -> Result<HookAnswer, HookFailure> {
        match event.kind {
            EventKind::PreToolUse => {}
            EventKind::TaskComplete | EventKind::SessionEnd => {
                // The intent is free for the next agent as soon as this one is done with it.
                if let Some(session) = &event.ids.session {
                    self.release(session).map_err(|e| HookFailure::Error(e.to_string()))?;
                }
                return Ok(Answer::Allow.into());
            }
            // Starting a task of a type claims it (our runtime's typed tasks): the type's allowlist.
            EventKind::TaskStart => {
                let refused = event.task_type.as_deref().and_then(|t| self.config().claims.check(t, event.ids.agent.as_deref()).err());
                return Ok(match refused {
                    Some(refusal) => deny(
                        &refusal.to_string(),
                        Some("Give the task to one of the agents its type allows, or ask a person to add this agent to the type's `agents` in hooks.yaml."),
                    ),
                    None => Answer::Allow,
                }
                .into());
            }
            _ => return Ok(Answer::Allow.into()),
        }
        let Some(tool) = event.tool.as_deref() else { return Ok(Answer::Allow.into()) };
        let config = self.config();
        match tool {
            SELECT_INTENT_TOOL => Ok(self.select(event, &config)),
            SCOPE_EXPANSION_TOOL => Ok(self.request_expansion(event, &config).into()),
            // The engine resolved the paths of a write before the chain ran (it looked the tool up
            // then); only an event that came another way is looked up here.
            _ => match &event.writes {
                Some(resolved) => Ok(self.judge_write(event, Arc::clone(resolved), &config)),
                None => match config.write_role(event) {
                    Some(role) => Ok(self.judge_write(event, self.resolve(event, &role), &config)),
                    None => Ok(Answer::Allow.into()),
                },
            },
        }
    }

    fn needs_subject(&self, event: &Event) -> bool {
        // The input is read for the handshake and expansion requests, and for writes whose paths did
        // not come separately: every tool but one that writes nothing by its row (a tool the table
        // does not know is judged by the paths its input names).
        let agent = event.ids.agent.as_deref().and_then(Agent::from_id);
        event.tool.as_deref().is_some_and(|t| {
            t == SELECT_INTENT_TOOL
                || t == SCOPE_EXPANSION_TOOL
                || (event.paths.is_empty() && self.config().tools.role(agent, t) != Some(&ToolRole::Read))
        })
    }
}
