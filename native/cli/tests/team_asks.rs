//! Asks answered anywhere: two "machines" (two clones of one origin repository, each with its own
//! `.orchestration` state and `CHOKEPOINT_MACHINE`) share one real PostgreSQL server started by the
//! test. An agent's hook on machine A judges alone (no live engine there) and its chain asks about a
//! write: the Pending is published to the team's database, `chokepoint approvals` on machine B lists
//! it with machine A named, and B's decision (approve, reject with a reason) reaches A's hook, which
//! records the decider and their machine in A's ledger. Two deciders at once: exactly one wins, the
//! other is told who. The database killed while the hook waits: the fallback denies, naming the
//! database, within the hook's deadline. A decision whose notification was lost is caught up when the
//! listener's connection comes back.

#[path = "../../core/tests/support/postgres.rs"]
mod postgres;

mod common;

use common::{git, stderr, stdout};
use serde_json::{Value, json};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const INTENTS: &str = "version: 1
active_intents:
  - id: INT-001
    name: Sources
    status: IN_PROGRESS
    owned_scope: ['src/**']
";

/// A chain that asks a person about every write.
const CONFIRM_WRITES: &str =
    "version: 1\nhooks:\n  PreToolUse:\n    - name: confirm\n      tool: Write\n      ask: a person confirms every write\n";

/// An origin repository and its clones, one per machine.
struct Team {
    _dir: tempfile::TempDir,
    server: postgres::Server,
    machines: Vec<Machine>,
}

struct Machine {
    name: String,
    ws: PathBuf,
    runtime: tempfile::TempDir,
    env: Vec<(String, String)>,
}

fn team(names: &[&str]) -> Team {
    let server = postgres::Server::start();
    let dir = tempfile::tempdir().unwrap();
    let origin = dir.path().join("origin");
    common::governed_repo(&origin, CONFIRM_WRITES, Some(INTENTS));
    let machines = names
        .iter()
        .map(|name| {
            let ws = dir.path().join(name);
            git(dir.path(), &["clone", "-q", origin.to_str().unwrap(), ws.to_str().unwrap()]);
            let mut env = server.env();
            env.push(("CHOKEPOINT_MACHINE".into(), (*name).into()));
            Machine { name: (*name).into(), ws, runtime: common::runtime_dir(), env }
        })
        .collect();
    Team { _dir: dir, server, machines }
}

