//! The base layer: what every other layer may use and which uses nothing of the crate. Time
//! (`clock.rs`), located diagnostics of configuration files (`diagnostic.rs`), where the sidecar
//! files live (`sidecar.rs`), the YAML locations and version check every configuration file shares
//! (`yaml.rs`), the SQLite busy handling the ledger's head and the leases share (`sqlite.rs`), the git repository a workspace belongs to, read from git's files (`repo.rs`), a team's PostgreSQL database shared by several machines, one connection per engine on a thread of its own (`team.rs`), and
//! opening a file that may no longer be a regular one without blocking on it (`regular.rs`); and how a
//! layer declares an error that is a sentence for a person rather than a case to match (`error.rs`),
//! and the names of the closed vocabularies that cross to the edges as strings (`names.rs`); the
//! platform's shell for a script we run ourselves, `sh` or Windows' cmd (`shell.rs`); paths as people
//! read them, without Windows' verbatim prefix (`shown.rs`); a command's process tree ended as one, a
//! process group or a Windows Job Object (`tree.rs`).

pub mod clock;
pub mod diagnostic;
pub mod error;
pub mod names;
pub mod regular;
pub mod repo;
pub mod shell;
pub mod shown;
pub mod sidecar;
pub mod sqlite;
pub mod team;
pub mod tree;
pub mod yaml;
