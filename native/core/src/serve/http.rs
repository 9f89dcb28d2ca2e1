//! The live engine's loopback HTTP endpoint, for agents whose hooks POST to a URL instead of running
//! a process (Claude Code's `type: "http"` hooks): `POST /hook/<agent>[?event=…&deadline=…]`, the
//! hook's input as the body, the JSON the hook would print as the answer. Started with the socket
//! server (`server.rs`) and judged by the same function (`call.rs`).
//!
//! Who may ask, checked in this order before the engine sees anything, each refusal counted:
//! a request that parses as HTTP/1.x (else 400); a `Host` that is this endpoint's own, `127.0.0.1`
//! or `localhost` with its port (else 421: a web page reaching us through a rebound DNS name says its
//! own); no `Origin` at all (else 403: browsers send one, agents do not); the run's bearer token
//! (`token.rs`, else 401); `POST` (else 405) to `/hook/<an agent with HTTP hooks>` (else 404); a
//! `Content-Length` (chunked bodies are refused, 411) of at most [`MAX_REQUEST`] (else 413, unread);
//! a head of at most [`MAX_HEAD`] (else 431); the whole request within [`READ_TIMEOUT`] of its
//! connection (else 408). Connections are read on one event loop, not a thread each; those that have
//! not shown the token are at most [`Limits::unverified`](super::call::Limits), the oldest closed
//! for a new one, so another user's slow connections never keep a hook's request from being read.
//!
//! What is answered: 200 with the agent's JSON, always, once the request is accepted. An HTTP hook's
//! failure (a non-2xx status, a refused connection, a timeout) lets the call through in Claude Code,
//! so a gate we cannot judge is a 200 with a deny, and the judging is bounded here by the request's
//! deadline ([`Bound::Here`]): a late gate is denied by us before the agent's timeout lets it pass.
//! One request per connection (`Connection: close`).

use std::io::Write;
use std::net::{Ipv4Addr, TcpListener};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::call::{self, Admission, Bound, Counters, HookCall};
use super::error::ServeError;
use super::protocol::MAX_REQUEST;
use super::token::{self, Access};
use crate::engine::engine::Engine;
use crate::model::external_events::Agent;

/// The most a request's head (request line and headers) may hold.
pub const MAX_HEAD: usize = 16 * 1024;

/// How long a client may take to send its whole request (the socket's limit too).
pub const READ_TIMEOUT: Duration = Duration::from_secs(2);

/// How long the agent waits for an answer when the hook's URL does not say (`?deadline=` seconds):
/// `chokepoint hook`'s own default. The hook's `timeout` must be longer, or the agent gives up first
/// and lets the call through.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(25);

/// The agents whose hooks can POST to a URL: Claude Code (docs/agents/protocols.md). Their answer is
/// Claude's JSON (`Reply::http_body`).
const HTTP_AGENTS: [Agent; 1] = [Agent::ClaudeCode];

/// A running HTTP endpoint (stopped through the flag it shares with the socket server).
#[derive(Debug)]
pub(crate) struct Http {
    access: Access,
    file: PathBuf,
    accept: Option<JoinHandle<()>>,
}

/// What every connection is checked against.
#[derive(Debug)]
struct Gate {
    port: u16,
    token: String,
    program: Option<PathBuf>,
}

impl Http {
    /// Listens on 127.0.0.1:`port` (0: a port the system picks) and writes the URL and a new token
    /// to `file`.
    pub(crate) fn start(
        engine: &Arc<Engine>,
        port: u16,
        program: Option<PathBuf>,
        file: PathBuf,
        stopping: &Arc<AtomicBool>,
        counters: &Arc<Counters>,
        admission: &Arc<Admission>,
    ) -> Result<Http, ServeError> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, port))
            .map_err(|e| ServeError::from(format!("cannot listen on 127.0.0.1:{port} for http hooks: {e}")))?;
        let port = listener.local_addr().map(|a| a.port()).map_err(|e| ServeError::from(format!("cannot read the http port: {e}")))?;
        let access = Access { url: format!("http://127.0.0.1:{port}"), token: token::new_token()?, pid: std::process::id() };
        token::write(&file, &access)?;
        let gate = Gate { port, token: access.token.clone(), program };
        let accept = std::thread::Builder::new().name("chokepoint-http".into()).spawn({
            let stopping = Arc::clone(stopping);
            let shared = Shared {
                engine: Arc::clone(engine),
                gate,
                counters: Arc::clone(counters),
                admission: Arc::clone(admission),
                unverified: Unverified::default(),
            };
            move || accept_loop(listener, shared, &stopping)
        });
        match accept {
            Ok(accept) => Ok(Http { access, file, accept: Some(accept) }),
            Err(e) => {
                token::remove(&file, &access.token);
                Err(format!("cannot start the http server thread: {e}").into())
            }
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub(crate) fn url(&self) -> &str {
        &self.access.url
    }

    /// The file that holds the URL and the token.
    pub(crate) fn file(&self) -> &std::path::Path {
        &self.file
    }

    /// Waits for the accept loop (its flag is already set) and removes the token file.
    pub(crate) fn stop(&mut self) {
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
            token::remove(&self.file, &self.access.token);
        }
    }
}

