//! The durable writer of the ledger's chains, `.orchestration/trace/<chain>.jsonl` (`chains.rs`).
//!
//! - **Acknowledged means synced.** An append returns (or its [`Ticket`] resolves) only after
//!   `fdatasync` of the bytes that hold it, so a record a producer was told about survives a crash of
//!   the process and of the machine. On macOS, whose `fsync` leaves the bytes in the drive's cache,
//!   std's `sync_data` and `sync_all` issue `fcntl(F_FULLFSYNC)` instead (std's `File::datasync`
//!   for Apple targets), so the same calls keep the same promise there: no code of ours differs.
//! - **Group commit, pipelined.** An fdatasync costs from a hundred microseconds to milliseconds,
//!   far more than everything else an append does, so one writer thread per [`Ledger`] takes every
//!   record queued since its last write and writes them in one `write`, and a syncer thread covers
//!   every batch written since its last sync with one sync, then acknowledges them. The two overlap:
//!   while a sync runs, the writer chains, hashes and writes the next batch, so the serial path of a
//!   record is its share of one sync. When nothing is in flight and nothing else is queued (one agent,
//!   one gate at a time), the writer thread syncs and acknowledges the batch itself: one hand-off
//!   between threads fewer on the path of a gate. Producers (agents' hooks, the CLI, the engine's threads)
//!   serialise their record themselves, then block on their ticket or enqueue without blocking and
//!   await durability later ([`Ledger::flush`]). Dedicated threads rather than a leader chosen among
//!   the producers, so that records enqueued by a producer that never waits are still written
//!   promptly.
//! - **One writer across processes.** Every batch is written under an exclusive `flock` of the
//!   worktree's lock file (`Sidecar::trace_lock`; not of a chain's file, which recovery truncates and
//!   which git or anyone may replace). The lock file also names the worktree's current chain: under the
//!   lock the writer reads it (one small read per batch) and follows a chain another process began,
//!   then checks whether the chain's file changed since its own last write (another process appended,
//!   or it was replaced or truncated) and if so reads the tail again to continue the chain (`seq`,
//!   `prev`) from what is really there. The lock covers the write, not the sync: an fdatasync flushes
//!   every dirty page of the file, whoever wrote it, so another process's sync can only make this
//!   one's records durable sooner.
//! - **The writer never stops for git.** A chain's file that is not as its head says (shorter,
//!   missing, or different at the head's record: a `checkout`, `switch`, `stash`, `reset --hard` or
//!   `pull` did that, or someone tampered with it) is left as found, its head kept as the last known
//!   one, and the next batch begins a new chain ([`Notice::LeftChain`]); `trace verify` later tells
//!   what git explains from tampering. The first batch of a worktree that names no chain (a new
//!   worktree, a fresh clone) begins one too. A chain's file is created with its first batch, so a
//!   process that never appends creates nothing.
//! - **Lazy records ride along.** Records nobody waits for (a turn's start) are held back at most
//!   [`LAZY_SYNC`] (20 ms) for the next record someone waits for or a `flush`, and go into its write
//!   and sync: a tool call costs one write and one sync per gate, not one per event. For `LINGER`
//!   (2 s) after a batch the writer thread looks at the queue every [`LAZY_SYNC`] instead of asking to
//!   be woken, so a lazy record in a burst costs its producer no wake-up (a futex wake of a thread on
//!   an idle core, ~7 µs on a VM); a record someone waits for always wakes it.
//! - **Deferred records are built per batch.** A record enqueued with [`Ledger::enqueue_deferred`]
//!   (the engine's: digest, serialisation, before and after images) is built just before its batch is
//!   written, so what builds read (a file's image) is read once per batch ([`batch_being_built`]): a
//!   call's after-image is the next call's before-image.
//! - **Bounded.** The queue holds at most `MAX_QUEUED` records (16,384): a producer that outruns the
//!   writer waits for room, except on the ledger's own threads, where a ticket's continuation may
//!   enqueue. After each durable batch the syncer calls [`Ledger::on_durable`] (the team copy's
//!   waker). The order write, `fdatasync`, acknowledgement is watched with strace by the CLI's
//!   `tests/cli.rs`.
//! - **The head follows the data.** After each sync the syncer raises the chain head in the state
//!   database (`head.rs`) to the last record that sync covered; the head only ever grows, and may lag
//!   the ledger (after a crash, or behind another process's newer head), never lead it, so a ledger
//!   shorter than its head was truncated.
//! - **Recovery of a torn tail.** A crash can cut a write short (SIGKILL stops a multi-page write
//!   between pages; a power cut can leave blocks unwritten). Whoever takes the lock next checks the
//!   end of the file: bytes after the last newline, and complete last lines that do not parse or do
//!   not chain to the line before them, are copied to a recovery file next to the ledger (synced,
//!   never overwritten), the ledger is truncated back to the last good line and synced, and the
//!   [`Recovery`] is reported, from [`Ledger::open`] or as a [`Notice`]. Nothing acknowledged can be
//!   in a torn tail, because acknowledgement waits for the sync of whole lines; so a line the head
//!   covers (its hash, or a seq it counts) is never moved: its being bad is tampering, for `verify`
//!   to name. A ledger that does not match its head is refused before anything is moved, and left
//!   as it was found. Pinned by `native/cli/tests/trace_git.rs` (a switch, stash and reset in the
//!   middle of recording with real git and real gates) and `tests/ledger.rs`
//!   (`a_chain_shorter_than_its_head_is_left_as_found_and_a_new_one_begun`).

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use sha2::{Digest, Sha256};

pub use super::error::LedgerError;
pub(crate) use super::error::io_error;
use super::head::HeadStore;
pub use super::record::Appended;
use super::record::{GENESIS, Record, RecordKind, chained_line};
use super::ticket::{self, Settle};
pub use super::ticket::{Reply, Ticket};
use crate::base::clock;
use crate::base::sidecar::Sidecar;
use crate::base::sqlite::StateDb;

/// At most this many records go into one write and one sync, so that a flood of enqueues still sees
/// its first records acknowledged after one bounded write.
const MAX_BATCH: usize = 4096;

/// At most this many records wait in the queue: a producer that finds it full waits until the writer
/// takes some (a producer on the ledger's own threads never waits; see [`ON_LEDGER_THREAD`]). Why:
/// a flood of judgments outruns the writer, which builds, hashes and writes each record (more work
/// than a judgment); unbounded, the queue of a benchmark's million calls grew past 2 GB.
const MAX_QUEUED: usize = 4 * MAX_BATCH;

thread_local! {
    /// Set on the writer and syncer threads: a ticket's continuation they run may enqueue a record,
    /// and waiting there for room only they can make would never end.
    static ON_LEDGER_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

thread_local! {
    /// The batch whose deferred records this thread is building (see [`batch_being_built`]); 0 when
    /// it builds none.
    static BUILDING: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Numbers the batches built, across every ledger of the process, from 1.
static BATCHES_BUILT: AtomicU64 = AtomicU64::new(0);

/// Which batch the record being built on this thread (by a build of [`Ledger::enqueue_deferred`])
/// belongs to: a number no other batch of this process has, or `None` outside a build. The records
/// of one batch are built at one moment (just before their one write), so what a build reads from
/// elsewhere (a file's image, say) may be read once for the batch and shared by its records.
pub fn batch_being_built() -> Option<u64> {
    Some(BUILDING.with(std::cell::Cell::get)).filter(|&batch| batch != 0)
}

/// How long records enqueued lazily may wait to be written for a record someone waits for (or a
/// `flush`), whose write and sync then cover them too.
pub const LAZY_SYNC: Duration = Duration::from_millis(20);

/// How long the writer thread keeps looking at the queue every [`LAZY_SYNC`] after a batch, so that
/// lazy records need not wake it (see the writer's loop).
const LINGER: Duration = Duration::from_secs(2);

/// The most of the file a backward search for a line's start reads at a time.
const TAIL_CHUNK: usize = 64 * 1024;

/// The first read back from the end when looking for a line's start.
const FIRST_TAIL_CHUNK: usize = 4 * 1024;

/// The end of the ledger that was moved aside because a crash had left it torn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovery {
    pub ledger: PathBuf,
    /// Where the ledger was cut: it now ends here, after its last good line.
    pub from_offset: u64,
    pub moved_bytes: u64,
    /// The recovery file holding exactly the bytes that were cut off.
    pub to: PathBuf,
    /// What was wrong with them, lower-case.
    pub reason: String,
}

impl fmt::Display for Recovery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the end of the ledger {} was torn ({}): {} bytes from offset {} were moved to {}",
            self.ledger.display(),
            self.reason,
            self.moved_bytes,
            self.from_offset,
            self.to.display()
        )
    }
}

