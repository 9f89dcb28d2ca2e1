//! The state databases (a worktree's `.orchestration/state.db`, and the coordination database every
//! worktree of a repository shares, `Sidecar::coordination_db`): how a connection to one is opened
//! and waits for a lock another process holds, and [`StateDb`], the one connection a process shares
//! between the stores kept in it (the leases, the scope expansions, the lessons, in the coordination
//! database; the ledger's head, in the worktree's), which notices a shared memory file tampered with
//! before SQLite reads it ([`ShmWatch`]). Processes of different worktrees open the same shared file
//! as any two processes do: WAL, its `-shm` and the busy handler work the same.
//!
//! Each store takes the connection for one statement or transaction at a time. It leaves the
//! write-ahead log in place on close and checkpoints it only once it is long, so a process per hook
//! call pays for neither four schema reads nor five syncs. A connection whose `-shm` file was
//! shortened, removed or replaced under its mapping is closed and refused for a second (`ShmWatch`,
//! one `stat` per use) instead of taking a SIGBUS. The open that makes the coordination database's
//! folder (`StateDb::making_folder`) adopts the tables the worktree kept in its own `state.db` before
//! (`StateDb::adopting`, `engine::engine::ADOPTED`).

use rusqlite::config::DbConfig;
use rusqlite::{Connection, ErrorCode};
use std::hash::{BuildHasher, RandomState};
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// How long one statement waits for another connection's lock ([`busy_wait`]) before answering busy.
/// Writes here take well under a millisecond, so a wait this long means a stuck or very slow writer.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(3);

/// The busy timeout: SQLite calls this (with 0, 1, 2, … for one wait) while another connection holds
/// the lock it needs; `true` means "try again", `false` gives up with `SQLITE_BUSY` after
/// [`BUSY_TIMEOUT`].
///
/// It replaces `sqlite3_busy_timeout`'s own schedule, which sleeps 1, 2, 5, 10, … then 100 ms at a
/// time: a write here holds the lock for tens of microseconds, so a waiter sleeping that long misses
/// many free moments and, with four processes taking leases in a loop, was measured waiting up to
/// half a second while the others kept winning. Short sleeps (50 µs doubling to 1.6 ms), jittered so
/// waiters do not wake in step, keep the wait close to the actual contention. The ledger's head, in the
/// same database, waits the same way.
pub(crate) fn busy_wait() -> impl FnMut(i32) -> bool + Send + 'static {
    let jitter = RandomState::new();
    let mut draws = 0u64;
    let mut waiting_since = Instant::now();
    move |count| {
        if count == 0 {
            waiting_since = Instant::now();
        }
        let waited = waiting_since.elapsed();
        if waited >= BUSY_TIMEOUT {
            return false;
        }
        let ceiling = 50u64 << count.clamp(0, 5);
        draws += 1;
        let micros = ceiling / 2 + jitter.hash_one(draws) % (ceiling / 2 + 1);
        std::thread::sleep(Duration::from_micros(micros).min(BUSY_TIMEOUT - waited));
        true
    }
}

pub(crate) fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(error.sqlite_error_code(), Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked))
}

/// How long a write-ahead log a closing connection leaves for the next process: 32 pages (the log
/// holds a 24-byte header and the page for each).
///
/// Why a bound: the first process to open the database after all others closed it rebuilds the
/// log's index by reading the whole log (SQLite keeps that index in shared memory, discarded with
/// the last connection), and forgets that a checkpoint had copied it, so the log is never started
/// over until a checkpoint runs and a write follows in one sitting. A `chokepoint hook` judging alone
/// commits a page or two, so a log left as it is grows by that at each call, and so does the read.
/// Past this length, the closing connection checkpoints and truncates it (three syncs), about every
/// twenty calls; below, reading it costs tens of microseconds.
const LONG_LOG_BYTES: u64 = 32 * (24 + 4096);

