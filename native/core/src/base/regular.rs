//! Opening for reading a file that an agent's action may have changed into something else. A FIFO
//! where a file was blocks a plain `open` until something writes to it (the ledger's writer reading a
//! before-image, the snapshot hashing what a command left), and a device is read without end; so the
//! open is non-blocking and the open file is refused unless it is regular.

use std::fs::{File, Metadata};
use std::io;
use std::path::Path;

/// `path` opened for reading, with its metadata, when it is a regular file; relative to `dir` when
/// one is given (a walk of `path` only: the caller holds the directory open). `dir` is for unix; on
/// other systems the caller passes `None` and a whole path.
pub fn open_regular(dir: Option<&File>, path: &Path) -> io::Result<(File, Metadata)> {
    let file = open(dir, path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::other("not a regular file (it may have changed since it was named)"));
    }
    Ok((file, meta))
}

#[cfg(unix)]
fn open(dir: Option<&File>, path: &Path) -> io::Result<File> {
    use nix::fcntl::OFlag;
    use nix::sys::stat::Mode;
    let flags = OFlag::O_RDONLY | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK | OFlag::O_NOCTTY;
    let fd = match dir {
        Some(dir) => nix::fcntl::openat(dir, path, flags, Mode::empty()),
        None => nix::fcntl::open(path, flags, Mode::empty()),
    };
    Ok(File::from(fd?))
}

#[cfg(not(unix))]
fn open(dir: Option<&File>, path: &Path) -> io::Result<File> {
    debug_assert!(dir.is_none(), "a directory to open beneath is for unix");
    File::open(path)
}
