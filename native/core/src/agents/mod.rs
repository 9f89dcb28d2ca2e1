//! The agents layer, below only `serve`: other agents' hooks (Claude Code, Codex, Gemini CLI, Copilot CLI,
//! Cursor, VS Code's agent) answered by the same engine as our own agent. An agent's hook input is
//! read into one shape (`input.rs`), judged through the workspace's chain with the external agent's
//! needs met (`hook.rs`: contained shell commands (`shell.rs`), the handshake's next step, the rules
//! at session start (`context.rs`)), and answered in that agent's format and exit codes
//! (`reply.rs`); `bounded.rs` takes a call from its bytes to its reply within a deadline, for the
//! hook process and the live engine alike; `relay.rs` is the hook's side of taking an ask it judged
//! alone to another worktree's live engine. No argv, no process: the CLI's `chokepoint hook` reads stdin and prints the
//! [`reply::Reply`]; a live engine can answer the same calls.
//!
//! The intent handshake's tools (`handshake.rs`: list, select, context, expansion) are answered here
//! once, for the MCP server (`chokepoint mcp`) and the extension's language model tools alike.
//!
//! Setting an agent up is here too, as data: `setup.rs` plans the agent's files (`chokepoint init`)
//! on an order-keeping JSON document (`json.rs`), and `inspect.rs` reads them back for `chokepoint
//! doctor` (why a guard cannot fire, and the synthetic call it sends the gate); `portable.rs` is how
//! a committed setting finds `chokepoint` on any machine (the shell guard in front of every hook).
//! `error.rs`: a hook input that cannot be read.

pub mod bounded;
pub mod context;
pub mod error;
pub mod handshake;
pub mod hook;
pub mod input;
pub mod inspect;
pub mod json;
pub mod portable;
pub mod relay;
pub mod reply;
pub mod setup;
pub mod shell;
