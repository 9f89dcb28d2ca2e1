//! The ledger's files: a folder of chains, `.orchestration/trace/<chain>.jsonl`, and the worktree's
//! current chain.
//!
//! - **Why a folder of chains.** The ledger is committed with the project, and branches are merged,
//!   rebased and squashed. One file appended on two branches conflicts at every merge, and a checkout
//!   of an older branch leaves it shorter than its head. So each chain is a file of its own, appended
//!   by the writers of one worktree only: two branches that recorded add different files, which merge
//!   in any order without a conflict, and a rebase or squash carries their lines as they are (a chain
//!   depends on its lines, never on the commit that holds them).
//! - **Why names need no coordination.** A chain is named `<UTC yyyymmddThhmmssZ>-<8 hex>`: the time it
//!   began, so names sort by creation, and 32 random bits, so two worktrees (or machines) beginning a
//!   chain in the same second do not collide.
//! - **The current chain** is named in the worktree's lock file (`Sidecar::trace_lock`, ignored by
//!   git), read and written only under its `flock`, so every process of the worktree appends to the
//!   same one. A lock file that names none (a new worktree, a fresh clone) means the next batch begins
//!   a chain. Losing it (a power cut) costs only a new chain.
//! - **The legacy file.** `.orchestration/agent_trace.jsonl`, the ledger of before chains, is read as
//!   one more chain, [`LEGACY`], against its own head, and never appended again.
//! - **Other files in the folder** (a torn end moved aside, `<chain>.recovered-<ms>.jsonl`; a chain
//!   resealed, `<chain>.sealed-<ms>.jsonl`) are evidence, not chains: their names are not chain names.

use std::fs::File;
use std::hash::{BuildHasher, RandomState};
use std::io;
use std::path::{Path, PathBuf};

use crate::base::clock;
use crate::base::sidecar::Sidecar;

/// The name the legacy single file (`agent_trace.jsonl`) goes by as a chain.
pub const LEGACY: &str = "agent_trace";

/// The longest content of the lock file read as a chain's name.
const MAX_POINTER: usize = 64;

/// One chain's file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainFile {
    pub chain: String,
    pub path: PathBuf,
}

/// Whether `name` is a chain's name as [`new_name`] makes them (or [`LEGACY`]).
pub fn is_chain_name(name: &str) -> bool {
    if name == LEGACY {
        return true;
    }
    let b = name.as_bytes();
    b.len() == 25
        && b[..8].iter().all(u8::is_ascii_digit)
        && b[8] == b'T'
        && b[9..15].iter().all(u8::is_ascii_digit)
        && b[15] == b'Z'
        && b[16] == b'-'
        && b[17..].iter().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
}

/// A new chain's name: the time `now_ms` (UTC, to the second) and 32 random bits.
pub fn new_name(now_ms: u64) -> String {
    let time = clock::format_utc(now_ms);
    let digits: String = time.chars().filter(char::is_ascii_digit).collect();
    // `RandomState` is seeded from the operating system's randomness once per process and varied per
    // instance; the time and the process id keep two instances of one process apart as well.
    let random = RandomState::new().hash_one((now_ms, std::process::id(), std::thread::current().id())) as u32;
    format!("{}T{}Z-{random:08x}", &digits[..8], &digits[8..14])
}

/// The file of `chain` in `sidecar`.
pub fn path_of(sidecar: &Sidecar, chain: &str) -> PathBuf {
    if chain == LEGACY { sidecar.trace_ledger() } else { sidecar.trace_dir().join(format!("{chain}.jsonl")) }
}

/// Every chain file of `sidecar`: the legacy file first when it exists, then the folder's chains in
/// the order they began. A missing folder holds none.
pub fn list(sidecar: &Sidecar) -> io::Result<Vec<ChainFile>> {
    let mut chains = Vec::new();
    let legacy = sidecar.trace_ledger();
    if legacy.is_file() {
        chains.push(ChainFile { chain: LEGACY.to_owned(), path: legacy });
    }
    let dir = sidecar.trace_dir();
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(chains),
        Err(error) => return Err(error),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let Some(chain) = name.to_str().and_then(|n| n.strip_suffix(".jsonl")) else { continue };
        if chain != LEGACY && is_chain_name(chain) {
            found.push(ChainFile { chain: chain.to_owned(), path: entry.path() });
        }
    }
    found.sort_by(|a, b| a.chain.cmp(&b.chain));
    chains.extend(found);
    Ok(chains)
}

