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
    // A pipe's name is not looked at first: that would open (and take) one of its instances.
    #[cfg(unix)]
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

/// Opens the engine's named pipe (Windows) without waiting for a free instance, as the server's own
/// user's only: a pipe of that name made by another user's process is refused, never talked to, and
/// its server may only identify us, not act as us (`SECURITY_IDENTIFICATION`).
#[cfg(windows)]
pub(crate) fn connect_now(pipe: &std::path::Path) -> Result<UnixStream, Unanswered> {
    use std::os::windows::fs::OpenOptionsExt;
    /// `SecurityIdentification << 16`; std adds `SECURITY_SQOS_PRESENT`.
    const SECURITY_IDENTIFICATION: u32 = 1 << 16;
    let opened = std::fs::OpenOptions::new().read(true).write(true).security_qos_flags(SECURITY_IDENTIFICATION).open(pipe);
    let stream = match opened {
        Ok(stream) => stream,
        // ERROR_FILE_NOT_FOUND: nobody listens.
        Err(e) if e.raw_os_error() == Some(2) => return Err(Unanswered::NotServed("no engine is serving this workspace".into())),
        // ERROR_PIPE_BUSY: every instance is taken.
        Err(e) if e.raw_os_error() == Some(231) => {
            return Err(Unanswered::Failed("the engine is busy: every instance of its pipe is taken".into()));
        }
        Err(e) => return Err(Unanswered::NotServed(format!("the engine's pipe does not answer: {e}"))),
    };
    chokepoint_win::pipe::server_if_ours(&stream)
        .map_err(|e| Unanswered::NotServed(format!("the pipe {} is not to be trusted: {e}", pipe.display())))?;
    Ok(stream)
}

/// Where the live engine has no transport (unserved.rs): no engine serves, so the hook judges alone.
#[cfg(not(any(unix, windows)))]
pub(crate) fn connect_now(_socket: &std::path::Path) -> Result<UnixStream, Unanswered> {
    Err(Unanswered::NotServed(super::endpoint::UNAVAILABLE.to_owned()))
}

/// The engine's pipe, opened as a file (Windows).
#[cfg(windows)]
type UnixStream = std::fs::File;

/// The stream type `connect_now` never returns where there is no transport: a stand-in with the
/// same reads, writes and timeouts, so that `exchange` is one function on every platform.
#[cfg(not(any(unix, windows)))]
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
    let stream = connect(endpoint)?;
    let body = serde_json::to_vec(request).map_err(|e| Unanswered::Failed(format!("the request cannot be written: {e}")))?;
    within(stream, body, timeout).map_err(|e| Unanswered::Failed(format!("the engine did not answer: {e}")))
}

/// One request and its answer on `stream`: a server too busy to take the request says so at once
/// and hangs up, maybe before the request is sent, and its answer is read all the same.
fn talk(stream: &mut (impl std::io::Read + std::io::Write), body: &[u8]) -> std::io::Result<Answer> {
    let wrote = write_frame(stream, body);
    let answer = read_frame(stream, MAX_ANSWER).map_err(|e| wrote.err().unwrap_or(e))?;
    serde_json::from_slice::<Answer>(&answer).map_err(std::io::Error::other)
}

/// [`talk`] within `timeout`, by the socket's own timeouts.
#[cfg(not(windows))]
fn within(mut stream: UnixStream, body: Vec<u8>, timeout: Duration) -> std::io::Result<Answer> {
    stream.set_write_timeout(Some(timeout))?;
    stream.set_read_timeout(Some(timeout))?;
    talk(&mut stream, &body)
}

/// [`talk`] within `timeout`: a pipe opened as a file has no timeouts, so it talks on a thread of
/// its own, left behind when the time is up (blocked until the engine answers or ends; the hook
/// process that asked ends first).
#[cfg(windows)]
fn within(mut stream: UnixStream, body: Vec<u8>, timeout: Duration) -> std::io::Result<Answer> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new().name("chokepoint-pipe".into()).spawn(move || {
        let _ = tx.send(talk(&mut stream, &body));
    })?;
    rx.recv_timeout(timeout).unwrap_or_else(|_| Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer in time")))
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
