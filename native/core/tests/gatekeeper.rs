//! The intent gatekeeper as the engine runs it: the handshake, owned scopes, governance files,
//! canonical paths, and a property that no write outside the scope is ever allowed.

use chokepoint_core::scope::expansion::Expansion;
use chokepoint_core::{Decision, Engine, Event, EventKind};
use serde_json::json;
use std::fs;

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

fn setup() -> (tempfile::TempDir, tempfile::TempDir, Engine) {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    fs::create_dir_all(ws.path().join("src/auth")).unwrap();
    fs::create_dir_all(ws.path().join(".orchestration")).unwrap();
    fs::write(ws.path().join(".orchestration/active_intents.yaml"), INTENTS).unwrap();
    common::symlink(outside.path(), ws.path().join("src/auth/out")).unwrap();
    // The engine registers the gatekeeper itself, with the intents of its active_intents.yaml.
    let engine = Engine::open(ws.path()).unwrap();
    assert!(engine.info().diagnostics.is_empty());
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
    assert_eq!(
        d.reason,
        "no intent is selected for this session: call `select_active_intent` first; available intents: INT-001 (Harden login), INT-003 (Everything)"
    );
    assert!(d.remediation.as_deref().unwrap().starts_with("Call select_active_intent"));
}

#[test]
fn the_handshake_returns_the_intent_context_and_opens_the_scope() {
    let (_ws, _o, engine) = setup();
    let e = engine.evaluate(call("S", "select_active_intent", json!({ "intent_id": "INT-001" }))).unwrap();
    assert_eq!(e.decision, Decision::Allow);
    assert_eq!(
        e.additional_context,
        [
            "<intent_context>\nid: INT-001\nname: Harden login\nowned_scope:\n  - src/auth/**\nconstraints:\n  - constant-time compare\nacceptance_criteria:\n  - lockout after five failures\n</intent_context>"
        ]
    );
    assert_eq!(engine.evaluate(write("S", "src/auth/login.js")).unwrap().decision, Decision::Allow);
    assert_eq!(engine.evaluate(write("S", "./src/auth/deep/new.js")).unwrap().decision, Decision::Allow);
    // Another session has not shaken hands.
    assert!(matches!(engine.evaluate(write("T", "src/auth/login.js")).unwrap().decision, Decision::Deny(_)));
}

#[test]
#[cfg_attr(
    wine,
    ignore = "Wine makes a symbolic link a Unix one, which Windows' calls neither show as a link (no reparse point) nor resolve, so nothing under Wine can tell a path through it left the workspace; a real Windows does"
)]
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
    assert!(reason(&e.decision).starts_with("intent `INT-002` is BLOCKED and takes no work"));
}

#[test]
fn governance_files_are_never_writable_whatever_the_scope() {
    let (_ws, _o, engine) = setup();
    engine.evaluate(call("S", "select_active_intent", json!({ "intent_id": "INT-003" }))).unwrap();
    assert_eq!(engine.evaluate(write("S", "README.md")).unwrap().decision, Decision::Allow, "INT-003 owns everything else");
    for path in [
        ".orchestration/hooks.yaml",
        ".orchestration/active_intents.yaml",
        "./.orchestration/../.orchestration/x",
        ".claude/settings.json",
        ".github/hooks/guard.json",
    ] {
        let e = engine.evaluate(write("S", path)).unwrap();
        assert!(reason(&e.decision).contains("is a governance file"), "{path}: {:?}", e.decision);
    }
}

