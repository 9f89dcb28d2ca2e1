//! The engine layer, the top: one workspace's loaded configuration and the judgment of every event, from
//! its start to its record (`judge.rs`), what the engine writes into the trace ledger and reads back
//! (`trace.rs`), asks from their Pending to what runs next (`settle.rs`), the configuration watcher (`watch.rs`), the
//! sessions working in the workspace with a person's revocation of a lease (`sessions.rs`), the recorded
//! tool calls judged again against another configuration (`replay.rs`), and the shared brain
//! `.orchestration/CLAUDE.md` (`brain.rs`) with the lessons it renders (`lessons.rs`).

pub mod brain;
pub mod judge;
pub mod lessons;
pub mod replay;
pub mod sessions;
pub mod settle;
pub mod trace;
pub mod watch;
