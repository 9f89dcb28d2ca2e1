//! One hook call answered by the live engine, whichever transport brought it (the Unix socket of
//! `chokepoint hook`, or an agent's own HTTP hook): read as `chokepoint hook` reads it, judged by
//! `agents::hook::answer`, and an ask shown to a person until the caller's deadline less
//! [`ASK_MARGIN`]. The transports add only who may ask and how much; the judging is this one function.
//!
//! **Invariant: both transports judge through one function** (`answer`; the socket's `server.rs` and
//! `http.rs` only read and check). Each transport accepts and reads its connections on one event loop
//! (a thread with a current-thread runtime, `io_runtime`): a client that sends slowly costs a
//! descriptor and a buffer, never a thread. A request read whole is judged on one pool of threads kept
//! between calls (`pool`), each keeping its own single-threaded runtime for the judging
//! (`judge_here`): a thread per connection, another per deadline and a runtime per call cost about a
//! fifth of an HTTP hook's answer.
//!
//! **Invariant: the live engine cannot be starved into making a hook wait out its deadline**
//! ([`Limits`], `Admission`; pinned by `native/cli/tests/serve.rs`
//! (`a_flood_of_trickling_clients_does_not_keep_a_served_hook_from_its_answer`,
//! `a_saturated_live_engine_makes_the_hook_judge_alone_at_once`) and `native/cli/tests/http.rs`
//! (`slow_connections_without_the_token_do_not_delay_a_hook`)). The socket takes at most 512
//! connections at once, 64 per peer process, and 256 judgings over both transports; over HTTP at most
//! 256 connections may be waiting to show the token, a new one closing the oldest. A request over a
//! limit is refused at once (`Answer::Refused`, "busy"): the hook judges alone (same ledger, same
//! answer; an ask falls back at once), or over HTTP it is answered 200 with a deny. Refusals are
//! counted for both transports together.
//!
//! Over HTTP the judging is bounded here (`Bound::Here`: the URL's `?deadline=`, default
//! `http::DEFAULT_DEADLINE`, 25 s; a late gate is a deny), a reply that blocks by exit code becomes
//! `continue: false` (`Reply::http_body`), and a shell command is refused when the server does not
//! know the `chokepoint` program to contain it with. That the agent fails open when the engine is down
//! is the limit of HTTP hooks: the command hook stays the default.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::agents::bounded;
use crate::agents::hook::{HookOptions, answer as judge};
use crate::agents::reply::{self, Reply};
use crate::engine::engine::Engine;
use crate::model::external_events::Agent;

/// What a person deciding an ask leaves of the hook's deadline: the time to make the decision
/// durable, answer, and have the hook print it before it gives up and denies on its own.
pub const ASK_MARGIN: Duration = Duration::from_secs(1);

/// One hook call as a transport received it.
#[derive(Debug, Clone)]
pub(crate) struct HookCall {
    pub agent: Agent,
    /// The event, for an agent that does not name it in its input.
    pub event: Option<String>,
    /// The hook's input, as the agent sent it.
    pub input: Vec<u8>,
    /// `CHOKEPOINT_HOOK_DEPTH` of the hook's process (0 for an agent's own HTTP hook).
    pub depth: u32,
    /// The `chokepoint` program, for the commands a rewrite and a next step name.
    pub program: Option<PathBuf>,
    /// How long the caller waits for the answer from `received`: an ask waits for a person until
    /// a little before it. `None`: the fallback answers an ask at once.
    pub deadline: Option<Duration>,
}

/// Who keeps the deadline of the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bound {
    /// The caller: `chokepoint hook` denies a gate itself at its deadline, so the judging runs on
    /// the connection's thread with nothing around it.
    Caller,
    /// This side: the caller lets the call through when we are late (an HTTP hook's timeout is a
    /// non-blocking error), so the judging runs within the deadline and a late gate is denied here.
    Here,
}

