//! The SQLite index of the trace ledger, `.orchestration/trace.db`: which records are about which
//! intent, session, file and time, so `log`, `show` and `blame` need not read the whole ledger.
//!
//! - **Every chain, in time order.** The ledger is a folder of chains (`chains.rs`): the index reads
//!   every chain file in the checkout (and the legacy single file), each row carries its chain, a
//!   record is known by (chain, seq), and queries order by (time, chain, seq), so the records of
//!   branches merged together read as they happened. A chain whose file is gone (a branch switched
//!   away) leaves the index with its rows.
//!
//! - **The ledger is the source of truth; the index is derived.** It stores where each record's line
//!   starts in the ledger and its hash, and reads the record back from the ledger, checking the hash,
//!   rather than keeping a second copy that could disagree. Deleting `trace.db` loses nothing: the
//!   next [`Index::catch_up`] rebuilds it (or `chokepoint trace reindex`, at any time). For the same
//!   reason a database of an older schema is not migrated but dropped and rebuilt.
//! - **Catching up is cheap and anyone may do it.** The index remembers, per chain, the offset of the
//!   last line it read; [`Index::catch_up`] checks that this line still hashes as indexed (so a
//!   rewritten, recovered or checked-out chain is noticed, and that chain is read again from its
//!   start) and indexes only what follows. Whichever
//!   process gets there first does the work, inside one `BEGIN IMMEDIATE` transaction, so two
//!   processes never index the same lines twice and a reader sees all of a catch-up or none of it.
//! - **Only whole lines are indexed.** The writer appends a line and its newline together; a reader
//!   that meets a last line without its newline is looking at an append in progress (or a torn line
//!   that the writer's recovery will cut off) and leaves it for the next catch-up.
//! - **A line that is not a record is skipped and counted, never fatal.** Naming tampering is
//!   `verify`'s job; the index indexes what it can and says how much it could not.
//! - **Busy.** Index writes are bulk and rare (a catch-up, a rebuild), not on an agent's hot path, so a
//!   plain busy timeout is enough; the lease database's short jittered sleeps exist for many tiny
//!   competing writes, which this database does not see.

use super::error::ReadError;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use globset::{GlobBuilder, GlobMatcher};
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};

use super::chains::{self, ChainFile};
use super::record::{Record, RecordKind};
use crate::base::sidecar::Sidecar;
use crate::base::sqlite::ShmWatch;

/// The schema this build writes, in `PRAGMA user_version`. An older index is rebuilt; a newer one is
/// refused (an older engine must not half-understand it). 2: ranges keep their line digests. 3: a
/// folder of chains (rows carry their chain; progress per chain).
pub const SCHEMA_VERSION: i64 = 3;

/// How long a statement waits for another process's catch-up or rebuild before failing. A rebuild of
/// a large ledger holds the write lock for seconds.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

const TABLES: &str = "
    CREATE TABLE IF NOT EXISTS records (
        id          INTEGER PRIMARY KEY,
        chain       TEXT NOT NULL,     -- the chain's name (`chains.rs`)
        seq         INTEGER NOT NULL,  -- in its chain
        line_hash   TEXT NOT NULL,     -- SHA-256 (hex) of the ledger line, checked when read back
        line_offset INTEGER NOT NULL,  -- byte offset of the line in its chain's file
        time        TEXT NOT NULL,     -- as recorded (RFC 3339)
        time_ms     INTEGER,           -- the same in unix milliseconds; NULL if it does not parse
        kind        TEXT NOT NULL,
        event       TEXT,
        session     TEXT,
        agent       TEXT,
        task        TEXT,
        intent      TEXT,
        tool        TEXT,
        decision    TEXT,              -- allow, deny, ask
        model       TEXT,
        UNIQUE (chain, seq)
    ) STRICT;
    -- One row per file a record touched, with or without ranges (a deletion has none), so a query by
    -- file finds every record that changed it.
    CREATE TABLE IF NOT EXISTS files (
        rid         INTEGER NOT NULL,  -- records.id
        path        TEXT NOT NULL,
        sha256      TEXT               -- the whole file after the write; NULL when deleted
    ) STRICT;
    -- How far catch-up has read each chain: the last whole line it read (indexed or skipped) and its
    -- hash. Kept apart from the records because `add` may index records out of reading order (a
    -- writer indexing its own appends) and the reading must not skip what lies before them.
    CREATE TABLE IF NOT EXISTS progress (
        chain       TEXT PRIMARY KEY,
        line_offset INTEGER NOT NULL,
        line_hash   TEXT NOT NULL
    ) STRICT;
    CREATE TABLE IF NOT EXISTS ranges (
        rid         INTEGER NOT NULL,  -- records.id
        path        TEXT NOT NULL,
        start_line  INTEGER NOT NULL,
        end_line    INTEGER NOT NULL,
        sha256      TEXT NOT NULL,     -- range content hash (`ranges::range_hash`)
        file_sha256 TEXT,              -- the whole file after the write
        line_digests TEXT              -- `LineRange::line_digests` as recorded; NULL when absent
    ) STRICT;
";

/// Created after the tables are filled when rebuilding: building an index once over sorted input is
/// several times faster than maintaining it row by row.
const INDEXES: &str = "
    CREATE INDEX IF NOT EXISTS records_intent ON records (intent, time_ms);
    CREATE INDEX IF NOT EXISTS records_session ON records (session, time_ms);
    CREATE INDEX IF NOT EXISTS records_time ON records (time_ms, chain, seq);
    CREATE INDEX IF NOT EXISTS files_path ON files (path, rid);
    CREATE INDEX IF NOT EXISTS files_rid ON files (rid);
    CREATE INDEX IF NOT EXISTS ranges_path ON ranges (path, rid);
    CREATE INDEX IF NOT EXISTS ranges_rid ON ranges (rid);
