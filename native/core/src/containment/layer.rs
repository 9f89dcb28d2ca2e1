//! The overlay's upper layer of an isolated command (`isolate.rs`) read as the command's changes, and
//! the allowed ones applied to the workspace.
//!
//! What overlayfs leaves in the upper layer is exactly what the command wrote: a file or symlink it
//! created or changed (whole, copied up), a directory it created or that holds such a change, a
//! whiteout (a character device 0:0) where it removed something, and a directory marked opaque
//! (`user.overlay.opaque`) where it removed a directory and made a new one at the same path. Others'
//! writes during the command went to the workspace itself and are never in it.
//!
//! **Invariant: applying never destroys what the command did not cause.** A change is applied only
//! when the path is, in the workspace, as it was when the command started (same kind, and for files
//! and symlinks the same length, times and inode): otherwise someone else changed it meanwhile, theirs
//! stays, and the command's version is kept aside for the person ([`Applied::Conflict`]). A file is
//! applied by renaming it from the upper layer (the same file system), so a reader never sees half of
//! it; nothing is written through a directory that resolves outside the workspace.

use crate::containment::snapshot::{self, Change, ChangeKind, Entry, EntryKind, Snapshot};
use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The command's side of one path: what it left there.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Left {
    /// An entry of the upper layer (a file, directory, symlink or special file).
    Entry(Entry),
    /// Removed.
    Gone,
}

/// The command's changes, read from its upper layer.
#[derive(Debug, Default)]
pub struct Layer {
    upper: PathBuf,
    /// The workspace, where a path the snapshot leaves out (the engine's runtime files) is looked up.
    root: PathBuf,
    /// What the command left, by relative path; only paths it changed or created (a directory that
    /// merely holds changes is not one).
    left: BTreeMap<String, Left>,
    /// Entries of the upper layer whose names are not UTF-8: never applied, reported.
    pub unreadable: Vec<String>,
}

impl Layer {
    /// Reads `upper` against the workspace at `root` as it was before the command (`before`).
    pub fn read(upper: &Path, root: &Path, before: &Snapshot) -> io::Result<Layer> {
        let mut layer = Layer { upper: upper.to_path_buf(), root: root.to_path_buf(), ..Layer::default() };
        let mut buf = Vec::new();
        layer.walk(upper, "", before, &mut buf)?;
        Ok(layer)
    }

    fn walk(&mut self, dir: &Path, prefix: &str, before: &Snapshot, buf: &mut Vec<u8>) -> io::Result<()> {
        let listing = match fs::read_dir(dir) {
            Ok(l) => l,
            Err(e) if e.kind() == io::ErrorKind::NotFound && prefix.is_empty() => return Ok(()),
            Err(e) => return Err(e),
        };
        for item in listing {
            let item = item?;
            let Some(name) = item.file_name().to_str().map(str::to_owned) else {
                self.unreadable.push(format!("{prefix}{}", item.file_name().to_string_lossy()));
                continue;
            };
            let rel = format!("{prefix}{name}");
            let path = item.path();
            let meta = fs::symlink_metadata(&path)?;
            if is_whiteout(&meta) {
                self.removed(&rel, before);
                continue;
            }
            let mut entry = snapshot::stat(&meta);
            let ft = meta.file_type();
            if ft.is_dir() {
                let was = before.get(&rel);
                let opaque = is_opaque(&path);
                if opaque {
                    // Removed and made anew: whatever was beneath it before is gone, unless the
                    // command made it again (the walk below then records it).
                    self.removed_beneath(&rel, before);
                }
                let changed = match was {
                    Some(w) if w.kind == EntryKind::Dir => w.mode != entry.mode,
                    _ => true,
                };
                if changed {
                    self.left.insert(rel.clone(), Left::Entry(entry));
                }
                self.walk(&path, &format!("{rel}/"), before, buf)?;
                continue;
            }
            if before.get(&rel).is_some_and(|w| w.kind == EntryKind::Dir) {
                // A directory replaced by something else: what was beneath it is gone.
                self.removed_beneath(&rel, before);
            }
            if ft.is_symlink() {
                entry.kind = EntryKind::Symlink { target: fs::read_link(&path)? };
            } else if ft.is_file() {
                entry.kind = EntryKind::File;
                entry.hash = Some(snapshot::hash_file(&path, buf)?);
            } else {
                entry.kind = EntryKind::Other { what: snapshot::other_kind(&ft) };
            }
            // A copy-up that changed nothing (a file opened for writing, a `touch`) is no change.
            let same = before.get(&rel).is_some_and(|w| snapshot::difference(w, &entry).is_none());
            if !same {
                self.left.insert(rel, Left::Entry(entry));
            }
        }
        Ok(())
    }

