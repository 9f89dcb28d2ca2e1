//! Where a workspace's live engine listens: `<runtime dir>/chokepoint/<workspace hash>.sock`; on
//! Windows the named pipe `\\.\pipe\chokepoint-<hash>` (of the runtime folder and the workspace, so
//! that two runtime folders, as tests make, are two endpoints), which has no folder to guard it:
//! its DACL grants this user alone, and each end checks the other's user (`server.rs`, `client.rs`).
//!
//! - **Why a private folder.** The socket file's own permissions are not checked by every system
//!   when connecting, but a folder's are: a folder owned by the user with no access for anyone else
//!   (0700) keeps every other user out, before the server's own check of the peer's user id.
//! - **Why a hash.** A Unix socket's path is limited to about a hundred bytes; a workspace's path is
//!   not. The hash of the workspace's canonical path names it in 16 hex digits, the same for the
//!   server and for every hook, however each spelled the path.
//! - **Which runtime dir.** `$XDG_RUNTIME_DIR` (per user, on tmpfs, emptied at logout) when it is
//!   set, else the system's temporary folder with the user id in the name, unless another user (or a
//!   link) took that name first: then the user's cache folder (`runtime_dir_from`), which nobody else
//!   can create ahead of us.

#[cfg(unix)]
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::error::ServeError;

/// Why no live engine listens on a platform without a Unix socket (`unserved.rs`), for `chokepoint
/// serve`, the extension and `chokepoint doctor`.
pub const UNAVAILABLE: &str = "the live engine listens on a Unix socket or a Windows named pipe, and this platform's build has \
     neither; hooks judge alone, each in its own process";

/// The socket of one workspace's engine and the folder that guards it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    dir: PathBuf,
    socket: PathBuf,
}

/// A digest's first 8 bytes in hex: 16 digits, short enough for a socket's path.
fn short_name(digest: &[u8]) -> String {
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

impl Endpoint {
    /// The endpoint of the workspace at `root`, in the user's runtime folder.
    pub fn for_workspace(root: &Path) -> Endpoint {
        Endpoint::in_dir(&runtime_dir(), root)
    }

    /// The endpoint of the workspace at `root` in `dir` (which must be private to the user).
    pub fn in_dir(dir: &Path, root: &Path) -> Endpoint {
        let canonical = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_owned());
        let digest = Sha256::digest(canonical.as_os_str().as_encoded_bytes());
        #[cfg(not(windows))]
        let socket = dir.join(format!("{}.sock", short_name(&digest)));
        #[cfg(windows)]
        let socket = {
            let digest = Sha256::new().chain_update(dir.as_os_str().as_encoded_bytes()).chain_update([0]).chain_update(digest).finalize();
            PathBuf::from(format!(r"\\.\pipe\chokepoint-{}", short_name(&digest)))
        };
        Endpoint { dir: dir.to_owned(), socket }
    }

    /// The socket file.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The folder that holds it.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Creates the folder (0700) if it is missing, then checks it ([`Endpoint::check`]).
    #[cfg(unix)]
    pub(crate) fn prepare(&self) -> Result<(), ServeError> {
        if !self.dir.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&self.dir)
                .map_err(|e| ServeError::from(format!("cannot create the endpoint folder {}: {e}", self.dir.display())))?;
        }
        self.check()
    }

    /// Refuses a folder that another user owns, that others may enter, or that is a symbolic link:
    /// a socket found there could be anyone's.
    #[cfg(unix)]
    pub fn check(&self) -> Result<(), ServeError> {
        let meta = std::fs::symlink_metadata(&self.dir)
            .map_err(|e| ServeError::from(format!("the endpoint folder {} cannot be read: {e}", self.dir.display())))?;
        let me = nix::unistd::getuid().as_raw();
        if !meta.is_dir() {
            return Err(format!("{} is not a folder (a symbolic link is refused); remove it", self.dir.display()).into());
        }
        if meta.uid() != me {
            return Err(format!(
                "the endpoint folder {} belongs to user {}, not to this user ({me}); remove it",
                self.dir.display(),
                meta.uid()
            )
            .into());
        }
        if meta.permissions().mode() & 0o077 != 0 {
            return Err(format!(
                "the endpoint folder {} may be entered by other users (mode {:o}); run `chmod 700 {}`",
                self.dir.display(),
                meta.permissions().mode() & 0o777,
                self.dir.display()
            )
            .into());
        }
        Ok(())
    }
}

/// A named pipe has no folder: who may open it is its DACL, set by the server that creates it, and
/// whose it is the client checks on connecting (the server process's user, `client.rs`).
#[cfg(windows)]
impl Endpoint {
    pub(crate) fn prepare(&self) -> Result<(), ServeError> {
        Ok(())
    }

