//! Intent leases: which session may write under which intent, agreed across processes.
//!
//! Several processes act on one workspace at once (agents' hooks, CLI invocations, the VS Code
//! extension), and exactly one session may hold an intent at a time. The lock therefore lives in a
//! file every process can open, and not in any process's memory: the coordination database
//! (`Sidecar::coordination_db`), which every git worktree of a repository shares (under git's common
//! folder), so agents working in two worktrees of one repository never both hold an intent; outside
//! a repository, `.orchestration/state.db`. A lease records where its holder works ([`Checkout`]:
//! the worktree and the branch checked out when it was taken) so a refusal can say where to look.
//!
//! - **Why SQLite.** It gives atomic, crash-safe, cross-process transactions on a plain file, on every
//!   platform, without a daemon to start, find and keep alive. Advisory file locks alone would need
//!   their own format, their own crash recovery and their own portability work.
//! - **Why `BEGIN IMMEDIATE`.** A deferred transaction reads first and takes the write lock only at its
//!   first write, so two processes could both read "free" and then both try to write. `IMMEDIATE`
//!   takes the write lock before the read: the read-decide-write of one process is never interleaved
//!   with another's. Every write of this module goes through `Leases::write`, which uses it.
//! - **Why compare-and-swap on a version.** Each intent's row carries a version that grows by one
//!   each time a new session takes the intent and is never reused (the row outlives a release for
//!   that reason). A take or renewal writes `WHERE intent = ? AND version = ?` with the version it
//!   read, so a write decided on a stale view changes nothing and is reported as "held", never
//!   applied. Under `IMMEDIATE` this cannot happen through SQLite; the check keeps the module
//!   correct if the locking is ever weakened, and the version is the fencing token of one tenure.
//! - **Why leases expire.** A session's process can die without releasing (a killed agent, a closed
//!   editor, a power cut). A lock that outlived its holder would block the intent forever; a lease
//!   that is not renewed frees itself after its time to live, and another session can take it over.
//! - **Why a lease yields at the end of a turn.** An agent's chat is a series of turns, and most
//!   agents never say that the chat itself is over (VS Code's agent fires no `SessionEnd`; a closed
//!   chat fires nothing). A lease kept for its whole time to live after the last turn blocked the next
//!   chat for minutes. Released at each turn's end, it would make the agent select its intent again
//!   at every turn. So a turn's end *yields* the lease ([`Leases::yield_session`]): it is made to
//!   expire now and stays its holder's. Another session may take it at once (a new tenure, with
//!   `taken_from` naming the yielder); if nobody did, the holder's next call renews the same tenure,
//!   and if someone did, it is told it lost it ([`Tenure`]). A yielded lease and a lapsed one are
//!   the same state, so there is one rule for both: "free to take, and its holder's until taken".
//!
//! `SQLITE_BUSY` never reaches an agent: a busy timeout (3 s of short jittered sleeps) lets SQLite wait
//! for a lock, and a bounded retry loop with jittered backoff covers the cases where SQLite answers
//! busy at once. Only after [`BUSY_GIVE_UP`] does an operation fail, with [`LeaseError::Busy`].
//!
//! **Invariant: a session's selection lives in the lease table, not in a process.** A lease expires
//! unless renewed (the gatekeeper renews while the session writes); `TaskComplete` and `SessionEnd`
//! release it (our own runtime releases at `TaskComplete`, which every task ends with).
//!
//! **Invariant: a lease held by a session whose turn ended never blocks the next.** The turn-ending
//! events (`model::external_events::TURN_ENDS`) that the completion gate lets end yield the lease
//! (`agents::hook` → `Gatekeeper::yield_turn` → [`LeaseStore::yield_session`]); a write of a session
//! whose lease was taken is told it lost it, to whom, and what to do ([`LeaseStore::tenure`]: `Live`,
//! `Idle`, `Lost`, `None`, read from the session's rows and those taken from it in one statement, on
//! both stores). Pinned by `tests/gatekeeper.rs` and `tests/team_leases.rs` (the same case on both
//! stores), `tests/leases.rs`, the CLI's `tests/sessions.rs` (hook processes) and
//! `tests/ui/turns.test.js` (two chats of VS Code's agent).
//!
//! **Invariant: a lease a person revoked is denied by name, in every process, within `RECHECK`.**
//! [`Leases::revoke`] releases the session's lease and keeps the revocation (who, when, why, the
//! tenure) in `lease_revocations_v1`, in one transaction. The engine that revokes forgets the
//! session's selection at once; another process that cached it (a live engine serving the session's
//! hooks) asks the lease table again after at most `Gatekeeper`'s `RECHECK` (1 s), so the revocation
//! takes effect on the first write after that bound. Selecting an intent again clears it (in
//! `acquire`'s transaction), and rows older than [`REVOCATION_KEPT`] (7 days) are pruned by the next
//! revocation. How it is recorded in the ledger is `engine/sessions.rs`'s.
//!
//! **Where the holder works.** A lease records [`Checkout`] (worktree name and root, branch: schema
//! 2), said in a refusal ("locked by session `claude:A` (agent `claude`) in worktree `wt2` on branch
//! `feature-x`"), `intent list` and the Sessions view. The branch is read from `HEAD` when a lease is
//! taken. Leases are not carried over when the coordination database is first made: their holders
//! select again. Pinned across two real worktrees by `native/cli/tests/worktrees.rs` (one holder, the
//! refusal, release, a revocation and an expansion across them, a 100-round race of two processes).

use std::fmt;
use std::hash::{BuildHasher, RandomState};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};

use crate::base::clock;
use crate::base::sqlite::{StateDb, is_busy};
use crate::base::team::TeamError;

/// The schema version this build writes, kept in `PRAGMA user_version`. A database with a newer one
/// is refused rather than misread. 1: the leases; 2: where each holder works ([`Checkout`]); 3: on
/// which machine ([`Holder::machine`]).
pub const SCHEMA_VERSION: i64 = 3;

/// How long an operation keeps retrying a busy database before it fails with [`LeaseError::Busy`].
pub const BUSY_GIVE_UP: Duration = Duration::from_secs(10);

/// Who asks for a lease: the session that will write, the agent running it and where it works (for
/// messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub session: String,
    pub agent: Option<String>,
    pub checkout: Option<Checkout>,
    /// The machine it runs on (`base::team::machine_name`): beside the checkout rather than in it,
    /// since a workspace outside a repository has a machine and no checkout.
    pub machine: Option<String>,
}