    fn removed(&mut self, rel: &str, before: &Snapshot) {
        self.removed_beneath(rel, before);
        self.left.insert(rel.to_owned(), Left::Gone);
    }

    fn removed_beneath(&mut self, rel: &str, before: &Snapshot) {
        let prefix = format!("{rel}/");
        for (path, _) in before.entries().filter(|(p, _)| p.starts_with(&prefix)) {
            self.left.entry(path.to_owned()).or_insert(Left::Gone);
        }
    }

    /// The command's changes against `before`, in path order.
    pub fn changes(&self, before: &Snapshot) -> Vec<Change> {
        self.left
            .iter()
            .filter_map(|(path, left)| {
                let kind = match (before.get(path), left) {
                    // Left out of the snapshot (a runtime file), or made by someone else meanwhile:
                    // the command removed what is there now.
                    (None, Left::Gone) if fs::symlink_metadata(self.root.join(path)).is_ok() => ChangeKind::Deleted,
                    (None, Left::Gone) => return None,
                    (None, Left::Entry(_)) => ChangeKind::Created,
                    (Some(_), Left::Gone) => ChangeKind::Deleted,
                    (Some(was), Left::Entry(now)) => snapshot::difference(was, now)?,
                };
                Some(Change { path: path.clone(), kind })
            })
            .collect()
    }

    /// The command's entry at `rel` as the judge's refinements need it (created directories, moved
    /// files): like a snapshot taken after the command, for the paths it changed.
    pub fn after(&self, rel: &str) -> Option<&Entry> {
        match self.left.get(rel) {
            Some(Left::Entry(e)) => Some(e),
            _ => None,
        }
    }

