//! Policy replay against a ledger of real calls: a session's calls judged by the engine (its
//! handshake, writes in and out of scope, a declared rule's deny, a command hook with a side effect,
//! a read), then one rule changed in a draft, and the replay names exactly the decisions that rule
//! flips, without appending to the ledger, taking a lease or running the command hook again.

use chokepoint_core::engine::replay::{ChangeGroup, ReplayError, ReplayOptions, ReplayReport, replay};
use chokepoint_core::{Engine, Event, EventKind};
use serde_json::json;
use std::fs;
use std::path::Path;

const INTENTS: &str = "version: 1
active_intents:
  - id: INT-SRC
    name: Sources
    status: IN_PROGRESS
    owned_scope: ['src/**']
";

/// `guard` is the rule the draft changes; `audit` is a command hook whose side effect (a line in
/// audit.log) shows whether it ran.
fn hooks(guarded: &str) -> String {
    format!(
        "version: 1
hooks:
  PreToolUse:
    - name: guard
      paths: ['{guarded}']
      deny:
        reason: this folder is not written by agents
    - name: audit
      tool: write_to_file
      command: {AUDIT}
"
    )
}

/// Adds a line to audit.log, in the platform's shell.
const AUDIT: &str = if cfg!(windows) { "[cmd, /d, /s, /c, 'echo ran>> audit.log']" } else { "[sh, -c, 'echo ran >> audit.log']" };

fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    fs::create_dir_all(ws.path().join(".orchestration")).unwrap();
    fs::create_dir_all(ws.path().join("src")).unwrap();
    fs::write(ws.path().join(".orchestration/active_intents.yaml"), INTENTS).unwrap();
    fs::write(ws.path().join(".orchestration/hooks.yaml"), hooks("src/secret/**")).unwrap();
    ws
}

fn call(tool: &str, input: serde_json::Value, paths: &[&str]) -> Event {
    let mut event = Event::tool(EventKind::PreToolUse, tool, input);
    event.ids.session = Some("S1".into());
    event.ids.agent = Some("chokepoint".into());
    event.paths = paths.iter().map(|p| p.to_string()).collect();
    event
}

fn write(path: &str) -> Event {
    call("write_to_file", json!({ "path": path, "content": "x\n" }), &[path])
}

/// Last week's work: what the engine decided for each call, in order.
async fn record_work(ws: &Path) -> Vec<&'static str> {
    let engine = Engine::open(ws).unwrap();
    assert!(engine.info().diagnostics.is_empty(), "{:?}", engine.info().diagnostics);
    let calls = [
        call("select_active_intent", json!({ "intent_id": "INT-SRC" }), &[]),
        write("src/a.ts"),
        write("src/lib/b.ts"),
        write("src/secret/k.ts"),
        write("docs/x.md"),
        call("read_file", json!({ "path": "src/a.ts" }), &[]),
    ];
    let mut decided = Vec::new();
    for event in calls {
        decided.push(engine.evaluate_async(event, None).await.decision.as_str());
    }
    // The session is over: its lease is gone, as it would be a week later.
    engine.gatekeeper().release("S1").unwrap();
    decided
}

fn lines(path: &Path) -> usize {
    fs::read_to_string(path).map(|t| t.lines().count()).unwrap_or(0)
}

fn draft(ws: &Path, hooks_yaml: &str) -> std::path::PathBuf {
    let dir = ws.join("draft");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("hooks.yaml"), hooks_yaml).unwrap();
    dir
}

/// Each change as (paths, from, to, hook).
fn flips(report: &ReplayReport) -> Vec<(Vec<String>, String, String, Option<String>)> {
    report.changes.iter().map(|c| (c.paths.clone(), c.from.clone(), c.to.clone(), c.hook.clone())).collect()
}