/// How often the accept loop looks whether it should stop while nobody connects.
const POLL: Duration = Duration::from_millis(100);

/// The connections whose request has not yet shown the token, oldest first: (its number, its task).
type Unverified = Arc<std::sync::Mutex<std::collections::VecDeque<(u64, tokio::task::AbortHandle)>>>;

/// What every connection of the endpoint shares.
struct Shared {
    engine: Arc<Engine>,
    gate: Gate,
    counters: Arc<Counters>,
    admission: Arc<Admission>,
    unverified: Unverified,
}

/// Accepts and reads every connection on one event loop (this thread): a slow client costs a file
/// descriptor and a buffer, never a thread. At most [`Limits::unverified`] connections wait to show
/// the token; a new one closes the oldest of them (it had its time), so clients without the token,
/// however many, cannot keep a hook's request, which comes whole at once, from being read.
fn accept_loop(listener: TcpListener, shared: Shared, stopping: &AtomicBool) {
    let Ok(runtime) = call::io_runtime() else { return };
    let shared = Arc::new(shared);
    runtime.block_on(async {
        let Ok(listener) = listener.set_nonblocking(true).and_then(|()| tokio::net::TcpListener::from_std(listener)) else { return };
        let mut number = 0u64;
        while !stopping.load(Ordering::Acquire) {
            let (stream, peer) = match tokio::time::timeout(POLL, listener.accept()).await {
                Err(_) => continue,
                Ok(Ok(accepted)) => accepted,
                Ok(Err(_)) => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            };
            // Loopback only: the listener is bound to 127.0.0.1, and this says so again for the reader.
            if !peer.ip().is_loopback() {
                shared.counters.count(false);
                continue;
            }
            number += 1;
            let mut unverified = shared.unverified.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            while unverified.len() >= shared.admission.limits().unverified.max(1) {
                let Some((_, oldest)) = unverified.pop_front() else { break };
                oldest.abort();
                shared.counters.count(false);
            }
            // The task runs only once this loop awaits again (one thread), after it is listed.
            let task = tokio::spawn(connection(stream, number, Arc::clone(&shared)));
            unverified.push_back((number, task.abort_handle()));
        }
    });
}

/// One connection: read and checked within its deadline, then answered on the pool.
async fn connection(mut stream: tokio::net::TcpStream, number: u64, shared: Arc<Shared>) {
    let received = Instant::now();
    let _ = stream.set_nodelay(true);
    let verified = || shared.unverified.lock().unwrap_or_else(std::sync::PoisonError::into_inner).retain(|(n, _)| *n != number);
    let accepted = read_request(&mut stream, &shared.gate, received + READ_TIMEOUT, verified).await;
    verified();
    let accepted = match accepted {
        Ok(accepted) => accepted,
        Err(refusal) => {
            let _ = tokio::time::timeout(
                READ_TIMEOUT,
                write_async(&mut stream, &response(refusal.status, "text/plain; charset=utf-8", refusal.reason.as_bytes())),
            )
            .await;
            shared.counters.count(false);
            return linger(stream).await;
        }
    };
    let call = HookCall {
        agent: accepted.agent,
        event: accepted.event,
        input: accepted.body,
        depth: 0,
        program: shared.gate.program.clone(),
        deadline: Some(accepted.deadline),
    };
    let judging = match shared.admission.judging() {
        Ok(judging) => judging,
        Err(busy) => {
            // Nobody to judge it alone: an HTTP hook's failure lets the call through, so a gate is denied.
            let body = call::busy(&call, &format!("Chokepoint's live engine could not judge this call ({busy})")).http_body();
            let _ = tokio::time::timeout(READ_TIMEOUT, write_async(&mut stream, &response(200, "application/json", body.as_bytes()))).await;
            return shared.counters.count(true);
        }
    };
    let Ok(mut stream) = stream.into_std().and_then(|s| s.set_nonblocking(false).map(|()| s)) else { return shared.counters.count(false) };
    if let Ok(pool) = call::pool() {
        drop(pool.spawn_blocking(move || {
            let _judging = judging;
            let reply = call::answer(&shared.engine, call, received, Bound::Here);
            let _ = stream.write_all(&response(200, "application/json", reply.http_body().as_bytes()));
            let _ = stream.flush();
            shared.counters.count(true);
        }));
    }
}

