//! The chain heads: how many records each chain of the ledger holds and the hash of its last one,
//! kept in SQLite (`ledger_heads_v2` in the worktree's `.orchestration/state.db`, one row per chain
//! this worktree wrote; the legacy single file's in `ledger_head_v1`) beside the ledger itself.
//!
//! - **Why per chain, and per worktree.** A chain is appended by one worktree only (`chains.rs`), so
//!   the worktree that wrote it is the one that can vouch for its end; a chain merged in from another
//!   branch has no head here and verifies on its own. A chain this worktree left (its file was not as
//!   its head said: a branch switch, a stash, a reset, or tampering) keeps its head as the last known
//!   one, for `trace verify` to compare with what the checkout holds.
//!
//! - **Why a head at all.** The hash chain catches an edited, inserted, deleted or reordered line, but
//!   not lines cut off the end (what is left still chains) nor a tail cut off and written anew. A
//!   record count and hash kept elsewhere catch both: a ledger with fewer records than the head, or
//!   whose record number `count` does not hash to the head's hash, was truncated or rewritten.
//! - **Why it may lag but never lead.** The writer's syncer raises the head only after the sync that
//!   covers those records, and never lowers it. A crash between the two leaves a head that counts
//!   fewer records than the ledger holds, which is harmless: the next append catches it up. A head
//!   that counted more would be indistinguishable from a truncation. Only a reseal (`reseal.rs`)
//!   clears it, under the ledger's lock, as it starts a new chain.
//! - **Why `synchronous = NORMAL`** (set for the whole state database, `base::sqlite`). A power cut can
//!   lose the latest head updates (a lagging head, allowed above) but never corrupts the database; a
//!   per-commit fsync would double the cost of every batch of appends for nothing the ledger's own
//!   fsync does not already give.
//! - **Why its own table and no `user_version`.** The lease module owns `PRAGMA user_version` of this
//!   database for its schema; the head's schema is versioned by its table name instead.
//! - **Why a copy outside the workspace** ([`HeadCopy`], `Sidecar::outside_state_dir`). A command
//!   that may write the workspace may remove `state.db` with the ledger, and with them the evidence
//!   that records were written. The copy lives in a per-user folder (0700, the file 0600) that a shell
//!   confined to the workspace cannot reach; it is raised with the database's head (same count, same
//!   hash, never lowered, under its own `flock`), without a sync: like the database's head it may lag
//!   after a power cut, never lead. Reads take the larger of the two heads ([`Heads::strongest`]);
//!   a copy that cannot be read counts as absent (a command that could garble it could remove it), and
//!   `trace verify` says so. A reseal clears both. A fresh clone has no head anywhere; a checkout made
//!   again at the same path meets the old copy, which `trace verify` names, and a reseal accepts.
//!   The copy is `chokepoint/<hash of the workspace>/heads/<chain>` (and the legacy `head`) under
//!   `$XDG_STATE_HOME` or `~/.local/state`; tests keep it under `target/test-state`
//!   (`.cargo/config.toml`). A gate's answer waits for its record's sync only; the heads are raised
//!   right after the answers go, and a `flush` returns once they are.

use std::fs::{File, OpenOptions};
use std::hash::{BuildHasher, RandomState};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rusqlite::{Connection, params};

use crate::base::sidecar::Sidecar;
use crate::base::sqlite::StateDb;

use super::chains::{LEGACY, is_chain_name};
use super::error::LedgerError;
use std::collections::BTreeMap;

pub use super::record::Head;

const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS ledger_head_v1 (
        id         INTEGER PRIMARY KEY CHECK (id = 1),  -- the legacy single file's head, one row
        count      INTEGER NOT NULL,                    -- records in the ledger (the last seq)
        hash       TEXT NOT NULL,                       -- SHA-256 (hex) of the last record's line
        updated_at INTEGER NOT NULL                     -- unix milliseconds
    ) STRICT;
    CREATE TABLE IF NOT EXISTS ledger_heads_v2 (
        chain      TEXT PRIMARY KEY,                    -- the chain's name (`chains.rs`)
        count      INTEGER NOT NULL,                    -- records in the chain (its last seq)
        hash       TEXT NOT NULL,                       -- SHA-256 (hex) of its last record's line
        updated_at INTEGER NOT NULL                     -- unix milliseconds
    ) STRICT, WITHOUT ROWID;                            -- looked up by chain: one B-tree, not two
";

/// How long an operation retries a busy database before it fails with [`LedgerError::Busy`].
const BUSY_GIVE_UP: Duration = Duration::from_secs(10);

