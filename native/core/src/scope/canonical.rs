//! Making a path an agent names canonical before any scope is judged: relative to the workspace
//! root, `.` and `..` resolved, symlinks of the deepest existing ancestor resolved (a path that does
//! not exist yet is judged by where it would land), duplicate separators removed, case compared as
//! the file system compares it. A path that lands outside the workspace is never inside any scope.
//!
//! Names are compared as the file system compares them ([`Names`]): on one that ignores case the
//! canonical form is lower case (probed at the root), and on macOS, whose volumes (APFS, HFS+) ignore
//! Unicode normalisation, it is NFC, so `café` typed precomposed or decomposed is one path; the scope
//! globs are matched under the same rules (`Names::glob`), so `SRC/Auth/x.ts` is inside `src/auth/**`
//! where it is the same file.
//!
//! Deliberately absent: no `~` expansion (a path starting with `~` is refused, not guessed at), no
//! folding of look-alikes (a Cyrillic `ѕrc/` is a different directory from `src/`, as it is on disk).
//!
//! **Invariant: no path is judged before it is canonical.** A relative path is resolved from where
//! the agent resolves it (`Event::base`: the hook input's `cwd`, by `agents::input::Call::base`,
//! which holds each client's rule; the root for our own agent and the CLI; refused, with the reason,
//! where the input does not say, and for Gemini CLI's `replace` of a relative path its folder lacks,
//! which the client looks for elsewhere). `..` is resolved against the real file system, symlinks are
//! followed (a dangling link is judged by its target), hard-linked files are refused. On Linux the
//! kernel resolves the existing part in one `open(O_PATH)`; the component walk remains for what it
//! cannot answer. The engine's `begin` makes a write's paths canonical once (`Event::writes`), and
//! the gatekeeper, containment and the trace all use that one result.
//!
//! **macOS.** No `openat2`, no `/proc`; the same two one-call answers, from the calls it has
//! (`mac` below): a path with no `..` is opened beneath the (canonical, so symlink-free) root with
//! `O_NOFOLLOW_ANY`, which the kernel refuses if *any* component is a symlink, so a path it opens or
//! finds missing is its own canonical form; anything else is opened following links (`O_EVTONLY`:
//! no read or write, no FIFO blocking) and the kernel says where it landed (`F_GETPATH`). Either
//! answer is one lookup by the kernel, so a symlink swapped in the middle of a component walk
//! cannot make it name a place the path never led to. `/tmp`, `/var` and `/etc` are symlinks into
//! `/private` there: the root is canonical (`/private/tmp/ws`), and `/tmp/ws/x` resolves into it.
//! What stays macOS's to prove on a Mac (`native/core/tests/canonical.rs`'s macOS test): the
//! kernel's own answers; the logic around them is the Linux path's, tested here.

use crate::model::event::PathBase;
use std::path::{Component, Path, PathBuf};
use unicode_normalization::UnicodeNormalization;

/// How the file system under a workspace compares names: what makes two spellings one file. The
/// canonical form of a path is its spelling under these rules ([`Names::key`]), and a scope glob is
/// matched under them ([`Names::glob`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Names {
    /// Case is ignored (macOS's and Windows' default volumes; probed at the root).
    pub fold_case: bool,
    /// Unicode normalisation is ignored (APFS and HFS+: `é` precomposed and decomposed are one name).
    pub normalize: bool,
}

impl Names {
    /// The names of the file system under `root`.
    pub fn of(root: &Path) -> Names {
        Names { fold_case: probe_case_insensitive(root), normalize: cfg!(target_vendor = "apple") }
    }

    /// `name` spelt canonically under these rules: NFC, then lower case.
    pub fn key(self, name: String) -> String {
        let name = if self.normalize && !name.is_ascii() { name.nfc().collect() } else { name };
        if self.fold_case { name.to_lowercase() } else { name }
    }

    /// A scope glob (`*` stops at `/`) that matches the canonical paths of this file system: its
    /// literal parts spelt as [`Names::key`] spells names, compared without case where case is ignored.
    pub fn glob(self, glob: &str) -> Result<globset::Glob, globset::Error> {
        let glob: String = if self.normalize && !glob.is_ascii() { glob.nfc().collect() } else { glob.to_owned() };
        globset::GlobBuilder::new(&glob).literal_separator(true).case_insensitive(self.fold_case).build()
    }
}