";

/// Only these tables are dropped on a rebuild: nothing else in the file is the index's to delete.
const DROP: &str = "
    DROP TABLE IF EXISTS progress;
    DROP TABLE IF EXISTS ranges;
    DROP TABLE IF EXISTS files;
    DROP TABLE IF EXISTS records;
";

/// The index of one workspace's ledger. One connection, shared by the threads of this process.
#[derive(Debug)]
pub struct Index {
    db: PathBuf,
    sidecar: Sidecar,
    /// The folder of chains.
    ledger: PathBuf,
    conn: Mutex<Connection>,
    /// Its shared memory (`trace.db-shm`) as last seen: one shortened under the mapping is noticed
    /// before SQLite reads it (`base::sqlite::ShmWatch`).
    shm: Mutex<ShmWatch>,
}

/// Which records a [`Index::query`] returns. Every field set must match; `Filter::default()` is every
/// record, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub intent: Option<String>,
    /// A workspace-relative path, exact, or a glob if it has any of `*?[{` (`*` stays within one
    /// folder, `**` crosses folders): the records that wrote a matching file.
    pub file: Option<String>,
    pub session: Option<String>,
    /// Records at or after this time: RFC 3339 (`2026-11-22T05:00:00Z`, with an offset, or a date
    /// alone for its midnight UTC), or unix milliseconds.
    pub since: Option<String>,
    pub kind: Option<RecordKind>,
    pub limit: Option<usize>,
    /// Newest first (by time, chain, `seq`), as a log is read; otherwise oldest first.
    pub newest_first: bool,
}

/// A record as found through the index: where its line is and what it hashes to.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexedRecord {
    /// The chain holding it, and its number there.
    pub chain: String,
    pub seq: u64,
    pub line_hash: String,
    /// Byte offset of the line in its chain's file.
    pub offset: u64,
    pub record: Record,
}

/// What a [`Index::catch_up`] or [`reindex`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexReport {
    /// Records newly indexed.
    pub records: u64,
    pub files: u64,
    pub ranges: u64,
    /// Bytes of the ledger read.
    pub bytes: u64,
    /// Lines that are not records (or repeat an indexed `seq` with other content), left out.
    pub skipped: u64,
    /// Why the first of them was left out, with its byte offset.
    pub first_skipped: Option<String>,
    /// The ledger ends in a line without its newline (an append in progress, or a torn write the
    /// writer's recovery will cut off): not indexed yet.
    pub unterminated_tail: bool,
    /// The index was dropped and rebuilt (a [`reindex`]), or a chain was read again from its start:
    /// its file no longer has the line the index last read (rewritten, recovered, checked out by git
    /// or deleted).
    pub rebuilt: bool,
}

impl IndexReport {
    fn skip(&mut self, offset: u64, why: String) {
        self.skipped += 1;
        self.first_skipped.get_or_insert_with(|| format!("the line at byte {offset}: {why}"));
    }
}

/// A recorded range of a file and who wrote it: what `blame` matches against the file as it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedRange {
    pub seq: u64,
    pub time: String,
    pub kind: String,
    pub session: Option<String>,
    pub agent: Option<String>,
    pub intent: Option<String>,
    pub tool: Option<String>,
    pub model: Option<String>,
    /// Where the write put the range (1-based, inclusive), in the file as it was then.
    pub start: u32,
    pub end: u32,
    pub sha256: String,
    /// The range's line digests as recorded (`LineRange::line_digests`): absent in version-1 records
    /// and in ranges too long to digest.
    pub line_digests: Option<String>,
}

/// Whether adding one record inserted it.
enum Added {
    New {
        files: u64,
        ranges: u64,
    },
    Present,
    /// The (chain, `seq`) is indexed with another line hash: the stored hash.
    Conflict(String),
}

impl Index {
    /// Opens (creating it if missing) the index of `sidecar`'s ledger. The sidecar folder must exist.
    /// Does not read the ledger: call [`Index::catch_up`] for that.
    pub fn open(sidecar: &Sidecar) -> Result<Index, ReadError> {
        let db = sidecar.trace_index();
        let failed = |op: &str| {
            let db = db.display().to_string();
            let op = op.to_owned();
            move |e: rusqlite::Error| format!("the trace index {db}: {op} failed: {e}")
        };
        let mut conn = connect(&db).map_err(failed("open"))?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(failed("begin"))?;
        let found: i64 = tx.query_row("PRAGMA user_version", [], |row| row.get(0)).map_err(failed("read the schema version"))?;
        if found > SCHEMA_VERSION {
            return Err(format!(
                "the trace index {} has schema version {found}, newer than the {SCHEMA_VERSION} this chokepoint \
                 understands; upgrade chokepoint, or delete the file (it is rebuilt from the ledger)",
                db.display()
            )
            .into());
        }
        if found < SCHEMA_VERSION {
            // Derived data: an older layout is dropped, and the next catch-up refills it.
            tx.execute_batch(DROP).map_err(failed("drop an old schema"))?;
            tx.execute_batch(TABLES).map_err(failed("create the schema"))?;
            tx.execute_batch(INDEXES).map_err(failed("create the indexes"))?;
            tx.pragma_update(None, "user_version", SCHEMA_VERSION).map_err(failed("write the schema version"))?;
        }
        tx.commit().map_err(failed("commit the schema"))?;
        let shm = Mutex::new(ShmWatch::of(&db));
        Ok(Index { db, sidecar: sidecar.clone(), ledger: sidecar.trace_dir(), conn: Mutex::new(conn), shm })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.db
    }

