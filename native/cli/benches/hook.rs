//! `chokepoint hook` as an agent pays for it: one whole process per hook call, its input on stdin, its
//! answer on stdout. Five figures, timed in one run and interleaved (each round runs each once, so the
//! machine's noise falls on all of them alike; the served rounds come last, once a live engine is up,
//! each with its own spawn of `/bin/true`):
//!
//! - `hook.spawn_true`: spawning `/bin/true` with the same input piped in: the floor of any hook;
//! - `hook.claude.pre_tool_use`: `chokepoint hook --agent claude --local` answering a Claude Code
//!   PreToolUse of a write inside the session's intent in a governed workspace, alone: the process
//!   opens the configuration, the state database and the ledger (the gatekeeper, the lease, and the
//!   ledger's one sync included); compared with the spawn (target: ≤ 3×);
//! - `hook.claude.pre_tool_use.served`: the same call handed to the workspace's live engine
//!   (`chokepoint serve`, as VS Code with Chokepoint runs it), which judges it and syncs its record;
//!   compared with the spawn (target: ≤ 3×);
//! - `hook.claude.pre_tool_use.http`: the same call posted by Claude Code's `type: "http"` hook to
//!   the same live engine over 127.0.0.1 (a new connection per call, as an agent without keep-alive
//!   makes it, with the run's token): no process at all; compared with the hook alone (target:
//!   median ≤ 0.5 ms), and printed against the spawn and the Python hook too;
//! - `hook.claude.pre_tool_use.served.flood` and `hook.claude.pre_tool_use.http.flood`: the served
//!   and HTTP calls again while 600 clients trickle requests into the socket and 2,000 slow clients
//!   without the token hold connections to the HTTP port (each opened again when the server cuts
//!   it), as ratios to the quiet figures of the same run (target: ≤ 2×);
//! - `hook.python` and `hook.node`: a minimal Python and Node hook doing the same JSON round trip
//!   (read the input, answer allow), compared with `hook.claude.pre_tool_use` (target: Python ≥ 30×);
//! - `hook.claude.pre_tool_use.main_checkout` and `hook.claude.pre_tool_use.worktree`: the same call
//!   alone in the main checkout of a git repository (compared with `hook.claude.pre_tool_use`, in no
//!   repository: the lookup of git's files) and in a worktree added to it (`git worktree add`),
//!   compared with the main checkout: the hook finds the coordination database the worktrees share
//!   under git's common folder (target: ≤ 1.1×);
//! - `hook.claude.pre_tool_use.team`: the same call alone in a workspace whose leases live on a
//!   team's PostgreSQL database on loopback (a server this bench starts, with the tests' harness):
//!   the process connects, reads the session's lease there and judges; compared with
//!   `hook.claude.pre_tool_use` (target: ≤ 1.5×); `hook.claude.pre_tool_use.team.served`: the same
//!   call handed to that workspace's live engine, which keeps its connection, compared with
//!   `hook.claude.pre_tool_use.served`.
//!
//! The program timed is `CHOKEPOINT_BENCH_PROGRAM` when set (`npm run bench` sets it to the program as
//! shipped, statically linked; see scripts/build.js), else cargo's own build of it.
//!
//! Samples go to `target/bench-samples/` (see scripts/bench.js).
#![allow(clippy::print_stdout)]
// a bench reports what it measured

// The live engine's figures are taken over its Unix socket, and the engine is stopped as a person
// stops it (SIGTERM): on other platforms the bench says so and measures nothing.
#![cfg_attr(not(unix), allow(dead_code, unused_imports))]
#[cfg(not(unix))]
fn main() {
    eprintln!("the hook bench runs on Unix only: it measures the live engine over its Unix socket");
}

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

#[path = "../../core/benches/samples/mod.rs"]
mod samples;

#[path = "../../core/tests/support/postgres.rs"]
mod postgres;

const ROUNDS: usize = 200;

const PYTHON_HOOK: &str = "import json,sys\nd=json.load(sys.stdin)\nprint(json.dumps({'hookSpecificOutput':{'hookEventName':d['hook_event_name'],'permissionDecision':'allow'}}))";
const NODE_HOOK: &str = "let s='';process.stdin.on('data',c=>s+=c).on('end',()=>{const d=JSON.parse(s);process.stdout.write(JSON.stringify({hookSpecificOutput:{hookEventName:d.hook_event_name,permissionDecision:'allow'}}))})";

