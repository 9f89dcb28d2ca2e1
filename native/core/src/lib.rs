//! `chokepoint-core`: the engine every agent action passes through.
//!
//! This crate owns the plain-data model of Chokepoint (events, decisions, configuration, intents) and
//! the logic that judges them. It deliberately knows nothing of napi, VS Code, argv or terminals: the
//! binding (`native/node`) and the CLI (`native/cli`) are thin edges that convert their own types into
//! these and back. Nothing here prints; expected failures are returned as data ([`Diagnostic`],
//! [`Decision`]), and only misuse or I/O surfaces as `Err`.
#![forbid(unsafe_code)]

pub mod approvals;
pub mod builtin;
pub mod canonical;
mod chain;
pub mod clock;
pub mod command;
pub mod compaction;
mod config;
pub mod containment;
mod decision;
mod diagnostic;
mod engine;
mod event;
pub mod external_events;
pub mod gatekeeper;
mod intents;
pub mod leases;
pub mod ledger;
pub mod pipe;
pub mod sandbox;
pub mod schema;
pub mod scope_expansion;
mod sidecar;
pub mod snapshot;
pub mod template;
pub mod tokens;
pub mod trace;
pub mod watch;

pub use chain::{Chain, ChainHook, Evaluation, HookImpl, HostHooks, Matcher, NativeHook, NeedsAsync, Piped, RunContext, SyncError};
pub use config::{
    ApprovalRoute, ApprovalsConfig, DEFAULT_TIMEOUT_SECS, Escalation, FailureMode, GatekeeperConfig, HookSpec, HooksConfig,
    LandlockSetting, Priority, ReviewerConfig,
};
pub use decision::{Answer, Decision, Denial, HookAnswer, HookFailure, HookOutcome, OutcomeKind};
pub use diagnostic::Diagnostic;
pub use engine::{ConfigStatus, Engine, EngineInfo, FileStatus, Registration};
pub use event::{Event, EventIds, EventKind, ResolvedPath};
pub use intents::{Intent, IntentSet, IntentStatus};
pub use sidecar::Sidecar;

/// The version of the engine, as built. The extension shows it and `chokepoint --version` prints it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
