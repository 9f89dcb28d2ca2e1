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

use std::hash::{BuildHasher, RandomState};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rusqlite::{Connection, OptionalExtension, params};

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
/// between the ledger's writer and syncer threads).
#[derive(Debug, Clone)]
pub struct HeadStore {
    state: Arc<StateDb>,
}

impl HeadStore {
    /// Opens the state database at `db` (creating it and the head's table if missing); its folder must
    /// exist.
    pub fn open(db: &Path) -> Result<HeadStore, LedgerError> {
        HeadStore::on(Arc::new(StateDb::new(db)))
    }

    /// The head's table in `state`, the connection the engine shares between its stores.
    pub(crate) fn on(state: Arc<StateDb>) -> Result<HeadStore, LedgerError> {
        let mut store = HeadStore { state };
        // The connection first, so that a database that cannot be opened says so.
        store.retrying("open", |_| Ok(()))?;
        store.retrying("set up the ledger head", |conn| conn.execute_batch(SCHEMA))?;
        Ok(store)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        self.state.path()
    }

    /// The head, or `None` if no append has written one yet.
    pub fn read(&mut self) -> Result<Option<Head>, LedgerError> {
        self.retrying("read the ledger head", |conn| {
            conn.prepare_cached("SELECT count, hash, updated_at FROM ledger_head_v1 WHERE id = 1")?
                .query_row([], |row| Ok(Head { count: uint(row.get(0)?), hash: row.get(1)?, updated_at_ms: uint(row.get(2)?) }))
                .optional()
        })
    }

    /// Removes the head (a reseal, which starts a new chain, under the ledger's lock).
    pub fn clear(&mut self) -> Result<(), LedgerError> {
        self.retrying("clear the ledger head", |conn| conn.execute("DELETE FROM ledger_head_v1", []).map(drop))
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
        })
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
    let mut store = HeadStore { state: Arc::new(StateDb::new(db)) };
    let exists = store.retrying("read the ledger head", |conn| {
        conn.prepare_cached("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'ledger_head_v1'")?.exists([])
    })?;
    if !exists {
        return Ok(None);
    }
    store.read()
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
