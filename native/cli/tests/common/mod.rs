//! What the CLI's test crates share: a governed workspace in a temporary folder, the `chokepoint`
//! program run in it (as a person does, or as Claude Code's hook), and its ledger read back from disk.
// Each test crate that declares this module uses a part of it.
#![allow(dead_code)]

use serde_json::Value;
use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

pub fn program() -> &'static str {
    env!("CARGO_BIN_EXE_chokepoint")
}

/// A workspace whose `.orchestration/` holds these two files.
pub fn workspace(hooks: &str, intents: &str) -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    fs::create_dir_all(ws.path().join(".orchestration")).unwrap();
    fs::write(ws.path().join(".orchestration/hooks.yaml"), hooks).unwrap();
    fs::write(ws.path().join(".orchestration/active_intents.yaml"), intents).unwrap();
    ws
}

/// `chokepoint ARGS --workspace WS`, as a person or a CI job runs it (not from inside a hook).
pub fn chokepoint(ws: &Path, args: &[&str]) -> Output {
    Command::new(program()).args(args).args(["--workspace", ws.to_str().unwrap()]).env_remove("CHOKEPOINT_HOOK_DEPTH").output().unwrap()
}

/// One call of Claude Code's hook (`chokepoint hook --agent claude --local`) in a process of its own,
/// fed `input` on stdin as Claude Code feeds it; the process's output.
pub fn claude_hook(ws: &Path, input: &Value) -> Output {
    let mut child = as_agent()
        .args(["hook", "--agent", "claude", "--local", "--workspace", ws.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.to_string().as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

/// Claude Code's PreToolUse input for a `Write` of `file` in `ws`, as its hook reads it on stdin.
pub fn write_input(ws: &Path, file: &str) -> String {
    serde_json::json!({
        "session_id": "s1",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": ws,
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": { "file_path": ws.join(file), "content": "x\n" },
        "tool_use_id": "toolu_01",
    })
    .to_string()
}

/// A folder for `$XDG_RUNTIME_DIR` that only this user may enter, as the live engine's socket folder
/// requires.
pub fn runtime_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    #[cfg(unix)]
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    dir
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).unwrap()
}

/// The ledger's records, as written on disk.
pub fn records(ws: &Path) -> Vec<Value> {
    let text = ledger_text(ws).unwrap_or_default();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// Every line of the workspace's ledger, each with its newline: its chains one after another, in
/// the order they began (`ledger::chains::all_lines`).
#[allow(dead_code)]
pub fn ledger_text(ws: impl AsRef<Path>) -> std::io::Result<String> {
    let lines = chokepoint_core::ledger::chains::all_lines(&chokepoint_core::Sidecar::new(ws.as_ref()));
    Ok(lines.into_iter().map(|l| l + "\n").collect())
}

/// `chokepoint trace verify` passes: the ledger's hash chain, sequence and head are intact.
pub fn verify(ws: &Path) {
    let out = chokepoint(ws, &["trace", "verify"]);
    assert!(out.status.success(), "the ledger's chain verifies: {}{}", stdout(&out), stderr(&out));
}

/// `chokepoint ARGS` run as an agent runs its hooks: as the child of a process of its own (a shell
/// running a script, which stays while the hook runs), never of the test itself. A hook's parent is
/// an agent's process to the engine (`serve::deciders`), which refuses that process and everything
/// under it the decisions a person takes: the test, which plays the person too, must not be one.
///
/// Windows has no `sh` for the script, and the engine reads no process's parent there (it refuses a
/// person's decision from any terminal instead): the hook is the test's own child.
pub fn as_agent() -> Command {
    if cfg!(windows) {
        return Command::new(program());
    }
    let mut command = Command::new("/bin/sh");
    command.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/common/agent.sh")).arg(program());
    command
}

/// `chokepoint hook --agent claude` on `ws`, started as an agent's process (`as_agent`) in the
/// background with `input` on its stdin and `runtime` as its runtime folder (where it finds a live
/// engine's socket); the test reads its answer when it has done what the hook waits for.
pub fn spawn_claude_hook(ws: &Path, runtime: &Path, input: &str, extra: &[&str]) -> std::process::Child {
    let mut child = as_agent()
        .args(["hook", "--agent", "claude", "--workspace", ws.to_str().unwrap()])
        .args(extra)
        .env("XDG_RUNTIME_DIR", runtime)
        // Windows' runtime folder, which names the live engine's pipe there.
        .env("LOCALAPPDATA", runtime)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    child
}

#[path = "../../../core/tests/support/git.rs"]
mod git_support;
/// `git` as every test of the repository runs it (the core's `tests/support/git.rs`).
#[allow(unused_imports)] // every test binary includes common/, and not each one uses both
pub use git_support::{git, git_output};

/// A governed repository at `root` with its first commit: `.orchestration/hooks.yaml` (and
/// `active_intents.yaml` when given) and `src/lib.ts`, for the tests of worktrees and of a team's
/// clones.
pub fn governed_repo(root: &Path, hooks: &str, intents: Option<&str>) {
    std::fs::create_dir_all(root.join(".orchestration")).unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join(".orchestration/hooks.yaml"), hooks).unwrap();
    if let Some(intents) = intents {
        std::fs::write(root.join(".orchestration/active_intents.yaml"), intents).unwrap();
    }
    std::fs::write(root.join("src/lib.ts"), "export {};\n").unwrap();
    git(root, &["init", "-q"]);
    git(root, &["add", "."]);
    git(root, &["commit", "-q", "-m", "governed"]);
}
