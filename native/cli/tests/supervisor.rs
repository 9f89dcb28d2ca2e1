//! `chokepoint exec` on Windows, where it supervises its command in the open (no namespace hides it
//! from the command): the command cannot end it, and ending the shell that started it (how agents
//! cancel a command) stops the command, whose changes are still judged and recorded. Run under Wine
//! in the platforms layer; `chokepoint_win::supervisor` says what the guard rests on.
#![cfg(windows)]

mod common;

use serde_json::Value;
use std::fs;
use std::os::windows::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const INTENTS: &str =
    "version: 1\nactive_intents:\n  - id: INT-001\n    name: Auth\n    status: IN_PROGRESS\n    owned_scope: ['src/auth/**']\n";

/// A workspace whose session `s` works on INT-001 (`src/auth/**`).
fn workspace() -> tempfile::TempDir {
    let ws = common::workspace("version: 1\n", INTENTS);
    fs::create_dir_all(ws.path().join("src/auth")).unwrap();
    let selected = common::chokepoint(ws.path(), &["intent", "select", "--session", "s", "INT-001"]);
    assert!(selected.status.success(), "{}", common::stderr(&selected));
    ws
}

/// Waits up to `bound` for `ready`.
fn until(bound: Duration, ready: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + bound;
    while Instant::now() < deadline {
        if ready() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    ready()
}

/// The ledger's record of the contained command, once there is one.
fn containment_record(ws: &Path) -> Option<Value> {
    common::records(ws).into_iter().find(|r| r["kind"] == "containment")
}

#[test]
fn the_command_cannot_end_its_supervisor() {
    let ws = workspace();
    let elsewhere = tempfile::tempdir().unwrap();
    let pid_file = elsewhere.path().join("supervisor.pid");
    // The command waits for its supervisor's pid, tries to end it with `taskkill /F`, goes on, and
    // ends with 0 (taskkill's failure would be its exit code otherwise: cmd's `echo` keeps it).
    let script = format!(
        "ping -n 3 127.0.0.1 >nul & for /f %p in ({}) do taskkill /F /PID %p & echo after> src\\auth\\after.txt & exit 0",
        pid_file.display()
    );
    let exec = Command::new(common::program())
        .args(["exec", "--session", "s", "--", "cmd", "/c", &script])
        .current_dir(ws.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = exec.id().to_string();
    fs::write(&pid_file, &pid).unwrap();
    let out = exec.wait_with_output().unwrap();
    let said = format!("{}{}", common::stdout(&out), common::stderr(&out));
    assert_eq!(out.status.code(), Some(0), "the supervisor lived to report the command's own end: {said}");
    assert!(said.contains(&pid), "taskkill named the process it could not end: {said}");
    assert_eq!(fs::read_to_string(ws.path().join("src/auth/after.txt")).unwrap().trim_end(), "after");
    let record = containment_record(ws.path()).expect("the command's changes are recorded");
    assert_eq!(record["files"][0]["path"], "src/auth/after.txt", "{record}");
    assert_eq!(record["data"]["cancelled"], false, "{record}");
}

#[test]
fn ending_the_shell_that_started_it_stops_the_command_and_still_records_it() {
    let ws = workspace();
    let elsewhere = tempfile::tempdir().unwrap();
    // The program at a path cmd reads as Windows writes it (a temporary folder's), not as the
    // build wrote it.
    let program = elsewhere.path().join("chokepoint.exe");
    fs::copy(common::program(), &program).unwrap();
    let report = elsewhere.path().join("report.json");
    let line = format!(
        "\"{}\" exec --session s --report \"{}\" -- cmd /c \"echo before> src\\auth\\before.txt & ping -n 120 127.0.0.1 >nul & echo late> src\\auth\\late.txt\"",
        program.display(),
        report.display()
    );
    // The agent's shell, as Codex or Gemini CLI start one for a command.
    let mut shell = Command::new("cmd").raw_arg(format!("/d /s /c \"{line}\"")).current_dir(ws.path()).spawn().unwrap();
    assert!(until(Duration::from_secs(60), || ws.path().join("src/auth/before.txt").exists()), "the command started");
    // The agent cancels: it ends its shell (`chokepoint exec` itself it could not end).
    shell.kill().unwrap();
    shell.wait().unwrap();
    assert!(until(Duration::from_secs(60), || report.exists()), "the supervisor stopped the command and reported it");
    let r: Value = serde_json::from_str(&fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(r["cancelled"], true, "{r}");
    assert_eq!(r["allowed"], serde_json::json!([{ "path": "src/auth/before.txt", "kind": "created" }]), "{r}");
    assert!(!ws.path().join("src/auth/late.txt").exists(), "the command was stopped");
    let record = containment_record(ws.path()).expect("the cancelled command is recorded");
    assert_eq!(record["data"]["cancelled"], true, "{record}");
    assert_eq!(record["files"][0]["path"], "src/auth/before.txt", "{record}");
}