    pub fn check(&self) -> Result<(), ServeError> {
        Ok(())
    }
}

/// Refused where there is neither a Unix socket nor a named pipe: nothing listens there anyway
/// (unserved.rs).
#[cfg(not(any(unix, windows)))]
impl Endpoint {
    pub fn check(&self) -> Result<(), ServeError> {
        Err(format!("whether the endpoint folder {} is this user's alone cannot be checked on this platform", self.dir.display()).into())
    }
}

/// The user's own folder for local, per-machine data (`%LOCALAPPDATA%`), which names the live
/// engine's pipe on Windows; the system's temporary folder when it is not set.
#[cfg(not(unix))]
fn runtime_dir() -> PathBuf {
    std::env::var_os("LOCALAPPDATA").map(PathBuf::from).unwrap_or_else(std::env::temp_dir).join("chokepoint").join("run")
}

#[cfg(unix)]
fn runtime_dir() -> PathBuf {
    let home_cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|d| d.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(PathBuf::from).filter(|d| d.is_absolute()).map(|h| h.join(".cache")));
    runtime_dir_from(std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from), &std::env::temp_dir(), home_cache)
}

/// The runtime folder given `$XDG_RUNTIME_DIR`, the system's temporary folder and the user's cache
/// folder, as every process of the user computes it alike.
///
/// Without `$XDG_RUNTIME_DIR`, `<tmp>/chokepoint-<uid>` when it is missing or a folder of ours; when
/// another user (or a link) took that name first, which anyone may in a shared `/tmp`, a folder
/// nobody else can create ahead of us: `<cache>/chokepoint/run`, under the user's home.
#[cfg(unix)]
fn runtime_dir_from(xdg: Option<PathBuf>, tmp: &Path, home_cache: Option<PathBuf>) -> PathBuf {
    match xdg {
        Some(dir) if dir.is_absolute() && dir.is_dir() => return dir.join("chokepoint"),
        _ => {}
    }
    let me = nix::unistd::getuid().as_raw();
    let shared = tmp.join(format!("chokepoint-{me}"));
    let ours = match std::fs::symlink_metadata(&shared) {
        Err(_) => true,
        Ok(meta) => meta.is_dir() && meta.uid() == me,
    };
    match home_cache {
        Some(cache) if !ours => cache.join("chokepoint").join("run"),
        _ => shared,
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn one_workspace_one_socket_however_it_is_spelled() {
        let dir = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir(ws.path().join("sub")).unwrap();
        let a = Endpoint::in_dir(dir.path(), ws.path());
        let b = Endpoint::in_dir(dir.path(), &ws.path().join("sub/.."));
        assert_eq!(a, b);
        assert_ne!(a, Endpoint::in_dir(dir.path(), &ws.path().join("sub")));
        let name = a.socket().file_name().unwrap().to_str().unwrap();
        assert!(name.len() == 21 && name.ends_with(".sock"), "{name}");
    }

    #[test]
    fn a_name_in_tmp_someone_else_took_first_is_passed_over_for_the_users_cache() {
        let (xdg, tmp, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let cache = Some(cache.path().to_owned());
        assert_eq!(runtime_dir_from(Some(xdg.path().to_owned()), tmp.path(), cache.clone()), xdg.path().join("chokepoint"));
        let shared = tmp.path().join(format!("chokepoint-{}", nix::unistd::getuid().as_raw()));
        assert_eq!(runtime_dir_from(None, tmp.path(), cache.clone()), shared, "free: ours to create");
        std::fs::create_dir(&shared).unwrap();
        assert_eq!(runtime_dir_from(None, tmp.path(), cache.clone()), shared, "ours: kept");
        std::fs::remove_dir(&shared).unwrap();
        std::os::unix::fs::symlink(xdg.path(), &shared).unwrap();
        assert_eq!(runtime_dir_from(None, tmp.path(), cache.clone()), cache.clone().unwrap().join("chokepoint/run"), "a link: passed over");
    }

    #[test]
    fn a_folder_others_may_enter_is_refused_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let private = dir.path().join("run");
        let endpoint = Endpoint::in_dir(&private, dir.path());
        endpoint.prepare().unwrap();
        assert_eq!(std::fs::metadata(&private).unwrap().permissions().mode() & 0o777, 0o700);
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o755)).unwrap();
        let refused = endpoint.check().unwrap_err().to_string();
        assert!(refused.contains("chmod 700"), "{refused}");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&private, &link).unwrap();
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(Endpoint::in_dir(&link, dir.path()).check().unwrap_err().to_string().contains("symbolic link"));
    }
}
