//! What the engine writes into the trace ledger: a record for every event it judges (every tool call
//! that reached the chokepoint, allowed or not, and every lifecycle event), the files a write changed
//! with the content hashes of the changed ranges, and the shell commands it contained.
//!
//! The ledger is opened on the first record, and only in a governed workspace (one with a sidecar
//! folder): judging never creates `.orchestration/`. Before-images for the ranges of a write are read
//! when the gatekeeper allows the write (`PreToolUse`) and used when it is reported done
//! (`PostToolUse`), in this process; a write reported without one records the file's hash without
//! ranges rather than attributing the whole file to it.
//!
//! Reading the trace back (the extension's sidebar and provenance command) goes through the ledger's
//! index, opened once per tracer and brought up to date with the ledger before every read, so a
//! reader sees every record that is durable, whichever process wrote it.
//!
//! With a team's database (`base::team`), the tracer also holds the ledger's copy there
//! (`ledger::team_copy`): engines that live start its copier ([`Tracer::copy_in_background`]), which
//! the ledger wakes after each durable batch; a reload that changes the database points it at the
//! new one. [`Tracer::team_trace`] reads every machine's records back, after copying this
//! worktree's own.

use crate::base::regular::open_regular;
use crate::base::sidecar::Sidecar;
use crate::base::sqlite::StateDb;
use crate::base::team::{Team, TeamError};
use crate::ledger::blame::BlameLine;
use crate::ledger::images::ImageStore;
use crate::ledger::index::{Filter, Index, IndexedRecord};
use crate::ledger::team_copy::{Copied, Copier, CopyError, CopyStatus, TeamCopy};
use crate::ledger::team_query::{QueryError, TeamFilter, TeamRecord};
use crate::ledger::writer::{Appended, Ledger, Recovery};
use crate::ledger::{FileChange, Record, RecordKind, RecordedDecision, RecordedHook};
use crate::model::decision::{Decision, HookOutcome, OutcomeKind};
use crate::model::event::{Event, EventKind};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

crate::base::error::domain_error! {
    /// The trace could not be written or read: an ungoverned workspace, a ledger or an index that
    /// cannot be opened.
    TraceError
}

/// Files larger than this are hashed but their ranges are not computed (a before-image is not kept).
const MAX_IMAGE_BYTES: u64 = 8 * 1024 * 1024;

#[derive(Debug)]
pub struct Tracer {
    sidecar: Sidecar,
    state: Arc<StateDb>,
    ledger: OnceLock<Ledger>,
    opening: Mutex<()>,
    images: Arc<Images>,
    recovery: Mutex<Option<Recovery>>,
    /// The index, opened on the first read. A failure to open is not kept: the next read tries again
    /// (the sidecar folder may appear later).
    index: OnceLock<Index>,
    /// The team's database as of the last load, and the ledger's copy there when it is on.
    team: Mutex<(Team, Option<Arc<TeamCopy>>)>,
    /// The copier of an engine that lives, started once it has a database to copy to.
    copier: Mutex<Option<Copier>>,
    /// Whether this engine lives ([`Tracer::copy_in_background`]): a one-call process never copies.
    live: std::sync::atomic::AtomicBool,
}

/// Why the team's trace cannot be listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TeamTraceError {
    /// No team database is configured.
    NotConfigured,
    /// The configured one cannot work, or cannot be reached.
    Team(TeamError),
    Query(QueryError),
}

