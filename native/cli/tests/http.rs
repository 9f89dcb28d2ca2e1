//! The live engine's HTTP endpoint, as Claude Code's `type: "http"` hooks reach it: a real
//! `chokepoint serve` process, real TCP connections on 127.0.0.1, the real ledger.
//!
//! A request the endpoint refuses must be refused before the engine sees it: the ledger gains no
//! record and the server's count of answered calls (printed when it stops) does not move.
// Unix-only: `chokepoint serve` from a terminal is refused on Windows, where no person can be told
// from an agent's process (serve::deciders), and Windows has no HTTP endpoint yet (serve::server);
// the live engine over Windows' named pipe, as VS Code's window serves it, is in served.rs.
#![cfg(unix)]

mod common;

use common::runtime_dir;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_chokepoint");

struct Served {
    child: Child,
    lines: mpsc::Receiver<String>,
    /// `127.0.0.1:<port>`.
    host: String,
    token: String,
}

impl Served {
    fn start(ws: &Path, runtime: &Path) -> Served {
        let mut child = Command::new(BIN)
            .args(["serve", "--workspace", ws.to_str().unwrap()])
            .env("XDG_RUNTIME_DIR", runtime)
            .stderr(Stdio::piped())
            .spawn()
            .expect("chokepoint serve starts");
        let (send, lines) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = send.send(line);
            }
        });
        let mut served = Served { child, lines, host: String::new(), token: String::new() };
        let said = served.wait_for("http hooks post to");
        let file = ws.join(".orchestration/serve.json");
        let access: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let url = access["url"].as_str().unwrap();
        assert!(said.contains(&format!("{url}/hook/claude")), "{said}");
        served.host = url.strip_prefix("http://").unwrap().to_owned();
        served.token = access["token"].as_str().unwrap().to_owned();
        served
    }

    fn wait_for(&self, text: &str) -> String {
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            match self.lines.recv_timeout(until.saturating_duration_since(Instant::now())) {
                Ok(line) if line.contains(text) => return line,
                Ok(_) => {}
                Err(e) => panic!("chokepoint serve never said `{text}`: {e}"),
            }
        }
    }

    /// Stops it as a person would; what it said last (`stopped after N calls`).
    fn terminate(mut self) -> String {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.child.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
        let line = self.wait_for("stopped after");
        assert!(self.child.wait().unwrap().success());
        line
    }

    /// A well-formed hook request for `input`, with `Authorization` of this run.
    fn request(&self, path: &str, input: &str) -> String {
        format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{input}",
            self.host,
            self.token,
            input.len()
        )
    }

    /// Sends `raw` and reads the whole answer: (status, body).
    fn send(&self, raw: &[u8]) -> (u16, String) {
        let mut stream = TcpStream::connect(&self.host).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        stream.write_all(raw).unwrap();
        read_answer(&mut stream)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read_answer(stream: &mut TcpStream) -> (u16, String) {
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("not an HTTP answer: {answer:?}"));
    let body = answer.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}

fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join(".orchestration")).unwrap();
    std::fs::create_dir_all(ws.path().join("src")).unwrap();
    std::fs::write(
        ws.path().join(".orchestration/active_intents.yaml"),
        "version: 1\nactive_intents:\n  - id: INT-1\n    name: Sources\n    status: IN_PROGRESS\n    owned_scope: ['src/**']\n",
    )
    .unwrap();
    std::fs::write(ws.path().join(".orchestration/hooks.yaml"), "version: 1\n").unwrap();
    ws
}

