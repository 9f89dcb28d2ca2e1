//! `chokepoint serve` and `chokepoint hook` handing calls to it: a real server process, real hook
//! processes, a real socket.
//!
//! How a test tells a served answer from a local one: the server keeps the last configuration that
//! loaded, while a hook judging alone reads the files again. So after hooks.yaml breaks, the served
//! hook still allows a write in scope and `--local` denies it naming the file.
// Unix-only: `chokepoint serve` from a terminal is refused on Windows, where no person can be told
// from an agent's process (serve::deciders), and Windows has no HTTP endpoint yet (serve::server);
// the live engine over Windows' named pipe, as VS Code's window serves it, is in served.rs.
#![cfg(unix)]

mod common;

use common::runtime_dir;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_chokepoint");

struct Served {
    child: Child,
    lines: mpsc::Receiver<String>,
    socket: PathBuf,
}

impl Served {
    /// Starts `chokepoint serve` and waits for it to say where it listens.
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
        let mut served = Served { child, lines, socket: PathBuf::new() };
        let line = served.wait_for(" at ");
        served.socket = PathBuf::from(line.split(" at ").nth(1).unwrap().split(" (").next().unwrap());
        served
    }

    /// The next line of its stderr that contains `text` (the lines before it are dropped).
    fn wait_for(&self, text: &str) -> String {
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.contains(text) => return line,
                Ok(_) => {}
                Err(e) => panic!("chokepoint serve never said `{text}`: {e}"),
            }
        }
    }

    fn terminate(mut self) -> std::process::ExitStatus {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(self.child.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
        let status = self.child.wait().unwrap();
        if !status.success() {
            // What it said on the way out, for the failure's message.
            for line in self.lines.try_iter() {
                eprintln!("chokepoint serve: {line}");
            }
        }
        status
    }
}

