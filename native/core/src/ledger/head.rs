//! The chain head: how many records the ledger holds and the hash of the last one, kept in SQLite
//! (`ledger_head_v1` in `.orchestration/state.db`) beside the ledger itself.
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

use std::fs::{File, OpenOptions};
use std::hash::{BuildHasher, RandomState};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension, params};

use crate::base::sidecar::Sidecar;
use crate::base::sqlite::StateDb;

use super::error::LedgerError;

pub use super::record::Head;

const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS ledger_head_v1 (
        id         INTEGER PRIMARY KEY CHECK (id = 1),  -- one ledger per workspace, one row
        count      INTEGER NOT NULL,                    -- records in the ledger (the last seq)
        hash       TEXT NOT NULL,                       -- SHA-256 (hex) of the last record's line
        updated_at INTEGER NOT NULL                     -- unix milliseconds
    ) STRICT;
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

    /// The head: the larger of the database's and the copy's ([`Heads::strongest`]), or `None` if
    /// no append has written one yet.
    pub fn read(&mut self) -> Result<Option<Head>, LedgerError> {
        let database = self.read_database()?;
        let outside = self.copy.as_ref().and_then(|copy| copy.read().ok().flatten());
        Ok(Heads { database, outside, ..Heads::default() }.strongest().cloned())
    }

    fn read_database(&mut self) -> Result<Option<Head>, LedgerError> {
        self.retrying("read the ledger head", |conn| {
            conn.prepare_cached("SELECT count, hash, updated_at FROM ledger_head_v1 WHERE id = 1")?
                .query_row([], |row| Ok(Head { count: uint(row.get(0)?), hash: row.get(1)?, updated_at_ms: uint(row.get(2)?) }))
                .optional()
        })
    }

    /// Removes the head (a reseal, which starts a new chain, under the ledger's lock).
    pub fn clear(&mut self) -> Result<(), LedgerError> {
        self.retrying("clear the ledger head", |conn| conn.execute("DELETE FROM ledger_head_v1", []).map(drop))?;
        match &self.copy {
            Some(copy) => copy.clear(),
            None => Ok(()),
        }
    }

    /// Raises the head to `count` records ending in `hash`; a head that already counts as many or more
    /// stays (another process's syncer got there first). One statement, so it is its own transaction.
    pub fn write(&mut self, count: u64, hash: &str, now_ms: u64) -> Result<(), LedgerError> {
        self.retrying("write the ledger head", |conn| {
            conn.prepare_cached(
                "INSERT INTO ledger_head_v1 (id, count, hash, updated_at) VALUES (1, ?1, ?2, ?3)
                 ON CONFLICT (id) DO UPDATE SET count = excluded.count, hash = excluded.hash,
                 updated_at = excluded.updated_at WHERE excluded.count > ledger_head_v1.count",
            )?
            .execute(params![int(count), hash, int(now_ms)])
            .map(drop)
        })?;
        match &self.copy {
            Some(copy) => copy.raise(count, hash, now_ms),
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

/// The head stored in the state database at `db`, for a one-off check (`verify`); `None` when the
/// database, its table or its row does not exist yet. Reads only: creates nothing.
pub fn read(db: &Path) -> Result<Option<Head>, LedgerError> {
    if !db.exists() {
        return Ok(None);
    }
    let mut store = HeadStore { state: Arc::new(StateDb::new(db)), copy: None };
    let exists = store.retrying("read the ledger head", |conn| {
        conn.prepare_cached("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'ledger_head_v1'")?.exists([])
    })?;
    if !exists {
        return Ok(None);
    }
    store.read_database()
}

/// Both heads of `sidecar`'s ledger, for a one-off check (`trace verify`). Reads only: creates
/// nothing, here or outside the workspace.
pub fn read_both(sidecar: &Sidecar) -> Result<Heads, LedgerError> {
    let database = read(&sidecar.state_db())?;
    let copy = HeadCopy::for_sidecar(sidecar);
    let (outside, outside_unreadable) = match copy.as_ref().map(HeadCopy::read) {
        None | Some(Ok(None)) => (None, None),
        Some(Ok(Some(head))) => (Some(head), None),
        Some(Err(why)) => (None, Some(why)),
    };
    Ok(Heads { database, outside, outside_path: copy.map(|c| c.path), outside_unreadable })
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

/// The copy of the head kept outside the workspace: `head` in `Sidecar::outside_state_dir`.
#[derive(Debug)]
pub struct HeadCopy {
    path: PathBuf,
    /// The workspace whose head it is, written into the copy for a person who finds it.
    workspace: PathBuf,
    /// The copy could not be written once: reported then, not at every batch after.
    failed: AtomicBool,
}

/// The copy's first line, naming its format.
const COPY_MAGIC: &str = "chokepoint ledger head v1";

impl HeadCopy {
    /// The copy of `sidecar`'s head; `None` when no per-user folder is known.
    pub fn for_sidecar(sidecar: &Sidecar) -> Option<HeadCopy> {
        let dir = sidecar.outside_state_dir()?;
        Some(HeadCopy { path: dir.join("head"), workspace: sidecar.workspace_root().to_path_buf(), failed: AtomicBool::new(false) })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The copy; `Ok(None)` when there is none, `Err` (why) when it exists but cannot be read.
    pub fn read(&self) -> Result<Option<Head>, String> {
        let mut text = String::new();
        match File::open(&self.path).and_then(|mut file| file.read_to_string(&mut text)) {
            Ok(_) => parse_copy(&text).map(Some),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(error.to_string()),
        }
    }

    /// Raises the copy to `count` records ending in `hash`, under an exclusive `flock` of the file
    /// (another process's syncer may raise it at the same moment); a copy that counts as many or
    /// more stays. Creates the folder (0700) and the file (0600) when missing. No sync: see the
    /// module's comment. A failure is reported once.
    fn raise(&self, count: u64, hash: &str, now_ms: u64) -> Result<(), LedgerError> {
        match self.try_raise(count, hash, now_ms) {
            Ok(()) => Ok(()),
            Err(_) if self.failed.swap(true, Ordering::Relaxed) => Ok(()),
            Err(source) => Err(LedgerError::Io {
                path: self.path.clone(),
                op: "raise the copy of the head kept outside the workspace in",
                source: Arc::new(source),
            }),
        }
    }

    fn try_raise(&self, count: u64, hash: &str, now_ms: u64) -> io::Result<()> {
        let mut file = match open_private(&self.path) {
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                let dir = self.path.parent().unwrap_or(Path::new("."));
                create_private_dir(dir)?;
                open_private(&self.path)?
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

    /// Removes the copy (a reseal, which clears the database's head too).
    fn clear(&self) -> Result<(), LedgerError> {
        match std::fs::remove_file(&self.path) {
            Err(error) if error.kind() != io::ErrorKind::NotFound => Err(LedgerError::Io {
                path: self.path.clone(),
                op: "remove the copy of the head kept outside the workspace in",
                source: Arc::new(error),
            }),
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

fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
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
        assert_eq!(read(&db).unwrap(), None);
        let mut store = HeadStore::open(&db).unwrap();
        assert_eq!(store.read().unwrap(), None);
        store.write(3, "abc", 17).unwrap();
        store.write(4, "def", 18).unwrap();
        assert_eq!(read(&db).unwrap(), Some(Head { count: 4, hash: "def".into(), updated_at_ms: 18 }));
        let version: i64 = store.state.lock().unwrap().query_row("PRAGMA user_version", [], |row| row.get(0)).unwrap();
        assert_eq!(version, 0, "user_version belongs to the lease module");
        // The lease module opens the same database afterwards and finds its schema to create.
        crate::scope::leases::Leases::open(&db).unwrap();
        assert_eq!(store.read().unwrap().unwrap().count, 4);
    }
}