#[tokio::test]
async fn a_changed_rule_flips_exactly_the_calls_it_matches_and_nothing_is_written() {
    let ws = workspace();
    let ws = ws.path();
    assert_eq!(record_work(ws).await, ["allow", "allow", "allow", "deny", "deny", "allow"]);
    let ledger = || chokepoint_core::ledger::chains::all_lines(&chokepoint_core::Sidecar::new(ws));
    let before = ledger();
    assert_eq!(lines(&ws.join("audit.log")), 2, "audit ran for the two writes the chain reached it on");

    // The draft guards src/lib instead of src/secret.
    let options = ReplayOptions { config: draft(ws, &hooks("src/lib/**")), ..ReplayOptions::default() };
    let report = replay(ws, &options).await.unwrap();

    assert_eq!(
        flips(&report),
        [
            (vec!["src/lib/b.ts".to_owned()], "allow".to_owned(), "deny".to_owned(), Some("guard".to_owned())),
            (vec!["src/secret/k.ts".to_owned()], "deny".to_owned(), "allow".to_owned(), Some("guard".to_owned())),
        ]
    );
    assert_eq!((report.replayed, report.unchanged), (6, 4), "the handshake, src/a.ts, the out-of-scope write and the read stand");
    assert_eq!(report.changes[0].reason.as_deref(), Some("this folder is not written by agents"));
    assert_eq!(report.changes.iter().map(|c| c.intent.as_deref()).collect::<Vec<_>>(), [Some("INT-SRC"), Some("INT-SRC")]);
    assert!(report.changes[0].seq < report.changes[1].seq && report.changes[0].seq > 1);
    assert_eq!(
        report.groups,
        [
            ChangeGroup { hook: Some("guard".into()), intent: Some("INT-SRC".into()), from: "allow".into(), to: "deny".into(), count: 1 },
            ChangeGroup { hook: Some("guard".into()), intent: Some("INT-SRC".into()), from: "deny".into(), to: "allow".into(), count: 1 },
        ]
    );
    assert!(report.hooks_file.ends_with("draft/hooks.yaml"));
    assert!(report.intents_file.ends_with(".orchestration/active_intents.yaml"), "a file the draft lacks is the workspace's");
    // The secret write never reached `audit` then: nothing recorded stands in for it, and it says so.
    assert_eq!(report.unverified, 1);
    assert_eq!(
        report.changes[1].stand_ins,
        ["command hook `audit` not re-run and not in the record (it did not run then): counted as allow"]
    );

    assert!(ledger() == before, "the replay appended to the ledger");
    assert_eq!(lines(&ws.join("audit.log")), 2, "the command hook was not run again");
    let engine = Engine::open(ws).unwrap();
    assert_eq!(engine.gatekeeper().holders().unwrap(), [], "the replay took no lease");
    assert_eq!(engine.gatekeeper().selected("S1"), None);

    // Asked to, it runs the command hooks (and only then their side effects happen), still writing no record.
    let report = replay(ws, &ReplayOptions { run_commands: true, ..options.clone() }).await.unwrap();
    assert_eq!(flips(&report).len(), 2);
    assert_eq!(report.unverified, 0);
    assert_eq!(lines(&ws.join("audit.log")), 4, "audit ran for src/a.ts and, now allowed, src/secret/k.ts");
    assert!(ledger() == before, "the replay that ran the commands appended to the ledger");

    // Against the same configuration nothing changes.
    let same = ws.join(".orchestration");
    let report = replay(ws, &ReplayOptions { config: same, ..ReplayOptions::default() }).await.unwrap();
    assert_eq!((report.replayed, report.unchanged, report.changes.len()), (6, 6, 0));
}

#[tokio::test]
async fn the_intents_of_the_draft_judge_writes_with_the_intent_each_record_holds() {
    let ws = workspace();
    let ws = ws.path();
    record_work(ws).await;
    // The draft narrows INT-SRC to src/lib: src/a.ts now falls outside the scope the session held.
    let dir = ws.join("draft");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("active_intents.yaml"), INTENTS.replace("['src/**']", "['src/lib/**', 'src/secret/**']")).unwrap();
    let report = replay(ws, &ReplayOptions { config: dir, intent: Some("INT-SRC".into()), ..ReplayOptions::default() }).await.unwrap();
    assert_eq!(flips(&report), [(vec!["src/a.ts".to_owned()], "allow".to_owned(), "deny".to_owned(), Some("gatekeeper".to_owned()))]);
    assert!(report.changes[0].reason.as_deref().unwrap().contains("outside the scope of intent `INT-SRC`"), "{:?}", report.changes[0]);
    // Every call of the session is under INT-SRC (the handshake's record holds the intent it took).
    assert_eq!(report.replayed, 6);
    let other = ReplayOptions { config: ws.join("draft"), intent: Some("INT-OTHER".into()), ..ReplayOptions::default() };
    assert_eq!(replay(ws, &other).await.unwrap().replayed, 0, "--intent keeps only that intent's calls");
}

