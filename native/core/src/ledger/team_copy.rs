//! The ledger's copy in a team's PostgreSQL database (`base::team`): every record this worktree made
//! durable, copied to `chokepoint.ledger_records` with the machine, worktree and branch that wrote
//! it, so that a team asks one database what every machine's agents did (`trace show --team`, the
//! sidebar's trace). The local chains stay the source of truth; the copy is for the team's queries.
//!
//! - **Catching up, never keeping a queue.** The copier asks the database how far each of this
//!   worktree's chains was copied (its largest `seq` there, and that record's hash) and copies what
//!   follows from the chain's file. Nothing waits in memory to be copied, so a database that was
//!   down, or a process that exited before copying, loses nothing: the next copy of any process of
//!   this worktree starts where the database says the last one ended.
//! - **Only what is durable here.** A chain is copied up to its head (`head.rs`), which the ledger's
//!   syncer raises only after the sync that covers those records; a line written and not yet synced
//!   is never copied, so the team never sees a record this machine could still lose. The chains
//!   copied are the ones this worktree has a head for: those it wrote. A chain merged in from
//!   another branch is its writer's to copy, and the legacy single file (`agent_trace`, a name every
//!   worktree shares) predates the copy and is not copied.
//! - **Idempotent.** Rows are keyed by (namespace, chain, seq) and inserted `ON CONFLICT DO
//!   NOTHING`, so two copiers of one worktree at once (the extension's engine and `trace show
//!   --team`), or an operation `TeamDb::run` repeats after a broken connection, insert nothing twice.
//!   One multi-row `INSERT … SELECT FROM unnest(…)` per batch of [`BATCH`] records.
//! - **The chain is checked as it is copied.** Each copied line must follow the one before it (its
//!   `seq`, and `prev` the hash of the record the database holds last): a chain rewritten locally
//!   after part of it was copied is not copied further ([`CopyError::Diverged`]) rather than mixed
//!   with its earlier version; `trace verify` tells what happened to it.
//! - **Who copies, and when** ([`Copier`]). Engines that live (the extension's, `chokepoint serve`)
//!   copy on a thread of their own: woken after each durable batch (the ledger's syncer calls a
//!   waker that sets a flag and, only when the copier sleeps, wakes it) and every [`PERIOD`] anyway,
//!   which retries after the database comes back. The writer never waits for it. A hook process
//!   (`chokepoint hook`, one call) does not copy: its agent waits for the process to exit, and a copy
//!   costs a connection to the database (a TCP and authentication round trip, TLS on top), a
//!   migration check and two statements, which measured 21 ms p50 on a loopback database
//!   (`tests/team_ledger.rs::measure_a_copy_from_a_fresh_process`, ignored), more than twice a whole
//!   `chokepoint hook` call, and on a remote one far more. Its
//!   records are copied by the next live engine of the worktree, or by `trace show --team`, which
//!   copies this worktree's pending records before it lists.
//! - **Not a gate.** A copy that fails is reported ([`CopyStatus`]: records waiting, the last
//!   error; `Engine.teamCopyStatus` in the extension), never a denial, and never slows the ledger.
//!
//! Pinned by `native/core/tests/team_ledger.rs`, `native/cli/tests/team_trace.rs` (two clones, the
//! database killed mid-run) and `tests/node/team_trace.test.js`.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::base::sidecar::Sidecar;
use crate::base::team::{TeamDb, TeamError};

use super::chains::{self, LEGACY};
use super::record::{GENESIS, Record, sha256_hex};

/// The component name of the copy's tables in `chokepoint.schema_versions`.
pub const COMPONENT: &str = "ledger";

