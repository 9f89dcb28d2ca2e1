//! The base layer: what every other layer may use and which uses nothing of the crate. Time
//! (`clock.rs`), located diagnostics of configuration files (`diagnostic.rs`), where the sidecar
//! files live (`sidecar.rs`), the YAML locations and version check every configuration file shares
//! (`yaml.rs`), and the SQLite busy handling the ledger's head and the leases share (`sqlite.rs`).

pub mod clock;
pub mod diagnostic;
pub mod error;
pub mod sidecar;
pub mod sqlite;
pub mod yaml;