/// Why a path cannot be judged inside the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathRefusal {
    Empty,
    Nul,
    Tilde,
    OutsideWorkspace {
        resolved: PathBuf,
    },
    NotUtf8,
    /// An existing file with several names: writing it changes a path we did not judge.
    Hardlinked {
        links: u64,
    },
    /// A relative path whose base folder the agent did not say (`PathBase::Unknown`, and why).
    UnknownBase {
        why: String,
    },
    /// A spelling Windows reads as no file of the workspace, or as another file's part
    /// (`win_names.rs`: a device name, a stream, a drive-relative path).
    Windows(super::win_names::WinNameRefusal),
}

impl std::fmt::Display for PathRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PathRefusal::Empty => write!(f, "the path is empty"),
            PathRefusal::Nul => write!(f, "the path contains a NUL byte"),
            PathRefusal::Tilde => write!(f, "paths starting with `~` are not expanded; give a path inside the workspace"),
            PathRefusal::OutsideWorkspace { resolved } => write!(f, "the path resolves to {}, outside the workspace", resolved.display()),
            PathRefusal::NotUtf8 => write!(f, "the path resolves to a name that is not valid UTF-8"),
            PathRefusal::Hardlinked { links } => {
                write!(f, "the file has {links} hard links; writing it would also change a path outside what was judged")
            }
            PathRefusal::UnknownBase { why } => {
                write!(f, "the path is relative, and {why}, so where it lands cannot be known; give its absolute path")
            }
            PathRefusal::Windows(refusal) => refusal.fmt(f),
        }
    }
}

/// A workspace root, resolved once, with how its file system compares names.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    names: Names,
    /// The root opened once, for the one-call resolution beneath it (linux.rs).
    #[cfg(target_os = "linux")]
    root_fd: Option<std::sync::Arc<std::os::fd::OwnedFd>>,
}

impl Workspace {
    pub fn new(root: &Path) -> std::io::Result<Workspace> {
        let root = std::fs::canonicalize(root)?;
        let names = Names::of(&root);
        Ok(Workspace::with_names(root, names))
    }

    /// A workspace at `root`, which must be canonical already, whose names compare by `names`
    /// rather than as probed: a test judges macOS's rules (case and normalisation ignored) on a
    /// volume that keeps both.
    pub fn with_names(root: PathBuf, names: Names) -> Workspace {
        Workspace {
            #[cfg(target_os = "linux")]
            root_fd: linux::open_root(&root),
            root,
            names,
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// How the file system under the root compares names: scope globs are matched under these rules.
    pub fn names(&self) -> Names {
        self.names
    }

    /// The canonical workspace-relative path (`/`-separated, no `.` or `..`) that `raw` names, or why
    /// it cannot be inside the workspace. An empty string is the workspace root itself.
    pub fn canonicalize(&self, raw: &str) -> Result<String, PathRefusal> {
        if raw.is_empty() {
            return Err(PathRefusal::Empty);
        }
        if raw.contains('\0') {
            return Err(PathRefusal::Nul);
        }
        if raw.starts_with('~') {
            return Err(PathRefusal::Tilde);
        }
        // Windows rewrites a path's text before any file is reached: judged as it reads it.
        #[cfg(windows)]
        let read = super::win_names::read(raw).map_err(PathRefusal::Windows)?;
        #[cfg(windows)]
        let raw = read.as_str();
        #[cfg(target_os = "linux")]
        if let Some(fd) = self.root_fd.as_deref()
            && let Some((rel, meta)) = self.beneath_root(raw).and_then(|rel| linux::resolve_beneath(fd, rel))
        {
            if let Some(meta) = meta
                && meta.is_file()
                && link_count(&meta, None) > 1
            {
                return Err(PathRefusal::Hardlinked { links: link_count(&meta, None) });
            }
            return Ok(self.names.key(rel));
        }
        #[cfg(target_os = "macos")]
        if let Some((rel, meta)) = self.beneath_root(raw).and_then(|rel| mac::resolve_beneath(&self.root, rel)) {
            if let Some(meta) = meta
                && meta.is_file()
                && link_count(&meta, None) > 1
            {
                return Err(PathRefusal::Hardlinked { links: link_count(&meta, None) });
            }
            return Ok(self.names.key(rel));
        }
        let joined = if Path::new(raw).is_absolute() { PathBuf::from(raw) } else { self.root.join(raw) };
        let (resolved, meta) = resolve(&joined);
        let rel = self.relative(&resolved).ok_or_else(|| PathRefusal::OutsideWorkspace { resolved: resolved.clone() })?;
        if let Some(meta) = meta
            && meta.is_file()
            && let links = link_count(&meta, Some(&resolved))
            && links > 1
        {
            return Err(PathRefusal::Hardlinked { links });
        }
        let mut out = String::new();
        for c in rel.components() {
            let Component::Normal(name) = c else { continue };
            let name = name.to_str().ok_or(PathRefusal::NotUtf8)?;
            if !out.is_empty() {
                out.push('/');
            }
            out.push_str(name);
        }
        Ok(self.names.key(out))
    }

    /// [`Workspace::canonicalize`] of `raw` as the agent that named it resolves it: a relative path
    /// against `base` (the agent's working folder, or the root), never against a folder the agent
    /// did not say.
    pub fn canonicalize_from(&self, raw: &str, base: &PathBase) -> Result<String, PathRefusal> {
        if raw.is_empty() || raw.contains('\0') || raw.starts_with('~') || Path::new(raw).is_absolute() {
            return self.canonicalize(raw);
        }
        match base {
            PathBase::Root => self.canonicalize(raw),
            PathBase::Dir(dir) if dir.is_absolute() => self.canonicalize(dir.join(raw).to_str().ok_or(PathRefusal::NotUtf8)?),
            PathBase::Dir(dir) => {
                Err(PathRefusal::UnknownBase { why: format!("the folder it is relative to (`{}`) is not absolute", dir.display()) })
            }
            PathBase::Unknown(why) => Err(PathRefusal::UnknownBase { why: why.clone() }),
        }
    }

    /// `raw` relative to the root, when it is relative or names a place under the root (not yet
    /// resolved: `..` and symlinks are the resolution's to judge).
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    fn beneath_root<'a>(&self, raw: &'a str) -> Option<&'a str> {
        if !Path::new(raw).is_absolute() {
            return Some(raw);
        }
        // The root as text first (the common spelling, compared as bytes), then as components.
        let text = self.root.to_str().and_then(|root| raw.strip_prefix(root)).and_then(|rest| rest.strip_prefix('/'));
        text.or_else(|| Path::new(raw).strip_prefix(&self.root).ok()?.to_str())
    }

