//! The texts of files before and after the writes the ledger recorded, kept by their SHA-256 so that
//! a record's change can be shown later as a diff (the Trace view's "Open Changes"): a content-
//! addressed store in its own SQLite database, `.orchestration/images.db` ([`Sidecar::images_db`]).
//!
//! Why apart from the ledger: the ledger is committed with the project and keeps hashes only, never
//! file contents (a record says what changed, not what was written); the images are a convenience of
//! this checkout, git-ignored with the other runtime files (`sidecar::RUNTIME_FILES`). **The ledger
//! never depends on this store**: a record names its images by hash (`FileChange::sha256`,
//! `FileChange::before_sha256`), and an image that is missing (never kept, pruned, the file deleted)
//! only means that no diff can be shown. So every failure here is swallowed by its caller, and nothing
//! in the ledger reads it. Why apart from the index (`trace.db`): the index is derived from the
//! ledger and may be dropped and rebuilt at any time, while the images cannot be derived from
//! anything.
//!
//! Why bounded: every write of a governed agent would otherwise grow it without end. An image larger
//! than [`Caps::image`] is not kept (the tracer does not read one larger than that either), and the
//! texts together are kept under [`Caps::total`] by removing the oldest first (the least recently
//! stored: an image stored again, the same content written again, counts as new), since the diffs a
//! person opens are nearly always of recent actions.
//!
//! When texts are stored: [`ImageStore::keep`] only queues a text, in memory; the store's thread
//! stores the whole queue in one transaction when woken, and the engine has the ledger wake it once
//! per settled batch ([`ImageStore::storer`], `Ledger::after_batch`), not once per text. Not while
//! the batch is built (its records are built just before its sync, which the next gate waits for,
//! so a SQLite write of megabytes there would delay every agent's next action), and not inline on
//! the ledger thread that settled the batch either: measured so, the agent runtime's tool call took
//! longer than with the store's thread (see the commit that moved it back). A reader
//! ([`ImageStore::get`]) and a process about to exit ([`ImageStore::settle`]) store what is queued
//! first, on their own thread.
//!
//! Images are kept only when both sides of the write are known (the engine read the file when the
//! write was allowed or asked, in this process, and after its result), at most 8 MiB a text and
//! 64 MiB in all by default ([`Caps`]; the tracer's `MAX_IMAGE_BYTES`). A failure to store, open or
//! read only means `Tracer::image` answers `None`. The record names the before-text's hash only when
//! known (`FileChange::before_sha256`), so older records serialise to the same bytes and their chain
//! is unchanged. Pinned by `native/core/tests/trace.rs`
//! (`an_allowed_writes_result_keeps_its_before_and_after_images_by_hash`,
//! `a_store_that_cannot_be_written_fails_neither_the_gate_nor_the_ledger`,
//! `a_file_over_the_image_cap_is_recorded_without_images`,
//! `the_store_prunes_the_oldest_images_beyond_its_total`,
//! `a_record_without_a_before_hash_serialises_as_before`, and the storing once per text and per batch:
//! `a_file_written_again_…`, `the_ledger_stores_a_writes_images_after_its_batch`,
//! `the_stores_total_is_counted_once_…`; `writer::work_after_a_batch_…`).

use crate::base::sidecar::Sidecar;
use rusqlite::{Connection, OptionalExtension, params};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// How much the store keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caps {
    /// The largest text kept, in bytes (a larger one is not stored).
    pub image: u64,
    /// The most bytes of text kept in all; the oldest are removed beyond it.
    pub total: u64,
}

impl Default for Caps {
    /// 8 MiB a text, as the tracer reads at most (`engine::trace`), and 64 MiB in all: thousands of
    /// ordinary source files, a few days of an agent's edits, while staying small beside a checkout.
    fn default() -> Caps {
        Caps { image: 8 * 1024 * 1024, total: 64 * 1024 * 1024 }
    }
}

/// How many bytes of text may wait to be stored. Beyond it a text is dropped (no diff of it later)
/// rather than holding memory without bound (a ledger that settles no batch stores nothing).
const QUEUED_BYTES: u64 = 32 * 1024 * 1024;

#[derive(Debug)]
pub struct ImageStore {
    /// Shared with whoever stores the queue ([`ImageStore::storer`]).
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    db: PathBuf,
    caps: Caps,
    /// The connection, opened on first use; a failure to open is not kept (the folder may appear).
    /// Held while the queue is stored, so texts are stored in the order they were kept.
    conn: Mutex<Option<Connection>>,
    /// Texts kept and not yet stored, oldest first.
    queued: Mutex<Queued>,
}

#[derive(Debug, Default)]
struct Queued {
    texts: Vec<(String, String)>,
    bytes: u64,
}

