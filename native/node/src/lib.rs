//! The napi-rs binding of `chokepoint-core` for the VS Code extension.
//!
//! Thin by design (see ARCHITECTURE.md): every export converts its arguments into core types, calls
//! the core, and converts the answer back. No logic lives here. Split by domain, each file holding
//! its object types next to its exports: `engine.rs` (open, reload, info, watch), `evaluate.rs`
//! (judging events), `host.rs` (JavaScript hooks), `handshake.rs` (the intent tools VS Code's agent calls), `approvals.rs` (Pendings, asks and their
//! settlement), `scope.rs` (intents, leases, expansions), `containment.rs` (contained commands),
//! `trace.rs` (the ledger read back), `replay.rs` (the ledger judged again), `sessions.rs` (the sessions on view, a lease revoked), `tokens.rs` (token counts, compaction plans). Expected
//! outcomes (a decision, a configuration diagnostic) are returned as data; errors are thrown with a
//! `code` (`errors.rs`). Every export catches panics so a bug in the core surfaces as a JavaScript
//! error instead of taking the extension host down.
#![allow(unsafe_code)] // the napi macros expand to FFI glue; this crate writes no unsafe of its own

/// See the workspace's Cargo.toml: the ledger's writer thread frees what the judge allocated. Only
/// Rust's allocations in this addon go through it; Node keeps its own.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod approvals;
mod containment;
mod engine;
mod errors;
mod evaluate;
pub mod handshake; // free functions: public so that rustc sees napi's exports as used
#[cfg(test)]
mod header;
mod host;
mod replay;
mod scope;
pub mod sessions; // agentLabel, a free function: public so that rustc sees it as used
pub mod tokens; // free functions: public so that rustc sees napi's exports as used
mod trace;

pub use engine::Engine;
use napi_derive::napi;

/// The version of the native core.
#[napi(catch_unwind)]
pub fn version() -> &'static str {
    chokepoint_core::VERSION
}

/// Does nothing. The baseline of the binding benchmarks: the cost of crossing napi and no more.
#[napi]
pub fn noop() {}