/// Whether `sidecar` has a ledger: the legacy file or the folder of chains (a `stat` or two; nothing
/// is created to find out).
pub fn any(sidecar: &Sidecar) -> bool {
    sidecar.trace_dir().is_dir() || sidecar.trace_ledger().exists()
}

/// The chain the lock file names (read under its lock by the writer; without it by a reader, who
/// may see it change a moment later). `None` when it names none, or something that is no chain name.
pub fn read_current(lock: &File) -> io::Result<Option<String>> {
    let mut buf = [0u8; MAX_POINTER];
    let n = read_at(lock, 0, &mut buf)?;
    let text = std::str::from_utf8(&buf[..n]).unwrap_or("").trim();
    Ok(Some(text.to_owned()).filter(|name| name != LEGACY && is_chain_name(name)))
}

/// Names `chain` in the lock file (under its lock). No sync: a name lost to a power cut costs a new
/// chain, nothing else.
pub fn write_current(lock: &File, chain: &str) -> io::Result<()> {
    let line = format!("{chain}\n");
    write_at(lock, 0, line.as_bytes())?;
    lock.set_len(line.len() as u64)
}

/// The current chain's file of `sidecar`'s worktree, as the lock file names it now; `None` before
/// the first append (or when no lock file exists).
pub fn current(sidecar: &Sidecar) -> Option<ChainFile> {
    let lock = File::open(sidecar.trace_lock()).ok()?;
    let chain = read_current(&lock).ok().flatten()?;
    Some(ChainFile { path: path_of(sidecar, &chain), chain })
}

/// Every record line of `sidecar`'s ledger: the chains in [`list`]'s order, each front to back. For
/// tests and tools that read the whole ledger of one worktree; readers that need the records of many
/// worktrees in time order use the index.
#[doc(hidden)]
pub fn all_lines(sidecar: &Sidecar) -> Vec<String> {
    let mut lines = Vec::new();
    for chain in list(sidecar).unwrap_or_default() {
        if let Ok(text) = std::fs::read_to_string(&chain.path) {
            lines.extend(text.lines().map(str::to_owned));
        }
    }
    lines
}

#[cfg(unix)]
fn read_at(file: &File, at: u64, buf: &mut [u8]) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, at)
}

#[cfg(unix)]
fn write_at(file: &File, at: u64, buf: &[u8]) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, buf, at)
}

#[cfg(not(unix))]
fn read_at(file: &File, at: u64, buf: &mut [u8]) -> io::Result<usize> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = file;
    file.seek(SeekFrom::Start(at))?;
    file.read(buf)
}

#[cfg(not(unix))]
fn write_at(file: &File, at: u64, buf: &[u8]) -> io::Result<()> {
    use std::io::{Seek, SeekFrom, Write};
    let mut file = file;
    file.seek(SeekFrom::Start(at))?;
    file.write_all(buf)
}

/// Whether `path` is the file of a chain (not the legacy file), for a caller with a path in hand.
pub fn chain_of(path: &Path) -> Option<&str> {
    let name = path.file_name()?.to_str()?.strip_suffix(".jsonl")?;
    is_chain_name(name).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sort_by_creation_and_are_recognised() {
        let a = new_name(1_795_321_805_123);
        let b = new_name(1_795_321_806_000);
        assert!(a.starts_with("20261122T043005Z-"), "{a}");
        assert!(is_chain_name(&a) && is_chain_name(&b) && a < b);
        assert_ne!(new_name(1), new_name(1), "two chains begun at one moment have different names");
        for bad in ["", "x", "20261122T043005Z-1234567", "20261122T043005Z-1234567g", "a.recovered-1", "20261122T043005Z-12345678.sealed-1"]
        {
            assert!(!is_chain_name(bad), "{bad}");
        }
    }
}
