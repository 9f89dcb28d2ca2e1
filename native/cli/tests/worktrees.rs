//! One repository, one coordination: two git worktrees of one repository (made by the test with
//! real `git init` and `git worktree add`, the sidecar committed as a user commits it) share the
//! intent leases, revocations and approved scope expansions, through the shipped `chokepoint`
//! program run in each. A session in each selects `INT-001`: one holds it, the other is told by
//! whom, in which worktree and on which branch.

mod common;

use common::{chokepoint, git, stderr, stdout};
use serde_json::{Value, json};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const INTENTS: &str = "version: 1
active_intents:
  - id: INT-001
    name: Sources
    status: IN_PROGRESS
    owned_scope: ['src/**']
  - id: INT-002
    name: Tests
    status: IN_PROGRESS
    owned_scope: ['tests/**']
  - id: INT-ALL
    name: Everything
    status: IN_PROGRESS
    owned_scope: ['**']
";

/// A hooks.yaml whose chain asks a person about every write.
const CONFIRM_WRITES: &str =
    "version: 1\nhooks:\n  PreToolUse:\n    - name: confirm\n      tool: Write\n      ask: a person confirms every write\n";

/// A repository whose main checkout is `repo` (branch `main`) with a linked worktree `wt2` (branch
/// `feature-x`), both holding the committed sidecar.
struct Repository {
    _dir: tempfile::TempDir,
    main: PathBuf,
    linked: PathBuf,
}

fn repository() -> Repository {
    repository_with("version: 1\n")
}

fn repository_with(hooks: &str) -> Repository {
    let dir = tempfile::tempdir().unwrap();
    let main = dir.path().join("repo");
    common::governed_repo(&main, hooks, Some(INTENTS));
    git(&main, &["worktree", "add", "-q", "-b", "feature-x", "../wt2"]);
    let linked = dir.path().join("wt2");
    Repository { _dir: dir, main, linked }
}

fn select(ws: &Path, session: &str, agent: &str, intent: &str) -> std::process::Output {
    chokepoint(ws, &["intent", "select", "--session", session, "--agent", agent, intent])
}

