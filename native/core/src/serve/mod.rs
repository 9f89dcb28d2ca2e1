//! The serve layer, the top of the crate: a workspace's engine kept loaded and answering other agents' hooks over
//! a local socket (and loopback HTTP, for agents whose hooks post to a URL), so that a hook call costs a connection instead of a process that opens the
//! configuration, the databases and the ledger again. The extension serves its own engine while VS
//! Code runs (through the binding); `chokepoint serve` runs the same server without it; and
//! `chokepoint hook` forwards to whichever is up (`client.rs`), judging alone when none is. The
//! Pendings its asks open live in that engine, so `chokepoint approvals` asks it about them here too.
//!
//! - `endpoint.rs`: where a workspace's engine listens, in a folder only its user can enter (on
//!   Windows a named pipe whose DACL grants its user alone);
//! - `protocol.rs`: one request (a hook's raw input, or a question or decision about the Pendings)
//!   and one answer per connection, framed;
//! - `server.rs`: the listener, who may connect, and the limits on what they send;
//! - `unserved.rs`: the server where the build has no transport (neither a Unix socket nor a named pipe),
//!   which refuses to start and says why, so that every hook judges alone;
//! - `http.rs`: the loopback HTTP endpoint beside it (Claude Code's `type: "http"` hooks), with its
//!   checks of Host, Origin, token, size and time;
//! - `token.rs`: the HTTP endpoint's per-run token and `.orchestration/serve.json`, which says where;
//! - `call.rs`: one hook call judged, whichever transport brought it;
//! - `client.rs`: the client's side;
//! - `relay.rs`: an ask a hook judged alone in another worktree of the repository, relayed to this
//!   engine, shown to a person here and answered with its settlement (both sides);
//! - `deciders.rs`: who may decide (a person, never an agent's process), from `process.rs`'s reading
//!   of `/proc`;
//! - `error.rs`: an endpoint that cannot be trusted or bound.
//!
//! Invariant: a served answer is the answer `chokepoint hook` would give alone with the same
//! configuration (both run `agents::hook`); the server adds only who may ask and how much, and the
//! time a person has to decide an ask (a hook alone has no one to show it to).

// Where nothing listens (unserved.rs), the server's side (judging a call, the HTTP endpoint, a
// relayed ask's answer, the token file) is still compiled, so that it keeps building on every
// platform for the transport to come, but nothing calls it; on Windows, the HTTP endpoint and its
// token file (server.rs says why).
#![cfg_attr(not(unix), allow(dead_code))]

mod call;
pub mod client;
pub mod deciders;
pub mod endpoint;
pub mod error;
pub mod http;
pub mod process;
pub mod protocol;
pub mod relay;
#[cfg(any(unix, windows))]
pub mod server;
// Where there is neither a Unix socket nor a named pipe, a server that refuses to start, saying why
// (unserved.rs).
#[cfg(not(any(unix, windows)))]
#[path = "unserved.rs"]
pub mod server;
pub mod token;
