//! Snapshots of a workspace, what changed between two of them, and undoing chosen changes.
//!
//! A snapshot walks the workspace without following symlinks and records, per entry, its kind (file,
//! directory, symlink with its target, other), length, mtime, ctime, inode and mode, and for files the
//! SHA-256 of the content. The hash is recomputed only when (len, mtime, ctime, inode) differ from
//! the previous snapshot's, so snapshotting an unchanged workspace costs one `stat` per entry. ctime
//! is in the key because nothing can set it back: a write that restores the mtime still moves it.
//!
//! A content-addressed store (a directory, in practice `.orchestration/snapshots/`) keeps the bytes
//! of every file the snapshot holds, so that a revert can put them back. A file is copied in only
//! when its hash is not there yet; the copy is hashed again before it takes its name, so an object's
//! name is always the hash of its bytes. Files over a size bound are hashed but not held, and files
//! of other kinds (fifos, sockets, devices) cannot be held at all: each is reported, never silently
//! unprotected.
//!
//! Changes are judged elsewhere (containment.rs); here a revert undoes exactly the changes it is
//! given, each with its outcome. Restoring writes a temporary file next to the target and renames it
//! over, so a reader never sees half a file, and never writes through a directory that has become a
//! symlink since the snapshot (that could write outside the workspace).

use sha2::{Digest, Sha256};
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};

/// SHA-256 of a file's content.
pub type Hash = [u8; 32];

/// Threads listing directories in parallel, at most.
const MAX_THREADS: usize = 4;

/// A directory to list: its path, its relative name, and (for the root only) its open listing.
/// Directories are opened when their turn comes, not when found: a directory with thousands of
/// subdirectories must not hold thousands of descriptors open.
type Job = (PathBuf, String, Option<fs::ReadDir>);

/// What one walker found: entries, and directories it could not list (with why).
#[derive(Default)]
struct Walked {
    entries: Vec<(String, Entry)>,
    unlisted: Vec<(String, String)>,
}

struct QueueState {
    jobs: Vec<Job>,
    /// Directories being listed: until they are done, more jobs may come.
    busy: usize,
    failed: Option<io::Error>,
}

struct Queue {
    state: Mutex<QueueState>,
    wake: Condvar,
}

/// How far the file system's coarse clock may lag the system clock (a few ticks at the lowest HZ).
const TICK_MARGIN_NS: i64 = 100_000_000;

/// Files at most this large are read whole into memory to be hashed and held; larger ones stream.
const READ_WHOLE: u64 = 1024 * 1024;

/// What kind of thing a path is, as `lstat` sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
    Symlink {
        target: PathBuf,
    },
    /// A fifo, socket or device: recorded, never held.
    Other {
        what: &'static str,
    },
}

impl EntryKind {
    pub fn name(&self) -> &'static str {
        match self {
            EntryKind::File => "file",
            EntryKind::Dir => "directory",
            EntryKind::Symlink { .. } => "symbolic link",
            EntryKind::Other { what } => what,
        }
    }
}

/// Why an entry cannot be restored if a command changes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotHeldReason {
    TooLarge { len: u64, max: u64 },
    Special { what: &'static str },
    Unreadable { error: String },
    NameNotUtf8,
}

impl std::fmt::Display for NotHeldReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotHeldReason::TooLarge { len, max } => write!(f, "the file is {len} bytes, over the {max}-byte bound of what is held"),
            NotHeldReason::Special { what } => write!(f, "a {what} cannot be held"),
            NotHeldReason::Unreadable { error } => write!(f, "it cannot be read: {error}"),
            NotHeldReason::NameNotUtf8 => write!(f, "its name is not valid UTF-8"),
        }
    }
}

/// One path of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub kind: EntryKind,
    pub len: u64,
    /// Nanoseconds since the epoch.
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub inode: u64,
    /// Permission bits (`0o7777`).
    pub mode: u32,
    /// The content's hash, for files that could be read.
    pub hash: Option<Hash>,
    /// Why this entry could not be restored, if it could not.
    pub not_held: Option<NotHeldReason>,
}

impl Entry {
    /// What decides whether a file's hash must be recomputed.
    fn stamp(&self) -> (u64, i64, i64, u64) {
        (self.len, self.mtime_ns, self.ctime_ns, self.inode)
    }
}

/// The state of a workspace at one moment: entries by relative, `/`-separated path, sorted by path
/// (a sorted vector: built once, then only searched and merged).
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    root: PathBuf,
    entries: Vec<(String, Entry)>,
    /// Entries whose mtime or ctime is at or after this (ns since the epoch) may have been written
    /// again within the same clock tick after they were read: their hash is never reused.
    racy_from_ns: i64,
}

impl Snapshot {
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn get(&self, path: &str) -> Option<&Entry> {
        self.entries.binary_search_by(|(p, _)| p.as_str().cmp(path)).ok().map(|i| &self.entries[i].1)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every entry, in path order.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &Entry)> {
        self.entries.iter().map(|(p, e)| (p.as_str(), e))
    }

    /// The entries that could not be restored if they were changed, and why.
    pub fn not_held(&self) -> Vec<NotHeld> {
        self.entries.iter().filter_map(|(p, e)| e.not_held.clone().map(|reason| NotHeld { path: p.clone(), reason })).collect()
    }
}

