//! The ledger survives git (issue 28, item 2), with real git run by the test and the shipped CLI:
//! branches that recorded in their own worktrees merge, rebase and squash without a conflict and
//! verify; a branch switch, a stash, a reset in the middle of recording leave every gate working and
//! `trace verify` clean; real tampering is still caught.

mod common;

use common::{chokepoint, claude_hook, git, git_output, program, stderr, stdout};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const INTENTS: &str = "version: 1
active_intents:
  - id: INT-ALL
    name: Everything
    status: IN_PROGRESS
    owned_scope: ['**']
";

/// What the engine keeps out of git in `.orchestration/` (as `chokepoint init` writes it).
const IGNORE: &str = "state.db\nstate.db-*\ntrace.db\ntrace.db-*\nagent_trace.lock\nsnapshots/\nserve.json\nbrain.lock\n";

/// A repository at `<tmp>/main` with a governed workspace committed on `main`.
fn repository() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let main = tmp.path().join("main");
    fs::create_dir_all(main.join(".orchestration")).unwrap();
    fs::create_dir_all(main.join("src")).unwrap();
    fs::write(main.join(".orchestration/hooks.yaml"), "version: 1\n").unwrap();
    fs::write(main.join(".orchestration/active_intents.yaml"), INTENTS).unwrap();
    fs::write(main.join(".orchestration/.gitignore"), IGNORE).unwrap();
    fs::write(main.join("README.md"), "a project\n").unwrap();
    git(&main, &["init", "-q"]);
    git(&main, &["add", "-A"]);
    git(&main, &["commit", "-qm", "base"]);
    (tmp, main)
}

/// Records an event named `tag` through the CLI's durable writer, with a file it wrote (so that the
/// export lists it); its seq.
fn record(ws: &Path, tag: &str) -> u64 {
    let event = json!({
        "event": tag,
        "files": [{ "path": format!("{tag}.txt"), "sha256": "0".repeat(64), "ranges": [{ "start": 1, "end": 1, "sha256": "1".repeat(64) }] }],
    });
    let out = chokepoint(ws, &["trace", "record", "--event", &event.to_string()]);
    assert!(out.status.success(), "recording {tag} in {}: {}", ws.display(), stderr(&out));
    stdout(&out).trim().parse().unwrap()
}

/// `trace verify`'s exit code, with what it said.
fn verify(ws: &Path) -> (i32, String) {
    let out = chokepoint(ws, &["trace", "verify"]);
    (out.status.code().unwrap(), format!("{}{}", stdout(&out), stderr(&out)))
}

fn verified(ws: &Path) -> String {
    let (code, said) = verify(ws);
    assert_eq!(code, 0, "trace verify in {}: {said}", ws.display());
    said
}

/// The events `trace show` lists.
fn shown(ws: &Path) -> BTreeSet<String> {
    let out = chokepoint(ws, &["trace", "show", "--json", "--limit", "10000"]);
    assert!(out.status.success(), "{}", stderr(&out));
    stdout(&out).lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["event"].as_str().unwrap_or("").to_owned()).collect()
}