fn select(ws: &Path) {
    let out = Command::new(BIN)
        .args(["intent", "select", "--workspace", ws.to_str().unwrap(), "--session", "claude:s1", "INT-1"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `chokepoint hook --agent claude` with `input`, through the socket of the same server: (exit, stdout).
fn socket_hook(ws: &Path, runtime: &Path, input: &str) -> (i32, String) {
    let mut child = Command::new(BIN)
        .args(["hook", "--agent", "claude", "--workspace", ws.to_str().unwrap()])
        .env("XDG_RUNTIME_DIR", runtime)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).is_empty(), "served, not judged alone: {}", String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap(), String::from_utf8(out.stdout).unwrap())
}

fn ledger(ws: &Path) -> Vec<serde_json::Value> {
    common::ledger_text(ws).map(|t| t.lines().map(|l| serde_json::from_str(l).unwrap()).collect()).unwrap_or_default()
}

/// A record without what differs between two calls of the same judgment (time, ids, the chain).
fn judged(record: &serde_json::Value) -> serde_json::Value {
    let mut record = record.clone();
    for volatile in ["time", "prev", "seq"] {
        record.as_object_mut().unwrap().remove(volatile);
    }
    for hook in record["decision"]["hooks"].as_array_mut().unwrap() {
        hook.as_object_mut().unwrap().remove("duration_ns");
    }
    record
}

#[test]
fn a_claude_pre_tool_use_over_http_is_judged_as_over_the_socket() {
    let (ws, runtime) = (workspace(), runtime_dir());
    select(ws.path());
    let server = Served::start(ws.path(), runtime.path());
    let file = ws.path().join(".orchestration/serve.json");
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600, "only the user reads the token");
    assert_eq!(server.token.len(), 64);
    let ignored = std::fs::read_to_string(ws.path().join(".orchestration/.gitignore")).unwrap();
    assert!(ignored.lines().any(|l| l == "serve.json"), "the token is never committed: {ignored}");

    for (file, denied) in [("src/a.ts", false), ("README.md", true)] {
        let input = common::write_input(ws.path(), file);
        let before = ledger(ws.path()).len();
        let (status, body) = server.send(server.request("/hook/claude", &input).as_bytes());
        assert_eq!(status, 200, "{body}");
        let over_http = ledger(ws.path());
        assert_eq!(over_http.len(), before + 1, "one record per gate");
        let (exit, stdout) = socket_hook(ws.path(), runtime.path(), &input);
        assert_eq!(exit, 0);
        assert_eq!(body, stdout, "the same answer over HTTP and over the socket");
        let over_socket = ledger(ws.path());
        assert_eq!(over_socket.len(), before + 2);
        assert_eq!(judged(&over_http[before]), judged(&over_socket[before + 1]), "the same record");
        if denied {
            let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
            assert_eq!(answer["hookSpecificOutput"]["permissionDecision"], "deny", "{body}");
            assert!(answer["hookSpecificOutput"]["permissionDecisionReason"].as_str().unwrap().contains("scope"), "{body}");
        } else {
            assert_eq!(body, "", "a write in scope passes silently");
        }
    }
    // Input whose event cannot be read is still a 200, and stops the agent rather than letting it on.
    let (status, body) = server.send(server.request("/hook/claude", "not json").as_bytes());
    assert_eq!(status, 200);
    let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["continue"], false, "{body}");
    let said = server.terminate();
    assert!(said.contains("after 5 calls"), "{said}");
    assert!(!file.exists(), "the token goes with the server");
}

#[test]
fn bad_requests_are_refused_before_the_engine_sees_them() {
    let (ws, runtime) = (workspace(), runtime_dir());
    select(ws.path());
    let server = Served::start(ws.path(), runtime.path());
    let input = common::write_input(ws.path(), "README.md");
    let good = server.request("/hook/claude", &input);
    let before = ledger(ws.path()).len();
    let auth = format!("Authorization: Bearer {}\r\n", server.token);
    let cases: Vec<(&str, String, u16)> = vec![
        ("a wrong token", good.replace(&server.token, &"0".repeat(64)), 401),
        ("a token one digit short", good.replace(&server.token, &server.token[1..]), 401),
        ("no token", good.replace(&auth, ""), 401),
        ("another Host", good.replace(&format!("Host: {}", server.host), "Host: attacker.example"), 421),
        ("an Origin", good.replace(&auth, &format!("{auth}Origin: http://attacker.example\r\n")), 403),
        ("a GET", good.replacen("POST", "GET", 1), 405),
        ("another path", good.replacen("/hook/claude", "/admin", 1), 404),
        ("an agent without http hooks", good.replacen("/hook/claude", "/hook/gemini", 1), 404),
        ("a chunked body", good.replace("Content-Length:", "Transfer-Encoding: chunked\r\nX-Length:"), 411),
        ("a malformed request line", format!("POST /hook/claude\r\nHost: {}\r\n\r\n", server.host), 400),
        ("a header without a colon", good.replacen("Content-Type: application/json", "Content-Type application/json", 1), 400),
        ("a head over 16 KiB", good.replacen("Content-Type:", &format!("X-Pad: {}\r\nContent-Type:", "a".repeat(17 * 1024)), 1), 431),
    ];
    for (what, raw, status) in &cases {
        let (got, body) = server.send(raw.as_bytes());
        assert_eq!(got, *status, "{what}: {body}");
    }
    // Oversized: refused on its Content-Length, before any of the body is sent or read.
    let started = Instant::now();
    let huge = format!(
        "POST /hook/claude HTTP/1.1\r\nHost: {}\r\n{auth}Content-Length: {}\r\n\r\n",
        server.host,
        64 * 1024 * 1024 + 64 * 1024 + 1
    );
    let (got, _) = server.send(huge.as_bytes());
    assert_eq!(got, 413, "an oversized body");
    assert!(started.elapsed() < Duration::from_secs(1), "refused unread, at once");
    // Slow: half a request, then nothing; cut off after the read timeout (2 s).
    let started = Instant::now();
    let mut slow = TcpStream::connect(&server.host).unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    slow.write_all(&good.as_bytes()[..good.len() - 10]).unwrap();
    let (got, _) = read_answer(&mut slow);
    drop(slow);
    assert_eq!(got, 408, "a slow request");
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(1900) && waited < Duration::from_secs(4), "cut off at the read timeout: {waited:?}");

    assert_eq!(ledger(ws.path()).len(), before, "the engine judged none of them");
    // The well-formed request still works, and is the only one the server answered.
    let (got, body) = server.send(good.as_bytes());
    assert_eq!(got, 200, "{body}");
    assert_eq!(ledger(ws.path()).len(), before + 1);
    let said = server.terminate();
    assert!(said.contains("after 1 calls") && said.contains(&format!("{} refused", cases.len() + 2)), "{said}");
}

