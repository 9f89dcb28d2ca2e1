//! An external agent's ask taken to a person: `chokepoint serve` up, `chokepoint hook --agent claude`
//! waiting in the background on a write that hooks.yaml asks about, and the person deciding with
//! `chokepoint approvals` (or at `chokepoint serve --review`'s prompt, with a scripted stdin and an
//! `EDITOR` that is a small script). Real processes, a real socket, the real ledger.
// Unix-only: `chokepoint serve` from a terminal is refused on Windows, where no person can be told
// from an agent's process (serve::deciders), and Windows has no HTTP endpoint yet (serve::server);
// the live engine over Windows' named pipe, as VS Code's window serves it, is in served.rs.
#![cfg(unix)]

mod common;

use common::runtime_dir;

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_chokepoint");

const ASK_WRITES: &str =
    "version: 1\nhooks:\n  PreToolUse:\n    - name: confirm\n      tool: Write\n      ask: a person confirms every write\n";

/// A `chokepoint serve` process: its stderr and stdout as lines, its stdin when it reviews.
struct Served {
    child: Child,
    stderr: mpsc::Receiver<String>,
    stdout: mpsc::Receiver<String>,
    stdin: Option<ChildStdin>,
}

fn lines(read: impl std::io::Read + Send + 'static) -> mpsc::Receiver<String> {
    let (send, receive) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(read).lines().map_while(Result::ok) {
            let _ = send.send(line);
        }
    });
    receive
}

/// The next line of `from` that contains `text` (the lines before it are dropped).
fn wait_for(from: &mpsc::Receiver<String>, text: &str) -> String {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        match from.recv_timeout(until.saturating_duration_since(Instant::now())) {
            Ok(line) if line.contains(text) => return line,
            Ok(_) => {}
            Err(e) => panic!("never said `{text}`: {e}"),
        }
    }
}

impl Served {
    fn start(ws: &Path, runtime: &Path, extra: &[&str], env: &[(&str, &Path)]) -> Served {
        let mut command = Command::new(BIN);
        command.args(["serve", "--workspace", ws.to_str().unwrap()]).args(extra).env("XDG_RUNTIME_DIR", runtime);
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child =
            command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("chokepoint serve starts");
        let stderr = lines(child.stderr.take().unwrap());
        let stdout = lines(child.stdout.take().unwrap());
        let stdin = child.stdin.take();
        let served = Served { child, stderr, stdout, stdin };
        wait_for(&served.stderr, "serving ");
        served
    }