impl Holder {
    pub fn new(session: impl Into<String>, agent: Option<&str>) -> Holder {
        Holder { session: session.into(), agent: agent.map(str::to_owned), checkout: None, machine: None }
    }

    /// The same holder, working in `checkout`.
    pub fn at(self, checkout: Option<Checkout>) -> Holder {
        Holder { checkout, ..self }
    }

    /// The same holder, on `machine`.
    pub fn on(self, machine: Option<String>) -> Holder {
        Holder { machine, ..self }
    }
}

/// Where a holder works: a git worktree of the repository and the branch checked out in it when the
/// lease was taken (or last taken again). `None` on a lease of a workspace in no repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkout {
    /// The worktree's name as people know it (its root folder's name).
    pub worktree: String,
    /// The worktree's root folder.
    pub root: String,
    /// `None` when `HEAD` could not be read; `detached at <hash>` for a detached `HEAD`.
    pub branch: Option<String>,
}

impl Checkout {
    /// Where the workspace of `repo` works now (its branch read from `HEAD` at this call).
    pub fn of(repo: &crate::base::repo::Repo) -> Checkout {
        Checkout { worktree: repo.worktree_name(), root: repo.work_tree.to_string_lossy().into_owned(), branch: repo.branch() }
    }
}

impl fmt::Display for Checkout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "worktree `{}`", self.worktree)?;
        match &self.branch {
            Some(branch) => write!(f, " on branch `{branch}`"),
            None => Ok(()),
        }
    }
}

/// A live lease: `session` holds `intent` until `expires_at_ms` unless it renews or releases it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub intent: String,
    pub session: String,
    pub agent: Option<String>,
    /// Where the holder works, as it said when it took (or renewed by selecting again) the intent.
    pub checkout: Option<Checkout>,
    /// The machine the holder runs on; `None` on a lease an older build took.
    pub machine: Option<String>,
    /// The tenure's fencing token: grows by one each time a new session takes the intent.
    pub version: u64,
    pub acquired_at_ms: u64,
    pub renewed_at_ms: u64,
    pub expires_at_ms: u64,
}

/// Where a session stands with its last tenure, as the gatekeeper reads it on the session's every
/// call ([`LeaseStore::tenure`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tenure {
    /// It holds a live lease.
    Live(Lease),
    /// Its lease's time is up (its turn ended and it yielded, or it was not renewed) and nobody took
    /// the intent since: still its own, renewed by [`LeaseStore::renew`].
    Idle(Lease),
    /// Its lease's time was up and another session took the intent over: the taker's lease.
    Lost(Lease),
    /// It holds nothing (never selected, released, or revoked).
    None,
}

impl Tenure {
    /// The session's tenure among `rows` (every row it holds or lost, as `(intent, row)`) at `now`:
    /// its newest live lease, else its newest idle one, else the newest tenure taken over from it.
    /// One function for both stores, so SQLite and PostgreSQL read the same rows the same way.
    pub(crate) fn of(session: &str, rows: Vec<(String, Row)>, now: u64) -> Tenure {
        let mut live: Option<(String, Row)> = None;
        let mut idle: Option<(String, Row)> = None;
        let mut lost: Option<(String, Row)> = None;
        for (intent, row) in rows {
            let slot = match row.holder.as_deref() {
                Some(holder) if holder == session && row.expires_at > now => &mut live,
                Some(holder) if holder == session => &mut idle,
                Some(_) if row.taken_from.as_deref() == Some(session) => &mut lost,
                _ => continue,
            };
            // A session holds one intent at a time (`acquire` releases the previous one); the newest
            // is named if an older database ever holds more.
            if slot.as_ref().is_none_or(|(_, old)| row.renewed_at > old.renewed_at) {
                *slot = Some((intent, row));
            }
        }
        let lease = |(intent, row): (String, Row)| row.lease(&intent);
        match (live.and_then(lease), idle.and_then(lease), lost.and_then(lease)) {
            (Some(lease), _, _) => Tenure::Live(lease),
            (None, Some(lease), _) => Tenure::Idle(lease),
            (None, None, Some(lease)) => Tenure::Lost(lease),
            _ => Tenure::None,
        }
    }

    /// The live lease, if that is where the session stands.
    pub fn live(self) -> Option<Lease> {
        match self {
            Tenure::Live(lease) => Some(lease),
            _ => None,
        }
    }
}

/// A person's revocation of a session's lease, kept so that the session's next write is told why it
/// holds nothing (rather than "select an intent first") by whichever process judges it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revocation {
    pub session: String,
    pub intent: String,
    /// The agent of the revoked lease, if it said.
    pub agent: Option<String>,
    /// The tenure that was revoked (the lease's version).
    pub version: u64,
    /// Who revoked it: a person's name and where they did it (`alice via chokepoint sessions revoke`).
    pub by: String,
    pub reason: Option<String>,
    pub at_ms: u64,
}

impl fmt::Display for Revocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the lease of session `{}` on intent `{}` was revoked by a person ({}) at {}",
            self.session,
            self.intent,
            self.by,
            clock::format_utc(self.at_ms)
        )?;
        match self.reason.as_deref().map(str::trim).filter(|r| !r.is_empty()) {
            Some(reason) => write!(f, ": {reason}"),
            None => Ok(()),
        }
    }
}

/// How long a revocation is remembered for a session that never comes back: its row is pruned by
/// the next revocation after that. A session that selects an intent again forgets it at once.
pub const REVOCATION_KEPT: Duration = Duration::from_secs(7 * 24 * 3600);