/// A path a snapshot could not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotHeld {
    pub path: String,
    pub reason: NotHeldReason,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ChangeKind {
    Created,
    /// Content, permissions or a symlink's target changed.
    Modified,
    Deleted,
    /// Now a different kind of entry (a file became a directory or a symlink, ...).
    TypeChanged,
}

crate::base::names::names!(ChangeKind {
    Self::Created => "created",
    Self::Modified => "modified",
    Self::Deleted => "deleted",
    Self::TypeChanged => "type_changed",
});

impl ChangeKind {
    /// The kind as a sentence says it (`type changed`), where `as_str` is its name on the wire.
    pub fn phrase(self) -> &'static str {
        match self {
            ChangeKind::TypeChanged => "type changed",
            other => other.as_str(),
        }
    }
}

/// One path that differs between two snapshots.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Change {
    pub path: String,
    pub kind: ChangeKind,
}

/// What undoing one change came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reverted {
    pub change: Change,
    /// `Err` says why the change could not be undone.
    pub outcome: Result<(), String>,
}

/// Every path that differs from `before` to `after`, in path order (a directory before what is in it).
pub fn changes(before: &Snapshot, after: &Snapshot) -> Vec<Change> {
    let mut out = Vec::new();
    let mut a = before.entries.iter().map(|(p, e)| (p, e)).peekable();
    let mut b = after.entries.iter().map(|(p, e)| (p, e)).peekable();
    loop {
        let kind_path = match (a.peek(), b.peek()) {
            (None, None) => break,
            (Some((pa, _)), None) => (ChangeKind::Deleted, (*pa).clone(), true, false),
            (None, Some((pb, _))) => (ChangeKind::Created, (*pb).clone(), false, true),
            (Some((pa, ea)), Some((pb, eb))) => match pa.cmp(pb) {
                std::cmp::Ordering::Less => (ChangeKind::Deleted, (*pa).clone(), true, false),
                std::cmp::Ordering::Greater => (ChangeKind::Created, (*pb).clone(), false, true),
                std::cmp::Ordering::Equal => {
                    let path = (*pa).clone();
                    let kind = difference(ea, eb);
                    a.next();
                    b.next();
                    if let Some(kind) = kind {
                        out.push(Change { path, kind });
                    }
                    continue;
                }
            },
        };
        let (kind, path, step_a, step_b) = kind_path;
        if step_a {
            a.next();
        }
        if step_b {
            b.next();
        }
        out.push(Change { path, kind });
    }
    out
}

pub(crate) fn difference(a: &Entry, b: &Entry) -> Option<ChangeKind> {
    let modified = match (&a.kind, &b.kind) {
        (EntryKind::File, EntryKind::File) => {
            a.mode != b.mode
                || match (a.hash, b.hash) {
                    (Some(x), Some(y)) => x != y,
                    // Unreadable on one side: only the metadata can tell.
                    _ => a.stamp() != b.stamp(),
                }
        }
        // A directory's mtime moves with its content, which is judged entry by entry.
        (EntryKind::Dir, EntryKind::Dir) => a.mode != b.mode,
        (EntryKind::Symlink { target: x }, EntryKind::Symlink { target: y }) => x != y,
        (EntryKind::Other { what: x }, EntryKind::Other { what: y }) if x == y => a.inode != b.inode || a.mode != b.mode,
        _ => return Some(ChangeKind::TypeChanged),
    };
    modified.then_some(ChangeKind::Modified)
}

/// Takes snapshots of one workspace into one store, and reverts changes from them.
#[derive(Debug, Clone)]
pub struct Snapshotter {
    root: PathBuf,
    store: PathBuf,
    excluded: Vec<String>,
    max_held_bytes: u64,
}

impl Snapshotter {
    /// `root` is the workspace; `store` the content-addressed store (created if missing; excluded from
    /// snapshots when it lies inside the workspace). `excluded` are relative paths left out of every
    /// snapshot: an entry is a path and everything beneath it, or, ending with `*`, every path that
    /// starts with what precedes the `*` (`.orchestration/state.db*`). Files over `max_held_bytes`
    /// are hashed but not held.
    pub fn new(root: &Path, store: &Path, excluded: &[String], max_held_bytes: u64) -> io::Result<Snapshotter> {
        let root = fs::canonicalize(root)?;
        fs::create_dir_all(store)?;
        let store = fs::canonicalize(store)?;
        let mut excluded: Vec<String> = excluded.iter().map(|e| e.trim_matches('/').to_owned()).filter(|e| !e.is_empty()).collect();
        let store_inside = store.strip_prefix(&root).ok().and_then(Path::to_str).filter(|r| !r.is_empty());
        excluded.extend(store_inside.map(|rel| rel.replace(std::path::MAIN_SEPARATOR, "/")));
        Ok(Snapshotter { root, store, excluded, max_held_bytes })
    }

    /// The workspace root, canonical.
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn store(&self) -> &Path {
        &self.store
    }

    /// Whether `rel` is left out of snapshots.
    pub fn is_excluded(&self, rel: &str) -> bool {
        self.excluded.iter().any(|e| match e.strip_suffix('*') {
            Some(prefix) => rel.starts_with(prefix),
            None => rel == e || (rel.starts_with(e.as_str()) && rel.as_bytes().get(e.len()) == Some(&b'/')),
        })
    }