/// The reply to `call`, received at `received`. Never fails: what goes wrong denies a gate.
pub(crate) fn answer(engine: &Arc<Engine>, call: HookCall, received: Instant, bound: Bound) -> Reply {
    let read = match bounded::read(call.agent, &call.input, call.event.as_deref()) {
        Err(reply) => return reply,
        Ok(read) if read.kind.is_none() => return Reply::default(),
        Ok(read) => read,
    };
    if call.program.is_none() && shell_command(engine, &read) {
        return reply::failure(
            &read,
            "Chokepoint's live engine does not know where the chokepoint program is, so it cannot run this shell command contained; start it with `chokepoint serve` (or the Chokepoint extension as installed), or use the command hook `chokepoint hook --agent claude`",
        );
    }
    let decide_by = call.deadline.map(|d| received + d.saturating_sub(ASK_MARGIN));
    let options = HookOptions { program: call.program, depth: call.depth, decide_by, relay: None, team_until: None };
    match (bound, call.deadline) {
        // Judged on another of the pool's threads while this one keeps the deadline: a judging that
        // does not end in time is denied here, and finishes on its own.
        (Bound::Here, Some(deadline)) => {
            let pool = match pool() {
                Ok(pool) => pool,
                Err(e) => return reply::failure(&read, &format!("Chokepoint could not start judging: {e}")),
            };
            let (send, receive) = std::sync::mpsc::channel();
            let (engine, judged) = (Arc::clone(engine), read.clone());
            // A panic ends the task without a reply, which `awaited` answers as a failure.
            drop(pool.spawn_blocking(move || {
                if let Ok(reply) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| judge_here(&engine, &judged, &options))) {
                    let _ = send.send(reply);
                }
            }));
            bounded::awaited(&read, deadline.saturating_sub(received.elapsed()), &receive)
        }
        // On this thread. A panic is answered as a failure, never by unwinding the server.
        _ => std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| judge_here(engine, &read, &options))).unwrap_or_else(|_| {
            reply::failure(
                &read,
                "Chokepoint's live engine crashed while judging this call (its log has the message); please report it with the hook input",
            )
        }),
    }
}

/// Judges `read` on this thread ([`run_here`]).
fn judge_here(engine: &Arc<Engine>, read: &crate::agents::input::Call, options: &HookOptions) -> Reply {
    run_here(judge(engine, read, options)).unwrap_or_else(|e| reply::failure(read, &format!("Chokepoint could not start judging: {e}")))
}

/// Runs `future` on this thread, on the runtime this thread keeps for it (a judging, a relayed ask's
/// wait); `Err` when no runtime could be built.
///
/// Why a runtime per thread of the pool, kept: building one per call (its event loop and timers)
/// cost about a tenth of an HTTP hook's answer; and a judging blocks its thread anyway (SQLite, the
/// file system), so it runs where it is, with no hand-off to another runtime's threads.
pub(crate) fn run_here<F: std::future::Future>(future: F) -> Result<F::Output, String> {
    thread_local! {
        static RUNTIME: std::cell::OnceCell<Result<tokio::runtime::Runtime, String>> = const { std::cell::OnceCell::new() };
    }
    RUNTIME.with(|runtime| {
        match runtime.get_or_init(|| tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())) {
            Ok(runtime) => Ok(runtime.block_on(future)),
            Err(e) => Err(e.clone()),
        }
    })
}

/// The threads the live engine serves connections and judges calls on, started at the first: a
/// thread per connection, and another for the judging under a deadline, were started and ended for
/// every call (with the unmapping of their stacks, a cross-core interrupt each). Idle threads are
/// kept a while and reused. Shared by every server of the process.
pub(crate) fn pool() -> Result<&'static tokio::runtime::Runtime, String> {
    static POOL: std::sync::OnceLock<Result<tokio::runtime::Runtime, String>> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        // Only its pool of blocking threads is used, which runs without anyone driving the runtime.
        tokio::runtime::Builder::new_current_thread().thread_name("chokepoint-serve").build().map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// Whether `read` is a gate on a tool that runs shell commands, which the answer would rewrite to
/// run contained (`<program> exec`): without the program, it would run uncontained.
fn shell_command(engine: &Engine, read: &crate::agents::input::Call) -> bool {
    read.kind == Some(crate::model::event::EventKind::PreToolUse)
        && crate::agents::hook::rewrites_input(read)
        && read.tool.as_deref().is_some_and(|tool| {
            matches!(engine.gatekeeper().tool_role(Some(read.agent), tool), Some(crate::scope::tools::ToolRole::Shell(_)))
        })
}

/// Counters of one server since it started, over both transports.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub served: std::sync::atomic::AtomicU64,
    pub refused: std::sync::atomic::AtomicU64,
}

impl Counters {
    /// Counts one connection: answered (`true`) or refused.
    pub fn count(&self, answered: bool) {
        let counter = if answered { &self.served } else { &self.refused };
        counter.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// How many connections a server takes at once, and from whom: what keeps room for hooks while
/// clients that send slowly, or many, are about (issue 27).
///
/// Reading a request costs no thread (both transports read on one event loop, `server.rs` and
/// `http.rs`), so these bound file descriptors and memory; judging holds a thread of the pool, so
/// [`Limits::judging`] bounds those. A request over a limit is refused at once: a hook's call then
/// judges alone (`Answer::Refused`), an HTTP hook's is denied with a 200, and neither waits out
/// its deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections open at once on the socket, being read or judged.
    pub connections: usize,
    /// Of those, from one process (the peer's pid): one busy client cannot take them all.
    pub per_peer: usize,
    /// Calls being judged at once, over both transports (an ask holds its thread until a person
    /// decides or its deadline).
    pub judging: usize,
    /// HTTP connections whose request has not yet shown the token: another user may hold these, so
    /// the oldest is closed to make room for a new one, and a hook's request (whole at once) always
    /// gets its turn.
    pub unverified: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits { connections: 512, per_peer: 64, judging: 256, unverified: 256 }
    }
}

