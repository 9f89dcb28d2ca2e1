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
//! Stores happen on a thread of their own ([`ImageStore::keep`]), never on the ledger's writer
//! thread that builds records: a batch's records are built just before its sync, which the next gate
//! waits for, and a SQLite write of megabytes there would delay every agent's next action.
//! The writer only hands the texts to this store's thread through a bounded queue: full means
//! dropped, so the sync the next gate waits for never waits on SQLite.
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
//! `a_record_without_a_before_hash_serialises_as_before`).

use crate::base::sidecar::Sidecar;
use rusqlite::{Connection, OptionalExtension, params};
use std::path::PathBuf;
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

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

/// How many bytes of text may wait for the store's thread. Beyond it a text is dropped (no diff of
/// it later) rather than holding the writer thread or memory without bound.
const QUEUED_BYTES: u64 = 32 * 1024 * 1024;

/// How long [`ImageStore::settle`] waits at most for the texts queued before it.
const SETTLE: Duration = Duration::from_secs(5);

#[derive(Debug)]
pub struct ImageStore {
    shared: Arc<Shared>,
    /// The queue to the store's thread, started on the first text kept.
    queue: OnceLock<Option<SyncSender<(String, String)>>>,
}

#[derive(Debug)]
struct Shared {
    db: PathBuf,
    caps: Caps,
    /// The connection, opened on first use; a failure to open is not kept (the folder may appear).
    conn: Mutex<Option<Connection>>,
    /// Bytes queued and not yet stored, and the condition [`ImageStore::settle`] waits on.
    queued: Mutex<u64>,
    drained: Condvar,
}

impl ImageStore {
    /// The store of `sidecar`'s workspace, with the default caps. Opens nothing yet.
    pub fn new(sidecar: &Sidecar) -> ImageStore {
        ImageStore::with_caps(sidecar.images_db(), Caps::default())
    }

    /// A store in the database `db` that keeps what `caps` allows.
    pub fn with_caps(db: PathBuf, caps: Caps) -> ImageStore {
        let shared = Shared { db, caps, conn: Mutex::default(), queued: Mutex::new(0), drained: Condvar::new() };
        ImageStore { shared: Arc::new(shared), queue: OnceLock::new() }
    }

    /// Keeps `text` by its SHA-256 (`sha256`, lower-case hex), later, on the store's thread. Never
    /// fails and never waits: a text over the cap, a full queue or a thread that cannot start only
    /// mean that no diff of it can be shown.
    pub fn keep(&self, sha256: String, text: String) {
        let len = text.len() as u64;
        if len > self.shared.caps.image {
            return;
        }
        let Some(queue) = self.queue.get_or_init(|| self.start()) else { return };
        {
            let mut queued = self.shared.queued.lock().unwrap_or_else(|p| p.into_inner());
            if *queued + len > QUEUED_BYTES {
                return;
            }
            *queued += len;
        }
        if let Err(TrySendError::Full((_, text)) | TrySendError::Disconnected((_, text))) = queue.try_send((sha256, text)) {
            self.shared.done(text.len() as u64);
        }
    }

    fn start(&self) -> Option<SyncSender<(String, String)>> {
        let (sender, receiver) = std::sync::mpsc::sync_channel::<(String, String)>(1024);
        let shared = Arc::clone(&self.shared);
        // The thread ends when the store is dropped (its sender with it).
        std::thread::Builder::new()
            .name("chokepoint-images".to_owned())
            .spawn(move || {
                // What has queued up is stored in one transaction (a write's texts before and after
                // come together): a transaction each cost a tool call a tenth more.
                while let Ok(first) = receiver.recv() {
                    let mut batch = vec![first];
                    while batch.len() < BATCH {
                        match receiver.try_recv() {
                            Ok(next) => batch.push(next),
                            Err(_) => break,
                        }
                    }
                    // A failure only loses these diffs; the next texts try again.
                    let _ = shared.put_all(&batch);
                    for (_, text) in &batch {
                        shared.done(text.len() as u64);
                    }
                }
            })
            .ok()?;
        Some(sender)
    }

