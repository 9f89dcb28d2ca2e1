//! The live engine's listener: one Unix socket per workspace (on Windows a named pipe, `\\.\pipe\…`), its connections accepted and read on
//! one event loop and answered on the pool's threads (`call::pool`), one request and one answer per
//! connection: a hook call to judge, an ask relayed from another worktree's hook (`relay.rs`), or a
//! question or decision about the engine's Pendings (`chokepoint approvals`). Beside it, the loopback HTTP endpoint for agents whose hooks
//! post to a URL (`http.rs`), started and stopped with it; both judge a hook call through `call.rs`.
//!
//! Who may ask, checked before the engine sees anything: only a process of the same user (the
//! endpoint's folder is 0700 and the socket 0600, and the peer's user id, which the kernel reports,
//! must be ours; on Windows the pipe's DACL grants this user alone, remote clients are rejected, and
//! the client process's token must be this user's: `chokepoint_win::pipe`). Only the listener
//! differs between the two: reading, admitting, judging and answering a request is one path. Windows
//! has no loopback HTTP endpoint yet: its token file cannot be made private to the user there. What they may send: one frame of at most [`MAX_REQUEST`] bytes (64 MiB), all of it within
//! [`READ_TIMEOUT`] (2 s) of the connection (the whole request, not each read); anything else is refused
//! and the hook judges alone (`client.rs`). How many at once: [`Limits`] (in all, per process, being
//! judged); a connection over them is refused at once, so a hook judges alone rather than waiting.

#[cfg(unix)]
use std::os::unix::fs::PermissionsExt;
#[cfg(unix)]
use std::os::unix::net::UnixListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use super::call::ASK_MARGIN;
use super::call::{self, Admission, Bound, Counters, HookCall};
pub use super::call::{Limits, ServeOptions};
use super::deciders::{self, Act, Reference, Registry};
use super::endpoint::Endpoint;
use super::error::ServeError;
use super::http::Http;
pub use super::http::READ_TIMEOUT;
use super::process::Process;
use super::protocol::{Answer, HookRequest, MAX_REQUEST, Request, write_frame};
use crate::approvals::PendingDict;
use crate::engine::engine::Engine;
use crate::model::external_events::Agent;

/// A running server; dropping it stops it and removes its socket.
#[derive(Debug)]
pub struct Server {
    endpoint: Endpoint,
    stopping: Arc<AtomicBool>,
    counters: Arc<Counters>,
    accept: Option<JoinHandle<()>>,
    /// None on Windows (the module's doc says why).
    http: Option<Http>,
    /// The socket file's inode, to remove only our own.
    #[cfg(unix)]
    inode: u64,
}

impl Server {
    /// Serves `engine` at its workspace's endpoint ([`Endpoint::for_workspace`]).
    pub fn start(engine: Arc<Engine>, options: ServeOptions) -> Result<Server, ServeError> {
        let endpoint = Endpoint::for_workspace(engine.sidecar().workspace_root());
        Server::start_at(engine, endpoint, options)
    }