impl std::fmt::Display for TeamTraceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TeamTraceError::NotConfigured => f.write_str(
                "no team database is configured: set coordination.url in .orchestration/hooks.yaml (or the environment variable \
                 CHOKEPOINT_COORDINATION_URL) to the team's PostgreSQL database, with the password in PGPASSWORD or ~/.pgpass",
            ),
            TeamTraceError::Team(e) => e.fmt(f),
            TeamTraceError::Query(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for TeamTraceError {}

/// The team's records, and what copying this worktree's own first did.
#[derive(Debug)]
pub struct TeamTrace {
    pub records: Vec<TeamRecord>,
    /// `Err` when some of this worktree's records could not be copied (they are listed once a copy
    /// succeeds); a database that cannot be reached fails the whole listing instead.
    pub copy: Result<Copied, CopyError>,
}

/// The before-images of writes in flight, apart from the tracer: the records that use them are built
/// on the ledger's writer thread, which must never own (and so never drop) the ledger it runs for.
#[derive(Debug)]
pub struct Images {
    root: std::path::PathBuf,
    /// The workspace root opened once: an image is opened beneath it, a walk of the workspace-relative
    /// path only (the absolute one walked the root's own components again for every written file).
    root_dir: Option<std::fs::File>,
    /// Content before an allowed write, by (session, canonical path).
    before: Mutex<HashMap<(String, String), Before>>,
    /// Where the texts of a write's result are kept for its diff, after the batch's sync, off the
    /// ledger's threads.
    store: ImageStore,
    /// The after-image last handed to the store, by path: the next write's before-image is usually
    /// that same text, which is then not handed over again.
    last_kept: Mutex<LastKept>,
}

/// What [`Images`] handed to the store: each path's last after-image, and how many bytes had been
/// handed over before it, so that one the store may have pruned since is handed over again.
#[derive(Debug, Default)]
struct LastKept {
    by_path: HashMap<String, (String, u64)>,
    /// Bytes of text handed to the store so far.
    bytes: u64,
}

impl LastKept {
    /// Whether `sha256` is the last after-image kept for `path`, recently enough that the store
    /// still has it: less than half its cap was handed over since (the store prunes the oldest once
    /// its total passes the cap, and other processes store into it too).
    fn holds(&self, path: &str, sha256: &str) -> bool {
        let cap = crate::ledger::images::Caps::default().total;
        self.by_path.get(path).is_some_and(|(kept, at)| kept == sha256 && self.bytes - at < cap / 2)
    }

    /// Hands `text` to `store`, counting it.
    fn keep(&mut self, store: &ImageStore, sha256: String, text: String) -> bool {
        self.bytes += text.len() as u64;
        store.keep(sha256, text)
    }

    /// Notes `sha256` as the last after-image of `path` (`None`: none that the store was given).
    fn remember(&mut self, path: &str, sha256: Option<String>) {
        let Some(sha256) = sha256 else {
            self.by_path.remove(path);
            return;
        };
        // Bounded by the files one engine writes; forgetting them all only costs texts stored twice.
        if self.by_path.len() >= LAST_KEPT_PATHS {
            self.by_path.clear();
        }
        self.by_path.insert(path.to_owned(), (sha256, self.bytes));
    }
}

/// A file as the tracer found it before an allowed write.
#[derive(Debug)]
enum Before {
    /// It did not exist: the write creates it.
    Absent,
    Text(String),
    /// It exists but was not read: too large, not text, not a regular file, or unreadable.
    Unread,
}

impl Before {
    /// The text the ranges are computed against: none for a file created, and (as before the images
    /// were kept) none for one not read, whose ranges then cover the whole file.
    fn text(&self) -> Option<&str> {
        match self {
            Before::Text(text) => Some(text),
            Before::Absent | Before::Unread => None,
        }
    }
}

const NOT_GOVERNED: &str = "the workspace has no .orchestration folder; nothing is recorded";

impl Tracer {
    /// A tracer whose ledger keeps its head on `state`, the connection the engine shares between its
    /// stores.
    pub(crate) fn new(sidecar: Sidecar, state: Arc<StateDb>) -> Tracer {
        let root = sidecar.workspace_root().to_path_buf();
        let root_dir = if cfg!(unix) { std::fs::File::open(&root).ok() } else { None };
        let store = ImageStore::new(&sidecar);
        let images = Arc::new(Images { root_dir, root, before: Mutex::default(), store, last_kept: Mutex::default() });
        Tracer {
            sidecar,
            state,
            ledger: OnceLock::new(),
            opening: Mutex::default(),
            images,
            recovery: Mutex::default(),
            index: OnceLock::new(),
            team: Mutex::default(),
            copier: Mutex::default(),
            live: Default::default(),
        }
    }

    /// Follows the team's database a load resolved: a new copy for a new database (none without
    /// one), which a live engine's copier copies to from now on.
    pub(crate) fn follow_team(&self, team: &Team) {
        let target = {
            let mut current = self.team.lock().unwrap_or_else(|p| p.into_inner());
            let same = match (&current.1, team.db()) {
                (Some(copy), Some(db)) => Arc::ptr_eq(copy.db(), db),
                _ => false,
            };
            if !same {
                current.1 = team.db().map(|db| Arc::new(TeamCopy::new(Arc::clone(db), self.sidecar.clone())));
            }
            current.0 = team.clone();
            current.1.clone()
        };
        if self.live.load(std::sync::atomic::Ordering::Acquire) {
            self.start_copier(target);
        }
    }

    /// Copies this worktree's ledger to the team's database in the background from now on, for an
    /// engine that lives (the extension's, `chokepoint serve`): soon after each durable batch, and
    /// every `team_copy::PERIOD`. Nothing runs while no team database is configured.
    pub fn copy_in_background(&self) {
        self.live.store(true, std::sync::atomic::Ordering::Release);
        let target = self.team_copy();
        self.start_copier(target);
    }

    fn start_copier(&self, target: Option<Arc<TeamCopy>>) {
        let mut copier = self.copier.lock().unwrap_or_else(|p| p.into_inner());
        match copier.as_ref() {
            Some(running) => running.follow(target),
            // No thread when it cannot start: the copy waits for `trace show --team` or another engine.
            None if target.is_some() => {
                if let Ok(started) = Copier::start(target) {
                    if let Some(ledger) = self.ledger.get() {
                        ledger.on_durable(started.waker());
                    }
                    started.wake();
                    *copier = Some(started);
                }
            }
            None => {}
        }
    }

    /// The ledger's copy in the team's database, when one is configured and usable.
    pub fn team_copy(&self) -> Option<Arc<TeamCopy>> {
        self.team.lock().unwrap_or_else(|p| p.into_inner()).1.clone()
    }

    /// How the copy fares: records waiting, the last error; `None` without a team database.
    pub fn team_copy_status(&self) -> Option<CopyStatus> {
        self.team_copy().map(|copy| copy.status())
    }

    /// Every machine's records in the team's database that match `filter`, oldest first, after
    /// this worktree's pending records were copied.
    pub fn team_trace(&self, filter: &TeamFilter) -> Result<TeamTrace, TeamTraceError> {
        let (team, copy) = self.team.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let copy = match (team, copy) {
            (Team::Off, _) => return Err(TeamTraceError::NotConfigured),
            (Team::Broken(e), _) => return Err(TeamTraceError::Team(e)),
            (Team::On(_), Some(copy)) => copy,
            (Team::On(db), None) => Arc::new(TeamCopy::new(db, self.sidecar.clone())),
        };
        let copied = copy.copy_pending();
        if let Err(CopyError::Team(e)) = &copied {
            return Err(TeamTraceError::Team(e.clone()));
        }
        let records = crate::ledger::team_query::query(copy.db(), filter).map_err(|e| match e {
            QueryError::Team(e) => TeamTraceError::Team(e),
            other => TeamTraceError::Query(other),
        })?;
        Ok(TeamTrace { records, copy: copied })
    }

    /// The ledger, opened on first use; `Err` when the workspace is not governed or the ledger cannot
    /// be opened (the reason, for the output channel).
    pub fn ledger(&self) -> Result<&Ledger, TraceError> {
        if let Some(ledger) = self.ledger.get() {
            return Ok(ledger);
        }
        // One opener at a time: a caller that comes while another opens it (`chokepoint hook` opens
        // it ahead, beside the judging) waits for that ledger rather than opening a second one.
        let _opening = self.opening.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(ledger) = self.ledger.get() {
            return Ok(ledger);
        }
        // A failure is not kept: the next call tries again (the sidecar folder may appear, a
        // tampered ledger may be resealed, a full disk may be freed).
        if !self.sidecar.exists() {
            return Err(NOT_GOVERNED.to_owned().into());
        }
        self.sidecar.ignore_runtime_files();
        let (ledger, recovery) =
            Ledger::open_sharing(&self.sidecar, Arc::clone(&self.state)).map_err(|e| format!("cannot open the trace ledger: {e}"))?;
        if self.ledger.set(ledger).is_ok() {
            *self.recovery.lock().unwrap_or_else(|p| p.into_inner()) = recovery;
            let ledger = self.ledger.get().expect("set above");
            if let Some(copier) = self.copier.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
                ledger.on_durable(copier.waker());
            }
            // The texts of the writes a batch recorded are stored once it is settled, by the image
            // store's thread, woken once per batch (`ledger::images` says why then and there).
            ledger.after_batch(self.images.store.storer());
        }
        Ok(self.ledger.get().expect("set above, by this call or a concurrent one"))
    }

    /// Whether this workspace keeps a trace: its ledger is open, or its sidecar folder exists (a
    /// `stat` only until the ledger is open).
    pub fn governed(&self) -> bool {
        self.ledger.get().is_some() || self.sidecar.exists()
    }

    /// The torn end a crash left, moved aside when the ledger was opened (reported once).
    pub fn take_recovery(&self) -> Option<Recovery> {
        self.recovery.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// The before-images of writes in flight (shared with the records built off the judge's thread).
    pub fn images(&self) -> &Arc<Images> {
        &self.images
    }

    /// Keeps the current content of files an allowed write is about to change.
    pub fn before_write(&self, session: &str, paths: &[String]) {
        self.images.before_write(session, paths)
    }

    /// What a completed write changed in each file: ranges against the before-image when there is
    /// one, the file's hash alone otherwise.
    pub fn after_write(&self, session: &str, paths: &[String]) -> Vec<FileChange> {
        self.images.after_write(session, paths)
    }

    /// The text whose SHA-256 is `sha256` (a `FileChange`'s `sha256` or `before_sha256`), as the image
    /// store kept it (`ledger::images`); `None` when it was never kept or was pruned since, and in an
    /// ungoverned workspace. The empty text is always known.
    pub fn image(&self, sha256: &str) -> Option<String> {
        if sha256 == crate::ledger::images::EMPTY_SHA256 {
            return Some(String::new());
        }
        if !self.sidecar.exists() {
            return None;
        }
        self.images.store.get(sha256)
    }

    /// Stores the images queued for the store, on the caller's thread: for a process about to exit
    /// (the ledger stores them after each batch, `ledger::images`).
    pub fn settle_images(&self) {
        self.images.store.settle();
    }

    /// Appends a record of the caller's own and waits until it is durable.
    pub fn append(&self, record: Record) -> Result<Appended, TraceError> {
        self.ledger()?.append(record).map_err(|e| e.to_string().into())
    }

    /// The ledger's index, opened once and brought up to date with the ledger on every call, so what
    /// is read through it includes every durable record (of this process or another). `Err` when the
    /// workspace is not governed or the index cannot be opened or caught up.
    pub fn index(&self) -> Result<&Index, TraceError> {
        if !self.sidecar.exists() {
            return Err(NOT_GOVERNED.to_owned().into());
        }
        let index = match self.index.get() {
            Some(index) => index,
            None => {
                self.sidecar.ignore_runtime_files();
                let opened = Index::open(&self.sidecar).map_err(|e| TraceError::from(e.to_string()))?;
                // Two first readers at once both open it; one is kept, the other dropped.
                let _ = self.index.set(opened);
                self.index.get().expect("the index was just set")
            }
        };
        index.catch_up().map_err(|e| TraceError::from(e.to_string()))?;
        Ok(index)
    }

    /// The records that match `filter`, from the ledger as it is now. An ungoverned workspace has
    /// none.
    pub fn query(&self, filter: &Filter) -> Result<Vec<Record>, TraceError> {
        Ok(self.query_indexed(filter)?.into_iter().map(|found| found.record).collect())
    }

    /// [`Tracer::query`] with where each record is: its chain and its line's offset.
    pub fn query_indexed(&self, filter: &Filter) -> Result<Vec<IndexedRecord>, TraceError> {
        if !self.sidecar.exists() {
            return Ok(Vec::new());
        }
        self.index()?.query(filter).map_err(|e| TraceError::from(e.to_string()))
    }

    /// How many records match `filter`, its `limit` aside.
    pub fn count(&self, filter: &Filter) -> Result<u64, TraceError> {
        if !self.sidecar.exists() {
            return Ok(0);
        }
        self.index()?.count(filter).map_err(|e| TraceError::from(e.to_string()))
    }

    /// The record `seq` of `chain`, as the ledger holds it now.
    pub fn record(&self, chain: &str, seq: u64) -> Result<Option<IndexedRecord>, TraceError> {
        if !self.sidecar.exists() {
            return Ok(None);
        }
        self.index()?.get_in(chain, seq).map_err(|e| TraceError::from(e.to_string()))
    }

    /// Who last wrote each line of `path` (workspace-relative, `/`-separated), or only `line`
    /// (1-based), found by content in the file as it is on disk now (`ledger::blame`). `Err` for a
    /// path outside the workspace, a file that cannot be read, a line past its end, or an ungoverned
    /// workspace.
    pub fn blame(&self, path: &str, line: Option<u32>) -> Result<Vec<BlameLine>, TraceError> {
        crate::ledger::blame::blame(self.index()?, &self.sidecar, path, line).map_err(|e| e.to_string().into())
    }

    /// Waits until everything queued so far is durable.
    pub fn flush(&self) -> Result<(), TraceError> {
        match self.ledger.get() {
            Some(ledger) => ledger.flush().map_err(|e| e.to_string().into()),
            _ => Ok(()),
        }
    }
}

impl Images {
    /// Keeps the current content of files an allowed write is about to change.
    pub fn before_write(&self, session: &str, paths: &[String]) {
        let mut before = self.before.lock().unwrap_or_else(|p| p.into_inner());
        for path in paths {
            let image = match self.read(path) {
                Some(text) => Before::Text(text),
                None if !self.exists(path) => Before::Absent,
                None => Before::Unread,
            };
            before.insert((session.to_owned(), path.clone()), image);
        }
    }

    /// Whether anything is at `rel` (a stat, only for a file that could not be read as text).
    fn exists(&self, rel: &str) -> bool {
        !matches!(self.root.join(rel).symlink_metadata(), Err(e) if e.kind() == std::io::ErrorKind::NotFound)
    }

    /// A file's content now. While the ledger builds a batch, each file is read once for the batch:
    /// its records are built at one moment, and a tool call's after-image and the next call's
    /// before-image (the same file, in the same batch of a burst) were otherwise two reads on the
    /// path to the next gate's sync.
    fn read(&self, rel: &str) -> Option<String> {
        let Some(batch) = crate::ledger::writer::batch_being_built() else { return self.read_image(rel) };
        READ_IN_BATCH.with(|memo| {
            let mut memo = memo.borrow_mut();
            // A batch is one ledger's, whose records are all of one workspace: its number is key enough.
            if memo.0 != batch {
                *memo = (batch, Vec::new());
            }
            if let Some((_, image)) = memo.1.iter().find(|(path, _)| path == rel) {
                return image.clone();
            }
            let image = self.read_image(rel);
            // Kept until the thread's next batch: only small ones, and only a few.
            if image.as_ref().is_none_or(|i| i.len() <= IMAGE_KEPT_BYTES) {
                if memo.1.len() == IMAGES_PER_BATCH {
                    memo.1.remove(0);
                }
                memo.1.push((rel.to_owned(), image.clone()));
            }
            image
        })
    }

    /// A regular file's content, `None` for anything else or a file too large to keep. One open
    /// beneath the root (by path, a `metadata` first walked the path a second time), which never
    /// blocks on a FIFO (see `base::regular`), the size from the open file, one read to its end (std's
    /// `read_to_string` asks the size again and seeks).
    fn read_image(&self, rel: &str) -> Option<String> {
        use std::io::Read;
        let opened = match &self.root_dir {
            Some(dir) => open_regular(Some(dir), std::path::Path::new(rel)),
            None => open_regular(None, &self.root.join(rel)),
        };
        let (mut file, meta) = opened.ok()?;
        if meta.len() > MAX_IMAGE_BYTES {
            return None;
        }
        // One byte more than its size: a file that grew meanwhile is read to its end all the same, up
        // to the same bound (a file written faster than it is read is not followed without end).
        let mut image = vec![0; meta.len() as usize + 1];
        let mut filled = 0;
        loop {
            match file.read(&mut image[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => return None,
            }
            if filled as u64 > MAX_IMAGE_BYTES {
                return None;
            }
            if filled == image.len() {
                image.resize((image.len() * 2).min(MAX_IMAGE_BYTES as usize + 1), 0);
            }
        }
        image.truncate(filled);
        String::from_utf8(image).ok()
    }

    /// What a completed write changed in each file: ranges against the before-image when there is
    /// one, the file's hash alone otherwise.
    pub fn after_write(&self, session: &str, paths: &[String]) -> Vec<FileChange> {
        let mut before = self.before.lock().unwrap_or_else(|p| p.into_inner());
        paths
            .iter()
            .map(|path| {
                let after = self.read(path);
                match before.remove(&(session.to_owned(), path.clone())) {
                    Some(image) => {
                        let mut change = crate::ledger::ranges::file_change(path, image.text(), after.as_deref());
                        self.keep_images(&mut change, image, after);
                        change
                    }
                    None => FileChange {
                        path: path.clone(),
                        sha256: after.as_deref().map(|a| crate::ledger::record::sha256_hex(a.as_bytes())),
                        before_sha256: None,
                        ranges: Vec::new(),
                    },
                }
            })
            .collect()
    }
}

impl Images {
    /// Names the before-image in `change` and hands both texts to the image store, when both sides of
    /// the write are known: the file before it (its text, or that it did not exist) and after it (its
    /// text, or that it is gone). A side that is not known (too large, not text) gives no diff: a
    /// deleted file would otherwise be shown where one too large to read is. Storing never fails the
    /// record: at worst its diff cannot be shown (`ledger::images`).
    fn keep_images(&self, change: &mut FileChange, before: Before, after: Option<String>) {
        use crate::ledger::record::sha256_hex;
        let before = match before {
            Before::Text(text) => text,
            Before::Absent => String::new(),
            Before::Unread => return,
        };
        if after.is_none() && self.exists(&change.path) {
            return;
        }
        let before_sha256 = sha256_hex(before.as_bytes());
        change.before_sha256 = Some(before_sha256.clone());
        let mut last_kept = self.last_kept.lock().unwrap_or_else(|p| p.into_inner());
        // A file that only agents wrote since: its before-image is the after-image of the last write
        // to it, kept then. Handed over again it would only be stored again, doubling the store's
        // work for every write of a file written before (the empty text is never stored).
        let before_kept =
            !before.is_empty() && (last_kept.holds(&change.path, &before_sha256) || last_kept.keep(&self.store, before_sha256, before));
        // The same text again (a write that changed nothing) is kept once.
        let after_kept = match (after, &change.sha256) {
            (Some(after), Some(after_sha256)) if !after.is_empty() => {
                let unchanged = change.before_sha256.as_ref() == Some(after_sha256);
                let kept = if unchanged { before_kept } else { last_kept.keep(&self.store, after_sha256.clone(), after) };
                kept.then(|| after_sha256.clone())
            }
            _ => None,
        };
        last_kept.remember(&change.path, after_kept);
    }
}

/// The most paths whose last after-image [`Images`] remembers.
const LAST_KEPT_PATHS: usize = 4096;

/// The most images kept for the batch being built: enough for a multi-file edit's after-images and
/// the next one's before-images.
const IMAGES_PER_BATCH: usize = 8;

/// The largest image kept for the batch being built (a larger one is read for each record).
const IMAGE_KEPT_BYTES: usize = 256 * 1024;

/// The images read for one batch: its number, then each file and its content.
type BatchImages = (u64, Vec<(String, Option<String>)>);

thread_local! {
    /// The images read for the batch being built on this thread.
    static READ_IN_BATCH: std::cell::RefCell<BatchImages> = const { std::cell::RefCell::new((0, Vec::new())) };
}

/// The record of one judged event.
pub fn evaluation_record(
    event: &Event,
    intent: Option<String>,
    decision: &Decision,
    outcomes: &[HookOutcome],
    files: Vec<FileChange>,
) -> Record {
    let kind =
        if matches!(event.kind, EventKind::PreToolUse | EventKind::PostToolUse) { RecordKind::ToolCall } else { RecordKind::Lifecycle };
    let mut record = Record::new(kind);
    record.event = Some(event.kind.as_str().to_owned());
    record.session = event.ids.session.clone();
    record.agent = event.ids.agent.clone();
    record.model = event.ids.model.clone();
    record.task = event.ids.task.clone();
    record.plan = event.ids.plan.clone();
    record.turn = event.ids.turn.map(|t| t.to_string());
    record.intent = intent.or_else(|| event.ids.intent.clone());
    record.tool = event.tool.clone();
    if !event.subject.is_null() {
        record.input_sha256 = Some(crate::ledger::record::digest_json(&event.subject));
    }
    let reason = match decision {
        Decision::Allow => None,
        Decision::Deny(d) => Some(d.reason.clone()),
        Decision::Ask { .. } => Some(decision.ask_reasons().join("; ")),
    };
    record.decision = Some(RecordedDecision {
        decision: decision.as_str().to_owned(),
        reason,
        hooks: outcomes
            .iter()
            .map(|o| RecordedHook {
                name: o.hook.to_string(),
                outcome: o.kind.as_str().to_owned(),
                duration_ns: o.duration_ns,
                failure: match &o.kind {
                    OutcomeKind::FailedOpen(f) | OutcomeKind::FailedClosed(f) => Some(f.to_string()),
                    _ => None,
                },
            })
            .collect(),
    });
    record.files = files;
    // The task's type links a record to the chain it was judged by (a merge-side run's above all, and
    // a replay's, which resolves the chain again by it).
    let mut data = serde_json::Map::new();
    if let Some(subagent) = &event.ids.subagent {
        data.insert("subagent".to_owned(), subagent.clone().into());
    }
    if let Some(task_type) = &event.task_type {
        data.insert("task_type".to_owned(), task_type.clone().into());
    }
    if let Some(call) = RecordedCall::of(event) {
        data.insert(RecordedCall::KEY.to_owned(), serde_json::to_value(call).expect("a recorded call serialises"));
    }
    record.data = (!data.is_empty()).then_some(serde_json::Value::Object(data));
    record
}

/// What a replay of a `PreToolUse` call needs besides the record's tool, agent, session and intent
/// (`engine::replay`), kept under `data.call`: the paths the caller named (for path matchers), the writes as the gatekeeper resolved them, and the input of the
/// handshake's tools (small, and what the gatekeeper judges). A write's input (file contents) stays
/// out of the ledger, as `input_sha256` always said. Records written before it have none: a replay
/// judges them when the tool writes nothing, and skips them, saying so, when it writes.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RecordedCall {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<String>,
    /// `None` for a tool that writes nothing; empty for a write that named no path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writes: Option<Vec<RecordedWrite>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<serde_json::Value>,
}

/// A path a write named and what the canonicaliser made of it ([`ResolvedPath`] as recorded).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RecordedWrite {
    pub raw: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canonical: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

impl RecordedCall {
    /// Its key in a record's `data`.
    pub const KEY: &'static str = "call";

    fn of(event: &Event) -> Option<RecordedCall> {
        use crate::model::governance::{SCOPE_EXPANSION_TOOL, SELECT_INTENT_TOOL};
        if event.kind != EventKind::PreToolUse {
            return None;
        }
        let handshake = matches!(event.tool.as_deref(), Some(SELECT_INTENT_TOOL | SCOPE_EXPANSION_TOOL));
        // The task type that chose its chain is the record's `data.task_type`, kept for every typed event.
        let call = RecordedCall {
            paths: event.paths.clone(),
            writes: event.writes.as_ref().map(|writes| {
                writes
                    .iter()
                    .map(|w| RecordedWrite { raw: w.raw.clone(), canonical: w.canonical.clone().ok(), refused: w.canonical.clone().err() })
                    .collect()
            }),
            input: handshake.then(|| event.subject.clone()),
        };
        (call != RecordedCall::default()).then_some(call)
    }

    /// The call of a record, if it kept one.
    pub fn from_record(record: &Record) -> Option<RecordedCall> {
        serde_json::from_value(record.data.as_ref()?.get(RecordedCall::KEY)?.clone()).ok()
    }

    /// The writes as the engine's event carries them.
    pub fn resolved_writes(&self) -> Option<Arc<[crate::model::event::ResolvedPath]>> {
        let writes = self.writes.as_ref()?;
        Some(
            writes
                .iter()
                .map(|w| crate::model::event::ResolvedPath {
                    raw: w.raw.clone(),
                    canonical: match (&w.canonical, &w.refused) {
                        (Some(rel), _) => Ok(rel.clone()),
                        (None, refused) => Err(refused.clone().unwrap_or_else(|| "refused".to_owned())),
                    },
                })
                .collect(),
        )
    }
}

/// The record of a contained shell command: what it changed inside the scope (files, with their
/// hashes now), and in `data` what containment did (refused, not applied, unattributed, notes).
pub fn containment_record(session: &str, argv: &[String], report: &crate::containment::contain::ContainReport) -> Record {
    let mut record = Record::new(RecordKind::Containment);
    record.session = Some(session.to_owned());
    record.intent = report.intent_id.clone();
    record.tool = Some("execute_command".to_owned());
    record.input_sha256 = Some(crate::ledger::record::digest_json(&serde_json::json!(argv)));
    record.files = report
        .allowed
        .iter()
        .filter(|c| c.kind != crate::containment::snapshot::ChangeKind::Deleted)
        .map(|c| FileChange { path: c.path.clone(), sha256: None, before_sha256: None, ranges: Vec::new() })
        .collect();
    // The kinds as the ledger has always spelt them (`type changed`): records are kept for good, and
    // a reader of old and new ones alike should not meet two spellings of one kind.
    let changes = |list: &[crate::containment::snapshot::Change]| {
        list.iter().map(|c| serde_json::json!({ "path": c.path, "kind": c.kind.phrase() })).collect::<Vec<_>>()
    };
    let not_applied = |list: &[crate::containment::contain::NotApplied]| {
        list.iter()
            .map(|n| serde_json::json!({ "path": n.change.path, "kind": n.change.kind.phrase(), "conflict": n.conflict, "kept": n.kept, "reason": n.reason }))
            .collect::<Vec<_>>()
    };
    record.data = Some(serde_json::json!({
        "argv": argv,
        "exit_code": report.exit_code(),
        "timed_out": report.timed_out,
        "cancelled": report.cancelled,
        "confinement": match &report.confinement {
            crate::containment::sandbox::Confinement::Enforced { abi } => format!("landlock abi {abi}"),
            crate::containment::sandbox::Confinement::Partial { abi, .. } => format!("landlock abi {abi}, partial"),
            crate::containment::sandbox::Confinement::Unavailable { reason } => format!("none: {reason}"),
        },
        "isolation": match &report.isolation {
            crate::containment::contain::Isolation::Isolated => "isolated".to_owned(),
            crate::containment::contain::Isolation::Observed { reason } => format!("observed: {reason}"),
        },
        "changed": changes(&report.allowed),
        "refused": changes(&report.refused),
        "not_applied": not_applied(&report.not_applied),
        "unattributed": changes(&report.unattributed),
        "others": changes(&report.others),
        "notes": report.notes(),
        "warnings": report.warnings,
    }));
    record
}
