//! The sessions working in a workspace (`Engine::sessions`) and a person's revocation of a lease
//! (`Engine::revoke_lease`), against real engines on one workspace: its state database and its
//! ledger, shared as processes share them.

use chokepoint_core::ledger::Record;
use chokepoint_core::{Decision, Engine, Event, EventKind};
use serde_json::json;
use std::fs;
use std::time::Duration;

const INTENTS: &str = "version: 1
active_intents:
  - id: INT-001
    name: Harden login
    status: IN_PROGRESS
    owned_scope: [src/auth/**]
  - id: INT-002
    name: Docs
    status: IN_PROGRESS
    owned_scope: [docs/**]
";

fn governed() -> (tempfile::TempDir, Engine) {
    let ws = tempfile::tempdir().unwrap();
    fs::create_dir_all(ws.path().join("src/auth")).unwrap();
    fs::create_dir_all(ws.path().join(".orchestration")).unwrap();
    fs::write(ws.path().join(".orchestration/active_intents.yaml"), INTENTS).unwrap();
    let engine = Engine::open(ws.path()).unwrap();
    assert!(engine.info().diagnostics.is_empty());
    (ws, engine)
}

/// A tool call of `session`, run by `agent`, as the engine sees it from that agent's hook.
fn call(session: &str, agent: &str, kind: EventKind, tool: &str, input: serde_json::Value) -> Event {
    let mut e = Event::tool(kind, tool, input);
    e.ids.session = Some(session.into());
    e.ids.agent = Some(agent.into());
    e
}

fn write(session: &str, agent: &str, path: &str) -> Event {
    let mut e = call(session, agent, EventKind::PreToolUse, "write_to_file", json!({ "path": path, "content": "x" }));
    e.paths = vec![path.into()];
    e
}

fn select(engine: &Engine, session: &str, agent: &str, intent: &str) -> Decision {
    let event = call(session, agent, EventKind::PreToolUse, "select_active_intent", json!({ "intent_id": intent }));
    block_on(engine.evaluate_async(event, None)).decision
}

fn judge(engine: &Engine, event: Event) -> Decision {
    block_on(engine.evaluate_async(event, None)).decision
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(future)
}

fn ledger(ws: &tempfile::TempDir) -> Vec<Record> {
    let text = chokepoint_core::ledger::chains::all_lines(&chokepoint_core::Sidecar::new(ws.path())).join("\n");
    text.lines().map(|l| Record::from_line(l).unwrap()).collect()
}

#[test]
fn a_revoked_sessions_next_write_is_denied_with_the_revocation_in_another_process_too() {
    let (ws, engine) = governed();
    assert_eq!(select(&engine, "claude:S1", "claude", "INT-001"), Decision::Allow);
    assert_eq!(judge(&engine, write("claude:S1", "claude", "src/auth/a.js")), Decision::Allow);

    // A second engine stands for the person's process (the CLI, or VS Code while the hook runs
    // alone): the revocation lives in state.db, where the first engine finds it.
    let person = Engine::open(ws.path()).unwrap();
    let revocation = person.revoke_lease("claude:S1", "alice (test)", Some("wrong intent for this bug")).unwrap().unwrap();
    assert_eq!((revocation.intent.as_str(), revocation.agent.as_deref()), ("INT-001", Some("claude")));
    assert!(person.gatekeeper().holders().unwrap().is_empty(), "the lease is released");

    // The first engine cached the selection for at most RECHECK: past that, the write is denied
    // with the revocation, not with "select an intent first".
    std::thread::sleep(chokepoint_core::scope::gatekeeper::RECHECK + Duration::from_millis(50));
    let Decision::Deny(denial) = judge(&engine, write("claude:S1", "claude", "src/auth/a.js")) else { panic!("a revoked lease writes") };
    assert!(
        denial.reason.starts_with("the lease of session `claude:S1` on intent `INT-001` was revoked by a person (alice (test)) at "),
        "{}",
        denial.reason
    );
    assert!(denial.reason.contains(": wrong intent for this bug;"), "{}", denial.reason);
    assert!(denial.reason.ends_with("intent `INT-001` is free now"), "{}", denial.reason);
    let remediation = denial.remediation.unwrap();
    assert!(remediation.contains("ask the person") && remediation.contains("select_active_intent(\"INT-001\")"), "{remediation}");
    assert_eq!(denial.suggested_tool.as_deref(), Some("select_active_intent"));

    // Recorded in the ledger: who, the intent, the reason, as the person's record of the session.
    let records = ledger(&ws);
    let revoked = records.iter().find(|r| r.decision.as_ref().is_some_and(|d| d.decision == "revoked")).expect("a revocation record");
    assert_eq!(revoked.session.as_deref(), Some("claude:S1"));
    assert_eq!(revoked.intent.as_deref(), Some("INT-001"));
    assert_eq!(revoked.data.as_ref().unwrap()["revoked"]["by"], "alice (test)");
    assert_eq!(revoked.data.as_ref().unwrap()["revoked"]["reason"], "wrong intent for this bug");

    // The session selects again (the intent is free): the revocation is answered and forgotten.
    assert_eq!(select(&engine, "claude:S1", "claude", "INT-001"), Decision::Allow);
    assert_eq!(judge(&engine, write("claude:S1", "claude", "src/auth/a.js")), Decision::Allow);
    assert_eq!(person.gatekeeper().revocations().unwrap(), Vec::new());
}

#[test]
fn a_revocation_in_the_engine_that_judges_takes_effect_at_once_and_names_a_new_holder() {
    let (_ws, engine) = governed();
    assert_eq!(select(&engine, "codex:C1", "codex", "INT-001"), Decision::Allow);
    assert_eq!(judge(&engine, write("codex:C1", "codex", "src/auth/a.js")), Decision::Allow);
    engine.revoke_lease("codex:C1", "bob (VS Code)", None).unwrap().unwrap();
    // No RECHECK to wait for: the engine that revoked forgot the session's selection.
    let Decision::Deny(denial) = judge(&engine, write("codex:C1", "codex", "src/auth/a.js")) else { panic!("a revoked lease writes") };
    assert!(denial.reason.contains("was revoked by a person (bob (VS Code))"), "{}", denial.reason);
    // Someone else took the intent meanwhile: the session is told so.
    assert_eq!(select(&engine, "gemini:G1", "gemini", "INT-001"), Decision::Allow);
    let Decision::Deny(denial) = judge(&engine, write("codex:C1", "codex", "src/auth/a.js")) else { panic!() };
    assert!(denial.reason.ends_with("intent `INT-001` is held by session `gemini:G1` now"), "{}", denial.reason);
    // A session that holds nothing has nothing to revoke, and nothing is recorded.
    assert_eq!(engine.revoke_lease("codex:C1", "bob (VS Code)", None).unwrap(), None);
    assert_eq!(engine.revoke_lease("nobody", "bob (VS Code)", None).unwrap(), None);
}

#[test]
fn the_sessions_view_lists_every_agent_with_its_lease_actions_and_denials() {
    let (ws, engine) = governed();
    // Claude Code, with a sub-agent, holding INT-001: a write allowed, its result, one denied.
    assert_eq!(select(&engine, "claude:S1", "claude", "INT-001"), Decision::Allow);
    assert_eq!(judge(&engine, write("claude:S1", "claude", "src/auth/a.js")), Decision::Allow);
    fs::write(ws.path().join("src/auth/a.js"), "x\n").unwrap();
    let mut done = write("claude:S1", "claude", "src/auth/a.js");
    done.kind = EventKind::PostToolUse;
    judge(&engine, done);
    let mut sub = write("claude:S1", "claude", "docs/readme.md");
    sub.ids.subagent = Some("general-purpose:a1".into());
    assert!(matches!(judge(&engine, sub), Decision::Deny(_)));
    // Then its turn ends and its completion gate refuses (the tests failed): a denial, but not of a
    // tool call, and a lifecycle record, which is no action of the session.
    fs::write(
        ws.path().join(".orchestration/hooks.yaml"),
        if cfg!(windows) {
            "version: 1\nhooks:\n  BeforeSubmit:\n    - name: tests\n      command: [cmd, /d, /s, /c, 'echo failing>&2& exit 2']\n"
        } else {
            "version: 1\nhooks:\n  BeforeSubmit:\n    - name: tests\n      command: [sh, -c, 'echo failing >&2; exit 2']\n"
        },
    )
    .unwrap();
    assert!(engine.reload().is_empty());
    let mut submit = Event::new(EventKind::BeforeSubmit);
    submit.ids.session = Some("claude:S1".into());
    submit.ids.agent = Some("claude".into());
    assert!(matches!(judge(&engine, submit), Decision::Deny(_)));
    let mut turn = Event::new(EventKind::TurnEnd);
    turn.ids.session = Some("claude:S1".into());
    turn.ids.agent = Some("claude".into());
    judge(&engine, turn);
    // Codex: one write, denied (no intent); Gemini and VS Code's agent: a read each.
    assert!(matches!(judge(&engine, write("codex:C1", "codex", "src/auth/b.js")), Decision::Deny(_)));
    judge(&engine, call("gemini:G1", "gemini", EventKind::PreToolUse, "read_file", json!({ "path": "README.md" })));
    judge(&engine, call("vscode:V1", "vscode", EventKind::PreToolUse, "read_file", json!({ "filePath": "/x" })));
    // Our own agent: its session starts with its model.
    let mut start = Event::new(EventKind::SessionStart);
    start.ids.session = Some("0b1c-our-session".into());
    start.ids.agent = Some("chokepoint".into());
    start.ids.model = Some("scripted:demo".into());
    judge(&engine, start);
    // A session that selected from a terminal and has not acted: listed for its lease.
    let other = Engine::open(ws.path()).unwrap();
    assert_eq!(select(&other, "copilot:P1", "copilot", "INT-002"), Decision::Allow);
    engine.tracer().flush().unwrap();

    let sessions = engine.sessions().unwrap();
    let by = |id: &str| sessions.iter().find(|s| s.session == id).unwrap_or_else(|| panic!("{id} is not listed: {sessions:#?}"));
    let labels: Vec<(&str, &str)> = sessions.iter().map(|s| (s.session.as_str(), s.label.as_str())).collect();
    for expected in [
        ("claude:S1", "Claude Code"),
        ("codex:C1", "Codex CLI"),
        ("gemini:G1", "Gemini CLI"),
        ("vscode:V1", "VS Code's agent"),
        ("0b1c-our-session", "Chokepoint agent"),
        ("copilot:P1", "Copilot CLI"),
    ] {
        assert!(labels.contains(&expected), "{expected:?} in {labels:?}");
    }

    let claude = by("claude:S1");
    assert_eq!(claude.agent.as_deref(), Some("claude"));
    assert_eq!(claude.lease.as_ref().map(|l| l.intent.as_str()), Some("INT-001"));
    assert!(claude.lease.as_ref().unwrap().expires_at_ms > chokepoint_core::base::clock::now_ms());
    assert_eq!(claude.subagents, ["general-purpose:a1"]);
    // The selection and the allowed write are allowed calls; the sub-agent's write is the denial,
    // and the last denial shown beside that count is that one, not the newer completion gate's.
    assert_eq!((claude.allowed, claude.denied), (2, 1));
    let denial = claude.last_denial.as_ref().unwrap();
    assert_eq!((denial.event.as_deref(), denial.tool.as_deref()), (Some("PreToolUse"), Some("write_to_file")), "{denial:?}");
    assert_eq!(denial.subagent.as_deref(), Some("general-purpose:a1"));
    assert!(denial.reason.as_deref().unwrap().contains("`docs/readme.md` is outside the scope of intent `INT-001`"), "{denial:?}");
    // Newest first: the completion gate's denial, the denied write, the write's result (its file),
    // the write, the selection; the turn's end is left out.
    let actions: Vec<(Option<&str>, Option<&str>, Option<&str>)> =
        claude.actions.iter().map(|a| (a.event.as_deref(), a.decision.as_deref(), a.summary.as_deref())).collect();
    assert_eq!(
        actions,
        [
            (Some("BeforeSubmit"), Some("deny"), None),
            (Some("PreToolUse"), Some("deny"), None),
            (Some("PostToolUse"), Some("allow"), Some("src/auth/a.js")),
            (Some("PreToolUse"), Some("allow"), None),
            (Some("PreToolUse"), Some("allow"), None),
        ]
    );
    assert_eq!(claude.actions[4].tool.as_deref(), Some("select_active_intent"));

    let codex = by("codex:C1");
    assert_eq!((codex.allowed, codex.denied, codex.lease.is_none()), (0, 1, true));
    assert!(codex.last_denial.as_ref().unwrap().reason.as_deref().unwrap().contains("no intent is selected"));
    assert_eq!(by("0b1c-our-session").model.as_deref(), Some("scripted:demo"));
    let copilot = by("copilot:P1");
    assert_eq!((copilot.records, copilot.lease.as_ref().map(|l| l.intent.as_str())), (1, Some("INT-002")));

    // A revocation shows on the session, and as its newest action.
    engine.revoke_lease("claude:S1", "alice (test)", Some("stop")).unwrap().unwrap();
    let sessions = engine.sessions().unwrap();
    let claude = sessions.iter().find(|s| s.session == "claude:S1").unwrap();
    assert!(claude.lease.is_none());
    assert_eq!(claude.revoked.as_ref().map(|r| r.by.as_str()), Some("alice (test)"));
    assert_eq!(claude.actions[0].decision.as_deref(), Some("revoked"));
    assert_eq!(claude.actions[0].summary.as_deref(), Some("lease on INT-001 revoked by alice (test)"));
}

#[test]
fn an_ungoverned_workspace_has_no_sessions() {
    let ws = tempfile::tempdir().unwrap();
    let engine = Engine::open(ws.path()).unwrap();
    assert!(engine.sessions().unwrap().is_empty());
    assert!(!ws.path().join(".orchestration").exists(), "listing creates nothing");
}

/// `chokepoint doctor` tries each agent's hooks with a probe (`doctor-<pid>`): its records stay in
/// the trace, where they show the hooks ran, but no person watches it as a session of the workspace.
#[test]
fn doctors_probes_are_not_sessions() {
    let (_ws, engine) = governed();
    let probe = format!("vscode:{}", chokepoint_core::engine::sessions::probe_session(4242));
    assert!(matches!(judge(&engine, write(&probe, "vscode", "../outside.txt")), Decision::Deny(_)));
    assert_eq!(select(&engine, "vscode:doctor-chat", "vscode", "INT-001"), Decision::Allow);
    let listed: Vec<String> = engine.sessions().unwrap().into_iter().map(|s| s.session).collect();
    assert_eq!(listed, ["vscode:doctor-chat"], "a session merely named like one is listed");
    let recorded = engine.tracer().query(&chokepoint_core::ledger::index::Filter { session: Some(probe), ..Default::default() }).unwrap();
    assert_eq!(recorded.len(), 1, "the probe's record is in the trace");
}
