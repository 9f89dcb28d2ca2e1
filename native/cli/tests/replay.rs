//! `chokepoint trace replay` as a process: calls recorded by other `chokepoint` processes (`intent
//! select`, `explain`, which judge through the engine and record like an agent's call), a draft with
//! one rule changed, and the JSON a script reads; a draft that does not load is exit 2 with its
//! file:line:column; the ledger's bytes are the same after every replay.

mod common;

use common::chokepoint;
use serde_json::{Value, json};
use std::fs;
use std::path::Path;

const INTENTS: &str = "version: 1
active_intents:
  - id: INT-SRC
    name: Sources
    status: IN_PROGRESS
    owned_scope: ['src/**']
";

fn hooks(guarded: &str) -> String {
    format!(
        "version: 1\nhooks:\n  PreToolUse:\n    - name: guard\n      paths: ['{guarded}']\n      deny:\n        reason: not by agents\n"
    )
}

fn workspace() -> tempfile::TempDir {
    let ws = common::workspace(&hooks("src/secret/**"), INTENTS);
    fs::create_dir_all(ws.path().join("src")).unwrap();
    let out = chokepoint(ws.path(), &["intent", "select", "--session", "S1", "INT-SRC"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for (path, code) in [("src/a.ts", 0), ("src/lib/b.ts", 0), ("src/secret/k.ts", 1)] {
        let input = json!({ "path": path, "content": "x\n" }).to_string();
        let out = chokepoint(ws.path(), &["explain", "--session", "S1", "--tool", "write_to_file", "--input", &input]);
        assert_eq!(out.status.code(), Some(code), "{path}: {}", String::from_utf8_lossy(&out.stdout));
    }
    ws
}

fn draft(ws: &Path, hooks_yaml: &str) -> String {
    let dir = ws.join("draft");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("hooks.yaml"), hooks_yaml).unwrap();
    dir.to_str().unwrap().to_owned()
}

#[test]
fn replay_prints_the_flipped_decisions_as_json_and_leaves_the_ledger_as_it_was() {
    let ws = workspace();
    let ws = ws.path();
    let ledger = common::ledger_text(ws).unwrap();
    let dir = draft(ws, &hooks("src/lib/**"));
    let out = chokepoint(ws, &["trace", "replay", "--config", &dir, "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let keys: Vec<&str> = report.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["changed", "changes", "groups", "hooksFile", "intentsFile", "replayed", "skipped", "unchanged", "unverified"]);
    assert_eq!((report["replayed"].as_u64(), report["unchanged"].as_u64(), report["changed"].as_u64()), (Some(4), Some(2), Some(2)));
    let changes = report["changes"].as_array().unwrap();
    let flips: Vec<(&str, &str, &str)> =
        changes.iter().map(|c| (c["paths"][0].as_str().unwrap(), c["from"].as_str().unwrap(), c["to"].as_str().unwrap())).collect();
    assert_eq!(flips, [("src/lib/b.ts", "allow", "deny"), ("src/secret/k.ts", "deny", "allow")]);
    let first = changes[0].as_object().unwrap();
    let keys: Vec<&str> = first.keys().map(String::as_str).collect();
    assert_eq!(keys, ["agent", "from", "hook", "intent", "paths", "reason", "seq", "session", "standIns", "time", "to", "tool"]);
    assert_eq!(
        (first["hook"].as_str(), first["intent"].as_str(), first["tool"].as_str()),
        (Some("guard"), Some("INT-SRC"), Some("write_to_file"))
    );
    assert_eq!(first["session"], "S1");
    assert!(first["seq"].as_u64().unwrap() > 1);
    assert_eq!(first["reason"], "not by agents");
    assert_eq!(
        report["groups"],
        json!([
            { "hook": "guard", "intent": "INT-SRC", "from": "allow", "to": "deny", "count": 1 },
            { "hook": "guard", "intent": "INT-SRC", "from": "deny", "to": "allow", "count": 1 },
        ])
    );

    // The same as text, for a person.
    let out = chokepoint(ws, &["trace", "replay", "--config", &dir]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("4 calls judged again: 2 unchanged, 2 would change"), "{text}");
    assert!(text.contains("allow -> deny  hook guard  intent INT-SRC"), "{text}");
    assert!(text.contains("write_to_file src/lib/b.ts"), "{text}");

    // `--since` after the calls: nothing to judge.
    let out = chokepoint(ws, &["trace", "replay", "--config", &dir, "--since", "2999-01-01", "--json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["replayed"], 0);
    assert_eq!(common::ledger_text(ws).unwrap(), ledger, "no replay appended to the ledger");
}

#[test]
fn a_draft_that_does_not_load_is_exit_2_naming_file_line_and_column() {
    let ws = workspace();
    let ws = ws.path();
    let ledger = common::ledger_text(ws).unwrap();
    let dir = draft(ws, "version: 1\nhooks:\n  PreToolUse:\n    - name: guard\n      tool: '('\n      deny:\n        reason: no\n");
    let out = chokepoint(ws, &["trace", "replay", "--config", &dir]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    let file = Path::new(&dir).join("hooks.yaml");
    assert!(stderr.contains(&format!("{}:4:7", file.display())), "{stderr}");
    assert!(out.stdout.is_empty());
    let out = chokepoint(ws, &["trace", "replay", "--config", &dir, "--since", "last tuesday"]);
    assert_eq!(out.status.code(), Some(2), "a --since that is not a time is a usage error");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--since"));
    assert_eq!(common::ledger_text(ws).unwrap(), ledger);
}
