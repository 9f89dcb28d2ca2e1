//! The client's side: a hook handing its call to the workspace's live engine when one is up, and
//! `chokepoint approvals` asking it about its Pendings.
//!
//! A hook that finds no engine (no socket, nobody listening, a folder it cannot trust) judges alone;
//! so does one whose request was refused or whose connection broke early. Only the caller knows
//! whether time is left for that, so a failure is returned, never answered here.

#[cfg(unix)]
use std::os::unix::net::UnixStream;
use std::time::Duration;

use super::endpoint::Endpoint;
use super::protocol::{Answer, HookRequest, MAX_ANSWER, Request, read_frame, write_frame};
use crate::agents::reply::Reply;

/// What became of a forwarded call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Forwarded {
    /// The engine answered.
    Answered(Reply),
    /// No engine serves this workspace (or its endpoint is not to be trusted): judge alone.
    NotServed(String),
    /// An engine was reached but did not answer (it refused the request, or broke off): judge alone
    /// if there is time.
    Failed(String),
}

/// Whether an engine serves the workspace of `endpoint` now: `Err` says why not (for `chokepoint
/// doctor`). Connects and hangs up without a request, which the server counts as refused.
pub fn probe(endpoint: &Endpoint) -> Result<(), String> {
    connect(endpoint).map(drop).map_err(|(Unanswered::NotServed(why) | Unanswered::Failed(why))| why)
}

/// A connection to the engine at `endpoint`, once its folder is one to trust; `Err` says why not.
fn connect(endpoint: &Endpoint) -> Result<UnixStream, Unanswered> {
    if !endpoint.socket().exists() {
        return Err(Unanswered::NotServed("no engine is serving this workspace".into()));
    }
    endpoint.check().map_err(|e| Unanswered::NotServed(e.to_string()))?;
    connect_now(endpoint.socket())
}

/// Connects without waiting: a connection the server has no room to queue (it is stopped, or its
/// accepting is stuck) is refused at once instead of blocking the hook past its deadline, when its
/// agent would let the call through.
#[cfg(unix)]
pub(crate) fn connect_now(socket: &std::path::Path) -> Result<UnixStream, Unanswered> {
    use nix::sys::socket::{AddressFamily, SockFlag, SockType, UnixAddr, connect, socket as new_socket};
    let fail = |e: nix::Error| Unanswered::NotServed(format!("the engine's socket does not answer: {}", std::io::Error::from(e)));
    #[cfg(not(target_vendor = "apple"))]
    let fd = new_socket(AddressFamily::Unix, SockType::Stream, SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC, None).map_err(fail)?;
    // macOS has no flags at `socket()`: the same two are set before the connect, on the one thread
    // that holds the descriptor (a `fork` elsewhere in the process could still inherit it meanwhile;
    // a hook process forks nothing while it connects).
    #[cfg(target_vendor = "apple")]
    let fd = {
        use nix::fcntl::{FcntlArg, FdFlag, OFlag, fcntl};
        let fd = new_socket(AddressFamily::Unix, SockType::Stream, SockFlag::empty(), None).map_err(fail)?;
        fcntl(&fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).map_err(fail)?;
        fcntl(&fd, FcntlArg::F_SETFL(OFlag::O_NONBLOCK)).map_err(fail)?;
        fd
    };
    let address = UnixAddr::new(socket).map_err(fail)?;
    match connect(std::os::fd::AsRawFd::as_raw_fd(&fd), &address) {
        Ok(()) => {}
        Err(nix::errno::Errno::EAGAIN) => {
            return Err(Unanswered::Failed("the engine is busy: its socket's queue is full (is it stopped?)".into()));
        }
        Err(e) => return Err(fail(e)),
    }
    let stream = UnixStream::from(fd);
    stream.set_nonblocking(false).map_err(|e| Unanswered::Failed(format!("the engine's socket does not answer: {e}")))?;
    Ok(stream)
}

/// Where the live engine has no transport (unserved.rs): no engine serves, so the hook judges alone.
#[cfg(not(unix))]
pub(crate) fn connect_now(_socket: &std::path::Path) -> Result<UnixStream, Unanswered> {
    Err(Unanswered::NotServed(super::endpoint::UNAVAILABLE.to_owned()))
}

/// The stream type `connect_now` never returns where there is no Unix socket: a stand-in with the
/// same reads, writes and timeouts, so that `exchange` is one function on every platform.
#[cfg(not(unix))]
type UnixStream = std::net::TcpStream;

/// Why a request had no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unanswered {
    /// No engine serves this workspace (or its endpoint is not to be trusted).
    NotServed(String),
    /// An engine was reached but broke off, or did not answer in time.
    Failed(String),
}

/// Sends `request` to the engine at `endpoint` and waits at most `timeout` for its answer.
pub fn exchange(endpoint: &Endpoint, request: &Request, timeout: Duration) -> Result<Answer, Unanswered> {
    let mut stream = connect(endpoint)?;
    let sent = (|| {
        stream.set_write_timeout(Some(timeout))?;
        stream.set_read_timeout(Some(timeout))?;
        let body = serde_json::to_vec(request).map_err(std::io::Error::other)?;
        // A server too busy to take the request says so at once and hangs up, maybe before the
        // request is sent: its answer is read all the same.
        let wrote = write_frame(&mut stream, &body);
        let answer = read_frame(&mut stream, MAX_ANSWER).map_err(|e| wrote.err().unwrap_or(e))?;
        serde_json::from_slice::<Answer>(&answer).map_err(std::io::Error::other)
    })();
    sent.map_err(|e| Unanswered::Failed(format!("the engine did not answer: {e}")))
}

/// Hands a hook call to the engine at `endpoint` and waits at most `timeout` for its reply.
pub fn forward(endpoint: &Endpoint, request: HookRequest, timeout: Duration) -> Forwarded {
    match exchange(endpoint, &Request::Hook(request), timeout) {
        Ok(Answer::Reply(reply)) => Forwarded::Answered(reply),
        Ok(Answer::Refused { reason }) => Forwarded::Failed(format!("the engine refused the call: {reason}")),
        Ok(_) => Forwarded::Failed("the engine answered something else than a reply".into()),
        Err(Unanswered::NotServed(why)) => Forwarded::NotServed(why),
        Err(Unanswered::Failed(why)) => Forwarded::Failed(why),
    }
}
