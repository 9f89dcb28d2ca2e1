//! Where a hook that judges alone takes an ask it cannot show anyone: the live engine of another
//! worktree of the repository (VS Code is often open on the main checkout while an agent works in a
//! linked worktree). The way there is the serve layer's (`serve::relay`, above this one, which the
//! edge hands in through [`crate::agents::hook::HookOptions::relay`]); this is only the hook's side,
//! so that `agents::hook` applies a relayed settlement exactly as it applies a local one.

use std::path::PathBuf;
use std::time::Duration;

use crate::approvals::{Ask, Settlement};
use crate::engine::engine::Engine;
use crate::model::external_events::Agent;

/// Opens a tool call's ask in a live engine that a person sees, and waits for its settlement.
pub trait AskRelay: std::fmt::Debug + Send + Sync {
    /// Relays `ask` about `agent`'s call judged by `engine` and blocks until it is decided, timed out,
    /// or the relay gives up (before the hook's own deadline). Runs only on the ask path: a call the
    /// chain allows or denies never pays for it.
    fn relay(&self, engine: &Engine, ask: Ask, agent: Agent) -> Relayed;
}

/// What became of a relayed ask.
#[derive(Debug, Clone, PartialEq)]
pub enum Relayed {
    /// No live engine of another worktree runs (or the workspace is no repository's): nobody could be
    /// asked, as before the relay.
    Nobody,
    /// The Pending `id` of the live engine of the workspace `at`, decided or timed out after `waited`
    /// (boxed: a settlement is large beside the other answers).
    Settled { id: String, settlement: Box<Settlement>, waited: Duration, at: PathBuf },
    /// A live engine was found but the relay failed (refused, broke off, answered something else):
    /// why. The fallback answers; the relay never allows by itself.
    Failed(String),
}