/// A request's parts that passed every check.
#[derive(Debug)]
struct Accepted {
    agent: Agent,
    event: Option<String>,
    deadline: Duration,
    body: Vec<u8>,
}

/// A request refused before judging: its status and why.
#[derive(Debug, PartialEq, Eq)]
struct Refusal {
    status: u16,
    reason: String,
}

fn refuse(status: u16, reason: impl Into<String>) -> Refusal {
    Refusal { status, reason: reason.into() }
}

/// Reads and checks one request, all of it before `until`: the head, its checks (the token among
/// them, after which `verified` runs), then the body.
async fn read_request(stream: &mut tokio::net::TcpStream, gate: &Gate, until: Instant, verified: impl Fn()) -> Result<Accepted, Refusal> {
    let mut buf = Vec::with_capacity(4096);
    let end = loop {
        let searched = buf.len().saturating_sub(3);
        let room = MAX_HEAD + 1 - buf.len().min(MAX_HEAD);
        read_some(stream, &mut buf, room, until).await?;
        if let Some(at) = buf[searched..].windows(4).position(|w| w == b"\r\n\r\n") {
            break searched + at + 4;
        }
        if buf.len() > MAX_HEAD {
            return Err(refuse(431, format!("the request's head is over {MAX_HEAD} bytes")));
        }
    };
    // What came after the head is the body's start.
    let mut body = buf.split_off(end);
    let head = std::str::from_utf8(&buf[..end - 4]).map_err(|_| refuse(400, "the request's head is not UTF-8"))?;
    let request = Head::parse(head)?;
    let accepted = check(&request, gate)?;
    verified();
    body.truncate(accepted.length);
    if request.header("expect").is_some_and(|e| e.eq_ignore_ascii_case("100-continue")) {
        write_async(stream, b"HTTP/1.1 100 Continue\r\n\r\n").await.map_err(|e| refuse(400, format!("the connection broke: {e}")))?;
    }
    body.reserve_exact(accepted.length - body.len());
    while body.len() < accepted.length {
        let want = accepted.length - body.len();
        read_some(stream, &mut body, want, until).await?;
    }
    Ok(Accepted { agent: accepted.agent, event: accepted.event, deadline: accepted.deadline, body })
}

/// Reads at most `max` more bytes into `buf`, waiting no later than `until`.
async fn read_some(stream: &mut tokio::net::TcpStream, buf: &mut Vec<u8>, max: usize, until: Instant) -> Result<(), Refusal> {
    use tokio::io::AsyncReadExt;
    let late = || refuse(408, format!("the request took over {} s", READ_TIMEOUT.as_secs()));
    let mut chunk = [0u8; 16 * 1024];
    let max = max.min(chunk.len());
    match tokio::time::timeout_at(tokio::time::Instant::from_std(until), stream.read(&mut chunk[..max])).await {
        Err(_) => Err(late()),
        Ok(Ok(0)) => Err(refuse(400, "the request ended early")),
        Ok(Ok(n)) => {
            buf.extend_from_slice(&chunk[..n]);
            Ok(())
        }
        Ok(Err(e)) => Err(refuse(400, format!("the request could not be read: {e}"))),
    }
}

async fn write_async(stream: &mut tokio::net::TcpStream, bytes: &[u8]) -> std::io::Result<()> {
    use tokio::io::AsyncWriteExt;
    stream.write_all(bytes).await?;
    stream.flush().await
}

/// A request's line and headers.
#[derive(Debug)]
struct Head<'a> {
    method: &'a str,
    target: &'a str,
    headers: Vec<(&'a str, &'a str)>,
}