/// Issue 27, item 3: every file that configures an agent or runs code at its start is governed under
/// every scope, and the refusal says who reads it and why no agent writes it.
#[test]
fn agents_configuration_is_governed_under_the_widest_scope_and_the_refusal_says_who_reads_it() {
    let (_ws, _o, engine) = setup();
    engine.evaluate(call("S", "select_active_intent", json!({ "intent_id": "INT-003" }))).unwrap();
    for (path, reader) in [
        (".mcp.json", "Claude Code and Copilot CLI"),
        (".codex/config.toml", "Codex"),
        (".vscode/settings.json", "VS Code's agent"),
        (".vscode/mcp.json", "VS Code's agent"),
        (".cursor/mcp.json", "Cursor"),
        (".gemini/extensions/x/gemini-extension.json", "Gemini CLI"),
        (".claude/agents/reviewer.md", "Claude Code"),
        (".orchestration/agent_trace.jsonl", "Chokepoint"),
        (".orchestration/state.db-shm", "Chokepoint"),
    ] {
        let e = engine.evaluate(write("S", path)).unwrap();
        let Decision::Deny(d) = &e.decision else { panic!("{path}: {:?}", e.decision) };
        assert!(d.reason.starts_with(&format!("`{path}` is a governance file, read by {reader}: it ")), "{path}: {}", d.reason);
        assert!(d.reason.contains("no agent writes it under any scope"), "{}", d.reason);
        assert!(d.remediation.as_deref().is_some_and(|r| r.contains("a person")), "{d:?}");
    }
    // A scope expansion cannot reach them either.
    let e = engine
        .evaluate(call(
            "S",
            "scope_expansion_request",
            json!({ "intent_id": "INT-003", "paths": [".vscode/*"], "justification": "settings" }),
        ))
        .unwrap();
    assert!(reason(&e.decision).contains("covers governance files"), "{:?}", e.decision);
}

