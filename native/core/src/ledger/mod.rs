//! The trace ledger: a folder of hash chains, `.orchestration/trace/<chain>.jsonl` (`chains.rs`),
//! append-only and crash-safe, recording every action, linked to intents and to content hashes of
//! what changed; committed with the project, so branches that recorded merge without a conflict; and
//! its SQLite index over every chain, rebuildable from them at any time (the chains are the source
//! of truth).
//!
//! - `record.rs`: one line, its hash chain and digests;
//! - `chains.rs`: the folder of chains, their names, the worktree's current chain, the legacy file;
//! - `ticket.rs`: the promise of one enqueued record, waited for, awaited or continued from;
//! - `writer.rs`: durable appends (fdatasync, group commit, one writer across a worktree's processes),
//!   recovery of a torn last line after a crash, a new chain when git changed the current one;
//! - `verify.rs`: the whole-file check of one chain that names the first bad record;
//! - `audit.rs`: every chain checked against the heads known here, git asked what it explains;
//! - `head.rs`: each chain's head and record count kept in SQLite and outside the workspace, so
//!   truncation is detected;
//! - `ranges.rs`: which line ranges a write changed, with their content hashes;
//! - `images.rs`: the texts of written files before and after each write, by hash, for diffs: a
//!   runtime store apart from the ledger, which never depends on it;
//! - `index.rs`: the SQLite index and its queries; `blame.rs`: who last wrote a line, by content;
//! - `activity.rs`: what each session did lately, counted in the index (the Sessions view);
//! - `export.rs`: Agent Trace v0.1;
//! - `team_copy.rs`: every durable record copied to a team's PostgreSQL database, caught up from
//!   the chains, by a live engine's thread; `team_query.rs`: every machine's records read back;
//! - `reseal.rs`: the way forward from a chain that fails verification (moved aside, a new chain
//!   begun with a record that says so);
//! - `error.rs`: what goes wrong with the ledger's files or its head's database, naming the file.

pub mod activity;
pub mod audit;
pub mod blame;
pub mod chains;
pub mod error;
pub mod export;
pub mod head;
pub mod images;
pub mod index;
pub mod ranges;
pub mod record;
pub mod reseal;
pub mod team_copy;
pub mod team_query;
pub mod ticket;
pub mod verify;
pub mod writer;

pub use record::{FileChange, GENESIS, LineRange, RECORD_VERSION, Record, RecordKind, RecordedDecision, RecordedHook};
