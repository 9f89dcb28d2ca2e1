//! `chokepoint-core`: the engine every agent action passes through.
//!
//! This crate owns the plain-data model of Chokepoint (events, decisions, configuration, intents) and
//! the logic that judges them. It deliberately knows nothing of napi, VS Code, argv or terminals: the
//! binding (`native/node`) and the CLI (`native/cli`) are thin edges that convert their own types into
//! these and back. Nothing here prints; expected failures are returned as data ([`Diagnostic`],
//! [`Decision`]), and only misuse or I/O surfaces as `Err`.
#![forbid(unsafe_code)]
//!
//! # Layers
//!
//! The crate is built in layers, each a folder that may use only the layers before it in this list
//! (`tests/layers.rs` fails on a `use` that goes the other way, and on an import circle between
//! files):
//!
//! 0. `base`: time, diagnostics, where the sidecar files live, YAML locations, SQLite busy handling;
//! 1. `model`: events and decisions, the plain data every layer above speaks;
//! 2. `budget`: token counts and compaction plans;
//! 3. `ledger`: the hash-chained trace ledger, its durable writer and its index;
//! 4. `hooks`: the ordered chain and what it runs (command hooks, builtins, templates, piped output);
//! 5. `containment`: snapshots and Landlock around a shell command;
//! 6. `scope`: canonical paths, intents, leases, scope expansions, the intent gatekeeper;
//! 7. `approvals`: one Pending model for every ask;
//! 8. `config`: hooks.yaml, composed of the sections the layers below define, and its schemas;
//! 9. `engine`: the engine that loads a workspace and judges its events, and its trace;
//! 10. `agents`: other agents' hooks, read, judged by the engine and answered in their format;
//!     the plan of their hook files, and what those files say about whether a guard can fire;
//! 11. `serve`: the live engine, answering other agents' hooks over a local socket.
//!
//! Every layer is public under its own name, and a module has one path: `chokepoint_core::scope::leases`
//! from the binding, the CLI, the tests and the benches as from inside the crate
//! (`crate::scope::leases`), so what a path depends on can be read off it. The types most callers
//! need are re-exported below, at the root.
//!
//! # Errors
//!
//! No public function returns `Result<_, String>`: each domain has its error type (`TeamError`,
//! `LedgerError`, `ScopeError`, `ApprovalError`, `EngineError`, `InputError`, `ServeError`, …), its
//! messages lower-case and naming what would have been accepted. Expected failures are data, not
//! `Err`: a bad YAML file is a `Diagnostic`, a refusal is a `Decision`.
//!
//! Benches live in `benches/` (criterion, or their own harness writing per-operation samples to
//! `target/bench-samples/` when a figure needs single-operation p99s or several processes); their
//! names are the `target/bench.json` figure names.

pub mod agents;
pub mod approvals;
pub mod base;
pub mod budget;
pub mod config;
pub mod containment;
pub mod engine;
pub mod hooks;
pub mod ledger;
pub mod model;
pub mod scope;
pub mod serve;

// The types of the engine's API.
pub use approvals::config::{ApprovalRoute, ApprovalsConfig, AskFallback, Escalation, ReviewerConfig};
pub use base::diagnostic::Diagnostic;
pub use base::sidecar::{BRAIN, Sidecar};
pub use config::hooks::{HookSpec, HooksConfig};
pub use engine::engine::Engine;
pub use engine::loaded::{ConfigStatus, EngineInfo, FileStatus, Registration};
pub use hooks::chain::{Chain, ChainHook, Evaluation, HookImpl, HostHooks, Matcher, NativeHook, NeedsAsync, Piped, RunContext, SyncError};
pub use hooks::priority::{DEFAULT_TIMEOUT_SECS, FailureMode, Priority};
pub use model::decision::{Answer, Asked, Decision, Denial, HookAnswer, HookFailure, HookOutcome, OutcomeKind};
pub use model::event::{Event, EventIds, EventKind, PathBase, ResolvedPath};
pub use scope::claims::{Allowlists, ClaimRefusal};
pub use scope::intents::{Intent, IntentSet, IntentStatus};
pub use scope::settings::{GatekeeperConfig, LandlockSetting};

/// The version of the engine, as built. The extension shows it and `chokepoint --version` prints it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