    /// Waits (a few seconds at most) until every text queued before is stored or dropped: for a
    /// reader that wants what was just kept, and a process about to exit.
    pub fn settle(&self) {
        let queued = self.shared.queued.lock().unwrap_or_else(|p| p.into_inner());
        let _ = self.shared.drained.wait_timeout_while(queued, SETTLE, |queued| *queued > 0);
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

    /// How many bytes of text are stored.
    pub fn stored_bytes(&self) -> u64 {
        self.settle();
        self.shared
            .with_conn(|conn| conn.query_row("SELECT total(bytes) FROM images", [], |row| row.get::<_, f64>(0)))
            .map_or(0, |b| b as u64)
    }
}

impl Shared {
    fn done(&self, len: u64) {
        let mut queued = self.queued.lock().unwrap_or_else(|p| p.into_inner());
        *queued = queued.saturating_sub(len);
        if *queued == 0 {
            self.drained.notify_all();
        }
    }

    fn with_conn<T>(&self, f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>) -> Result<T, String> {
        let mut conn = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        if conn.is_none() {
            *conn = Some(open(&self.db).map_err(|e| format!("cannot open the image store {}: {e}", self.db.display()))?);
        }
        f(conn.as_mut().expect("opened above")).map_err(|e| format!("the image store {}: {e}", self.db.display()))
    }

    /// Stores one text as the newest, then removes the oldest while the total is over the cap, in one
    /// transaction.
    fn put(&self, sha256: &str, text: &str) -> Result<(), String> {
        self.put_all(&[(sha256.to_owned(), text.to_owned())])
    }

    /// Stores the texts, the last as the newest, then removes the oldest while the total is over the
    /// cap, in one transaction.
    fn put_all(&self, texts: &[(String, String)]) -> Result<(), String> {
        let cap = self.caps.total;
        self.with_conn(|conn| {
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            for (sha256, text) in texts {
                // The same text stored again moves to the newest end (a new `id`), so it is pruned last.
                tx.execute(
                    "INSERT INTO images (sha256, bytes, text) VALUES (?1, ?2, ?3)
                     ON CONFLICT (sha256) DO UPDATE SET id = (SELECT max(id) + 1 FROM images)",
                    params![sha256, text.len() as i64, text],
                )?;
            }
            let total: i64 = tx.query_row("SELECT total(bytes) FROM images", [], |row| row.get::<_, f64>(0))? as i64;
            if total as u64 > cap {
                // The oldest rows whose removal brings the total under the cap: those whose bytes,
                // summed newest first, go past it.
                tx.execute(
                    "DELETE FROM images WHERE id IN (
                         SELECT id FROM (SELECT id, sum(bytes) OVER (ORDER BY id DESC) AS kept FROM images) WHERE kept > ?1)",
                    [cap as i64],
                )?;
            }
            tx.commit()
        })
    }
}

fn open(db: &std::path::Path) -> rusqlite::Result<Connection> {
    let _ = crate::base::sidecar::create_owner_only(db);
    let conn = Connection::open(db)?;
    conn.busy_timeout(crate::base::sqlite::BUSY_TIMEOUT)?;
    // WAL: a reader (the extension opening a diff) never waits for the store's thread.
    conn.pragma_update(None, "journal_mode", "WAL")?;
    // OFF: the store never syncs, not even at a checkpoint. Its texts only serve diffs, and a sync
    // here competed with the ledger's own on every write (runtime.tool_call 2.9x its bypass with the
    // store off, 3.4x with it syncing at NORMAL). A power cut may cost the store's last texts, or
    // leave the store unreadable: then no diff can be shown (each read says so), never a record lost.
    conn.pragma_update(None, "synchronous", "OFF")?;
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS images (
             id INTEGER PRIMARY KEY,
             sha256 TEXT NOT NULL UNIQUE,
             bytes INTEGER NOT NULL,
             text TEXT NOT NULL
         );",
    )?;
    Ok(conn)
}

/// The most texts stored in one transaction.
const BATCH: usize = 64;

/// The SHA-256 of the empty text: the before-image of a file a write created, never stored (it is
/// known without the store).
pub const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