/// Something the writer did or could not do that no single append is answerable for.
#[derive(Debug, Clone)]
pub enum Notice {
    /// Before a batch, the writer found the end of the ledger torn (another process crashed while
    /// appending) and moved it aside.
    Recovered(Recovery),
    /// A batch was written and synced (its appends succeeded) but the head could not be updated; it
    /// lags until the next batch updates it.
    HeadNotWritten(LedgerError),
    /// The current chain's file was not as its head said (why: [`LedgerError::HeadMismatch`],
    /// [`LedgerError::Corrupt`], or its file is gone), so the writer left it as found and the next
    /// batch begins a new chain.
    LeftChain { chain: String, cause: LedgerError },
}

impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Notice::Recovered(recovery) => recovery.fmt(f),
            Notice::HeadNotWritten(error) => write!(f, "the ledger's head lags: {error}"),
            Notice::LeftChain { chain, cause } => write!(
                f,
                "the ledger left its chain {chain} ({cause}); its head stays recorded and a new chain begins; \
                 `chokepoint trace verify` tells whether git explains it"
            ),
        }
    }
}

/// Counters of one [`Ledger`]'s writer since it was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Batches written and synced.
    pub batches: u64,
    /// Records written and synced.
    pub records: u64,
    /// The `seq` of the last record this writer synced (0 before the first); a record is acknowledged
    /// only once this has reached its `seq`.
    pub durable_seq: u64,
    /// Times the writer thread was woken (by an enqueue, a flush or closing): each a system call on the
    /// caller's thread.
    pub wakeups: u64,
}

struct Pending {
    /// Boxed, and absent until a deferred record is built: a queued record is moved several times
    /// (into the queue, whose growth copies every element, into a batch, through the build), so it
    /// stays a few words long instead of a whole record's.
    record: Option<Box<Record>>,
    /// The record's line without its chain fields, serialised by the producer ([`Record::take_body`]),
    /// or by the writer thread for a record enqueued with [`Ledger::enqueue_deferred`].
    body: String,
    /// How to build the record, for one the producer left to the writer thread; taken (and `record`
    /// and `body` filled in) before the batch is written.
    build: Option<Build>,
    reply: Settle,
    /// Enqueued with [`Ledger::enqueue_lazy`].
    lazy: bool,
}

/// What producers, the writer thread and the syncer thread share, under one mutex.
struct Queue {
    pending: Vec<Pending>,
    /// Tickets handed out, and tickets settled (written or failed); batches settle in queue order.
    enqueued: u64,
    settled: u64,
    /// The first failed batch no `flush` has reported yet: its first ticket number and the error.
    unreported: Option<(u64, LedgerError)>,
    notices: Vec<Notice>,
    /// `pending` holds a record someone waits for.
    urgent: bool,
    /// When the first record now in `pending` was queued: lazy ones wait at most [`LAZY_SYNC`] from
    /// then.
    first_queued_at: std::time::Instant,
    writer_waits: WriterWaits,
    flush_waiters: usize,
    /// Producers waiting for room in a full queue ([`MAX_QUEUED`]).
    room_waiters: usize,
    closing: bool,
    stopped: bool,
}

/// What would make the writer thread take the queue now.
#[derive(Clone, Copy, PartialEq, Eq)]
enum WriterWaits {
    /// Nothing: it is writing, and takes the whole queue when it comes back.
    Busy,
    /// Any record (the queue is empty).
    ForAny,
    /// A record someone waits for, a flush, or closing: the queue holds only lazy records, and their
    /// time is not up.
    ForUrgent,
}

struct Shared {
    /// The ledger's folder of chains, named in errors that concern no one chain.
    ledger: Arc<Path>,
    /// The chain the writer last wrote to or followed.
    chain: Mutex<Option<String>>,
    queue: Mutex<Queue>,
    /// The writer thread waits here for records; `flush` waits on `settled`; a producer facing a full
    /// queue on `room`.
    wake_writer: Condvar,
    settled: Condvar,
    room: Condvar,
    batches: AtomicU64,
    /// Batches handed to the syncer thread and not yet settled by it.
    staged: AtomicUsize,
    records: AtomicU64,
    durable_seq: AtomicU64,
    wakeups: AtomicU64,
    /// Set by the syncer when a sync fails; the writer then refuses further batches.
    sync_failed: Mutex<Option<LedgerError>>,
    /// Told after each batch's head is raised ([`Ledger::on_durable`]): the team copy's waker.
    on_durable: std::sync::OnceLock<Box<dyn Fn() + Send + Sync>>,
    /// Run after each batch is settled ([`Ledger::after_batch`]): the image store's puts.
    after_batch: std::sync::OnceLock<Box<dyn Fn() + Send + Sync>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // Nothing panics while holding this lock with the queue half-changed.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Wakes the writer thread, counted in [`Stats::wakeups`]: a system call on the caller's thread.
    fn wake_writer(&self) {
        self.wakeups.fetch_add(1, Ordering::Relaxed);
        self.wake_writer.notify_one();
    }
}

/// The trace ledger of one workspace, open for appending. One per process is enough (it is
/// `Send + Sync`; share it); several are safe (they serialise on the lock file as processes do).
pub struct Ledger {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl fmt::Debug for Ledger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ledger").field("path", &self.shared.ledger).finish_non_exhaustive()
    }
}

impl Ledger {
    /// Opens the ledger of `sidecar`, whose folder must exist. Under the lock, follows the worktree's
    /// current chain (if it has one): recovers a torn end (returned, `None` if the end was intact) and
    /// checks the chain against its head: a chain shorter than its head, or whose head record
    /// differs, is left for a new chain ([`Notice::LeftChain`]). Creates no chain file: the first
    /// batch does.
    pub fn open(sidecar: &Sidecar) -> Result<(Ledger, Option<Recovery>), LedgerError> {
        Ledger::open_sharing(sidecar, Arc::new(StateDb::new(sidecar.state_db())))
    }

    /// [`Ledger::open`] keeping the head on `state`, the connection the engine shares between its
    /// stores.
    pub(crate) fn open_sharing(sidecar: &Sidecar, state: Arc<StateDb>) -> Result<(Ledger, Option<Recovery>), LedgerError> {
        let lock_path = sidecar.trace_lock();
        let lock = crate::base::sidecar::owner_only(OpenOptions::new().read(true).write(true).create(true).truncate(false))
            .open(&lock_path)
            .map_err(io_error(&lock_path, "open the lock file"))?;
        let head = HeadStore::on(state, super::head::HeadCopy::for_sidecar(sidecar))?;
        let dir = sidecar.trace_dir();
        let mut writer = Writer {
            sidecar: sidecar.clone(),
            chain: None,
            identity: None,
            ledger: dir.clone(),
            lock_path,
            lock,
            file: None,
            end: 0,
            last_start: 0,
            last_seq: 0,
            last_hash: GENESIS.to_owned(),
            head,
            poisoned: None,
            buf: Vec::new(),
        };
        let mut notices = Vec::new();
        {
            let _locked = writer.lock()?;
            writer.catch_up(&mut notices)?;
        }
        // A torn end found on opening is the opener's to report; anything else waits as a notice.
        let recovery = notices.iter().position(|n| matches!(n, Notice::Recovered(_))).map(|at| match notices.remove(at) {
            Notice::Recovered(recovery) => recovery,
            _ => unreachable!("matched above"),
        });
        let shared = Arc::new(Shared {
            ledger: Arc::from(dir.as_path()),
            chain: Mutex::new(writer.chain.as_deref().map(str::to_owned)),
            queue: Mutex::new(Queue {
                pending: Vec::new(),
                enqueued: 0,
                settled: 0,
                unreported: None,
                notices,
                urgent: false,
                writer_waits: WriterWaits::Busy,
                first_queued_at: std::time::Instant::now(),
                flush_waiters: 0,
                room_waiters: 0,
                closing: false,
                stopped: false,
            }),
            wake_writer: Condvar::new(),
            settled: Condvar::new(),
            room: Condvar::new(),
            batches: AtomicU64::new(0),
            staged: AtomicUsize::new(0),
            records: AtomicU64::new(0),
            durable_seq: AtomicU64::new(0),
            wakeups: AtomicU64::new(0),
            sync_failed: Mutex::new(None),
            on_durable: std::sync::OnceLock::new(),
            after_batch: std::sync::OnceLock::new(),
        });
        // The head is read under the lock by the writer and written after each sync by the syncer,
        // each taking the connection for one statement.
        let syncer = Syncer { head: writer.head.clone(), ledger: dir.clone(), failed: None };
        let thread = std::thread::Builder::new()
            .name("chokepoint-ledger".into())
            .spawn({
                let shared = Arc::clone(&shared);
                move || run(&shared, writer, syncer)
            })
            .map_err(io_error(&dir, "start the writer thread of"))?;
        Ok((Ledger { shared, thread: Some(thread) }, recovery))
    }