impl<'a> Head<'a> {
    fn parse(head: &'a str) -> Result<Head<'a>, Refusal> {
        let mut lines = head.split("\r\n");
        let line = lines.next().unwrap_or_default();
        let mut parts = line.split(' ');
        let (Some(method), Some(target), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
            return Err(refuse(400, "the request line is not `METHOD /path HTTP/1.1`"));
        };
        if version != "HTTP/1.1" && version != "HTTP/1.0" {
            return Err(refuse(400, format!("`{version}` is not HTTP/1.1")));
        }
        if method.is_empty() || !target.starts_with('/') {
            return Err(refuse(400, "the request line is not `METHOD /path HTTP/1.1`"));
        }
        let mut headers = Vec::new();
        for line in lines {
            let Some((name, value)) = line.split_once(':') else { return Err(refuse(400, "a header line without `:`")) };
            // A folded line (leading white space) or a name with spaces is how requests are smuggled.
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)) {
                return Err(refuse(400, format!("`{name}` is not a header name")));
            }
            headers.push((name, value.trim_matches([' ', '\t'])));
        }
        for once in ["host", "authorization", "content-length", "origin"] {
            if headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case(once)).count() > 1 {
                return Err(refuse(400, format!("more than one `{once}` header")));
            }
        }
        Ok(Head { method, target, headers })
    }

    fn header(&self, name: &str) -> Option<&'a str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| *v)
    }
}

/// What a request that passed the checks asks.
struct Checked {
    agent: Agent,
    event: Option<String>,
    deadline: Duration,
    length: usize,
}

/// The checks of the module's header, in its order.
fn check(head: &Head, gate: &Gate) -> Result<Checked, Refusal> {
    let host = head.header("host").unwrap_or_default();
    let own = [format!("127.0.0.1:{}", gate.port), format!("localhost:{}", gate.port)];
    if !own.iter().any(|h| h.eq_ignore_ascii_case(host)) {
        return Err(refuse(421, format!("this endpoint answers `127.0.0.1:{}` only, not `{host}`", gate.port)));
    }
    if head.header("origin").is_some() {
        return Err(refuse(403, "a request with an `Origin` comes from a web page, and is refused"));
    }
    let given = head.header("authorization").and_then(|a| {
        let (scheme, token) = a.split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
    });
    if !given.is_some_and(|t| token::matches(t.as_bytes(), gate.token.as_bytes())) {
        return Err(refuse(401, "a missing or wrong token: send `Authorization: Bearer <token of .orchestration/serve.json>`"));
    }
    let (path, query) = head.target.split_once('?').unwrap_or((head.target, ""));
    let Some(id) = path.strip_prefix("/hook/") else {
        return Err(refuse(404, "no such path: hooks post to /hook/<agent>"));
    };
    let Some(agent) = Agent::from_id(id).filter(|a| HTTP_AGENTS.contains(a)) else {
        return Err(refuse(
            404,
            format!("no http hooks for `{id}`: only /hook/claude; other agents run `chokepoint hook --agent <agent>`"),
        ));
    };
    if head.method != "POST" {
        return Err(refuse(405, format!("{} is not allowed: hooks POST", head.method)));
    }
    let (mut event, mut deadline) = (None, DEFAULT_DEADLINE);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("event", value)) if !value.is_empty() => event = Some(value.to_owned()),
            Some(("deadline", value)) => match value.parse::<u64>() {
                Ok(seconds @ 1..=3600) => deadline = Duration::from_secs(seconds),
                _ => return Err(refuse(400, format!("`deadline={value}` is not a number of seconds from 1 to 3600"))),
            },
            _ => return Err(refuse(400, format!("`{pair}` is not a parameter here: only `event` and `deadline`"))),
        }
    }
    if head.header("transfer-encoding").is_some() {
        return Err(refuse(411, "a body must come with a Content-Length, not a Transfer-Encoding"));
    }
    let Some(length) = head.header("content-length") else {
        return Err(refuse(411, "a body must come with a Content-Length"));
    };
    let length: u64 = length.parse().map_err(|_| refuse(400, format!("`Content-Length: {length}` is not a length")))?;
    if length > u64::from(MAX_REQUEST) {
        return Err(refuse(413, format!("a body of {length} bytes, over the limit of {MAX_REQUEST}")));
    }
    Ok(Checked { agent, event, deadline, length: length as usize })
}

/// Closes a refused connection without resetting it: a close with unread input (the body of a
/// request refused on its head) makes the kernel send a reset, which can reach the client before it
/// has read the refusal. So the answer is ended first, and what the client still sends is read and
/// dropped, at most [`LINGER_BYTES`] for at most [`LINGER`].
async fn linger(mut stream: tokio::net::TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let _ = stream.shutdown().await;
    let until = tokio::time::Instant::now() + LINGER;
    let (mut chunk, mut dropped) = ([0u8; 16 * 1024], 0);
    while dropped < LINGER_BYTES {
        match tokio::time::timeout_at(until, stream.read(&mut chunk)).await {
            Ok(Ok(0) | Err(_)) | Err(_) => return,
            Ok(Ok(n)) => dropped += n,
        }
    }
}