/// Containment's judge refuses the same files, whatever the scope (containment calls it for every
/// change a shell command made).
#[test]
fn the_shell_judge_refuses_agents_configuration_under_the_widest_scope() {
    let judge = chokepoint_core::containment::contain::scope_judge(&["**".to_owned()]);
    assert!(judge("src/auth/login.js"));
    for path in [
        ".mcp.json",
        ".codex/config.toml",
        ".vscode/settings.json",
        ".vscode/mcp.json",
        ".cursor/mcp.json",
        ".gemini/settings.json",
        ".claude/agents/reviewer.md",
        ".orchestration/agent_trace.jsonl",
        ".orchestration/state.db",
        ".orchestration/state.db-wal",
    ] {
        assert!(!judge(path), "{path}");
        assert!(chokepoint_core::model::governance::is_governance_file(path), "{path}");
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

fn select(engine: &Engine, session: &str, intent: &str) -> Decision {
    engine.evaluate(call(session, "select_active_intent", json!({ "intent_id": intent }))).unwrap().decision
}

#[test]
fn an_intent_has_one_holder_across_engines_and_is_free_again_when_the_task_ends() {
    let (ws, _o, engine) = setup();
    // A second engine on the same workspace stands for another process: the lease table is shared.
    let other = Engine::open(ws.path()).unwrap();
    assert_eq!(select(&engine, "A", "INT-001"), Decision::Allow);
    let refused = select(&other, "B", "INT-001");
    let Decision::Deny(d) = &refused else { panic!("{refused:?}") };
    assert!(d.reason.contains("INT-001") && d.reason.contains("`A`"), "names the holder: {}", d.reason);
    assert!(d.remediation.as_deref().unwrap().contains("INT-003"), "points at another intent: {:?}", d.remediation);
    // B may take another intent meanwhile, and the holder's writes still pass.
    assert_eq!(select(&other, "B", "INT-003"), Decision::Allow);
    assert_eq!(engine.evaluate(write("A", "src/auth/a.js")).unwrap().decision, Decision::Allow);
    // The holder's task ends: the lease goes, and so does A's right to write.
    let mut done = Event::new(EventKind::TaskComplete);
    done.ids.session = Some("A".into());
    engine.evaluate(done).unwrap();
    assert!(reason(&engine.evaluate(write("A", "src/auth/a.js")).unwrap().decision).contains("no intent is selected"));
    assert_eq!(select(&other, "C", "INT-001"), Decision::Allow);
}

#[test]
fn a_release_seen_from_another_process_is_honoured_within_the_recheck_time() {
    let (ws, _o, engine) = setup();
    assert_eq!(select(&engine, "A", "INT-001"), Decision::Allow);
    assert_eq!(engine.evaluate(write("A", "src/auth/a.js")).unwrap().decision, Decision::Allow);
    let other = Engine::open(ws.path()).unwrap();
    assert_eq!(other.gatekeeper().release("A").unwrap(), 1);
    std::thread::sleep(chokepoint_core::scope::gatekeeper::RECHECK + std::time::Duration::from_millis(50));
    assert!(matches!(engine.evaluate(write("A", "src/auth/a.js")).unwrap().decision, Decision::Deny(_)));
}

#[test]
fn a_scope_expansion_is_asked_then_applies_to_the_session_once_approved() {
    let (ws, _o, engine) = setup();
    select(&engine, "S", "INT-001");
    let request = |paths: serde_json::Value, why: &str| {
        engine
            .evaluate(call("S", "scope_expansion_request", json!({ "intent_id": "INT-001", "paths": paths, "justification": why })))
            .unwrap()
            .decision
    };
    let asked = request(json!(["lib/auth/**"]), "the helper moved");
    assert_eq!(asked.ask_reasons(), ["gatekeeper: scope expansion for intent `INT-001`: lib/auth/** (justification: the helper moved)"]);
    // Refused outright: no justification, governance files, outside the workspace, another intent.
    assert!(reason(&request(json!(["lib/**"]), " ")).contains("needs a justification"));
    assert!(reason(&request(json!([".orchestration/*"]), "x")).contains("governance"));
    assert!(reason(&request(json!(["**"]), "x")).contains("governance"));
    assert!(reason(&request(json!(["../elsewhere/**"]), "x")).contains("not a path inside the workspace"));
    let other = engine
        .evaluate(call("S", "scope_expansion_request", json!({ "intent_id": "INT-003", "paths": ["x"], "justification": "y" })))
        .unwrap();
    assert!(reason(&other.decision).contains("holds `INT-001`"));

    assert!(matches!(engine.evaluate(write("S", "lib/auth/token.js")).unwrap().decision, Decision::Deny(_)));
    let approval = Expansion {
        session: "S".into(),
        intent: "INT-001".into(),
        paths: vec!["lib/auth/**".into()],
        justification: "the helper moved".into(),
        approved_by: "human".into(),
        approved_at_ms: 1,
    };
    engine.gatekeeper().approve_expansion(&approval, false).unwrap();
    assert_eq!(engine.evaluate(write("S", "lib/auth/token.js")).unwrap().decision, Decision::Allow);
    // Another process sees the approval; another session does not get it.
    let other = Engine::open(ws.path()).unwrap();
    assert_eq!(other.evaluate(write("S", "lib/auth/token.js")).unwrap().decision, Decision::Allow);
    assert_eq!(other.gatekeeper().shell_scope("S").unwrap().globs, ["src/auth/**", "lib/auth/**"]);
    assert!(other.gatekeeper().shell_scope("S").unwrap().allows("lib/auth/x"));
    assert!(!other.gatekeeper().shell_scope("T").unwrap().allows("lib/auth/x"));
    // Saved for good: the YAML now lists it, and the next load gives it to every session.
    engine.gatekeeper().approve_expansion(&approval, true).unwrap();
    let text = fs::read_to_string(ws.path().join(".orchestration/active_intents.yaml")).unwrap();
    assert!(text.contains("owned_scope: [\"src/auth/**\", \"lib/auth/**\"]"), "{text}");
    engine.reload();
    select(&engine, "T", "INT-003");
    engine
        .evaluate(Event {
            ids: chokepoint_core::EventIds { session: Some("S".into()), ..Default::default() },
            ..Event::new(EventKind::SessionEnd)
        })
        .unwrap();
    select(&engine, "U", "INT-001");
    assert_eq!(engine.evaluate(write("U", "lib/auth/token.js")).unwrap().decision, Decision::Allow);
}

#[test]
fn write_tools_come_from_configuration_too() {
    let (ws, _o, engine) = setup();
    fs::write(ws.path().join(".orchestration/hooks.yaml"), "version: 1\ngatekeeper:\n  write_tools:\n    save_note: [target, also]\n")
        .unwrap();
    engine.reload();
    select(&engine, "S", "INT-001");
    assert_eq!(engine.evaluate(call("S", "save_note", json!({ "target": "src/auth/n.md" }))).unwrap().decision, Decision::Allow);
    assert!(matches!(
        engine.evaluate(call("S", "save_note", json!({ "target": "src/auth/n.md", "also": "notes.md" }))).unwrap().decision,
        Decision::Deny(_)
    ));
    // The built-in table is still there.
    assert!(matches!(engine.evaluate(call("S", "Write", json!({ "file_path": "x.md" }))).unwrap().decision, Decision::Deny(_)));
}

#[test]
fn without_intents_the_gate_still_guards_the_governance_files() {
    let ws = tempfile::tempdir().unwrap();
    let engine = Engine::open(ws.path()).unwrap();
    assert_eq!(engine.evaluate(write("S", "anything.js")).unwrap().decision, Decision::Allow);
    assert!(reason(&engine.evaluate(write("S", ".orchestration/hooks.yaml")).unwrap().decision).contains("governance"));
    assert!(reason(&engine.evaluate(write("S", "../x")).unwrap().decision).contains("outside the workspace"));
    assert!(!ws.path().join(".orchestration/state.db").exists(), "judging writes creates no database");
}

#[test]
fn an_invalid_intents_file_that_was_never_good_denies_every_write() {
    let (ws, _o, _) = setup();
    fs::write(ws.path().join(".orchestration/active_intents.yaml"), "version: 1\nactive_intents: [oops\n").unwrap();
    let engine = Engine::open(ws.path()).unwrap();
    assert!(!engine.info().diagnostics.is_empty());
    assert!(reason(&engine.evaluate(write("S", "src/auth/a.js")).unwrap().decision).contains("no intent is selected"));
    assert!(matches!(select(&engine, "S", "INT-001"), Decision::Deny(_)));
}

#[test]
fn a_locked_intent_points_the_second_agent_at_free_ones_only() {
    let (_ws, _o, engine) = setup();
    assert_eq!(select(&engine, "A", "INT-001"), Decision::Allow);
    let Decision::Deny(d) = select(&engine, "B", "INT-001") else { panic!() };
    assert_eq!(
        d.remediation.as_deref(),
        Some("Select another intent (available intents: INT-003 (Everything)) or wait for this one to be released.")
    );
}

/// Issue 27, item 9: another process truncates `state.db-shm` under the engine's mapping of it. The
/// engine's next use of the database is a deny with the reason, not a SIGBUS that ends the process
/// (the extension's engine lives as long as the window); the use after that works again.
#[test]
#[cfg_attr(
    windows,
    ignore = "SIGBUS from a shared-memory file shortened under its mapping is Unix's; Windows refuses to shorten a file another process maps"
)]
fn a_shared_memory_file_truncated_by_another_process_is_a_deny_with_a_reason_then_recovers() {
    let (ws, _o, engine) = setup();
    engine.evaluate(call("S", "select_active_intent", json!({ "intent_id": "INT-001" }))).unwrap();
    // The ledger's head raised, so the next use of the database is the gatekeeper's.
    engine.tracer().flush().unwrap();
    let shm = ws.path().join(".orchestration/state.db-shm");
    assert!(shm.exists());
    let status = std::process::Command::new("truncate").args(["-s", "0"]).arg(&shm).status().unwrap();
    assert!(status.success());
    // Past the selection's cache, so the gatekeeper asks the lease table.
    std::thread::sleep(chokepoint_core::scope::gatekeeper::RECHECK + std::time::Duration::from_millis(100));
    let e = engine.evaluate(write("S", "src/auth/login.js")).unwrap();
    assert!(reason(&e.decision).contains("state.db-shm was shortened"), "{:?}", e.decision);
    // A second later, a new connection reads the lease again.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let e = engine.evaluate(write("S", "src/auth/login.js")).unwrap();
    assert_eq!(e.decision, Decision::Allow, "a new connection reads the lease again");
}