impl ImageStore {
    /// The store of `sidecar`'s workspace, with the default caps. Opens nothing yet.
    pub fn new(sidecar: &Sidecar) -> ImageStore {
        ImageStore::with_caps(sidecar.images_db(), Caps::default())
    }

    /// A store in the database `db` that keeps what `caps` allows.
    pub fn with_caps(db: PathBuf, caps: Caps) -> ImageStore {
        let shared = Shared { db, caps, conn: Mutex::default(), queued: Mutex::default() };
        ImageStore { shared: Arc::new(shared) }
    }

    /// Keeps `text` by its SHA-256 (`sha256`, lower-case hex): queues it, to be stored by the next
    /// [`ImageStore::store_queued`]. Never fails and never waits: `false` when the text is over the
    /// cap or the queue is full, which only means that no diff of it can be shown.
    pub fn keep(&self, sha256: String, text: String) -> bool {
        let len = text.len() as u64;
        if len > self.shared.caps.image {
            return false;
        }
        let mut queued = self.shared.queued.lock().unwrap_or_else(|p| p.into_inner());
        if queued.bytes + len > QUEUED_BYTES {
            return false;
        }
        queued.bytes += len;
        queued.texts.push((sha256, text));
        true
    }

    /// Stores every text queued so far, in one transaction, on the caller's thread. A failure only
    /// loses these diffs; the texts kept later try again.
    pub fn store_queued(&self) {
        self.shared.store_queued();
    }

    /// Starts the store's thread and returns what wakes it to store the queue: for the ledger to
    /// call after each batch. It never waits (a wake already pending covers the texts queued since).
    /// The thread ends when what wakes it is dropped; without a thread, what it returns stores the
    /// queue on the caller's thread.
    pub fn storer(&self) -> Box<dyn Fn() + Send + Sync> {
        let shared = Arc::clone(&self.shared);
        let (wake, woken) = std::sync::mpsc::sync_channel::<()>(1);
        let thread = std::thread::Builder::new().name("chokepoint-images".to_owned()).spawn({
            let shared = Arc::clone(&shared);
            move || {
                while woken.recv().is_ok() {
                    shared.store_queued();
                }
            }
        });
        match thread {
            Ok(_) => Box::new(move || {
                let _ = wake.try_send(());
            }),
            Err(_) => Box::new(move || shared.store_queued()),
        }
    }

    /// Stores what is queued: for a reader that wants what was just kept, and a process about to
    /// exit.
    pub fn settle(&self) {
        self.shared.store_queued();
    }

    /// Stores `text` now, on the caller's thread; `Err` with why it could not.
    pub fn put(&self, sha256: &str, text: &str) -> Result<(), String> {
        if text.len() as u64 > self.shared.caps.image {
            return Err(format!("an image of {} bytes is over the cap of {}", text.len(), self.shared.caps.image));
        }
        self.shared.put(sha256, text)
    }

    /// The text whose SHA-256 is `sha256`, after the texts queued before were stored; `None` when it
    /// was never kept, was pruned, or the store cannot be read.
    pub fn get(&self, sha256: &str) -> Option<String> {
        self.settle();
        if !self.shared.db.exists() {
            return None;
        }
        self.shared
            .with_conn(|conn| {
                conn.query_row("SELECT text FROM images WHERE sha256 = ?1", [sha256], |row| row.get::<_, String>(0)).optional()
            })
            .ok()
            .flatten()
    }

    /// How many bytes of text are stored, as the store counts them (`stored.bytes`).
    pub fn stored_bytes(&self) -> u64 {
        self.settle();
        self.shared.with_conn(|conn| conn.query_row("SELECT bytes FROM stored", [], |row| row.get::<_, i64>(0))).map_or(0, |b| b as u64)
    }
}

impl Drop for ImageStore {
    /// What is still queued is stored: the texts of the last writes of an engine closed without
    /// [`ImageStore::settle`].
    fn drop(&mut self) {
        self.shared.store_queued();
    }
}

impl Shared {
    fn store_queued(&self) {
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        let texts = {
            let mut queued = self.queued.lock().unwrap_or_else(|p| p.into_inner());
            queued.bytes = 0;
            std::mem::take(&mut queued.texts)
        };
        if !texts.is_empty() {
            let _ = self.with_open(&mut conn, |conn| put_all(conn, &texts, self.caps.total));
        }
    }

    fn with_conn<T>(&self, f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>) -> Result<T, String> {
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        self.with_open(&mut conn, f)
    }

    fn with_open<T>(&self, conn: &mut Option<Connection>, f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>) -> Result<T, String> {
        if conn.is_none() {
            *conn = Some(open(&self.db).map_err(|e| format!("cannot open the image store {}: {e}", self.db.display()))?);
        }
        f(conn.as_mut().expect("opened above")).map_err(|e| format!("the image store {}: {e}", self.db.display()))
    }

