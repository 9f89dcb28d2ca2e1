//! `chokepoint sessions` and `chokepoint sessions revoke` against real processes: a session selects
//! from a terminal, Claude Code's hook (judging alone, `--local`) writes, a person revokes the lease
//! from another process, and the hook's next write is denied with the revocation.

mod common;

use serde_json::{Value, json};
use std::fs;
use std::path::Path;
use std::process::{Command, Output};

const INTENTS: &str = "version: 1
active_intents:
  - id: INT-SRC
    name: Sources
    status: IN_PROGRESS
    owned_scope: ['src/**']
";

fn program() -> &'static str {
    env!("CARGO_BIN_EXE_chokepoint")
}

fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    fs::create_dir_all(ws.path().join(".orchestration")).unwrap();
    fs::create_dir_all(ws.path().join("src")).unwrap();
    fs::write(ws.path().join(".orchestration/active_intents.yaml"), INTENTS).unwrap();
    fs::write(ws.path().join(".orchestration/hooks.yaml"), "version: 1\n").unwrap();
    ws
}

fn chokepoint(ws: &Path, args: &[&str]) -> Output {
    Command::new(program()).args(args).args(["--workspace", ws.to_str().unwrap()]).output().unwrap()
}

/// Claude Code's PreToolUse for a Write of `src/a.ts` in session `S1`, answered by a hook process
/// that judges alone. Returns the permission decision and its reason (none when it lets it through).
fn claude_writes(ws: &Path) -> Option<(String, String)> {
    let input = json!({
        "session_id": "S1",
        "cwd": ws,
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": { "file_path": ws.join("src/a.ts"), "content": "x\n" },
        "tool_use_id": "t1",
    });
    let out = common::claude_hook(ws, &input);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    if stdout.trim().is_empty() {
        return None;
    }
    let answer: Value = serde_json::from_str(&stdout).unwrap();
    let specific = &answer["hookSpecificOutput"];
    Some((specific["permissionDecision"].as_str().unwrap().to_owned(), specific["permissionDecisionReason"].as_str().unwrap().to_owned()))
}

fn sessions_json(ws: &Path) -> Vec<Value> {
    let out = chokepoint(ws, &["sessions", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice::<Value>(&out.stdout).unwrap().as_array().unwrap().clone()
}

#[test]
#[cfg_attr(
    windows,
    ignore = "a person's decision from a terminal rests on the chain of processes that started it, which Windows lets a process forge (it may name any process of its user as its child's parent): refused there by design (fails closed, serve::deciders)"
)]
fn a_revoked_session_is_denied_by_the_next_hook_process_with_who_and_why() {
    let ws = workspace();
    let ws = ws.path();
    let out = chokepoint(ws, &["intent", "select", "--session", "claude:S1", "--agent", "claude", "INT-SRC"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(claude_writes(ws), None, "the holder writes in its scope");

    let listed = sessions_json(ws);
    let claude = listed.iter().find(|s| s["session"] == "claude:S1").expect("the session is listed");
    assert_eq!(claude["label"], "Claude Code");
    assert_eq!(claude["lease"]["intent"], "INT-SRC");
    assert_eq!((claude["allowed"].as_u64(), claude["denied"].as_u64()), (Some(2), Some(0)));
    assert_eq!(claude["actions"][0]["tool"], "Write");

    let out = chokepoint(ws, &["sessions", "revoke", "claude:S1", "--reason", "this is not yours to change", "--by", "alice"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8(out.stdout).unwrap();
    assert!(said.contains("intent `INT-SRC` is free"), "{said}");

    let (decision, reason) = claude_writes(ws).expect("a revoked session's write is denied");
    assert_eq!(decision, "deny");
    assert!(
        reason.contains(
            "the lease of session `claude:S1` on intent `INT-SRC` was revoked by a person (alice via chokepoint sessions revoke, pid "
        ),
        "{reason}"
    );
    assert!(reason.contains("this is not yours to change") && reason.contains("ask the person"), "{reason}");
    assert!(!reason.contains("no intent is selected"), "not the generic refusal: {reason}");

    // Listed as revoked, with the denial counted and the revocation among its actions.
    let listed = sessions_json(ws);
    let claude = listed.iter().find(|s| s["session"] == "claude:S1").unwrap();
    assert_eq!(claude["lease"], Value::Null);
    let by = claude["revoked"]["by"].as_str().unwrap();
    assert!(by.starts_with("alice via chokepoint sessions revoke, pid "), "the person's name, and the process the kernel names: {by}");
    assert_eq!(claude["denied"].as_u64(), Some(1));
    assert!(claude["last_denial"]["reason"].as_str().unwrap().contains("was revoked by a person"));
    let text = String::from_utf8(chokepoint(ws, &["sessions"]).stdout).unwrap();
    assert!(text.contains("claude:S1  Claude Code  lease on INT-SRC revoked by alice via chokepoint sessions revoke"), "{text}");

    // Nothing left to revoke: exit 1, said.
    let again = chokepoint(ws, &["sessions", "revoke", "claude:S1"]);
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("session `claude:S1` holds no lease"));

    // The session selects again: its writes pass once more.
    let out = chokepoint(ws, &["intent", "select", "--session", "claude:S1", "--agent", "claude", "INT-SRC"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(claude_writes(ws), None);
}

/// Issue 30, across real processes: Claude Code's `Stop` (a hook process judging alone) ends the
/// turn of `claude:S1`; `chokepoint sessions` shows its lease idle, free to take; another session
/// selects the intent at once from a terminal; S1's next write, in another hook process, is told it
/// lost the intent and to whom.
#[test]
fn a_turn_that_ends_in_one_hook_process_frees_the_intent_for_the_next_session() {
    let ws = workspace();
    let ws = ws.path();
    let out = chokepoint(ws, &["intent", "select", "--session", "claude:S1", "--agent", "claude", "INT-SRC"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(claude_writes(ws), None, "the holder writes in its scope");

    let stop = json!({ "session_id": "S1", "cwd": ws, "hook_event_name": "Stop", "stop_hook_active": false });
    let out = common::claude_hook(ws, &stop);
    assert_eq!(out.status.code(), Some(0), "the turn may end: {}", String::from_utf8_lossy(&out.stderr));

    let listed = sessions_json(ws);
    let claude = listed.iter().find(|s| s["session"] == "claude:S1").unwrap();
    assert_eq!((claude["lease"]["intent"].as_str(), claude["lease"]["idle"].as_bool()), (Some("INT-SRC"), Some(true)), "{claude}");
    let text = String::from_utf8(chokepoint(ws, &["sessions"]).stdout).unwrap();
    let line = text.lines().find(|l| l.starts_with("claude:S1  Claude Code  ")).unwrap_or_default();
    assert!(line.contains("  idle on INT-SRC since ") && line.contains(", free to take"), "{text}");

    let out = chokepoint(ws, &["intent", "select", "--session", "codex:S2", "--agent", "codex", "INT-SRC"]);
    assert!(out.status.success(), "the next session takes the intent at once: {}", String::from_utf8_lossy(&out.stderr));
    let (decision, reason) = claude_writes(ws).expect("the first session's next write is refused");
    assert_eq!(decision, "deny");
    assert!(reason.starts_with("Chokepoint: session `claude:S1` lost its lock on intent `INT-SRC`"), "{reason}");
    assert!(reason.contains("session `codex:S2` (agent `codex`)"), "{reason}");
}
