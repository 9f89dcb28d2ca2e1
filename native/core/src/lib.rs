//! `chokepoint-core`: the engine every agent action passes through.
//!
//! This crate owns the plain-data model of Chokepoint (events, decisions, configuration, intents) and
//! the logic that judges them. It deliberately knows nothing of napi, VS Code, argv or terminals: the
//! binding (`native/node`) and the CLI (`native/cli`) are thin edges that convert their own types into
//! these and back. Nothing here prints; expected failures are returned as data ([`Diagnostic`],
//! [`Decision`]), and only misuse or I/O surfaces as `Err`.
#![forbid(unsafe_code)]

mod config;
mod diagnostic;
mod engine;
mod event;
mod intents;
mod sidecar;

pub use config::{HookSpec, HooksConfig, Priority};
pub use diagnostic::Diagnostic;
pub use engine::{ConfigStatus, Decision, Engine, EngineInfo, Evaluation, FileStatus};
pub use event::{EventKind, ToolCall};
pub use intents::{Intent, IntentSet};
pub use sidecar::Sidecar;

/// The version of the engine, as built. The extension shows it and `chokepoint --version` prints it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