    /// The folder of chains this indexes.
    pub fn ledger(&self) -> &Path {
        &self.ledger
    }

    /// Indexes one record of `chain` whose line (hashing to `line_hash`) starts at byte `offset` of
    /// its file. Returns whether it was new: adding a record already indexed with the same hash
    /// changes nothing; with another hash it is an error (the chain was rewritten; [`reindex`]).
    pub fn add(&self, chain: &str, record: &Record, line_hash: &str, offset: u64) -> Result<bool, ReadError> {
        self.add_many(chain, [(record, line_hash, offset)]).map(|added| added == 1)
    }

    /// [`Index::add`] for many records of `chain` in one transaction; returns how many were new.
    pub fn add_many<'a>(&self, chain: &str, entries: impl IntoIterator<Item = (&'a Record, &'a str, u64)>) -> Result<u64, ReadError> {
        self.write("add records", |tx| {
            let mut added = 0;
            for (record, hash, offset) in entries {
                match insert(tx, chain, record, hash, offset).map_err(|e| self.failed("add a record", e))? {
                    Added::New { .. } => added += 1,
                    Added::Present => {}
                    Added::Conflict(stored) => {
                        return Err(format!(
                            "record {} of chain {chain} is already indexed with line hash {stored}, not {hash}: \
                             the chain was rewritten since it was indexed; rebuild the index",
                            record.seq
                        ));
                    }
                }
            }
            Ok(added)
        })
        .map_err(ReadError::from)
    }

    /// Brings the index up to date with the ledger: for every chain file, indexes the lines after the
    /// last one it read. If that line is no longer there as it was (the chain was rewritten,
    /// recovered or checked out by git), drops the chain's rows and reads it again from its start; a
    /// chain whose file is gone has its rows dropped.
    pub fn catch_up(&self) -> Result<IndexReport, ReadError> {
        let files = self.chain_files()?;
        if self.up_to_date(&files) {
            return Ok(IndexReport::default());
        }
        self.write("catch up with the ledger", |tx| {
            let mut report = IndexReport::default();
            let known: Vec<String> = (|| {
                let mut statement = tx.prepare("SELECT chain FROM progress UNION SELECT DISTINCT chain FROM records")?;
                let rows = statement.query_map([], |row| row.get(0))?;
                rows.collect::<rusqlite::Result<Vec<String>>>()
            })()
            .map_err(|e| self.failed("list the chains indexed", e))?;
            for gone in known.iter().filter(|chain| !files.iter().any(|f| &f.chain == *chain)) {
                self.drop_chain(tx, gone)?;
                report.rebuilt = true;
            }
            for file in &files {
                self.catch_up_chain(tx, file, &mut report)?;
            }
            Ok(report)
        })
        .map_err(ReadError::from)
    }

    fn chain_files(&self) -> Result<Vec<ChainFile>, String> {
        chains::list(&self.sidecar).map_err(|e| format!("listing the chains in {} failed: {e}", self.ledger.display()))
    }

    /// Catches up with one chain's file, in the transaction `tx`.
    fn catch_up_chain(&self, tx: &Transaction<'_>, file: &ChainFile, report: &mut IndexReport) -> Result<(), String> {
        let progress: Option<(i64, String)> = tx
            .query_row("SELECT line_offset, line_hash FROM progress WHERE chain = ?1", params![file.chain], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .optional()
            .map_err(|e| self.failed("read how far the index has read", e))?;
        let Some(mut reader) = LedgerReader::open(&file.path)? else {
            if progress.is_some() {
                self.drop_chain(tx, &file.chain)?;
                report.rebuilt = true;
            }
            return Ok(());
        };
        let Some((offset, hash)) = progress else {
            return self.fill(tx, &file.chain, &mut reader, report);
        };
        reader.seek(uint(offset)).map_err(|e| self.read_failed(&file.path, e))?;
        let still_there = match reader.next_line().map_err(|e| self.read_failed(&file.path, e))? {
            Line::Whole { bytes } => line_hash_bytes(bytes) == hash,
            Line::Unterminated | Line::End => false,
        };
        if !still_there {
            self.drop_chain(tx, &file.chain)?;
            report.rebuilt = true;
            reader.seek(0).map_err(|e| self.read_failed(&file.path, e))?;
        }
        self.fill(tx, &file.chain, &mut reader, report)
    }

    /// Removes a chain's rows and progress.
    fn drop_chain(&self, tx: &Transaction<'_>, chain: &str) -> Result<(), String> {
        (|| {
            tx.execute("DELETE FROM files WHERE rid IN (SELECT id FROM records WHERE chain = ?1)", params![chain])?;
            tx.execute("DELETE FROM ranges WHERE rid IN (SELECT id FROM records WHERE chain = ?1)", params![chain])?;
            tx.execute("DELETE FROM records WHERE chain = ?1", params![chain])?;
            tx.execute("DELETE FROM progress WHERE chain = ?1", params![chain])
        })()
        .map(drop)
        .map_err(|e| self.failed("drop a chain", e))
    }

    /// Whether the index has read every chain file to its end and each last line is still as it read
    /// it, and knows no chain whose file is gone: then a catch-up has nothing to do and need not take
    /// the write lock (a sidebar refreshing every second, or every `log`, would otherwise queue
    /// behind each other). `false` when unsure.
    fn up_to_date(&self, files: &[ChainFile]) -> bool {
        let Ok(conn) = self.lock() else { return false };
        let progress: Option<Vec<(String, i64, String)>> = (|| {
            let mut statement = conn.prepare_cached("SELECT chain, line_offset, line_hash FROM progress")?;
            let rows = statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        })()
        .ok();
        drop(conn);
        let Some(progress) = progress else { return false };
        // Every chain read is still there (one that is gone has rows to drop)...
        if !progress.iter().all(|(chain, ..)| files.iter().any(|f| f.chain == *chain)) {
            return false;
        }
        // ...and every file was read to its end (a chain begun and still empty has nothing to read).
        files.iter().all(|file| {
            let Some((_, offset, hash)) = progress.iter().find(|(chain, ..)| *chain == file.chain) else {
                return std::fs::metadata(&file.path).is_ok_and(|meta| meta.len() == 0);
            };
            let Ok(Some(mut reader)) = LedgerReader::for_lookups(&file.path) else { return false };
            if reader.seek(uint(*offset)).is_err() {
                return false;
            }
            let same = matches!(reader.next_line(), Ok(Line::Whole { bytes }) if line_hash_bytes(bytes) == *hash);
            same && matches!(reader.next_line(), Ok(Line::End))
        })
    }

    /// The records that match `filter`, read back from the ledger. Reads only what is indexed: call
    /// [`Index::catch_up`] first to see the latest records.
    pub fn query(&self, filter: &Filter) -> Result<Vec<IndexedRecord>, ReadError> {
        let conn = self.lock()?;
        let (mut sql, mut args) = self.matching(&conn, "chain, seq, line_hash, line_offset", filter)?;
        sql.push_str(if filter.newest_first { " ORDER BY time_ms DESC, chain DESC, seq DESC" } else { " ORDER BY time_ms, chain, seq" });
        if let Some(limit) = filter.limit {
            args.push(int(u64::try_from(limit).unwrap_or(u64::MAX)).into());
            sql.push_str(&format!(" LIMIT ?{}", args.len()));
        }
        let found = (|| {
            let mut statement = conn.prepare(&sql)?;
            let rows = statement.query_map(rusqlite::params_from_iter(args), |row| {
                Ok((row.get::<_, String>(0)?, uint(row.get(1)?), row.get::<_, String>(2)?, uint(row.get(3)?)))
            })?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        })()
        .map_err(|e| self.failed("query records", e))?;
        drop(conn);
        self.read_back(found).map_err(ReadError::from)
    }

    /// How many records match `filter`, its `limit` aside (a list says "the newest 50 of 105").
    pub fn count(&self, filter: &Filter) -> Result<u64, ReadError> {
        let conn = self.lock()?;
        let (sql, args) = self.matching(&conn, "COUNT(*)", filter)?;
        conn.query_row(&sql, rusqlite::params_from_iter(args), |row| row.get::<_, i64>(0))
            .map(uint)
            .map_err(|e| self.failed("count records", e).into())
    }

    /// `SELECT columns FROM records` with the conditions of `filter` (its order and limit aside),
    /// and the values of their parameters: one reading of a filter for [`Index::query`] and
    /// [`Index::count`].
    fn matching(
        &self,
        conn: &rusqlite::Connection,
        columns: &str,
        filter: &Filter,
    ) -> Result<(String, Vec<rusqlite::types::Value>), ReadError> {
        let since = filter.since.as_deref().map(parse_time).transpose()?;
        let glob = match filter.file.as_deref() {
            Some(pattern) if is_glob(pattern) => Some(compile_glob(pattern)?),
            _ => None,
        };
        let mut sql = format!("SELECT {columns} FROM records WHERE 1 = 1");
        let mut args: Vec<rusqlite::types::Value> = Vec::new();
        let mut arg = |sql: &mut String, clause: &str, value: rusqlite::types::Value| {
            args.push(value);
            sql.push_str(&clause.replace('?', &format!("?{}", args.len())));
        };
        if let Some(intent) = &filter.intent {
            arg(&mut sql, " AND intent = ?", intent.clone().into());
        }
        if let Some(session) = &filter.session {
            arg(&mut sql, " AND session = ?", session.clone().into());
        }
        if let Some(kind) = filter.kind {
            arg(&mut sql, " AND kind = ?", kind.as_str().to_owned().into());
        }
        if let Some(since) = since {
            arg(&mut sql, " AND time_ms >= ?", int(since).into());
        }
        match (&filter.file, &glob) {
            (Some(_), Some(glob)) => {
                // Distinct paths are far fewer than rows: match them here with globset's semantics
                // (SQLite's GLOB lets `*` cross folders), then select through a connection-local table.
                fill_glob_paths(conn, glob).map_err(|e| self.failed("match paths", e))?;
                sql.push_str(" AND id IN (SELECT f.rid FROM files f JOIN temp.glob_paths g ON g.path = f.path)");
            }
            (Some(path), None) => arg(&mut sql, " AND id IN (SELECT rid FROM files WHERE path = ?)", path.clone().into()),
            _ => {}
        }
        Ok((sql, args))
    }

    /// The newest record numbered `seq` in any chain, if indexed, read back from the ledger: the
    /// record `seq` of a ledger of one chain. [`Index::get_in`] names the chain.
    pub fn get(&self, seq: u64) -> Result<Option<IndexedRecord>, ReadError> {
        let found = self
            .lock()?
            .query_row(
                "SELECT chain, line_hash, line_offset FROM records WHERE seq = ?1 ORDER BY time_ms DESC, chain DESC LIMIT 1",
                params![int(seq)],
                |row| Ok((row.get::<_, String>(0)?, seq, row.get::<_, String>(1)?, uint(row.get(2)?))),
            )
            .optional()
            .map_err(|e| self.failed("read a record", e))?;
        Ok(self.read_back(found.into_iter().collect())?.pop())
    }

    /// The record `seq` of `chain`, if indexed, read back from the ledger.
    pub fn get_in(&self, chain: &str, seq: u64) -> Result<Option<IndexedRecord>, ReadError> {
        let found = self
            .lock()?
            .query_row("SELECT line_hash, line_offset FROM records WHERE chain = ?1 AND seq = ?2", params![chain, int(seq)], |row| {
                Ok((chain.to_owned(), seq, row.get::<_, String>(0)?, uint(row.get(1)?)))
            })
            .optional()
            .map_err(|e| self.failed("read a record", e))?;
        Ok(self.read_back(found.into_iter().collect())?.pop())
    }

    /// The highest `seq` indexed, in any chain.
    pub fn last_seq(&self) -> Result<Option<u64>, ReadError> {
        self.lock()?
            .query_row("SELECT MAX(seq) FROM records", [], |row| row.get::<_, Option<i64>>(0))
            .map(|seq| seq.map(uint))
            .map_err(|e| self.failed("read the last seq", e).into())
    }

    /// Every recorded range of `path`, newest record first, leaving out records whose write was
    /// denied (it changed nothing): what `blame` looks for in the file.
    pub fn ranges_of(&self, path: &str) -> Result<Vec<RecordedRange>, ReadError> {
        let conn = self.lock()?;
        let sql = "SELECT r.seq, r.time, r.kind, r.session, r.agent, r.intent, r.tool, r.model,
                          g.start_line, g.end_line, g.sha256, g.line_digests
                   FROM ranges g JOIN records r ON r.id = g.rid
                   WHERE g.path = ?1 AND (r.decision IS NULL OR r.decision <> 'deny')
                   ORDER BY r.time_ms DESC, r.chain DESC, r.seq DESC, g.start_line ASC";
        (|| {
            let mut statement = conn.prepare_cached(sql)?;
            let rows = statement.query_map(params![path], |row| {
                Ok(RecordedRange {
                    seq: uint(row.get(0)?),
                    time: row.get(1)?,
                    kind: row.get(2)?,
                    session: row.get(3)?,
                    agent: row.get(4)?,
                    intent: row.get(5)?,
                    tool: row.get(6)?,
                    model: row.get(7)?,
                    start: line(row.get(8)?),
                    end: line(row.get(9)?),
                    sha256: row.get(10)?,
                    line_digests: row.get(11)?,
                })
            })?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        })()
        .map_err(|e| self.failed("read a file's ranges", e).into())
    }

    /// Drops the index's tables and indexes the whole ledger again, in the transaction `tx`.
    fn rebuild(&self, tx: &Transaction<'_>) -> Result<IndexReport, String> {
        (|| {
            tx.execute_batch(DROP)?;
            tx.execute_batch(TABLES)
        })()
        .map_err(|e| self.failed("drop the index", e))?;
        let mut report = IndexReport { rebuilt: true, ..IndexReport::default() };
        for file in self.chain_files()? {
            if let Some(mut reader) = LedgerReader::open(&file.path)? {
                self.fill(tx, &file.chain, &mut reader, &mut report)?;
            }
        }
        tx.execute_batch(INDEXES).map_err(|e| self.failed("create the indexes", e))?;
        Ok(report)
    }

    /// Indexes every whole line of `chain` from where `reader` is to the end of its file.
    fn fill(&self, tx: &Transaction<'_>, chain: &str, reader: &mut LedgerReader, report: &mut IndexReport) -> Result<(), String> {
        let start = reader.offset;
        let path = reader.path.clone();
        // The last whole line read, indexed or skipped: where the next catch-up resumes.
        let mut last: Option<(u64, String)> = None;
        loop {
            let offset = reader.offset;
            let bytes = match reader.next_line().map_err(|e| self.read_failed(&path, e))? {
                Line::Whole { bytes } => bytes,
                Line::Unterminated => {
                    report.unterminated_tail = true;
                    break;
                }
                Line::End => break,
            };
            let hash = line_hash_bytes(bytes);
            last = Some((offset, hash.clone()));
            let Ok(text) = std::str::from_utf8(bytes) else {
                report.skip(offset, "not UTF-8".into());
                continue;
            };
            let record = match Record::from_line(text) {
                Ok(record) => record,
                Err(why) => {
                    report.skip(offset, why.to_string());
                    continue;
                }
            };
            match insert(tx, chain, &record, &hash, offset).map_err(|e| self.failed("index a record", e))? {
                Added::New { files, ranges } => {
                    report.records += 1;
                    report.files += files;
                    report.ranges += ranges;
                }
                Added::Present => {}
                Added::Conflict(_) => report.skip(offset, format!("record {} repeats an earlier seq", record.seq)),
            }
        }
        report.bytes += reader.offset - start;
        if let Some((offset, hash)) = last {
            tx.prepare_cached(
                "INSERT INTO progress (chain, line_offset, line_hash) VALUES (?1, ?2, ?3)
                 ON CONFLICT (chain) DO UPDATE SET line_offset = excluded.line_offset, line_hash = excluded.line_hash",
            )
            .and_then(|mut statement| statement.execute(params![chain, int(offset), hash]))
            .map_err(|e| self.failed("record how far the index has read", e))?;
        }
        Ok(())
    }

    /// Reads the records at `found` (chain, seq, line hash, offset) back from their chains' files,
    /// checking that each line still hashes as indexed.
    fn read_back(&self, found: Vec<(String, u64, String, u64)>) -> Result<Vec<IndexedRecord>, String> {
        let mut readers: Vec<(String, LedgerReader)> = Vec::new();
        let mut out = Vec::with_capacity(found.len());
        for (chain, seq, hash, offset) in found {
            let at = match readers.iter().position(|(c, _)| *c == chain) {
                Some(at) => at,
                None => {
                    let path = chains::path_of(&self.sidecar, &chain);
                    let reader = LedgerReader::for_lookups(&path)?.ok_or_else(|| {
                        format!("the chain {} is gone but the index lists its records; rebuild the index", path.display())
                    })?;
                    readers.push((chain.clone(), reader));
                    readers.len() - 1
                }
            };
            let reader = &mut readers[at].1;
            let path = reader.path.clone();
            reader.seek(offset).map_err(|e| self.read_failed(&path, e))?;
            let stale = || {
                format!(
                    "the chain {} no longer holds record {seq} where the index found it (byte {offset}): it was \
                     rewritten, recovered or checked out since; rebuild the index, and run verify if nobody should have",
                    path.display()
                )
            };
            let Line::Whole { bytes } = reader.next_line().map_err(|e| self.read_failed(&path, e))? else {
                return Err(stale());
            };
            if line_hash_bytes(bytes) != hash {
                return Err(stale());
            }
            let text = std::str::from_utf8(bytes).map_err(|_| stale())?;
            let record = Record::from_line(text).map_err(|_| stale())?;
            out.push(IndexedRecord { chain, seq, line_hash: hash, offset, record });
        }
        Ok(out)
    }

    /// Runs `body` in a `BEGIN IMMEDIATE` transaction (the write lock taken before anything is read,
    /// so two processes never decide on the same stale view), committing if it succeeds.
    fn write<T>(&self, op: &str, body: impl FnOnce(&Transaction<'_>) -> Result<T, String>) -> Result<T, String> {
        let mut conn = self.lock()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(|e| self.failed(op, e))?;
        let value = body(&tx)?;
        tx.commit().map_err(|e| self.failed(op, e))?;
        Ok(value)
    }

    /// The connection; `Err` (the reason) when its shared memory was shortened, removed or replaced
    /// under its mapping: the connection is then closed without reading it and opened again for the
    /// next call, and this one fails instead of meeting a SIGBUS.
    pub(super) fn lock(&self) -> Result<std::sync::MutexGuard<'_, Connection>, String> {
        // A panic mid-transaction rolled the transaction back as it unwound: the connection is usable.
        let mut conn = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        let mut shm = self.shm.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(what) = shm.check() {
            // Closed first, without the checkpoint a last connection makes as it closes (which would
            // read the mapping), so that the new connection maps the file anew instead of sharing
            // this one's mapping.
            let _ = conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true);
            let closed = Connection::open_in_memory().map_err(|e| self.failed("stand in for a closed connection", e))?;
            drop(std::mem::replace(&mut *conn, closed));
            *conn = connect(&self.db).map_err(|e| self.failed("open again", e))?;
            *shm = ShmWatch::of(&self.db);
            return Err(format!("the trace index {} was not read: its shared memory {what}; it is opened again", self.db.display()));
        }
        Ok(conn)
    }

    pub(super) fn failed(&self, op: &str, error: rusqlite::Error) -> String {
        format!("the trace index {}: {op} failed: {error}", self.db.display())
    }

    fn read_failed(&self, path: &Path, error: io::Error) -> String {
        format!("reading the ledger {} failed: {error}", path.display())
    }
}

