//! The engine layer, below `agents` and `serve`: the `Engine`, one workspace opened with its stores
//! (`engine.rs`), the configuration it runs and reloads (`loaded.rs`), the judgment of every event,
//! from its start to its record (`judge.rs`), what the engine writes into the trace ledger and reads back
//! (`trace.rs`), asks from their Pending to what runs next (`settle.rs`), the configuration watcher (`watch.rs`), the
//! sessions working in the workspace with a person's revocation of a lease (`sessions.rs`), the recorded
//! tool calls judged again against another configuration (`replay.rs`), the shared brain
//! `.orchestration/CLAUDE.md` (`brain.rs`) with the lessons it renders (`lessons.rs`), merge-side runs of a
//! task's chain from CI or a merge queue (`merge.rs`), and a task claimed by an agent (`claim.rs`).

pub mod brain;
pub mod claim;
#[allow(clippy::module_inception)] // the layer's central type, in a file named for it
pub mod engine;
pub mod judge;
pub mod lessons;
pub mod loaded;
pub mod merge;
pub mod replay;
pub mod sessions;
pub mod settle;
pub mod trace;
pub mod watch;