/// A failure of the lock database itself: I/O, a busy database, a newer schema, or misuse.
#[derive(Debug)]
pub enum LeaseError {
    /// No transaction got through within [`BUSY_GIVE_UP`].
    Busy {
        db: PathBuf,
        waited: Duration,
    },
    /// The database was written by a newer Chokepoint.
    NewerSchema {
        db: PathBuf,
        found: i64,
        supported: i64,
    },
    /// The caller passed something no lease can be made of (an empty id, a zero time to live).
    Invalid(&'static str),
    Sqlite {
        db: PathBuf,
        op: &'static str,
        source: rusqlite::Error,
    },
    /// The team's PostgreSQL database (`scope::team_leases`) could not serve the operation; its
    /// message names the database and how to fix it.
    Team(TeamError),
}

impl LeaseError {
    /// The team's database could not be reached: what `coordination.unreachable: local` falls back on.
    pub fn is_unreachable(&self) -> bool {
        matches!(self, LeaseError::Team(e) if e.is_unreachable())
    }
}

impl fmt::Display for LeaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LeaseError::Busy { db, waited } => write!(
                f,
                "the lock database {} is busy: no transaction got through in {} s; another process may be \
                 stuck inside a write to it (try again, or end that process)",
                db.display(),
                waited.as_secs()
            ),
            LeaseError::NewerSchema { db, found, supported } => write!(
                f,
                "the lock database {} has schema version {found}, newer than the {supported} this chokepoint \
                 understands; upgrade chokepoint, or delete the file while no agent is running",
                db.display()
            ),
            LeaseError::Invalid(what) => f.write_str(what),
            LeaseError::Sqlite { db, op, source } => {
                write!(f, "the lock database {}: {op} failed: {source}", db.display())
            }
            LeaseError::Team(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for LeaseError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LeaseError::Sqlite { source, .. } => Some(source),
            LeaseError::Team(error) => Some(error),
            _ => None,
        }
    }
}

/// Why a session did not get (or keep) a lease. The `Display` of each is what the agent reads as its
/// tool error, so it names who holds the intent and what to do next.
#[derive(Debug)]
pub enum AcquireError {
    /// Another session holds the intent and its lease is live: the other holder's lease (boxed: with
    /// where its holder works, a lease is large, and every `Result` of this type carries its size).
    Held(Box<Lease>),
    /// Renewal too late: the session's lease expired (or yielded at the end of its turn) and `by`
    /// took the intent over from it.
    Lost {
        session: String,
        by: Box<Lease>,
    },
    /// Renewal of an intent the session does not hold (released, or never taken).
    NotHeld {
        intent: String,
        session: String,
    },
    Store(LeaseError),
}

impl From<LeaseError> for AcquireError {
    fn from(error: LeaseError) -> Self {
        AcquireError::Store(error)
    }
}

/// "session `s-1` (agent `claude-code`) on machine `alpha` in worktree `wt2` on branch `feature-x`",
/// without the agent or machine when unknown and without the place outside a repository.
fn who(lease: &Lease) -> String {
    let mut session = match &lease.agent {
        Some(agent) => format!("session `{}` (agent `{agent}`)", lease.session),
        None => format!("session `{}`", lease.session),
    };
    if let Some(machine) = &lease.machine {
        session = format!("{session} on machine `{machine}`");
    }
    match &lease.checkout {
        Some(checkout) => format!("{session} in {checkout}"),
        None => session,
    }
}

impl fmt::Display for AcquireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AcquireError::Held(lease) => write!(
                f,
                "intent `{}` is locked by {} since {}; select another intent or wait until it is released \
                 (the lease expires at {} unless renewed)",
                lease.intent,
                who(lease),
                clock::format_utc(lease.acquired_at_ms),
                clock::format_utc(lease.expires_at_ms)
            ),
            AcquireError::Lost { session, by } => write!(
                f,
                "session `{session}` lost its lock on intent `{}`: its lease was free to take (its turn had \
                 ended, or it was not renewed in time) and {} took the intent over at {}; stop writing under \
                 `{}`, and select another intent or wait until it is released (that lease expires at {} unless \
                 renewed)",
                by.intent,
                who(by),
                clock::format_utc(by.acquired_at_ms),
                by.intent,
                clock::format_utc(by.expires_at_ms)
            ),
            AcquireError::NotHeld { intent, session } => write!(
                f,
                "session `{session}` does not hold intent `{intent}` (it was released, or never selected); \
                 select the intent again before writing under it"
            ),
            AcquireError::Store(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for AcquireError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AcquireError::Store(error) => Some(error),
            _ => None,
        }
    }
}

/// The lease table of one workspace. One connection, shared by the threads of this process (and with
/// the engine's other stores in `state.db`); other processes open their own.
pub struct Leases {
    state: Arc<StateDb>,
    clock: Box<dyn Fn() -> u64 + Send + Sync>,
}

impl fmt::Debug for Leases {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Leases").field("db", &self.state.path()).finish_non_exhaustive()
    }
}

/// One step of a write transaction: done (commit), or the compare-and-swap found the row changed and
/// nobody holds it now, so the whole transaction is tried again on a fresh read.
enum Step<T> {
    Done(T),
    Retry,
}

/// A row of the `leases` table (and of the team's `chokepoint.leases`, which `scope::team_leases`
/// reads into the same shape); `holder` is `None` once released.
pub(crate) struct Row {
    pub(crate) holder: Option<String>,
    pub(crate) agent: Option<String>,
    pub(crate) version: u64,
    pub(crate) acquired_at: u64,
    pub(crate) renewed_at: u64,
    pub(crate) expires_at: u64,
    pub(crate) taken_from: Option<String>,
    pub(crate) checkout: Option<Checkout>,
    pub(crate) machine: Option<String>,
}

impl Row {
    pub(crate) const COLUMNS: &'static str =
        "holder, agent, version, acquired_at, renewed_at, expires_at, taken_from, worktree, worktree_root, branch, machine";