/// Drops the index of `sidecar` and rebuilds it from the whole ledger, in one transaction: readers
/// see the old index until the new one is complete. Streams the ledger; the index is what it builds.
pub fn reindex(sidecar: &Sidecar) -> Result<IndexReport, ReadError> {
    let index = Index::open(sidecar)?;
    index.write("rebuild the index", |tx| index.rebuild(tx)).map_err(ReadError::from)
}

fn insert(tx: &Transaction<'_>, chain: &str, record: &Record, hash: &str, offset: u64) -> rusqlite::Result<Added> {
    let inserted = tx
        .prepare_cached(
            "INSERT INTO records (chain, seq, line_hash, line_offset, time, time_ms, kind, event, session, agent, task,
                                  intent, tool, decision, model)
             VALUES (?15, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
             ON CONFLICT (chain, seq) DO NOTHING",
        )?
        .execute(params![
            int(record.seq),
            hash,
            int(offset),
            record.time,
            parse_time(&record.time).ok().map(int),
            record.kind.as_str(),
            record.event,
            record.session,
            record.agent,
            record.task,
            record.intent,
            record.tool,
            record.decision.as_ref().map(|d| d.decision.as_str()),
            record.model,
            chain,
        ])?;
    if inserted == 0 {
        let stored: String = tx
            .prepare_cached("SELECT line_hash FROM records WHERE chain = ?1 AND seq = ?2")?
            .query_row(params![chain, int(record.seq)], |row| row.get(0))?;
        return Ok(if stored == hash { Added::Present } else { Added::Conflict(stored) });
    }
    let rid = tx.last_insert_rowid();
    let mut files = 0;
    let mut ranges = 0;
    let mut file_row = tx.prepare_cached("INSERT INTO files (rid, path, sha256) VALUES (?1, ?2, ?3)")?;
    let mut range_row = tx.prepare_cached(
        "INSERT INTO ranges (rid, path, start_line, end_line, sha256, file_sha256, line_digests) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    for file in &record.files {
        file_row.execute(params![rid, file.path, file.sha256])?;
        files += 1;
        for range in &file.ranges {
            range_row.execute(params![rid, file.path, range.start, range.end, range.sha256, file.sha256, range.line_digests])?;
            ranges += 1;
        }
    }
    Ok(Added::New { files, ranges })
}