    /// `resolved` relative to the root, its names compared as the file system compares them: where
    /// case or normalisation is ignored, both are spelt by [`Names::key`] first (the kernel may spell
    /// the root's names otherwise than `realpath` did, `Café` as `cafe\u{301}`), and the rest is
    /// returned so spelt, which is how the canonical form spells it anyway.
    fn relative(&self, resolved: &Path) -> Option<PathBuf> {
        if self.names.fold_case || self.names.normalize {
            let key = |p: &Path| self.names.key(p.to_string_lossy().into_owned());
            let (r, p) = (key(&self.root), key(resolved));
            let rest = p.strip_prefix(&r)?;
            if !(rest.is_empty() || rest.starts_with(std::path::MAIN_SEPARATOR)) {
                return None;
            }
            return Some(PathBuf::from(rest.trim_start_matches(std::path::MAIN_SEPARATOR)));
        }
        resolved.strip_prefix(&self.root).ok().map(Path::to_path_buf)
    }
}

/// Resolves a path component by component: existing components through the file system (symlinks
/// followed, `..` taken from the real parent), the rest lexically, as a write would create them.
/// Also returns the metadata of what is at the resolved path, when something is.
fn resolve(path: &Path) -> (PathBuf, Option<std::fs::Metadata>) {
    #[cfg(target_os = "linux")]
    if let Some(found) = resolve_existing(path, linux::open_real) {
        return found;
    }
    #[cfg(target_os = "macos")]
    if let Some(found) = resolve_existing(path, mac::open_real) {
        return found;
    }
    #[cfg(windows)]
    let path = &windows::from_canonical_ancestor(path);
    let resolved = resolve_depth(path, 0);
    let meta = std::fs::symlink_metadata(&resolved).ok();
    (resolved, meta)
}

#[cfg(windows)]
mod windows {
    use std::path::{Path, PathBuf};

