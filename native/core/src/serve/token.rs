//! The HTTP endpoint's per-run secret and the file that tells an agent's hook configuration where to
//! post: `.orchestration/serve.json`, `{ "url", "token", "pid" }`, mode 0600, git-ignored (it is one of
//! `base::sidecar::RUNTIME_FILES`), written when the server starts and removed when it stops.
//!
//! Why a token at all: a loopback port, unlike the socket's folder, is open to every user of the
//! machine and to any web page the user's browser runs (which may POST to 127.0.0.1). Only a reader
//! of this file, the user, can present the token.
//!
//! The token is 32 random bytes in hex, compared in constant time, and checked on the request's head,
//! before the body is read. A client reads the file with `Access::read_live`, which refuses the file
//! of a server that is gone (as one killed with SIGKILL leaves it); the next start replaces it and the
//! stale socket.

use std::io::{Read, Write};
#[cfg(unix)]
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::ServeError;

/// What `.orchestration/serve.json` holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Access {
    /// Where the hooks post: `http://127.0.0.1:<port>` (a hook's URL adds `/hook/<agent>`).
    pub url: String,
    /// The bearer token every request must carry: 64 hex digits, new at every start.
    pub token: String,
    /// The server's process: a file whose server is gone (killed with SIGKILL, it could not remove
    /// it) is not to be trusted ([`Access::read_live`]). 0 in a file written before it was kept.
    #[serde(default)]
    pub pid: u32,
}

impl Access {
    /// Reads the file of a running server, for a client (`chokepoint doctor`, a test).
    pub fn read(file: &Path) -> Result<Access, ServeError> {
        let text = std::fs::read_to_string(file).map_err(|e| ServeError::from(format!("cannot read {}: {e}", file.display())))?;
        serde_json::from_str(&text).map_err(|e| ServeError::from(format!("{} is not a serve file: {e}", file.display())))
    }

    /// Reads the file of a server that still runs: refused when its process is gone or its port
    /// does not answer (a server killed with SIGKILL leaves its file, and the old token, behind;
    /// the next start replaces it).
    pub fn read_live(file: &Path) -> Result<Access, ServeError> {
        let access = Access::read(file)?;
        let gone = |why: &str| {
            ServeError::from(format!("the server that wrote {} is not running ({why}); start one with `chokepoint serve`", file.display()))
        };
        if access.pid == 0 || !process_exists(access.pid) {
            return Err(gone(&format!("no process {}", access.pid)));
        }
        let address: std::net::SocketAddr = access
            .url
            .strip_prefix("http://")
            .and_then(|host| host.parse().ok())
            .ok_or_else(|| ServeError::from(format!("{} names no address: `{}`", file.display(), access.url)))?;
        std::net::TcpStream::connect_timeout(&address, std::time::Duration::from_millis(500))
            .map_err(|e| gone(&format!("{address}: {e}")))?;
        Ok(access)
    }
}

#[cfg(unix)]
fn process_exists(pid: u32) -> bool {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), None) != Err(nix::errno::Errno::ESRCH)
}

/// Whether a process runs is not asked of Windows yet (no server writes the file there: it has no
/// HTTP endpoint yet, serve::server): taken as gone, so a file found there is not trusted.
#[cfg(not(unix))]
fn process_exists(_pid: u32) -> bool {
    false
}

/// A new token: 32 bytes from the kernel's random source, in hex.
pub(crate) fn new_token() -> Result<String, ServeError> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| ServeError::from(format!("cannot draw a token from /dev/urandom: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Whether `given` is `token`, in time that does not depend on where they differ (a caller timing
/// refusals learns nothing of the token but its length, which is public).
pub(crate) fn matches(given: &[u8], token: &[u8]) -> bool {
    if given.len() != token.len() {
        return false;
    }
    given.iter().zip(token).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

/// Writes `access` to `file`, readable by the user alone; created under another name and renamed
/// into place, so a reader never sees half of it and never a moment with wider permissions.
pub(crate) fn write(file: &Path, access: &Access) -> Result<(), ServeError> {
    let fail = |e: std::io::Error| ServeError::from(format!("cannot write {}: {e}", file.display()));
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    let temporary = PathBuf::from(format!("{}.{}.tmp", file.display(), std::process::id()));
    let _ = std::fs::remove_file(&temporary);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    // Windows has no mode: no server writes the file there yet (no HTTP endpoint, serve::server).
    #[cfg(unix)]
    options.mode(0o600);
    let mut out = options.open(&temporary).map_err(fail)?;
    let body = serde_json::to_vec_pretty(access).map_err(|e| fail(std::io::Error::other(e)))?;
    out.write_all(&body).and_then(|()| out.sync_all()).map_err(fail)?;
    std::fs::rename(&temporary, file).map_err(fail)
}

/// Removes `file` if it still holds `token` (another server may have written its own since).
pub(crate) fn remove(file: &Path, token: &str) {
    if Access::read(file).is_ok_and(|a| a.token == token) {
        let _ = std::fs::remove_file(file);
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn tokens_are_new_each_time_and_compared_whole() {
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
        assert!(matches(a.as_bytes(), a.as_bytes()));
        assert!(!matches(b.as_bytes(), a.as_bytes()));
        assert!(!matches(&a.as_bytes()[..63], a.as_bytes()));
        assert!(!matches(b"", a.as_bytes()));
    }

    #[test]
    fn the_file_is_the_users_alone_and_removed_only_by_its_writer() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(".orchestration/serve.json");
        let access = Access { url: "http://127.0.0.1:1".into(), token: new_token().unwrap(), pid: std::process::id() };
        write(&file, &access).unwrap();
        assert!(Access::read_live(&file).unwrap_err().to_string().contains("not running"), "nothing listens on port 1");
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(Access::read(&file).unwrap(), access);
        remove(&file, "another");
        assert!(file.exists());
        remove(&file, &access.token);
        assert!(!file.exists());
    }
}