fn fill_glob_paths(conn: &Connection, glob: &GlobMatcher) -> rusqlite::Result<()> {
    conn.execute_batch("CREATE TEMP TABLE IF NOT EXISTS glob_paths (path TEXT PRIMARY KEY); DELETE FROM temp.glob_paths;")?;
    let mut paths = conn.prepare("SELECT DISTINCT path FROM files")?;
    let mut add = conn.prepare_cached("INSERT INTO temp.glob_paths (path) VALUES (?1)")?;
    let mut rows = paths.query([])?;
    while let Some(row) = rows.next()? {
        let path: String = row.get(0)?;
        if glob.is_match(&path) {
            add.execute(params![path])?;
        }
    }
    Ok(())
}

fn is_glob(pattern: &str) -> bool {
    pattern.contains(['*', '?', '[', '{'])
}

fn compile_glob(pattern: &str) -> Result<GlobMatcher, String> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|glob| glob.compile_matcher())
        .map_err(|e| format!("the file pattern `{pattern}` is not a glob: {e}"))
}

fn line_hash_bytes(bytes: &[u8]) -> String {
    super::record::sha256_hex(bytes)
}

/// A seq, offset or time as SQLite stores it (signed 64-bit); none of ours comes near the top half.
pub(super) fn int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

pub(super) fn uint(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

fn line(value: i64) -> u32 {
    u32::try_from(value).unwrap_or(0)
}

/// One line of the ledger as the reader found it.
enum Line<'a> {
    /// A line with its newline (`bytes` without it).
    Whole {
        bytes: &'a [u8],
    },
    /// The ledger ends in a line without a newline.
    Unterminated,
    End,
}