    /// The ledger's folder of chains.
    pub fn path(&self) -> &Path {
        &self.shared.ledger
    }

    /// The chain this writer last wrote to or followed; `None` before its first batch when the
    /// worktree had no current chain.
    pub fn chain(&self) -> Option<String> {
        self.shared.chain.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Appends `record` and blocks until it is durable. The writer sets `v`, `seq`, `time` and `prev`.
    pub fn append(&self, record: Record) -> Result<Appended, LedgerError> {
        self.enqueue(record).wait()
    }

    /// Queues `record` without waiting; the ticket resolves once it is durable. For the engine's
    /// synchronous path: enqueue now, and `flush` (or wait on the ticket) where durability matters.
    pub fn enqueue(&self, record: Record) -> Ticket {
        self.enqueue_with(record, false)
    }

    /// Queues a record nobody waits for now: it waits (at most [`LAZY_SYNC`]) for a record someone
    /// does wait for, or a `flush`, and goes into the same write and sync, so that a gate's record is
    /// neither queued behind a sync of the records before it nor pays a write and a wake-up of the
    /// writer for each of them. Acknowledged, as always, only once synced.
    pub fn enqueue_lazy(&self, record: Record) -> Ticket {
        self.enqueue_with(record, true)
    }

    /// Queues a record that the writer thread builds (and serialises) just before it writes it, for a
    /// producer whose own thread is the one that matters: the engine's judge answers a gate without
    /// digesting the tool's input, serialising the record or reading a file's before-image, and the
    /// writer does that while it would otherwise wait. `build` runs before the record's ticket
    /// settles, so whatever it reads is read before anyone told of the record's durability acts; it
    /// must not block for long, since the batch waits for it. A `build` that panics fails its ticket
    /// (and only its own) with [`LedgerError::Unrecordable`].
    pub fn enqueue_deferred(&self, lazy: bool, build: impl FnOnce() -> Record + Send + 'static) -> Ticket {
        self.push(None, String::new(), Some(Box::new(build)), lazy)
    }

    fn enqueue_with(&self, mut record: Record, lazy: bool) -> Ticket {
        // On the producer's thread, before the queue's lock: the writer only splices and hashes.
        let body = record.take_body();
        self.push(Some(Box::new(record)), body, None, lazy)
    }

    fn push(&self, record: Option<Box<Record>>, body: String, build: Option<Build>, lazy: bool) -> Ticket {
        let (reply, ticket) = ticket::pair(Arc::clone(&self.shared.ledger));
        let mut queue = self.shared.lock();
        while queue.pending.len() >= MAX_QUEUED && !queue.stopped && !queue.closing && !ON_LEDGER_THREAD.with(std::cell::Cell::get) {
            // Full: the writer is behind. It takes the queue at once if it waits (for lazy records'
            // time to be up, say), and says when there is room.
            queue.room_waiters += 1;
            queue.urgent = true;
            if queue.writer_waits != WriterWaits::Busy {
                self.shared.wake_writer();
            }
            queue = self.shared.room.wait(queue).unwrap_or_else(PoisonError::into_inner);
            queue.room_waiters -= 1;
        }
        if queue.stopped || queue.closing {
            reply.send(Err(LedgerError::Closed { ledger: self.path().to_owned() }));
            return ticket;
        }
        if queue.pending.is_empty() {
            queue.first_queued_at = std::time::Instant::now();
        }
        queue.pending.push(Pending { record, body, build, reply, lazy });
        queue.enqueued += 1;
        queue.urgent |= !lazy;
        // A wake-up is a system call; skip it while the writer is busy, since it takes the whole queue
        // when it comes back, and while it holds lazy records back, unless this one is waited for.
        let wake = match queue.writer_waits {
            WriterWaits::Busy => false,
            WriterWaits::ForAny => true,
            WriterWaits::ForUrgent => !lazy,
        };
        drop(queue);
        if wake {
            self.shared.wake_writer();
        }
        ticket
    }

    /// Blocks until every record enqueued before this call is durable or failed. Returns the first
    /// failure among them that no earlier `flush` returned (each failure is returned once, also when
    /// its tickets were dropped unread).
    pub fn flush(&self) -> Result<(), LedgerError> {
        let mut queue = self.shared.lock();
        let target = queue.enqueued;
        // Nothing outstanding (a batch counts as settled once its head is raised too): no wake-up of
        // the writer thread, which is a system call here and a context switch there.
        if queue.settled < target {
            queue.flush_waiters += 1;
            // Records held back for a later gate are written now.
            if queue.writer_waits != WriterWaits::Busy {
                self.shared.wake_writer();
            }
            while queue.settled < target && !queue.stopped {
                queue = self.shared.settled.wait(queue).unwrap_or_else(PoisonError::into_inner);
            }
            queue.flush_waiters -= 1;
        }
        if queue.unreported.as_ref().is_some_and(|(first, _)| *first <= target) {
            return Err(queue.unreported.take().expect("checked").1);
        }
        if queue.settled < target {
            return Err(LedgerError::Closed { ledger: self.path().to_owned() });
        }
        Ok(())
    }

    /// Calls `waker` after each batch is durable and its head raised, on the ledger's syncer (after
    /// the batch's answers went): it must return at once, never wait (the team copy's sets a flag).
    /// The first waker given is kept.
    pub fn on_durable(&self, waker: impl Fn() + Send + Sync + 'static) {
        let _ = self.shared.on_durable.set(Box::new(waker));
    }

    /// Runs `work` after each batch is settled (its answers sent, its head raised, a flush waiting
    /// for it woken), on the ledger thread that settled it: work the batch's records left to do
    /// that no answer waits for (the engine wakes the image store's thread to store the texts of
    /// the writes they recorded, `ledger::images`), once per batch rather than per record. It delays
    /// only a batch whose records come while it runs, so it should return at once. The first `work`
    /// given is kept.
    pub fn after_batch(&self, work: impl Fn() + Send + Sync + 'static) {
        let _ = self.shared.after_batch.set(Box::new(work));
    }

    /// What happened since the last call that no append was answerable for (recoveries of another
    /// process's torn writes, a head that could not be written), oldest first.
    pub fn notices(&self) -> Vec<Notice> {
        std::mem::take(&mut self.shared.lock().notices)
    }

    pub fn stats(&self) -> Stats {
        Stats {
            batches: self.shared.batches.load(Ordering::Acquire),
            records: self.shared.records.load(Ordering::Acquire),
            durable_seq: self.shared.durable_seq.load(Ordering::Acquire),
            wakeups: self.shared.wakeups.load(Ordering::Relaxed),
        }
    }
}

impl Drop for Ledger {
    /// Writes what is still queued, then stops the writer thread.
    fn drop(&mut self) {
        self.shared.lock().closing = true;
        self.shared.wake_writer();
        self.shared.room.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The writer thread: takes the queue, writes it as one batch and settles it, or hands it to the syncer
/// thread while another is in flight, until closed; then waits for the syncer to settle what it was
/// handed.
fn run(shared: &Arc<Shared>, mut writer: Writer, syncer: Syncer) {
    ON_LEDGER_THREAD.with(|on| on.set(true));
    let syncer = Arc::new(Mutex::new(syncer));
    /// Marks the writer stopped and fails whatever is still queued, also if a bug makes the thread
    /// unwind: producers then get `Closed` instead of waiting forever.
    struct Stop<'a>(&'a Shared);
    impl Drop for Stop<'_> {
        fn drop(&mut self) {
            let mut queue = self.0.lock();
            queue.stopped = true;
            let ledger = self.0.ledger.to_path_buf();
            for pending in queue.pending.drain(..) {
                pending.reply.send(Err(LedgerError::Closed { ledger: ledger.clone() }));
            }
            drop(queue);
            self.0.settled.notify_all();
            self.0.room.notify_all();
        }
    }
    let _stop = Stop(shared);
    // Started at the first hand-off: a process that writes one batch at a time (a `chokepoint hook`
    // judging alone) settles each on this thread and never needs it.
    let mut syncing: Option<(mpsc::Sender<Stage>, JoinHandle<()>)> = None;
    let mut batch: Vec<Pending> = Vec::new();
    // No linger before the first batch: a process that never writes never looks.
    let mut last_batch: Option<std::time::Instant> = None;
    loop {
        {
            let mut queue = shared.lock();
            // Idle. For a while after a batch (a burst of tool calls, each with lazy records around
            // its gate), look at the queue every LAZY_SYNC instead of asking to be woken: a lazy
            // record then costs its producer no wake-up (a futex wake of a sleeping thread on an idle
            // core: ~7 µs on a VM, three per tool call of the agent runtime before this), and still
            // waits no longer than LAZY_SYNC. Past the linger, sleep until anything comes.
            while queue.pending.is_empty() && !queue.closing {
                if last_batch.is_some_and(|at| at.elapsed() < LINGER) {
                    queue.writer_waits = WriterWaits::ForUrgent;
                    queue = shared.wake_writer.wait_timeout(queue, LAZY_SYNC).unwrap_or_else(PoisonError::into_inner).0;
                } else {
                    queue.writer_waits = WriterWaits::ForAny;
                    queue = shared.wake_writer.wait(queue).unwrap_or_else(PoisonError::into_inner);
                }
            }
            // Only lazy records: hold them back until a record someone waits for joins them, a flush
            // waits for them, or LAZY_SYNC has passed since the first of them came.
            let deadline = queue.first_queued_at + LAZY_SYNC;
            while !queue.urgent && queue.flush_waiters == 0 && !queue.closing {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    break;
                }
                queue.writer_waits = WriterWaits::ForUrgent;
                queue = shared.wake_writer.wait_timeout(queue, left).unwrap_or_else(PoisonError::into_inner).0;
            }
            queue.writer_waits = WriterWaits::Busy;
            if queue.pending.is_empty() {
                break;
            }
            queue.urgent = false;
            if queue.pending.len() <= MAX_BATCH {
                std::mem::swap(&mut batch, &mut queue.pending);
            } else {
                batch.extend(queue.pending.drain(..MAX_BATCH));
                queue.urgent = queue.pending.iter().any(|pending| !pending.lazy);
            }
            if queue.room_waiters > 0 {
                shared.room.notify_all();
            }
        }
        last_batch = Some(std::time::Instant::now());
        build_deferred(&mut batch, shared);
        if batch.is_empty() {
            continue;
        }
        let mut notices = Vec::new();
        let outcome = writer.write(&mut batch, &mut notices, shared);
        let replies = batch.drain(..).map(|pending| pending.reply).collect();
        let stage = Stage { replies, notices, outcome };
        // Nothing in flight and nothing queued since: settle it here, which spares the record someone
        // waits for a hand-off to the syncer thread. Otherwise hand it on, so that the next batch is
        // written while this one syncs (only this thread sends, so `staged` cannot grow meanwhile).
        // The syncer thread starts at the first hand-off; without one, this thread settles every
        // batch itself, without the overlap.
        let idle = shared.staged.load(Ordering::Acquire) == 0 && shared.lock().pending.is_empty();
        if !idle && syncing.is_none() {
            let (to_syncer, written) = mpsc::channel::<Stage>();
            let started = std::thread::Builder::new().name("chokepoint-ledger-sync".into()).spawn({
                let shared = Arc::clone(shared);
                let syncer = Arc::clone(&syncer);
                move || Syncer::run(&syncer, &shared, &written)
            });
            syncing = started.ok().map(|thread| (to_syncer, thread));
        }
        match &syncing {
            Some((to_syncer, _)) if !idle => {
                shared.staged.fetch_add(1, Ordering::AcqRel);
                if to_syncer.send(stage).is_err() {
                    break;
                }
            }
            _ => syncer.lock().unwrap_or_else(PoisonError::into_inner).settle(shared, vec![stage]),
        }
    }
    if let Some((to_syncer, thread)) = syncing {
        drop(to_syncer);
        let _ = thread.join();
    }
}