    /// Applies `allowed` (changes of [`Layer::changes`]) to the workspace at `root`, each only if
    /// its path is as `before` has it; the command's version of a path someone else changed is moved
    /// to `aside` (relative paths kept). Returns each change's outcome.
    pub fn apply(&self, root: &Path, before: &Snapshot, allowed: &[Change], aside: &Path) -> Vec<(Change, Applied)> {
        let mut out = Vec::new();
        // Creations and changes parents first, then removals children first.
        let (removals, rest): (Vec<&Change>, Vec<&Change>) = allowed.iter().partition(|c| c.kind == ChangeKind::Deleted);
        for c in rest {
            out.push((c.clone(), self.apply_one(root, before, c, aside)));
        }
        for c in removals.into_iter().rev() {
            out.push((c.clone(), self.apply_one(root, before, c, aside)));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    fn apply_one(&self, root: &Path, before: &Snapshot, change: &Change, aside: &Path) -> Applied {
        let rel = change.path.as_str();
        let target = match beneath(root, rel) {
            Ok(t) => t,
            Err(e) => return self.failed(rel, e, aside),
        };
        let was = before.get(rel);
        let now = fs::symlink_metadata(&target).ok();
        if was.is_none() && now.as_ref().is_some_and(fs::Metadata::is_dir) && self.after(rel).is_some_and(|e| e.kind == EntryKind::Dir) {
            // A folder someone else made meanwhile too: what the command put in it is applied path
            // by path.
            return Applied::Applied;
        }
        if !unchanged(was, now.as_ref()) {
            return match self.set_aside(rel, aside) {
                Ok(kept) => Applied::Conflict { kept },
                Err(e) => Applied::Failed {
                    reason: format!("changed meanwhile by someone else, whose version stays; the command's could not be kept: {e}"),
                    kept: None,
                },
            };
        }
        let result = match (self.left.get(rel), was) {
            (Some(Left::Gone), Some(w)) if w.kind == EntryKind::Dir => fs::remove_dir(&target),
            (Some(Left::Gone), _) => fs::remove_file(&target),
            (Some(Left::Entry(e)), was) if e.kind == EntryKind::Dir => {
                if was.is_some_and(|w| w.kind == EntryKind::Dir) {
                    snapshot::set_mode(&target, e.mode)
                } else {
                    if was.is_some() {
                        let _ = fs::remove_file(&target);
                    }
                    fs::create_dir(&target).and_then(|()| snapshot::set_mode(&target, e.mode))
                }
            }
            (Some(Left::Entry(Entry { kind: EntryKind::Other { what }, .. })), _) => {
                Err(io::Error::other(format!("a {what} made by a command is not applied")))
            }
            (Some(Left::Entry(_)), was) => {
                if was.is_some_and(|w| w.kind == EntryKind::Dir) {
                    // A directory replaced by a file: its content's removals were applied already.
                    let _ = fs::remove_dir(&target);
                }
                fs::rename(self.upper.join(rel), &target)
            }
            (None, _) => Ok(()),
        };
        match result {
            Ok(()) => Applied::Applied,
            Err(e) if e.kind() == io::ErrorKind::DirectoryNotEmpty => Applied::Conflict { kept: None },
            Err(e) => self.failed(rel, e.to_string(), aside),
        }
    }

    /// A change that could not be applied: the command's version is set aside all the same, never
    /// lost with its layer.
    fn failed(&self, rel: &str, reason: String, aside: &Path) -> Applied {
        match self.set_aside(rel, aside) {
            Ok(kept) => Applied::Failed { reason, kept },
            Err(e) => Applied::Failed { reason: format!("{reason}; the command's version could not be kept: {e}"), kept: None },
        }
    }

    /// Moves the command's version of `rel` aside, for the person to look at.
    fn set_aside(&self, rel: &str, aside: &Path) -> io::Result<Option<String>> {
        let from = self.upper.join(rel);
        match fs::symlink_metadata(&from) {
            Ok(m) if !m.is_dir() && !is_whiteout(&m) => {
                let to = aside.join(rel);
                if let Some(parent) = to.parent() {
                    fs::create_dir_all(parent)?;
                }
                fs::rename(&from, &to)?;
                Ok(Some(to.to_string_lossy().into_owned()))
            }
            _ => Ok(None),
        }
    }
}

/// What applying one of the command's changes came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    Applied,
    /// Someone else changed the path while the command ran: their version stays; the command's is
    /// kept at this path (none for a removal, or a directory).
    Conflict {
        kept: Option<String>,
    },
    /// It could not be applied, for `reason`; the command's version is kept at `kept` (none for a
    /// removal, or a directory).
    Failed {
        reason: String,
        kept: Option<String>,
    },
}

/// Whether the workspace's entry `now` is still the one the snapshot saw (`was`).
fn unchanged(was: Option<&Entry>, now: Option<&fs::Metadata>) -> bool {
    match (was, now) {
        (None, None) => true,
        (Some(w), Some(m)) => {
            let n = snapshot::stat(m);
            let kind_same = match &w.kind {
                EntryKind::Dir => m.is_dir(),
                EntryKind::File => m.is_file(),
                EntryKind::Symlink { .. } => m.file_type().is_symlink(),
                EntryKind::Other { .. } => !m.is_dir() && !m.is_file() && !m.file_type().is_symlink(),
            };
            // A directory's times move with what others add inside it, which is judged path by path.
            kind_same && (w.kind == EntryKind::Dir || (w.len, w.mtime_ns, w.ctime_ns, w.inode) == (n.len, n.mtime_ns, n.ctime_ns, n.inode))
        }
        _ => false,
    }
}

/// `root/rel`, refused when its parent resolves outside `root` (a directory swapped for a symlink).
fn beneath(root: &Path, rel: &str) -> Result<PathBuf, String> {
    let target = root.join(rel);
    let parent = target.parent().unwrap_or(root);
    match fs::canonicalize(parent) {
        Ok(real) if real.starts_with(root) => Ok(target),
        Ok(real) => Err(format!("its folder resolves to {}, outside the workspace", real.display())),
        Err(e) => Err(format!("its folder cannot be resolved: {e}")),
    }
}

#[cfg(unix)]
fn is_whiteout(meta: &fs::Metadata) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    meta.file_type().is_char_device() && meta.rdev() == 0
}

#[cfg(not(unix))]
fn is_whiteout(_meta: &fs::Metadata) -> bool {
    false
}

#[cfg(target_os = "linux")]
fn is_opaque(path: &Path) -> bool {
    let mut value = [0u8; 4];
    matches!(rustix::fs::lgetxattr(path, "user.overlay.opaque", &mut value[..]), Ok(n) if n >= 1 && value[0] == b'y')
}

#[cfg(not(target_os = "linux"))]
fn is_opaque(_path: &Path) -> bool {
    false
}