/// Posts `input` to the live engine's HTTP endpoint on a new connection, as an HTTP hook does, and
/// reads its whole answer; the time of the whole.
fn http_round(host: &str, token: &str, input: &[u8]) -> u64 {
    let start = Instant::now();
    let mut stream = std::net::TcpStream::connect(host).expect("connect");
    let _ = stream.set_nodelay(true);
    let head = format!(
        "POST /hook/claude HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        input.len()
    );
    let mut request = head.into_bytes();
    request.extend_from_slice(input);
    stream.write_all(&request).expect("send");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).expect("read");
    let elapsed = start.elapsed().as_nanos() as u64;
    assert!(answer.starts_with(b"HTTP/1.1 200 "), "{}", String::from_utf8_lossy(&answer));
    elapsed
}

/// Runs `command` with `input` on stdin to its end, reads all it prints; the time of the whole.
fn round_trip(command: &mut Command, input: &[u8]) -> u64 {
    let start = Instant::now();
    let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    // /bin/true may be gone before it reads: a closed pipe is fine.
    let _ = child.stdin.take().expect("stdin").write_all(input);
    let out = child.wait_with_output().expect("wait");
    let elapsed = start.elapsed().as_nanos() as u64;
    assert!(out.status.code().is_some(), "killed by a signal");
    elapsed
}