    /// The row's [`Row::COLUMNS`], starting at column `first` of the result.
    fn read(row: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<Row> {
        Ok(Row {
            holder: row.get(first)?,
            agent: row.get(first + 1)?,
            version: uint(row.get(first + 2)?),
            acquired_at: uint(row.get(first + 3)?),
            renewed_at: uint(row.get(first + 4)?),
            expires_at: uint(row.get(first + 5)?),
            taken_from: row.get(first + 6)?,
            checkout: match (row.get::<_, Option<String>>(first + 7)?, row.get::<_, Option<String>>(first + 8)?) {
                (Some(worktree), Some(root)) => Some(Checkout { worktree, root, branch: row.get(first + 9)? }),
                _ => None,
            },
            machine: row.get(first + 10)?,
        })
    }

    pub(crate) fn lease(self, intent: &str) -> Option<Lease> {
        Some(Lease {
            intent: intent.to_owned(),
            session: self.holder?,
            agent: self.agent,
            checkout: self.checkout,
            machine: self.machine,
            version: self.version,
            acquired_at_ms: self.acquired_at,
            renewed_at_ms: self.renewed_at,
            expires_at_ms: self.expires_at,
        })
    }

    pub(crate) fn is_live(&self, now: u64) -> bool {
        self.holder.is_some() && self.expires_at > now
    }
}

const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS leases (
        intent      TEXT PRIMARY KEY NOT NULL,
        holder      TEXT,              -- the session; NULL once released (the row keeps the version)
        agent       TEXT,
        version     INTEGER NOT NULL,  -- grows by one per new holder, never reused
        acquired_at INTEGER NOT NULL,  -- unix milliseconds
        renewed_at  INTEGER NOT NULL,
        expires_at  INTEGER NOT NULL,
        taken_from  TEXT,              -- whose expired lease this tenure took over, to tell them so
        worktree      TEXT,            -- where the holder works (schema 2): the worktree's name,
        worktree_root TEXT,            -- its root folder,
        branch        TEXT,            -- and its branch when it took the intent; NULL outside git
        machine       TEXT             -- the machine it runs on (schema 3)
    ) STRICT;
";
/// From schema 1 (no place of the holder) to 2. Added columns are NULL on existing rows: a lease
/// taken by an older build says nothing of where its holder works.
const TO_2: &str = "
    ALTER TABLE leases ADD COLUMN worktree TEXT;
    ALTER TABLE leases ADD COLUMN worktree_root TEXT;
    ALTER TABLE leases ADD COLUMN branch TEXT;
";
/// From schema 2 to 3: the holder's machine, NULL on existing rows.
const TO_3: &str = "
    ALTER TABLE leases ADD COLUMN machine TEXT;
";
/// The revocations a person made, one row per session (its latest). Created at every open, not under
/// `user_version`: a table added later must reach databases already at this schema version, and a
/// versioned name (as the other stores of state.db have) lets an older build leave it alone.
const REVOCATIONS: &str = "
    CREATE TABLE IF NOT EXISTS lease_revocations_v1 (
        session     TEXT PRIMARY KEY NOT NULL,
        intent      TEXT NOT NULL,
        agent       TEXT,
        version     INTEGER NOT NULL,  -- the revoked tenure
        revoked_by  TEXT NOT NULL,
        reason      TEXT,
        revoked_at  INTEGER NOT NULL   -- unix milliseconds
    ) STRICT;
";

// No index on `holder`: the table has one row per intent ever taken (tens, perhaps hundreds), which a
// scan reads faster than an index lookup, and an index would be one more page written by every
// acquire and release, i.e. a WAL checkpoint (and its fsyncs) twice as often.

impl Leases {
    /// Opens (creating it if missing) the lock database at `db`, whose parent folder must exist.
    pub fn open(db: &Path) -> Result<Leases, LeaseError> {
        Leases::open_with_clock(db, clock::now_ms)
    }

    /// [`Leases::open`] with another source of "now" in unix milliseconds (tests move time by hand).
    /// Every process on one database must agree on the clock, so outside tests use [`Leases::open`].
    pub fn open_with_clock(db: &Path, clock: impl Fn() -> u64 + Send + Sync + 'static) -> Result<Leases, LeaseError> {
        Leases::on(Arc::new(StateDb::new(db)), clock)
    }

    /// The lease table in `state`, the connection the engine shares between its stores.
    pub(crate) fn on(state: Arc<StateDb>, clock: impl Fn() -> u64 + Send + Sync + 'static) -> Result<Leases, LeaseError> {
        let db = state.path().to_owned();
        let leases = Leases { state, clock: Box::new(clock) };
        // Several processes may open a new database at once: switching it to WAL (as the connection
        // opens, base::sqlite) and creating the schema can meet a busy database like any write, so
        // both go through the same retries. The connection first, so that a database that cannot be
        // opened says so.
        leases.retrying("open", |_| Ok(Step::Done(())))?;
        leases
            .retrying("set up", |conn| {
                let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
                let found: i64 = tx.query_row("PRAGMA user_version", [], |row| row.get(0))?;
                if found > SCHEMA_VERSION {
                    return Ok(Step::Done(Err(found)));
                }
                if found < SCHEMA_VERSION {
                    match found {
                        0 => tx.execute_batch(SCHEMA)?,
                        1 => tx.execute_batch(&format!("{TO_2}{TO_3}"))?,
                        _ => tx.execute_batch(TO_3)?,
                    }
                    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
                }
                tx.execute_batch(REVOCATIONS)?;
                tx.commit()?;
                Ok(Step::Done(Ok(())))
            })?
            .map_err(|found| LeaseError::NewerSchema { db, found, supported: SCHEMA_VERSION })?;
        Ok(leases)
    }

    /// The database file this opened.
    pub fn path(&self) -> &Path {
        self.state.path()
    }

    /// Takes `intent` for `holder` for `ttl`: free, released or expired (another session's lease is
    /// taken over, with a new version) → taken; already held by this session → renewed; held by
    /// another live session → [`AcquireError::Held`]. A session holds at most one intent: taking
    /// one releases the session's previous lease in the same transaction.
    pub fn acquire(&self, intent: &str, holder: &Holder, ttl: Duration) -> Result<Lease, AcquireError> {
        check_id(intent, "the intent id is empty")?;
        check_id(&holder.session, "the session id is empty")?;
        let ttl = ttl_ms(ttl)?;
        let session = holder.session.as_str();
        self.write("acquire a lease", |tx, now| {
            let tenure = |version, acquired_at| Lease {
                intent: intent.to_owned(),
                session: session.to_owned(),
                agent: holder.agent.clone(),
                checkout: holder.checkout.clone(),
                machine: holder.machine.clone(),
                version,
                acquired_at_ms: acquired_at,
                renewed_at_ms: now,
                expires_at_ms: expiry(now, ttl),
            };
            let (lease, taken) = match read_row(tx, intent)? {
                // Ours, live or expired without anyone taking it since: the same tenure goes on.
                Some(row) if row.holder.as_deref() == Some(session) => {
                    let lease = tenure(row.version, row.acquired_at);
                    let taken = cas(tx, row.version, &lease, row.taken_from.as_deref())?;
                    (lease, taken)
                }
                Some(row) if row.is_live(now) => return Ok(held(row, intent)),
                // Released, or another session's expired lease: a new tenure.
                Some(row) => {
                    let lease = tenure(row.version + 1, now);
                    let taken = cas(tx, row.version, &lease, row.holder.as_deref())?;
                    (lease, taken)
                }
                None => {
                    let lease = tenure(1, now);
                    let taken = insert(tx, &lease)?;
                    (lease, taken)
                }
            };
            if !taken {
                // Someone else won between our read and our write: report them, as they now hold it.
                return Ok(match read_row(tx, intent)? {
                    Some(row) => held(row, intent),
                    None => Step::Retry,
                });
            }
            tx.prepare_cached(
                "UPDATE leases SET holder = NULL, agent = NULL, taken_from = NULL,
                 expires_at = MIN(expires_at, ?3) WHERE holder = ?1 AND intent <> ?2",
            )?
            .execute(params![session, intent, int(now)])?;
            // A session that selects an intent again has heard of its revocation: its writes are
            // judged by its new lease from now on.
            tx.prepare_cached("DELETE FROM lease_revocations_v1 WHERE session = ?1")?.execute(params![session])?;
            Ok(Step::Done(Ok(lease)))
        })?
    }