/// Opens a connection to the state database at `db` (creating the file if missing) that waits for
/// other connections' locks with [`busy_wait`] and leaves the write-ahead log in place when it closes.
///
/// Why no checkpoint on close: SQLite's last connection to close a WAL database copies the log into
/// the database and deletes it, and the next connection to write creates it again. For a process
/// per hook call (`chokepoint hook` judging alone) that was five syncs per call besides the ledger's
/// one (the new log's header and its folder, then the log, the folder and the database at the
/// checkpoint), about a millisecond. Left in place, the log is checkpointed by SQLite's automatic
/// checkpoint while a process keeps the database open (VS Code, `chokepoint serve`), and by
/// [`StateDb`]'s drop once it is long ([`LONG_LOG_BYTES`]).
///
/// Why WAL: readers (the sidebar's list, the gate's checks) proceed while a write is under way, and a
/// commit is one append instead of a rollback journal's several writes. The mode is stored in the
/// file; a file system without shared memory keeps the rollback journal, slower but as correct, so
/// the answer is not checked. Switching a new database can meet another process doing the same:
/// the busy answer fails this open, and the stores' retries open again.
///
/// Why `synchronous = NORMAL`: in WAL mode it syncs at checkpoints, not at every commit. A power cut
/// can lose the last few changes but never corrupts the file. Leases are runtime state whose holders
/// die in the same power cut; the ledger's head may lag (see ledger::head); an expansion lost is asked
/// again, and its approval is in the ledger. Per-commit syncs would cost every one of them.
fn open(db: &Path, shared: Option<&Shared>) -> rusqlite::Result<Connection> {
    // The repository's shared folder is made by the first store that needs it, and only for a
    // governed workspace (`StateDb::making_folder`): it is not part of any work tree.
    let mut made = false;
    if let (Some(shared), Some(folder)) = (shared, db.parent())
        && shared.governed.is_dir()
        && !folder.is_dir()
    {
        crate::base::sidecar::create_owner_only_dir(folder).map_err(|e| {
            rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
                Some(format!(
                    "cannot create {} ({e}), where the worktrees of this repository share their intent leases and \
                     approvals; make git's folder writable by this user",
                    folder.display()
                )),
            )
        })?;
        made = true;
    }
    // Created owner-only before SQLite creates it (its log and shared memory take its mode); a
    // failure here is SQLite's to report, with its own error, on the open below.
    let _ = crate::base::sidecar::create_owner_only(db);
    let mut conn = Connection::open(db)?;
    conn.busy_handler(Some(busy_wait()))?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
    // Read through `read`, never a mapping of the file (SQLite's default, said here because it is
    // what keeps a truncated database an error instead of a SIGBUS; the `-shm` file has to be
    // mapped, see [`ShmWatch`]).
    conn.pragma_update(None, "mmap_size", 0)?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    // macOS's `fsync` leaves the data in the drive's cache; SQLite asks the drive to write it
    // (`F_FULLFSYNC`, as std's `sync_data` does for the ledger) only when told to.
    if cfg!(target_vendor = "apple") {
        conn.pragma_update(None, "fullfsync", true)?;
        conn.pragma_update(None, "checkpoint_fullfsync", true)?;
    }
    if made && let Some((from, tables)) = shared.and_then(|s| s.adopt.as_ref()) {
        // Best effort: what is not carried over is learnt or asked again, and the gate does not
        // wait on it.
        let _ = adopt(&conn, from, tables);
    }
    Ok(conn)
}

/// Copies `tables` (each with its indexes, as created there) from the database at `from` into the
/// new database of `conn` where it has none of them yet, in one transaction: what a worktree kept
/// in its own state.db before the coordination moved to the repository's shared folder.
fn adopt(conn: &Connection, from: &Path, tables: &[&str]) -> rusqlite::Result<()> {
    if !from.is_file() {
        return Ok(());
    }
    conn.execute("ATTACH DATABASE ?1 AS adopted", [from.to_string_lossy()])?;
    let copied = (|| {
        conn.execute_batch("BEGIN IMMEDIATE")?;
        for table in tables {
            let here: bool = conn.query_row("SELECT EXISTS (SELECT 1 FROM main.sqlite_master WHERE name = ?1)", [table], |r| r.get(0))?;
            if here {
                continue;
            }
            let mut schema =
                conn.prepare("SELECT sql FROM adopted.sqlite_master WHERE tbl_name = ?1 AND sql IS NOT NULL ORDER BY type = 'index'")?;
            let statements: Vec<String> = schema.query_map([table], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
            if statements.is_empty() {
                continue;
            }
            // Unqualified, each `CREATE` makes its table or index in `main`.
            for statement in &statements {
                conn.execute_batch(statement)?;
            }
            conn.execute_batch(&format!("INSERT INTO main.\"{table}\" SELECT * FROM adopted.\"{table}\""))?;
        }
        conn.execute_batch("COMMIT")
    })();
    if copied.is_err() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    let detached = conn.execute_batch("DETACH DATABASE adopted");
    copied.and(detached)
}

/// What a database in the repository's shared folder needs besides its path ([`StateDb::making_folder`]).
#[derive(Debug)]
struct Shared {
    /// Its folder is made only when this folder (the workspace's sidecar) exists.
    governed: PathBuf,
    /// When its folder is made: the database whose tables it adopts, and which ([`StateDb::adopting`]).
    adopt: Option<(PathBuf, &'static [&'static str])>,
}