    /// Serves `engine` at `endpoint`, and over HTTP on 127.0.0.1 (its URL and token in
    /// `.orchestration/serve.json`). Refused when another live server holds the socket; a socket
    /// left by a server that died is replaced.
    #[cfg(unix)]
    pub fn start_at(engine: Arc<Engine>, endpoint: Endpoint, options: ServeOptions) -> Result<Server, ServeError> {
        // A live engine shows the team's Pendings of every machine and hears their decisions.
        engine.approvals().listen(true);
        endpoint.prepare()?;
        let socket = endpoint.socket();
        if socket.exists() {
            // Without waiting: a server too busy (or stopped) to queue us is alive all the same.
            if !matches!(super::client::connect_now(socket), Err(super::client::Unanswered::NotServed(_))) {
                return Err(format!(
                    "another engine already serves this workspace at {} (a VS Code window or `chokepoint serve` on it); hooks reach that one",
                    socket.display()
                )
                .into());
            }
            std::fs::remove_file(socket)
                .map_err(|e| ServeError::from(format!("cannot remove the stale socket {}: {e}", socket.display())))?;
        }
        let listener = UnixListener::bind(socket).map_err(|e| ServeError::from(format!("cannot listen at {}: {e}", socket.display())))?;
        std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| ServeError::from(format!("cannot restrict {}: {e}", socket.display())))?;
        let inode = std::fs::metadata(socket)
            .map(|m| std::os::unix::fs::MetadataExt::ino(&m))
            .map_err(|e| ServeError::from(format!("cannot read {}: {e}", socket.display())))?;
        let stopping = Arc::new(AtomicBool::new(false));
        let counters = Arc::new(Counters::default());
        // Only once the socket is ours: a second server on the workspace never replaces the first
        // one's token file.
        let file = engine.sidecar().serve_file();
        let admission = Admission::new(options.limits);
        let http = Http::start(&engine, options.http_port, options.program, file, &stopping, &counters, &admission).inspect_err(|_| {
            let _ = std::fs::remove_file(socket);
        })?;
        let accept = std::thread::Builder::new()
            .name("chokepoint-serve".into())
            .spawn({
                let stopping = Arc::clone(&stopping);
                let shared = Shared { registry: Registry::for_server(&engine), engine, counters: Arc::clone(&counters), admission };
                move || accept_loop(listener, shared, &stopping)
            })
            .map_err(|e| ServeError::from(format!("cannot start the server thread: {e}")));
        let accept = match accept {
            Ok(accept) => accept,
            Err(e) => {
                let mut http = http;
                stopping.store(true, Ordering::Release);
                http.stop();
                return Err(e);
            }
        };
        Ok(Server { endpoint, stopping, counters, accept: Some(accept), http: Some(http), inode })
    }

    /// Serves `engine` at `endpoint`'s named pipe, created here first (`FILE_FLAG_FIRST_PIPE_INSTANCE`):
    /// refused when another server, or another user, holds the name. No HTTP endpoint (the module's
    /// doc says why).
    #[cfg(windows)]
    pub fn start_at(engine: Arc<Engine>, endpoint: Endpoint, options: ServeOptions) -> Result<Server, ServeError> {
        engine.approvals().listen(true);
        endpoint.prepare()?;
        let stopping = Arc::new(AtomicBool::new(false));
        let counters = Arc::new(Counters::default());
        let admission = Admission::new(options.limits);
        let name = endpoint.socket().to_string_lossy().into_owned();
        // Asked first, as on Unix: a live server of ours answers (Wine does not refuse a second
        // first instance; Windows does, below).
        if !matches!(super::client::connect_now(endpoint.socket()), Err(super::client::Unanswered::NotServed(_))) {
            return Err(format!(
                "another engine already serves this workspace at {name} (a VS Code window or `chokepoint serve` on it); hooks reach that one"
            )
            .into());
        }
        let (ready, listening) = std::sync::mpsc::sync_channel(1);
        let accept = std::thread::Builder::new()
            .name("chokepoint-serve".into())
            .spawn({
                let stopping = Arc::clone(&stopping);
                let shared = Shared { registry: Registry::for_server(&engine), engine, counters: Arc::clone(&counters), admission };
                move || pipe_loop(&name, shared, &stopping, &ready)
            })
            .map_err(|e| ServeError::from(format!("cannot start the server thread: {e}")))?;
        match listening.recv() {
            Ok(Ok(())) => Ok(Server { endpoint, stopping, counters, accept: Some(accept), http: None }),
            Ok(Err(why)) => {
                let _ = accept.join();
                Err(why.into())
            }
            Err(_) => {
                let _ = accept.join();
                Err("the server thread ended before it listened".to_owned().into())
            }
        }
    }

    /// Where it listens.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Where agents' HTTP hooks post: `http://127.0.0.1:<port>` (a hook's URL adds `/hook/<agent>`);
    /// empty where there is no HTTP endpoint (Windows).
    pub fn http_url(&self) -> &str {
        self.http.as_ref().map_or("", Http::url)
    }

    /// The file with the HTTP endpoint's URL and token (`.orchestration/serve.json`, 0600); empty
    /// where there is no HTTP endpoint (Windows).
    pub fn access_file(&self) -> &std::path::Path {
        self.http.as_ref().map_or(std::path::Path::new(""), Http::file)
    }

    /// Requests answered so far.
    pub fn served(&self) -> u64 {
        self.counters.served.load(Ordering::Acquire)
    }

    /// Connections refused so far (another user, a malformed, oversized or slow request, over
    /// either transport; over HTTP also a wrong token, Host or Origin).
    pub fn refused(&self) -> u64 {
        self.counters.refused.load(Ordering::Acquire)
    }

    /// Stops accepting (requests being judged finish on their threads) and removes the socket, so
    /// hooks judge alone from now on.
    pub fn stop(&mut self) {
        let Some(accept) = self.accept.take() else { return };
        self.stopping.store(true, Ordering::Release);
        // The accept loop looks at `stopping` at least every POLL.
        let _ = accept.join();
        if let Some(http) = &mut self.http {
            http.stop();
        }
        // Only our own socket: another server may have taken the path since (after someone removed
        // ours), and its socket is not ours to remove. (A pipe goes with its last handle.)
        #[cfg(unix)]
        if std::fs::metadata(self.endpoint.socket()).ok().map(|m| std::os::unix::fs::MetadataExt::ino(&m)) != Some(self.inode) {
            return;
        }
        #[cfg(unix)]
        let _ = std::fs::remove_file(self.endpoint.socket());
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// How often the accept loop looks whether it should stop while nobody connects.
const POLL: Duration = Duration::from_millis(100);

/// What every connection of one server shares.
struct Shared {
    engine: Arc<Engine>,
    registry: Option<Registry>,
    counters: Arc<Counters>,
    admission: Arc<Admission>,
}

/// Accepts and reads every connection on one event loop (this thread), so that a client sending
/// slowly costs a file descriptor and a buffer, never a thread; a request read whole within
/// [`READ_TIMEOUT`] of its connection is answered on the pool's threads (`call::pool`).
#[cfg(unix)]
fn accept_loop(listener: UnixListener, shared: Shared, stopping: &AtomicBool) {
    let Ok(runtime) = call::io_runtime() else { return };
    let shared = Arc::new(shared);
    runtime.block_on(async {
        let Ok(listener) = listener.set_nonblocking(true).and_then(|()| tokio::net::UnixListener::from_std(listener)) else { return };
        while !stopping.load(Ordering::Acquire) {
            let stream = match tokio::time::timeout(POLL, listener.accept()).await {
                Err(_) => continue,
                Ok(Ok((stream, _))) => stream,
                Ok(Err(_)) => {
                    // Out of file descriptors, say: let some close instead of spinning.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            };
            let Some(peer) = same_user(&stream) else {
                // Not even an answer: someone else's process learns nothing.
                shared.counters.count(false);
                continue;
            };
            tokio::spawn(connection(stream, peer, Arc::clone(&shared)));
        }
    });
    // Dropping the runtime closes the connections still being read; those being judged finish on
    // the pool's threads.
}

/// The named pipe's accept loop (Windows): [`accept_loop`]'s, with one listening instance of the
/// pipe at a time, a new one made as each is connected. The first instance is made here, on the
/// runtime that drives it, and `ready` says whether it could be.
#[cfg(windows)]
fn pipe_loop(name: &str, shared: Shared, stopping: &AtomicBool, ready: &std::sync::mpsc::SyncSender<Result<(), String>>) {
    use tokio::net::windows::named_pipe::ServerOptions;
    let runtime = match call::io_runtime() {
        Ok(runtime) => runtime,
        Err(e) => return drop(ready.send(Err(format!("cannot start the server's event loop: {e}")))),
    };
    let shared = Arc::new(shared);
    runtime.block_on(async {
        let options = |first: bool| {
            let mut options = ServerOptions::new();
            options.first_pipe_instance(first).reject_remote_clients(true);
            options
        };
        let mut next = match chokepoint_win::pipe::create(&options(true), name) {
            Ok(pipe) => pipe,
            // ERROR_ACCESS_DENIED: the name exists (a live server's, or someone else's).
            Err(e) if e.raw_os_error() == Some(5) => {
                return drop(ready.send(Err(format!(
                    "another engine already serves this workspace at {name} (a VS Code window or `chokepoint serve` on it), or another user took that name; hooks reach that one"
                ))));
            }
            Err(e) => return drop(ready.send(Err(format!("cannot listen at {name}: {e}")))),
        };
        let _ = ready.send(Ok(()));
        while !stopping.load(Ordering::Acquire) {
            match tokio::time::timeout(POLL, next.connect()).await {
                Err(_) => continue,
                Ok(Ok(())) => {}
                Ok(Err(_)) => {
                    // The client left before it was accepted: this instance is done with.
                    match chokepoint_win::pipe::create(&options(false), name) {
                        Ok(pipe) => next = pipe,
                        Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
                    }
                    continue;
                }
            }
            let fresh = match chokepoint_win::pipe::create(&options(false), name) {
                Ok(pipe) => pipe,
                Err(_) => {
                    // Out of handles, say: this client is dropped (it judges alone) and the
                    // instance kept for the next.
                    let _ = next.disconnect();
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            };
            let stream = std::mem::replace(&mut next, fresh);
            let Some(peer) = chokepoint_win::pipe::client_if_ours(&stream) else {
                shared.counters.count(false);
                continue;
            };
            tokio::spawn(connection(stream, peer, Arc::clone(&shared)));
        }
    });
}

/// A connection's stream as the pool's thread answers it: blocking writes.
trait Blocking: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static {
    type Writer: std::io::Write + Send + 'static;
    fn blocking(self) -> std::io::Result<Self::Writer>;
}

#[cfg(unix)]
impl Blocking for tokio::net::UnixStream {
    type Writer = std::os::unix::net::UnixStream;
    fn blocking(self) -> std::io::Result<Self::Writer> {
        self.into_std().and_then(|s| s.set_nonblocking(false).map(|()| s))
    }
}

/// A pipe instance written from a pool thread, through the accept loop's runtime (which drives its
/// I/O as long as the server runs).
#[cfg(windows)]
struct PipeWriter {
    pipe: tokio::net::windows::named_pipe::NamedPipeServer,
    runtime: tokio::runtime::Handle,
}

#[cfg(windows)]
impl std::io::Write for PipeWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        use tokio::io::AsyncWriteExt;
        self.runtime.block_on(self.pipe.write(buf))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        use tokio::io::AsyncWriteExt;
        self.runtime.block_on(self.pipe.flush())
    }
}

#[cfg(windows)]
impl Blocking for tokio::net::windows::named_pipe::NamedPipeServer {
    type Writer = PipeWriter;
    fn blocking(self) -> std::io::Result<Self::Writer> {
        Ok(PipeWriter { pipe: self, runtime: tokio::runtime::Handle::current() })
    }
}

/// One connection: admitted, read within its deadline, then answered on the pool.
async fn connection<S: Blocking>(mut stream: S, peer: u32, shared: Arc<Shared>) {
    let received = Instant::now();
    let ticket = match shared.admission.connection(peer) {
        Ok(ticket) => ticket,
        // Said at once, so that the hook judges alone instead of waiting.
        Err(busy) => return refused(stream, busy, &shared).await,
    };
    let until = tokio::time::Instant::from_std(received + READ_TIMEOUT);
    let request = match tokio::time::timeout_at(until, read_request(&mut stream)).await {
        Ok(Ok(request)) => request,
        Ok(Err(reason)) => return refused(stream, reason, &shared).await,
        Err(_) => return refused(stream, format!("the request was not whole within {} s", READ_TIMEOUT.as_secs()), &shared).await,
    };
    let judging = match shared.admission.judging() {
        Ok(judging) => judging,
        Err(busy) => return refused(stream, busy, &shared).await,
    };
    let Ok(stream) = stream.blocking() else { return shared.counters.count(false) };
    // No pool: the connection is dropped, and the hook judges alone.
    if let Ok(pool) = call::pool() {
        drop(pool.spawn_blocking(move || {
            let _held = (ticket, judging);
            shared.counters.count(serve(stream, peer, request, received, &shared));
        }));
    }
}

/// Refuses a connection before judging anything, saying why (within the read limit), and counts it.
async fn refused<S: Blocking>(mut stream: S, reason: String, shared: &Shared) {
    let _ = tokio::time::timeout(READ_TIMEOUT, send_async(&mut stream, &Answer::Refused { reason })).await;
    shared.counters.count(false);
}

/// Answers one request read whole; `false` when it was refused.
fn serve(mut stream: impl std::io::Write, peer: u32, request: Request, received: Instant, shared: &Shared) -> bool {
    let engine = Arc::clone(&shared.engine);
    let registry = shared.registry.as_ref();
    let answer = match request {
        Request::Hook(hook) => {
            // The hook's process, read while it waits for its answer; its agent is registered once
            // the answer is sent (its parent outlives it).
            let caller = Process::read(peer);
            let answer = match judge(hook, engine, received) {
                Ok(reply) => Answer::Reply(reply),
                Err(reason) => {
                    let _ = send(&mut stream, &Answer::Refused { reason });
                    return false;
                }
            };
            let sent = send(&mut stream, &answer).is_ok();
            if let (Some(registry), Some(caller)) = (registry, caller) {
                let _ = registry.remember_caller_of(&caller, Reference::this_process());
            }
            return sent;
        }
        Request::Ask(ask) => {
            // The asking hook's agent is an agent's process here too, before anyone may decide.
            if let (Some(registry), Some(caller)) = (registry, Process::read(peer)) {
                let _ = registry.remember_caller_of(&caller, Reference::this_process());
            }
            super::relay::answer(&engine, ask, received)
        }
        Request::Decide { id, decision, .. } => match deciders::check_peer(registry, peer, Act::Decide) {
            // Who decided, as the kernel says and not as the request claims.
            Ok(decider) => pendings(Request::Decide { id, decision, by: decider.by() }, &engine),
            Err(reason) => Answer::Refused { reason },
        },
        other => pendings(other, &engine),
    };
    send(&mut stream, &answer).is_ok()
}

/// A hook call, judged as `chokepoint hook` would judge it alone, except that an ask waits for a
/// person until the hook's deadline less [`ASK_MARGIN`]; `Err` when it names no agent we know.
fn judge(request: HookRequest, engine: Arc<Engine>, received: Instant) -> Result<crate::agents::reply::Reply, String> {
    let Some(agent) = Agent::from_id(&request.agent) else {
        return Err(format!("unknown agent `{}`", request.agent));
    };
    let call = HookCall {
        agent,
        event: request.event,
        input: request.input.into_bytes(),
        depth: request.depth,
        program: request.program,
        deadline: request.deadline_ms.map(Duration::from_millis),
    };
    // The hook waits only until its own deadline and then denies a gate itself (`chokepoint
    // hook`), so nothing bounds the time here.
    Ok(call::answer(&engine, call, received, Bound::Caller))
}

/// A question or decision about the engine's Pendings. A decision goes through the registry's
/// `apply_decision`, like every other decider's: only the kind's actions, only while it is open,
/// recorded in the ledger with `by`.
fn pendings(request: Request, engine: &Engine) -> Answer {
    let approvals = engine.approvals();
    let refused = |reason: String| Answer::Refused { reason };
    match request {
        Request::Pendings => Answer::Pendings { pendings: approvals.list().iter().map(PendingDict::to_json).collect() },
        Request::Pending { id } => match approvals.get(&id) {
            Some(pending) => Answer::Pending { pending: pending.to_json() },
            None => refused(format!("no pending `{id}` here: it was never opened by this engine, or was decided long ago")),
        },
        Request::Decide { by, .. } if by.trim().is_empty() => refused("a decision must say who took it (`by`)".into()),
        Request::Decide { id, decision, by } => match approvals.apply_decision(&id, &decision, &by) {
            Ok(applied) => Answer::Decided { pending: applied.pending.to_json(), text: applied.text },
            Err(e) => refused(e.to_string()),
        },
        Request::Hook(_) | Request::Ask(_) => refused("a hook call or an ask is judged, not looked up".into()),
    }
}

/// Reads one request: a frame of at most [`MAX_REQUEST`] bytes (refused on its announced length,
/// unread), its buffer grown as its bytes come rather than taken at once.
async fn read_request(stream: &mut (impl tokio::io::AsyncRead + Unpin)) -> Result<Request, String> {
    use tokio::io::AsyncReadExt;
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).await.map_err(|e| format!("the request could not be read: {e}"))?;
    let len = u32::from_be_bytes(len);
    if len > MAX_REQUEST {
        return Err(format!("the request could not be read: a frame of {len} bytes, over the limit of {MAX_REQUEST}"));
    }
    let mut body = Vec::with_capacity((len as usize).min(64 * 1024));
    let read = (&mut *stream).take(u64::from(len)).read_to_end(&mut body).await;
    match read {
        Ok(n) if n == len as usize => {}
        Ok(_) => return Err("the request could not be read: it ended early".into()),
        Err(e) => return Err(format!("the request could not be read: {e}")),
    }
    serde_json::from_slice(&body).map_err(|e| format!("the request is not one: {e}"))
}

async fn send_async(stream: &mut (impl tokio::io::AsyncWrite + Unpin), answer: &Answer) -> std::io::Result<()> {
    use tokio::io::AsyncWriteExt;
    let body = serde_json::to_vec(answer).map_err(std::io::Error::other)?;
    let len = u32::try_from(body.len()).map_err(std::io::Error::other)?;
    stream.write_all(&len.to_be_bytes()).await?;
    stream.write_all(&body).await?;
    stream.flush().await
}

fn send(stream: &mut impl std::io::Write, answer: &Answer) -> std::io::Result<()> {
    let body = serde_json::to_vec(answer).map_err(std::io::Error::other)?;
    write_frame(stream, &body)
}

/// The peer's pid when it runs as this process's user (the kernel's word, not the peer's); 0 for a
/// peer in a pid namespace this process cannot see into.
#[cfg(all(unix, not(target_vendor = "apple")))]
fn same_user(stream: &impl std::os::fd::AsFd) -> Option<u32> {
    let peer = nix::sys::socket::getsockopt(stream, nix::sys::socket::sockopt::PeerCredentials).ok()?;
    (peer.uid() == nix::unistd::getuid().as_raw()).then(|| u32::try_from(peer.pid()).unwrap_or(0))
}

/// macOS says who the peer is in two answers: its credentials (`LOCAL_PEERCRED`: the user) and its
/// pid (`LOCAL_PEERPID`), both the kernel's word as on Linux.
#[cfg(target_vendor = "apple")]
fn same_user(stream: &impl std::os::fd::AsFd) -> Option<u32> {
    use nix::sys::socket::{getsockopt, sockopt};
    let peer = getsockopt(stream, sockopt::LocalPeerCred).ok()?;
    if peer.uid() != nix::unistd::getuid().as_raw() {
        return None;
    }
    let pid = getsockopt(stream, sockopt::LocalPeerPid).ok()?;
    Some(u32::try_from(pid).unwrap_or(0))
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::net::UnixStream;

    #[test]
    fn stopping_leaves_another_servers_socket_alone() {
        let (ws, run) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let engine = Arc::new(Engine::open(ws.path()).unwrap());
        let endpoint = Endpoint::in_dir(&run.path().join("chokepoint"), ws.path());
        let mut first = Server::start_at(Arc::clone(&engine), endpoint.clone(), ServeOptions::default()).unwrap();
        assert!(
            Server::start_at(Arc::clone(&engine), endpoint.clone(), ServeOptions::default())
                .unwrap_err()
                .to_string()
                .contains("already serves")
        );
        // Someone removes the first one's socket; a second server takes the path.
        std::fs::remove_file(endpoint.socket()).unwrap();
        let second = Server::start_at(Arc::clone(&engine), endpoint.clone(), ServeOptions::default()).unwrap();
        let started = std::time::Instant::now();
        first.stop();
        assert!(started.elapsed() < Duration::from_secs(2), "stop does not wait on a socket nobody can reach");
        assert!(endpoint.socket().exists(), "the second server's socket is not the first one's to remove");
        assert!(UnixStream::connect(endpoint.socket()).is_ok());
        drop(second);
        assert!(!endpoint.socket().exists());
    }
}