/// How the writer thread builds a record a producer deferred ([`Ledger::enqueue_deferred`]).
type Build = Box<dyn FnOnce() -> Record + Send>;

/// Builds and serialises the deferred records of a batch, in queue order (a build may use what an
/// earlier one of the same producer left, such as a before-image). One that panics is failed on its
/// own ticket, counted as settled (so `flush` neither waits for it nor misses its failure) and left
/// out of the batch: the others are still written.
fn build_deferred(batch: &mut Vec<Pending>, shared: &Shared) {
    if batch.iter().all(|pending| pending.build.is_none()) {
        return;
    }
    let mut failed = Vec::new();
    let mut kept = Vec::with_capacity(batch.len());
    struct Building;
    impl Drop for Building {
        fn drop(&mut self) {
            BUILDING.with(|b| b.set(0));
        }
    }
    BUILDING.with(|b| b.set(BATCHES_BUILT.fetch_add(1, Ordering::Relaxed) + 1));
    let building = Building;
    for mut pending in batch.drain(..) {
        let Some(build) = pending.build.take() else {
            kept.push(pending);
            continue;
        };
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(build)) {
            Ok(mut record) => {
                pending.body = record.take_body();
                pending.record = Some(Box::new(record));
                kept.push(pending);
            }
            Err(panic) => {
                let detail = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic".to_owned());
                failed.push((pending.reply, LedgerError::Unrecordable { ledger: shared.ledger.to_path_buf(), detail }));
            }
        }
    }
    drop(building);
    *batch = kept;
    if failed.is_empty() {
        return;
    }
    let mut queue = shared.lock();
    if queue.unreported.is_none() {
        queue.unreported = Some((queue.settled + 1, failed[0].1.clone()));
    }
    queue.settled += failed.len() as u64;
    let wake = queue.flush_waiters > 0;
    drop(queue);
    if wake {
        shared.settled.notify_all();
    }
    for (reply, error) in failed {
        reply.send(Err(error));
    }
}

/// A batch on its way from the writer to the syncer: written (or failed), not yet acknowledged.
struct Stage {
    replies: Vec<Settle>,
    notices: Vec<Notice>,
    outcome: Result<Written, LedgerError>,
}

/// A batch in the file, not yet synced.
struct Written {
    appended: Vec<Appended>,
    /// The chain it was written to, and its file (the writer reopens the path when the file was
    /// replaced).
    chain: Arc<str>,
    file: Arc<File>,
    now_ms: u64,
}

/// The syncer's state, shared by the syncer thread and the writer thread (which settles a batch
/// itself when nothing else is in flight).
struct Syncer {
    head: HeadStore,
    ledger: PathBuf,
    /// The first sync that failed: everything after it fails too.
    failed: Option<LedgerError>,
}

impl Syncer {
    /// The syncer thread: takes every batch written since the last sync and settles them together.
    fn run(syncer: &Mutex<Syncer>, shared: &Shared, written: &Receiver<Stage>) {
        ON_LEDGER_THREAD.with(|on| on.set(true));
        while let Ok(first) = written.recv() {
            let stages: Vec<Stage> = std::iter::once(first).chain(written.try_iter()).collect();
            let count = stages.len();
            syncer.lock().unwrap_or_else(PoisonError::into_inner).settle(shared, stages);
            shared.staged.fetch_sub(count, Ordering::AcqRel);
        }
    }

