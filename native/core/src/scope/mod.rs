//! The scope layer: the path canonicaliser (`canonical.rs`, with what Windows does to a path's text in
//! `win_names.rs`), the intents of active_intents.yaml
//! (`intents.rs`), the leases shared by every process on a workspace (`leases.rs`, and on a team's
//! PostgreSQL database for several machines, `team_leases.rs`), approved scope expansions
//! (`expansion.rs`, `team_expansions.rs`), which tools write or run shell commands, per agent (`tools.rs`), the
//! paths inside a patch (`patch.rs`), and the intent gatekeeper, the critical native hook every engine
//! registers first (`gatekeeper.rs`) with its section of hooks.yaml (`settings.rs`); who may claim a
//! task of a type (`claims.rs`); and the layer's failures (`error.rs`).

pub mod canonical;
pub mod claims;
pub mod error;
pub mod expansion;
pub mod gatekeeper;
pub mod intents;
pub mod leases;
pub mod patch;
pub mod settings;
pub mod team_expansions;
pub mod team_leases;
pub mod tools;
pub mod win_names;