#[cfg(unix)]
fn main() {
    let program = std::env::var("CHOKEPOINT_BENCH_PROGRAM").unwrap_or_else(|_| env!("CARGO_BIN_EXE_chokepoint").to_owned());
    let program = program.as_str();
    let ws = tempfile::tempdir().expect("a temporary workspace");
    let root = ws.path();
    std::fs::create_dir_all(root.join(".orchestration")).unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(
        root.join(".orchestration/active_intents.yaml"),
        "version: 1\nactive_intents:\n  - id: INT-1\n    name: Sources\n    status: IN_PROGRESS\n    owned_scope: ['src/**']\n",
    )
    .unwrap();
    std::fs::write(root.join(".orchestration/hooks.yaml"), "version: 1\n").unwrap();
    let selected = Command::new(program)
        .args(["intent", "select", "--workspace", root.to_str().unwrap(), "--session", "claude:bench", "INT-1"])
        .output()
        .unwrap();
    assert!(selected.status.success(), "{}", String::from_utf8_lossy(&selected.stderr));
    let input = serde_json::json!({
        "session_id": "bench",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": root,
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": { "file_path": root.join("src/flags.ts"), "content": "export const verbose = false;\n" },
        "tool_use_id": "toolu_01",
    })
    .to_string();
    let input = input.as_bytes();

    // The live engine's socket goes in a private folder of this run.
    let runtime = tempfile::tempdir().expect("a runtime folder");
    std::fs::set_permissions(runtime.path(), std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let hook_in = |local: bool| {
        let mut c = Command::new(program);
        c.args(["hook", "--agent", "claude", "--workspace", root.to_str().unwrap()]).env("XDG_RUNTIME_DIR", runtime.path());
        if local {
            c.arg("--local");
        }
        c
    };
    let hook = || hook_in(true);
    // The served rounds run on a copy of the workspace: a hook judging alone registers its parent
    // (this process) as an agent's in its workspace (`serve::deciders`), and an agent's process may
    // not start the live engine there.
    let served_ws = tempfile::tempdir().expect("a second workspace");
    let served_root = served_ws.path();
    std::fs::create_dir_all(served_root.join(".orchestration")).unwrap();
    std::fs::create_dir_all(served_root.join("src")).unwrap();
    for file in ["active_intents.yaml", "hooks.yaml"] {
        std::fs::copy(root.join(".orchestration").join(file), served_root.join(".orchestration").join(file)).unwrap();
    }
    let selected = Command::new(program)
        .args(["intent", "select", "--workspace", served_root.to_str().unwrap(), "--session", "claude:bench", "INT-1"])
        .output()
        .unwrap();
    assert!(selected.status.success(), "{}", String::from_utf8_lossy(&selected.stderr));
    let served_input = String::from_utf8(input.to_vec()).unwrap().replace(root.to_str().unwrap(), served_root.to_str().unwrap());
    let served_input = served_input.as_bytes();
    let served_in = || {
        let mut c = Command::new(program);
        c.args(["hook", "--agent", "claude", "--workspace", served_root.to_str().unwrap()]).env("XDG_RUNTIME_DIR", runtime.path());
        c
    };
    // The answer is what the agent would act on: checked once, outside the timing.
    let out = hook().stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().and_then(|mut c| {
        c.stdin.take().unwrap().write_all(input)?;
        c.wait_with_output()
    });
    let out = out.expect("the hook runs");
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty(), "a write in scope passes silently: {}", String::from_utf8_lossy(&out.stdout));
    // A repository with the sidecar committed, and a worktree added to it: the session holds its
    // intent in the coordination database both share, and the same call is judged in each.
    let repo_dir = tempfile::tempdir().expect("a repository's folder");
    let (main_root, linked_root) = (repo_dir.path().join("repo"), repo_dir.path().join("wt"));
    std::fs::create_dir_all(main_root.join(".orchestration")).unwrap();
    std::fs::create_dir_all(main_root.join("src")).unwrap();
    for file in ["active_intents.yaml", "hooks.yaml"] {
        std::fs::copy(root.join(".orchestration").join(file), main_root.join(".orchestration").join(file)).unwrap();
    }
    std::fs::write(main_root.join("src/flags.ts"), "export const verbose = true;\n").unwrap();
    for args in [&["init", "-q"][..], &["add", "."], &["commit", "-q", "-m", "governed"], &["worktree", "add", "-q", "-b", "wt", "../wt"]] {
        let out = Command::new("git")
            .args([
                "-c",
                "user.name=bench",
                "-c",
                "user.email=bench@localhost",
                "-c",
                "init.defaultBranch=main",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(&main_root)
            .output()
            .expect("git runs (the worktree figures need it)");
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let selected = Command::new(program)
        .args(["intent", "select", "--workspace", main_root.to_str().unwrap(), "--session", "claude:bench", "INT-1"])
        .output()
        .unwrap();
    assert!(selected.status.success(), "{}", String::from_utf8_lossy(&selected.stderr));
    let input_in =
        |at: &Path| String::from_utf8(input.to_vec()).unwrap().replace(root.to_str().unwrap(), at.to_str().unwrap()).into_bytes();
    let (main_input, linked_input) = (input_in(&main_root), input_in(&linked_root));
    let hook_at = |at: &Path| {
        let mut c = Command::new(program);
        c.args(["hook", "--agent", "claude", "--local", "--workspace", at.to_str().unwrap()]).env("XDG_RUNTIME_DIR", runtime.path());
        c
    };
    for (at, input) in [(&main_root, &main_input), (&linked_root, &linked_input)] {
        let out = hook_at(at).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().and_then(|mut c| {
            c.stdin.take().unwrap().write_all(input)?;
            c.wait_with_output()
        });
        let out = out.expect("the hook runs in the repository");
        assert_eq!(out.status.code(), Some(0));
        assert!(out.stdout.is_empty(), "a write in scope passes silently in {}: {}", at.display(), String::from_utf8_lossy(&out.stdout));
    }
    assert!(main_root.join(".git/chokepoint/state.db").is_file(), "the lease is in the shared database");

    // A workspace coordinated on a team's database: the URL and password from the environment, the
    // repository named in hooks.yaml (no git needed).
    let pg = postgres::Server::start();
    let team_ws = tempfile::tempdir().expect("a team's workspace");
    let team_root = team_ws.path();
    std::fs::create_dir_all(team_root.join(".orchestration")).unwrap();
    std::fs::create_dir_all(team_root.join("src")).unwrap();
    std::fs::copy(root.join(".orchestration/active_intents.yaml"), team_root.join(".orchestration/active_intents.yaml")).unwrap();
    std::fs::write(team_root.join(".orchestration/hooks.yaml"), "version: 1\ncoordination:\n  repository: bench\n").unwrap();
    let team_env = pg.env();
    let selected = Command::new(program)
        .args(["intent", "select", "--workspace", team_root.to_str().unwrap(), "--session", "claude:bench", "INT-1"])
        .envs(team_env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap();
    assert!(selected.status.success(), "{}", String::from_utf8_lossy(&selected.stderr));
    let team_input = input_in(team_root);
    let hook_team = || {
        let mut c = hook_at(team_root);
        c.envs(team_env.iter().map(|(k, v)| (k, v)));
        c
    };
    let out = hook_team().stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().and_then(|mut c| {
        c.stdin.take().unwrap().write_all(&team_input)?;
        c.wait_with_output()
    });
    let out = out.expect("the hook runs on the team's database");
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty(), "a write in scope passes silently on the team's database: {}", String::from_utf8_lossy(&out.stdout));
    // Its twin for the live engine (a hook judged alone made this process an agent's in the first).
    let team_served_ws = tempfile::tempdir().expect("a served team's workspace");
    let team_served_root = team_served_ws.path();
    std::fs::create_dir_all(team_served_root.join(".orchestration")).unwrap();
    std::fs::create_dir_all(team_served_root.join("src")).unwrap();
    std::fs::copy(team_root.join(".orchestration/active_intents.yaml"), team_served_root.join(".orchestration/active_intents.yaml"))
        .unwrap();
    // A repository of its own in the database: the other holds INT-1 there.
    std::fs::write(team_served_root.join(".orchestration/hooks.yaml"), "version: 1\ncoordination:\n  repository: bench-served\n").unwrap();
    let selected = Command::new(program)
        .args(["intent", "select", "--workspace", team_served_root.to_str().unwrap(), "--session", "claude:bench-served", "INT-1"])
        .envs(team_env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap();
    assert!(selected.status.success(), "{}", String::from_utf8_lossy(&selected.stderr));
    let team_served_input = String::from_utf8(input_in(team_served_root)).unwrap().replace("\"bench\"", "\"bench-served\"").into_bytes();
    let team_served_in = || {
        let mut c = Command::new(program);
        c.args(["hook", "--agent", "claude", "--workspace", team_served_root.to_str().unwrap()])
            .env("XDG_RUNTIME_DIR", runtime.path())
            .envs(team_env.iter().map(|(k, v)| (k, v)));
        c
    };

    // The baselines are part of the figure: without them there is nothing to compare with.
    let python = which("python3").expect("python3 on PATH (the Python hook's baseline)");
    let node = which("node").expect("node on PATH (the Node hook's baseline)");

    // Alone first, with no live engine up: then nothing else holds the state database open, as when
    // VS Code is closed, and the process pays for opening (and closing) it by itself.
    let (mut t_true, mut t_hook, mut t_served, mut t_python, mut t_node) = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut t_http = Vec::new();
    let (mut t_main_checkout, mut t_worktree, mut t_team) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        t_true.push(round_trip(&mut Command::new("/bin/true"), input));
        t_hook.push(round_trip(&mut hook(), input));
        t_team.push(round_trip(&mut hook_team(), &team_input));
        t_main_checkout.push(round_trip(&mut hook_at(&main_root), &main_input));
        t_worktree.push(round_trip(&mut hook_at(&linked_root), &linked_input));
        t_python.push(round_trip(Command::new(&python).args(["-c", PYTHON_HOOK]), input));
        t_node.push(round_trip(Command::new(&node).args(["-e", NODE_HOOK]), input));
    }

    let mut server = Command::new(program)
        .args(["serve", "--workspace", served_root.to_str().unwrap()])
        .env("XDG_RUNTIME_DIR", runtime.path())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chokepoint serve starts");
    // It says where it listens once it does.
    let mut said = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(server.stderr.as_mut().unwrap()), &mut said).unwrap();
    assert!(said.contains("serving"), "{said}");
    let out = served_in().stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().and_then(|mut c| {
        c.stdin.take().unwrap().write_all(served_input)?;
        c.wait_with_output()
    });
    let out = out.expect("the served hook runs");
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty(), "served, a write in scope passes silently: {}", String::from_utf8_lossy(&out.stdout));
    // Where HTTP hooks post, written before the server said it serves.
    let access: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(served_root.join(".orchestration/serve.json")).expect("serve.json")).unwrap();
    let host = access["url"].as_str().unwrap().strip_prefix("http://").unwrap().to_owned();
    let token = access["token"].as_str().unwrap().to_owned();
    let mut team_server = Command::new(program)
        .args(["serve", "--workspace", team_served_root.to_str().unwrap()])
        .env("XDG_RUNTIME_DIR", runtime.path())
        .envs(team_env.iter().map(|(k, v)| (k, v)))
        .stderr(Stdio::piped())
        .spawn()
        .expect("chokepoint serve starts on the team's workspace");
    let mut said_team = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(team_server.stderr.as_mut().unwrap()), &mut said_team).unwrap();
    assert!(said_team.contains("serving"), "{said_team}");
    let out = team_served_in().stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().and_then(|mut c| {
        c.stdin.take().unwrap().write_all(&team_served_input)?;
        c.wait_with_output()
    });
    let out = out.expect("the served team hook runs");
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stdout.is_empty(),
        "served on the team's database, a write in scope passes silently: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let mut t_team_served = Vec::new();
    // The spawn is timed in these rounds too, so the baseline covers both halves of the run.
    for _ in 0..ROUNDS {
        t_true.push(round_trip(&mut Command::new("/bin/true"), input));
        t_served.push(round_trip(&mut served_in(), served_input));
        t_team_served.push(round_trip(&mut team_served_in(), &team_served_input));
        t_http.push(http_round(&host, &token, served_input));
    }
    let _ = nix_kill(&team_server);
    let _ = team_server.wait();
    // The same calls during a flood of slow clients on both transports (loopback only, bounded).
    let socket = said.split(" at ").nth(1).and_then(|s| s.split(" (").next()).expect("the socket's path").to_owned();
    let flood = Flood::start(std::path::PathBuf::from(socket), host.parse().expect("the http address"));
    let (mut t_served_flood, mut t_http_flood) = (Vec::new(), Vec::new());
    for _ in 0..FLOOD_ROUNDS {
        t_served_flood.push(round_trip(&mut served_in(), served_input));
        t_http_flood.push(http_round(&host, &token, served_input));
    }
    let reopened = flood.stop();
    let _ = nix_kill(&server);
    let _ = server.wait();
    samples::write("hook.spawn_true", None, &t_true);
    samples::write("hook.claude.pre_tool_use", Some("hook.spawn_true"), &t_hook);
    samples::write("hook.claude.pre_tool_use.served", Some("hook.spawn_true"), &t_served);
    samples::write("hook.claude.pre_tool_use.http", Some("hook.claude.pre_tool_use"), &t_http);
    samples::write("hook.claude.pre_tool_use.served.flood", Some("hook.claude.pre_tool_use.served"), &t_served_flood);
    samples::write("hook.claude.pre_tool_use.http.flood", Some("hook.claude.pre_tool_use.http"), &t_http_flood);
    samples::write("hook.python", Some("hook.claude.pre_tool_use"), &t_python);
    samples::write("hook.node", Some("hook.claude.pre_tool_use"), &t_node);
    samples::write("hook.claude.pre_tool_use.main_checkout", Some("hook.claude.pre_tool_use"), &t_main_checkout);
    samples::write("hook.claude.pre_tool_use.worktree", Some("hook.claude.pre_tool_use.main_checkout"), &t_worktree);
    samples::write("hook.claude.pre_tool_use.team", Some("hook.claude.pre_tool_use"), &t_team);
    samples::write("hook.claude.pre_tool_use.team.served", Some("hook.claude.pre_tool_use.served"), &t_team_served);
    let median = |v: &mut Vec<u64>| {
        v.sort_unstable();
        v[v.len() / 2] as f64 / 1e6
    };
    let p99 = |v: &mut Vec<u64>| {
        v.sort_unstable();
        v[v.len() * 99 / 100] as f64 / 1e6
    };
    println!(
        "hook during a flood ({reopened} slow connections cut and opened again): served {:.2}x, http {:.2}x the quiet medians (target: <= 2x)",
        median(&mut t_served_flood) / median(&mut t_served),
        median(&mut t_http_flood) / median(&mut t_http),
    );
    let http = median(&mut t_http);
    println!(
        "hook over http: median {http:.3} ms, p99 {:.3} ms (target: median <= 0.5 ms); /bin/true {:.1}x, chokepoint hook alone {:.1}x, python {:.1}x its median",
        p99(&mut t_http),
        median(&mut t_true) / http,
        median(&mut t_hook) / http,
        median(&mut t_python) / http,
    );
    println!(
        "hook in a repository: main checkout {:.2} ms ({:.2}x no repository), linked worktree {:.2} ms ({:.3}x the main checkout; target: <= 1.1x)",
        median(&mut t_main_checkout),
        median(&mut t_main_checkout) / median(&mut t_hook),
        median(&mut t_worktree),
        median(&mut t_worktree) / median(&mut t_main_checkout),
    );
    println!(
        "hook: /bin/true {:.2} ms, chokepoint hook alone {:.2} ms, served {:.2} ms, python {:.2} ms, node {:.2} ms (medians of {ROUNDS})",
        median(&mut t_true),
        median(&mut t_hook),
        median(&mut t_served),
        median(&mut t_python),
        median(&mut t_node),
    );
}