impl Drop for Served {
    /// A failed test does not leave its server running.
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
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

/// Runs `chokepoint hook --agent claude` with `input`; (exit code, stdout, stderr).
fn hook(ws: &Path, runtime: &Path, input: &str, extra: &[&str]) -> (i32, String, String) {
    let out = common::spawn_claude_hook(ws, runtime, input, extra).wait_with_output().unwrap();
    (out.status.code().unwrap(), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

fn select(ws: &Path) {
    let out = Command::new(BIN)
        .args(["intent", "select", "--workspace", ws.to_str().unwrap(), "--session", "claude:s1", "INT-1"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `chokepoint doctor --json`, as JSON.
fn doctor(ws: &Path, runtime: &Path) -> serde_json::Value {
    let out =
        Command::new(BIN).args(["doctor", "--json", "--workspace", ws.to_str().unwrap()]).env("XDG_RUNTIME_DIR", runtime).output().unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

fn records(ws: &Path) -> usize {
    common::ledger_text(ws).map(|t| t.lines().count()).unwrap_or(0)
}

#[test]
fn a_served_hook_answers_from_the_live_engine_and_a_stopped_one_judges_alone() {
    let (ws, runtime) = (workspace(), runtime_dir());
    select(ws.path());
    let server = Served::start(ws.path(), runtime.path());
    assert!(server.socket.starts_with(runtime.path().join("chokepoint")), "{}", server.socket.display());
    let mode = std::fs::metadata(&server.socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "only the user may connect");
    let live = doctor(ws.path(), runtime.path())["live_engine"].clone();
    assert_eq!(live["serving"], true);
    // Where Claude Code's HTTP hooks post: the URL of the serve file, with the agent's path.
    let access: serde_json::Value = serde_json::from_slice(&std::fs::read(ws.path().join(".orchestration/serve.json")).unwrap()).unwrap();
    assert_eq!(live["http_url"], format!("{}/hook/claude", access["url"].as_str().unwrap()), "{live}");

    let before = records(ws.path());
    let (code, stdout, _) = hook(ws.path(), runtime.path(), &common::write_input(ws.path(), "src/a.ts"), &[]);
    assert_eq!((code, stdout.as_str()), (0, ""), "a write in scope passes");
    let (code, stdout, _) = hook(ws.path(), runtime.path(), &common::write_input(ws.path(), "README.md"), &[]);
    assert_eq!(code, 0);
    assert!(stdout.contains("\"permissionDecision\":\"deny\"") && stdout.contains("INT-1"), "{stdout}");
    assert_eq!(records(ws.path()), before + 2, "both calls are in the ledger, written by the server");

    // The configuration breaks: the server keeps the last good one and says so; alone, a hook denies.
    std::fs::write(ws.path().join(".orchestration/hooks.yaml"), "version: 1\nhooks: [\n").unwrap();
    server.wait_for("the last good configuration keeps running");
    let (code, stdout, _) = hook(ws.path(), runtime.path(), &common::write_input(ws.path(), "src/a.ts"), &[]);
    assert_eq!(code, 0);
    assert!(!stdout.contains("permissionDecision"), "served: judged by the last good configuration: {stdout}");
    assert!(stdout.contains("the last good configuration keeps running") && stdout.contains("hooks.yaml:2:"), "and told so: {stdout}");
    let (code, stdout, _) = hook(ws.path(), runtime.path(), &common::write_input(ws.path(), "src/a.ts"), &["--local"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("\"permissionDecision\":\"deny\"") && stdout.contains("hooks.yaml:"), "alone: {stdout}");

    // A second server on the same workspace is refused; the first keeps serving.
    let second = Command::new(BIN)
        .args(["serve", "--workspace", ws.path().to_str().unwrap()])
        .env("XDG_RUNTIME_DIR", runtime.path())
        .output()
        .unwrap();
    assert_eq!(second.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&second.stderr).contains("already serves"), "{}", String::from_utf8_lossy(&second.stderr));
    assert!(server.socket.exists());

    let socket = server.socket.clone();
    let status = server.terminate();
    assert!(status.success(), "{status:?}");
    assert!(!socket.exists(), "the socket is removed on SIGTERM");
    let live = doctor(ws.path(), runtime.path())["live_engine"].clone();
    assert_eq!(live["serving"], false, "{live}");
    assert_eq!(live["http_url"], serde_json::Value::Null, "no HTTP URL without an engine: {live}");
    assert!(live["reason"].as_str().unwrap().contains("no engine"), "{live}");
    let (code, stdout, _) = hook(ws.path(), runtime.path(), &common::write_input(ws.path(), "src/a.ts"), &[]);
    assert_eq!(code, 0);
    assert!(stdout.contains("\"permissionDecision\":\"deny\""), "no server: judged alone, on the broken file: {stdout}");
}

#[test]
fn malformed_oversized_and_slow_requests_are_refused_before_the_engine() {
    let (ws, runtime) = (workspace(), runtime_dir());
    let server = Served::start(ws.path(), runtime.path());
    let answer = |stream: &mut UnixStream| {
        let mut len = [0u8; 4];
        stream.read_exact(&mut len).unwrap();
        let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
        stream.read_exact(&mut body).unwrap();
        serde_json::from_slice::<serde_json::Value>(&body).unwrap()
    };
    // Not a request.
    let mut stream = UnixStream::connect(&server.socket).unwrap();
    stream.write_all(&5u32.to_be_bytes()).unwrap();
    stream.write_all(b"hello").unwrap();
    let refused = answer(&mut stream);
    assert_eq!(refused["kind"], "refused", "{refused}");
    // Announces more than the limit: refused before a byte of it is read.
    let mut stream = UnixStream::connect(&server.socket).unwrap();
    stream.write_all(&u32::MAX.to_be_bytes()).unwrap();
    let refused = answer(&mut stream);
    assert!(refused["reason"].as_str().unwrap().contains("over the limit"), "{refused}");
    // Sends half a request and stalls: cut off, not waited for.
    let mut stream = UnixStream::connect(&server.socket).unwrap();
    stream.write_all(&100u32.to_be_bytes()).unwrap();
    stream.write_all(b"{\"agent\":").unwrap();
    let started = Instant::now();
    let refused = answer(&mut stream);
    assert_eq!(refused["kind"], "refused", "{refused}");
    assert!(started.elapsed() < Duration::from_secs(10));
    // An unknown agent.
    let mut stream = UnixStream::connect(&server.socket).unwrap();
    let body = br#"{"kind":"hook","agent":"nobody","event":null,"input":"{}","depth":0,"program":null}"#;
    stream.write_all(&(body.len() as u32).to_be_bytes()).unwrap();
    stream.write_all(body).unwrap();
    assert!(answer(&mut stream)["reason"].as_str().unwrap().contains("unknown agent"));
    assert_eq!(records(ws.path()), 0, "nothing reached the engine");
    assert!(server.terminate().success());
}

#[test]
fn another_user_cannot_reach_the_socket() {
    let python = Path::new("/usr/bin/python3");
    if !nix::unistd::getuid().is_root() || !Path::new("/usr/bin/setpriv").exists() || !python.exists() {
        eprintln!("skipped: needs root, setpriv and /usr/bin/python3 to act as a second user");
        return;
    }
    let (ws, runtime) = (workspace(), runtime_dir());
    select(ws.path());
    let server = Served::start(ws.path(), runtime.path());
    // What tells a served answer from a local one (see the top of the file).
    std::fs::write(ws.path().join(".orchestration/hooks.yaml"), "version: 1\nhooks: [\n").unwrap();
    server.wait_for("the last good configuration keeps running");
    // `nobody` tries to connect: the folder (0700) and the socket (0600) stop it.
    let out = Command::new("/usr/bin/setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]).arg(python).arg("-c")
        .arg("import socket,sys\ns=socket.socket(socket.AF_UNIX)\ntry:\n s.connect(sys.argv[1]); print('connected')\nexcept OSError as e: print(type(e).__name__)")
        .arg(&server.socket)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(said.trim(), "PermissionError", "{said} {}", String::from_utf8_lossy(&out.stderr));
    // And a folder others may enter is not trusted by a hook: it judges alone.
    std::fs::set_permissions(runtime.path().join("chokepoint"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (code, stdout, stderr) = hook(ws.path(), runtime.path(), &common::write_input(ws.path(), "src/a.ts"), &[]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("\"permissionDecision\":\"deny\"") && stdout.contains("hooks.yaml:"),
        "judged alone, on the broken file: {stdout} {stderr}"
    );
    assert!(server.terminate().success());
}

/// Clients that open a request and send a byte of it now and then, from this process, until
/// dropped: `count` connections, each told it will send 100 bytes, trickling one a second; at most
/// `FLOOD_FOR`. Loopback only (a Unix socket here, 127.0.0.1 in http.rs).
struct Trickle {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

const FLOOD_FOR: Duration = Duration::from_secs(30);

impl Trickle {
    fn start(socket: &Path, count: usize) -> Trickle {
        let mut streams = Vec::with_capacity(count);
        for _ in 0..count {
            let Ok(mut stream) = UnixStream::connect(socket) else { break };
            let _ = stream.set_nonblocking(true);
            let _ = stream.write_all(&100u32.to_be_bytes());
            streams.push(stream);
        }
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let thread = std::thread::spawn({
            let stop = std::sync::Arc::clone(&stop);
            move || {
                let until = Instant::now() + FLOOD_FOR;
                while !stop.load(std::sync::atomic::Ordering::Acquire) && Instant::now() < until {
                    for stream in &mut streams {
                        let _ = stream.write(b" ");
                    }
                    std::thread::sleep(Duration::from_millis(500));
                }
            }
        });
        Trickle { stop, thread: Some(thread) }
    }
}

impl Drop for Trickle {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[test]
fn a_flood_of_trickling_clients_does_not_keep_a_served_hook_from_its_answer() {
    let (ws, runtime) = (workspace(), runtime_dir());
    select(ws.path());
    let server = Served::start(ws.path(), runtime.path());
    let flood = Trickle::start(&server.socket, 600);
    std::thread::sleep(Duration::from_millis(500));
    let deadline = Duration::from_secs(8);
    let started = Instant::now();
    let (code, stdout, stderr) = hook(ws.path(), runtime.path(), &common::write_input(ws.path(), "src/a.ts"), &["--deadline", "8"]);
    let took = started.elapsed();
    assert_eq!((code, stdout.as_str()), (0, ""), "a write in scope is allowed, flood or not: {stderr}");
    assert!(took < deadline, "answered before its deadline: {took:?}");
    let (_, stdout, _) = hook(ws.path(), runtime.path(), &common::write_input(ws.path(), "README.md"), &["--deadline", "8"]);
    assert!(stdout.contains("\"permissionDecision\":\"deny\"") && stdout.contains("INT-1"), "and one outside it denied: {stdout}");
    drop(flood);
    assert!(server.terminate().success());
}

#[test]
fn a_saturated_live_engine_makes_the_hook_judge_alone_at_once() {
    let (ws, runtime) = (workspace(), runtime_dir());
    select(ws.path());
    let mut child = Command::new(BIN)
        .args(["serve", "--workspace", ws.path().to_str().unwrap(), "--max-connections", "4"])
        .env("XDG_RUNTIME_DIR", runtime.path())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (send, lines) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = send.send(line);
        }
    });
    let server = Served { child, lines, socket: PathBuf::new() };
    let line = server.wait_for(" at ");
    let socket = PathBuf::from(line.split(" at ").nth(1).unwrap().split(" (").next().unwrap());
    // What tells a served answer from a local one (see the top of the file).
    std::fs::write(ws.path().join(".orchestration/hooks.yaml"), "version: 1\nhooks: [\n").unwrap();
    server.wait_for("the last good configuration keeps running");
    // Four requests that stall hold every connection it takes.
    let held: Vec<UnixStream> = (0..4).map(|_| UnixStream::connect(&socket).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(200));
    let started = Instant::now();
    let (code, stdout, stderr) = hook(ws.path(), runtime.path(), &common::write_input(ws.path(), "src/a.ts"), &["--deadline", "20"]);
    let took = started.elapsed();
    assert_eq!(code, 0);
    assert!(
        stdout.contains("\"permissionDecision\":\"deny\"") && stdout.contains("hooks.yaml:"),
        "judged alone, on the broken file: {stdout}"
    );
    assert!(stderr.contains("judged without the live engine") && stderr.contains("busy"), "and says why: {stderr}");
    assert!(took < Duration::from_secs(10), "at once, not at its deadline: {took:?}");
    drop(held);
    assert!(server.terminate().success());
}

#[test]
fn a_server_killed_with_sigkill_leaves_nothing_the_next_start_or_a_client_trusts() {
    let (ws, runtime) = (workspace(), runtime_dir());
    select(ws.path());
    let file = ws.path().join(".orchestration/serve.json");
    let mut server = Served::start(ws.path(), runtime.path());
    let first: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(first["pid"], server.child.id(), "the serve file names its server: {first}");
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    // What it leaves: its socket and its serve file, with the old token.
    assert!(server.socket.exists() && file.exists());
    let stale = chokepoint_core::serve::token::Access::read_live(&file).unwrap_err().to_string();
    assert!(stale.contains("not running"), "a client does not trust a dead server's file: {stale}");
    let live = doctor(ws.path(), runtime.path())["live_engine"].clone();
    assert_eq!((live["serving"].as_bool(), live["http_url"].as_str()), (Some(false), None), "{live}");
    let (code, stdout, _) = hook(ws.path(), runtime.path(), &common::write_input(ws.path(), "src/a.ts"), &[]);
    assert_eq!((code, stdout.as_str()), (0, ""), "judged alone meanwhile");

    // The next start replaces both.
    let again = Served::start(ws.path(), runtime.path());
    let second: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_ne!(second["token"], first["token"], "a new token");
    assert_eq!(second["pid"], again.child.id());
    assert!(chokepoint_core::serve::token::Access::read_live(&file).is_ok());
    assert!(UnixStream::connect(&again.socket).is_ok());
    assert!(again.terminate().success());
}

#[test]
fn another_users_folder_in_tmp_does_not_keep_the_live_engine_from_starting() {
    let (ws, tmp, home) = (workspace(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    select(ws.path());
    // Someone made `/tmp/chokepoint-<uid>` first: another user's folder (as root, we can make one),
    // else a link to a folder of theirs.
    let taken = tmp.path().join(format!("chokepoint-{}", nix::unistd::getuid()));
    if nix::unistd::getuid().is_root() {
        std::fs::create_dir(&taken).unwrap();
        std::fs::set_permissions(&taken, std::fs::Permissions::from_mode(0o777)).unwrap();
        nix::unistd::chown(&taken, Some(nix::unistd::Uid::from_raw(65534)), Some(nix::unistd::Gid::from_raw(65534))).unwrap();
    } else {
        std::os::unix::fs::symlink(home.path(), &taken).unwrap();
    }
    let env = |command: &mut Command| {
        command.env_remove("XDG_RUNTIME_DIR").env("TMPDIR", tmp.path()).env("HOME", home.path()).env_remove("XDG_CACHE_HOME");
    };
    let mut serve = Command::new(BIN);
    serve.args(["serve", "--workspace", ws.path().to_str().unwrap()]).stderr(Stdio::piped());
    env(&mut serve);
    let mut child = serve.spawn().unwrap();
    let (send, lines) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = send.send(line);
        }
    });
    let server = Served { child, lines, socket: PathBuf::new() };
    let line = server.wait_for("serving ");
    assert!(line.contains(home.path().to_str().unwrap()), "a folder under the user's own home instead: {line}");
    // A hook with the same environment finds it: break the configuration, and the served answer still allows.
    std::fs::write(ws.path().join(".orchestration/hooks.yaml"), "version: 1\nhooks: [\n").unwrap();
    server.wait_for("the last good configuration keeps running");
    let mut hook = common::as_agent();
    hook.args(["hook", "--agent", "claude", "--workspace", ws.path().to_str().unwrap()]);
    env(&mut hook);
    let mut hook = hook.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    hook.stdin.take().unwrap().write_all(common::write_input(ws.path(), "src/a.ts").as_bytes()).unwrap();
    let out = hook.wait_with_output().unwrap();
    assert!(!String::from_utf8_lossy(&out.stdout).contains("permissionDecision"), "served: {}", String::from_utf8_lossy(&out.stdout));
    assert!(server.terminate().success());
}

#[test]
fn a_stopped_live_engine_whose_backlog_is_full_makes_the_hook_judge_alone_not_hang() {
    let (ws, runtime) = (workspace(), runtime_dir());
    select(ws.path());
    let server = Served::start(ws.path(), runtime.path());
    let pid = nix::unistd::Pid::from_raw(server.child.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).unwrap();
    // Connections nobody accepts, until the kernel's queue for the socket is full (bounded).
    let mut queued = Vec::new();
    for _ in 0..10_000 {
        let fd = nix::sys::socket::socket(
            nix::sys::socket::AddressFamily::Unix,
            nix::sys::socket::SockType::Stream,
            nix::sys::socket::SockFlag::empty(),
            None,
        )
        .unwrap();
        // Set apart from `socket`, whose `SOCK_NONBLOCK` macOS does not have.
        nix::fcntl::fcntl(&fd, nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK)).unwrap();
        nix::fcntl::fcntl(&fd, nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC)).unwrap();
        if nix::sys::socket::connect(std::os::fd::AsRawFd::as_raw_fd(&fd), &nix::sys::socket::UnixAddr::new(&server.socket).unwrap())
            .is_err()
        {
            break;
        }
        queued.push(fd);
    }
    assert!(queued.len() < 10_000, "the queue filled");
    // Not through a stand-in: a hook that hangs is killed itself.
    let mut child = Command::new(BIN)
        .args(["hook", "--agent", "claude", "--workspace", ws.path().to_str().unwrap(), "--deadline", "20"])
        .env("XDG_RUNTIME_DIR", runtime.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(common::write_input(ws.path(), "src/a.ts").as_bytes()).unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() && started.elapsed() < Duration::from_secs(15) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let finished = child.try_wait().unwrap().is_some();
    if !finished {
        let _ = child.kill();
    }
    let out = child.wait_with_output().unwrap();
    drop(queued);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT).unwrap();
    assert!(finished, "the hook hung on a connection nobody accepts (its agent would let the call through at its timeout)");
    assert_eq!((out.status.code(), out.stdout.as_slice()), (Some(0), &b""[..]), "judged alone: {}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("judged without the live engine"), "{}", String::from_utf8_lossy(&out.stderr));
    let status = server.terminate();
    assert!(status.success(), "{status:?}");
}