    /// Types `text` at its review's prompt.
    fn type_in(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(text.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn workspace(hooks: &str) -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join(".orchestration")).unwrap();
    std::fs::create_dir_all(ws.path().join("src")).unwrap();
    std::fs::write(
        ws.path().join(".orchestration/active_intents.yaml"),
        "version: 1\nactive_intents:\n  - id: INT-1\n    name: Sources\n    status: IN_PROGRESS\n    owned_scope: ['src/**']\n",
    )
    .unwrap();
    std::fs::write(ws.path().join(".orchestration/hooks.yaml"), hooks).unwrap();
    let out = Command::new(BIN)
        .args(["intent", "select", "--workspace", ws.path().to_str().unwrap(), "--session", "claude:s1", "INT-1"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    ws
}

fn write_input(ws: &Path, file: &str, mode: &str) -> String {
    json!({
        "session_id": "s1",
        "cwd": ws,
        "permission_mode": mode,
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": { "file_path": ws.join(file), "content": "x\n" },
        "tool_use_id": "toolu_01",
    })
    .to_string()
}

/// `chokepoint hook --agent claude`, started in the background with `input` on its stdin.
fn hook(ws: &Path, runtime: &Path, input: &str, extra: &[&str]) -> Child {
    common::spawn_claude_hook(ws, runtime, input, extra)
}

/// Its exit code and stdout (a JSON object, or `null` when it printed nothing).
fn finished(child: Child) -> (i32, Value, String) {
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let json = if stdout.is_empty() { Value::Null } else { serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}")) };
    (out.status.code().unwrap(), json, String::from_utf8(out.stderr).unwrap())
}

/// `chokepoint approvals <args> --workspace ws`.
fn approvals(ws: &Path, runtime: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(BIN)
        .arg("approvals")
        .args(args)
        .args(["--workspace", ws.to_str().unwrap()])
        .env("XDG_RUNTIME_DIR", runtime)
        // A person's terminal: none of an agent shell's marks, even when the tests run under one.
        .env_remove("CLAUDECODE")
        .env_remove("GEMINI_CLI")
        .env_remove("CHOKEPOINT_HOOK_DEPTH")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or_default().as_bytes()).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

/// The first open Pending, once there is one.
fn pending(ws: &Path, runtime: &Path) -> Value {
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let out = approvals(ws, runtime, &["list", "--json"], None);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let list: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
        if let Some(first) = list.into_iter().next() {
            return first;
        }
        assert!(Instant::now() < until, "no pending opened");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The ledger's `approval` records of one phase.
fn approval_records(ws: &Path, phase: &str) -> Vec<Value> {
    let text = common::ledger_text(ws).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["kind"] == "approval" && r["data"]["phase"] == phase)
        .collect()
}

fn decision(reply: &Value) -> &str {
    reply.pointer("/hookSpecificOutput/permissionDecision").and_then(Value::as_str).unwrap_or("")
}

#[test]
fn an_ask_waits_for_a_person_and_their_approval_lets_the_write_run() {
    let (ws, runtime) = (workspace(ASK_WRITES), runtime_dir());
    let _server = Served::start(ws.path(), runtime.path(), &[], &[]);
    let waiting = hook(ws.path(), runtime.path(), &write_input(ws.path(), "src/a.ts", "default"), &[]);
    let open = pending(ws.path(), runtime.path());
    assert_eq!((open["kind"].as_str(), open["status"].as_str()), (Some("tool_call"), Some("open")), "{open}");
    assert_eq!(open["subject"]["agent"], "claude", "the Pending names the agent: {open}");
    assert_eq!(open["session_id"], "claude:s1", "and the session: {open}");
    assert_eq!(open["subject"]["tool"], "Write");
    assert_eq!(open["subject"]["input"]["content"], "x\n", "and carries the tool input: {open}");
    assert_eq!(open["subject"]["paths"], json!(["src/a.ts"]));
    let id = open["id"].as_str().unwrap();

    let shown = approvals(ws.path(), runtime.path(), &["show", id], None);
    let shown = String::from_utf8(shown.stdout).unwrap();
    assert!(
        shown.contains("Claude Code (claude)") && shown.contains("claude:s1") && shown.contains("a person confirms every write"),
        "{shown}"
    );
    assert!(shown.contains("+++ b/src/a.ts") && shown.contains("\n    +x\n"), "the write's diff against the disk: {shown}");

    let approved = approvals(ws.path(), runtime.path(), &["approve", id, "--note", "looks right"], None);
    assert!(approved.status.success(), "{}", String::from_utf8_lossy(&approved.stderr));
    let (code, reply, stderr) = finished(waiting);
    assert_eq!(code, 0, "{stderr}");
    assert_ne!(decision(&reply), "deny", "approved: the write runs: {reply}");
    assert_ne!(decision(&reply), "ask", "{reply}");
    let told = reply.pointer("/hookSpecificOutput/additionalContext").and_then(Value::as_str).unwrap_or_default();
    assert!(told.contains("approved by cli:") && told.contains("looks right"), "the model hears who approved: {reply}");

    let decided = approval_records(ws.path(), "decision");
    assert_eq!(decided.len(), 1, "{decided:?}");
    assert_eq!(decided[0]["data"]["pending_id"], id);
    assert_eq!(decided[0]["data"]["status"], "approved");
    assert!(decided[0]["data"]["decided_by"].as_str().unwrap().starts_with("cli:"), "{}", decided[0]);
    // Decided, it is no longer open; a second decision is refused.
    let again = approvals(ws.path(), runtime.path(), &["reject", id, "--reason", "too late"], None);
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("approved"), "{}", String::from_utf8_lossy(&again.stderr));
}

#[test]
fn a_rejection_denies_with_the_persons_reason_and_a_modification_changes_the_input() {
    let (ws, runtime) = (workspace(ASK_WRITES), runtime_dir());
    let _server = Served::start(ws.path(), runtime.path(), &[], &[]);

    let waiting = hook(ws.path(), runtime.path(), &write_input(ws.path(), "src/a.ts", "default"), &[]);
    let id = pending(ws.path(), runtime.path())["id"].as_str().unwrap().to_owned();
    let rejected = approvals(ws.path(), runtime.path(), &["reject", &id, "--reason", "write src/b.ts instead"], None);
    assert!(rejected.status.success(), "{}", String::from_utf8_lossy(&rejected.stderr));
    let (code, reply, _) = finished(waiting);
    assert_eq!((code, decision(&reply)), (0, "deny"), "{reply}");
    let reason = reply.pointer("/hookSpecificOutput/permissionDecisionReason").and_then(Value::as_str).unwrap();
    assert!(reason.contains("write src/b.ts instead") && reason.contains("rejected by cli:"), "{reason}");

    // acceptEdits: Claude Code would not ask its own person, so a rewrite comes with `allow`.
    let waiting = hook(ws.path(), runtime.path(), &write_input(ws.path(), "src/a.ts", "acceptEdits"), &[]);
    let id = pending(ws.path(), runtime.path())["id"].as_str().unwrap().to_owned();
    let input = json!({ "file_path": ws.path().join("src/a.ts"), "content": "y\n" }).to_string();
    let modified = approvals(ws.path(), runtime.path(), &["modify", &id, "--input", "-", "--note", "y, not x"], Some(&input));
    assert!(modified.status.success(), "{}", String::from_utf8_lossy(&modified.stderr));
    let (code, reply, _) = finished(waiting);
    assert_eq!((code, decision(&reply)), (0, "allow"), "{reply}");
    assert_eq!(reply["hookSpecificOutput"]["updatedInput"]["content"], "y\n", "the agent runs the modified input: {reply}");
    assert!(reply["hookSpecificOutput"]["permissionDecisionReason"].as_str().unwrap().contains("modified this call"), "{reply}");

    // A modification the chain refuses (out of the intent's scope) does not run.
    let waiting = hook(ws.path(), runtime.path(), &write_input(ws.path(), "src/a.ts", "acceptEdits"), &[]);
    let id = pending(ws.path(), runtime.path())["id"].as_str().unwrap().to_owned();
    let outside = json!({ "file_path": ws.path().join("README.md"), "content": "y\n" }).to_string();
    assert!(approvals(ws.path(), runtime.path(), &["modify", &id, "--input", "-"], Some(&outside)).status.success());
    let (_, reply, _) = finished(waiting);
    assert_eq!(decision(&reply), "deny", "{reply}");
    assert!(reply.to_string().contains("README.md"), "{reply}");
}

#[test]
fn nobody_deciding_in_time_is_the_configured_fallback() {
    let (ws, runtime) = (workspace(ASK_WRITES), runtime_dir());
    let server = Served::start(ws.path(), runtime.path(), &[], &[]);
    let started = Instant::now();
    let (code, reply, _) = finished(hook(ws.path(), runtime.path(), &write_input(ws.path(), "src/a.ts", "default"), &["--deadline", "3"]));
    let took = started.elapsed();
    assert_eq!((code, decision(&reply)), (0, "deny"), "{reply}");
    let reason = reply.pointer("/hookSpecificOutput/permissionDecisionReason").and_then(Value::as_str).unwrap();
    assert!(reason.contains("Nobody decided") && reason.contains("approvals review"), "says how to approve next time: {reason}");
    assert!(
        took >= Duration::from_millis(1500) && took < Duration::from_secs(3),
        "waited for a person, and answered before the deadline: {took:?}"
    );
    let timed_out = approval_records(ws.path(), "decision");
    assert_eq!(timed_out.len(), 1);
    assert_eq!(timed_out[0]["data"]["status"], "timed_out", "the Pending does not linger: {}", timed_out[0]);
    let list = approvals(ws.path(), runtime.path(), &["list", "--json"], None);
    assert_eq!(serde_json::from_slice::<Value>(&list.stdout).unwrap(), json!([]));

    // `fallback: agent`: the agent's own prompt.
    std::fs::write(ws.path().join(".orchestration/hooks.yaml"), format!("{ASK_WRITES}approvals:\n  fallback: agent\n")).unwrap();
    wait_for(&server.stderr, "configuration reloaded");
    let (code, reply, _) = finished(hook(ws.path(), runtime.path(), &write_input(ws.path(), "src/a.ts", "default"), &["--deadline", "2"]));
    assert_eq!((code, decision(&reply)), (0, "ask"), "{reply}");
}

#[test]
fn without_a_live_engine_there_are_no_pendings_and_an_ask_falls_back_at_once() {
    let (ws, runtime) = (workspace(ASK_WRITES), runtime_dir());
    let out = approvals(ws.path(), runtime.path(), &["list"], None);
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("no live engine") && said.contains("Pendings exist only while one runs") && said.contains("chokepoint serve"),
        "{said}"
    );

    let started = Instant::now();
    let (code, reply, _) = finished(hook(ws.path(), runtime.path(), &write_input(ws.path(), "src/a.ts", "default"), &[]));
    assert!(started.elapsed() < Duration::from_secs(5), "no waiting alone");
    assert_eq!((code, decision(&reply)), (0, "deny"), "{reply}");
    assert!(reply.to_string().contains("no live engine runs on this workspace"), "{reply}");
    assert!(approval_records(ws.path(), "open").is_empty(), "no Pending nobody can see");
}

#[test]
fn serve_review_decides_at_the_terminal_and_edits_the_input_in_the_editor() {
    let (ws, runtime) = (workspace(ASK_WRITES), runtime_dir());
    // The person's editor: replaces the content it is given.
    let editor = ws.path().join("editor.sh");
    std::fs::write(&editor, "#!/bin/sh\nsed -i 's/x\\\\n/edited\\\\n/' \"$1\"\n").unwrap();
    std::fs::set_permissions(&editor, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut server = Served::start(ws.path(), runtime.path(), &["--review"], &[("EDITOR", &editor), ("VISUAL", Path::new(""))]);

    let waiting = hook(ws.path(), runtime.path(), &write_input(ws.path(), "src/a.ts", "bypassPermissions"), &[]);
    wait_for(&server.stdout, "Claude Code (claude)");
    server.type_in("m\n");
    wait_for(&server.stdout, "+  \"content\": \"edited\\n\",");
    server.type_in("y\nmade it say edited\n");
    let (code, reply, _) = finished(waiting);
    assert_eq!((code, decision(&reply)), (0, "allow"), "{reply}");
    assert_eq!(reply["hookSpecificOutput"]["updatedInput"]["content"], "edited\n", "{reply}");

    let waiting = hook(ws.path(), runtime.path(), &write_input(ws.path(), "src/a.ts", "default"), &[]);
    wait_for(&server.stdout, "Claude Code (claude)");
    server.type_in("r\n\nnot this file\n");
    let (_, reply, _) = finished(waiting);
    assert_eq!(decision(&reply), "deny", "{reply}");
    assert!(reply.to_string().contains("not this file"), "{reply}");
    let by: Vec<String> =
        approval_records(ws.path(), "decision").iter().map(|r| r["data"]["decided_by"].as_str().unwrap().to_owned()).collect();
    assert!(by.len() == 2 && by.iter().all(|b| b.starts_with("cli:")), "{by:?}");
}

#[test]
fn approvals_review_decides_one_pending_over_the_socket() {
    let (ws, runtime) = (workspace(ASK_WRITES), runtime_dir());
    let _server = Served::start(ws.path(), runtime.path(), &[], &[]);
    let waiting = hook(ws.path(), runtime.path(), &write_input(ws.path(), "src/a.ts", "default"), &[]);
    let id = pending(ws.path(), runtime.path())["id"].as_str().unwrap().to_owned();
    let out = approvals(ws.path(), runtime.path(), &["review", &id], Some("a\n\n"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("is approved"), "{}", String::from_utf8_lossy(&out.stdout));
    let (code, reply, _) = finished(waiting);
    assert_eq!(code, 0);
    assert_ne!(decision(&reply), "deny", "{reply}");
}

/// A stand-in for an agent that tries to decide for itself: a shell (running a script, as an agent's
/// process stays while its tools run) that sends one hook call of its own through `chokepoint hook`,
/// so the engine has seen it run an agent's hooks, then runs `commands` as its own children. Their
/// output, one `exit=<code>` line after each.
fn agent_runs(ws: &Path, runtime: &Path, commands: &[&[&str]]) -> String {
    let read = json!({
        "session_id": "s1", "cwd": ws, "hook_event_name": "PreToolUse",
        "tool_name": "Read", "tool_input": { "file_path": ws.join("src/a.ts") }, "tool_use_id": "toolu_00",
    });
    let mut script = format!("printf '%s' '{read}' | \"$CHOKEPOINT\" hook --agent claude --workspace \"$WS\" >/dev/null\n");
    for command in commands {
        let args: Vec<String> = command.iter().map(|a| format!("'{a}'")).collect();
        // Bounded: a command that is not refused (`serve`) must not hang the test.
        script.push_str(&format!("timeout 20 \"$CHOKEPOINT\" {} --workspace \"$WS\" 2>&1 </dev/null\necho \"exit=$?\"\n", args.join(" ")));
    }
    let file = ws.join("agent.sh");
    std::fs::write(&file, script).unwrap();
    let out = Command::new("/bin/sh")
        .arg(&file)
        .env("CHOKEPOINT", BIN)
        .env("WS", ws)
        .env("XDG_RUNTIME_DIR", runtime)
        .env_remove("CHOKEPOINT_HOOK_DEPTH")
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap() + &String::from_utf8(out.stderr).unwrap()
}

#[test]
fn an_agents_own_process_cannot_decide_its_pending_and_a_persons_terminal_can() {
    let (ws, runtime) = (workspace(ASK_WRITES), runtime_dir());
    let _server = Served::start(ws.path(), runtime.path(), &[], &[]);
    let waiting = hook(ws.path(), runtime.path(), &write_input(ws.path(), "src/a.ts", "default"), &[]);
    let id = pending(ws.path(), runtime.path())["id"].as_str().unwrap().to_owned();

    let said = agent_runs(
        ws.path(),
        runtime.path(),
        &[&["approvals", "approve", &id, "--note", "self-approved"], &["approvals", "reject", &id, "--reason", "no"]],
    );
    assert!(!said.contains("exit=0"), "every decision from the agent's process is refused: {said}");
    assert!(said.contains("agent") && said.contains("your own terminal"), "the refusal says why and what to do: {said}");
    let still = pending(ws.path(), runtime.path());
    assert_eq!((still["id"].as_str(), still["status"].as_str()), (Some(id.as_str()), Some("open")), "{still}");
    assert!(approval_records(ws.path(), "decision").is_empty(), "nothing was decided");

    // The person, from a process no agent started.
    let approved = approvals(ws.path(), runtime.path(), &["approve", &id], None);
    assert!(approved.status.success(), "{}", String::from_utf8_lossy(&approved.stderr));
    let (code, reply, stderr) = finished(waiting);
    assert_eq!(code, 0, "{stderr}");
    assert_ne!(decision(&reply), "deny", "{reply}");
    let decided = approval_records(ws.path(), "decision");
    assert_eq!(decided.len(), 1, "{decided:?}");
    let by = decided[0]["data"]["decided_by"].as_str().unwrap();
    assert!(by.starts_with("cli:") && by.contains(&format!("pid {}", approved_pid(by))), "who decided, truthfully: {by}");
}

/// The pid a decider's name gives (`cli:<user> (pid N, …)`), which must be a number.
fn approved_pid(by: &str) -> u32 {
    by.split("pid ").nth(1).and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next()).and_then(|n| n.parse().ok()).unwrap_or(0)
}

#[test]
fn an_agents_own_process_cannot_widen_its_scope_revoke_a_lease_or_serve() {
    let (ws, runtime) = (workspace(ASK_WRITES), runtime_dir());
    let said = agent_runs(
        ws.path(),
        runtime.path(),
        &[
            &["intent", "approve", "--session", "claude:s1", "--intent", "INT-1", "--path", "docs/**"],
            &["sessions", "revoke", "claude:s1", "--reason", "mine now"],
            &["intent", "release", "--session", "claude:s1"],
            &["serve", "--review"],
        ],
    );
    assert_eq!(said.matches("exit=").count(), 4, "{said}");
    assert!(!said.contains("exit=0"), "refused: {said}");
    assert!(said.contains("your own terminal"), "{said}");
    let sessions = Command::new(BIN).args(["sessions", "--json", "--workspace", ws.path().to_str().unwrap()]).output().unwrap();
    let sessions: Vec<Value> = serde_json::from_slice(&sessions.stdout).unwrap();
    assert!(sessions.iter().any(|s| s["session"] == "claude:s1" && s["lease"]["intent"] == "INT-1"), "the lease stays: {sessions:?}");
    // The person widens the scope from their own terminal.
    let out = Command::new(BIN)
        .args(["intent", "approve", "--workspace", ws.path().to_str().unwrap(), "--session", "claude:s1", "--intent", "INT-1"])
        .args(["--path", "docs/**"])
        .env_remove("CHOKEPOINT_HOOK_DEPTH")
        .env_remove("CLAUDECODE")
        .env_remove("GEMINI_CLI")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_contained_command_that_leaves_its_agents_tree_and_clears_its_environment_is_still_refused() {
    let (ws, runtime) = (workspace(ASK_WRITES), runtime_dir());
    let out = ws.path().join("src/out");
    // The agent's shell command, contained; it double-forks into a session of its own (no agent
    // among its ancestors any more), clears its environment, and tries to revoke the lease.
    let escape = format!(
        "grep -q 'NoNewPrivs:.*1' /proc/self/status || {{ echo no-landlock > {out}; exit 0; }}; \
         (setsid sh -c 'sleep 0.3; env -i {BIN} sessions revoke claude:s1 --workspace {ws} > {out}.tmp 2>&1; echo exit=$? >> {out}.tmp; mv {out}.tmp {out}' &); sleep 1",
        out = out.display(),
        ws = ws.path().display()
    );
    let run = common::as_agent()
        .args(["exec", "--session", "claude:s1", "--workspace", ws.path().to_str().unwrap(), "--", "sh", "-c", &escape])
        .env("XDG_RUNTIME_DIR", runtime.path())
        .output()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    while !out.exists() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(100));
    }
    let said =
        std::fs::read_to_string(&out).unwrap_or_else(|_| panic!("the escapee never wrote: {}", String::from_utf8_lossy(&run.stderr)));
    if said.trim() == "no-landlock" {
        eprintln!("skipped: this kernel has no Landlock, so a contained command carries no no_new_privs mark");
        return;
    }
    // Refused as contained: isolated, it lives in a PID namespace of its own; observed, Landlock's
    // no_new_privs marks it.
    assert!(
        said.contains("exit=1") && (said.contains("no_new_privs") || said.contains("pid namespace")) && said.contains("your own terminal"),
        "{said}"
    );
}

#[test]
fn a_process_in_another_pid_namespace_cannot_decide() {
    if !nix::unistd::getuid().is_root() || !Path::new("/usr/bin/unshare").exists() {
        eprintln!("skipped: needs root and unshare to start a process in a pid namespace of its own");
        return;
    }
    let (ws, runtime) = (workspace(ASK_WRITES), runtime_dir());
    let _server = Served::start(ws.path(), runtime.path(), &[], &[]);
    let waiting = hook(ws.path(), runtime.path(), &write_input(ws.path(), "src/a.ts", "default"), &[]);
    let id = pending(ws.path(), runtime.path())["id"].as_str().unwrap().to_owned();
    // As a contained command may run: in a pid namespace of its own, no agent among its ancestors.
    let out = Command::new("/usr/bin/unshare")
        .args(["--pid", "--fork", "--mount-proc", "--", BIN, "approvals", "approve", &id, "--workspace", ws.path().to_str().unwrap()])
        .env("XDG_RUNTIME_DIR", runtime.path())
        .env_remove("CLAUDECODE")
        .env_remove("CHOKEPOINT_HOOK_DEPTH")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("another pid namespace") && said.contains("your own terminal"), "{said}");
    assert_eq!(pending(ws.path(), runtime.path())["status"], "open");
    let approved = approvals(ws.path(), runtime.path(), &["approve", &id], None);
    assert!(approved.status.success(), "{}", String::from_utf8_lossy(&approved.stderr));
    let (code, reply, _) = finished(waiting);
    assert_eq!(code, 0);
    assert_ne!(decision(&reply), "deny", "{reply}");
}
