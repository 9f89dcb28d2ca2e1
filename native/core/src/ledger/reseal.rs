//! The way forward from a ledger that fails verification: reseal its failing chain.
//!
//! A chain that was edited, truncated or rewritten fails `trace verify` (`audit.rs`) for as long as it
//! is there (the writer has left it for a new chain, so the gates keep working). Repairing it in
//! place would erase the evidence; deleting it would lose the record. Resealing does neither:
//!
//! - under the ledger's lock (so no process of this worktree appends meanwhile), the first failing
//!   chain's file is moved aside to `<chain>.sealed-<unix ms>.jsonl`, byte for byte (no longer a chain
//!   by its name), and its folder synced (a removed chain leaves nothing to move: the record says
//!   `sealed_file: null`);
//! - its head is cleared, in the state database and outside the workspace (`head::HeadCopy`), and a
//!   new chain begins with one record (`kind: external`, `tool: "chokepoint trace reseal"`) that
//!   names the sealed chain and file, its SHA-256, what verification found, the head it
//!   contradicted, who resealed it and why — synced, its head set and the chain named the
//!   worktree's current one before the lock is released;
//! - writers in other processes follow the new chain at their next batch (the lock file names it);
//!   the index drops the sealed chain's rows and indexes the new one when next read.
//!
//! An intact ledger is never resealed ([`ResealError::Intact`]): resealing is for tampering, and a
//! way to start over at will would make the chain worthless. Records git explains as not in this
//! checkout are not tampering, and are never resealed.

use std::fmt;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;

use super::audit::verify_ledger;
use super::chains::{new_name, write_current};
use super::head::{self, HeadStore};
use super::record::{GENESIS, Record, RecordKind, line_hash, sha256_hex};
// The writer's own helpers: the same lock, the same error shape, the same folder sync.
use super::error::{LedgerError, io_error};
use super::writer::{lock_exclusive, sync_dir};
use crate::base::clock;
use crate::base::sidecar::Sidecar;

/// What a reseal did.
#[derive(Debug, Clone, PartialEq)]
pub struct Resealed {
    /// The chain resealed.
    pub chain: String,
    /// Where the tampered chain now is; `None` when it had been removed (nothing to move aside).
    pub sealed: Option<PathBuf>,
    /// SHA-256 (hex) of the sealed file's bytes, as recorded in the new ledger's first record.
    pub sealed_sha256: Option<String>,
    /// What verification found, as recorded.
    pub problem: String,
    /// The new chain, and its first record.
    pub new_chain: String,
    pub first: Record,
}

#[derive(Debug)]
pub enum ResealError {
    /// The ledger verifies against its head: there is nothing to reseal.
    Intact {
        records: u64,
    },
    /// A reason is required: the record says why the chain was restarted.
    NoReason,
    Ledger(LedgerError),
}

impl fmt::Display for ResealError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResealError::Intact { records } => {
                write!(f, "the ledger is intact ({records} records, matching its heads): there is nothing to reseal")
            }
            ResealError::NoReason => f.write_str("a reseal needs a reason: it is recorded as the first record of the new ledger"),
            ResealError::Ledger(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ResealError {}

impl From<LedgerError> for ResealError {
    fn from(e: LedgerError) -> Self {
        ResealError::Ledger(e)
    }
}

/// Moves the first chain that fails verification aside and starts a new chain whose first record
/// says so. `by` names who resealed it (a user name, `ci`); `reason` is required.
pub fn reseal(sidecar: &Sidecar, reason: &str, by: &str) -> Result<Resealed, ResealError> {
    if reason.trim().is_empty() {
        return Err(ResealError::NoReason);
    }
    let lock_path = sidecar.trace_lock();
    let lock = crate::base::sidecar::owner_only(OpenOptions::new().read(true).write(true).create(true).truncate(false))
        .open(&lock_path)
        .map_err(io_error(&lock_path, "open the lock file"))?;
    let _locked = lock_exclusive(&lock, &lock_path)?;
    let mut heads = HeadStore::for_sidecar(sidecar)?;
    let audit = verify_ledger(sidecar)?;
    let Some((failing, problem)) = audit.first_problem() else {
        return Err(ResealError::Intact { records: audit.records() });
    };
    let (chain, ledger, problem) = (failing.chain.clone(), failing.path.clone(), problem.clone());
    let verification = failing.verification.clone();
    let previous_head = heads.read(&chain)?;
    let now = clock::now_ms();
    let dir = ledger.parent().map(std::path::Path::to_path_buf).unwrap_or_default();
    // A ledger that was removed leaves nothing to move aside: the new chain's first record says so.
    let (sealed, sealed_sha256) = match std::fs::read(&ledger) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => (None, None),
        Err(source) => return Err(io_error(&ledger, "read")(source).into()),
        Ok(bytes) => {
            let stem = ledger.file_stem().unwrap_or_default().to_string_lossy().into_owned();
            let mut sealed = dir.join(format!("{stem}.sealed-{now}.jsonl"));
            let mut n = 1;
            while sealed.exists() {
                sealed = dir.join(format!("{stem}.sealed-{now}-{n}.jsonl"));
                n += 1;
            }
            // A rename keeps the bytes as they were found (and is atomic): the evidence is not copied, moved.
            std::fs::rename(&ledger, &sealed).map_err(io_error(&ledger, "move aside"))?;
            sync_dir(&dir).map_err(io_error(&dir, "sync the folder"))?;
            (Some(sealed), Some(sha256_hex(&bytes)))
        }
    };
    // Both heads, the database's and the copy outside the workspace.
    heads.clear(&chain)?;

    let mut first = Record::new(RecordKind::External);
    first.seq = 1;
    first.time = clock::format_utc(now);
    first.prev = GENESIS.to_owned();
    first.agent = Some(by.to_owned());
    first.tool = Some("chokepoint trace reseal".to_owned());
    first.data = Some(serde_json::json!({
        "resealed": {
            "sealed_chain": chain,
            "sealed_file": sealed.as_ref().and_then(|s| s.file_name()).map(|n| n.to_string_lossy().into_owned()),
            "sealed_sha256": sealed_sha256,
            "sealed_records": verification.records,
            "problem": problem.to_string(),
            "previous_head": previous_head.as_ref().map(|h| serde_json::json!({ "count": h.count, "hash": h.hash })),
            "reason": reason,
            "by": by,
        }
    }));
    let line = first.to_line();
    let folder = sidecar.trace_dir();
    std::fs::create_dir_all(&folder).map_err(io_error(&folder, "create the folder"))?;
    let (new_chain, path, mut file) = loop {
        let name = new_name(now);
        let path = folder.join(format!("{name}.jsonl"));
        match crate::base::sidecar::owner_only(OpenOptions::new().append(true).create_new(true)).open(&path) {
            Ok(file) => break (name, path, file),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(source) => return Err(io_error(&path, "create")(source).into()),
        }
    };
    file.write_all(format!("{line}\n").as_bytes()).and_then(|()| file.sync_data()).map_err(io_error(&path, "write the first record of"))?;
    sync_dir(&folder).map_err(io_error(&folder, "sync the folder"))?;
    heads.write(&new_chain, 1, &line_hash(&line), now)?;
    write_current(&lock, &new_chain).map_err(io_error(&lock_path, "name the current chain in"))?;
    debug_assert_eq!(head::read(&sidecar.state_db(), &new_chain).ok().flatten().map(|h| h.count), Some(1));
    Ok(Resealed { chain, sealed, sealed_sha256, problem: problem.to_string(), new_chain, first })
}