#[test]
fn a_gate_not_judged_within_the_deadline_is_denied_with_a_200() {
    let (ws, runtime) = (workspace(), runtime_dir());
    std::fs::write(
        ws.path().join(".orchestration/hooks.yaml"),
        "version: 1\nhooks:\n  PreToolUse:\n    - name: slow-gate\n      priority: critical\n      timeout: 30\n      command: [sleep, '10']\n",
    )
    .unwrap();
    select(ws.path());
    let server = Served::start(ws.path(), runtime.path());
    let started = Instant::now();
    let (status, body) = server.send(server.request("/hook/claude?deadline=1", &common::write_input(ws.path(), "src/a.ts")).as_bytes());
    assert!(started.elapsed() < Duration::from_secs(3), "answered at the deadline, not after the hook: {:?}", started.elapsed());
    assert_eq!(status, 200, "a failure of an HTTP hook would let the call through");
    let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["hookSpecificOutput"]["permissionDecision"], "deny", "{body}");
    assert!(body.contains("did not decide"), "{body}");
}

/// Another local user without the token, holding `count` slow connections to 127.0.0.1: each sends
/// the start of a request and a byte of its head every half second, and is opened again when the
/// server cuts it. At most 30 s; dropped, it closes them all.
struct SlowClients {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<usize>>,
}

impl SlowClients {
    fn start(host: &str, count: usize) -> SlowClients {
        let address: std::net::SocketAddr = host.parse().unwrap();
        assert!(address.ip().is_loopback(), "floods go to loopback only");
        let open = move || {
            let mut stream = TcpStream::connect_timeout(&address, Duration::from_millis(200)).ok()?;
            stream.set_nonblocking(true).ok()?;
            stream.write_all(format!("POST /hook/claude HTTP/1.1\r\nHost: {address}\r\n").as_bytes()).ok()?;
            Some(stream)
        };
        let mut streams: Vec<Option<TcpStream>> = (0..count).map(|_| open()).collect();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let thread = std::thread::spawn({
            let stop = std::sync::Arc::clone(&stop);
            move || {
                let (until, mut reopened) = (Instant::now() + Duration::from_secs(30), 0);
                while !stop.load(std::sync::atomic::Ordering::Acquire) && Instant::now() < until {
                    for slot in &mut streams {
                        let alive = slot.as_mut().is_some_and(|s| {
                            let mut byte = [0u8; 64];
                            // An answer (a refusal) or the end: the server is done with it.
                            let closed = s.read(&mut byte).is_ok();
                            !closed && s.write(b"X").is_ok()
                        });
                        if !alive {
                            *slot = open();
                            reopened += 1;
                        }
                    }
                    std::thread::sleep(Duration::from_millis(500));
                }
                reopened
            }
        });
        SlowClients { stop, thread: Some(thread) }
    }
}

impl Drop for SlowClients {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[test]
fn slow_connections_without_the_token_do_not_delay_a_hook() {
    let (ws, runtime) = (workspace(), runtime_dir());
    select(ws.path());
    let server = Served::start(ws.path(), runtime.path());
    let flood = SlowClients::start(&server.host, 2000);
    std::thread::sleep(Duration::from_millis(500));
    for (file, denied) in [("src/a.ts", false), ("README.md", true)] {
        let started = Instant::now();
        let (status, body) = server.send(server.request("/hook/claude?deadline=5", &common::write_input(ws.path(), file)).as_bytes());
        let took = started.elapsed();
        assert_eq!(status, 200, "{body}");
        assert!(took < Duration::from_secs(5), "answered before its deadline: {took:?}");
        if denied {
            assert!(body.contains("\"permissionDecision\":\"deny\"") && body.contains("INT-1"), "{body}");
        } else {
            assert_eq!(body, "", "a write in scope passes silently");
        }
    }
    drop(flood);
    server.terminate();
}