/// How long, and how much, a refused connection is read before it is closed ([`linger`]).
const LINGER: Duration = Duration::from_millis(250);
const LINGER_BYTES: usize = 1024 * 1024;

/// An answer's bytes: status line, headers, body.
fn response(status: u16, content_type: &str, body: &[u8]) -> Vec<u8> {
    let text = match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Content Too Large",
        421 => "Misdirected Request",
        _ => "Request Header Fields Too Large",
    };
    let extra = match status {
        401 => "WWW-Authenticate: Bearer\r\n",
        405 => "Allow: POST\r\n",
        _ => "",
    };
    let mut out = format!(
        "HTTP/1.1 {status} {text}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nCache-Control: no-store\r\n{extra}Connection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpStream;

    fn gate() -> Gate {
        Gate { port: 4000, token: "t0k".into(), program: None }
    }

    fn checked(head: &str) -> Result<Checked, Refusal> {
        check(&Head::parse(head)?, &gate())
    }

    #[test]
    fn each_check_refuses_with_its_status() {
        let good = "POST /hook/claude HTTP/1.1\r\nHost: 127.0.0.1:4000\r\nAuthorization: Bearer t0k\r\nContent-Length: 2";
        assert!(checked(good).is_ok());
        let with = |from: &str, to: &str| checked(&good.replace(from, to)).err().map(|r| r.status);
        assert_eq!(with("127.0.0.1:4000", "LOCALHOST:4000"), None);
        assert_eq!(with("127.0.0.1:4000", "evil.example:4000"), Some(421));
        assert_eq!(with("127.0.0.1:4000", "127.0.0.1:4001"), Some(421));
        assert_eq!(with("Content-Length", "Origin: http://a\r\nContent-Length"), Some(403));
        assert_eq!(with("Bearer t0k", "Bearer t0j"), Some(401));
        assert_eq!(with("Bearer t0k", "Basic t0k"), Some(401));
        assert_eq!(with("POST", "GET"), Some(405));
        assert_eq!(with("/hook/claude", "/hook/codex"), Some(404));
        assert_eq!(with("/hook/claude", "/"), Some(404));
        assert_eq!(with("/hook/claude", "/hook/claude?event=PreToolUse&deadline=5"), None);
        assert_eq!(with("/hook/claude", "/hook/claude?deadline=0"), Some(400));
        assert_eq!(with("/hook/claude", "/hook/claude?x=1"), Some(400));
        assert_eq!(with("Content-Length: 2", "Transfer-Encoding: chunked"), Some(411));
        assert_eq!(with("Content-Length: 2", "Content-Length: 99999999999"), Some(413));
        assert_eq!(with("HTTP/1.1", "HTTP/2"), Some(400));
        assert_eq!(with("Host:", "Ho st:"), Some(400));
        assert_eq!(with("Content-Length: 2", "Content-Length: 2\r\n content-length: 3"), Some(400));
        assert_eq!(with("Content-Length: 2", "Content-Length: 2\r\nHost: 127.0.0.1:4000"), Some(400));
    }

    #[test]
    #[cfg_attr(windows, ignore = "posts to the live engine's HTTP endpoint, which Windows has not yet (serve::server says why)")]
    fn a_shell_command_that_could_not_run_contained_is_refused() {
        use crate::serve::endpoint::Endpoint;
        use crate::serve::server::{ServeOptions, Server};
        let (ws, run) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let engine = Arc::new(Engine::open(ws.path()).unwrap());
        // No program: the server cannot rewrite a shell command to `<program> exec`.
        let server = Server::start_at(engine, Endpoint::in_dir(&run.path().join("c"), ws.path()), ServeOptions::default()).unwrap();
        let access = Access::read(&ws.path().join(".orchestration/serve.json")).unwrap();
        let host = access.url.strip_prefix("http://").unwrap();
        let input = serde_json::json!({
            "session_id": "s", "cwd": ws.path(), "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_input": { "command": "echo hi > a.txt" },
        })
        .to_string();
        let mut stream = TcpStream::connect(host).unwrap();
        write!(
            stream,
            "POST /hook/claude HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {}\r\nContent-Length: {}\r\n\r\n{input}",
            access.token,
            input.len()
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
        let body: serde_json::Value = serde_json::from_str(answer.split_once("\r\n\r\n").unwrap().1).unwrap();
        assert_eq!(body["hookSpecificOutput"]["permissionDecision"], "deny", "{answer}");
        assert!(body.to_string().contains("contained"), "{answer}");
        drop(server);
    }
}