    /// `path` from the canonical form of its deepest part that exists, the rest as written. The
    /// component walk keeps what it starts from, so it must start canonical: the workspace root is
    /// (verbatim, `\\?\C:\…`, long names, links resolved), and an agent's `C:\…`, its 8.3 short
    /// names (`RUNNER~1`) or its case would otherwise never compare inside it. Win32 takes `..`
    /// lexically before it opens anything, as a write through the same path would.
    pub(super) fn from_canonical_ancestor(path: &Path) -> PathBuf {
        for ancestor in path.ancestors() {
            if let Ok(real) = std::fs::canonicalize(ancestor) {
                let rest = path.strip_prefix(ancestor).unwrap_or(Path::new(""));
                return if rest.as_os_str().is_empty() { real } else { real.join(rest) };
            }
        }
        path.to_path_buf()
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::fs::{File, Metadata, OpenOptions};
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::io::AsRawFd;
    use std::path::{Path, PathBuf};

    /// Where the kernel's one `open(O_PATH)` of `path` (symlinks followed, `..` taken physically)
    /// landed, read back through `/proc/self/fd`, with what is there.
    pub(super) fn open_real(path: &Path) -> Option<Result<(PathBuf, Metadata), std::io::ErrorKind>> {
        let file = match open_path(path) {
            Ok(file) => file,
            Err(e) => return Some(Err(e.kind())),
        };
        let real = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()?;
        Some(Ok((real, file.metadata().ok()?)))
    }

    pub(super) fn open_root(root: &Path) -> Option<std::sync::Arc<std::os::fd::OwnedFd>> {
        OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_PATH | nix::libc::O_DIRECTORY)
            .open(root)
            .ok()
            .map(|f| std::sync::Arc::new(f.into()))
    }

    /// The fastest path, and the common one: a path without `..` that meets no symlink and stays
    /// beneath the root is resolved by one `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, and is
    /// then its own canonical form. The kernel stops at the first missing component with `ENOENT`
    /// before meeting anything after it, so a missing tail proves the same about the existing part.
    /// Anything else (a symlink: `ELOOP`, an escape: `EXDEV`, a file used as a directory, an old
    /// kernel) is `None`, and the general resolution decides.
    pub(super) fn resolve_beneath(root_fd: &std::os::fd::OwnedFd, rel: &str) -> Option<(String, Option<Metadata>)> {
        use nix::fcntl::{OFlag, OpenHow, ResolveFlag, openat2};
        // The canonical form: plain names only. Most paths are already written so (checked on the
        // text, on every judged write); others are rebuilt from their components.
        let lexical = if rel.split('/').all(|name| !matches!(name, "" | "." | "..")) { rel.to_owned() } else { super::lexical(rel)? };
        if lexical.is_empty() {
            return None;
        }
        let how = OpenHow::new()
            .flags(OFlag::O_PATH | OFlag::O_CLOEXEC)
            .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_SYMLINKS | ResolveFlag::RESOLVE_NO_MAGICLINKS);
        match openat2(root_fd, lexical.as_str(), how) {
            Ok(fd) => {
                let meta = File::from(fd).metadata().ok()?;
                Some((lexical, Some(meta)))
            }
            Err(nix::errno::Errno::ENOENT) => Some((lexical, None)),
            Err(_) => None,
        }
    }

    fn open_path(path: &Path) -> std::io::Result<File> {
        // O_PATH opens nothing for reading or writing (no FIFO blocks, no permission beyond search).
        OpenOptions::new().read(true).custom_flags(nix::libc::O_PATH).open(path)
    }
}

/// The fast path, for a gate that judges every write: the kernel resolves the existing part of the
/// path in one open (symlinks followed, `..` taken physically, as a write would) and says where it
/// landed (`open_real`: Linux `/proc/self/fd`, macOS `F_GETPATH`). A few system calls instead of one
/// or more per component. `None` whenever the answer needs the component walk: a missing part that
/// is not plain names, a dangling link (judged by its target), an answer that is not an absolute
/// path, an error other than "not found" (a permission error, no `/proc`). `open_real` answers
/// `None` when it cannot say, `Some(Err(kind))` when the open failed.
#[cfg_attr(not(any(target_os = "linux", target_os = "macos")), allow(dead_code))]
fn resolve_existing(
    path: &Path,
    open_real: impl Fn(&Path) -> Option<Result<(PathBuf, std::fs::Metadata), std::io::ErrorKind>>,
) -> Option<(PathBuf, Option<std::fs::Metadata>)> {
    let mut existing = path;
    let mut missing: Vec<&std::ffi::OsStr> = Vec::new();
    loop {
        match open_real(existing)? {
            Ok((real, meta)) => {
                if !real.is_absolute() {
                    return None;
                }
                let Some(first) = missing.last() else {
                    return Some((real, Some(meta)));
                };
                // The first missing name must be absent, not a dangling symlink.
                match std::fs::symlink_metadata(real.join(first)) {
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    _ => return None,
                }
                let mut out = real;
                out.extend(missing.iter().rev());
                return Some((out, None));
            }
            Err(std::io::ErrorKind::NotFound) => {
                match existing.components().next_back()? {
                    Component::Normal(name) => missing.push(name),
                    _ => return None,
                }
                existing = existing.parent()?;
            }
            Err(_) => return None,
        }
    }
}

