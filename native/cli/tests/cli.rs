//! The `chokepoint` binary as a user runs it: output, exit codes.

use std::fs;
use std::process::{Command, Output};

fn chokepoint(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_chokepoint")).args(args).output().unwrap()
}

fn sample_workspace() -> tempfile::TempDir {
    let repo = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join(".orchestration")).unwrap();
    for f in ["hooks.yaml", "active_intents.yaml"] {
        fs::copy(format!("{repo}/.orchestration/{f}"), dir.path().join(".orchestration").join(f)).unwrap();
    }
    dir
}

#[test]
fn version_flag_prints_the_crate_version() {
    let out = chokepoint(&["--version"]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), format!("chokepoint {}", env!("CARGO_PKG_VERSION")));
}

#[test]
fn info_json_describes_the_sample() {
    let ws = sample_workspace();
    let out = chokepoint(&["info", "--json", "--workspace", ws.path().to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(v["hooks"]["status"], "loaded");
    assert_eq!(v["hookCount"], 3);
    assert_eq!(v["intentIds"], serde_json::json!(["INT-001", "INT-002", "INT-003"]));
    assert_eq!(v["taskTypes"], serde_json::json!(["bugfix"]));
}

#[test]
fn config_check_exits_2_with_a_located_error() {
    let ws = sample_workspace();
    let hooks = ws.path().join(".orchestration").join("hooks.yaml");
    fs::write(&hooks, "version: 1\nhooks:\n  BeforeSubmit:\n    - name: t\n      builtin: run_tests\n      timeot: 5\n").unwrap();
    let out = chokepoint(&["config", "check", "--workspace", ws.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with(&format!("error: {}:6:7: ", hooks.display())), "{stderr}");
    assert!(stderr.contains("unknown field `timeot`"), "{stderr}");
}

#[test]
fn config_check_passes_on_the_sample() {
    let ws = sample_workspace();
    let out = chokepoint(&["config", "check", "--workspace", ws.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "configuration ok: 3 hooks, 3 intents");
}

#[test]
fn a_missing_workspace_is_a_usage_error() {
    let out = chokepoint(&["info", "--workspace", "/no/such/workspace/here"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: cannot open workspace `/no/such/workspace/here`"));
}

fn run_in(ws: &tempfile::TempDir, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_chokepoint")).args(args).current_dir(ws.path()).output().unwrap();
    (out.status.code().unwrap(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn explain_exits_with_the_decision_and_shows_the_canonical_paths() {
    let ws = sample_workspace();
    let write = r#"{"path":"src/auth/../billing/x.js","content":"1"}"#;
    let (code, out, _) = run_in(&ws, &["explain", "--session", "s1", "--tool", "write_to_file", "--input", write]);
    assert_eq!(code, 1, "deny before the handshake: {out}");
    assert!(out.contains("call `select_active_intent` first"), "{out}");
    assert!(out.contains("src/auth/../billing/x.js  ->  src/billing/x.js"), "{out}");
    assert!(out.contains("gatekeeper  deny"), "{out}");

    let (code, out, err) = run_in(&ws, &["intent", "select", "--session", "s1", "--agent", "claude-code", "INT-001"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("<intent_context>\nid: INT-001"), "{out}");

    // Another process, same session: the lease is shared through the workspace's state database.
    let (code, out, _) = run_in(&ws, &["explain", "--session", "s1", "--tool", "write_to_file", "--input", write, "--json"]);
    assert_eq!(code, 1);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["decision"], "deny");
    assert_eq!(v["intent"], "INT-001");
    assert_eq!(v["paths"], serde_json::json!([{ "raw": "src/auth/../billing/x.js", "canonical": "src/billing/x.js" }]));
    assert_eq!(v["suggestedTool"], "scope_expansion_request");
    assert_eq!(v["hooks"][0]["name"], "gatekeeper");

    let (code, _, _) = run_in(&ws, &["explain", "--session", "s1", "--tool", "Edit", "--input", r#"{"file_path":"src/auth/login.js"}"#]);
    assert_eq!(code, 0, "allow inside the scope");
    let ask = r#"{"intent_id":"INT-001","paths":["src/billing/**"],"justification":"shared helper"}"#;
    let (code, out, _) = run_in(&ws, &["explain", "--session", "s1", "--tool", "scope_expansion_request", "--input", ask]);
    assert_eq!(code, 3, "an expansion request is an ask: {out}");
    let (code, _, err) = run_in(&ws, &["explain", "--tool", "x", "--input", "[1]"]);
    assert_eq!(code, 2, "usage error: {err}");
}

#[test]
#[cfg_attr(
    windows,
    ignore = "a person's decision from a terminal rests on the chain of processes that started it, which Windows lets a process forge (it may name any process of its user as its child's parent): refused there by design (fails closed, serve::deciders)"
)]
fn a_second_session_is_told_who_holds_the_intent_and_a_release_frees_it() {
    let ws = sample_workspace();
    assert_eq!(run_in(&ws, &["intent", "select", "--session", "a", "--agent", "claude-code", "INT-002"]).0, 0);
    let (code, _, err) = run_in(&ws, &["intent", "select", "--session", "b", "INT-002"]);
    assert_eq!(code, 1);
    assert!(err.contains("intent `INT-002` is locked by session `a`"), "{err}");
    let (_, out, _) = run_in(&ws, &["intent", "list"]);
    assert!(out.contains("INT-002  held by session `a` (agent `claude-code`)"), "{out}");
    assert_eq!(run_in(&ws, &["intent", "release", "--session", "a"]).0, 0);
    assert_eq!(run_in(&ws, &["intent", "select", "--session", "b", "INT-002"]).0, 0);
}

#[test]
#[cfg_attr(
    windows,
    ignore = "a person's decision from a terminal rests on the chain of processes that started it, which Windows lets a process forge (it may name any process of its user as its child's parent): refused there by design (fails closed, serve::deciders)"
)]
fn an_approved_expansion_opens_the_path_and_can_be_saved() {
    let ws = sample_workspace();
    assert_eq!(run_in(&ws, &["intent", "select", "--session", "s", "INT-002"]).0, 0);
    let write = r#"{"path":"src/shared/money.js"}"#;
    assert_eq!(run_in(&ws, &["explain", "--session", "s", "--tool", "write_to_file", "--input", write]).0, 1);
    let (code, _, err) = run_in(&ws, &["intent", "approve", "--session", "s", "--intent", "INT-002", "--path", "src/shared/**", "--save"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(run_in(&ws, &["explain", "--session", "s", "--tool", "write_to_file", "--input", write]).0, 0);
    let yaml = fs::read_to_string(ws.path().join(".orchestration/active_intents.yaml")).unwrap();
    assert!(yaml.contains("      - src/billing/**\n      - \"src/shared/**\"\n"), "{yaml}");
    assert_eq!(run_in(&ws, &["config", "check"]).0, 0, "the saved file is valid");
    let (code, _, err) = run_in(&ws, &["intent", "approve", "--session", "s", "--intent", "INT-002", "--path", ".orchestration/**"]);
    assert_eq!(code, 2);
    assert!(err.contains("governance"), "{err}");
}

#[test]
fn explain_refuses_to_judge_with_a_broken_configuration() {
    let ws = sample_workspace();
    fs::write(ws.path().join(".orchestration/hooks.yaml"), "version: 1\nhooks: [\n").unwrap();
    let (code, _, err) = run_in(&ws, &["explain", "--session", "s", "--tool", "write_to_file", "--input", "{}"]);
    assert_eq!(code, 2);
    assert!(err.contains("hooks.yaml:"), "names the file and line: {err}");
}

#[test]
#[cfg_attr(
    qemu,
    ignore = "qemu-user's clone() takes no namespace flags (EINVAL), so no command can be isolated under it; the same Linux code is tested natively in the cargo layer"
)]
#[cfg_attr(
    windows,
    ignore = "needs a contained command run isolated (Linux namespaces over an overlay); Windows runs it observed, its changes compared and reported (doctor says so)"
)]
fn exec_contains_a_command_to_the_sessions_scope() {
    let ws = sample_workspace();
    fs::create_dir_all(ws.path().join("src/auth")).unwrap();
    fs::write(ws.path().join("README.md"), "original\n").unwrap();
    assert_eq!(run_in(&ws, &["intent", "select", "--session", "s", "INT-001"]).0, 0);
    let report = ws.path().join("report.json");
    let script = "echo new > src/auth/x.js; echo changed > README.md; exit 0";
    let (code, _, err) = run_in(&ws, &["exec", "--session", "s", "--report", report.to_str().unwrap(), "--", "sh", "-c", script]);
    let r: serde_json::Value = serde_json::from_str(&fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(fs::read_to_string(ws.path().join("src/auth/x.js")).unwrap(), "new\n", "inside the scope: kept");
    assert_eq!(fs::read_to_string(ws.path().join("README.md")).unwrap(), "original\n", "outside: never applied");
    // Isolated, the command's layer took the write (Landlock guards only what is outside the
    // workspace), and the report names it.
    assert_eq!(r["isolated"], true, "{r}");
    assert_eq!(code, 4, "{err}");
    assert!(err.contains("`README.md`: modified; not applied"), "{err}");
    assert_eq!(r["refused"], serde_json::json!([{ "path": "README.md", "kind": "modified" }]));
    assert_eq!(r["allowed"], serde_json::json!([{ "path": "src/auth/x.js", "kind": "created" }]));
}

#[test]
#[cfg_attr(
    qemu,
    ignore = "qemu-user's clone() takes no namespace flags (EINVAL), so no command can be isolated under it; the same Linux code is tested natively in the cargo layer"
)]
#[cfg_attr(
    windows,
    ignore = "needs a contained command run isolated (Linux namespaces over an overlay); Windows runs it observed, its changes compared and reported (doctor says so)"
)]
fn exec_without_landlock_never_lands_what_the_command_changed_outside_and_says_so() {
    let ws = sample_workspace();
    let hooks = fs::read_to_string(ws.path().join(".orchestration/hooks.yaml")).unwrap();
    fs::write(ws.path().join(".orchestration/hooks.yaml"), format!("{hooks}gatekeeper:\n  landlock: off\n")).unwrap();
    fs::write(ws.path().join("README.md"), "original\n").unwrap();
    assert_eq!(run_in(&ws, &["intent", "select", "--session", "s", "INT-002"]).0, 0);
    let script = "mkdir -p src/billing && echo 1 > src/billing/a.js && echo changed > README.md && echo x > .orchestration/hooks.yaml && touch stray.txt";
    let (code, _, err) = run_in(&ws, &["exec", "--session", "s", "--", "sh", "-c", script]);
    assert_eq!(code, 4, "something was held back: {err}");
    assert_eq!(fs::read_to_string(ws.path().join("README.md")).unwrap(), "original\n");
    assert!(
        fs::read_to_string(ws.path().join(".orchestration/hooks.yaml")).unwrap().contains("landlock: off"),
        "governance file untouched"
    );
    assert!(!ws.path().join("stray.txt").exists());
    assert_eq!(fs::read_to_string(ws.path().join("src/billing/a.js")).unwrap(), "1\n");
    for path in ["README.md", ".orchestration/hooks.yaml", "stray.txt"] {
        assert!(err.contains(&format!("`{path}`: ")), "the report names {path}: {err}");
    }
    assert!(err.contains("not applied") && err.contains("scope_expansion_request"), "{err}");
    assert!(!err.contains("note:"), "nothing the model does not need: {err}");
    // The command's own failure passes through when it stayed inside.
    assert_eq!(run_in(&ws, &["exec", "--session", "s", "--", "sh", "-c", "exit 7"]).0, 7);
    assert_eq!(run_in(&ws, &["exec", "--session", "s", "--timeout", "1", "--", "sleep", "30"]).0, 124);
}

#[test]
fn trace_record_from_many_processes_makes_one_chain_and_verify_names_what_was_tampered() {
    let ws = sample_workspace();
    let dir = ws.path().to_str().unwrap().to_owned();
    let children: Vec<_> = (0..6)
        .map(|p| {
            let dir = dir.clone();
            std::thread::spawn(move || {
                (0..8)
                    .map(|i| {
                        let event = format!(r#"{{"event":"ci-run","job":{p},"step":{i}}}"#);
                        let out = Command::new(env!("CARGO_BIN_EXE_chokepoint"))
                            .args(["trace", "record", "--workspace", &dir, "--event", &event])
                            .output()
                            .unwrap();
                        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
                        String::from_utf8_lossy(&out.stdout).trim().parse::<u64>().unwrap()
                    })
                    .collect::<Vec<u64>>()
            })
        })
        .collect();
    let mut seqs: Vec<u64> = children.into_iter().flat_map(|c| c.join().unwrap()).collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (1..=48).collect::<Vec<u64>>(), "every acknowledged record has its own place");
    let (code, out, _) = run_in(&ws, &["trace", "verify"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("ledger intact: 48 records in 1 chains"), "{out}");

    // The processes of one worktree share one chain, the one its lock file names.
    let ledger = chokepoint_core::ledger::chains::current(&chokepoint_core::Sidecar::new(ws.path())).unwrap().path;
    let text = fs::read_to_string(&ledger).unwrap();
    fs::write(&ledger, text.replacen("\"step\":3", "\"step\":9", 1)).unwrap();
    let (code, _, err) = run_in(&ws, &["trace", "verify"]);
    assert_eq!(code, 10, "edited: {err}");
    assert!(err.contains("edited at line"), "{err}");
    let without_last: String = text.lines().take(47).map(|l| format!("{l}\n")).collect();
    fs::write(&ledger, without_last).unwrap();
    let (code, _, err) = run_in(&ws, &["trace", "verify", "--json"]);
    assert_eq!(code, 14, "truncated: {err}");
    assert_eq!(run_in(&ws, &["trace", "record", "--event", "[1]"]).0, 2);
}

fn sha(text: &str) -> String {
    chokepoint_core::ledger::record::sha256_hex(text.as_bytes())
}

#[test]
fn show_blame_and_export_go_through_the_index() {
    let ws = sample_workspace();
    fs::write(ws.path().join("notes.txt"), "one\ntwo\nthree\n").unwrap();
    let event = serde_json::json!({
        "event": "human-edit", "session": "s1", "intent": "INT-003", "model": "by-hand",
        "files": [{ "path": "notes.txt", "ranges": [{ "start": 2, "end": 3, "sha256": sha("two\nthree") }] }],
    });
    assert_eq!(run_in(&ws, &["trace", "record", "--event", &event.to_string()]).0, 0);
    assert_eq!(run_in(&ws, &["trace", "record", "--event", r#"{"event":"ci-run","session":"s2"}"#]).0, 0);

    let (code, out, err) = run_in(&ws, &["trace", "show", "--intent", "INT-003"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("human-edit") && !out.contains("ci-run"), "{out}");
    assert!(out.contains("notes.txt 2-3"), "{out}");
    // Each record is named by its chain (the random part of its name) and its number in it.
    let at = out.lines().find(|l| l.contains("human-edit")).and_then(|l| l.split_whitespace().next()).unwrap_or_default();
    let (chain, seq) = at.split_once('#').unwrap_or_default();
    assert!(chain.len() == 8 && chain.bytes().all(|b| b.is_ascii_hexdigit()) && seq.parse::<u64>().is_ok(), "{out}");

    // Lines are added above the recorded range: blame still finds it by content.
    fs::write(ws.path().join("notes.txt"), "zero\nhalf\none\ntwo\nthree\n").unwrap();
    let (code, out, err) = run_in(&ws, &["trace", "blame", "notes.txt:4", "--json"]);
    assert_eq!(code, 0, "{err}");
    let line: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(line["text"], "two");
    assert_eq!(line["origin"]["intent"], "INT-003");
    assert_eq!(line["origin"]["model"], "by-hand");
    let (_, out, _) = run_in(&ws, &["trace", "blame", "notes.txt"]);
    assert!(out.lines().next().unwrap().contains("(no record)"), "{out}");

    let (code, out, _) = run_in(&ws, &["trace", "export", "--format", "agent-trace"]);
    assert_eq!(code, 0);
    let trace: serde_json::Value = serde_json::from_str(&out).unwrap();
    let first = &trace[0];
    assert_eq!(first["version"], "0.1");
    assert!(first["id"].is_string() && first["timestamp"].is_string());
    assert_eq!(first["files"][0]["path"], "notes.txt");
    assert_eq!(first["files"][0]["conversations"][0]["ranges"][0]["start_line"], 2);

    // The index is derived: rebuilt from the ledger, it answers the same.
    fs::remove_file(ws.path().join(".orchestration/trace.db")).unwrap();
    assert_eq!(run_in(&ws, &["trace", "reindex"]).0, 0);
    let (_, again, _) = run_in(&ws, &["trace", "show", "--json"]);
    assert_eq!(again.lines().count(), 2);
}

/// An acknowledgement (the printed sequence number) comes only after the `fdatasync` that covers the
/// record's write. Watched with strace, because a killed process cannot tell a synced record from one
/// still in the page cache (`scripts/test.js` installs strace).
#[test]
#[cfg_attr(not(target_os = "linux"), ignore = "watches the ledger's system calls with strace, which is Linux's")]
fn trace_record_prints_its_seq_only_after_the_ledger_is_synced() {
    let ws = sample_workspace();
    let log = ws.path().join("strace.log");
    let out = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=openat,write,fdatasync", "-o"])
        .arg(&log)
        .arg(env!("CARGO_BIN_EXE_chokepoint"))
        .args(["trace", "record", "--workspace"])
        .arg(ws.path())
        .args(["--event", r#"{"event":"ci-run"}"#])
        .output()
        .expect("strace runs (scripts/test.js installs it when it is missing)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let calls = fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = calls.lines().collect();
    let fd = lines
        .iter()
        .find(|l| l.contains("openat(") && l.contains(".orchestration/trace/") && l.contains(".jsonl\""))
        .and_then(|l| l.rsplit("= ").next())
        .unwrap_or_else(|| panic!("the ledger is opened:\n{calls}"))
        .trim()
        .to_owned();
    let at = |what: &str| lines.iter().position(|l| l.contains(what)).unwrap_or_else(|| panic!("no `{what}` in:\n{calls}"));
    let write = at(&format!("write({fd}, \"{{\\\"v\\\":"));
    let sync = at(&format!("fdatasync({fd})"));
    let printed = at("write(1, \"1\\n\"");
    assert!(write < sync && sync < printed, "the record is written ({write}), synced ({sync}), then acknowledged ({printed}):\n{calls}");
}

/// A truncated chain no longer stops any governed write (the writer leaves it for a new chain), but
/// fails `trace verify` until `trace reseal` moves it aside as evidence and starts a new chain that
/// says so, after which verification passes again.
#[test]
fn a_tampered_ledger_is_resealed_not_repaired() {
    let ws = sample_workspace();
    let dir = ws.path().to_str().unwrap().to_owned();
    for i in 0..3 {
        let out = chokepoint(&["trace", "record", "--workspace", &dir, "--event", &format!(r#"{{"event":"ci-run","n":{i}}}"#)]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    assert_eq!(run_in(&ws, &["trace", "reseal", "--reason", "nothing wrong"]).0, 1, "an intact ledger is not resealed");
    let sidecar = chokepoint_core::Sidecar::new(ws.path());
    let first_chain = chokepoint_core::ledger::chains::current(&sidecar).unwrap();
    let ledger = first_chain.path.clone();
    let text = fs::read_to_string(&ledger).unwrap();
    let truncated: String = text.lines().take(2).map(|l| format!("{l}\n")).collect();
    fs::write(&ledger, &truncated).unwrap();
    let recorded = chokepoint(&["trace", "record", "--workspace", &dir, "--event", r#"{"event":"after"}"#]);
    assert!(recorded.status.success(), "a truncated chain stops nothing: {}", String::from_utf8_lossy(&recorded.stderr));
    assert_eq!(String::from_utf8_lossy(&recorded.stdout).trim(), "1", "a new chain");
    let said = String::from_utf8_lossy(&recorded.stderr);
    assert!(said.contains("left its chain") && said.contains("ends at record 2 but its head says 3"), "{said}");
    assert_eq!(fs::read_to_string(&ledger).unwrap(), truncated, "the truncated chain is left as found");
    let (code, _, err) = run_in(&ws, &["trace", "verify"]);
    assert_eq!(code, 14, "the truncation is still found: {err}");

    assert_eq!(run_in(&ws, &["trace", "reseal"]).0, 2, "a reason is required");
    let (code, out, err) = run_in(&ws, &["trace", "reseal", "--reason", "restored from backup failed", "--by", "ops"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("truncated"), "{out}");
    let sealed: Vec<_> = fs::read_dir(sidecar.trace_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&format!("{}.sealed-", first_chain.chain)))
        .collect();
    assert_eq!(sealed.len(), 1);
    assert_eq!(fs::read_to_string(sidecar.trace_dir().join(&sealed[0])).unwrap(), truncated, "the evidence is kept byte for byte");
    let resealed = chokepoint_core::ledger::chains::current(&sidecar).unwrap();
    let first: serde_json::Value = serde_json::from_str(fs::read_to_string(&resealed.path).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(first["seq"], 1);
    assert_eq!(first["data"]["resealed"]["reason"], "restored from backup failed");
    assert_eq!(first["data"]["resealed"]["sealed_chain"], first_chain.chain.as_str());
    assert_eq!(first["data"]["resealed"]["sealed_file"], sealed[0].as_str());
    assert_eq!(first["data"]["resealed"]["previous_head"]["count"], 3);

    let out = chokepoint(&["trace", "record", "--workspace", &dir, "--event", r#"{"event":"after"}"#]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "2", "recording continues the new chain");
    let (code, out, _) = run_in(&ws, &["trace", "verify"]);
    assert_eq!(code, 0);
    // The chain begun after the truncation (1 record) and the reseal's (2).
    assert!(out.starts_with("ledger intact: 3 records in 2 chains"), "{out}");
}