/// Issue 30: another agent's hook event, answered as `chokepoint hook` answers it (the same input
/// reader and the same answer), for the events whose effect is on the lease table.
fn hook(engine: &std::sync::Arc<Engine>, agent: chokepoint_core::model::external_events::Agent, input: serde_json::Value) {
    let call = chokepoint_core::agents::input::parse(agent, input.to_string().as_bytes(), None).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(chokepoint_core::agents::hook::answer(engine, &call, &Default::default()));
}

/// Claude Code's `Stop` of session `id`: the end of a turn, which nothing refuses here.
fn stop(engine: &std::sync::Arc<Engine>, id: &str) {
    hook(
        engine,
        chokepoint_core::model::external_events::Agent::ClaudeCode,
        json!({ "hook_event_name": "Stop", "session_id": id, "stop_hook_active": false }),
    );
}

fn writes(engine: &Engine, session: &str) -> Decision {
    let mut e = write(session, "src/auth/a.js");
    e.ids.agent = Some("claude".into());
    engine.evaluate(e).unwrap().decision
}

/// Issue 30: a chat's turn that ends lets the next chat take its intent at once; the first chat's
/// next write is told it lost the intent, to whom, and what to do.
#[test]
fn a_turn_that_ends_yields_the_intent_to_the_next_session_and_the_first_is_told_it_lost_it() {
    let (ws, _o, engine) = setup();
    let engine = std::sync::Arc::new(engine);
    let other = Engine::open(ws.path()).unwrap();
    assert_eq!(select(&engine, "claude:A", "INT-001"), Decision::Allow);
    assert_eq!(writes(&engine, "claude:A"), Decision::Allow);
    assert!(reason(&select(&other, "claude:B", "INT-001")).contains("locked by session `claude:A`"), "A's turn still runs");

    stop(&engine, "A");
    // In another process, at once: no lease time to wait out.
    assert_eq!(select(&other, "claude:B", "INT-001"), Decision::Allow);
    assert_eq!(writes(&other, "claude:B"), Decision::Allow);

    let Decision::Deny(lost) = writes(&engine, "claude:A") else { panic!("A's next turn may not write under B's lease") };
    assert!(lost.reason.starts_with("session `claude:A` lost its lock on intent `INT-001`"), "{}", lost.reason);
    assert!(lost.reason.contains("its turn had ended") && lost.reason.contains("session `claude:B`"), "{}", lost.reason);
    assert!(lost.remediation.as_deref().unwrap().contains("INT-003"), "points at another intent: {:?}", lost.remediation);
    assert_eq!(lost.suggested_tool.as_deref(), Some("select_active_intent"));
    // Selecting another intent answers it; the write is judged under that one.
    assert_eq!(select(&engine, "claude:A", "INT-003"), Decision::Allow);
    assert_eq!(writes(&engine, "claude:A"), Decision::Allow);
    assert_eq!(writes(&other, "claude:B"), Decision::Allow, "B keeps INT-001");
}