    /// Snapshots the workspace now. Hashes of files whose (len, mtime, ctime, inode) are those of
    /// `previous` are taken from it. `Err` only when the root cannot be listed or the store cannot be
    /// written; what cannot be read inside is recorded as not held.
    pub fn take(&self, previous: Option<&Snapshot>) -> io::Result<Snapshot> {
        let previous = previous.filter(|p| p.root == self.root);
        let racy_from_ns = self.clock_now();
        let listing = fs::read_dir(&self.root)?;
        // Listing and stat-ing dominate (one system call per entry), so directories are shared out
        // to a few threads; each collects its own entries, sorted together at the end.
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_THREADS);
        let queue = Queue {
            state: Mutex::new(QueueState { jobs: vec![(self.root.clone(), String::new(), Some(listing))], busy: 0, failed: None }),
            wake: Condvar::new(),
        };
        let parts: Vec<Walked> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads).map(|_| scope.spawn(|| self.work(&queue))).collect();
            workers.into_iter().map(|w| w.join().unwrap_or_default()).collect()
        });
        if let Some(e) = queue.state.into_inner().unwrap_or_else(|p| p.into_inner()).failed {
            return Err(e);
        }
        let mut entries: Vec<(String, Entry)> = Vec::with_capacity(parts.iter().map(|p| p.entries.len()).sum());
        let mut unlisted = Vec::new();
        for part in parts {
            entries.extend(part.entries);
            unlisted.extend(part.unlisted);
        }
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        for (rel, error) in unlisted {
            // What is inside is not seen, so not protected: say so.
            if let Ok(i) = entries.binary_search_by(|(p, _)| p.as_str().cmp(&rel)) {
                entries[i].1.not_held = Some(NotHeldReason::Unreadable { error });
            }
        }
        self.settle_hashes(&mut entries, previous, threads)?;
        Ok(Snapshot { root: self.root.clone(), entries, racy_from_ns })
    }

    /// Gives every file still without a hash (and without a reason it has none) the hash of the
    /// previous snapshot when its (len, mtime, ctime, inode) are unchanged, else hashes it now. Both
    /// lists are sorted, so the previous entries are found by one merge, not a search per file.
    fn settle_hashes(&self, entries: &mut [(String, Entry)], previous: Option<&Snapshot>, threads: usize) -> io::Result<()> {
        let mut fresh: Vec<&mut (String, Entry)> = Vec::new();
        let mut old = previous.map(|p| p.entries.as_slice()).unwrap_or_default().iter().peekable();
        for item in entries.iter_mut() {
            let (rel, entry) = &mut *item;
            if !(entry.kind == EntryKind::File && entry.hash.is_none() && entry.not_held.is_none()) {
                continue;
            }
            while old.next_if(|(p, _)| p.as_str() < rel.as_str()).is_some() {}
            let racy_from = previous.map_or(i64::MIN, |p| p.racy_from_ns);
            let known = old
                .peek()
                .filter(|(p, e)| {
                    STAMP_SEES_EVERY_WRITE
                        && p == rel
                        && e.kind == EntryKind::File
                        && e.stamp() == entry.stamp()
                        && e.mtime_ns.max(e.ctime_ns) < racy_from
                })
                .map(|(_, e)| e);
            match known {
                // A held file stays held: the store only ever grows.
                Some(p) if p.hash.is_some() && (p.not_held.is_none() || self.max_held_bytes < entry.len) => {
                    entry.hash = p.hash;
                    entry.not_held = p.not_held.clone();
                }
                _ => fresh.push(item),
            }
        }
        if fresh.is_empty() {
            return Ok(());
        }
        // Reading is what costs here (the first snapshot of a workspace reads everything).
        let chunk = fresh.len().div_ceil(threads.max(1));
        std::thread::scope(|scope| {
            let workers: Vec<_> = fresh
                .chunks_mut(chunk)
                .map(|part| {
                    scope.spawn(move || {
                        let mut buf = Vec::new();
                        for item in part.iter_mut() {
                            let (rel, entry) = &mut **item;
                            self.hash_and_hold(&self.root.join(rel.as_str()), entry, &mut buf)?;
                        }
                        Ok::<(), io::Error>(())
                    })
                })
                .collect();
            workers.into_iter().try_for_each(|w| w.join().unwrap_or_else(|_| Err(io::Error::other("a hashing thread panicked"))))
        })
    }

    /// One walker: takes directories off the queue until none is left and none is being listed.
    fn work(&self, queue: &Queue) -> Walked {
        let mut walked = Walked::default();
        let mut buf = Vec::new();
        let mut found = Vec::new();
        loop {
            let (dir, prefix, listing) = {
                let mut state = queue.state.lock().unwrap_or_else(|p| p.into_inner());
                loop {
                    if state.failed.is_some() {
                        queue.wake.notify_all();
                        return walked;
                    }
                    if let Some(job) = state.jobs.pop() {
                        state.busy += 1;
                        break job;
                    }
                    if state.busy == 0 {
                        queue.wake.notify_all();
                        return walked;
                    }
                    state = queue.wake.wait(state).unwrap_or_else(|p| p.into_inner());
                }
            };
            let result = match listing.map_or_else(|| fs::read_dir(&dir), Ok) {
                Ok(listing) => self.list(listing, &dir, &prefix, &mut walked.entries, &mut found, &mut buf),
                Err(e) => {
                    walked.unlisted.push((prefix, e.to_string()));
                    Ok(())
                }
            };
            let mut state = queue.state.lock().unwrap_or_else(|p| p.into_inner());
            state.busy -= 1;
            match result {
                Ok(()) => state.jobs.append(&mut found),
                Err(e) => {
                    state.failed.get_or_insert(e);
                }
            }
            queue.wake.notify_all();
        }
    }

    /// Records the entries of one directory into `out`; its subdirectories go to `found`.
    fn list(
        &self,
        listing: fs::ReadDir,
        dir: &Path,
        prefix: &str,
        out: &mut Vec<(String, Entry)>,
        found: &mut Vec<Job>,
        buf: &mut Vec<u8>,
    ) -> io::Result<()> {
        for item in listing {
            // An entry that vanished while we listed is simply not there.
            let Ok(item) = item else { continue };
            let name = item.file_name();
            let (name, lossy) = match name.to_str() {
                Some(n) => (std::borrow::Cow::Borrowed(n), false),
                None => (name.to_string_lossy(), true),
            };
            let mut rel = String::with_capacity(prefix.len() + 1 + name.len());
            if !prefix.is_empty() {
                rel.push_str(prefix);
                rel.push('/');
            }
            rel.push_str(&name);
            if self.is_excluded(&rel) {
                continue;
            }
            let Ok(meta) = item.metadata() else { continue };
            let mut entry = stat(&meta);
            let ft = meta.file_type();
            if ft.is_dir() {
                found.push((dir.join(item.file_name()), rel.clone(), None));
            } else if ft.is_symlink() {
                match fs::read_link(item.path()) {
                    Ok(target) => entry.kind = EntryKind::Symlink { target },
                    Err(e) => {
                        entry.kind = EntryKind::Symlink { target: PathBuf::new() };
                        entry.not_held = Some(NotHeldReason::Unreadable { error: e.to_string() });
                    }
                }
            } else if ft.is_file() {
                entry.kind = EntryKind::File;
                // Hashes are settled after the walk (settle_hashes), by the relative path; a name
                // that is not UTF-8 has no faithful relative path, so it is hashed here.
                if lossy {
                    self.hash_and_hold(&item.path(), &mut entry, buf)?;
                }
            } else {
                entry.kind = EntryKind::Other { what: other_kind(&ft) };
                entry.not_held = Some(NotHeldReason::Special { what: other_kind(&ft) });
            }
            if lossy && entry.not_held.is_none() {
                entry.not_held = Some(NotHeldReason::NameNotUtf8);
            }
            out.push((rel, entry));
        }
        Ok(())
    }

    /// The file system's idea of now, minus a margin: what a file written from now on may carry as
    /// its mtime or ctime. File times are coarse (a clock tick; seconds on some file systems), so a
    /// write right after a file was read can leave its (len, mtime, ctime, inode) unchanged: like
    /// git's racily clean index entries, entries stamped at or after this are hashed again next time.
    /// Measured on a marker file in the store (the file system's own clock and granularity), and
    /// never later than the system clock minus [`TICK_MARGIN_NS`].
    fn clock_now(&self) -> i64 {
        let system = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
            .saturating_sub(TICK_MARGIN_NS);
        let marker = self.store.join(".clock");
        match fs::write(&marker, b"t").and_then(|()| fs::metadata(&marker)) {
            Ok(meta) => system.min(stat(&meta).mtime_ns),
            Err(_) => system,
        }
    }

    /// Hashes a file and, unless it is too large, makes sure the store holds its content.
    fn hash_and_hold(&self, path: &Path, entry: &mut Entry, buf: &mut Vec<u8>) -> io::Result<()> {
        let unreadable = |e: io::Error| NotHeldReason::Unreadable { error: e.to_string() };
        if entry.len <= READ_WHOLE && entry.len <= self.max_held_bytes {
            buf.clear();
            let bound = entry.len.max(READ_WHOLE.min(self.max_held_bytes));
            match open_regular(path).and_then(|f| f.take(bound + 1).read_to_end(buf)) {
                Err(e) => {
                    entry.not_held = Some(unreadable(e));
                    return Ok(());
                }
                // It grew past the bound since it was stat-ed: the streaming path below copes.
                Ok(n) if n as u64 > bound => {}
                Ok(_) => {
                    let hash: Hash = Sha256::digest(&buf[..]).into();
                    entry.hash = Some(hash);
                    if !self.object(&hash).exists() {
                        self.put_bytes(&hash, buf)?;
                    }
                    return Ok(());
                }
            }
        }
        let hash = match hash_file(path, buf) {
            Ok(h) => h,
            Err(e) => {
                entry.not_held = Some(unreadable(e));
                return Ok(());
            }
        };
        entry.hash = Some(hash);
        if entry.len > self.max_held_bytes {
            entry.not_held = Some(NotHeldReason::TooLarge { len: entry.len, max: self.max_held_bytes });
        } else if !self.object(&hash).exists() {
            // io::copy between files uses copy_file_range: a reflink on copy-on-write file systems.
            let tmp = self.temp_in_store();
            let copied = open_regular(path).and_then(|mut from| io::copy(&mut from, &mut fs::File::create(&tmp)?));
            if let Err(e) = copied {
                let _ = fs::remove_file(&tmp);
                entry.not_held = Some(unreadable(e));
                return Ok(());
            }
            // The file may have changed since it was hashed: the copy is what we hold, so its own
            // hash names it and is the entry's.
            let held = hash_file(&tmp, buf)?;
            self.settle(&tmp, &held)?;
            entry.hash = Some(held);
        }
        Ok(())
    }

    fn put_bytes(&self, hash: &Hash, bytes: &[u8]) -> io::Result<()> {
        let tmp = self.temp_in_store();
        let written = fs::File::create(&tmp).and_then(|mut f| f.write_all(bytes));
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
        self.settle(&tmp, hash)
    }

    /// Gives a temporary file of the store its content name.
    fn settle(&self, tmp: &Path, hash: &Hash) -> io::Result<()> {
        let object = self.object(hash);
        if let Some(dir) = object.parent() {
            fs::create_dir_all(dir)?;
        }
        let renamed = fs::rename(tmp, &object);
        if renamed.is_err() {
            let _ = fs::remove_file(tmp);
        }
        renamed
    }

    fn object(&self, hash: &Hash) -> PathBuf {
        let hex = hex(hash);
        self.store.join(&hex[..2]).join(&hex[2..])
    }

    fn temp_in_store(&self) -> PathBuf {
        self.store.join(temp_name())
    }

    /// Undoes `changes` (from `before` to `after`): removes what was created, restores what was
    /// modified, deleted or replaced from `before` and the store. Removals go deepest first (a
    /// directory created by the command goes once it is empty), restorations parents first, and
    /// directory permissions last (a read-only directory must not stop its content coming back).
    /// One outcome per change, in the order given.
    pub fn revert(&self, before: &Snapshot, after: &Snapshot, changes: &[Change]) -> Vec<Reverted> {
        let mut order: Vec<usize> = (0..changes.len()).collect();
        order.sort_by(|&x, &y| changes[x].path.cmp(&changes[y].path));
        let mut outcomes: Vec<Result<(), String>> = vec![Ok(()); changes.len()];
        // 1. Removals, children before their parents.
        for &i in order.iter().rev() {
            let c = &changes[i];
            if matches!(c.kind, ChangeKind::Created | ChangeKind::TypeChanged) {
                outcomes[i] = match after.get(&c.path) {
                    Some(entry) => self.remove(&c.path, entry),
                    None => Err("the change is not in the snapshot taken after the command".to_owned()),
                };
            }
        }
        // 2. Restorations, parents before their children.
        let mut modes: Vec<(PathBuf, u32)> = Vec::new();
        for &i in &order {
            let c = &changes[i];
            if c.kind == ChangeKind::Created || outcomes[i].is_err() {
                continue;
            }
            outcomes[i] = match before.get(&c.path) {
                Some(entry) => self.restore(&c.path, entry, &mut modes),
                None => Err("the path is not in the snapshot taken before the command".to_owned()),
            };
        }
        // 3. Directory permissions, children before their parents.
        for (path, mode) in modes.into_iter().rev() {
            let _ = set_mode(&path, mode);
        }
        changes.iter().zip(outcomes).map(|(change, outcome)| Reverted { change: change.clone(), outcome }).collect()
    }

    fn remove(&self, rel: &str, entry: &Entry) -> Result<(), String> {
        if entry.not_held == Some(NotHeldReason::NameNotUtf8) {
            return Err("its name is not valid UTF-8, so it cannot be named to remove it".to_owned());
        }
        let path = self.safe_path(rel)?;
        let removed = match entry.kind {
            EntryKind::Dir => fs::remove_dir(&path),
            _ => fs::remove_file(&path),
        };
        match removed {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(format!("cannot remove the {}: {e}", entry.kind.name())),
        }
    }

    fn restore(&self, rel: &str, entry: &Entry, modes: &mut Vec<(PathBuf, u32)>) -> Result<(), String> {
        if let Some(reason) = &entry.not_held {
            // A directory that could not be listed can still be recreated; its content could not.
            if !(entry.kind == EntryKind::Dir && matches!(reason, NotHeldReason::Unreadable { .. })) {
                return Err(format!("it was not held: {reason}"));
            }
        }
        let path = self.safe_path(rel)?;
        let parent = path.parent().ok_or("the path has no parent directory")?;
        fs::create_dir_all(parent).map_err(|e| format!("cannot recreate its parent directory: {e}"))?;
        match &entry.kind {
            EntryKind::Dir => {
                match fs::symlink_metadata(&path) {
                    Ok(m) if m.is_dir() => {}
                    _ => fs::create_dir(&path).map_err(|e| format!("cannot recreate the directory: {e}"))?,
                }
                modes.push((path, entry.mode));
                Ok(())
            }
            EntryKind::File => {
                let hash = entry.hash.ok_or("its content was never read")?;
                let object = self.object(&hash);
                let tmp = parent.join(temp_name());
                let result = self
                    .restore_file(&object, &tmp, &hash, entry)
                    .and_then(|()| fs::rename(&tmp, &path).map_err(|e| format!("cannot put it back: {e}")));
                if result.is_err() {
                    let _ = fs::remove_file(&tmp);
                }
                result
            }
            EntryKind::Symlink { target } => {
                let tmp = parent.join(temp_name());
                let result = make_symlink(target, &tmp)
                    .map_err(|e| format!("cannot recreate the symbolic link: {e}"))
                    .and_then(|()| fs::rename(&tmp, &path).map_err(|e| format!("cannot put the symbolic link back: {e}")));
                if result.is_err() {
                    let _ = fs::remove_file(&tmp);
                }
                result
            }
            EntryKind::Other { what } => Err(format!("a {what} cannot be recreated")),
        }
    }

    fn restore_file(&self, object: &Path, tmp: &Path, hash: &Hash, entry: &Entry) -> Result<(), String> {
        fs::copy(object, tmp).map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                "its held copy is missing from the store".to_owned()
            } else {
                format!("cannot copy its held copy: {e}")
            }
        })?;
        // The store lives in the workspace: check it was not altered before trusting it.
        let mut buf = Vec::new();
        if hash_file(tmp, &mut buf).map_err(|e| format!("cannot read its held copy: {e}"))? != *hash {
            return Err("its held copy in the store was altered".to_owned());
        }
        let file = fs::File::open(tmp).map_err(|e| format!("cannot open the restored copy: {e}"))?;
        if let Some(mtime) = system_time(entry.mtime_ns) {
            // Build tools compare mtimes: the file is back as it was, so is its time.
            let _ = file.set_times(fs::FileTimes::new().set_modified(mtime));
        }
        set_mode(tmp, entry.mode).map_err(|e| format!("cannot restore its permissions: {e}"))
    }

    /// The absolute path of `rel`, refused when a directory on the way is now a symlink: writing
    /// through it could land outside the workspace.
    fn safe_path(&self, rel: &str) -> Result<PathBuf, String> {
        let mut path = self.root.clone();
        let parts: Vec<&str> = rel.split('/').collect();
        for (i, part) in parts.iter().enumerate() {
            if part.is_empty() || *part == "." || *part == ".." {
                return Err(format!("`{rel}` is not a plain relative path"));
            }
            path.push(part);
            if i + 1 < parts.len() && fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(format!(
                    "`{}` is now a symbolic link; writing through it could land outside the workspace",
                    parts[..=i].join("/")
                ));
            }
        }
        // Whatever this platform calls a link, and whether or not it reports one as such (a Windows
        // junction; under Wine a Unix link shows no reparse point), the folder must still resolve
        // inside the workspace.
        if let Some(parent) = path.parent()
            && let (Ok(real), Ok(root)) = (fs::canonicalize(parent), fs::canonicalize(&self.root))
            && !real.starts_with(&root)
        {
            return Err(format!(
                "the folder of `{rel}` now resolves to {}, outside the workspace; writing there could land outside it",
                real.display()
            ));
        }
        Ok(path)
    }
}