/// Reads the ledger line by line from any offset, keeping track of where each line starts.
struct LedgerReader {
    path: PathBuf,
    inner: BufReader<File>,
    offset: u64,
    buf: Vec<u8>,
}

impl LedgerReader {
    /// `None` if there is no ledger yet. A large buffer for streaming the ledger.
    fn open(path: &Path) -> Result<Option<LedgerReader>, String> {
        LedgerReader::with_capacity(path, 1 << 20)
    }

    /// A small buffer for reading records here and there: every jump outside it refills it.
    fn for_lookups(path: &Path) -> Result<Option<LedgerReader>, String> {
        LedgerReader::with_capacity(path, 16 << 10)
    }

    fn with_capacity(path: &Path, capacity: usize) -> Result<Option<LedgerReader>, String> {
        match File::open(path) {
            Ok(file) => Ok(Some(LedgerReader {
                path: path.to_owned(),
                inner: BufReader::with_capacity(capacity, file),
                offset: 0,
                buf: Vec::new(),
            })),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("opening the ledger {} failed: {e}", path.display())),
        }
    }

    /// Moves to `offset`, keeping the buffer when the offset is inside it: reading back records in
    /// `seq` order mostly moves a few hundred bytes, and a plain seek would throw the buffer away.
    fn seek(&mut self, offset: u64) -> io::Result<()> {
        match i64::try_from(offset).ok().zip(i64::try_from(self.offset).ok()) {
            Some((to, from)) => self.inner.seek_relative(to - from)?,
            None => {
                self.inner.seek(SeekFrom::Start(offset))?;
            }
        }
        self.offset = offset;
        Ok(())
    }

    fn next_line(&mut self) -> io::Result<Line<'_>> {
        self.buf.clear();
        let read = self.inner.read_until(b'\n', &mut self.buf)?;
        self.offset += read as u64;
        Ok(match self.buf.split_last() {
            None => Line::End,
            Some((b'\n', bytes)) => Line::Whole { bytes },
            Some(_) => Line::Unterminated,
        })
    }
}