/// The copy's schema, one step per version (`TeamDb::migrate`).
pub(super) const STEPS: &[&str] = &["CREATE TABLE chokepoint.ledger_records (
        namespace   text NOT NULL,       -- the repository (TeamDb::namespace)
        machine     text NOT NULL,       -- CHOKEPOINT_MACHINE or the host name of the writer
        worktree    text NOT NULL,       -- the worktree's name (its root folder's)
        branch      text,                -- the branch checked out when the record was copied
        chain       text NOT NULL,       -- the chain's name (ledger/chains.rs), unique without coordination
        seq         bigint NOT NULL,
        record_hash text NOT NULL,       -- SHA-256 (hex) of the record's line, as the next record's prev
        at_ms       bigint NOT NULL,     -- the record's time, unix milliseconds
        session     text,
        agent       text,
        intent      text,
        tool        text,
        decision    text,
        record      jsonb NOT NULL,      -- the whole record
        copied_at   timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (namespace, chain, seq)
    );
    CREATE INDEX ledger_records_by_time ON chokepoint.ledger_records (namespace, at_ms, chain, seq);"];

/// At most this many records go into one `INSERT` (one statement of 14 arrays, so the parameter
/// count does not grow with the batch).
pub const BATCH: usize = 500;

/// How often a live engine's copier catches up when nothing woke it: after a database came back, or
/// records another process of the worktree (a hook) made durable.
pub const PERIOD: Duration = Duration::from_secs(5);

/// Why a copy did not copy everything it should have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CopyError {
    /// The database could not be reached or refused an operation.
    Team(TeamError),
    /// A chain's file or the worktree's heads could not be read.
    Read { what: String, cause: String },
    /// A chain here no longer continues what the database holds of it (rewritten, truncated or
    /// replaced by git since part of it was copied): it is not copied further.
    Diverged { chain: String, seq: u64, detail: String },
}

impl std::fmt::Display for CopyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CopyError::Team(e) => write!(f, "the ledger's copy to the team's database failed: {e}"),
            CopyError::Read { what, cause } => write!(f, "the ledger's copy cannot read {what}: {cause}"),
            CopyError::Diverged { chain, seq, detail } => write!(
                f,
                "chain {chain} no longer continues the copy in the team's database at record {seq} ({detail}); it is not copied \
                 further: `chokepoint trace verify` tells what happened to it"
            ),
        }
    }
}

impl std::error::Error for CopyError {}

impl From<TeamError> for CopyError {
    fn from(e: TeamError) -> Self {
        CopyError::Team(e)
    }
}

/// What one copy did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Copied {
    /// Rows inserted (records another copier had copied meanwhile are not counted).
    pub inserted: u64,
    /// Durable records of this worktree the database still lacks after this copy.
    pub waiting: u64,
}

/// The copy's state, for the engine's info, `trace show --team` and the sidebar.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CopyStatus {
    /// Records this copier inserted since it began.
    pub copied: u64,
    /// Durable records of this worktree the database lacked after the last attempt (those of
    /// chains it could not read included, as far as their heads say).
    pub waiting: u64,
    /// The last attempt's failure; `None` once an attempt copied everything.
    pub last_error: Option<CopyError>,
    /// When the last attempt ended (unix milliseconds, this machine's clock); 0 before the first.
    pub last_attempt_ms: u64,
}

/// Where the last copy left a chain's file: the offset after record `seq`, whose line hashes to
/// `hash`, so the next copy reads only what follows (checked: the line there must continue it).
#[derive(Debug, Clone)]
struct Cursor {
    offset: u64,
    seq: u64,
    hash: String,
}

/// The copy of one worktree's ledger into one team database.
#[derive(Debug)]
pub struct TeamCopy {
    db: Arc<TeamDb>,
    sidecar: Sidecar,
    worktree: String,
    cursors: Mutex<HashMap<String, Cursor>>,
    status: Mutex<CopyStatus>,
    /// One copy at a time per handle: two threads of one engine would read the same tail twice.
    copying: Mutex<()>,
}

/// One record read from a chain, as it is inserted.
struct Row {
    seq: i64,
    hash: String,
    at_ms: i64,
    session: Option<String>,
    agent: Option<String>,
    intent: Option<String>,
    tool: Option<String>,
    decision: Option<String>,
    json: String,
}

impl TeamCopy {
    pub fn new(db: Arc<TeamDb>, sidecar: Sidecar) -> TeamCopy {
        let worktree = match sidecar.repo() {
            Some(repo) => repo.worktree_name(),
            None => sidecar.workspace_root().file_name().map_or_else(|| "-".to_owned(), |n| n.to_string_lossy().into_owned()),
        };
        TeamCopy { db, sidecar, worktree, cursors: Mutex::default(), status: Mutex::default(), copying: Mutex::default() }
    }