/// A file the walk listed as regular, refused if it is not one any more (a FIFO swapped in after the
/// listing would otherwise block the snapshot; see `base::regular`).
fn open_regular(path: &Path) -> io::Result<fs::File> {
    crate::base::regular::open_regular(None, path).map(|(file, _)| file)
}

pub(crate) fn hash_file(path: &Path, buf: &mut Vec<u8>) -> io::Result<Hash> {
    let mut file = open_regular(path)?;
    let mut hasher = Sha256::new();
    buf.resize(256 * 1024, 0);
    loop {
        match file.read(buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(hasher.finalize().into())
}

fn hex(hash: &Hash) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(64);
    for b in hash {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

/// Whether an unchanged (len, mtime, ctime, inode) proves an unchanged file, so its hash is reused.
/// On Unix a write moves the ctime, which no process can set back. Elsewhere `stat` gives no change
/// time (Windows' ChangeTime is not in std; `created` stands in) and no inode, and a command can
/// write a file and set its mtime back: every file is hashed again, slower but never fooled.
const STAMP_SEES_EVERY_WRITE: bool = cfg!(unix);

/// A name no one else uses: this process, a counter.
fn temp_name() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(".chokepoint-tmp-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

fn system_time(ns: i64) -> Option<std::time::SystemTime> {
    let ns = u64::try_from(ns).ok()?;
    std::time::UNIX_EPOCH.checked_add(std::time::Duration::from_nanos(ns))
}

#[cfg(unix)]
pub(crate) fn stat(meta: &fs::Metadata) -> Entry {
    use std::os::unix::fs::MetadataExt;
    Entry {
        kind: EntryKind::Dir,
        len: meta.len(),
        mtime_ns: meta.mtime().saturating_mul(1_000_000_000).saturating_add(meta.mtime_nsec()),
        ctime_ns: meta.ctime().saturating_mul(1_000_000_000).saturating_add(meta.ctime_nsec()),
        inode: meta.ino(),
        mode: meta.mode() & 0o7777,
        hash: None,
        not_held: None,
    }
}

#[cfg(not(unix))]
pub(crate) fn stat(meta: &fs::Metadata) -> Entry {
    let ns = |t: io::Result<std::time::SystemTime>| {
        t.ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
    };
    Entry {
        kind: EntryKind::Dir,
        len: meta.len(),
        mtime_ns: ns(meta.modified()),
        ctime_ns: ns(meta.created()),
        inode: 0,
        mode: if meta.permissions().readonly() { 0o444 } else { 0o644 },
        hash: None,
        not_held: None,
    }
}

#[cfg(unix)]
pub(crate) fn other_kind(ft: &fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_fifo() {
        "fifo"
    } else if ft.is_socket() {
        "socket"
    } else if ft.is_block_device() {
        "block device"
    } else if ft.is_char_device() {
        "character device"
    } else {
        "special file"
    }
}

#[cfg(not(unix))]
pub(crate) fn other_kind(_ft: &fs::FileType) -> &'static str {
    "special file"
}

#[cfg(unix)]
pub(crate) fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
pub(crate) fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    let mut perms = fs::metadata(path)?.permissions();
    perms.set_readonly(mode & 0o222 == 0);
    fs::set_permissions(path, perms)
}

#[cfg(unix)]
fn make_symlink(target: &Path, at: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, at)
}

#[cfg(not(unix))]
fn make_symlink(_target: &Path, _at: &Path) -> io::Result<()> {
    Err(io::Error::other("symbolic links are restored only on unix"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, Snapshotter) {
        let ws = tempfile::tempdir().unwrap();
        fs::create_dir_all(ws.path().join("src/auth")).unwrap();
        fs::write(ws.path().join("src/auth/a.ts"), "a").unwrap();
        fs::write(ws.path().join("README.md"), "readme").unwrap();
        let store = ws.path().join(".orchestration/snapshots");
        let s = Snapshotter::new(ws.path(), &store, &[".orchestration/state.db*".to_owned()], 1024).unwrap();
        (ws, s)
    }

    /// A file the walk saw as regular and that is a FIFO by the time it is read: refused at once.
    #[cfg(unix)]
    #[test]
    fn a_file_swapped_for_a_fifo_after_listing_is_refused_not_waited_on() {
        let (ws, s) = setup();
        let fifo = ws.path().join("src/auth/pipe");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let (done, read) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut entry =
                Entry { kind: EntryKind::File, len: 10, mtime_ns: 0, ctime_ns: 0, inode: 0, mode: 0o644, hash: None, not_held: None };
            let held = s.hash_and_hold(&fifo, &mut entry, &mut Vec::new()).map(|()| entry.not_held);
            let large = hash_file(&fifo, &mut Vec::new()).map(drop);
            done.send((held, large)).unwrap();
        });
        let (held, large) = read.recv_timeout(std::time::Duration::from_secs(10)).expect("answered within 10 s");
        assert!(matches!(&held, Ok(Some(NotHeldReason::Unreadable { error })) if error.contains("not a regular file")), "{held:?}");
        assert!(large.is_err(), "the streaming hash refuses it too");
    }

    #[test]
    fn an_unchanged_workspace_has_no_changes_and_reuses_hashes() {
        let (_ws, s) = setup();
        let a = s.take(None).unwrap();
        let b = s.take(Some(&a)).unwrap();
        assert!(changes(&a, &b).is_empty());
        assert_eq!(a.get("src/auth/a.ts").unwrap().hash, b.get("src/auth/a.ts").unwrap().hash);
        assert!(a.get("src/auth").is_some_and(|e| e.kind == EntryKind::Dir));
        // The store and the excluded paths are not part of the snapshot.
        assert!(a.entries().all(|(p, _)| !p.starts_with(".orchestration/snapshots")));
    }

    #[test]
    fn every_kind_of_change_is_seen() {
        let (ws, s) = setup();
        let root = ws.path();
        fs::write(root.join("gone.txt"), "x").unwrap();
        fs::write(root.join("becomes_dir"), "x").unwrap();
        let a = s.take(None).unwrap();
        fs::write(root.join("README.md"), "changed").unwrap();
        fs::write(root.join("new.txt"), "n").unwrap();
        fs::remove_file(root.join("gone.txt")).unwrap();
        fs::remove_file(root.join("becomes_dir")).unwrap();
        fs::create_dir(root.join("becomes_dir")).unwrap();
        fs::write(root.join(".orchestration/state.db-wal"), "excluded").unwrap();
        let b = s.take(Some(&a)).unwrap();
        let got: Vec<(String, ChangeKind)> = changes(&a, &b).into_iter().map(|c| (c.path, c.kind)).collect();
        assert_eq!(
            got,
            [
                ("README.md".to_owned(), ChangeKind::Modified),
                ("becomes_dir".to_owned(), ChangeKind::TypeChanged),
                ("gone.txt".to_owned(), ChangeKind::Deleted),
                ("new.txt".to_owned(), ChangeKind::Created),
            ]
        );
    }

    #[test]
    fn a_revert_puts_everything_back() {
        let (ws, s) = setup();
        let root = ws.path();
        fs::write(root.join("becomes_dir"), "was a file").unwrap();
        let a = s.take(None).unwrap();
        fs::write(root.join("README.md"), "changed").unwrap();
        fs::remove_dir_all(root.join("src")).unwrap();
        fs::remove_file(root.join("becomes_dir")).unwrap();
        fs::create_dir_all(root.join("becomes_dir/deeper")).unwrap();
        fs::write(root.join("becomes_dir/deeper/x"), "x").unwrap();
        let b = s.take(Some(&a)).unwrap();
        let all = changes(&a, &b);
        let outcomes = s.revert(&a, &b, &all);
        assert!(outcomes.iter().all(|r| r.outcome.is_ok()), "{outcomes:?}");
        let c = s.take(Some(&b)).unwrap();
        assert!(changes(&a, &c).is_empty(), "{:?}", changes(&a, &c));
        assert_eq!(fs::read_to_string(root.join("README.md")).unwrap(), "readme");
        // The restored file has its old mtime back.
        assert_eq!(a.get("README.md").unwrap().mtime_ns, c.get("README.md").unwrap().mtime_ns);
    }

    #[test]
    fn an_altered_store_is_not_trusted() {
        let (ws, s) = setup();
        let a = s.take(None).unwrap();
        fs::write(ws.path().join("README.md"), "changed").unwrap();
        let b = s.take(Some(&a)).unwrap();
        let object = s.object(&a.get("README.md").unwrap().hash.unwrap());
        fs::write(&object, "evil").unwrap();
        let out = s.revert(&a, &b, &changes(&a, &b));
        assert_eq!(out[0].outcome, Err("its held copy in the store was altered".to_owned()));
        assert_eq!(fs::read_to_string(ws.path().join("README.md")).unwrap(), "changed");
    }

    #[test]
    #[cfg_attr(
        wine,
        ignore = "Wine makes a symbolic link a Unix one, which Windows' calls neither show as a link (no reparse point) nor resolve, so nothing under Wine can tell a path through it left the workspace; a real Windows does"
    )]
    fn nothing_is_restored_through_a_directory_that_became_a_symlink() {
        let (ws, s) = setup();
        let outside = tempfile::tempdir().unwrap();
        let a = s.take(None).unwrap();
        fs::remove_dir_all(ws.path().join("src/auth")).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(outside.path(), ws.path().join("src/auth")).unwrap();
        #[cfg(windows)]
        std::os::windows::fs::symlink_dir(outside.path(), ws.path().join("src/auth")).unwrap();
        let b = s.take(Some(&a)).unwrap();
        // Only the file is reverted (say the judge allowed the directory's change): its parent is a link now.
        let file = Change { path: "src/auth/a.ts".into(), kind: ChangeKind::Deleted };
        let out = s.revert(&a, &b, std::slice::from_ref(&file));
        let refused = out[0].outcome.as_ref().unwrap_err();
        assert!(refused.contains("`src/auth` is now a symbolic link") || refused.contains("outside the workspace"), "{out:?}");
        assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    #[test]
    #[cfg_attr(
        windows,
        ignore = "Windows' metadata has no change time, so every file is read again by design (STAMP_SEES_EVERY_WRITE); nothing is settled"
    )]
    fn only_files_written_within_a_tick_of_the_last_snapshot_are_read_again() {
        let (ws, s) = setup();
        std::thread::sleep(std::time::Duration::from_millis(250));
        fs::write(ws.path().join("fresh.txt"), "fresh").unwrap();
        let a = s.take(None).unwrap();
        // An emptied store shows which files the next snapshot read (and held again).
        fs::remove_dir_all(s.store()).unwrap();
        fs::create_dir_all(s.store()).unwrap();
        let b = s.take(Some(&a)).unwrap();
        assert!(!s.object(&b.get("README.md").unwrap().hash.unwrap()).exists(), "an unchanged, settled file costs only a stat");
        assert!(s.object(&b.get("fresh.txt").unwrap().hash.unwrap()).exists(), "a file written just before the snapshot is read again");
    }

    #[test]
    fn a_same_size_write_right_after_a_snapshot_is_seen() {
        // File times are coarse (a clock tick): a write in the same tick as the snapshot's stat
        // leaves (len, mtime, ctime, inode) as they were. Such entries are hashed again.
        let (ws, s) = setup();
        let file = ws.path().join("README.md");
        for round in 0..50 {
            let a = s.take(None).unwrap();
            fs::write(&file, format!("r{round:05}")).unwrap();
            let b = s.take(Some(&a)).unwrap();
            assert_eq!(changes(&a, &b), [Change { path: "README.md".into(), kind: ChangeKind::Modified }], "round {round}");
        }
    }

    #[test]
    fn excluded_entries_are_paths_prefixes_and_star_prefixes() {
        let (_ws, s) = setup();
        assert!(s.is_excluded(".orchestration/state.db"));
        assert!(s.is_excluded(".orchestration/state.db-wal"));
        assert!(s.is_excluded(".orchestration/snapshots"));
        assert!(s.is_excluded(".orchestration/snapshots/ab/cd"));
        assert!(!s.is_excluded(".orchestration/snapshots2"));
        assert!(!s.is_excluded(".orchestration/hooks.yaml"));
    }

    #[test]
    fn hex_is_lower_case_and_full_length() {
        let h: Hash = Sha256::digest(b"").into();
        assert_eq!(hex(&h), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }
}
