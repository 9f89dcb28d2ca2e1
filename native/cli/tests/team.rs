//! A team on several machines, through the `chokepoint` program: two clones of one origin, each a
//! "machine" (its own state, its own `CHOKEPOINT_MACHINE`), sharing leases on one real PostgreSQL
//! server (core/tests/support/postgres.rs). What people look at (`intent list`, `sessions`,
//! `doctor`) says the holder's machine and the database's state; Claude Code's hook is refused in
//! the form that blocks it, with the reason naming the database when it is gone.

#[path = "../../core/tests/support/postgres.rs"]
mod postgres;

mod common;

use common::{git, program, stderr, stdout};
use postgres::Server;
use serde_json::{Value, json};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const INTENTS: &str = "version: 1
active_intents:
  - id: INT-001
    name: Harden login
    status: IN_PROGRESS
    owned_scope: [src/auth/**]
  - id: INT-002
    name: Billing
    status: IN_PROGRESS
    owned_scope: [src/billing/**]
";

struct Machine {
    _dir: tempfile::TempDir,
    root: PathBuf,
    env: Vec<(String, String)>,
}

fn origin() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join(".orchestration")).unwrap();
    fs::create_dir_all(dir.path().join("src/auth")).unwrap();
    fs::write(dir.path().join(".orchestration/active_intents.yaml"), INTENTS).unwrap();
    fs::write(dir.path().join(".orchestration/hooks.yaml"), "version: 1\n").unwrap();
    fs::write(dir.path().join("src/auth/login.js"), "x").unwrap();
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-qm", "start"]);
    dir
}

fn machine(origin: &Path, name: &str, mut env: Vec<(String, String)>) -> Machine {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["clone", "-q", origin.to_str().unwrap(), name]);
    env.push(("CHOKEPOINT_MACHINE".into(), name.into()));
    Machine { root: dir.path().join(name), _dir: dir, env }
}

impl Machine {
    fn run(&self, args: &[&str]) -> Output {
        Command::new(program())
            .args(args)
            .args(["--workspace", self.root.to_str().unwrap()])
            .env_remove("CHOKEPOINT_HOOK_DEPTH")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .output()
            .unwrap()
    }

    /// Claude Code's hook on a write of `src/auth/login.js` by session `session`: its JSON answer.
    fn claude_write(&self, session: &str) -> Value {
        let input = json!({
            "session_id": session, "cwd": self.root, "hook_event_name": "PreToolUse", "tool_name": "Write",
            "tool_input": { "file_path": self.root.join("src/auth/login.js"), "content": "y\n" }, "tool_use_id": "t",
        });
        let mut child = common::as_agent()
            .args(["hook", "--agent", "claude", "--local", "--workspace", self.root.to_str().unwrap()])
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input.to_string().as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        let text = stdout(&out);
        if text.trim().is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap() }
    }
}

/// Claude Code's verdict and reason in a hook's answer (no decision: allowed).
fn decision(answer: &Value) -> (String, String) {
    let field = |p: &str, or: &str| answer.pointer(p).and_then(Value::as_str).unwrap_or(or).to_owned();
    (field("/hookSpecificOutput/permissionDecision", "allow"), field("/hookSpecificOutput/permissionDecisionReason", ""))
}

#[test]
#[cfg_attr(windows, ignore = "starts a PostgreSQL server from Debian's Unix binaries, which a Windows test cannot run")]
fn the_second_machine_is_refused_and_every_view_names_the_holders_machine() {
    let server = Server::start();
    let origin = origin();
    let alpha = machine(origin.path(), "alpha", server.env());
    let beta = machine(origin.path(), "beta", server.env());

    let out = alpha.run(&["intent", "select", "--session", "claude:one", "--agent", "claude", "INT-001"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let out = beta.run(&["intent", "select", "--session", "claude:two", "--agent", "claude", "INT-001"]);
    assert!(!out.status.success());
    let refusal = format!("{}{}", stdout(&out), stderr(&out));
    let holder = "locked by session `claude:one` (agent `claude`) on machine `alpha` in worktree `alpha` on branch `main`";
    assert!(refusal.contains(holder), "the refusal names holder, agent, machine, worktree and branch: {refusal}");
    // Claude Code on beta writing under the intent alpha holds is denied in the form that blocks it.
    let (verdict, reason) = decision(&beta.claude_write("two"));
    assert_eq!(verdict, "deny", "{reason}");
    assert_eq!(decision(&alpha.claude_write("one")).0, "allow");

    let listed: Value = serde_json::from_str(&stdout(&beta.run(&["intent", "list", "--json"]))).unwrap();
    assert_eq!(listed[0]["holder"], "claude:one");
    assert_eq!(listed[0]["machine"], "alpha");
    assert_eq!(listed[0]["worktree"], "alpha");
    let text = stdout(&beta.run(&["intent", "list"]));
    assert!(text.contains("INT-001  held by session `claude:one` (agent `claude`) on machine `alpha` in worktree `alpha`"), "{text}");

    let doctor = beta.run(&["doctor", "--json"]);
    let report: Value = serde_json::from_str(&stdout(&doctor)).unwrap();
    let c = &report["coordination"];
    assert_eq!(c["mode"], "team", "{c}");
    assert_eq!(c["source"], "CHOKEPOINT_COORDINATION_URL");
    assert_eq!(c["machine"], "beta");
    assert_eq!(c["reachable"], true);
    assert_eq!(c["schema_versions"]["leases"], 2, "{c}");
    assert_eq!(c["database"], format!("postgres://chokepoint@127.0.0.1:{}/chokepoint", server.port()));
    let text = stdout(&beta.run(&["doctor"]));
    assert!(text.contains("coordination: the team's database postgres://chokepoint@127.0.0.1:"), "{text}");
    assert!(text.contains("reachable; schema versions: "), "{text}");
    assert!(
        text.contains("each hook alone also connects to it"),
        "without a live engine, doctor says what the database costs each hook: {text}"
    );
}

#[test]
#[cfg_attr(windows, ignore = "starts a PostgreSQL server from Debian's Unix binaries, which a Windows test cannot run")]
fn a_database_that_is_gone_denies_naming_it_and_doctor_says_so_without_the_password() {
    let server = Server::start();
    let origin = origin();
    // The password in the URL, from the environment (never in hooks.yaml).
    let env = vec![("CHOKEPOINT_COORDINATION_URL".to_owned(), server.url_with_password())];
    let alpha = machine(origin.path(), "alpha", env);
    let out = alpha.run(&["intent", "select", "--session", "claude:one", "--agent", "claude", "INT-001"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert_eq!(decision(&alpha.claude_write("one")).0, "allow");

    server.kill();
    let (verdict, reason) = decision(&alpha.claude_write("one"));
    assert_eq!(verdict, "deny", "{reason}");
    assert!(reason.contains(&format!("127.0.0.1:{}", server.port())) && reason.contains("cannot be reached"), "{reason}");
    assert!(!reason.contains(server.password()), "the password leaked: {reason}");

    let doctor = alpha.run(&["doctor"]);
    let text = stdout(&doctor);
    assert!(text.contains("  failing: the team's coordination database"), "{text}");
    assert!(!text.contains(server.password()), "the password leaked: {text}");
    assert_eq!(doctor.status.code(), Some(1), "an unreachable database fails doctor");

    server.restart();
    assert_eq!(decision(&alpha.claude_write("one")).0, "allow", "the lease outlived the server's death");
}