    /// Covers `stages` with one sync, then settles them in order: the writer's notices first (what a
    /// producer can ask once its ticket resolves is already there when it does), then the tickets,
    /// then the head raised, then the queue's counters, which `flush` waits for: a flush returns with
    /// the head written, a ticket as soon as its record is durable.
    fn settle(&mut self, shared: &Shared, mut stages: Vec<Stage>) {
        // The last record synced, per chain written (more than one when the writer began a new chain
        // between these batches).
        let mut last: Vec<(Arc<str>, u64, String, u64)> = Vec::new();
        let mut synced: Vec<Arc<File>> = Vec::new();
        for stage in &stages {
            let Ok(batch) = &stage.outcome else { continue };
            if self.failed.is_none() && !synced.iter().any(|file| Arc::ptr_eq(file, &batch.file)) {
                if let Err(source) = batch.file.sync_data() {
                    let error = io_error(&self.ledger, "sync")(source);
                    *shared.sync_failed.lock().unwrap_or_else(PoisonError::into_inner) = Some(error.clone());
                    self.failed = Some(error);
                }
                synced.push(Arc::clone(&batch.file));
            }
            if let Some(appended) = batch.appended.last() {
                let latest = (Arc::clone(&batch.chain), appended.seq, appended.hash.clone(), batch.now_ms);
                match last.iter_mut().find(|(chain, ..)| *chain == batch.chain) {
                    Some(entry) => *entry = latest,
                    None => last.push(latest),
                }
            }
        }
        if let Some(error) = &self.failed {
            // Everything written and not yet acknowledged fails with the sync, also what a later
            // sync might have covered: Linux reports a lost write once, so no later sync vouches
            // for it.
            for stage in &mut stages {
                if stage.outcome.is_ok() {
                    stage.outcome = Err(error.clone());
                }
            }
        } else if let Some((_, seq, _, _)) = last.last() {
            let records: usize = stages.iter().filter_map(|s| s.outcome.as_ref().ok()).map(|b| b.appended.len()).sum();
            shared.durable_seq.store(*seq, Ordering::Release);
            shared.batches.fetch_add(1, Ordering::Release);
            shared.records.fetch_add(records as u64, Ordering::Release);
        }
        // What the writer noticed is there before any ticket resolves (a producer may ask for it then).
        {
            let mut queue = shared.lock();
            for stage in &mut stages {
                queue.notices.append(&mut stage.notices);
            }
        }
        // The answers next: an agent's gate waits for its record's sync, not for the head, which may
        // lag but never lead (head.rs). Writing the head is a write transaction in the state database,
        // about a sixth of a served hook's answer when it came first. A flush (below) waits for both.
        let mut counts = Vec::with_capacity(stages.len());
        for stage in &mut stages {
            let replies = std::mem::take(&mut stage.replies);
            counts.push(replies.len() as u64);
            match &mut stage.outcome {
                Ok(batch) => {
                    for (reply, appended) in replies.into_iter().zip(batch.appended.drain(..)) {
                        reply.send(Ok(appended));
                    }
                }
                Err(error) => {
                    for reply in replies {
                        reply.send(Err(error.clone()));
                    }
                }
            }
        }
        let mut head = None;
        if self.failed.is_none() {
            for (chain, seq, hash, now) in last {
                if let Err(error) = self.head.write(&chain, seq, &hash, now) {
                    head.get_or_insert(error);
                }
            }
        }
        if self.failed.is_none()
            && let Some(waker) = shared.on_durable.get()
        {
            waker();
        }
        let mut queue = shared.lock();
        if let Some(error) = head {
            queue.notices.push(Notice::HeadNotWritten(error));
        }
        for (stage, count) in stages.iter().zip(counts) {
            if let Err(error) = &stage.outcome
                && queue.unreported.is_none()
            {
                let first = queue.settled + 1;
                queue.unreported = Some((first, error.clone()));
            }
            queue.settled += count;
        }
        let wake = queue.flush_waiters > 0;
        drop(queue);
        if wake {
            shared.settled.notify_all();
        }
        // A panic there loses that work's own (the texts' diffs), never the ledger's thread.
        if let Some(work) = shared.after_batch.get() {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
        }
    }
}

/// The writer thread's own state: the files, and where the chain ends as this writer last saw it.
struct Writer {
    sidecar: Sidecar,
    /// The chain appended to, and its file; `None` (and the folder of chains as `ledger`) until the
    /// worktree has one: the next batch begins it.
    chain: Option<Arc<str>>,
    ledger: PathBuf,
    lock_path: PathBuf,
    lock: File,
    file: Option<Arc<File>>,
    /// Device and inode of the open ledger, to notice that the path now names another file.
    identity: Option<(u64, u64)>,
    /// The ledger's length after this writer's last write (or last read of its tail), and where its
    /// last line starts.
    end: u64,
    last_start: u64,
    last_seq: u64,
    last_hash: String,
    head: HeadStore,
    poisoned: Option<LedgerError>,
    buf: Vec<u8>,
}

impl Writer {
    fn lock(&self) -> Result<LockGuard, LedgerError> {
        lock_exclusive(&self.lock, &self.lock_path)
    }

    /// Writes `batch` as one batch under the lock, for the syncer to sync and acknowledge.
    fn write(&mut self, batch: &mut [Pending], notices: &mut Vec<Notice>, shared: &Shared) -> Result<Written, LedgerError> {
        if self.poisoned.is_none() {
            self.poisoned = shared.sync_failed.lock().unwrap_or_else(PoisonError::into_inner).clone();
        }
        if let Some(cause) = &self.poisoned {
            return Err(LedgerError::Poisoned { ledger: self.ledger.clone(), cause: Box::new(cause.clone()) });
        }
        let _locked = self.lock()?;
        self.catch_up(notices)?;
        let chain = match &self.chain {
            Some(chain) => Arc::clone(chain),
            None => self.begin_chain()?,
        };
        *shared.chain.lock().unwrap_or_else(PoisonError::into_inner) = Some(chain.to_string());
        let file = Arc::clone(self.file.as_ref().expect("a chain has its file"));
        let start = self.end;
        // One time for the batch: its records are made durable at the same moment.
        let now = clock::now_ms();
        let time = clock::format_utc(now);
        let mut seq = self.last_seq;
        let mut hash = self.last_hash.clone();
        self.buf.clear();
        let mut appended = Vec::with_capacity(batch.len());
        for pending in batch.iter_mut() {
            seq += 1;
            let line_start = self.buf.len();
            // The writer owns the chain's fields (`take_body` left them out, and the version in).
            chained_line(&mut self.buf, seq, &time, &hash, &pending.body);
            let line_hash = hash_line(&self.buf[line_start..]);
            self.buf.push(b'\n');
            // Every record of a written batch is built (`build_deferred` ran first).
            let mut record = pending.record.take().map_or_else(|| Record::new(RecordKind::External), |r| *r);
            record.seq = seq;
            record.time.clone_from(&time);
            record.prev = std::mem::replace(&mut hash, line_hash);
            appended.push(Appended { seq, hash: hash.clone(), offset: start + line_start as u64, record });
        }
        if let Err(source) = (&*file).write_all(&self.buf) {
            return Err(self.roll_back(start, "write", source));
        }
        self.end = start + self.buf.len() as u64;
        self.last_start = appended.last().map_or(self.last_start, |a| a.offset);
        self.last_seq = seq;
        self.last_hash = hash;
        Ok(Written { appended, chain, file, now_ms: now })
    }

    /// Under the lock: begins a new chain (its file created empty, its name made durable in the folder
    /// before any record of it is acknowledged) and names it the worktree's current one.
    fn begin_chain(&mut self) -> Result<Arc<str>, LedgerError> {
        // A lock file no longer at its path means the sidecar folder is being removed (git never
        // touches it: it is ignored), not that git took a chain away: nothing is made anew in a
        // folder on its way out, which would also keep it from going.
        let lock_here = std::fs::metadata(&self.lock_path).ok();
        if lock_here.is_none_or(|meta| identity_of(&meta) != identity(&self.lock)) {
            let gone = io::Error::new(io::ErrorKind::NotFound, "the ledger's lock file was removed with its folder");
            return Err(io_error(&self.lock_path, "find")(gone));
        }
        let dir = self.sidecar.trace_dir();
        if !dir.is_dir() {
            std::fs::create_dir(&dir).map_err(io_error(&dir, "create the folder"))?;
            let parent = dir.parent().unwrap_or(Path::new("."));
            sync_dir(parent).map_err(io_error(parent, "sync the folder"))?;
        }
        let now = clock::now_ms();
        let (name, path, file) = loop {
            let name = super::chains::new_name(now);
            let path = dir.join(format!("{name}.jsonl"));
            match crate::base::sidecar::owner_only(OpenOptions::new().read(true).append(true).create_new(true)).open(&path) {
                Ok(file) => break (name, path, file),
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(source) => return Err(io_error(&path, "create the chain")(source)),
            }
        };
        sync_dir(&dir).map_err(io_error(&dir, "sync the folder"))?;
        super::chains::write_current(&self.lock, &name).map_err(io_error(&self.lock_path, "name the current chain in"))?;
        let chain: Arc<str> = Arc::from(name.as_str());
        self.follow(Arc::clone(&chain), path, file);
        Ok(chain)
    }

    /// Takes `chain`, whose file is `file` at `path`, as the one appended to, from its start.
    fn follow(&mut self, chain: Arc<str>, path: PathBuf, file: File) {
        self.identity = identity(&file);
        self.file = Some(Arc::new(file));
        self.ledger = path;
        self.chain = Some(chain);
        self.end = 0;
        self.last_start = 0;
        self.last_seq = 0;
        self.last_hash = GENESIS.to_owned();
    }