/// How a server is started beyond its engine.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// The `chokepoint` program, for an HTTP hook's shell command run contained (`<program> exec`)
    /// and the commands its denials name; a hook through the socket sends its own. `None`: an HTTP
    /// hook's shell commands are refused (`answer` above), since they could not run contained.
    pub program: Option<PathBuf>,
    /// The HTTP endpoint's port on 127.0.0.1; 0 (the default): one the system picks.
    pub http_port: u16,
    /// How many connections and judgings it takes at once ([`Limits`]).
    pub limits: Limits,
}

/// The connections and judgings of one server, counted against its [`Limits`].
#[derive(Debug)]
pub(crate) struct Admission {
    limits: Limits,
    counts: std::sync::Mutex<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    open: usize,
    per_peer: std::collections::HashMap<u32, usize>,
    judging: usize,
}

/// One admitted connection (or judging); dropping it gives its place back.
#[derive(Debug)]
pub(crate) struct Ticket {
    admission: Arc<Admission>,
    kind: TicketKind,
}

#[derive(Debug)]
enum TicketKind {
    Connection(u32),
    Judging,
}

impl Admission {
    pub fn new(limits: Limits) -> Arc<Admission> {
        Arc::new(Admission { limits, counts: std::sync::Mutex::default() })
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A place for a connection of `peer`, or why there is none.
    pub fn connection(self: &Arc<Self>, peer: u32) -> Result<Ticket, String> {
        let mut counts = self.counts();
        if counts.open >= self.limits.connections {
            return Err(format!("the live engine is busy: {} connections are open, its limit", self.limits.connections));
        }
        let of_peer = counts.per_peer.entry(peer).or_default();
        if *of_peer >= self.limits.per_peer {
            return Err(format!(
                "the live engine is busy: process {peer} has {} connections open, its limit per process",
                self.limits.per_peer
            ));
        }
        *of_peer += 1;
        counts.open += 1;
        Ok(Ticket { admission: Arc::clone(self), kind: TicketKind::Connection(peer) })
    }

    /// A place to judge a call, or why there is none.
    pub fn judging(self: &Arc<Self>) -> Result<Ticket, String> {
        let mut counts = self.counts();
        if counts.judging >= self.limits.judging {
            return Err(format!("the live engine is busy: {} calls are being judged, its limit", self.limits.judging));
        }
        counts.judging += 1;
        Ok(Ticket { admission: Arc::clone(self), kind: TicketKind::Judging })
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut counts = self.admission.counts();
        match self.kind {
            TicketKind::Connection(peer) => {
                counts.open = counts.open.saturating_sub(1);
                if let Some(n) = counts.per_peer.get_mut(&peer) {
                    *n = n.saturating_sub(1);
                    if *n == 0 {
                        counts.per_peer.remove(&peer);
                    }
                }
            }
            TicketKind::Judging => counts.judging = counts.judging.saturating_sub(1),
        }
    }
}

/// The reply to `call` when the engine cannot take it now: a gate denied (an HTTP hook that failed
/// would let the call through), other events let on.
pub(crate) fn busy(call: &HookCall, why: &str) -> Reply {
    match bounded::read(call.agent, &call.input, call.event.as_deref()) {
        Err(reply) => reply,
        Ok(read) if read.kind.is_none() => Reply::default(),
        Ok(read) => reply::failure(&read, &format!("{why}; try again in a moment")),
    }
}

/// A current-thread runtime with its I/O and timers, on which a transport accepts and reads its
/// connections (`server.rs`, `http.rs`): one thread for every connection being read.
pub(crate) fn io_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread().enable_io().enable_time().build()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_counted_per_peer_and_in_all_and_given_back() {
        let admission = Admission::new(Limits { connections: 3, per_peer: 2, judging: 1, unverified: 1 });
        let a = admission.connection(1).unwrap();
        let _b = admission.connection(1).unwrap();
        assert!(admission.connection(1).unwrap_err().contains("per process"));
        let _c = admission.connection(2).unwrap();
        assert!(admission.connection(3).unwrap_err().contains("3 connections"));
        drop(a);
        let _d = admission.connection(3).unwrap();
        let j = admission.judging().unwrap();
        assert!(admission.judging().is_err());
        drop(j);
        assert!(admission.judging().is_ok());
    }
}
