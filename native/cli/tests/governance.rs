//! Issue 27 against real processes: a ledger removed with its state database is a verification
//! failure and stops the gates (the head's copy outside the workspace remembers it), and a damaged
//! or missing runtime file is refused with a reason, never a crash.

mod common;

use common::{chokepoint, claude_hook, program, stderr, stdout};
use serde_json::json;
use std::fs;
use std::path::Path;
use std::process::Command;

const INTENTS: &str = "version: 1
active_intents:
  - id: INT-ALL
    name: Everything
    status: IN_PROGRESS
    owned_scope: ['**']
";

fn select(ws: &Path, session: &str) -> std::process::Output {
    Command::new(program())
        .args(["intent", "select", "--workspace", ws.to_str().unwrap(), "--session", session, "--agent", "claude", "INT-ALL"])
        .output()
        .unwrap()
}

fn write(ws: &Path, path: &str) -> std::process::Output {
    claude_hook(
        ws,
        &json!({"session_id":"me","cwd": ws,"hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path": path,"content":"x"}}),
    )
}

fn remove_state(ws: &Path, names: &[&str]) {
    for name in names {
        let _ = fs::remove_file(ws.join(".orchestration").join(name));
    }
}

/// Issue 27, item 3: the ledger's chain and `state.db*` removed (as a shell under scope `**` could)
/// after some records. Verification fails, naming the removal; the gates keep working (the writer
/// begins a new chain, issue 28: a branch switch removes a chain's file too); a reseal (a person's
/// acceptance) clears the removed chain's heads, and verification passes again.
#[test]
fn a_ledger_removed_with_its_state_database_fails_verification_and_gates_go_on_in_a_new_chain() {
    let ws = common::workspace("version: 1\n", INTENTS);
    assert!(select(ws.path(), "claude:me").status.success());
    assert_eq!(write(ws.path(), "src/a.ts").status.code(), Some(0), "in scope");
    let records = common::records(ws.path()).len();
    assert!(records >= 2, "{records}");
    common::verify(ws.path());
    let sidecar = chokepoint_core::Sidecar::new(ws.path());
    let chain = chokepoint_core::ledger::chains::current(&sidecar).unwrap();
    let ledger = chain.path.clone();
    let name = format!("trace/{}.jsonl", chain.chain);

    // The chain alone: the head in state.db remembers it.
    let kept = fs::read(&ledger).unwrap();
    remove_state(ws.path(), &[&name]);
    let out = chokepoint(ws.path(), &["trace", "verify"]);
    assert_eq!(out.status.code(), Some(14), "{}{}", stdout(&out), stderr(&out));
    assert!(stderr(&out).contains("the ledger was removed"), "{}", stderr(&out));
    fs::write(&ledger, &kept).unwrap();
    common::verify(ws.path());

    // The chain and the state database with its log: the copy outside the workspace remembers it.
    remove_state(ws.path(), &[&name, "state.db", "state.db-wal", "state.db-shm"]);
    let out = chokepoint(ws.path(), &["trace", "verify"]);
    assert_eq!(out.status.code(), Some(14), "{}{}", stdout(&out), stderr(&out));
    assert!(stderr(&out).contains(&format!("the ledger was removed: its head says {records} records were written")), "{}", stderr(&out));
    assert!(stderr(&out).contains("that head is the copy kept outside the workspace"), "{}", stderr(&out));
    // Emptied rather than removed: shortened.
    fs::write(&ledger, "").unwrap();
    let out = chokepoint(ws.path(), &["trace", "verify"]);
    assert!(stderr(&out).contains(&format!("the ledger was shortened: it has 0 records but its head says {records}")), "{}", stderr(&out));

    // The next gate works: the intent is selected again (the leases went with state.db), and a write
    // in scope is allowed and recorded, in a new chain; the emptied one is left as found.
    assert!(select(ws.path(), "claude:me").status.success());
    assert_eq!(write(ws.path(), "src/b.ts").status.code(), Some(0), "the gate goes on");
    assert_ne!(chokepoint_core::ledger::chains::current(&sidecar).unwrap().chain, chain.chain);
    assert_eq!(fs::read(&ledger).unwrap(), b"", "the emptied chain is left as found");
    assert_eq!(chokepoint(ws.path(), &["trace", "verify"]).status.code(), Some(14), "and still found");

    // A person accepts the loss: the removed chain's heads are cleared, a new chain says so.
    let out = chokepoint(ws.path(), &["trace", "reseal", "--reason", "a shell removed it"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let out = chokepoint(ws.path(), &["trace", "verify", "--json"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let verified: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(verified["headOutside"]["count"], 1, "{verified}");
    assert_eq!(write(ws.path(), "src/c.ts").status.code(), Some(0), "recording goes on");
    common::verify(ws.path());
}

/// A fresh workspace has no head anywhere and verifies; the copy outside the workspace is private.
// Unix permission bits: on Windows a file's privacy is the ACL it inherits from its folder: Chokepoint sets none of its own yet (README).
#[cfg(unix)]
#[test]
fn the_copy_of_the_head_is_kept_outside_the_workspace_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let ws = common::workspace("version: 1\n", INTENTS);
    common::verify(ws.path());
    assert!(chokepoint(ws.path(), &["trace", "record", "--event", r#"{"event":"ci-run"}"#]).status.success());
    let out = chokepoint(ws.path(), &["trace", "verify", "--json"]);
    let verified: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let path = Path::new(verified["headOutsidePath"].as_str().unwrap()).to_owned();
    assert!(!path.starts_with(ws.path()), "{}", path.display());
    assert_eq!(verified["headOutside"]["count"], 1);
    assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(fs::metadata(path.parent().unwrap()).unwrap().permissions().mode() & 0o777, 0o700);
    assert!(fs::read_to_string(&path).unwrap().contains(ws.path().to_str().unwrap()), "names its workspace");
}

/// Issue 27, item 9: the runtime files are created owner-only (they were 0644): the ledger, its
/// lock, the state database with its log and shared memory, the index.
// Unix permission bits: on Windows a file's privacy is the ACL it inherits from its folder: Chokepoint sets none of its own yet (README).
#[cfg(unix)]
#[test]
fn runtime_files_are_created_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let ws = common::workspace("version: 1\n", INTENTS);
    assert!(select(ws.path(), "claude:me").status.success());
    assert_eq!(write(ws.path(), "src/a.ts").status.code(), Some(0));
    assert!(chokepoint(ws.path(), &["trace", "show"]).status.success(), "builds the index");
    let dir = ws.path().join(".orchestration");
    let mut seen = Vec::new();
    for name in
        ["agent_trace.jsonl", "agent_trace.lock", "state.db", "state.db-wal", "state.db-shm", "trace.db", "trace.db-wal", "trace.db-shm"]
    {
        let Ok(meta) = fs::metadata(dir.join(name)) else { continue };
        assert_eq!(meta.permissions().mode() & 0o777, 0o600, "{name}");
        seen.push(name);
    }
    for name in ["agent_trace.lock", "state.db", "trace.db"] {
        assert!(seen.contains(&name), "{name} exists: {seen:?}");
    }
    // The current chain too.
    let chain = chokepoint_core::ledger::chains::current(&chokepoint_core::Sidecar::new(ws.path())).unwrap().path;
    assert_eq!(fs::metadata(&chain).unwrap().permissions().mode() & 0o777, 0o600, "{}", chain.display());
    // A person who widened one keeps it widened.
    fs::set_permissions(&chain, fs::Permissions::from_mode(0o640)).unwrap();
    assert_eq!(write(ws.path(), "src/b.ts").status.code(), Some(0));
    assert_eq!(fs::metadata(&chain).unwrap().permissions().mode() & 0o777, 0o640);
}

/// Issue 27, item 9: a contained command that truncates `state.db-shm` (SQLite's shared memory,
/// which the `exec` process has mapped) killed `exec` with SIGBUS (exit 135). Now the damage is
/// refused with a reason, and the next command works.
#[test]
#[cfg_attr(
    windows,
    ignore = "SIGBUS from a shared-memory file shortened under its mapping is Unix's; Windows refuses to shorten a file another process maps"
)]
fn a_truncated_shared_memory_file_is_refused_with_a_reason_not_a_crash() {
    // Observed: an isolated command could not reach the real file at all (its truncation lands in
    // its own layer and is refused); the engine must survive a process that can.
    let ws = common::workspace("version: 1\ngatekeeper:\n  landlock: off\n  isolation: off\n", INTENTS);
    assert!(select(ws.path(), "claude:me").status.success());
    assert!(ws.path().join(".orchestration/state.db-shm").exists());
    let exec = |script: &str| {
        Command::new(program())
            .args(["exec", "--workspace", ws.path().to_str().unwrap(), "--session", "claude:me", "--", "sh", "-c", script])
            .current_dir(ws.path())
            .output()
            .unwrap()
    };
    let out = exec("truncate -s 0 .orchestration/state.db-shm");
    assert_ne!(out.status.code(), Some(135), "no SIGBUS: {}", stderr(&out));
    assert!(out.status.code().is_some(), "exited, not killed by a signal: {:?}", out.status);
    assert!(stderr(&out).contains("state.db-shm was shortened"), "{}", stderr(&out));
    let out = exec("echo ok > ok.txt");
    assert_eq!(out.status.code(), Some(0), "the next command runs and is recorded: {}", stderr(&out));
    common::verify(ws.path());
}

/// Issue 27, item 9: with active_intents.yaml deleted, scope checks are off; `config check` said
/// "configuration ok … 0 intents" and exited 0. It now warns and exits 5, `info` warns, and
/// `doctor` counts it as an inert guard (exit 1).
#[test]
fn a_missing_intents_file_is_said_loudly_by_config_check_info_and_doctor() {
    let ws = common::workspace("version: 1\n", INTENTS);
    let out = chokepoint(ws.path(), &["config", "check"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    fs::remove_file(ws.path().join(".orchestration/active_intents.yaml")).unwrap();

    let out = chokepoint(ws.path(), &["config", "check"]);
    assert_eq!(out.status.code(), Some(5), "{}{}", stdout(&out), stderr(&out));
    assert!(stdout(&out).contains("scope checks are OFF"), "{}", stdout(&out));
    assert!(!stdout(&out).contains("configuration ok"), "{}", stdout(&out));
    assert!(
        stderr(&out).starts_with("warning: ") && stderr(&out).contains("active_intents.yaml is missing: scope checks are off"),
        "{}",
        stderr(&out)
    );

    let out = chokepoint(ws.path(), &["info", "--json"]);
    let info: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(info["warnings"][0].as_str().unwrap().contains("scope checks are off"), "{info}");

    let out = chokepoint(ws.path(), &["doctor"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stdout(&out).contains("configuration: inert: ") && stdout(&out).contains("scope checks are off"), "{}", stdout(&out));
    let out = chokepoint(ws.path(), &["doctor", "--json"]);
    let doctor: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(doctor["configuration"]["warnings"].as_array().map(Vec::len), Some(1), "{doctor}");
    assert!(!ws.path().join(".orchestration/state.db").exists(), "checking creates no state");
}