/// macOS's one-call answers (the module doc says why they cannot be raced).
#[cfg(target_os = "macos")]
mod mac {
    use std::fs::{File, Metadata, OpenOptions};
    use std::os::unix::fs::OpenOptionsExt;
    use std::path::{Path, PathBuf};

    /// For event notifications only: no read or write access is asked (none is needed to open a
    /// file the person cannot read), a FIFO does not block, nothing holds a volume from unmounting.
    fn open_event_only(path: &Path, extra: i32) -> std::io::Result<File> {
        OpenOptions::new().read(true).custom_flags(nix::libc::O_EVTONLY | nix::libc::O_NONBLOCK | extra).open(path)
    }

    /// Where one open of `path`, following links, landed: `F_GETPATH` of the descriptor.
    pub(super) fn open_real(path: &Path) -> Option<Result<(PathBuf, Metadata), std::io::ErrorKind>> {
        let file = match open_event_only(path, 0) {
            Ok(file) => file,
            Err(e) => return Some(Err(e.kind())),
        };
        let mut real = PathBuf::new();
        nix::fcntl::fcntl(&file, nix::fcntl::FcntlArg::F_GETPATH(&mut real)).ok()?;
        Some(Ok((real, file.metadata().ok()?)))
    }

    /// The common path: `rel` without `..` opened beneath `root` (canonical: no symlink in it) with
    /// `O_NOFOLLOW_ANY`. Opened, or missing (`ENOENT` comes at the first missing name, every name
    /// before it met and none a symlink), it is its own canonical form; a symlink anywhere (`ELOOP`)
    /// or anything else is `None`, and the general resolution decides.
    pub(super) fn resolve_beneath(root: &Path, rel: &str) -> Option<(String, Option<Metadata>)> {
        let lexical = super::lexical(rel)?;
        if lexical.is_empty() {
            return None;
        }
        match open_event_only(&root.join(&lexical), nix::libc::O_NOFOLLOW_ANY) {
            Ok(file) => Some((lexical, Some(file.metadata().ok()?))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some((lexical, None)),
            Err(_) => None,
        }
    }
}

/// `rel` without `.` and duplicate separators; `None` when it climbs (`..`) or is absolute.
#[cfg_attr(not(any(target_os = "linux", target_os = "macos")), allow(dead_code))]
fn lexical(rel: &str) -> Option<String> {
    let mut lexical = String::with_capacity(rel.len());
    for c in Path::new(rel).components() {
        match c {
            Component::Normal(name) => {
                if !lexical.is_empty() {
                    lexical.push('/');
                }
                lexical.push_str(name.to_str()?);
            }
            Component::CurDir => {}
            _ => return None,
        }
    }
    Some(lexical)
}

/// Symlinks followed before giving up, as the kernel's ELOOP limit.
const MAX_LINKS: u32 = 40;

fn resolve_depth(path: &Path, depth: u32) -> PathBuf {
    let mut current = PathBuf::new();
    let mut exists = true;
    for c in path.components() {
        match c {
            Component::Prefix(p) => current.push(p.as_os_str()),
            Component::RootDir => current.push(Component::RootDir.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                current.pop();
                // Back in existing territory (`new/../link`), later components resolve for real again.
                exists = exists || current.exists();
            }
            Component::Normal(name) => {
                current.push(name);
                if exists {
                    // `current` was canonical before this name: only a symlink here changes where it
                    // leads, so one `lstat` per component is enough (not a realpath of the prefix).
                    let link = match std::fs::symlink_metadata(&current) {
                        Ok(meta) if !meta.file_type().is_symlink() => continue,
                        Ok(_) => std::fs::canonicalize(&current),
                        Err(e) => Err(e),
                    };
                    match link {
                        Ok(real) => current = real,
                        Err(_) => {
                            exists = false;
                            // A dangling symlink: a write through it creates its target, so judge the
                            // target, not the link.
                            if depth < MAX_LINKS
                                && std::fs::symlink_metadata(&current).is_ok_and(|m| m.file_type().is_symlink())
                                && let Ok(target) = std::fs::read_link(&current)
                            {
                                let parent = current.parent().map(Path::to_path_buf).unwrap_or_default();
                                current = resolve_depth(&parent.join(target), depth + 1);
                            }
                        }
                    }
                }
            }
        }
    }
    current
}

/// How many names the file `meta` describes has (found at `path`, where Windows needs it).
#[cfg(unix)]
fn link_count(meta: &std::fs::Metadata, _path: Option<&Path>) -> u64 {
    use std::os::unix::fs::MetadataExt;
    meta.nlink()
}

/// Windows keeps the count out of `Metadata` (std's `number_of_links` is unstable): read from the
/// file's handle, opened for its attributes only and sharing everything, so a file another process
/// holds open is still counted. A file whose count cannot be read counts as linked: its write is
/// refused rather than judged on a guess.
#[cfg(windows)]
fn link_count(_meta: &std::fs::Metadata, path: Option<&Path>) -> u64 {
    use std::os::windows::fs::OpenOptionsExt;
    const FILE_READ_ATTRIBUTES: u32 = 0x80;
    const SHARE_ALL: u32 = 0x7; // FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE
    let Some(path) = path else { return 2 };
    std::fs::OpenOptions::new()
        .access_mode(FILE_READ_ATTRIBUTES)
        .share_mode(SHARE_ALL)
        .open(path)
        .and_then(winapi_util::file::information)
        .map_or(2, |info| info.number_of_links())
}

/// Whether the file system under `root` compares names without case: the same directory is reachable
/// under a case-swapped name.
fn probe_case_insensitive(root: &Path) -> bool {
    let s = root.to_string_lossy();
    let swapped: String = s.chars().map(|c| if c.is_lowercase() { c.to_ascii_uppercase() } else { c.to_ascii_lowercase() }).collect();
    if swapped == s {
        return false;
    }
    match (std::fs::metadata(root), std::fs::metadata(&swapped)) {
        (Ok(a), Ok(b)) => same_file(&a, &b),
        _ => false,
    }
}

#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(_a: &std::fs::Metadata, _b: &std::fs::Metadata) -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::{Names, Workspace};