    /// Extends the session's lease on `intent` to `ttl` from now. A lease that expired is renewed if
    /// nobody took it over; if someone did, [`AcquireError::Lost`] names them. A session that does not
    /// hold the intent gets [`AcquireError::Held`] if another live session does, else
    /// [`AcquireError::NotHeld`].
    pub fn renew(&self, intent: &str, session: &str, ttl: Duration) -> Result<Lease, AcquireError> {
        check_id(intent, "the intent id is empty")?;
        check_id(session, "the session id is empty")?;
        let ttl = ttl_ms(ttl)?;
        self.write("renew a lease", |tx, now| {
            let not_held = || AcquireError::NotHeld { intent: intent.to_owned(), session: session.to_owned() };
            let row = match read_row(tx, intent)? {
                Some(row) if row.holder.as_deref() == Some(session) => row,
                Some(row) => {
                    let lost = row.taken_from.as_deref() == Some(session);
                    let live = row.is_live(now);
                    return Ok(Step::Done(Err(match row.lease(intent) {
                        Some(by) if lost => AcquireError::Lost { session: session.to_owned(), by: Box::new(by) },
                        Some(other) if live => AcquireError::Held(Box::new(other)),
                        _ => not_held(),
                    })));
                }
                None => return Ok(Step::Done(Err(not_held()))),
            };
            let lease = Lease {
                intent: intent.to_owned(),
                session: session.to_owned(),
                agent: row.agent,
                checkout: row.checkout,
                machine: row.machine,
                version: row.version,
                acquired_at_ms: row.acquired_at,
                renewed_at_ms: now,
                expires_at_ms: expiry(now, ttl),
            };
            Ok(match cas(tx, row.version, &lease, row.taken_from.as_deref())? {
                true => Step::Done(Ok(lease)),
                false => Step::Retry,
            })
        })?
    }

    /// Releases `intent` if `session` holds it (an expired lease nobody took over counts as held).
    /// Returns whether it did; releasing what one does not hold is not an error.
    pub fn release(&self, intent: &str, session: &str) -> Result<bool, LeaseError> {
        let released = self.write("release a lease", |tx, now| {
            let sql = "UPDATE leases SET holder = NULL, agent = NULL, taken_from = NULL,
                       expires_at = MIN(expires_at, ?3) WHERE intent = ?1 AND holder = ?2";
            Ok(Step::Done(tx.prepare_cached(sql)?.execute(params![intent, session, int(now)])?))
        })?;
        Ok(released > 0)
    }

    /// Releases every lease of `session` (its task completed, or the session ended). Returns how many.
    pub fn release_session(&self, session: &str) -> Result<usize, LeaseError> {
        self.write("release a session's leases", |tx, now| {
            let sql = "UPDATE leases SET holder = NULL, agent = NULL, taken_from = NULL,
                       expires_at = MIN(expires_at, ?2) WHERE holder = ?1";
            Ok(Step::Done(tx.prepare_cached(sql)?.execute(params![session, int(now)])?))
        })
    }

    /// A person takes `session`'s lease away: the lease is released (an expired one nobody took over
    /// too, since the session could still renew it) and the revocation is kept, in the same
    /// transaction, so every process that judges the session's next write can say why it holds
    /// nothing. `None` when the session holds no lease (nothing is kept then).
    pub fn revoke(&self, session: &str, by: &str, reason: Option<&str>) -> Result<Option<Revocation>, LeaseError> {
        check_id(session, "the session id is empty")?;
        check_id(by, "who revokes the lease is not said")?;
        let reason = reason.map(str::trim).filter(|r| !r.is_empty());
        let sql = format!("SELECT intent, {} FROM leases WHERE holder = ?1 ORDER BY renewed_at DESC", Row::COLUMNS);
        self.write("revoke a lease", |tx, now| {
            let held = {
                let mut statement = tx.prepare_cached(&sql)?;
                statement.query_map(params![session], read_intent_row)?.collect::<rusqlite::Result<Vec<_>>>()?
            };
            // A session holds at most one intent (`acquire` releases the previous one); the newest is
            // named if an older database ever holds more, and all are released.
            let Some((intent, row)) = held.into_iter().next() else { return Ok(Step::Done(None)) };
            tx.prepare_cached(
                "UPDATE leases SET holder = NULL, agent = NULL, taken_from = NULL,
                 expires_at = MIN(expires_at, ?2) WHERE holder = ?1",
            )?
            .execute(params![session, int(now)])?;
            let revocation = Revocation {
                session: session.to_owned(),
                intent,
                agent: row.agent,
                version: row.version,
                by: by.to_owned(),
                reason: reason.map(str::to_owned),
                at_ms: now,
            };
            tx.prepare_cached(
                "INSERT OR REPLACE INTO lease_revocations_v1 (session, intent, agent, version, revoked_by, reason, revoked_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![
                revocation.session,
                revocation.intent,
                revocation.agent,
                int(revocation.version),
                revocation.by,
                revocation.reason,
                int(now)
            ])?;
            let kept_since = now.saturating_sub(u64::try_from(REVOCATION_KEPT.as_millis()).unwrap_or(u64::MAX));
            tx.prepare_cached("DELETE FROM lease_revocations_v1 WHERE revoked_at < ?1")?.execute(params![int(kept_since)])?;
            Ok(Step::Done(Some(revocation)))
        })
    }