    /// Leaves the current chain as found (its head stays), saying why; the next batch begins a new one.
    fn leave(&mut self, cause: LedgerError, notices: &mut Vec<Notice>) {
        if let Some(chain) = self.chain.take() {
            notices.push(Notice::LeftChain { chain: chain.to_string(), cause });
        }
        self.file = None;
        self.identity = None;
        self.ledger = self.sidecar.trace_dir();
    }

    /// Under the lock: takes the chain the lock file names, reading its tail (a torn end recovered,
    /// a file not as its head says left).
    fn join(&mut self, chain: String, notices: &mut Vec<Notice>) -> Result<(), LedgerError> {
        let path = super::chains::path_of(&self.sidecar, &chain);
        let file = match crate::base::sidecar::owner_only(OpenOptions::new().read(true).append(true)).open(&path) {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                // Named but gone (a branch switch while no process appended): nothing to continue.
                if let Some(head) = self.head.read(&chain)? {
                    let cause = LedgerError::HeadMismatch { ledger: path, head, found_count: 0, found_hash: GENESIS.to_owned() };
                    notices.push(Notice::LeftChain { chain, cause });
                }
                return Ok(());
            }
            Err(source) => return Err(io_error(&path, "open")(source)),
        };
        self.follow(Arc::from(chain.as_str()), path, file);
        self.reload(notices)
    }

    /// Reads the tail of the current chain again; a chain not as its head says is left.
    fn reload(&mut self, notices: &mut Vec<Notice>) -> Result<(), LedgerError> {
        match self.load_tail() {
            Ok(Some(recovery)) => notices.push(Notice::Recovered(recovery)),
            Ok(None) => {}
            Err(cause @ (LedgerError::HeadMismatch { .. } | LedgerError::Corrupt { .. })) => self.leave(cause, notices),
            Err(error) => return Err(error),
        }
        Ok(())
    }

    /// After a failed write: cuts the file back to where the batch began and syncs that, so no part of
    /// an unacknowledged batch stays to be chained onto. If even that fails, the file's state is
    /// unknown and the writer refuses further batches.
    fn roll_back(&mut self, start: u64, op: &'static str, source: io::Error) -> LedgerError {
        let failed = io_error(&self.ledger, op)(source);
        let file = self.file.as_ref().expect("a chain has its file");
        if file.set_len(start).and_then(|()| file.sync_all()).is_err() {
            self.poisoned = Some(failed.clone());
        }
        failed
    }

    /// Under the lock: follows the chain the lock file names if another process began it, then, if the
    /// chain's file is not as this writer left it (another process appended, or the file was replaced,
    /// removed, cut or rewritten), reads its tail again, recovering a torn end, or leaving a chain that
    /// is not as its head says. Unchanged means the same chain, the same file, the same length, and
    /// the last line still the one this writer last wrote or read (the lock file's few bytes and a
    /// few hundred of the chain's read per batch, against a sync's milliseconds).
    fn catch_up(&mut self, notices: &mut Vec<Notice>) -> Result<(), LedgerError> {
        let current = super::chains::read_current(&self.lock).map_err(io_error(&self.lock_path, "read the current chain from"))?;
        if current.as_deref() != self.chain.as_deref() {
            self.chain = None;
            self.file = None;
            self.identity = None;
            return match current {
                Some(chain) => self.join(chain, notices),
                None => Ok(()),
            };
        }
        if self.chain.is_none() {
            return Ok(());
        }
        let same_file = match std::fs::metadata(&self.ledger) {
            Ok(meta) => identity_of(&meta) == self.identity,
            // A chain's file that is gone (git switched to a branch without it, a stash took it, or it
            // was removed) is left, not made anew: making it would hide its removal from the next
            // reader and, while its folder is being removed, keep the folder from going.
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                let head = self.head.read(self.chain.as_deref().unwrap_or_default())?;
                let head = head.unwrap_or(super::record::Head { count: self.last_seq, hash: self.last_hash.clone(), updated_at_ms: 0 });
                let cause = LedgerError::HeadMismatch { ledger: self.ledger.clone(), head, found_count: 0, found_hash: GENESIS.to_owned() };
                self.leave(cause, notices);
                return Ok(());
            }
            Err(source) => return Err(io_error(&self.ledger, "inspect")(source)),
        };
        let file = self.file.as_ref().expect("a chain has its file");
        if !same_file {
            let file = crate::base::sidecar::owner_only(OpenOptions::new().read(true).append(true))
                .open(&self.ledger)
                .map_err(io_error(&self.ledger, "open"))?;
            self.identity = identity(&file);
            self.file = Some(Arc::new(file));
        } else if file.metadata().map_err(io_error(&self.ledger, "inspect"))?.len() == self.end && self.last_line_unchanged()? {
            return Ok(());
        }
        self.reload(notices)
    }

    fn last_line_unchanged(&self) -> Result<bool, LedgerError> {
        if self.end == 0 {
            return Ok(true);
        }
        let file = self.file.as_ref().expect("a chain has its file");
        let mut line = vec![0; usize::try_from(self.end - self.last_start).expect("a line fits in memory")];
        read_at(file, self.last_start, &mut line).map_err(io_error(&self.ledger, "read the end of"))?;
        Ok(line.pop() == Some(b'\n') && hash_line(&line) == self.last_hash)
    }

    /// Under the lock: finds where the chain ends, moving a torn end aside, and checks it against the
    /// head. Sets `end`, `last_start`, `last_seq` and `last_hash`.
    fn load_tail(&mut self) -> Result<Option<Recovery>, LedgerError> {
        let head = self.head.read(self.chain.as_deref().expect("a chain to load"))?;
        let file = Arc::clone(self.file.as_ref().expect("a chain has its file"));
        let len = file.metadata().map_err(io_error(&self.ledger, "inspect"))?.len();
        let read = |what| io_error(&self.ledger, what);
        let mut reasons = Vec::new();
        // Bytes after the last newline: a write cut short.
        let mut end = line_start(&file, len).map_err(read("read the end of"))?;
        if end < len {
            reasons.push(format!("{} bytes after the last newline", len - end));
        }
        // Complete lines at the end that are not records continuing the chain and that the head does
        // not cover: the rest of a batch that was never synced whole. A line the head covers (its
        // hash, or a seq it counts) was acknowledged, so its being bad is tampering, not a crash:
        // it stays, for `verify` to name.
        let last = loop {
            let Some(last) = line_before(&file, end).map_err(read("read the end of"))? else { break None };
            let hash = hash_line(&last.bytes);
            let record = std::str::from_utf8(&last.bytes)
                .map_err(|_| "not utf-8".to_owned())
                .and_then(|line| Record::from_line(line).map_err(String::from));
            let verdict = match &record {
                Ok(record) => {
                    let before = match last.start {
                        0 => None,
                        start => line_before(&file, start).map_err(read("read the end of"))?,
                    };
                    chains(record, before.as_ref())
                }
                Err(why) => Err(why.clone()),
            };
            let covered = || head.as_ref().is_some_and(|head| head.hash == hash || record.as_ref().is_ok_and(|r| r.seq <= head.count));
            match verdict {
                Err(why) if !covered() => {
                    reasons.push(format!("line at offset {}: {why}", last.start));
                    end = last.start;
                }
                _ => break Some((record.ok(), hash, last.start)),
            }
        };
        let (seq, hash, last_start) = match last {
            None => (0, GENESIS.to_owned(), 0),
            Some((Some(record), hash, start)) => (record.seq, hash, start),
            Some((None, _, start)) => {
                return Err(LedgerError::Corrupt {
                    ledger: self.ledger.clone(),
                    detail: format!("its last line (offset {start}), which its head vouches for, is not a record"),
                });
            }
        };
        // Checked before anything is moved: a ledger the writer refuses to continue is left as found.
        if let Some(head) = head
            && (seq < head.count || (seq == head.count && hash != head.hash))
        {
            return Err(LedgerError::HeadMismatch { ledger: self.ledger.clone(), head, found_count: seq, found_hash: hash });
        }
        let recovery = if end < len {
            reasons.reverse();
            Some(self.move_aside(end, len, reasons.join("; "))?)
        } else {
            None
        };
        self.end = end;
        self.last_start = last_start;
        self.last_seq = seq;
        self.last_hash = hash;
        Ok(recovery)
    }

    /// Copies bytes `from..to` of the ledger into a new recovery file, syncs it and its folder, then
    /// cuts the ledger at `from` and syncs it. In that order, so a crash in between leaves the bytes in
    /// both places rather than in neither.
    fn move_aside(&mut self, from: u64, to: u64, reason: String) -> Result<Recovery, LedgerError> {
        let mut bytes = vec![0; usize::try_from(to - from).expect("a torn end fits in memory")];
        let file = Arc::clone(self.file.as_ref().expect("a chain has its file"));
        read_at(&file, from, &mut bytes).map_err(io_error(&self.ledger, "read the torn end of"))?;
        let dir = self.ledger.parent().unwrap_or(Path::new("."));
        let stem = self.ledger.file_stem().unwrap_or_default().to_string_lossy().into_owned();
        let stamp = clock::now_ms();
        let mut attempt = 0u32;
        let (path, mut out) = loop {
            let name = match attempt {
                0 => format!("{stem}.recovered-{stamp}.jsonl"),
                n => format!("{stem}.recovered-{stamp}-{n}.jsonl"),
            };
            let path = dir.join(name);
            match crate::base::sidecar::owner_only(OpenOptions::new().write(true).create_new(true)).open(&path) {
                Ok(file) => break (path, file),
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => attempt += 1,
                Err(source) => return Err(io_error(&path, "create the recovery file")(source)),
            }
        };
        out.write_all(&bytes).and_then(|()| out.sync_all()).map_err(io_error(&path, "write the recovery file"))?;
        sync_dir(dir).map_err(io_error(dir, "sync the folder"))?;
        file.set_len(from).and_then(|()| file.sync_all()).map_err(io_error(&self.ledger, "cut the torn end off"))?;
        Ok(Recovery { ledger: self.ledger.clone(), from_offset: from, moved_bytes: to - from, to: path, reason })
    }
}