    pub fn db(&self) -> &Arc<TeamDb> {
        &self.db
    }

    /// The worktree's name in the copied rows.
    pub fn worktree(&self) -> &str {
        &self.worktree
    }

    pub fn status(&self) -> CopyStatus {
        self.status.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Copies every durable record of this worktree the database lacks, and keeps what happened
    /// for [`TeamCopy::status`]. A chain that cannot be copied (unreadable, diverged) does not stop
    /// the others; the first such failure is returned after them. A database that cannot be reached
    /// stops the copy at once.
    pub fn copy_pending(&self) -> Result<Copied, CopyError> {
        let _one = self.copying.lock().unwrap_or_else(PoisonError::into_inner);
        let outcome = self.copy_locked();
        let mut status = self.status.lock().unwrap_or_else(PoisonError::into_inner);
        status.last_attempt_ms = crate::base::clock::now_ms();
        match &outcome {
            Ok(copied) => {
                status.copied += copied.inserted;
                status.waiting = copied.waiting;
                status.last_error = None;
            }
            Err((copied, error)) => {
                status.copied += copied.inserted;
                status.waiting = copied.waiting;
                status.last_error = Some(error.clone());
            }
        }
        outcome.map_err(|(_, e)| e)
    }

    fn copy_locked(&self) -> Result<Copied, (Copied, CopyError)> {
        let mut copied = Copied::default();
        // The durable end of each chain this worktree wrote.
        let heads = super::head::read_all(&self.sidecar)
            .map_err(|e| (copied, CopyError::Read { what: "the ledger's heads".to_owned(), cause: e.to_string() }))?;
        let durable: Vec<(String, u64)> = heads
            .into_iter()
            .filter(|(chain, _)| chain != LEGACY)
            .filter_map(|(chain, heads)| heads.strongest().map(|h| (chain, h.count)))
            .filter(|(_, count)| *count > 0)
            .collect();
        if durable.is_empty() {
            return Ok(copied);
        }
        // Before the database answers, what this handle copied last is the best estimate of what it
        // holds.
        let known: HashMap<String, u64> =
            self.cursors.lock().unwrap_or_else(PoisonError::into_inner).iter().map(|(chain, c)| (chain.clone(), c.seq)).collect();
        let waiting_all = |copied: Copied| Copied {
            waiting: durable.iter().map(|(chain, n)| n.saturating_sub(known.get(chain).copied().unwrap_or(0))).sum(),
            ..copied
        };
        self.db.migrate(COMPONENT, STEPS).map_err(|e| (waiting_all(copied), e.into()))?;
        let names: Vec<String> = durable.iter().map(|(chain, _)| chain.clone()).collect();
        let namespace = self.db.namespace().to_owned();
        let copied_so_far: HashMap<String, (u64, String)> = self
            .db
            .run("read how far the ledger was copied", move |client| {
                let rows = client.query(
                    "SELECT c, r.seq, r.record_hash FROM unnest($2::text[]) AS c
                     CROSS JOIN LATERAL (SELECT seq, record_hash FROM chokepoint.ledger_records
                                         WHERE namespace = $1 AND chain = c ORDER BY seq DESC LIMIT 1) AS r",
                    &[&namespace, &names],
                )?;
                Ok(rows.iter().map(|row| (row.get::<_, String>(0), (row.get::<_, i64>(1) as u64, row.get::<_, String>(2)))).collect())
            })
            .map_err(|e| (waiting_all(copied), e.into()))?;
        let branch = self.sidecar.repo().and_then(|r| r.branch());
        let mut first_error = None;
        let lacking = |chain: &str, count: u64| count.saturating_sub(copied_so_far.get(chain).map_or(0, |(done, _)| *done));
        for (at, (chain, count)) in durable.iter().enumerate() {
            let (done, done_hash) = copied_so_far.get(chain).cloned().unwrap_or((0, GENESIS.to_owned()));
            if done >= *count {
                continue;
            }
            // How far the database holds the chain, raised as batches go in.
            let mut reached = done;
            let mut outcome = self.copy_chain(chain, &done_hash, *count, branch.as_deref(), true, &mut reached, &mut copied);
            if reached == done && matches!(outcome, Err(CopyError::Diverged { .. })) {
                // The file may have been replaced under the cursor (git): read it again from its start.
                outcome = self.copy_chain(chain, &done_hash, *count, branch.as_deref(), false, &mut reached, &mut copied);
            }
            copied.waiting += count - reached;
            match outcome {
                Ok(()) => {}
                Err(error @ CopyError::Team(_)) => {
                    // The database is gone: what the other chains lack waits too.
                    copied.waiting += durable[at + 1..].iter().map(|(chain, count)| lacking(chain, *count)).sum::<u64>();
                    return Err((copied, error));
                }
                Err(error) => {
                    first_error.get_or_insert(error);
                }
            }
        }
        match first_error {
            None => Ok(copied),
            Some(error) => Err((copied, error)),
        }
    }

    /// Copies records `reached + 1 ..= count` of `chain`, whose record `reached` the database holds
    /// with `done_hash`, in batches of [`BATCH`]; raises `reached` as each batch goes in and counts
    /// the rows inserted into `copied`. `use_cursor`: start where the last copy left the file.
    #[allow(clippy::too_many_arguments)] // one private step of `copy_locked`, which holds them all
    fn copy_chain(
        &self,
        chain: &str,
        done_hash: &str,
        count: u64,
        branch: Option<&str>,
        use_cursor: bool,
        reached: &mut u64,
        copied: &mut Copied,
    ) -> Result<(), CopyError> {
        let done = *reached;
        let path = chains::path_of(&self.sidecar, chain);
        let read_error = |e: std::io::Error| CopyError::Read { what: format!("chain {chain} ({})", path.display()), cause: e.to_string() };
        let file = std::fs::File::open(&path).map_err(read_error)?;
        let mut reader = BufReader::new(file);
        // Where the last copy ended, when it ended where the database says: only the tail is read.
        let cursor = if use_cursor { self.cursors.lock().unwrap_or_else(PoisonError::into_inner).get(chain).cloned() } else { None };
        let mut offset = 0;
        if let Some(cursor) = cursor.filter(|c| c.seq == done && c.hash == done_hash) {
            reader.seek(SeekFrom::Start(cursor.offset)).map_err(read_error)?;
            offset = cursor.offset;
        }
        let (mut expect_seq, mut expect_prev) = (done + 1, done_hash.to_owned());
        let mut rows = Vec::new();
        let mut line = String::new();
        let mut from_start = offset == 0;
        let diverged = |seq: u64, detail: String| CopyError::Diverged { chain: chain.to_owned(), seq, detail };
        let mut stopped = None;
        while expect_seq <= count {
            line.clear();
            let n = reader.read_line(&mut line).map_err(read_error)?;
            if n == 0 || !line.ends_with('\n') {
                // The file ends before its head: git checked out an older version, or it was cut;
                // the rest waits for the file to hold it again.
                break;
            }
            // `offset` stays before a line that is not copied, so a cursor never skips it.
            let line_end = offset + n as u64;
            let text = line.trim_end_matches('\n');
            let record = match Record::from_line(text) {
                Ok(record) => record,
                Err(e) => {
                    stopped = Some(diverged(expect_seq, e.to_string()));
                    break;
                }
            };
            if from_start && record.seq < expect_seq {
                // Before what is left to copy (a first read of the chain from its start); the last
                // copied record must be the one the database holds.
                if record.seq == expect_seq - 1 && sha256_hex(text.as_bytes()) != expect_prev {
                    stopped = Some(diverged(record.seq, "its record differs from the copied one".to_owned()));
                    break;
                }
                offset = line_end;
                continue;
            }
            from_start = false;
            if record.seq != expect_seq || record.prev != expect_prev {
                stopped = Some(diverged(expect_seq, format!("found record {} whose prev does not follow the copied chain", record.seq)));
                break;
            }
            offset = line_end;
            let hash = sha256_hex(text.as_bytes());
            rows.push(Row::of(&record, &hash, text));
            expect_seq += 1;
            expect_prev = hash;
            if rows.len() == BATCH || expect_seq > count {
                self.insert_batch(chain, branch, &mut rows, Cursor { offset, seq: expect_seq - 1, hash: expect_prev.clone() }, copied)?;
                *reached = expect_seq - 1;
            }
        }
        // What was read before the end or a divergence is copied all the same.
        if !rows.is_empty() {
            self.insert_batch(chain, branch, &mut rows, Cursor { offset, seq: expect_seq - 1, hash: expect_prev.clone() }, copied)?;
            *reached = expect_seq - 1;
        }
        match stopped {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    /// Inserts `rows` (emptied) and remembers where they ended in the chain's file.
    fn insert_batch(
        &self,
        chain: &str,
        branch: Option<&str>,
        rows: &mut Vec<Row>,
        end: Cursor,
        copied: &mut Copied,
    ) -> Result<(), CopyError> {
        copied.inserted += self.insert(chain, branch, std::mem::take(rows))?;
        self.cursors.lock().unwrap_or_else(PoisonError::into_inner).insert(chain.to_owned(), end);
        Ok(())
    }

    /// One batch of one chain's records, in one statement.
    fn insert(&self, chain: &str, branch: Option<&str>, rows: Vec<Row>) -> Result<u64, CopyError> {
        let (namespace, machine, worktree) = (self.db.namespace().to_owned(), self.db.machine().to_owned(), self.worktree.clone());
        let (chain, branch) = (chain.to_owned(), branch.map(str::to_owned));
        let mut columns = Columns::default();
        for row in rows {
            columns.push(row);
        }
        Ok(self.db.run("copy the ledger's records", move |client| {
            client.execute(
                "INSERT INTO chokepoint.ledger_records
                     (namespace, machine, worktree, branch, chain, seq, record_hash, at_ms, session, agent, intent, tool, decision, record)
                 SELECT $1, $2, $3, $4, $5, r.seq, r.hash, r.at_ms, r.session, r.agent, r.intent, r.tool, r.decision, r.json::jsonb
                 FROM unnest($6::bigint[], $7::text[], $8::bigint[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[])
                      AS r(seq, hash, at_ms, session, agent, intent, tool, decision, json)
                 ON CONFLICT (namespace, chain, seq) DO NOTHING",
                &[
                    &namespace,
                    &machine,
                    &worktree,
                    &branch,
                    &chain,
                    &columns.seq,
                    &columns.hash,
                    &columns.at_ms,
                    &columns.session,
                    &columns.agent,
                    &columns.intent,
                    &columns.tool,
                    &columns.decision,
                    &columns.json,
                ],
            )
        })?)
    }
}

impl Row {
    fn of(record: &Record, hash: &str, line: &str) -> Row {
        let at_ms = super::index::parse_time(&record.time).unwrap_or(0) as i64;
        // PostgreSQL's jsonb holds no NUL character; the line's hash is of the line as written.
        let json = if line.contains("\\u0000") { line.replace("\\u0000", "\\ufffd") } else { line.to_owned() };
        Row {
            seq: record.seq as i64,
            hash: hash.to_owned(),
            at_ms,
            session: record.session.clone(),
            agent: record.agent.clone(),
            intent: record.intent.clone(),
            tool: record.tool.clone(),
            decision: record.decision.as_ref().map(|d| d.decision.clone()),
            json,
        }
    }
}

/// A batch's rows as the arrays `unnest` takes.
#[derive(Default)]
struct Columns {
    seq: Vec<i64>,
    hash: Vec<String>,
    at_ms: Vec<i64>,
    session: Vec<Option<String>>,
    agent: Vec<Option<String>>,
    intent: Vec<Option<String>>,
    tool: Vec<Option<String>>,
    decision: Vec<Option<String>>,
    json: Vec<String>,
}

impl Columns {
    fn push(&mut self, row: Row) {
        self.seq.push(row.seq);
        self.hash.push(row.hash);
        self.at_ms.push(row.at_ms);
        self.session.push(row.session);
        self.agent.push(row.agent);
        self.intent.push(row.intent);
        self.tool.push(row.tool);
        self.decision.push(row.decision);
        self.json.push(row.json);
    }
}

/// The wake-up a live engine's copier waits on: set after each durable batch, and when it should stop.
#[derive(Debug, Default)]
struct Signal {
    dirty: bool,
    stop: bool,
}

#[derive(Debug, Default)]
struct CopierShared {
    target: Mutex<Option<Arc<TeamCopy>>>,
    signal: Mutex<Signal>,
    wake: Condvar,
}

/// A live engine's copier: a thread that copies this worktree's ledger to the team's database soon
/// after records become durable and every [`PERIOD`]. Dropping it stops the thread (without waiting
/// for a copy in flight, which ends within the database's deadline).
#[derive(Debug)]
pub struct Copier {
    shared: Arc<CopierShared>,
}

/// How long the copier lets wake-ups gather before it copies: a burst of gates is one copy.
const GATHER: Duration = Duration::from_millis(100);

impl Copier {
    /// Starts the thread, copying to `target` (none: it sleeps until [`Copier::follow`] gives one).
    pub fn start(target: Option<Arc<TeamCopy>>) -> std::io::Result<Copier> {
        let shared = Arc::new(CopierShared { target: Mutex::new(target), ..CopierShared::default() });
        let thread = Arc::clone(&shared);
        std::thread::Builder::new().name("chokepoint-team-copy".into()).spawn(move || run(&thread))?;
        Ok(Copier { shared })
    }

    /// Copies to `target` from now on (a reload changed the team's database, or turned it off).
    pub fn follow(&self, target: Option<Arc<TeamCopy>>) {
        let changed = {
            let mut current = self.shared.target.lock().unwrap_or_else(PoisonError::into_inner);
            let changed = match (&*current, &target) {
                (Some(a), Some(b)) => !Arc::ptr_eq(a, b),
                (None, None) => false,
                _ => true,
            };
            *current = target;
            changed
        };
        if changed {
            self.wake();
        }
    }

    /// What the copier copies to now.
    pub fn target(&self) -> Option<Arc<TeamCopy>> {
        self.shared.target.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Says that records became durable: the copier copies soon. Cheap enough for the ledger's
    /// syncer: a flag, and a wake-up only when the copier was not already told.
    pub fn wake(&self) {
        wake(&self.shared);
    }

    /// [`Copier::wake`] as a function the ledger keeps (`Ledger::on_durable`), holding the copier
    /// weakly so that the ledger does not keep a dropped copier's state alive.
    pub fn waker(&self) -> impl Fn() + Send + Sync + 'static {
        let shared = Arc::downgrade(&self.shared);
        move || {
            if let Some(shared) = shared.upgrade() {
                wake(&shared);
            }
        }
    }
}

fn wake(shared: &CopierShared) {
    let mut signal = shared.signal.lock().unwrap_or_else(PoisonError::into_inner);
    if !signal.dirty {
        signal.dirty = true;
        shared.wake.notify_one();
    }
}

impl Drop for Copier {
    fn drop(&mut self) {
        self.shared.signal.lock().unwrap_or_else(PoisonError::into_inner).stop = true;
        self.shared.wake.notify_one();
    }
}

fn run(shared: &CopierShared) {
    loop {
        {
            let mut signal = shared.signal.lock().unwrap_or_else(PoisonError::into_inner);
            let deadline = Instant::now() + PERIOD;
            while !signal.dirty && !signal.stop {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                signal = shared.wake.wait_timeout(signal, left).unwrap_or_else(PoisonError::into_inner).0;
            }
            if signal.stop {
                return;
            }
            let woken = signal.dirty;
            drop(signal);
            if woken {
                std::thread::sleep(GATHER);
            }
            shared.signal.lock().unwrap_or_else(PoisonError::into_inner).dirty = false;
        }
        let target = shared.target.lock().unwrap_or_else(PoisonError::into_inner).clone();
        if let Some(target) = target {
            // Kept in its status; the next round retries.
            let _ = target.copy_pending();
        }
    }
}