/// A WAL database's shared memory (`<db>-shm`) as a connection last saw it, so that a file shortened,
/// removed or replaced under the connection's mapping is noticed before SQLite touches the mapping.
///
/// Why: SQLite maps the `-shm` file into every connection's memory; a page of the mapping beyond the
/// end of a file someone truncated (a contained shell under a wide scope, `truncate -s 0`) is a
/// `SIGBUS` at the next access, which kills the whole process: a hook, `chokepoint exec`, the
/// extension's engine. No connection of ours shortens it while another is open (SQLite truncates it
/// only under the exclusive lock no open connection allows), so a shorter file, or another file at
/// the path, was done to it. [`StateDb::lock`] checks before every use (one `stat`) and, when it was,
/// closes the connection (without a checkpoint, so without reading the mapping) and answers an error
/// the caller turns into a deny with the reason, for [`TAMPER_HOLD`]; the use after that opens a new
/// connection, which SQLite gives a rebuilt index of the log. What is left is the moment between the
/// check and the access.
#[derive(Debug)]
pub(crate) struct ShmWatch {
    path: PathBuf,
    /// Device, inode and length when last seen; `None` while there is no such file (not yet mapped,
    /// or a file system without shared memory, which keeps the rollback journal).
    seen: Option<(u64, u64, u64)>,
}

impl ShmWatch {
    /// The shared memory of the database at `db`, as it is now (after the connection mapped it).
    pub(crate) fn of(db: &Path) -> ShmWatch {
        let mut path = db.as_os_str().to_owned();
        path.push("-shm");
        let path = PathBuf::from(path);
        let seen = Self::stat(&path);
        ShmWatch { path, seen }
    }

    #[cfg(unix)]
    fn stat(path: &Path) -> Option<(u64, u64, u64)> {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino(), m.len()))
    }

    #[cfg(not(unix))]
    fn stat(_path: &Path) -> Option<(u64, u64, u64)> {
        None
    }

    /// `Err` (what happened) when the file was removed, replaced or shortened since it was seen.
    pub(crate) fn check(&mut self) -> Result<(), String> {
        // Not there yet (a new database maps it at its first transaction, after the open): watched
        // from when it appears.
        let Some((dev, ino, len)) = self.seen else {
            self.seen = Self::stat(&self.path);
            return Ok(());
        };
        match Self::stat(&self.path) {
            None => Err(format!("{} was removed while this process had it mapped", self.path.display())),
            Some((d, i, _)) if (d, i) != (dev, ino) => {
                Err(format!("{} was replaced while this process had it mapped", self.path.display()))
            }
            Some((_, _, now)) if now < len => {
                Err(format!("{} was shortened from {len} to {now} bytes while this process had it mapped", self.path.display()))
            }
            Some(now) => {
                self.seen = Some(now);
                Ok(())
            }
        }
    }
}

/// The error a use of a connection whose shared memory was tampered with gets instead of a `SIGBUS`.
fn tampered(db: &Path, what: String) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_IOERR),
        Some(format!(
            "the state database {} cannot be used safely: its shared memory {what}; the connection was closed and \
             the next use opens it again (only SQLite may write the files beside state.db)",
            db.display()
        )),
    )
}

/// One connection to a state database, opened on first use and shared by every store of one engine
/// that keeps its table there.
///
/// Why one: each SQLite connection reads and parses the whole schema before its first statement, and
/// the first one after all others closed also rebuilds the write-ahead log's index. With a connection
/// per store (leases, expansions, and the head for the ledger's writer and for its syncer), a cold
/// `chokepoint hook` opened the database four times, about a third of its judging. The stores take
/// the connection for one statement or one transaction at a time, so none holds it across another's
/// work; other processes open their own.
#[derive(Debug)]
pub(crate) struct StateDb {
    path: PathBuf,
    /// For a database outside the workspace (the repository's shared one): its folder is created on
    /// open when the workspace's sidecar exists, and what it adopts then.
    shared: Option<Shared>,
    conn: Mutex<Option<Open>>,
    /// Until when every use is refused, and why: the shared memory was tampered with ([`ShmWatch`]).
    refused: Mutex<Option<(Instant, String)>>,
}