impl Machine {
    /// `chokepoint ARGS --workspace ws` on this machine, as a person runs it.
    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(common::program());
        command
            .args(args)
            .args(["--workspace", self.ws.to_str().unwrap()])
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env("XDG_RUNTIME_DIR", self.runtime.path())
            .env_remove("CLAUDECODE")
            .env_remove("CHOKEPOINT_HOOK_DEPTH");
        command
    }

    fn approvals(&self, args: &[&str]) -> Output {
        let mut all = vec!["approvals"];
        all.extend_from_slice(args);
        self.run(&all)
    }

    /// Claude Code's PreToolUse for a Write of `file`, sent to a hook process on this machine (as an
    /// agent runs it), left running.
    fn claude_writes(&self, session: &str, file: &str, more: &[&str]) -> Child {
        let input = json!({
            "session_id": session, "cwd": self.ws, "permission_mode": "default", "hook_event_name": "PreToolUse",
            "tool_name": "Write", "tool_input": { "file_path": self.ws.join(file), "content": "x\n" }, "tool_use_id": "toolu_01",
        });
        let mut child = common::as_agent()
            .args(["hook", "--agent", "claude", "--workspace", self.ws.to_str().unwrap()])
            .args(more)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env("XDG_RUNTIME_DIR", self.runtime.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input.to_string().as_bytes()).unwrap();
        child
    }

    /// The one open Pending `approvals list --json` shows here, once it does.
    fn pending(&self) -> Value {
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            let out = self.approvals(&["list", "--json"]);
            assert!(out.status.success(), "{}", stderr(&out));
            let listed: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
            if let [one] = listed.as_slice() {
                return one.clone();
            }
            assert!(listed.len() < 2, "one pending, listed once: {listed:?}");
            assert!(Instant::now() < until, "the ask reaches {}'s list", self.name);
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// The hook's answer: `(permissionDecision or "allow", the whole reply)`.
fn reply(child: Child) -> (String, String) {
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    let answer: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    let decision = answer.pointer("/hookSpecificOutput/permissionDecision").and_then(Value::as_str).unwrap_or("allow");
    (decision.to_owned(), text)
}

fn select(machine: &Machine, session: &str) {
    let out = machine.run(&["intent", "select", "--session", session, "--agent", "claude", "INT-001"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
#[cfg_attr(windows, ignore = "starts a PostgreSQL server from Debian's Unix binaries, which a Windows test cannot run")]
fn an_ask_raised_on_one_machine_is_answered_on_another() {
    let team = team(&["machine-a", "machine-b"]);
    let (a, b) = (&team.machines[0], &team.machines[1]);
    select(a, "claude:s1");

    // Approved on B (no live engine there: the CLI reads and decides in the database).
    let waiting = a.claude_writes("s1", "src/a.ts", &[]);
    let open = b.pending();
    assert_eq!((&open["machine"], &open["subject"]["agent"]), (&json!("machine-a"), &json!("claude")), "{open}");
    assert_eq!(open["session_id"], "claude:s1", "{open}");
    let text = stdout(&b.approvals(&["list"]));
    assert!(text.contains("on machine machine-a") && text.contains("src/a.ts"), "{text}");
    let id = open["id"].as_str().unwrap().to_owned();
    let shown = stdout(&b.approvals(&["show", &id]));
    assert!(shown.contains("machine-a") && shown.contains("Write"), "{shown}");
    let approved = b.approvals(&["approve", &id, "--note", "fine from B"]);
    assert!(approved.status.success(), "{}", stderr(&approved));
    assert!(stdout(&approved).contains("on machine-b"), "{}", stdout(&approved));
    let (decision, text) = reply(waiting);
    assert_eq!(decision, "allow", "approved on B: {text}");
    assert!(text.contains("fine from B"), "the note reaches the agent: {text}");
    // A's ledger records the decision with the decider's machine.
    let ledger = common::ledger_text(&a.ws).unwrap();
    let decided = ledger.lines().find(|l| l.contains(&id) && l.contains("\"decided_machine\":\"machine-b\""));
    assert!(decided.is_some_and(|l| l.contains("\"decided_by\":\"cli:")), "A's ledger records who decided {id}, and where: {ledger}");
    // Decided: it is gone from every list, and deciding it again is refused with who decided first.
    assert!(stdout(&b.approvals(&["list"])).contains("no open pendings"));
    let again = b.approvals(&["reject", &id, "--reason", "too late"]);
    assert!(!again.status.success() && stderr(&again).contains("decided first by cli:"), "{}", stderr(&again));

    // Rejected on B with a reason: the agent reads it.
    let waiting = a.claude_writes("s1", "src/b.ts", &[]);
    let id = b.pending()["id"].as_str().unwrap().to_owned();
    let rejected = b.approvals(&["reject", &id, "--reason", "not on Fridays"]);
    assert!(rejected.status.success(), "{}", stderr(&rejected));
    let (decision, text) = reply(waiting);
    assert!(decision == "deny" && text.contains("not on Fridays"), "{text}");
}

/// B runs a live engine (`chokepoint serve`, as VS Code would): it shows A's ask among its own
/// Pendings, and a third machine without one decides at the same moment as B's person. Exactly one
/// decision wins; the other is told who decided first; A's hook gets the winner's.
#[test]
#[cfg_attr(windows, ignore = "starts a PostgreSQL server from Debian's Unix binaries, which a Windows test cannot run")]
fn two_machines_deciding_at_once_exactly_one_wins() {
    let team = team(&["machine-a", "machine-b", "machine-c"]);
    let (a, b, c) = (&team.machines[0], &team.machines[1], &team.machines[2]);
    select(a, "claude:s1");
    let mut serve = b.command(&["serve"]).stderr(Stdio::piped()).spawn().unwrap();
    let mut said = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(serve.stderr.as_mut().unwrap()), &mut said).unwrap();
    assert!(said.contains("serving"), "{said}");

    for round in 0..3 {
        let waiting = a.claude_writes("s1", &format!("src/r{round}.ts"), &[]);
        let open = b.pending();
        assert_eq!(open["subject"]["machine"], "machine-a", "B's live engine shows A's ask: {open}");
        let id = open["id"].as_str().unwrap().to_owned();
        assert_eq!(c.pending()["id"], json!(id));
        let (from_b, from_c) = (
            b.command(&["approvals", "approve", &id]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap(),
            c.command(&["approvals", "reject", &id, "--reason", "C says no"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        );
        let (from_b, from_c) = (from_b.wait_with_output().unwrap(), from_c.wait_with_output().unwrap());
        assert!(
            from_b.status.success() != from_c.status.success(),
            "exactly one wins: B {} {} / C {} {}",
            stdout(&from_b),
            stderr(&from_b),
            stdout(&from_c),
            stderr(&from_c)
        );
        let loser = if from_b.status.success() { &from_c } else { &from_b };
        assert!(stderr(loser).contains("decided first by"), "the other is told who: {}", stderr(loser));
        let (decision, text) = reply(waiting);
        if from_b.status.success() {
            assert_eq!(decision, "allow", "B won: {text}");
        } else {
            assert!(decision == "deny" && text.contains("C says no"), "C won: {text}");
        }
    }
    let _ = serve.kill();
    let _ = serve.wait();
}

/// The database dies while A's hook waits: nobody on another machine can answer, and the hook's
/// fallback denies before its deadline, naming the database. Nothing hangs.
#[test]
#[cfg_attr(windows, ignore = "starts a PostgreSQL server from Debian's Unix binaries, which a Windows test cannot run")]
fn the_database_killed_while_an_ask_waits_falls_back_naming_it() {
    let team = team(&["machine-a", "machine-b"]);
    let (a, b) = (&team.machines[0], &team.machines[1]);
    select(a, "claude:s1");
    let started = Instant::now();
    let waiting = a.claude_writes("s1", "src/a.ts", &["--deadline", "8"]);
    b.pending();
    team.server.kill();
    let (decision, text) = reply(waiting);
    assert!(started.elapsed() < Duration::from_secs(12), "answered by its deadline: {:?}", started.elapsed());
    assert_eq!(decision, "deny", "{text}");
    assert!(text.contains("coordination database") && text.contains("127.0.0.1"), "the reason names the database: {text}");

    // The database is away from the start: the session's lease lives there too, so the gate refuses
    // the write before any ask is raised, at once, naming the database.
    let started = Instant::now();
    let (decision, text) = reply(a.claude_writes("s1", "src/b.ts", &["--deadline", "20"]));
    assert!(started.elapsed() < Duration::from_secs(12), "{:?}", started.elapsed());
    assert!(decision == "deny" && text.contains("coordination database") && text.contains("cannot be reached"), "{text}");
}

/// A decision whose notification A's listener never heard (written while its connection was cut,
/// with no NOTIFY) is read when the listener connects again: A's hook is answered.
#[test]
#[cfg_attr(windows, ignore = "starts a PostgreSQL server from Debian's Unix binaries, which a Windows test cannot run")]
fn a_decision_missed_during_a_disconnect_is_caught_up_on_reconnect() {
    let team = team(&["machine-a", "machine-b"]);
    let (a, b) = (&team.machines[0], &team.machines[1]);
    select(a, "claude:s1");
    let waiting = a.claude_writes("s1", "src/a.ts", &[]);
    let id = b.pending()["id"].as_str().unwrap().to_owned();
    team.server.psql(&format!(
        "UPDATE chokepoint.pendings SET status = 'approved', decision = '{{\"action\":\"approve\",\"note\":\"caught up\"}}', \
         decided_by = 'cli:someone', decided_machine = 'machine-b', decided_at_ms = 0 WHERE id = '{id}'"
    ));
    team.server.terminate_connections();
    let (decision, text) = reply(waiting);
    assert_eq!(decision, "allow", "{text}");
    assert!(text.contains("caught up"), "{text}");
}