fn intent_list(ws: &Path) -> Vec<Value> {
    let out = chokepoint(ws, &["intent", "list", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice::<Value>(&out.stdout).unwrap().as_array().unwrap().clone()
}

fn holder_of(ws: &Path, intent: &str) -> Value {
    intent_list(ws).into_iter().find(|i| i["id"] == intent).unwrap_or_else(|| panic!("{intent} is listed"))
}

/// Claude Code's PreToolUse for a Write of `path` in session `session`, answered by a hook process
/// judging alone in `ws`: `None` when it lets the write through, else the decision and its reason.
fn claude_writes(ws: &Path, session: &str, path: &str) -> Option<(String, String)> {
    let input = json!({
        "session_id": session,
        "cwd": ws,
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": { "file_path": ws.join(path), "content": "x\n" },
        "tool_use_id": "t1",
    });
    let out = common::claude_hook(ws, &input);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stdout(&out);
    if text.trim().is_empty() {
        return None;
    }
    let answer: Value = serde_json::from_str(&text).unwrap();
    let specific = &answer["hookSpecificOutput"];
    Some((specific["permissionDecision"].as_str().unwrap().to_owned(), specific["permissionDecisionReason"].as_str().unwrap().to_owned()))
}

#[test]
#[cfg_attr(wine, ignore = "runs git, and no Windows git is installed under Wine here")]
fn two_worktrees_share_one_holder_and_the_refusal_says_where_it_works() {
    let repo = repository();
    let (main, linked) = (&repo.main, &repo.linked);

    let first = select(main, "claude:A", "claude", "INT-001");
    assert!(first.status.success(), "{}", stderr(&first));
    let second = select(linked, "codex:B", "codex", "INT-001");
    assert_eq!(second.status.code(), Some(1), "the second worktree's session is refused: {}", stdout(&second));
    let refusal = stderr(&second);
    for part in ["INT-001", "session `claude:A`", "agent `claude`", "worktree `repo`", "branch `main`"] {
        assert!(refusal.contains(part), "the refusal names {part}: {refusal}");
    }

    // Each worktree lists the one holder, with where it works.
    for ws in [main, linked] {
        let held = holder_of(ws, "INT-001");
        assert_eq!(held["holder"], "claude:A", "{held}");
        assert_eq!(held["worktree"], "repo");
        assert_eq!(held["branch"], "main");
        assert_eq!(Path::new(held["worktree_root"].as_str().unwrap()).canonicalize().unwrap(), main.canonicalize().unwrap());
        let text = stdout(&chokepoint(ws, &["intent", "list"]));
        assert!(text.contains("INT-001  held by session `claude:A` (agent `claude`) on machine `"), "{text}");
        assert!(text.contains("` in worktree `repo` on branch `main`"), "{text}");
    }

    // Released in one worktree, the intent is free in the other.
    let out = chokepoint(main, &["intent", "release", "--session", "claude:A"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let taken = select(linked, "codex:B", "codex", "INT-001");
    assert!(taken.status.success(), "{}", stderr(&taken));
    let held = holder_of(main, "INT-001");
    assert_eq!((&held["holder"], &held["worktree"], &held["branch"]), (&json!("codex:B"), &json!("wt2"), &json!("feature-x")));
    let refused = select(main, "claude:A", "claude", "INT-001");
    assert!(stderr(&refused).contains("in worktree `wt2` on branch `feature-x`"), "{}", stderr(&refused));

    // The shared database is in git's common folder, owner-only, and in no work tree.
    let shared = main.join(".git/chokepoint");
    assert!(shared.join("state.db").is_file());
    // Unix permission bits; on Windows a file's privacy is the ACL it inherits from its folder: Chokepoint sets none of its own yet (README).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(fs::metadata(&shared).unwrap().permissions().mode() & 0o777, 0o700);
        assert_eq!(fs::metadata(shared.join("state.db")).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let status = Command::new("git").args(["status", "--porcelain", "--untracked-files=all"]).current_dir(linked).output().unwrap();
    assert!(!stdout(&status).contains("state.db"), "{}", stdout(&status));
}

#[test]
#[cfg_attr(wine, ignore = "runs git, and no Windows git is installed under Wine here")]
fn a_revocation_and_an_approved_expansion_in_one_worktree_reach_the_holder_in_the_other() {
    let repo = repository();
    let (main, linked) = (&repo.main, &repo.linked);
    let out = select(linked, "claude:S2", "claude", "INT-001");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(claude_writes(linked, "S2", "src/a.ts"), None, "the holder writes in its scope");
    let (decision, _) = claude_writes(linked, "S2", "docs/notes.md").expect("outside its scope");
    assert_eq!(decision, "deny");

    // A person in the main checkout widens the other worktree's session's scope.
    let out = chokepoint(main, &["intent", "approve", "--session", "claude:S2", "--intent", "INT-001", "--path", "docs/**"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(claude_writes(linked, "S2", "docs/notes.md"), None, "the expansion approved in the main checkout applies");

    // The main checkout lists the other worktree's session, with its worktree, branch and activity.
    let out = chokepoint(main, &["sessions", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let sessions: Vec<Value> = serde_json::from_slice::<Value>(&out.stdout).unwrap().as_array().unwrap().clone();
    let s2 = sessions.iter().find(|s| s["session"] == "claude:S2").expect("the other worktree's session is listed");
    assert_eq!((&s2["worktree"], &s2["branch"]), (&json!("wt2"), &json!("feature-x")), "{s2}");
    assert_eq!(s2["lease"]["intent"], "INT-001");
    assert_eq!(s2["allowed"], 3, "its activity is read from its worktree's trace: {s2}");

    // A person in the main checkout revokes it; the holder's next write in its worktree is denied.
    let out = chokepoint(main, &["sessions", "revoke", "claude:S2", "--reason", "wrong branch", "--by", "alice"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let (decision, reason) = claude_writes(linked, "S2", "src/a.ts").expect("denied after the revocation");
    assert_eq!(decision, "deny");
    assert!(reason.contains("revoked by a person") && reason.contains("alice") && reason.contains("wrong branch"), "{reason}");
    assert_eq!(holder_of(linked, "INT-001")["holder"], Value::Null);
}

/// Two processes, one per worktree, race for `INT-001` a hundred times: each round exactly one holds
/// it (and the other is refused naming it), then the winner releases it.
#[test]
#[cfg_attr(wine, ignore = "runs git, and no Windows git is installed under Wine here")]
fn two_worktrees_racing_for_one_intent_get_exactly_one_holder_each_round() {
    let repo = repository();
    let racers = [(&repo.main, "claude:main"), (&repo.linked, "claude:wt2")];
    let mut wins = [0u32; 2];
    for round in 0..100 {
        let children: Vec<_> = racers
            .iter()
            .map(|(ws, session)| {
                Command::new(common::program())
                    .args(["intent", "select", "--session", session, "--agent", "claude", "INT-001", "--workspace"])
                    .arg(ws)
                    .env_remove("CHOKEPOINT_HOOK_DEPTH")
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let outs: Vec<_> = children.into_iter().map(|c| c.wait_with_output().unwrap()).collect();
        let won: Vec<usize> = (0..2).filter(|&i| outs[i].status.success()).collect();
        assert_eq!(won.len(), 1, "round {round}: exactly one holder: {:?}", outs.iter().map(stderr).collect::<Vec<_>>());
        let (winner, loser) = (won[0], 1 - won[0]);
        assert_eq!(outs[loser].status.code(), Some(1), "round {round}");
        assert!(stderr(&outs[loser]).contains(&format!("session `{}`", racers[winner].1)), "round {round}: {}", stderr(&outs[loser]));
        wins[winner] += 1;
        let out = chokepoint(racers[winner].0, &["intent", "release", "--session", racers[winner].1]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    assert_eq!(wins.iter().sum::<u32>(), 100);
}

/// A `chokepoint serve` in `ws`, stopped when dropped.
struct Served(std::process::Child);

impl Served {
    fn start(ws: &Path, runtime: &Path) -> Served {
        let mut child = Command::new(common::program())
            .args(["serve", "--workspace", ws.to_str().unwrap()])
            .env("XDG_RUNTIME_DIR", runtime)
            .stderr(Stdio::piped())
            .spawn()
            .expect("chokepoint serve starts");
        let mut said = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stderr.as_mut().unwrap()), &mut said).unwrap();
        assert!(said.contains("serving"), "{said}");
        Served(child)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `chokepoint approvals ARGS --workspace ws`, as a person runs it.
fn approvals(ws: &Path, runtime: &Path, args: &[&str]) -> std::process::Output {
    Command::new(common::program())
        .arg("approvals")
        .args(args)
        .args(["--workspace", ws.to_str().unwrap()])
        .env("XDG_RUNTIME_DIR", runtime)
        .env_remove("CLAUDECODE")
        .env_remove("CHOKEPOINT_HOOK_DEPTH")
        .output()
        .unwrap()
}

/// Claude Code's PreToolUse for a Write of `file` in session `session`, sent to a hook process in
/// `ws` (which hands it to its worktree's live engine when one runs, else judges alone and relays an
/// ask), left running: the test reads its answer once it has decided what the hook waits for.
fn claude_writes_served(ws: &Path, runtime: &Path, session: &str, file: &str, more: &[&str]) -> std::process::Child {
    let input = json!({
        "session_id": session, "cwd": ws, "permission_mode": "default", "hook_event_name": "PreToolUse",
        "tool_name": "Write", "tool_input": { "file_path": ws.join(file), "content": "x\n" }, "tool_use_id": "toolu_01",
    });
    common::spawn_claude_hook(ws, runtime, &input.to_string(), more)
}

/// Each worktree's live engine holds a Pending of its own agent's write; `approvals list` in the main
/// checkout shows both, each with its worktree and branch, and approving the other worktree's there
/// lets that worktree's write run.
#[test]
#[cfg_attr(wine, ignore = "runs git, and no Windows git is installed under Wine here")]
fn approvals_lists_every_worktrees_pendings_and_a_decision_reaches_the_engine_that_holds_it() {
    let repo = repository_with(CONFIRM_WRITES);
    let (main, linked) = (&repo.main, &repo.linked);
    let runtime = common::runtime_dir();
    let _servers = [Served::start(main, runtime.path()), Served::start(linked, runtime.path())];
    assert!(select(main, "claude:s1", "claude", "INT-001").status.success());
    assert!(select(linked, "claude:s2", "claude", "INT-002").status.success());
    let waiting = |ws: &Path, session: &str, file: &str| claude_writes_served(ws, runtime.path(), session, file, &[]);
    let (first, second) = (waiting(main, "s1", "src/a.ts"), waiting(linked, "s2", "tests/b.ts"));

    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let listed = loop {
        let out = approvals(main, runtime.path(), &["list", "--json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let listed: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
        if listed.len() == 2 {
            break listed;
        }
        assert!(std::time::Instant::now() < until, "two pendings open: {listed:?}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let of = |session: &str| listed.iter().find(|p| p["session_id"] == session).unwrap_or_else(|| panic!("{session}: {listed:?}"));
    assert_eq!((&of("claude:s1")["worktree"], &of("claude:s1")["branch"]), (&json!("repo"), &json!("main")));
    assert_eq!((&of("claude:s2")["worktree"], &of("claude:s2")["branch"]), (&json!("wt2"), &json!("feature-x")));
    let text = stdout(&approvals(main, runtime.path(), &["list"]));
    assert!(text.contains("in worktree wt2 on branch feature-x"), "{text}");

    let id = of("claude:s2")["id"].as_str().unwrap().to_owned();
    let shown = stdout(&approvals(main, runtime.path(), &["show", &id]));
    assert!(shown.contains("+++ b/tests/b.ts"), "the diff is against the other worktree's file: {shown}");
    let approved = approvals(main, runtime.path(), &["approve", &id]);
    assert!(approved.status.success(), "{}", stderr(&approved));
    let out = second.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stdout(&out).contains("\"deny\""), "approved in the main checkout, the write in wt2 runs: {}", stdout(&out));
    // The main checkout's own Pending is still open in its engine; decided there, its hook ends too.
    let rejected = approvals(linked, runtime.path(), &["reject", of("claude:s1")["id"].as_str().unwrap(), "--reason", "not now"]);
    assert!(rejected.status.success(), "{}", stderr(&rejected));
    let out = first.wait_with_output().unwrap();
    assert!(stdout(&out).contains("not now"), "{}", stdout(&out));
}

/// VS Code (here `chokepoint serve`) runs on the main checkout only; an agent works in the second
/// worktree, whose hook judges alone, and its chain asks about a write. The ask is relayed to the
/// main checkout's live engine: `approvals list` there shows it with the worktree and branch it comes
/// from, and the person's decision there answers the hook (approved: allowed; modified: run as the
/// person wrote it; rejected: denied with the reason). With no live engine anywhere, the fallback
/// answers at once, as before.
#[test]
#[cfg_attr(wine, ignore = "runs git, and no Windows git is installed under Wine here")]
#[cfg_attr(
    qemu,
    ignore = "waits at most 20 s for an ask relayed from one emulated hook process through another's live engine, which under qemu-user it did not reach (unoptimised and optimised alike, on a loaded machine); the relay is not Arm's own code, and is tested natively in the cargo layer"
)]
fn an_ask_in_a_worktree_nobody_serves_is_decided_in_the_main_checkouts_live_engine() {
    let repo = repository_with(CONFIRM_WRITES);
    let (main, linked) = (&repo.main, &repo.linked);
    let runtime = common::runtime_dir();
    assert!(select(linked, "claude:s2", "claude", "INT-002").status.success());
    let asking = |file: &str| claude_writes_served(linked, runtime.path(), "s2", file, &[]);
    let reply = |child: std::process::Child| {
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        stdout(&out)
    };

    // No live engine anywhere: the fallback (deny) answers at once.
    let started = std::time::Instant::now();
    let alone = reply(asking("tests/a.ts"));
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "answered at once");
    assert!(alone.contains("\"deny\"") && alone.contains("no live engine runs on this workspace"), "{alone}");

    let served = Served::start(main, runtime.path());
    let pending = || {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let out = approvals(main, runtime.path(), &["list", "--json"]);
            assert!(out.status.success(), "{}", stderr(&out));
            let listed: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
            if let [one] = listed.as_slice() {
                break one.clone();
            }
            assert!(std::time::Instant::now() < until, "the relayed ask is open in the main checkout's engine: {listed:?}");
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    };

    // Approved in the main checkout: the write in wt2 runs. Its diff is against wt2's file.
    fs::create_dir_all(linked.join("tests")).unwrap();
    fs::write(linked.join("tests/b.ts"), "only in wt2\n").unwrap();
    let waiting = asking("tests/b.ts");
    let open = pending();
    assert_eq!((&open["worktree"], &open["branch"]), (&json!("wt2"), &json!("feature-x")), "{open}");
    assert_eq!((&open["subject"]["agent"], &open["session_id"]), (&json!("claude"), &json!("claude:s2")), "{open}");
    let text = stdout(&approvals(main, runtime.path(), &["list"]));
    assert!(text.contains("in worktree wt2 on branch feature-x"), "{text}");
    let id = open["id"].as_str().unwrap().to_owned();
    let shown = stdout(&approvals(main, runtime.path(), &["show", &id]));
    assert!(shown.contains("worktree wt2 on branch feature-x") && shown.contains("-only in wt2"), "{shown}");
    let approved = approvals(main, runtime.path(), &["approve", &id]);
    assert!(approved.status.success(), "{}", stderr(&approved));
    let allowed = reply(waiting);
    assert!(!allowed.contains("\"deny\"") && allowed.contains("approved by cli:"), "approved in the main checkout: {allowed}");
    assert!(common::ledger_text(main).unwrap().contains(&id), "the Pending's phases are in the main checkout's ledger");

    // Modified there: the write runs as the person wrote it, judged again in wt2.
    let waiting = asking("tests/c.ts");
    let id = pending()["id"].as_str().unwrap().to_owned();
    let input = json!({ "file_path": linked.join("tests/c.ts"), "content": "y\n" });
    let file = linked.join("modified.json");
    fs::write(&file, input.to_string()).unwrap();
    let modified = approvals(main, runtime.path(), &["modify", &id, "--input", file.to_str().unwrap()]);
    assert!(modified.status.success(), "{}", stderr(&modified));
    let rewritten: Value = serde_json::from_str(&reply(waiting)).unwrap();
    assert_eq!(rewritten["hookSpecificOutput"]["updatedInput"], input, "{rewritten}");

    // Rejected there: denied with the person's reason.
    let waiting = asking("tests/d.ts");
    let id = pending()["id"].as_str().unwrap().to_owned();
    let rejected = approvals(main, runtime.path(), &["reject", &id, "--reason", "not on this branch"]);
    assert!(rejected.status.success(), "{}", stderr(&rejected));
    let denied = reply(waiting);
    assert!(denied.contains("\"deny\"") && denied.contains("not on this branch"), "{denied}");

    // Nobody decides before the hook's deadline (3 s, less the margin): the fallback answers.
    let waiting = claude_writes_served(linked, runtime.path(), "s2", "tests/f.ts", &["--deadline", "3"]);
    let id = pending()["id"].as_str().unwrap().to_owned();
    let timed_out = reply(waiting);
    assert!(timed_out.contains("\"deny\"") && timed_out.contains(&format!("Nobody decided this call (pending `{id}`)")), "{timed_out}");
    let review = format!("approvals review --workspace '{}'", main.canonicalize().unwrap().display());
    assert!(timed_out.contains(&review), "it says where to decide next time: the engine that held it: {timed_out}");

    // The engine goes away while the hook waits: the fallback answers, saying why; never an allow.
    let waiting = asking("tests/e.ts");
    pending();
    drop(served);
    let gone = reply(waiting);
    assert!(gone.contains("\"deny\"") && gone.contains("could not be relayed"), "{gone}");
}

/// Who may decide a relayed ask stays as it is: the agent whose hook in the second worktree relayed it
/// cannot approve it from its own process (its `approvals approve` reaches the main checkout's engine,
/// which knows the asking hook's agent); the person can.
#[test]
#[cfg_attr(wine, ignore = "runs git, and no Windows git is installed under Wine here")]
fn the_agent_that_relayed_an_ask_cannot_decide_it() {
    let repo = repository_with(CONFIRM_WRITES);
    let (main, linked) = (&repo.main, &repo.linked);
    let runtime = common::runtime_dir();
    assert!(select(linked, "claude:s2", "claude", "INT-002").status.success());
    let _served = Served::start(main, runtime.path());
    let input = json!({
        "session_id": "s2", "cwd": linked, "hook_event_name": "PreToolUse",
        "tool_name": "Write", "tool_input": { "file_path": linked.join("tests/a.ts"), "content": "x\n" }, "tool_use_id": "toolu_01",
    });
    fs::write(linked.join("input.json"), input.to_string()).unwrap();
    // The agent: its hook relays the ask and waits (in the background); meanwhile the agent itself
    // tries to approve it, then waits for its hook's answer.
    let script = r#"
"$CHOKEPOINT" hook --agent claude --workspace "$WS" < "$WS/input.json" > "$WS/reply.json" &
for _ in $(seq 200); do
  id=$("$CHOKEPOINT" approvals list --json --workspace "$WS" | grep -o 'pnd-[0-9a-f]*' | head -n 1)
  [ -n "$id" ] && break
  sleep 0.1
done
echo "pending=$id"
"$CHOKEPOINT" approvals approve "$id" --workspace "$WS" 2>&1
echo "exit=$?"
echo "$id" > "$WS/id"
wait
"#;
    // A script file, not `sh -c`: the shell running it is the agent (behind a `sh -c`, its parent
    // would be, which is this test, the person).
    fs::write(linked.join("agent.sh"), script).unwrap();
    let agent = Command::new("/bin/sh")
        .arg(linked.join("agent.sh"))
        .env("CHOKEPOINT", common::program())
        .env("WS", linked)
        .env("XDG_RUNTIME_DIR", runtime.path())
        .env_remove("CHOKEPOINT_HOOK_DEPTH")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !linked.join("id").exists() {
        assert!(std::time::Instant::now() < until, "the agent tried to decide");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let id = fs::read_to_string(linked.join("id")).unwrap().trim().to_owned();
    assert!(id.starts_with("pnd-"), "the relayed ask was listed from the second worktree: {id:?}");
    let approved = approvals(main, runtime.path(), &["approve", &id]);
    assert!(approved.status.success(), "the person approves: {}", stderr(&approved));
    let out = agent.wait_with_output().unwrap();
    let said = stdout(&out) + &stderr(&out);
    assert!(!said.contains("exit=0") && said.contains("your own terminal"), "the agent's own approval is refused: {said}");
    let reply = fs::read_to_string(linked.join("reply.json")).unwrap();
    assert!(!reply.contains("\"deny\"") && reply.contains("approved by cli:"), "approved by the person: {reply}");
}

/// A workspace governed before it became a git repository (or before this build): the scope
/// expansion approved then, kept in its `.orchestration/state.db`, still applies once the
/// coordination moves to the repository's shared folder.
#[test]
#[cfg_attr(
    windows,
    ignore = "a person's decision from a terminal rests on the chain of processes that started it, which Windows lets a process forge (it may name any process of its user as its child's parent): refused there by design (fails closed, serve::deciders)"
)]
fn what_a_workspace_approved_before_it_was_a_repository_carries_over() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("project");
    fs::create_dir_all(ws.join(".orchestration")).unwrap();
    fs::create_dir_all(ws.join("src")).unwrap();
    fs::write(ws.join(".orchestration/hooks.yaml"), "version: 1\n").unwrap();
    fs::write(ws.join(".orchestration/active_intents.yaml"), INTENTS).unwrap();
    assert!(select(&ws, "claude:S1", "claude", "INT-001").status.success());
    let out = chokepoint(&ws, &["intent", "approve", "--session", "claude:S1", "--intent", "INT-001", "--path", "docs/**"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!ws.join(".git").exists());

    git(&ws, &["init", "-q"]);
    git(&ws, &["add", "."]);
    git(&ws, &["commit", "-q", "-m", "governed"]);
    // The lease is runtime state: the session selects again, in the shared database.
    assert!(select(&ws, "claude:S1", "claude", "INT-001").status.success());
    assert!(ws.join(".git/chokepoint/state.db").is_file());
    assert_eq!(claude_writes(&ws, "S1", "docs/notes.md"), None, "the expansion approved before is still in force");
}

/// In the main checkout the shared database is inside the workspace: no agent writes it, whatever
/// its scope, as no agent writes `.orchestration/`.
#[test]
#[cfg_attr(wine, ignore = "runs git, and no Windows git is installed under Wine here")]
fn no_agent_writes_the_shared_database_even_under_a_scope_that_covers_it() {
    let repo = repository();
    let out = select(&repo.main, "claude:S1", "claude", "INT-ALL");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(claude_writes(&repo.main, "S1", "src/a.ts"), None);
    let (decision, reason) = claude_writes(&repo.main, "S1", ".git/chokepoint/state.db").expect("refused");
    assert_eq!(decision, "deny");
    assert!(reason.contains("Chokepoint") && reason.contains(".git/chokepoint/state.db"), "{reason}");
}
