//! What a chain's asynchronous driver runs with besides the event: the working directory and output
//! cap of command hooks, and the embedder's own hooks. Shared by the chain and the builtins. A
//! replay's [`StandIn`] is asked first for the hooks it does not run (`engine/replay.rs`).

use crate::hooks::command::DEFAULT_OUTPUT_CAP;
use crate::hooks::priority::DEFAULT_TIMEOUT_SECS;
use crate::model::decision::{HookAnswer, HookFailure};
use crate::model::event::Event;
use std::fmt;
use std::sync::Arc;

/// Calls hooks registered by the embedder (the extension's JavaScript functions).
pub trait HostHooks: Send + Sync + fmt::Debug {
    fn call(&self, id: &str, event: &Event)
    -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<HookAnswer, HookFailure>> + Send>>;
}

/// Answers for the hooks that are not to run (a replay of the ledger judges again without the side
/// effects of command, builtin and host hooks): a hook's stand-in answer, or `None` to run it.
pub trait StandIn: Send + Sync + fmt::Debug {
    fn answer(&self, hook: &str, kind: &'static str) -> Option<Result<HookAnswer, HookFailure>>;
}

/// What the asynchronous driver needs besides the event.
#[derive(Debug, Clone)]
pub struct RunContext {
    /// The working directory of command hooks.
    pub workspace: std::path::PathBuf,
    pub output_cap: usize,
    pub host: Option<Arc<dyn HostHooks>>,
    /// How long a host hook may take.
    pub host_timeout: std::time::Duration,
    /// Consulted before a command, builtin or host hook runs; native hooks always run.
    pub stand_in: Option<Arc<dyn StandIn>>,
}

impl RunContext {
    pub fn new(workspace: impl Into<std::path::PathBuf>) -> Self {
        RunContext {
            workspace: workspace.into(),
            output_cap: DEFAULT_OUTPUT_CAP,
            host: None,
            host_timeout: std::time::Duration::from_secs(DEFAULT_TIMEOUT_SECS),
            stand_in: None,
        }
    }
}