#[tokio::test]
async fn a_draft_that_does_not_load_is_refused_with_its_file_line_and_column() {
    let ws = workspace();
    let ws = ws.path();
    record_work(ws).await;
    let before = chokepoint_core::ledger::chains::all_lines(&chokepoint_core::Sidecar::new(ws));
    let bad = "version: 1\nhooks:\n  PreToolUse:\n    - name: guard\n      priority: urgent\n      deny:\n        reason: no\n";
    let err = replay(ws, &ReplayOptions { config: draft(ws, bad), ..ReplayOptions::default() }).await.unwrap_err();
    let ReplayError::Config(diagnostics) = &err else { panic!("expected a configuration error, got {err:?}") };
    assert!(diagnostics[0].file.ends_with("draft/hooks.yaml"), "{diagnostics:?}");
    assert_eq!((diagnostics[0].line, diagnostics[0].column), (5, 17), "{diagnostics:?}");
    assert!(
        chokepoint_core::ledger::chains::all_lines(&chokepoint_core::Sidecar::new(ws)) == before,
        "a refused replay appended to the ledger"
    );
    // And a folder with neither file is no configuration at all.
    let empty = ws.join("empty");
    fs::create_dir_all(&empty).unwrap();
    let err = replay(ws, &ReplayOptions { config: empty, ..ReplayOptions::default() }).await.unwrap_err();
    assert!(err.to_string().contains("holds neither hooks.yaml nor active_intents.yaml"), "{err}");
}

#[tokio::test]
async fn a_write_recorded_without_its_paths_is_skipped_not_judged_as_naming_none() {
    let ws = workspace();
    let ws = ws.path();
    record_work(ws).await;
    // A ledger of an older engine: the same records without `data.call`, chained again.
    let ledger = chokepoint_core::ledger::chains::current(&chokepoint_core::Sidecar::new(ws)).unwrap().path;
    let mut prev = chokepoint_core::ledger::GENESIS.to_owned();
    let mut text = String::new();
    for line in fs::read_to_string(&ledger).unwrap().lines() {
        let mut record = chokepoint_core::ledger::Record::from_line(line).unwrap();
        record.data = None;
        record.prev = prev;
        let line = record.to_line();
        prev = chokepoint_core::ledger::record::line_hash(&line);
        text += &line;
        text.push('\n');
    }
    for f in ["state.db", "state.db-wal", "state.db-shm", "trace.db", "trace.db-wal", "trace.db-shm"] {
        let _ = fs::remove_file(ws.join(".orchestration").join(f));
    }
    fs::write(&ledger, text).unwrap();
    let report = replay(ws, &ReplayOptions { config: draft(ws, &hooks("src/lib/**")), ..ReplayOptions::default() }).await.unwrap();
    assert_eq!(report.replayed, 1, "only the read: it names no path");
    assert_eq!(
        report.skipped.iter().map(|s| (s.reason.as_str(), s.count)).collect::<Vec<_>>(),
        [("a handshake call recorded before the ledger kept its input", 1), ("a write recorded before the ledger kept a call's paths", 4),]
    );
    assert_eq!(report.changes, []);
}

#[tokio::test]
async fn an_expansion_counts_for_the_calls_after_its_approval_only() {
    let ws = workspace();
    let ws = ws.path();
    let engine = Engine::open(ws).unwrap();
    let mut decided = vec![engine.evaluate_async(call("select_active_intent", json!({ "intent_id": "INT-SRC" }), &[]), None).await];
    decided.push(engine.evaluate_async(write("docs/x.md"), None).await);
    std::thread::sleep(std::time::Duration::from_millis(5));
    let expansion = chokepoint_core::scope::expansion::Expansion {
        session: "S1".into(),
        intent: "INT-SRC".into(),
        paths: vec!["docs/**".into()],
        justification: "the docs of the change".into(),
        approved_by: "human".into(),
        approved_at_ms: chokepoint_core::base::clock::now_ms(),
    };
    engine.gatekeeper().approve_expansion(&expansion, false).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    decided.push(engine.evaluate_async(write("docs/y.md"), None).await);
    assert_eq!(decided.iter().map(|e| e.decision.as_str()).collect::<Vec<_>>(), ["allow", "deny", "allow"]);
    engine.gatekeeper().release("S1").unwrap();
    drop(engine);
    // Against the same configuration: docs/x.md stays denied (the expansion came after it), docs/y.md
    // stays allowed (it came before).
    let report = replay(ws, &ReplayOptions { config: ws.join(".orchestration"), ..ReplayOptions::default() }).await.unwrap();
    assert_eq!((report.replayed, report.unchanged), (3, 3), "{:?}", report.changes);
}
