//! The intent gatekeeper as the engine runs it: the handshake, owned scopes, governance files,
//! canonical paths, and a property that no write outside the scope is ever allowed.

use chokepoint_core::canonical::Workspace;
use chokepoint_core::gatekeeper::{Gatekeeper, IntentSource};
use chokepoint_core::{Decision, Engine, Event, EventKind, IntentSet, Priority, Registration};
use serde_json::json;
use std::fs;
use std::path::Path;
use std::sync::Arc;

mod common;

const INTENTS: &str = "version: 1
active_intents:
  - id: INT-001
    name: Harden login
    status: IN_PROGRESS
    owned_scope: [src/auth/**]
    constraints: [constant-time compare]
    acceptance_criteria: [lockout after five failures]
  - id: INT-002
    name: Billing
    status: BLOCKED
    owned_scope: [src/billing/**]
  - id: INT-003
    name: Everything
    status: IN_PROGRESS
    owned_scope: ['**']
";

#[derive(Debug)]
struct Fixed(Arc<IntentSet>);
impl IntentSource for Fixed {
    fn intents(&self) -> Arc<IntentSet> {
        self.0.clone()
    }
}

fn setup() -> (tempfile::TempDir, tempfile::TempDir, Engine) {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    fs::create_dir_all(ws.path().join("src/auth")).unwrap();
    fs::create_dir_all(ws.path().join(".orchestration")).unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.path().join("src/auth/out")).unwrap();
    let set = IntentSet::parse(Path::new("active_intents.yaml"), INTENTS).unwrap();
    let gate = Gatekeeper::new(Workspace::new(ws.path()).unwrap(), Arc::new(Fixed(Arc::new(set))));
    let engine = Engine::open_with(ws.path(), vec![Registration::native("gatekeeper", Priority::Critical, vec![EventKind::PreToolUse], Arc::new(gate))]).unwrap();
    (ws, outside, engine)
}

fn call(session: &str, tool: &str, input: serde_json::Value) -> Event {
    let mut e = Event::tool(EventKind::PreToolUse, tool, input);
    e.ids.session = Some(session.into());
    e
}

fn write(session: &str, path: &str) -> Event {
    let mut e = call(session, "write_to_file", json!({ "path": path, "content": "x" }));
    e.paths = vec![path.into()];
    e
}

fn reason(d: &Decision) -> String {
    match d {
        Decision::Deny(d) => d.reason.clone(),
        other => panic!("expected a deny, got {other:?}"),
    }
}

#[test]
fn a_write_before_the_handshake_is_refused_with_the_way_forward() {
    let (_ws, _o, engine) = setup();
    let e = engine.evaluate(write("S", "src/auth/login.js")).unwrap();
    let Decision::Deny(d) = &e.decision else { panic!() };
    assert_eq!(d.reason, "no intent is selected for this session: call `select_active_intent` first; available intents: INT-001 (Harden login), INT-003 (Everything)");
    assert!(d.remediation.as_deref().unwrap().starts_with("Call select_active_intent"));
}

#[test]
fn the_handshake_returns_the_intent_context_and_opens_the_scope() {
    let (_ws, _o, engine) = setup();
    let e = engine.evaluate(call("S", "select_active_intent", json!({ "intent_id": "INT-001" }))).unwrap();
    assert_eq!(e.decision, Decision::Allow);
    assert_eq!(
        e.additional_context,
        ["<intent_context>\nid: INT-001\nname: Harden login\nowned_scope:\n  - src/auth/**\nconstraints:\n  - constant-time compare\nacceptance_criteria:\n  - lockout after five failures\n</intent_context>"]
    );
    assert_eq!(engine.evaluate(write("S", "src/auth/login.js")).unwrap().decision, Decision::Allow);
    assert_eq!(engine.evaluate(write("S", "./src/auth/deep/new.js")).unwrap().decision, Decision::Allow);
    // Another session has not shaken hands.
    assert!(matches!(engine.evaluate(write("T", "src/auth/login.js")).unwrap().decision, Decision::Deny(_)));
}

#[test]
fn a_write_outside_the_scope_names_path_and_scope_and_suggests_an_expansion() {
    let (_ws, _o, engine) = setup();
    engine.evaluate(call("S", "select_active_intent", json!({ "intent_id": "INT-001" }))).unwrap();
    let e = engine.evaluate(write("S", "src/billing/invoice.js")).unwrap();
    let Decision::Deny(d) = &e.decision else { panic!() };
    assert_eq!(d.reason, "`src/billing/invoice.js` is outside the scope of intent `INT-001` (src/auth/**)");
    assert_eq!(d.suggested_tool.as_deref(), Some("scope_expansion_request"));
    // Through a symlink out of the workspace, through traversal: refused before any scope is judged.
    assert!(reason(&engine.evaluate(write("S", "src/auth/out/x.js")).unwrap().decision).contains("outside the workspace"));
    assert!(reason(&engine.evaluate(write("S", "src/auth/../../../etc/x")).unwrap().decision).contains("outside the workspace"));
}

#[test]
fn unknown_or_closed_intents_cannot_be_selected() {
    let (_ws, _o, engine) = setup();
    let e = engine.evaluate(call("S", "select_active_intent", json!({ "intent_id": "INT-404" }))).unwrap();
    assert_eq!(reason(&e.decision), "there is no intent `INT-404`; available intents: INT-001 (Harden login), INT-003 (Everything)");
    let e = engine.evaluate(call("S", "select_active_intent", json!({ "intent_id": "INT-002" }))).unwrap();
    assert!(reason(&e.decision).starts_with("intent `INT-002` is Blocked and takes no work"));
}

#[test]
fn governance_files_are_never_writable_whatever_the_scope() {
    let (_ws, _o, engine) = setup();
    engine.evaluate(call("S", "select_active_intent", json!({ "intent_id": "INT-003" }))).unwrap();
    assert_eq!(engine.evaluate(write("S", "README.md")).unwrap().decision, Decision::Allow, "INT-003 owns everything else");
    for path in [".orchestration/hooks.yaml", ".orchestration/active_intents.yaml", "./.orchestration/../.orchestration/x", ".claude/settings.json", ".github/hooks/guard.json"] {
        let e = engine.evaluate(write("S", path)).unwrap();
        assert!(reason(&e.decision).contains("is a governance file"), "{path}: {:?}", e.decision);
    }
}

#[test]
fn claude_codes_write_tools_are_judged_from_their_input() {
    let (_ws, _o, engine) = setup();
    engine.evaluate(call("S", "select_active_intent", json!({ "intent_id": "INT-001" }))).unwrap();
    for (tool, field) in [("Write", "file_path"), ("Edit", "file_path"), ("MultiEdit", "file_path"), ("NotebookEdit", "notebook_path")] {
        let ok = engine.evaluate(call("S", tool, json!({ field: "src/auth/a.js" }))).unwrap();
        assert_eq!(ok.decision, Decision::Allow, "{tool}");
        let out = engine.evaluate(call("S", tool, json!({ field: "src/other.js" }))).unwrap();
        assert!(matches!(out.decision, Decision::Deny(_)), "{tool}");
    }
    // Reading is not writing.
    assert_eq!(engine.evaluate(call("S", "Read", json!({ "file_path": "/etc/passwd" }))).unwrap().decision, Decision::Allow);
}

#[test]
fn no_generated_path_outside_the_scope_is_ever_allowed() {
    let (ws, _o, engine) = setup();
    engine.evaluate(call("S", "select_active_intent", json!({ "intent_id": "INT-001" }))).unwrap();
    let root = fs::canonicalize(ws.path()).unwrap();
    let scope = root.join("src/auth");
    let segments = ["src", "auth", "billing", "..", ".", "", "out", "x.js", ".orchestration", "SRC", "Auth"];
    let mut rng = common::Rng(0x2545f4914f6cdd1d);
    let mut next = || rng.next();
    let mut allowed = 0;
    for _ in 0..10_000 {
        let n = 1 + next() % 6;
        let path: Vec<&str> = (0..n).map(|_| segments[(next() % segments.len() as u64) as usize]).collect();
        // Half start inside the scope, so that both allowed and refused writes are exercised.
        let raw = if next() % 2 == 0 { format!("src/auth/{}", path.join("/")) } else { path.join("/") };
        if engine.evaluate(write("S", &raw)).unwrap().decision == Decision::Allow {
            allowed += 1;
            // Through the real file system, the write lands inside the scope.
            let real = common::real_location(&root.join(&raw));
            assert!(real.starts_with(&scope) && real != scope, "{raw:?} was allowed but lands at {}", real.display());
        }
    }
    assert!(allowed > 100, "the generator must also produce allowed writes ({allowed})");
}