/// `record::line_hash` of a line's bytes, hex-encoded without a formatter call per byte (this runs
/// once per record appended).
fn hash_line(line: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(line);
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    out
}

/// A complete line of the file: where it starts, and its bytes without the newline.
struct Line {
    start: u64,
    bytes: Vec<u8>,
}

/// Whether `record`, read from the last line, continues the chain from the line `before` it (or from
/// the start of the file); `Err(why)` if not.
fn chains(record: &Record, before: Option<&Line>) -> Result<(), String> {
    let (expected_prev, expected_seq) = match before {
        None => (GENESIS.to_owned(), Some(1)),
        Some(before) => {
            // A predecessor that is not a record (tampering, for `verify`) still chains by its bytes.
            let seq = std::str::from_utf8(&before.bytes).ok().and_then(|text| Record::from_line(text).ok()).map(|r| r.seq + 1);
            (hash_line(&before.bytes), seq)
        }
    };
    if record.prev != expected_prev {
        return Err("does not chain to the line before it".into());
    }
    match expected_seq {
        Some(seq) if seq != record.seq => Err(format!("has seq {} after seq {}", record.seq, seq - 1)),
        _ => Ok(()),
    }
}

/// The position just after the last newline before `end` (0 if there is none): the start of the line
/// that ends at `end`.
fn line_start(file: &File, end: u64) -> io::Result<u64> {
    // A record is a few hundred bytes: the first read is small (a cold `chokepoint hook` opens the
    // tail three times), and each next one twice as large, up to [`TAIL_CHUNK`].
    let mut size = FIRST_TAIL_CHUNK;
    let mut chunk = Vec::new();
    let mut to = end;
    while to > 0 {
        let from = to.saturating_sub(size as u64);
        chunk.resize(usize::try_from(to - from).expect("a chunk"), 0);
        read_at(file, from, &mut chunk)?;
        if let Some(at) = chunk.iter().rposition(|&b| b == b'\n') {
            return Ok(from + at as u64 + 1);
        }
        to = from;
        size = (size * 2).min(TAIL_CHUNK);
    }
    Ok(0)
}

/// The complete line whose newline is the byte before `end` (`end` is 0 or follows a newline).
fn line_before(file: &File, end: u64) -> io::Result<Option<Line>> {
    if end == 0 {
        return Ok(None);
    }
    let start = line_start(file, end - 1)?;
    let mut bytes = vec![0; usize::try_from(end - 1 - start).expect("a line fits in memory")];
    read_at(file, start, &mut bytes)?;
    Ok(Some(Line { start, bytes }))
}

fn read_at(file: &File, at: u64, buf: &mut [u8]) -> io::Result<()> {
    // Reads move the descriptor's offset, which append-mode writes ignore.
    let mut file = file;
    file.seek(SeekFrom::Start(at))?;
    file.read_exact(buf)
}

#[cfg(unix)]
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    // The new recovery file's name is durable only once its folder is synced.
    File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
pub(crate) fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

#[cfg(unix)]
fn identity(file: &File) -> Option<(u64, u64)> {
    file.metadata().ok().as_ref().and_then(identity_of)
}