/// The head's table, on the state database's connection (shared with the engine's other stores, and
/// between the ledger's writer and syncer threads), and its copy outside the workspace.
#[derive(Debug, Clone)]
pub struct HeadStore {
    state: Arc<StateDb>,
    copy: Option<Arc<HeadCopy>>,
}

impl HeadStore {
    /// Opens the state database at `db` (creating it and the head's table if missing); its folder must
    /// exist. Keeps no copy outside the workspace: see [`HeadStore::for_sidecar`].
    pub fn open(db: &Path) -> Result<HeadStore, LedgerError> {
        HeadStore::on(Arc::new(StateDb::new(db)), None)
    }

    /// The head of `sidecar`'s ledger: its state database's table and the copy outside the workspace.
    pub fn for_sidecar(sidecar: &Sidecar) -> Result<HeadStore, LedgerError> {
        HeadStore::on(Arc::new(StateDb::new(sidecar.state_db())), HeadCopy::for_sidecar(sidecar))
    }

    /// The head's table in `state`, the connection the engine shares between its stores, and `copy`.
    pub(crate) fn on(state: Arc<StateDb>, copy: Option<HeadCopy>) -> Result<HeadStore, LedgerError> {
        let mut store = HeadStore { state, copy: copy.map(Arc::new) };
        // The connection first, so that a database that cannot be opened says so.
        store.retrying("open", |_| Ok(()))?;
        store.retrying("set up the ledger head", |conn| conn.execute_batch(SCHEMA))?;
        Ok(store)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        self.state.path()
    }

    /// The head of `chain`: the larger of the database's and the copy's ([`Heads::strongest`]), or
    /// `None` if no append of this worktree has written one yet.
    pub fn read(&mut self, chain: &str) -> Result<Option<Head>, LedgerError> {
        let database = self.read_database(chain)?;
        let outside = self.copy.as_ref().and_then(|copy| copy.read(chain).ok().flatten());
        Ok(Heads { database, outside, ..Heads::default() }.strongest().cloned())
    }

    fn read_database(&mut self, chain: &str) -> Result<Option<Head>, LedgerError> {
        let row = |row: &rusqlite::Row<'_>| Ok(Head { count: uint(row.get(0)?), hash: row.get(1)?, updated_at_ms: uint(row.get(2)?) });
        self.retrying("read the ledger head", |conn| {
            let found = if chain == LEGACY {
                conn.prepare_cached("SELECT count, hash, updated_at FROM ledger_head_v1 WHERE id = 1")
                    .and_then(|mut s| s.query_row([], row))
            } else {
                conn.prepare_cached("SELECT count, hash, updated_at FROM ledger_heads_v2 WHERE chain = ?1")
                    .and_then(|mut s| s.query_row(params![chain], row))
            };
            absent_as_none(found)
        })
    }

    /// Every chain's head in the database, by chain.
    fn read_database_all(&mut self) -> Result<BTreeMap<String, Head>, LedgerError> {
        let mut heads: BTreeMap<String, Head> = self.retrying("read the ledger heads", |conn| {
            let all = (|| {
                let mut statement = conn.prepare_cached("SELECT chain, count, hash, updated_at FROM ledger_heads_v2")?;
                let rows = statement.query_map([], |row| {
                    Ok((row.get::<_, String>(0)?, Head { count: uint(row.get(1)?), hash: row.get(2)?, updated_at_ms: uint(row.get(3)?) }))
                })?;
                rows.collect::<rusqlite::Result<BTreeMap<_, _>>>()
            })();
            absent_as_none(all).map(Option::unwrap_or_default)
        })?;
        if let Some(legacy) = self.read_database(LEGACY)? {
            heads.insert(LEGACY.to_owned(), legacy);
        }
        Ok(heads)
    }

    /// Removes `chain`'s head (a reseal, which moves the chain aside, under the ledger's lock).
    pub fn clear(&mut self, chain: &str) -> Result<(), LedgerError> {
        self.retrying("clear the ledger head", |conn| {
            if chain == LEGACY {
                conn.execute("DELETE FROM ledger_head_v1", []).map(drop)
            } else {
                conn.execute("DELETE FROM ledger_heads_v2 WHERE chain = ?1", params![chain]).map(drop)
            }
        })?;
        match &self.copy {
            Some(copy) => copy.clear(chain),
            None => Ok(()),
        }
    }

