//! What goes wrong with the ledger's files or its head's database, naming the file and what failed.

use super::record::Head;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

// Defined with the record it reads, the lowest file of the ledger; named here with the others.
pub use super::record::ReadError;

/// A failure of the ledger's files or of the head's database, naming the file and what failed.
#[derive(Debug, Clone)]
pub enum LedgerError {
    Io {
        path: PathBuf,
        op: &'static str,
        source: Arc<io::Error>,
    },
    Sqlite {
        db: PathBuf,
        op: &'static str,
        source: Arc<rusqlite::Error>,
    },
    /// The state database stayed busy (another process inside a long write to it).
    Busy {
        db: PathBuf,
        waited: Duration,
    },
    /// A chain ends before, or differently from, what its head says was written: git checked out
    /// another version of it, or records were removed or rewritten. The writer does not append to it,
    /// because updating the head would erase the evidence: it begins a new chain
    /// (`Notice::LeftChain`), and `trace verify` tells which it was.
    HeadMismatch {
        ledger: PathBuf,
        head: Head,
        found_count: u64,
        found_hash: String,
    },
    /// The last line of the ledger cannot be continued from although the head vouches for it.
    Corrupt {
        ledger: PathBuf,
        detail: String,
    },
    /// A write failed and the file could not be put back to its length before it, or a sync failed
    /// (after which Linux cannot say what reached the disk): nothing more is written until the ledger
    /// is opened again (which recovers its end). Records written but never acknowledged may remain in
    /// the file, whole and chained.
    Poisoned {
        ledger: PathBuf,
        cause: Box<LedgerError>,
    },
    /// The writer has stopped: the ledger was closed, or its thread ended.
    Closed {
        ledger: PathBuf,
    },
    /// A record deferred to the writer thread could not be built (its builder panicked).
    Unrecordable {
        ledger: PathBuf,
        detail: String,
    },
}

impl fmt::Display for LedgerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LedgerError::Io { path, op, source } => write!(f, "the trace ledger: {op} {} failed: {source}", path.display()),
            LedgerError::Sqlite { db, op, source } => {
                write!(f, "the trace ledger's head in {}: {op} failed: {source}", db.display())
            }
            LedgerError::Busy { db, waited } => write!(
                f,
                "the state database {} is busy: no write got through in {} s; another process may be stuck \
                 inside a write to it",
                db.display(),
                waited.as_secs()
            ),
            LedgerError::HeadMismatch { ledger, head, found_count, found_hash } => {
                if *found_count == 0 {
                    write!(f, "the chain {} is gone or empty but its head says {} records were written", ledger.display(), head.count)
                } else if *found_count < head.count {
                    write!(
                        f,
                        "the chain {} ends at record {found_count} but its head says {} records were written",
                        ledger.display(),
                        head.count
                    )
                } else {
                    write!(
                        f,
                        "the chain {}: record {} hashes to {found_hash}, not to {} as its head says: its end was \
                         rewritten",
                        ledger.display(),
                        head.count,
                        head.hash
                    )
                }
            }
            LedgerError::Corrupt { ledger, detail } => {
                write!(f, "the trace ledger {} cannot be continued: {detail}", ledger.display())
            }
            LedgerError::Poisoned { ledger, cause } => write!(
                f,
                "the trace ledger {} is in an unknown state after a failed sync ({cause}); open it again to \
                 recover its end",
                ledger.display()
            ),
            LedgerError::Closed { ledger } => write!(f, "the trace ledger {} is closed", ledger.display()),
            LedgerError::Unrecordable { ledger, detail } => {
                write!(f, "the record for the trace ledger {} could not be built: {detail}", ledger.display())
            }
        }
    }
}

impl std::error::Error for LedgerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LedgerError::Io { source, .. } => Some(&**source),
            LedgerError::Sqlite { source, .. } => Some(&**source),
            LedgerError::Poisoned { cause, .. } => Some(&**cause),
            _ => None,
        }
    }
}

pub(crate) fn io_error<'a>(path: &'a Path, op: &'static str) -> impl FnOnce(io::Error) -> LedgerError + 'a {
    move |source| LedgerError::Io { path: path.to_owned(), op, source: Arc::new(source) }
}