/// A time as `since` accepts it, in unix milliseconds: digits alone are milliseconds; otherwise RFC
/// 3339 (`2026-11-22T05:00:00Z`, fractional seconds and a `±hh:mm` offset allowed, `t`, `z` and a
/// space accepted as RFC 3339 allows) or a date alone, meaning its midnight UTC. Times before 1970 are
/// 0 (everything is after them).
pub fn parse_time(text: &str) -> Result<u64, ReadError> {
    let bad = || ReadError::from(format!("`{text}` is not a time: use RFC 3339 (2026-11-22T05:00:00Z) or unix milliseconds"));
    let text = text.trim();
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return text.parse().map_err(|_| bad());
    }
    let b = text.as_bytes();
    let num = |from: usize, len: usize| -> Result<i64, ReadError> {
        let digits = b.get(from..from + len).ok_or_else(bad)?;
        if !digits.iter().all(u8::is_ascii_digit) {
            return Err(bad());
        }
        Ok(digits.iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0')))
    };
    let sep = |at: usize, allowed: &[u8]| if b.get(at).is_some_and(|c| allowed.contains(c)) { Ok(()) } else { Err(bad()) };
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    sep(4, b"-")?;
    sep(7, b"-")?;
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return Err(bad());
    }
    let days = days_from_civil(year, month, day);
    if b.len() == 10 {
        return Ok(u64::try_from(days * 86_400_000).unwrap_or(0));
    }
    sep(10, b"Tt ")?;
    sep(13, b":")?;
    sep(16, b":")?;
    let (hour, minute, second) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    // 60 is a leap second, which unix time folds into the next one.
    if hour > 23 || minute > 59 || second > 60 {
        return Err(bad());
    }
    let mut at = 19;
    let mut millis = 0;
    if b.get(at) == Some(&b'.') {
        let digits = b[at + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return Err(bad());
        }
        // Milliseconds: the first three digits, padded; finer ones are dropped (truncated, as a
        // `since` at a sub-millisecond instant includes the millisecond it falls in).
        for i in 0..3 {
            millis = millis * 10 + if i < digits { i64::from(b[at + 1 + i] - b'0') } else { 0 };
        }
        at += 1 + digits;
    }
    let offset_minutes = match b.get(at..) {
        Some(b"Z" | b"z") => 0,
        Some([sign @ (b'+' | b'-'), ..]) if b.len() == at + 6 => {
            sep(at + 3, b":")?;
            let (h, m) = (num(at + 1, 2)?, num(at + 4, 2)?);
            if h > 23 || m > 59 {
                return Err(bad());
            }
            if *sign == b'+' { h * 60 + m } else { -(h * 60 + m) }
        }
        _ => return Err(bad()),
    };
    let ms = days * 86_400_000 + ((hour * 60 + minute - offset_minutes) * 60 + second) * 1000 + millis;
    Ok(u64::try_from(ms).unwrap_or(0))
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the given civil date (Howard Hinnant's algorithm, the inverse of the one in
/// `clock.rs`); negative before 1970.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = if month > 2 { month - 3 } else { month + 9 };
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A connection to the index at `db` (created, owner-only, if missing), set up as every use of it
/// expects.
fn connect(db: &Path) -> rusqlite::Result<Connection> {
    let _ = crate::base::sidecar::create_owner_only(db);
    let conn = Connection::open(db)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "mmap_size", 0)?;
    // WAL: queries (a sidebar, `log` in a terminal) never wait for a catch-up, and see all of it
    // or none of it. NORMAL: a power cut may lose the last catch-up, which the next one redoes.
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    // Up to 64 MiB of page cache (allocated only as used): a rebuild fills three tables and then
    // sorts five indexes, and with SQLite's default 2 MiB their pages keep evicting each other (a
    // 100k-record rebuild measured 2.5 s with the default, 1.9 s with this).
    conn.pragma_update(None, "cache_size", -65536)?;
    Ok(conn)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::clock::format_utc;

    #[test]
    fn times_parse_as_rfc_3339_or_milliseconds() {
        assert_eq!(parse_time("1795321805123"), Ok(1_795_321_805_123));
        assert_eq!(parse_time("2026-11-22T04:30:05.123Z"), Ok(1_795_321_805_123));
        assert_eq!(parse_time("2026-11-22t04:30:05.123456z"), Ok(1_795_321_805_123));
        assert_eq!(parse_time("2026-11-22 04:30:05Z"), Ok(1_795_321_805_000));
        assert_eq!(parse_time("2026-11-22T06:30:05.1+02:00"), Ok(1_795_321_805_100));
        assert_eq!(parse_time("2026-11-21T23:30:05-05:00"), Ok(1_795_321_805_000));
        assert_eq!(parse_time("2026-11-22"), parse_time("2026-11-22T00:00:00Z"));
        assert_eq!(parse_time("1970-01-01T00:00:00Z"), Ok(0));
        assert_eq!(parse_time("1969-12-31T00:00:00Z"), Ok(0));
        for bad in [
            "",
            "yesterday",
            "2026-13-01",
            "2026-02-30",
            "2026-11-22T25:00:00Z",
            "2026-11-22T04:30:05",
            "2026-11-22T04:30:05.Z",
            "2026-11-22T04:30:05+0200",
            "-5",
        ] {
            let error = parse_time(bad).unwrap_err();
            assert!(error.message().contains("is not a time"), "{bad}: {error}");
        }
    }

    #[test]
    fn parsing_inverts_the_clock_formatting() {
        for ms in [0, 1, 951_782_400_000, 1_709_210_096_000, 1_795_321_805_123, 4_102_444_799_999, 253_402_300_799_000] {
            assert_eq!(parse_time(&format_utc(ms)), Ok(ms), "{}", format_utc(ms));
        }
        // Every day for a few centuries.
        for day in (0..150_000u64).step_by(7) {
            let ms = day * 86_400_000 + 12_345;
            assert_eq!(parse_time(&format_utc(ms)), Ok(ms));
        }
    }

    #[test]
    fn globs_keep_to_their_folder_unless_asked() {
        let glob = compile_glob("src/*.rs").unwrap();
        assert!(glob.is_match("src/a.rs"));
        assert!(!glob.is_match("src/deep/a.rs"));
        assert!(compile_glob("src/**/*.rs").unwrap().is_match("src/deep/a.rs"));
        assert!(is_glob("src/*.rs") && is_glob("a?.rs") && is_glob("{a,b}.rs") && !is_glob("src/a.rs"));
        assert!(compile_glob("src/[").unwrap_err().contains("not a glob"));
    }
}