    /// Raises `chain`'s head to `count` records ending in `hash`; a head that already counts as many
    /// or more stays (another process's syncer got there first). One statement, so it is its own
    /// transaction.
    pub fn write(&mut self, chain: &str, count: u64, hash: &str, now_ms: u64) -> Result<(), LedgerError> {
        self.retrying("write the ledger head", |conn| {
            if chain == LEGACY {
                conn.prepare_cached(
                    "INSERT INTO ledger_head_v1 (id, count, hash, updated_at) VALUES (1, ?1, ?2, ?3)
                     ON CONFLICT (id) DO UPDATE SET count = excluded.count, hash = excluded.hash,
                     updated_at = excluded.updated_at WHERE excluded.count > ledger_head_v1.count",
                )?
                .execute(params![int(count), hash, int(now_ms)])
                .map(drop)
            } else {
                conn.prepare_cached(
                    "INSERT INTO ledger_heads_v2 (chain, count, hash, updated_at) VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (chain) DO UPDATE SET count = excluded.count, hash = excluded.hash,
                     updated_at = excluded.updated_at WHERE excluded.count > ledger_heads_v2.count",
                )?
                .execute(params![chain, int(count), hash, int(now_ms)])
                .map(drop)
            }
        })?;
        match &self.copy {
            Some(copy) => copy.raise(chain, count, hash, now_ms),
            None => Ok(()),
        }
    }

    /// Calls `attempt` until it does not answer busy, with jittered, growing sleeps between tries, for
    /// at most [`BUSY_GIVE_UP`].
    fn retrying<T>(&mut self, op: &'static str, mut attempt: impl FnMut(&Connection) -> rusqlite::Result<T>) -> Result<T, LedgerError> {
        let started = Instant::now();
        let jitter = RandomState::new();
        let mut tries = 0u32;
        loop {
            match self.state.lock().and_then(|conn| attempt(&conn)) {
                Ok(value) => return Ok(value),
                Err(error) if crate::base::sqlite::is_busy(&error) => {}
                Err(source) => return Err(LedgerError::Sqlite { db: self.path().to_owned(), op, source: Arc::new(source) }),
            }
            let waited = started.elapsed();
            if waited >= BUSY_GIVE_UP {
                return Err(LedgerError::Busy { db: self.path().to_owned(), waited });
            }
            let ceiling = 100u64 << tries.min(8);
            let micros = ceiling / 2 + jitter.hash_one(tries) % (ceiling / 2 + 1);
            std::thread::sleep(Duration::from_micros(micros).min(BUSY_GIVE_UP.saturating_sub(waited)));
            tries += 1;
        }
    }
}

/// `chain`'s head stored in the state database at `db`, for a one-off check; `None` when the
/// database, its table or its row does not exist yet. Reads only: creates nothing.
pub fn read(db: &Path, chain: &str) -> Result<Option<Head>, LedgerError> {
    match existing(db)? {
        Some(mut store) => store.read_database(chain),
        None => Ok(None),
    }
}

/// The head store on the state database at `db` if it has the head's tables, creating nothing.
fn existing(db: &Path) -> Result<Option<HeadStore>, LedgerError> {
    if !db.exists() {
        return Ok(None);
    }
    let mut store = HeadStore { state: Arc::new(StateDb::new(db)), copy: None };
    let exists = store.retrying("read the ledger head", |conn| {
        conn.prepare_cached("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name IN ('ledger_head_v1', 'ledger_heads_v2')")?
            .exists([])
    })?;
    Ok(exists.then_some(store))
}

/// Both heads of `chain` in `sidecar`'s ledger, for a one-off check. Reads only: creates nothing,
/// here or outside the workspace.
pub fn read_both(sidecar: &Sidecar, chain: &str) -> Result<Heads, LedgerError> {
    let database = read(&sidecar.state_db(), chain)?;
    let copy = HeadCopy::for_sidecar(sidecar);
    let (outside, outside_unreadable) = match copy.as_ref().map(|copy| copy.read(chain)) {
        None | Some(Ok(None)) => (None, None),
        Some(Ok(Some(head))) => (Some(head), None),
        Some(Err(why)) => (None, Some(why)),
    };
    Ok(Heads { database, outside, outside_path: copy.map(|c| c.path_of(chain)), outside_unreadable })
}

