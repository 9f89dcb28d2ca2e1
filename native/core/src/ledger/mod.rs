//! The trace ledger: `.orchestration/agent_trace.jsonl`, an append-only, hash-chained, crash-safe
//! record of every action, linked to intents and to content hashes of what changed; and its SQLite
//! index, rebuildable from the ledger at any time (the ledger is the source of truth).
//!
//! - `record.rs`: one line, its hash chain and digests;
//! - `ticket.rs`: the promise of one enqueued record, waited for, awaited or continued from;
//! - `writer.rs`: durable appends (fdatasync, group commit, one writer across processes), recovery of a
//!   torn last line after a crash;
//! - `verify.rs`: the whole-file check that names the first bad record;
//! - `head.rs`: the chain head and record count kept in SQLite, so truncation is detected;
//! - `ranges.rs`: which line ranges a write changed, with their content hashes;
//! - `index.rs`: the SQLite index and its queries; `blame.rs`: who last wrote a line, by content;
//! - `activity.rs`: what each session did lately, counted in the index (the Sessions view);
//! - `export.rs`: Agent Trace v0.1;
//! - `reseal.rs`: the way forward from a ledger that fails verification (moved aside, a new chain
//!   begun with a record that says so).

pub mod activity;
pub mod audit;
pub mod blame;
pub mod chains;
pub mod error;
pub mod export;
pub mod head;
pub mod index;
pub mod ranges;
pub mod record;
pub mod reseal;
pub mod ticket;
pub mod verify;
pub mod writer;

pub use record::{FileChange, GENESIS, LineRange, RECORD_VERSION, Record, RecordKind, RecordedDecision, RecordedHook};