    /// `é` as one code point (NFC) and as `e` with a combining accent (NFD): one name on macOS.
    const NFC: &str = "caf\u{e9}";
    const NFD: &str = "cafe\u{301}";

    #[test]
    fn a_name_is_spelt_in_nfc_where_normalisation_is_ignored_and_in_lower_case_where_case_is() {
        let mac = Names { fold_case: true, normalize: true };
        assert_eq!(mac.key(format!("SRC/{NFD}.ts")), format!("src/{NFC}.ts"));
        assert_eq!(mac.key(format!("src/{NFC}.ts")), format!("src/{NFC}.ts"));
        let linux = Names::default();
        assert_eq!(linux.key(format!("SRC/{NFD}.ts")), format!("SRC/{NFD}.ts"), "ext4 keeps both spellings apart");
    }

    #[test]
    fn a_scope_glob_matches_every_spelling_of_the_same_file_and_only_there() {
        let mac = Names { fold_case: true, normalize: true };
        let glob = |g: &str, names: Names| names.glob(g).expect("a glob").compile_matcher();
        // The canonical path (NFC, lower case) against globs written in any spelling.
        let path = mac.key(format!("SRC/Auth/{NFD}.ts"));
        assert!(glob("src/auth/**", mac).is_match(&path));
        assert!(glob("SRC/Auth/*.ts", mac).is_match(&path));
        assert!(glob(&format!("src/auth/{NFD}.ts"), mac).is_match(&path));
        assert!(!glob("src/*.ts", mac).is_match(&path), "`*` still stops at `/`");
        let linux = Names::default();
        assert!(!glob("SRC/Auth/**", linux).is_match("src/auth/x.ts"), "a file system that keeps case keeps it in globs too");
    }

    #[test]
    fn a_workspace_whose_volume_ignores_normalisation_makes_both_spellings_one_path() {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let root = std::fs::canonicalize(dir.path()).expect("canonical");
        std::fs::create_dir(root.join("src")).expect("a folder");
        let mac = Workspace::with_names(root.clone(), Names { fold_case: false, normalize: true });
        let nfd = mac.canonicalize(&format!("src/{NFD}.ts")).expect("inside");
        assert_eq!(nfd, format!("src/{NFC}.ts"));
        assert_eq!(mac.canonicalize(&root.join(format!("src/{NFC}.ts")).to_string_lossy()).expect("inside"), nfd);
        let linux = Workspace::with_names(root, Names::default());
        assert_eq!(linux.canonicalize(&format!("src/{NFD}.ts")).expect("inside"), format!("src/{NFD}.ts"));
    }
}