/// Both heads of every chain this worktree knows (in the state database or in the copy outside the
/// workspace), by chain, for `trace verify`. Reads only: creates nothing.
pub fn read_all(sidecar: &Sidecar) -> Result<BTreeMap<String, Heads>, LedgerError> {
    let database = match existing(&sidecar.state_db())? {
        Some(mut store) => store.read_database_all()?,
        None => BTreeMap::new(),
    };
    let copy = HeadCopy::for_sidecar(sidecar);
    let mut chains: Vec<String> = database.keys().cloned().collect();
    if let Some(copy) = &copy {
        chains.extend(copy.chains());
    }
    let mut all = BTreeMap::new();
    for chain in chains {
        if all.contains_key(&chain) {
            continue;
        }
        let (outside, outside_unreadable) = match copy.as_ref().map(|copy| copy.read(&chain)) {
            None | Some(Ok(None)) => (None, None),
            Some(Ok(Some(head))) => (Some(head), None),
            Some(Err(why)) => (None, Some(why)),
        };
        let heads = Heads {
            database: database.get(&chain).cloned(),
            outside,
            outside_path: copy.as_ref().map(|c| c.path_of(&chain)),
            outside_unreadable,
        };
        all.insert(chain, heads);
    }
    Ok(all)
}

/// The two heads of one ledger.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Heads {
    /// The head in the state database.
    pub database: Option<Head>,
    /// The copy outside the workspace.
    pub outside: Option<Head>,
    /// Where the copy is kept (`None`: no per-user folder is known, neither `XDG_STATE_HOME` nor `HOME`).
    pub outside_path: Option<PathBuf>,
    /// Why the copy, which exists, cannot be read; it then counts as absent.
    pub outside_unreadable: Option<String>,
}

impl Heads {
    /// The head to verify against: the one that counts more records; the copy on a tie (the
    /// database is within a shell's reach, the copy is not).
    pub fn strongest(&self) -> Option<&Head> {
        match (&self.database, &self.outside) {
            (Some(database), Some(outside)) => Some(if database.count > outside.count { database } else { outside }),
            (database, outside) => outside.as_ref().or(database.as_ref()),
        }
    }
}

/// The copies of the heads kept outside the workspace, in `Sidecar::outside_state_dir`: one file per
/// chain, `heads/<chain>`, and the legacy file's in `head`.
#[derive(Debug)]
pub struct HeadCopy {
    dir: PathBuf,
    /// The workspace whose head it is, written into the copy for a person who finds it.
    workspace: PathBuf,
    /// The copy could not be written once: reported then, not at every batch after.
    failed: AtomicBool,
}

/// The copy's first line, naming its format.
const COPY_MAGIC: &str = "chokepoint ledger head v1";

impl HeadCopy {
    /// The copies of `sidecar`'s heads; `None` when no per-user folder is known.
    pub fn for_sidecar(sidecar: &Sidecar) -> Option<HeadCopy> {
        let dir = sidecar.outside_state_dir()?;
        Some(HeadCopy { dir, workspace: sidecar.workspace_root().to_path_buf(), failed: AtomicBool::new(false) })
    }

    /// The copy of `chain`'s head.
    pub fn path_of(&self, chain: &str) -> PathBuf {
        if chain == LEGACY { self.dir.join("head") } else { self.dir.join("heads").join(chain) }
    }

    /// The chains with a copy of their head.
    fn chains(&self) -> Vec<String> {
        let mut chains: Vec<String> = std::fs::read_dir(self.dir.join("heads"))
            .into_iter()
            .flatten()
            .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
            .filter(|name| is_chain_name(name))
            .collect();
        if self.path_of(LEGACY).exists() {
            chains.push(LEGACY.to_owned());
        }
        chains
    }

    /// The copy of `chain`'s head; `Ok(None)` when there is none, `Err` (why) when it exists but
    /// cannot be read.
    pub fn read(&self, chain: &str) -> Result<Option<Head>, String> {
        let mut text = String::new();
        match File::open(self.path_of(chain)).and_then(|mut file| file.read_to_string(&mut text)) {
            Ok(_) => parse_copy(&text).map(Some),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(error.to_string()),
        }
    }

    /// Raises the copy to `count` records ending in `hash`, under an exclusive `flock` of the file
    /// (another process's syncer may raise it at the same moment); a copy that counts as many or
    /// more stays. Creates the folder (0700) and the file (0600) when missing. No sync: see the
    /// module's comment. A failure is reported once.
    fn raise(&self, chain: &str, count: u64, hash: &str, now_ms: u64) -> Result<(), LedgerError> {
        let path = self.path_of(chain);
        match self.try_raise(&path, count, hash, now_ms) {
            Ok(()) => Ok(()),
            Err(_) if self.failed.swap(true, Ordering::Relaxed) => Ok(()),
            Err(source) => {
                Err(LedgerError::Io { path, op: "raise the copy of the head kept outside the workspace in", source: Arc::new(source) })
            }
        }
    }

