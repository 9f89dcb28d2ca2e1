//! The serve layer, the top: a workspace's engine kept loaded and answering other agents' hooks over
//! a local socket, so that a hook call costs a connection instead of a process that opens the
//! configuration, the databases and the ledger again. The extension serves its own engine while VS
//! Code runs (through the binding); `chokepoint serve` runs the same server without it; and
//! `chokepoint hook` forwards to whichever is up (`client.rs`), judging alone when none is.
//!
//! - `endpoint.rs`: where a workspace's engine listens, in a folder only its user can enter;
//! - `protocol.rs`: one request (the hook's raw input) and one answer per connection, framed;
//! - `server.rs`: the listener, who may connect, and the limits on what they send;
//! - `client.rs`: the hook's side.
//!
//! Invariant: a served answer is the answer `chokepoint hook` would give alone with the same
//! configuration (both run `agents::hook`); the server adds only who may ask and how much.

pub mod client;
pub mod endpoint;
pub mod error;
pub mod protocol;
pub mod server;