    /// The revocation `session` has not yet answered by selecting an intent again, if any.
    pub fn revocation(&self, session: &str) -> Result<Option<Revocation>, LeaseError> {
        let sql = format!("SELECT {REVOCATION_COLUMNS} FROM lease_revocations_v1 WHERE session = ?1");
        self.read("read a session's revocation", |conn, _| {
            conn.prepare_cached(&sql)?.query_row(params![session], read_revocation).optional()
        })
    }

    /// Every revocation not yet answered, newest first.
    pub fn revocations(&self) -> Result<Vec<Revocation>, LeaseError> {
        let sql = format!("SELECT {REVOCATION_COLUMNS} FROM lease_revocations_v1 ORDER BY revoked_at DESC");
        self.read("list revocations", |conn, _| {
            let mut statement = conn.prepare_cached(&sql)?;
            let rows = statement.query_map([], read_revocation)?;
            rows.collect()
        })
    }

    /// The live lease of `session`, if it holds one.
    ///
    /// On the hot path (every judged event of a session whose selection is not cached, and the
    /// recheck of one that is), so it reads the session's rows and picks the newest live one here:
    /// with an `ORDER BY` (or a range on "now") in the query, SQLite (built with STAT4, bundled)
    /// prepared the cached statement again at every run, about half of an evaluation's time in the
    /// binding. A session holds at most one intent (`acquire` releases the previous one).
    pub fn held_by(&self, session: &str) -> Result<Option<Lease>, LeaseError> {
        Ok(self.tenure(session)?.0.live())
    }

    /// Where `session` stands ([`Tenure`]), with this store's "now": the gatekeeper's question at the
    /// session's every call. One read of the session's rows and of those taken over from it (the
    /// same statement as [`Leases::held_by`], so it is prepared once).
    pub fn tenure(&self, session: &str) -> Result<(Tenure, u64), LeaseError> {
        self.read("read a session's lease", |conn, now| {
            let rows =
                conn.prepare_cached(held_by_sql())?.query_map(params![session], read_intent_row)?.collect::<rusqlite::Result<Vec<_>>>()?;
            Ok((Tenure::of(session, rows, now), now))
        })
    }

    /// The end of a turn of `session` that completed: its live lease yields (see the module doc). It
    /// expires now and stays the session's: free for another session to take at once, renewed by
    /// the session's next call if nobody did. Returns how many leases yielded (0 or 1).
    pub fn yield_session(&self, session: &str) -> Result<usize, LeaseError> {
        check_id(session, "the session id is empty")?;
        self.write("yield a session's lease", |tx, now| {
            let sql = "UPDATE leases SET expires_at = ?2 WHERE holder = ?1 AND expires_at > ?2";
            Ok(Step::Done(tx.prepare_cached(sql)?.execute(params![session, int(now)])?))
        })
    }

    /// Every lease whose time is up but whose holder may still renew it, because nobody took the
    /// intent since (a turn's end yielded it, or it lapsed), by intent. Any session may take these.
    pub fn idle(&self) -> Result<Vec<Lease>, LeaseError> {
        let sql = format!("SELECT intent, {} FROM leases WHERE holder IS NOT NULL AND expires_at <= ?1 ORDER BY intent", Row::COLUMNS);
        self.read("list idle leases", |conn, now| {
            let mut statement = conn.prepare_cached(&sql)?;
            let rows = statement.query_map(params![int(now)], read_intent_row)?;
            rows.map(|row| row.map(|(intent, row)| row.lease(&intent))).filter_map(Result::transpose).collect()
        })
    }

    /// The live lease on `intent`; `None` if it is free, released or expired.
    pub fn get(&self, intent: &str) -> Result<Option<Lease>, LeaseError> {
        self.read("read a lease", |conn, now| Ok(read_row(conn, intent)?.filter(|row| row.is_live(now)).and_then(|row| row.lease(intent))))
    }

    /// Every live lease, by intent.
    pub fn list(&self) -> Result<Vec<Lease>, LeaseError> {
        let sql = format!("SELECT intent, {} FROM leases WHERE holder IS NOT NULL AND expires_at > ?1 ORDER BY intent", Row::COLUMNS);
        self.read("list leases", |conn, now| {
            let mut statement = conn.prepare_cached(&sql)?;
            let rows = statement.query_map(params![int(now)], read_intent_row)?;
            rows.map(|row| row.map(|(intent, row)| row.lease(&intent))).filter_map(Result::transpose).collect()
        })
    }

    /// Runs `body` in a `BEGIN IMMEDIATE` transaction, with "now" read once the write lock is held
    /// (a time read before waiting for the lock could already be stale), and commits it. Busy answers
    /// and lost compare-and-swaps are retried until [`BUSY_GIVE_UP`].
    fn write<T>(
        &self,
        op: &'static str,
        mut body: impl FnMut(&Transaction<'_>, u64) -> rusqlite::Result<Step<T>>,
    ) -> Result<T, LeaseError> {
        self.retrying(op, |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let step = body(&tx, self.now())?;
            tx.commit()?;
            Ok(step)
        })
    }

    /// Runs one read. A single statement is its own consistent snapshot, and in WAL mode it does not
    /// wait for writers, so no transaction is needed; busy (rare, e.g. during WAL recovery) is retried.
    fn read<T>(&self, op: &'static str, mut body: impl FnMut(&Connection, u64) -> rusqlite::Result<T>) -> Result<T, LeaseError> {
        self.retrying(op, |conn| body(conn, self.now()).map(Step::Done))
    }

    fn now(&self) -> u64 {
        (self.clock)().min(MAX_MS)
    }