/// How long a state database whose shared memory was tampered with refuses every use before it opens
/// a new connection: long enough that the gate judging at that moment denies and says why (not only
/// whichever thread met it first, whose error a caller may drop), short enough not to matter
/// otherwise; the gatekeeper's own re-check bound.
const TAMPER_HOLD: Duration = Duration::from_secs(1);

/// An open connection and its shared memory as last seen.
#[derive(Debug)]
struct Open {
    conn: Connection,
    shm: ShmWatch,
}

/// The connection, held: other threads of this process wait for it.
pub(crate) struct StateGuard<'a>(MutexGuard<'a, Option<Open>>);

impl Deref for StateGuard<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        &self.0.as_ref().expect("a guard is handed out only once the connection is open").conn
    }
}

impl DerefMut for StateGuard<'_> {
    fn deref_mut(&mut self) -> &mut Connection {
        &mut self.0.as_mut().expect("a guard is handed out only once the connection is open").conn
    }
}

impl Drop for StateDb {
    fn drop(&mut self) {
        self.shorten_log();
    }
}

impl StateDb {
    /// The database at `path`; nothing is opened (nor created) until [`StateDb::lock`].
    pub(crate) fn new(path: impl Into<PathBuf>) -> StateDb {
        StateDb { path: path.into(), shared: None, conn: Mutex::new(None), refused: Mutex::new(None) }
    }

    /// As [`StateDb::new`], for a database whose folder may not exist yet (the repository's shared
    /// folder, `Sidecar::coordination_db`): the open creates it, owner-only, when `governed` (the
    /// workspace's sidecar folder) exists; an ungoverned workspace leaves no trace in `.git`.
    pub(crate) fn making_folder(path: impl Into<PathBuf>, governed: impl Into<PathBuf>) -> StateDb {
        let shared = Shared { governed: governed.into(), adopt: None };
        StateDb { path: path.into(), shared: Some(shared), conn: Mutex::new(None), refused: Mutex::new(None) }
    }

    /// When the open makes the shared folder (the first worktree to use it since this build), the
    /// database copies `tables` from `from` (the worktree's own state.db, where they were kept
    /// before), so what it learnt and approved is not lost. Once: a folder is made once.
    pub(crate) fn adopting(mut self, from: impl Into<PathBuf>, tables: &'static [&'static str]) -> StateDb {
        if let Some(shared) = self.shared.as_mut() {
            shared.adopt = Some((from.into(), tables));
        }
        self
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Checkpoints and truncates the write-ahead log if it is long ([`LONG_LOG_BYTES`]), without
    /// waiting: while another connection reads or writes, this is not the last one, and a later close
    /// does it. Done when the connection closes, and by a process that exits without closing it.
    pub(crate) fn shorten_log(&self) {
        let mut conn = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        // A checkpoint reads the shared memory: not through a mapping that is no longer safe.
        if conn.as_mut().is_some_and(|open| open.shm.check().is_err()) {
            *conn = None;
        }
        let Some(Open { conn, .. }) = conn.as_mut() else { return };
        let mut log = self.path.clone().into_os_string();
        log.push("-wal");
        if std::fs::metadata(&log).is_ok_and(|m| m.len() > LONG_LOG_BYTES) && conn.busy_handler(None::<fn(i32) -> bool>).is_ok() {
            // Its answer (busy or not, frames copied) changes nothing here.
            let _ = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
            let _ = conn.busy_handler(Some(busy_wait()));
        }
    }

    /// The connection, opened (and the file created, its folder must exist) on the first call; a
    /// failed open is tried again by the next call.
    pub(crate) fn lock(&self) -> rusqlite::Result<StateGuard<'_>> {
        // A panic in another thread mid-transaction rolled that transaction back as it unwound, so
        // the connection behind a poisoned lock is still usable.
        let mut conn = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        let mut refused = self.refused.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(open) = conn.as_mut()
            && let Err(what) = open.shm.check()
        {
            // Closed without a checkpoint (`NO_CKPT_ON_CLOSE`): nothing reads the mapping.
            *conn = None;
            *refused = Some((Instant::now() + TAMPER_HOLD, what));
        }
        match refused.as_ref() {
            Some((until, what)) if Instant::now() < *until => return Err(tampered(&self.path, what.clone())),
            Some(_) => *refused = None,
            None => {}
        }
        drop(refused);
        if conn.is_none() {
            let connection = open(&self.path, self.shared.as_ref())?;
            *conn = Some(Open { conn: connection, shm: ShmWatch::of(&self.path) });
        }
        Ok(StateGuard(conn))
    }
}