/// Issue 30: a yielded lease nobody took is the session's own: its next call goes on under it
/// without selecting again, and the intent is held again. A sub-agent's stop and a completion the
/// gate refused are not the end of the session's turn: nothing yields.
#[test]
fn a_yielded_lease_nobody_took_goes_on_at_the_sessions_next_call_and_only_a_finished_turn_yields() {
    let (ws, _o, engine) = setup();
    fs::write(
        ws.path().join(".orchestration/hooks.yaml"),
        if cfg!(windows) {
            "version: 1\nhooks:\n  BeforeSubmit:\n    - name: tests\n      command: [cmd, /d, /s, /c, 'if exist done (exit 0) else (echo tests fail>&2& exit 2)']\n"
        } else {
            "version: 1\nhooks:\n  BeforeSubmit:\n    - name: tests\n      command: [sh, -c, 'test -f done || { echo tests fail >&2; exit 2; }']\n"
        },
    )
    .unwrap();
    assert!(engine.reload().is_empty());
    let engine = std::sync::Arc::new(engine);
    let other = Engine::open(ws.path()).unwrap();
    assert_eq!(select(&engine, "claude:A", "INT-001"), Decision::Allow);

    // The completion is refused: the agent goes on with its turn, and keeps its intent.
    stop(&engine, "A");
    assert!(reason(&select(&other, "claude:B", "INT-001")).contains("locked by session `claude:A`"));
    // A sub-agent's stop ends the sub-agent's task, not the session's turn.
    fs::write(ws.path().join("done"), "").unwrap();
    let subagent_stop = json!({ "hook_event_name": "SubagentStop", "session_id": "A", "agent_id": "a1", "agent_type": "general-purpose", "stop_hook_active": false });
    hook(&engine, chokepoint_core::model::external_events::Agent::ClaudeCode, subagent_stop);
    assert!(reason(&select(&other, "claude:B", "INT-001")).contains("locked by session `claude:A`"));

    // The turn ends; nobody takes the intent; the next turn writes without selecting again.
    stop(&engine, "A");
    let sessions = engine.sessions().unwrap();
    let a = sessions.iter().find(|s| s.session == "claude:A").unwrap();
    assert!(a.lease_idle && a.lease.as_ref().is_some_and(|l| l.intent == "INT-001"), "shown as idle: {a:?}");
    assert_eq!(writes(&engine, "claude:A"), Decision::Allow);
    assert!(reason(&select(&other, "claude:B", "INT-001")).contains("locked by session `claude:A`"), "renewed: held again");
    let a = engine.sessions().unwrap().into_iter().find(|s| s.session == "claude:A").unwrap();
    assert!(!a.lease_idle, "held again: {a:?}");
    // The session's end still releases.
    hook(
        &engine,
        chokepoint_core::model::external_events::Agent::ClaudeCode,
        json!({ "hook_event_name": "SessionEnd", "session_id": "A", "reason": "exit" }),
    );
    assert_eq!(select(&other, "claude:B", "INT-001"), Decision::Allow);
}