#[cfg(unix)]
fn identity_of(meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn identity(_file: &File) -> Option<(u64, u64)> {
    None
}

#[cfg(not(unix))]
fn identity_of(_meta: &std::fs::Metadata) -> Option<(u64, u64)> {
    None
}

#[cfg(unix)]
pub(crate) type LockGuard = nix::fcntl::Flock<std::os::fd::OwnedFd>;

/// Takes the exclusive lock on `lock` (released when the guard drops). The lock is taken on a
/// duplicate descriptor, which shares the open file description and so the lock, so that the guard
/// can own (and on drop unlock and close) it while the writer keeps the file.
#[cfg(unix)]
pub(crate) fn lock_exclusive(lock: &File, path: &Path) -> Result<LockGuard, LedgerError> {
    use nix::errno::Errno;
    use nix::fcntl::{Flock, FlockArg};
    let mut fd = std::os::fd::OwnedFd::from(lock.try_clone().map_err(io_error(path, "duplicate"))?);
    loop {
        match Flock::lock(fd, FlockArg::LockExclusive) {
            Ok(guard) => return Ok(guard),
            Err((again, Errno::EINTR)) => fd = again,
            Err((_, errno)) => return Err(io_error(path, "lock")(io::Error::from(errno))),
        }
    }
}

#[cfg(not(unix))]
pub(crate) struct LockGuard(File);

#[cfg(not(unix))]
impl Drop for LockGuard {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

#[cfg(not(unix))]
pub(crate) fn lock_exclusive(lock: &File, path: &Path) -> Result<LockGuard, LedgerError> {
    let file = lock.try_clone().map_err(io_error(path, "duplicate"))?;
    file.lock().map_err(io_error(path, "lock"))?;
    Ok(LockGuard(file))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sidecar() -> (tempfile::TempDir, Sidecar) {
        let dir = tempfile::tempdir().unwrap();
        let sidecar = Sidecar::new(dir.path());
        std::fs::create_dir(sidecar.dir()).unwrap();
        (dir, sidecar)
    }

    #[test]
    fn lines_hash_as_the_record_module_hashes_them() {
        for line in ["", "{\"v\":1}", "é"] {
            assert_eq!(hash_line(line.as_bytes()), super::super::record::line_hash(line));
        }
    }

    #[test]
    fn lazy_records_in_a_burst_and_a_flush_with_nothing_to_wait_for_wake_nobody() {
        let (_dir, sidecar) = sidecar();
        let (ledger, _) = Ledger::open(&sidecar).unwrap();
        ledger.append(Record::new(super::super::RecordKind::Lifecycle)).unwrap();
        // A burst: the writer wrote a batch a moment ago (and is back from it), so it looks at the
        // queue itself.
        ledger.flush().unwrap();
        std::thread::sleep(LAZY_SYNC / 4);
        let woken = ledger.stats().wakeups;
        let started = std::time::Instant::now();
        let lazy: Vec<Ticket> = (0..3).map(|_| ledger.enqueue_lazy(Record::new(super::super::RecordKind::Lifecycle))).collect();
        assert_eq!(ledger.stats().wakeups, woken, "a lazy record in a burst woke the writer");
        let seqs: Vec<u64> = lazy.into_iter().map(|t| t.wait().unwrap().seq).collect();
        assert_eq!(seqs, vec![2, 3, 4]);
        assert!(started.elapsed() < LAZY_SYNC * 20, "{:?}", started.elapsed());
        // A record someone waits for still wakes it at once (once it is back from the batch).
        ledger.flush().unwrap();
        std::thread::sleep(LAZY_SYNC / 4);
        let woken = ledger.stats().wakeups;
        ledger.append(Record::new(super::super::RecordKind::ToolCall)).unwrap();
        assert_eq!(ledger.stats().wakeups, woken + 1);
        // A flush with nothing outstanding wakes nobody either.
        ledger.flush().unwrap();
        std::thread::sleep(LAZY_SYNC / 4);
        let woken = ledger.stats().wakeups;
        ledger.flush().unwrap();
        assert_eq!(ledger.stats().wakeups, woken, "a flush with nothing to wait for woke the writer");
    }

    #[test]
    fn a_lazy_record_is_synced_with_the_next_urgent_one_or_on_its_own_soon_after() {
        let (_dir, sidecar) = sidecar();
        let (ledger, _) = Ledger::open(&sidecar).unwrap();
        ledger.append(Record::new(super::super::RecordKind::Lifecycle)).unwrap();
        let before = ledger.stats();
        let lazy: Vec<Ticket> = (0..3).map(|_| ledger.enqueue_lazy(Record::new(super::super::RecordKind::Lifecycle))).collect();
        // Held back for the urgent record, then written with it: one write, one sync.
        std::thread::sleep(LAZY_SYNC / 4);
        assert_eq!(ledger.stats().batches, before.batches, "the lazy records were synced on their own");
        let urgent = ledger.append(Record::new(super::super::RecordKind::ToolCall)).unwrap();
        let lazy: Vec<u64> = lazy.into_iter().map(|t| t.wait().unwrap().seq).collect();
        assert_eq!((lazy, urgent.seq), (vec![2, 3, 4], 5));
        assert_eq!(ledger.stats().batches - before.batches, 1, "one sync covered them all");
        // A flush does not wait for their time to be up.
        let held = ledger.enqueue_lazy(Record::new(super::super::RecordKind::Lifecycle));
        ledger.flush().unwrap();
        assert_eq!(ledger.stats().durable_seq, 6, "flush returned before the lazy record was durable");
        assert_eq!(held.wait().unwrap().seq, 6);
        // Alone, it does not wait forever: at most LAZY_SYNC, then its own sync.
        let started = std::time::Instant::now();
        let alone = ledger.enqueue_lazy(Record::new(super::super::RecordKind::Lifecycle)).wait().unwrap();
        assert_eq!(alone.seq, 7);
        assert!(started.elapsed() < LAZY_SYNC * 20, "{:?}", started.elapsed());
        assert!(ledger.stats().durable_seq >= 7);
    }

    #[test]
    fn work_after_a_batch_runs_once_it_is_durable_and_a_panic_there_spares_the_ledger() {
        let (_dir, sidecar) = sidecar();
        let (ledger, _) = Ledger::open(&sidecar).unwrap();
        let (ran, runs) = std::sync::mpsc::channel::<()>();
        let ran = Mutex::new(ran);
        ledger.after_batch(move || {
            let _ = ran.lock().unwrap().send(());
            panic!("the work after a batch broke");
        });
        ledger.append(Record::new(super::super::RecordKind::ToolCall)).unwrap();
        runs.recv_timeout(Duration::from_secs(10)).expect("the work ran after the batch");
        // Its panic cost the ledger nothing: the next batch is written, and the work runs again.
        let next = ledger.append(Record::new(super::super::RecordKind::ToolCall)).unwrap();
        assert_eq!(next.seq, 2);
        runs.recv_timeout(Duration::from_secs(10)).expect("the work ran after the next batch");
        ledger.flush().unwrap();
    }

    #[test]
    fn a_producer_that_outruns_the_writer_waits_for_room_and_nothing_is_lost() {
        let (_dir, sidecar) = sidecar();
        let (ledger, _) = Ledger::open(&sidecar).unwrap();
        let ledger = Arc::new(ledger);
        // The writer is held in the first record's build until released.
        let (release, held) = std::sync::mpsc::channel::<()>();
        let (building, started) = std::sync::mpsc::channel::<()>();
        let first = ledger.enqueue_deferred(false, move || {
            let _ = building.send(());
            let _ = held.recv();
            Record::new(super::super::RecordKind::ToolCall)
        });
        started.recv().unwrap();
        let total = MAX_QUEUED + 10;
        let done = Arc::new(AtomicUsize::new(0));
        let producer = std::thread::spawn({
            let (ledger, done) = (Arc::clone(&ledger), Arc::clone(&done));
            move || {
                let mut tickets = Vec::new();
                for _ in 0..total {
                    tickets.push(ledger.enqueue_lazy(Record::new(super::super::RecordKind::Lifecycle)));
                    done.fetch_add(1, Ordering::SeqCst);
                }
                tickets
            }
        });
        // The producer fills the queue and then waits: it never holds more than its bound.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while done.load(Ordering::SeqCst) < MAX_QUEUED && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(done.load(Ordering::SeqCst), MAX_QUEUED, "the producer stopped at the bound");
        assert!(ledger.shared.lock().pending.len() <= MAX_QUEUED);
        release.send(()).unwrap();
        let tickets = producer.join().unwrap();
        assert_eq!(first.wait().unwrap().seq, 1);
        assert_eq!(tickets.into_iter().map(|t| t.wait().unwrap().seq).last(), Some(total as u64 + 1), "every record written, in order");
    }

    #[test]
    fn a_deferred_record_is_built_in_queue_order_and_one_that_panics_fails_alone() {
        let (_dir, sidecar) = sidecar();
        let (ledger, _) = Ledger::open(&sidecar).unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let build = |n: u32| {
            let seen = Arc::clone(&seen);
            move || {
                seen.lock().unwrap().push(n);
                let mut record = Record::new(super::super::RecordKind::ToolCall);
                record.tool = Some(format!("tool {n}"));
                record
            }
        };
        let first = ledger.enqueue_deferred(true, build(1));
        let broken = ledger.enqueue_deferred(true, || -> Record { panic!("the builder broke") });
        let third = ledger.enqueue_deferred(false, build(3));
        assert_eq!(third.wait().unwrap().seq, 2, "the broken record takes no place in the chain");
        assert_eq!(first.wait().unwrap().record.tool.as_deref(), Some("tool 1"));
        match broken.wait() {
            Err(e @ LedgerError::Unrecordable { .. }) => assert!(e.to_string().contains("the builder broke"), "{e}"),
            other => panic!("expected Unrecordable, got {other:?}"),
        }
        assert_eq!(*seen.lock().unwrap(), [1, 3]);
        // A flush neither waits for it forever nor misses it.
        let flushed = ledger.flush();
        assert!(matches!(flushed, Err(LedgerError::Unrecordable { .. })), "{flushed:?}");
        ledger.flush().unwrap();
        assert_eq!(super::super::chains::all_lines(&sidecar).len(), 2);
    }

    #[test]
    fn appends_chain_from_genesis_and_set_the_head() {
        let (_dir, sidecar) = sidecar();
        let (ledger, recovery) = Ledger::open(&sidecar).unwrap();
        assert!(recovery.is_none());
        let first = ledger.append(Record::new(super::super::RecordKind::Lifecycle)).unwrap();
        let second = ledger.append(Record::new(super::super::RecordKind::ToolCall)).unwrap();
        assert_eq!((first.seq, first.offset, first.record.prev.as_str()), (1, 0, GENESIS));
        assert_eq!((second.seq, second.record.prev.as_str()), (2, first.hash.as_str()));
        let chain = super::super::chains::current(&sidecar).unwrap();
        assert_eq!(Some(chain.chain.clone()), ledger.chain());
        let text = std::fs::read_to_string(&chain.path).unwrap();
        assert_eq!(text, format!("{}\n{}\n", first.record.to_line(), second.record.to_line()));
        assert_eq!(second.offset as usize, text.find('\n').unwrap() + 1);
        // An append is answered once its record is durable; the head follows, and a flush waits for it.
        ledger.flush().unwrap();
        let head = super::super::head::read(&sidecar.state_db(), &chain.chain).unwrap().unwrap();
        assert_eq!((head.count, head.hash), (2, second.hash));
    }

    /// The lock every process of a worktree appends under: `flock` on Unix, std's `File::lock` on
    /// Windows (`LockFileEx`, exclusive). Two handles of the file opened apart contend as two
    /// processes do: the second waits until the first's guard drops.
    #[test]
    fn the_ledger_lock_held_on_one_handle_makes_another_wait_until_it_is_released() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.lock");
        let open = || std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).unwrap();
        let (first, second) = (open(), open());
        let held = lock_exclusive(&first, &path).unwrap();
        assert!(matches!(second.try_lock(), Err(std::fs::TryLockError::WouldBlock)), "a second handle took the held lock");
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let guard = lock_exclusive(&second, &path).unwrap();
            tx.send(()).unwrap();
            drop(guard);
        });
        assert!(rx.recv_timeout(Duration::from_millis(300)).is_err(), "the second handle did not wait for the lock");
        drop(held);
        rx.recv_timeout(Duration::from_secs(10)).expect("the second handle has the lock once the first released it");
        waiter.join().unwrap();
    }
}