const FLOOD_ROUNDS: usize = 100;

/// 600 clients trickling a request into the socket and 2,000 slow clients without the token on the
/// HTTP port, each opened again when the server cuts it; stopped (and every connection closed) by
/// [`Flood::stop`], or after 120 s.
#[cfg(unix)]
struct Flood {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<usize>,
}

#[cfg(unix)]
impl Flood {
    fn start(socket: std::path::PathBuf, http: std::net::SocketAddr) -> Flood {
        assert!(http.ip().is_loopback(), "floods go to loopback only");
        enum Slow {
            Socket(std::os::unix::net::UnixStream),
            Http(std::net::TcpStream),
        }
        let open_socket = {
            let socket = socket.clone();
            move || {
                let mut s = std::os::unix::net::UnixStream::connect(&socket).ok()?;
                s.set_nonblocking(true).ok()?;
                s.write_all(&100u32.to_be_bytes()).ok()?;
                Some(Slow::Socket(s))
            }
        };
        let open_http = move || {
            let mut s = std::net::TcpStream::connect_timeout(&http, std::time::Duration::from_millis(200)).ok()?;
            s.set_nonblocking(true).ok()?;
            s.write_all(format!("POST /hook/claude HTTP/1.1\r\nHost: {http}\r\n").as_bytes()).ok()?;
            Some(Slow::Http(s))
        };
        let mut slots: Vec<(bool, Option<Slow>)> =
            (0..600).map(|_| (true, open_socket())).chain((0..2000).map(|_| (false, open_http()))).collect();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let thread = std::thread::spawn({
            let stop = std::sync::Arc::clone(&stop);
            move || {
                let (until, mut reopened) = (Instant::now() + std::time::Duration::from_secs(120), 0);
                while !stop.load(std::sync::atomic::Ordering::Acquire) && Instant::now() < until {
                    for (socket, slot) in &mut slots {
                        let mut byte = [0u8; 256];
                        // An answer (a refusal) or the end: the server is done with it.
                        let alive = match slot {
                            Some(Slow::Socket(s)) => s.read(&mut byte).is_err() && s.write(b" ").is_ok(),
                            Some(Slow::Http(s)) => s.read(&mut byte).is_err() && s.write(b"X").is_ok(),
                            None => false,
                        };
                        if !alive {
                            *slot = if *socket { open_socket() } else { open_http() };
                            reopened += 1;
                        }
                    }
                    std::thread::sleep(std::time::Duration::from_millis(200));
                }
                reopened
            }
        });
        Flood { stop, thread }
    }

    /// Stops it; how many connections were opened again after the server cut them.
    fn stop(self) -> usize {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
        self.thread.join().unwrap_or(0)
    }
}

/// Stops the server as a person would (SIGTERM), so that it removes its socket.
#[cfg(unix)]
fn nix_kill(child: &std::process::Child) -> nix::Result<()> {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGTERM)
}

fn which(program: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")?.to_str()?.split(':').map(|d| Path::new(d).join(program)).find(|p| p.is_file())
}