    fn try_raise(&self, path: &Path, count: u64, hash: &str, now_ms: u64) -> io::Result<()> {
        let mut file = match open_private(path) {
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                let dir = path.parent().unwrap_or(Path::new("."));
                crate::base::sidecar::create_owner_only_dir(dir)?;
                open_private(path)?
            }
            other => other?,
        };
        file.lock()?;
        let mut text = String::new();
        file.read_to_string(&mut text)?;
        if parse_copy(&text).is_ok_and(|head| head.count >= count) {
            return Ok(());
        }
        let body = format!("{COPY_MAGIC}\ncount {count}\nhash {hash}\nupdated_at {now_ms}\nworkspace {}\n", self.workspace.display());
        // One write from the start: the body never gets shorter (the count only grows, the other
        // fields keep their length), so it covers the old one; a longer old file (garbled, or of
        // another format) is cut to it.
        use std::io::Seek;
        file.seek(io::SeekFrom::Start(0))?;
        file.write_all(body.as_bytes())?;
        if body.len() < text.len() {
            file.set_len(body.len() as u64)?;
        }
        Ok(())
    }

    /// Removes the copy of `chain`'s head (a reseal, which clears the database's head too).
    fn clear(&self, chain: &str) -> Result<(), LedgerError> {
        let path = self.path_of(chain);
        match std::fs::remove_file(&path) {
            Err(error) if error.kind() != io::ErrorKind::NotFound => {
                Err(LedgerError::Io { path, op: "remove the copy of the head kept outside the workspace in", source: Arc::new(error) })
            }
            _ => Ok(()),
        }
    }
}

fn parse_copy(text: &str) -> Result<Head, String> {
    let mut lines = text.lines();
    if lines.next() != Some(COPY_MAGIC) {
        return Err(format!("its first line is not `{COPY_MAGIC}`"));
    }
    let mut field = |key: &str| {
        lines
            .next()
            .and_then(|line| line.strip_prefix(key))
            .and_then(|rest| rest.strip_prefix(' '))
            .map(str::to_owned)
            .ok_or_else(|| format!("it has no `{key}` line where one belongs"))
    };
    let count = field("count")?.parse::<u64>().map_err(|e| format!("its count: {e}"))?;
    let hash = field("hash")?;
    if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err("its hash is not a SHA-256 in hex".to_owned());
    }
    let updated_at_ms = field("updated_at")?.parse::<u64>().map_err(|e| format!("its time: {e}"))?;
    Ok(Head { count, hash, updated_at_ms })
}

fn open_private(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// No row, or no table (a state database an older version wrote, read without creating anything),
/// as `None`.
fn absent_as_none<T>(found: rusqlite::Result<T>) -> rusqlite::Result<Option<T>> {
    match found {
        Ok(value) => Ok(Some(value)),
        Err(rusqlite::Error::QueryReturnedNoRows) => Ok(None),
        Err(rusqlite::Error::SqliteFailure(_, Some(message))) if message.starts_with("no such table") => Ok(None),
        Err(error) => Err(error),
    }
}

/// A count or time as SQLite's signed INTEGER; nothing written here comes near `i64::MAX`.
fn int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn uint(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_head_round_trips_and_leaves_user_version_alone() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("state.db");
        let chain = "20261122T043005Z-0123abcd";
        assert_eq!(read(&db, chain).unwrap(), None);
        let mut store = HeadStore::open(&db).unwrap();
        assert_eq!(store.read(chain).unwrap(), None);
        store.write(chain, 3, "abc", 17).unwrap();
        store.write(chain, 4, "def", 18).unwrap();
        store.write(chain, 2, "low", 19).unwrap();
        store.write(LEGACY, 9, "old", 20).unwrap();
        assert_eq!(read(&db, chain).unwrap(), Some(Head { count: 4, hash: "def".into(), updated_at_ms: 18 }), "never lowered");
        assert_eq!(read(&db, LEGACY).unwrap().unwrap().count, 9, "the legacy head is its own");
        let version: i64 = store.state.lock().unwrap().query_row("PRAGMA user_version", [], |row| row.get(0)).unwrap();
        assert_eq!(version, 0, "user_version belongs to the lease module");
        // The lease module opens the same database afterwards and finds its schema to create.
        crate::scope::leases::Leases::open(&db).unwrap();
        assert_eq!(store.read(chain).unwrap().unwrap().count, 4);
    }
}
