//! The live engine on every platform with a transport for it (a Unix socket, a Windows named pipe),
//! as VS Code's window serves it: the engine served in this process (the binding's `Engine.serve`
//! does the same), real `chokepoint hook` processes handing their calls to it over the transport,
//! and the same hooks judging alone once it has stopped. (`chokepoint serve` from a terminal is
//! refused where a person cannot be told from an agent's process, Windows: `serve::deciders`; on
//! Unix it, the socket's own checks, another user and floods are in serve.rs.)

mod common;

use chokepoint_core::Engine;
use chokepoint_core::serve::endpoint::Endpoint;
use chokepoint_core::serve::server::{ServeOptions, Server};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

/// The runtime folder a hook given `runtime` (`$XDG_RUNTIME_DIR`, Windows' `%LOCALAPPDATA%`:
/// `common::spawn_claude_hook` sets both) looks for the engine in.
fn endpoint_dir(runtime: &Path) -> PathBuf {
    if cfg!(windows) { runtime.join("chokepoint").join("run") } else { runtime.join("chokepoint") }
}

/// `chokepoint hook --agent claude`'s stdout (it exits 0 and says a deny in its JSON).
fn hook(ws: &Path, runtime: &Path, file: &str) -> String {
    let out = common::spawn_claude_hook(ws, runtime, &common::write_input(ws, file), &[]).wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// `chokepoint doctor --json`'s live engine section.
fn live_engine(ws: &Path, runtime: &Path) -> serde_json::Value {
    let out = Command::new(common::program())
        .args(["doctor", "--json", "--workspace", ws.to_str().unwrap()])
        .env("XDG_RUNTIME_DIR", runtime)
        .env("LOCALAPPDATA", runtime)
        .output()
        .unwrap();
    let doctor: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    doctor["live_engine"].clone()
}

/// The server's count of answered calls once it reaches `expected`, or after 10 s. A call is counted
/// after its answer is sent and its caller registered, so the hook that read the answer may have
/// exited before the count moves (a window that emulation, qemu-user, makes wide).
fn served_reaching(server: &Server, expected: u64) -> u64 {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while server.served() < expected && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    server.served()
}

const DENY: &str = "\"permissionDecision\":\"deny\"";

#[test]
fn hooks_are_answered_by_the_live_engine_over_its_transport_and_judge_alone_once_it_stops() {
    let intents = "version: 1\nactive_intents:\n  - id: INT-1\n    name: Sources\n    status: IN_PROGRESS\n    owned_scope: ['src/**']\n";
    let ws = common::workspace("version: 1\n", intents);
    std::fs::create_dir_all(ws.path().join("src")).unwrap();
    let runtime = common::runtime_dir();
    let selected = common::chokepoint(ws.path(), &["intent", "select", "--session", "claude:s1", "INT-1"]);
    assert!(selected.status.success(), "{}", common::stderr(&selected));

    let engine = Arc::new(Engine::open(ws.path()).unwrap());
    let endpoint = Endpoint::in_dir(&endpoint_dir(runtime.path()), ws.path());
    let server = Server::start_at(Arc::clone(&engine), endpoint.clone(), ServeOptions::default()).unwrap();
    if cfg!(windows) {
        assert!(endpoint.socket().to_string_lossy().starts_with(r"\\.\pipe\chokepoint-"), "{}", endpoint.socket().display());
    }
    assert_eq!(live_engine(ws.path(), runtime.path())["serving"], true, "doctor finds it");

    let served = server.served();
    assert_eq!(hook(ws.path(), runtime.path(), "src/a.ts"), "", "a write in scope passes");
    let out = hook(ws.path(), runtime.path(), "README.md");
    assert!(out.contains(DENY) && out.contains("INT-1"), "{out}");
    assert_eq!(served_reaching(&server, served + 2), served + 2, "both calls were answered by the live engine");

    // A second server on the workspace is refused; the first keeps serving.
    let second = Server::start_at(Arc::clone(&engine), endpoint.clone(), ServeOptions::default()).unwrap_err().to_string();
    assert!(second.contains("already serves"), "{second}");
    assert_eq!(hook(ws.path(), runtime.path(), "src/a.ts"), "");
    assert_eq!(served_reaching(&server, served + 3), served + 3, "still served by the first");

    drop(server);
    let live = live_engine(ws.path(), runtime.path());
    assert_eq!(live["serving"], false, "{live}");
    assert!(live["reason"].as_str().unwrap().contains("no engine"), "{live}");
    let out = hook(ws.path(), runtime.path(), "README.md");
    assert!(out.contains(DENY) && out.contains("INT-1"), "judged alone, the same answer: {out}");
}