    /// Calls `attempt` until it neither answers busy nor asks to be retried, sleeping a jittered,
    /// growing backoff between tries (so processes that collided do not collide again in step), for
    /// at most [`BUSY_GIVE_UP`].
    fn retrying<T>(
        &self,
        op: &'static str,
        mut attempt: impl FnMut(&mut Connection) -> rusqlite::Result<Step<T>>,
    ) -> Result<T, LeaseError> {
        let started = Instant::now();
        let jitter = RandomState::new();
        let mut tries = 0u32;
        loop {
            let outcome = self.state.lock().and_then(|mut conn| attempt(&mut conn));
            match outcome {
                Ok(Step::Done(value)) => return Ok(value),
                Ok(Step::Retry) => {}
                Err(error) if is_busy(&error) => {}
                Err(source) => return Err(LeaseError::Sqlite { db: self.path().to_owned(), op, source }),
            }
            let waited = started.elapsed();
            if waited >= BUSY_GIVE_UP {
                return Err(LeaseError::Busy { db: self.path().to_owned(), waited });
            }
            // 0.1 ms doubling to a 25 ms ceiling, each sleep drawn uniformly from its upper half.
            let ceiling = 100u64 << tries.min(8);
            let micros = ceiling / 2 + jitter.hash_one(tries) % (ceiling / 2 + 1);
            std::thread::sleep(Duration::from_micros(micros).min(BUSY_GIVE_UP.saturating_sub(waited)));
            tries += 1;
        }
    }
}

/// The operations of a lease table, whichever database holds it: this repository's SQLite file
/// ([`Leases`]) or a team's PostgreSQL database (`scope::team_leases::TeamLeases`), with one
/// meaning, stated on [`Leases`]' methods. The gatekeeper judges through it, so the two can never
/// disagree about a decision.
pub trait LeaseStore: Send + Sync + fmt::Debug {
    fn acquire(&self, intent: &str, holder: &Holder, ttl: Duration) -> Result<Lease, AcquireError>;
    fn renew(&self, intent: &str, session: &str, ttl: Duration) -> Result<Lease, AcquireError>;
    fn release(&self, intent: &str, session: &str) -> Result<bool, LeaseError>;
    fn release_session(&self, session: &str) -> Result<usize, LeaseError>;
    fn revoke(&self, session: &str, by: &str, reason: Option<&str>) -> Result<Option<Revocation>, LeaseError>;
    fn revocation(&self, session: &str) -> Result<Option<Revocation>, LeaseError>;
    fn revocations(&self) -> Result<Vec<Revocation>, LeaseError>;
    fn held_by(&self, session: &str) -> Result<Option<Lease>, LeaseError>;
    /// [`LeaseStore::held_by`] with the store's "now" in unix ms (the database's clock, for a team),
    /// against which the lease's expiry means something.
    fn held_by_at(&self, session: &str) -> Result<(Option<Lease>, u64), LeaseError>;
    fn get(&self, intent: &str) -> Result<Option<Lease>, LeaseError>;
    fn list(&self) -> Result<Vec<Lease>, LeaseError>;
    /// [`Leases::tenure`], with the store's "now" (the database's clock, for a team).
    fn tenure(&self, session: &str) -> Result<(Tenure, u64), LeaseError>;
    fn yield_session(&self, session: &str) -> Result<usize, LeaseError>;
    fn idle(&self) -> Result<Vec<Lease>, LeaseError>;
}

impl LeaseStore for Leases {
    fn acquire(&self, intent: &str, holder: &Holder, ttl: Duration) -> Result<Lease, AcquireError> {
        Leases::acquire(self, intent, holder, ttl)
    }
    fn renew(&self, intent: &str, session: &str, ttl: Duration) -> Result<Lease, AcquireError> {
        Leases::renew(self, intent, session, ttl)
    }
    fn release(&self, intent: &str, session: &str) -> Result<bool, LeaseError> {
        Leases::release(self, intent, session)
    }
    fn release_session(&self, session: &str) -> Result<usize, LeaseError> {
        Leases::release_session(self, session)
    }
    fn revoke(&self, session: &str, by: &str, reason: Option<&str>) -> Result<Option<Revocation>, LeaseError> {
        Leases::revoke(self, session, by, reason)
    }
    fn revocation(&self, session: &str) -> Result<Option<Revocation>, LeaseError> {
        Leases::revocation(self, session)
    }
    fn revocations(&self) -> Result<Vec<Revocation>, LeaseError> {
        Leases::revocations(self)
    }
    fn held_by(&self, session: &str) -> Result<Option<Lease>, LeaseError> {
        Leases::held_by(self, session)
    }
    fn held_by_at(&self, session: &str) -> Result<(Option<Lease>, u64), LeaseError> {
        let (tenure, now) = Leases::tenure(self, session)?;
        Ok((tenure.live(), now))
    }
    fn get(&self, intent: &str) -> Result<Option<Lease>, LeaseError> {
        Leases::get(self, intent)
    }
    fn list(&self) -> Result<Vec<Lease>, LeaseError> {
        Leases::list(self)
    }
    fn tenure(&self, session: &str) -> Result<(Tenure, u64), LeaseError> {
        Leases::tenure(self, session)
    }
    fn yield_session(&self, session: &str) -> Result<usize, LeaseError> {
        Leases::yield_session(self, session)
    }
    fn idle(&self) -> Result<Vec<Lease>, LeaseError> {
        Leases::idle(self)
    }
}

/// The query of [`Leases::tenure`] and [`Leases::held_by`]: the session's rows and those taken
/// over from it.
fn held_by_sql() -> &'static str {
    static SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SQL.get_or_init(|| format!("SELECT intent, {} FROM leases WHERE holder = ?1 OR taken_from = ?1", Row::COLUMNS))
}

pub(crate) fn check_id(id: &str, empty: &'static str) -> Result<(), LeaseError> {
    if id.is_empty() { Err(LeaseError::Invalid(empty)) } else { Ok(()) }
}

/// The largest time SQLite's signed 64-bit INTEGER stores: "never expires" in practice.
pub(crate) const MAX_MS: u64 = i64::MAX as u64;

/// The time to live in whole milliseconds; a lease shorter than one would be expired when written.
pub(crate) fn ttl_ms(ttl: Duration) -> Result<u64, LeaseError> {
    match ttl.as_millis() {
        0 => Err(LeaseError::Invalid("the lease time to live is under a millisecond")),
        ms => Ok(u64::try_from(ms).unwrap_or(MAX_MS).min(MAX_MS)),
    }
}