/// Issue 30: when the session that took the intent over has ended its own turn too, the loser's
/// refusal says the intent is free to take back, rather than to wait for a release.
#[test]
fn a_lost_intent_whose_taker_is_idle_too_is_said_to_be_free_to_take_back() {
    let (ws, _o, engine) = setup();
    let engine = std::sync::Arc::new(engine);
    let other = std::sync::Arc::new(Engine::open(ws.path()).unwrap());
    assert_eq!(select(&engine, "claude:A", "INT-001"), Decision::Allow);
    stop(&engine, "A");
    assert_eq!(select(&other, "claude:B", "INT-001"), Decision::Allow);
    stop(&other, "B");
    let Decision::Deny(lost) = writes(&engine, "claude:A") else { panic!("A lost INT-001") };
    assert!(lost.reason.starts_with("session `claude:A` lost its lock on intent `INT-001`"), "{}", lost.reason);
    assert!(lost.reason.ends_with("that session's turn has ended since, so the intent is free to take now"), "{}", lost.reason);
    assert!(lost.remediation.as_deref().unwrap().starts_with("Call select_active_intent(\"INT-001\") again to take it back"), "{lost:?}");
    assert_eq!(select(&engine, "claude:A", "INT-001"), Decision::Allow, "taken back");
    let Decision::Deny(b) = writes(&other, "claude:B") else { panic!("B lost it in turn") };
    assert!(b.reason.contains("session `claude:B` lost its lock") && b.reason.contains("session `claude:A`"), "{}", b.reason);
}