/// The files `trace export` attributes.
fn exported(ws: &Path) -> BTreeSet<String> {
    let out = chokepoint(ws, &["trace", "export"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let traces: Vec<Value> = serde_json::from_str(&stdout(&out)).unwrap();
    traces.iter().flat_map(|t| t["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap().to_owned())).collect()
}

fn tags(branch: &str, n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("{branch}-{i}")).collect()
}

/// A real gate: Claude Code's PreToolUse hook for a write in scope, which is allowed only once its
/// record is durable (a gate whose record cannot be kept denies).
fn gate(ws: &Path, file: &str) {
    let input = json!({"session_id":"me","cwd": ws,"hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path": ws.join(file),"content":"x"}});
    let out = claude_hook(ws, &input);
    assert_eq!(out.status.code(), Some(0), "the gate for {file}: {}{}", stdout(&out), stderr(&out));
    assert!(!stdout(&out).contains("\"deny\""), "the gate for {file} denied: {}", stdout(&out));
}

fn select(ws: &Path) {
    let out = Command::new(program())
        .args(["intent", "select", "--workspace", ws.to_str().unwrap(), "--session", "claude:me", "--agent", "claude", "INT-ALL"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

/// Three branches, each recorded in its own worktree, merged into `main` in every order (6): never a
/// conflict, the merged ledger verifies, and `show` and `export` list every branch's records. The
/// same after a rebase and a squash merge.
#[test]
#[cfg_attr(wine, ignore = "runs git, and no Windows git is installed under Wine here")]
fn branches_that_recorded_merge_in_every_order_rebase_and_squash_and_verify() {
    let (tmp, main) = repository();
    // Records made on main before the branches: a chain every branch shares.
    for tag in tags("base", 2) {
        record(&main, &tag);
    }
    git(&main, &["add", "-A"]);
    git(&main, &["commit", "-qm", "base records"]);
    let branches = ["a", "b", "c"];
    for branch in branches {
        let wt = tmp.path().join(format!("wt-{branch}"));
        git(&main, &["worktree", "add", "-q", "-b", branch, wt.to_str().unwrap()]);
        for tag in tags(branch, 3) {
            record(&wt, &tag);
        }
        verified(&wt);
        git(&wt, &["add", "-A"]);
        git(&wt, &["commit", "-qm", &format!("work on {branch}")]);
    }
    let every: BTreeSet<String> = ["base", "a", "b", "c"].iter().flat_map(|b| tags(b, if *b == "base" { 2 } else { 3 })).collect();
    let files: BTreeSet<String> = every.iter().map(|t| format!("{t}.txt")).collect();

    let orders = [["a", "b", "c"], ["a", "c", "b"], ["b", "a", "c"], ["b", "c", "a"], ["c", "a", "b"], ["c", "b", "a"]];
    for (n, order) in orders.iter().enumerate() {
        let wt = tmp.path().join(format!("merge-{n}"));
        git(&main, &["worktree", "add", "-q", "-b", &format!("merge-{n}"), wt.to_str().unwrap(), "main"]);
        for branch in order {
            let out = git_output(&wt, &["merge", "--no-edit", "-q", branch]);
            assert!(out.status.success(), "merging {branch} in order {order:?} conflicts: {}{}", stdout(&out), stderr(&out));
        }
        assert_eq!(git(&wt, &["status", "--porcelain"]), "", "order {order:?}: nothing left unmerged");
        let said = verified(&wt);
        assert!(said.contains("ledger intact: 11 records in 4 chains"), "order {order:?}: {said}");
        assert_eq!(shown(&wt), every, "order {order:?}");
        assert_eq!(exported(&wt), files, "order {order:?}");
        // Recording goes on in the merged worktree, in a chain of its own.
        record(&wt, "after-merge");
        assert!(verified(&wt).contains("12 records in 5 chains"));
    }

    // A rebase carries the chains' lines as they are.
    let rebased = tmp.path().join("rebased");
    git(&main, &["worktree", "add", "-q", "-b", "rebased", rebased.to_str().unwrap(), "a"]);
    git(&rebased, &["rebase", "-q", "b"]);
    verified(&rebased);
    let expected: BTreeSet<String> = ["base", "a", "b"].iter().flat_map(|b| tags(b, if *b == "base" { 2 } else { 3 })).collect();
    assert_eq!(shown(&rebased), expected);

    // So does a squash merge: one commit, the same lines.
    let squashed = tmp.path().join("squashed");
    git(&main, &["worktree", "add", "-q", "-b", "squashed", squashed.to_str().unwrap(), "main"]);
    for branch in branches {
        git(&squashed, &["merge", "--squash", "-q", branch]);
        git(&squashed, &["commit", "-qm", &format!("squash {branch}")]);
    }
    assert!(verified(&squashed).contains("11 records in 4 chains"));
    assert_eq!(shown(&squashed), every);
    assert_eq!(exported(&squashed), files);

    // A fresh clone knows no head: every chain verifies on its own, and recording goes on.
    let clone = tmp.path().join("clone");
    git(tmp.path(), &["clone", "-q", "--branch", "merge-0", main.to_str().unwrap(), clone.to_str().unwrap()]);
    verified(&clone);
    record(&clone, "in-the-clone");
    verified(&clone);
}

/// In the middle of recording, in one worktree: a stash, a switch to a branch made before some
/// records, switching back, a stash popped, a reset --hard. After each, a real gate is allowed (its
/// record kept) and `trace verify` passes, saying which records git keeps elsewhere or discarded.
#[test]
#[cfg_attr(wine, ignore = "runs git, and no Windows git is installed under Wine here")]
fn a_switch_a_stash_and_a_reset_stop_no_gate_and_verify_clean() {
    let (_tmp, ws) = repository();
    select(&ws);
    gate(&ws, "src/one.ts");
    record(&ws, "first");
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-qm", "one"]);
    git(&ws, &["branch", "older"]);
    gate(&ws, "src/two.ts");
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-qm", "two"]);
    let chain = chokepoint_core::ledger::chains::current(&chokepoint_core::Sidecar::new(&ws)).unwrap();
    // Recorded and not committed yet.
    gate(&ws, "src/three.ts");
    let full = fs::read_to_string(&chain.path).unwrap();

    // A stash takes the uncommitted records away: the chain is shorter than its head.
    git(&ws, &["stash", "-q"]);
    assert!(fs::read_to_string(&chain.path).unwrap().len() < full.len());
    gate(&ws, "src/four.ts");
    let said = verified(&ws);
    assert!(said.contains(&format!("note: chain {}", chain.chain)) && said.contains("not in this checkout"), "{said}");
    assert!(said.contains("commit") && said.contains("holds them"), "the stash holds them: {said}");

    // A switch to a branch made before some records (the new chain, untracked, stays).
    git(&ws, &["switch", "-q", "older"]);
    gate(&ws, "src/five.ts");
    assert!(verified(&ws).contains("not in this checkout"));

    // Back, and the stash popped: the chain is whole again.
    git(&ws, &["switch", "-q", "main"]);
    git(&ws, &["stash", "pop", "-q"]);
    assert_eq!(fs::read_to_string(&chain.path).unwrap(), full);
    gate(&ws, "src/six.ts");
    let said = verified(&ws);
    assert!(!said.contains(&format!("note: chain {}", chain.chain)), "{said}");

    // Everything committed, then recorded further, then reset --hard: git discards those records.
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-qm", "three"]);
    let current = chokepoint_core::ledger::chains::current(&chokepoint_core::Sidecar::new(&ws)).unwrap();
    gate(&ws, "src/seven.ts");
    git(&ws, &["reset", "-q", "--hard"]);
    gate(&ws, "src/eight.ts");
    let said = verified(&ws);
    assert!(
        said.contains(&format!("note: chain {}: ", current.chain)) && said.contains("not in this checkout: git discarded them"),
        "{said}"
    );

    // And a switch to the older branch and back, once more.
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-qm", "four"]);
    git(&ws, &["switch", "-q", "older"]);
    gate(&ws, "src/nine.ts");
    verified(&ws);
    git(&ws, &["switch", "-q", "main"]);
    gate(&ws, "src/ten.ts");
    verified(&ws);
}

/// What git never does is still tampering: a chain cut short by hand, a line edited, an uncommitted
/// chain deleted.
#[test]
#[cfg_attr(wine, ignore = "runs git, and no Windows git is installed under Wine here")]
fn tampering_git_does_not_explain_is_still_caught() {
    let (_tmp, ws) = repository();
    for tag in tags("t", 3) {
        record(&ws, &tag);
    }
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-qm", "recorded"]);
    for tag in tags("u", 2) {
        record(&ws, &tag);
    }
    let chain = chokepoint_core::ledger::chains::current(&chokepoint_core::Sidecar::new(&ws)).unwrap();
    let text = fs::read_to_string(&chain.path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    verified(&ws);

    // Cut short by hand to a length git never had: 4 of 5 records.
    fs::write(&chain.path, lines[..4].iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    let (code, said) = verify(&ws);
    assert_eq!(code, 14, "{said}");
    assert!(said.contains("shortened"), "{said}");
    fs::write(&chain.path, &text).unwrap();
    verified(&ws);

    // A line edited.
    fs::write(&chain.path, text.replacen("\"t-2\"", "\"t-9\"", 1)).unwrap();
    let (code, said) = verify(&ws);
    assert_eq!(code, 10, "edited: {said}");
    fs::write(&chain.path, &text).unwrap();
    verified(&ws);

    // An uncommitted chain deleted by hand: no commit holds it.
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-qm", "all of it"]);
    fs::write(&chain.path, lines[..3].iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    record(&ws, "v-1");
    let fresh = chokepoint_core::ledger::chains::current(&chokepoint_core::Sidecar::new(&ws)).unwrap();
    assert_ne!(fresh.chain, chain.chain, "the chain cut short was left");
    fs::write(&chain.path, &text).unwrap();
    verified(&ws);
    fs::remove_file(&fresh.path).unwrap();
    let (code, said) = verify(&ws);
    assert_eq!(code, 14, "{said}");
    assert!(said.contains(&fresh.chain) && said.contains("removed"), "{said}");
}