/// A time or version as SQLite stores it. Every value written is at most [`MAX_MS`], so this is exact;
/// rusqlite leaves `u64` out of its conversions precisely because the top half would not fit.
pub(crate) fn int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// A stored time or version back; the table never holds a negative one, and 0 would read as expired.
pub(crate) fn uint(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// When a lease taken at `now` for `ttl` milliseconds expires, within what the table can store.
pub(crate) fn expiry(now: u64, ttl: u64) -> u64 {
    now.saturating_add(ttl).min(MAX_MS)
}

/// The answer to a session that found `row` held by another: [`AcquireError::Held`], or a fresh try
/// if the row has no holder after all (only reachable if the write lock did not hold).
fn held(row: Row, intent: &str) -> Step<Result<Lease, AcquireError>> {
    match row.lease(intent) {
        Some(lease) => Step::Done(Err(AcquireError::Held(Box::new(lease)))),
        None => Step::Retry,
    }
}

fn read_row(conn: &Connection, intent: &str) -> rusqlite::Result<Option<Row>> {
    let sql = format!("SELECT {} FROM leases WHERE intent = ?1", Row::COLUMNS);
    conn.prepare_cached(&sql)?.query_row(params![intent], |row| Row::read(row, 0)).optional()
}

/// A `SELECT intent, <Row::COLUMNS>` result.
fn read_intent_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<(String, Row)> {
    Ok((row.get(0)?, Row::read(row, 1)?))
}

const REVOCATION_COLUMNS: &str = "session, intent, agent, version, revoked_by, reason, revoked_at";

/// A `SELECT <REVOCATION_COLUMNS>` result.
fn read_revocation(row: &rusqlite::Row<'_>) -> rusqlite::Result<Revocation> {
    Ok(Revocation {
        session: row.get(0)?,
        intent: row.get(1)?,
        agent: row.get(2)?,
        version: uint(row.get(3)?),
        by: row.get(4)?,
        reason: row.get(5)?,
        at_ms: uint(row.get(6)?),
    })
}

/// Writes `lease` over its intent's row if the row still has version `expected`: the compare-and-swap.
/// `false` if it did not (someone else won), and nothing was written.
fn cas(tx: &Transaction<'_>, expected: u64, lease: &Lease, taken_from: Option<&str>) -> rusqlite::Result<bool> {
    let changed = tx
        .prepare_cached(
            "UPDATE leases SET holder = ?3, agent = ?4, version = ?5, acquired_at = ?6, renewed_at = ?7,
             expires_at = ?8, taken_from = ?9, worktree = ?10, worktree_root = ?11, branch = ?12, machine = ?13
             WHERE intent = ?1 AND version = ?2",
        )?
        .execute(params![
            lease.intent,
            int(expected),
            lease.session,
            lease.agent,
            int(lease.version),
            int(lease.acquired_at_ms),
            int(lease.renewed_at_ms),
            int(lease.expires_at_ms),
            taken_from,
            lease.checkout.as_ref().map(|c| &c.worktree),
            lease.checkout.as_ref().map(|c| &c.root),
            lease.checkout.as_ref().and_then(|c| c.branch.as_ref()),
            lease.machine
        ])?;
    Ok(changed == 1)
}

/// Writes the first lease of an intent; `false` if a row appeared since it was read as missing.
fn insert(tx: &Transaction<'_>, lease: &Lease) -> rusqlite::Result<bool> {
    let changed = tx
        .prepare_cached(
            "INSERT INTO leases (intent, holder, agent, version, acquired_at, renewed_at, expires_at, worktree, worktree_root, branch, machine)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) ON CONFLICT (intent) DO NOTHING",
        )?
        .execute(params![
            lease.intent,
            lease.session,
            lease.agent,
            int(lease.version),
            int(lease.acquired_at_ms),
            int(lease.renewed_at_ms),
            int(lease.expires_at_ms),
            lease.checkout.as_ref().map(|c| &c.worktree),
            lease.checkout.as_ref().map(|c| &c.root),
            lease.checkout.as_ref().and_then(|c| c.branch.as_ref()),
            lease.machine
        ])?;
    Ok(changed == 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A session's lease is looked up at every judged event: its statement is prepared once, not
    /// again at each run (an `ORDER BY` in it made SQLite re-prepare it every time).
    #[test]
    fn the_lookup_of_a_sessions_lease_is_prepared_once() {
        let dir = tempfile::tempdir().unwrap();
        let leases = Leases::open(&dir.path().join("state.db")).unwrap();
        let ttl = Duration::from_secs(60);
        leases.acquire("INT-001", &Holder::new("s-1", None), ttl).unwrap();
        for _ in 0..5 {
            assert_eq!(leases.held_by("s-1").unwrap().map(|l| l.intent).as_deref(), Some("INT-001"));
            assert_eq!(leases.held_by("s-2").unwrap(), None);
        }
        let conn = leases.state.lock().unwrap();
        let statement = conn.prepare_cached(held_by_sql()).unwrap();
        assert_eq!(statement.get_status(rusqlite::StatementStatus::Run), 10);
        assert_eq!(statement.get_status(rusqlite::StatementStatus::RePrepare), 0, "prepared again at a run");
    }

    /// The compare-and-swap itself, which `BEGIN IMMEDIATE` keeps out of reach of the public API: a
    /// write decided on a version that has moved on changes nothing, and the caller is shown the
    /// holder that won.
    #[test]
    fn a_write_decided_on_a_stale_version_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let leases = Leases::open(&dir.path().join("state.db")).unwrap();
        let ttl = Duration::from_secs(60);
        let first = leases.acquire("INT-001", &Holder::new("s-1", None), ttl).unwrap();
        assert!(leases.release("INT-001", "s-1").unwrap());
        // s-1 read the intent free at version 1 and means to take it as version 2; s-2 got there first.
        let winner = leases.acquire("INT-001", &Holder::new("s-2", None), ttl).unwrap();
        assert_eq!(winner.version, 2);

        let mut conn = leases.state.lock().unwrap();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).unwrap();
        let stale = Lease { version: 2, ..first };
        assert!(!cas(&tx, 1, &stale, None).unwrap(), "version 1 is gone");
        assert!(!insert(&tx, &stale).unwrap(), "the row exists");
        match held(read_row(&tx, "INT-001").unwrap().unwrap(), "INT-001") {
            Step::Done(Err(AcquireError::Held(lease))) => assert_eq!(*lease, winner),
            _ => panic!("the loser of a compare-and-swap is told who holds the intent"),
        }
        tx.commit().unwrap();
        drop(conn);
        assert_eq!(leases.get("INT-001").unwrap(), Some(winner));
    }
}