    /// Stores one text as the newest, then removes the oldest while the total is over the cap, in one
    /// transaction.
    fn put(&self, sha256: &str, text: &str) -> Result<(), String> {
        let cap = self.caps.total;
        self.with_conn(|conn| put_all(conn, &[(sha256.to_owned(), text.to_owned())], cap))
    }
}

/// Stores the texts, the last as the newest, then removes the oldest while the total is over the cap,
/// in one transaction. The total is the one-row table `stored`, kept in the same transaction, so a
/// put costs what it stores and removes, never a pass over the whole table (a sum of every row, on
/// every put, grew with the store: up to 64 MiB of texts read for each write). A table, not a count
/// in memory, because other processes (`chokepoint hook`, another window's engine) store into the
/// same database.
fn put_all(conn: &mut Connection, texts: &[(String, String)], cap: u64) -> rusqlite::Result<()> {
    let cap = cap as i64;
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    let mut added = 0i64;
    {
        let mut insert =
            tx.prepare_cached("INSERT INTO images (sha256, bytes, text) VALUES (?1, ?2, ?3) ON CONFLICT (sha256) DO NOTHING")?;
        // The same text stored again moves to the newest end (a new `id`), so it is pruned last.
        let mut renew = tx.prepare_cached("UPDATE images SET id = (SELECT max(id) + 1 FROM images) WHERE sha256 = ?1")?;
        for (sha256, text) in texts {
            if insert.execute(params![sha256, text.len() as i64, text])? == 1 {
                added += text.len() as i64;
            } else {
                renew.execute([sha256])?;
            }
        }
    }
    tx.execute("UPDATE stored SET bytes = bytes + ?1", [added])?;
    let total: i64 = tx.query_row("SELECT bytes FROM stored", [], |row| row.get(0))?;
    if total > cap {
        // The oldest rows, up to the first whose removal brings the total to the cap: only
        // the rows removed are read (their sizes, by the primary key's order).
        let mut removed = 0i64;
        let mut last = None;
        {
            let mut oldest = tx.prepare_cached("SELECT id, bytes FROM images ORDER BY id")?;
            let mut rows = oldest.query([])?;
            while total - removed > cap {
                let Some(row) = rows.next()? else { break };
                last = Some(row.get::<_, i64>(0)?);
                removed += row.get::<_, i64>(1)?;
            }
        }
        if let Some(last) = last {
            tx.execute("DELETE FROM images WHERE id <= ?1", [last])?;
            tx.execute("UPDATE stored SET bytes = bytes - ?1", [removed])?;
        }
    }
    tx.commit()
}

fn open(db: &std::path::Path) -> rusqlite::Result<Connection> {
    let _ = crate::base::sidecar::create_owner_only(db);
    let mut conn = Connection::open(db)?;
    conn.busy_timeout(crate::base::sqlite::BUSY_TIMEOUT)?;
    // WAL: a reader (the extension opening a diff) never waits for a put.
    conn.pragma_update(None, "journal_mode", "WAL")?;
    // OFF: the store never syncs, not even at a checkpoint. Its texts only serve diffs, and a sync
    // here competed with the ledger's own on every write (runtime.tool_call 2.9x its bypass with the
    // store off, 3.4x with it syncing at NORMAL). A power cut may cost the store's last texts, or
    // leave the store unreadable: then no diff can be shown (each read says so), never a record lost.
    conn.pragma_update(None, "synchronous", "OFF")?;
    // `stored`: the bytes of text in `images`, kept by every put in its transaction. A store made
    // before the table existed is summed once, here, under the write lock so that two processes
    // opening it at once do not both count it.
    let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
    tx.execute_batch(
        "CREATE TABLE IF NOT EXISTS images (
             id INTEGER PRIMARY KEY,
             sha256 TEXT NOT NULL UNIQUE,
             bytes INTEGER NOT NULL,
             text TEXT NOT NULL
         );
         CREATE TABLE IF NOT EXISTS stored (
             one INTEGER PRIMARY KEY CHECK (one = 1),
             bytes INTEGER NOT NULL
         );",
    )?;
    let counted: bool = tx.query_row("SELECT EXISTS (SELECT 1 FROM stored)", [], |row| row.get(0))?;
    if !counted {
        tx.execute("INSERT INTO stored (one, bytes) SELECT 1, CAST(total(bytes) AS INTEGER) FROM images", [])?;
    }
    tx.commit()?;
    Ok(conn)
}

/// The SHA-256 of the empty text: the before-image of a file a write created, never stored (it is
/// known without the store).
pub const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
