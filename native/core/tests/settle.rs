//! Asks settled in the core: the Pending an ask opens (its kind and subject built from the event the
//! chain judged) and what one `settle` does with its decision: the approval durable first, an
//! approved expansion granted, and the step the agent takes next.

use chokepoint_core::approvals::{ApprovalError, Ask, Next, PendingKind};
use chokepoint_core::ledger::{Record, RecordKind};
use chokepoint_core::{Asked, Decision, Engine, Event, EventKind};
use serde_json::{Value, json};
use std::fs;
use std::sync::Arc;

const INTENTS: &str = "version: 1
active_intents:
  - id: INT-001
    name: Harden login
    status: IN_PROGRESS
    owned_scope: [src/auth/**]
";

fn governed() -> (tempfile::TempDir, Arc<Engine>) {
    let ws = tempfile::tempdir().unwrap();
    fs::create_dir_all(ws.path().join(".orchestration")).unwrap();
    fs::create_dir_all(ws.path().join("src/api")).unwrap();
    fs::write(ws.path().join(".orchestration/active_intents.yaml"), INTENTS).unwrap();
    let engine = Engine::open(ws.path()).unwrap();
    assert!(engine.info().diagnostics.is_empty(), "{:?}", engine.info().diagnostics);
    (ws, Arc::new(engine))
}

fn ask(event: EventKind, tool: Option<&str>, input: Value) -> Ask {
    Ask {
        event,
        tool: tool.map(str::to_owned),
        input,
        paths: Vec::new(),
        asked: Vec::new(),
        session_id: Some("S".into()),
        task_id: Some("T".into()),
        review: false,
    }
}

fn asked(hook: &str, reason: &str) -> Vec<Asked> {
    vec![Asked { hook: hook.into(), reason: reason.into() }]
}

fn write(path: &str) -> Event {
    let mut e = Event::tool(EventKind::PreToolUse, "write_to_file", json!({ "path": path, "content": "x" }));
    e.ids.session = Some("S".into());
    e.paths = vec![path.into()];
    e
}

fn approval_decisions(ws: &tempfile::TempDir) -> Vec<Record> {
    let text = chokepoint_core::ledger::chains::all_lines(&chokepoint_core::Sidecar::new(ws.path())).join("\n");
    let records = text.lines().map(|l| Record::from_line(l).unwrap());
    records.filter(|r| r.kind == RecordKind::Approval && r.data.as_ref().unwrap()["phase"] == "decision").collect()
}

#[test]
fn an_ask_opens_the_pending_of_its_kind_with_the_subject_built_from_the_judged_event() {
    let (_ws, engine) = governed();
    let open = |ask: Ask| engine.open_ask(ask).unwrap().pending;

    let call = open(Ask {
        paths: vec!["src/a.ts".into()],
        asked: vec![Asked { hook: "review".into(), reason: "big change".into() }, Asked { hook: "audit".into(), reason: "logged".into() }],
        ..ask(EventKind::PreToolUse, Some("write_to_file"), json!({ "path": "src/a.ts", "content": "x" }))
    });
    assert_eq!(
        (call.kind, call.triggered_by.as_str(), call.session_id.as_deref(), call.task_id.as_deref()),
        (PendingKind::ToolCall, "review", Some("S"), Some("T"))
    );
    assert_eq!(
        call.subject,
        json!({ "tool": "write_to_file", "input": { "path": "src/a.ts", "content": "x" }, "paths": ["src/a.ts"], "reason": "big change; logged" })
    );

    let expansion = open(Ask {
        asked: asked("gatekeeper", "scope expansion"),
        ..ask(
            EventKind::PreToolUse,
            Some("scope_expansion_request"),
            json!({ "intent_id": "INT-001", "paths": ["src/api/**"], "justification": "moved" }),
        )
    });
    assert_eq!(expansion.kind, PendingKind::ScopeExpansion);
    assert_eq!(expansion.subject, json!({ "intent_id": "INT-001", "paths": ["src/api/**"], "justification": "moved" }));

    // A plan's tasks keep only what a task is (a host's extra fields would make the subject invalid).
    let plan = open(Ask {
        asked: asked("plans", "plans are reviewed"),
        ..ask(EventKind::PlanSubmit, None, json!({ "title": "P", "tasks": [{ "prompt": "do it", "planId": "x" }] }))
    });
    assert_eq!(
        (plan.kind, plan.subject.clone()),
        (PendingKind::Plan, json!({ "title": "P", "tasks": [{ "prompt": "do it", "title": null }] }))
    );

    let proposal = json!({ "summary": "earlier work", "summarized_turns": 3, "before_tokens": 900, "after_tokens": 200, "budget": 500 });
    let compaction = open(Ask { asked: asked("compaction-review", "review"), ..ask(EventKind::PreCompact, None, proposal) });
    assert_eq!(compaction.kind, PendingKind::Compaction);
    assert_eq!(
        compaction.subject,
        json!({ "summaries": [{ "text": "earlier work", "source": "3 earlier turn(s)" }], "guidance": null, "original_tokens": 900, "estimated_tokens": 200, "budget": 500 })
    );

    // A refused submission: nobody asked, the first failing hook triggered it.
    let failures = json!([{ "hook": "tests", "reason": "2 failing", "output": null }]);
    let submit = open(ask(EventKind::BeforeSubmit, None, json!({ "result": "done", "failures": failures })));
    assert_eq!((submit.kind, submit.triggered_by.as_str()), (PendingKind::Submit, "tests"));

    let refused = engine.open_ask(ask(EventKind::SessionStart, None, json!({}))).unwrap_err();
    assert!(matches!(refused, ApprovalError::NotAskable(_)));
    assert!(refused.to_string().contains("cannot be approved"), "{refused}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settling_an_approved_expansion_makes_it_durable_then_grants_the_paths_as_decided() {
    let (ws, engine) = governed();
    let select = Event::tool(EventKind::PreToolUse, "select_active_intent", json!({ "intent_id": "INT-001" }));
    let select = Event { ids: chokepoint_core::EventIds { session: Some("S".into()), ..Default::default() }, ..select };
    assert_eq!(engine.evaluate(select).unwrap().decision, Decision::Allow);
    assert!(matches!(engine.evaluate(write("src/api/login.ts")).unwrap().decision, Decision::Deny(_)));

    let id = engine
        .open_ask(Ask {
            asked: asked("gatekeeper", "scope expansion"),
            ..ask(
                EventKind::PreToolUse,
                Some("scope_expansion_request"),
                json!({ "intent_id": "INT-001", "paths": ["src/api/**"], "justification": "moved" }),
            )
        })
        .unwrap()
        .pending
        .id;
    // The settle waits for a decision taken after it started; the decider narrows the paths first.
    let settling = tokio::spawn({
        let (engine, id) = (Arc::clone(&engine), id.clone());
        async move { engine.settle(&id).await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert!(!settling.is_finished(), "nothing is settled before a decision");
    engine.approvals().apply_decision(&id, &json!({ "action": "edit", "paths": ["src/api/login.ts"] }), "human").unwrap();
    engine.approvals().apply_decision(&id, &json!({ "action": "approve", "note": "only that file" }), "human").unwrap();
    let settled = settling.await.unwrap();

    assert_eq!(settled.next, Next::Granted);
    assert_eq!(settled.message, "approved by human: src/api/login.ts added to the scope of INT-001\nnote from human: only that file");
    assert_eq!(approval_decisions(&ws).len(), 1, "the approval is in the ledger file when settle returns");
    assert_eq!(engine.evaluate(write("src/api/login.ts")).unwrap().decision, Decision::Allow, "the grant is applied");
    assert!(matches!(engine.evaluate(write("src/api/other.ts")).unwrap().decision, Decision::Deny(_)), "only as decided");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejection_refuses_and_grants_nothing_and_each_decision_says_what_runs_next() {
    let (_ws, engine) = governed();
    let decide = |ask: Ask, decision: Value| {
        let id = engine.open_ask(ask).unwrap().pending.id;
        engine.approvals().apply_decision(&id, &decision, "human").unwrap();
        id
    };
    let expansion = ask(
        EventKind::PreToolUse,
        Some("scope_expansion_request"),
        json!({ "intent_id": "INT-001", "paths": ["src/api/**"], "justification": "m" }),
    );
    let id = decide(expansion, json!({ "action": "reject", "reason": "not now" }));
    let settled = engine.settle(&id).await;
    assert_eq!((settled.next, settled.message.as_str()), (Next::Refuse, "the scope expansion was rejected by human: not now"));
    assert!(matches!(engine.evaluate(write("src/api/login.ts")).unwrap().decision, Decision::Deny(_)));

    let call = || ask(EventKind::PreToolUse, Some("write_to_file"), json!({ "path": "src/auth/a.ts", "content": "x" }));
    let id = decide(call(), json!({ "action": "approve" }));
    assert_eq!(engine.settle(&id).await.next, Next::Run);
    let id = decide(call(), json!({ "action": "modify", "input": { "path": "src/auth/b.ts", "content": "y" }, "note": "b, not a" }));
    let settled = engine.settle(&id).await;
    assert_eq!((settled.next, settled.input), (Next::RunModified, Some(json!({ "path": "src/auth/b.ts", "content": "y" }))));

    let submit = || ask(EventKind::BeforeSubmit, None, json!({ "result": "done", "failures": [{ "hook": "tests", "reason": "red" }] }));
    let id = decide(submit(), json!({ "action": "retry", "guidance": "fix the lockout test" }));
    let settled = engine.settle(&id).await;
    assert_eq!(
        (settled.next, settled.message.as_str()),
        (Next::Retry, "the completion was not accepted; human gives you another round: fix the lockout test")
    );
    let id = decide(submit(), json!({ "action": "override", "reason": "flaky" }));
    assert_eq!(engine.settle(&id).await.next, Next::Override);

    let unknown = engine.settle("no-such-pending").await;
    assert_eq!(unknown.next, Next::Refuse);
    assert!(unknown.message.contains("no pending `no-such-pending`"), "{}", unknown.message);
}

/// What a person's card needs of an ask from another agent: when it lapses (a wall-clock deadline,
/// `approvals.timeout_seconds` unless the agent's hook gives up sooner, and brought forward when a
/// waiter's deadline is earlier), what happens then (the configured fallback), and who waits on it
/// (the agent, its session, the intent it holds, the worktree). Our own runtime's ask names no agent
/// and counts as rejected at its deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_ask_carries_its_deadline_its_lapse_and_who_waits_on_it() {
    use chokepoint_core::approvals::{Lapse, PendingDict};
    use chokepoint_core::model::external_events::Agent;
    use std::time::Duration;
    let (ws, _) = governed();
    fs::write(ws.path().join(".orchestration/hooks.yaml"), "version: 1\napprovals:\n  timeout_seconds: 120\n").unwrap();
    let engine = Arc::new(Engine::open(ws.path()).unwrap());
    let mut select = Event::tool(EventKind::PreToolUse, "select_active_intent", json!({ "intent_id": "INT-001" }));
    select.ids.session = Some("claude:S".into());
    select.ids.agent = Some("claude".into());
    assert_eq!(engine.evaluate_async(select, None).await.decision, Decision::Allow);

    let lapses_in = |p: &PendingDict| p.deadline_ms.unwrap() as i64 - chokepoint_core::base::clock::now_ms() as i64;
    let agent_ask = || Ask {
        asked: asked("review", "a person looks at writes to src/auth"),
        session_id: Some("claude:S".into()),
        task_id: None,
        ..ask(EventKind::PreToolUse, Some("Write"), json!({ "file_path": "src/auth/a.ts", "content": "x" }))
    };

    // The hook would wait ten minutes: the configured two are what a person has.
    let long = engine.open_agent_ask_within(agent_ask(), Agent::ClaudeCode, Duration::from_secs(599)).unwrap().opened.pending;
    assert!((110_000..=120_000).contains(&lapses_in(&long)), "{:?}", long.deadline_ms);
    assert_eq!(long.on_timeout, Lapse::Deny);
    let asker = long.asker.clone().expect("an agent's ask names who waits");
    assert_eq!((asker.agent.as_str(), asker.session.as_deref(), asker.intent.as_deref()), ("claude", Some("claude:S"), Some("INT-001")));
    assert_eq!(asker.worktree.as_deref(), ws.path().file_name().and_then(|n| n.to_str()));

    // An agent that gives up sooner: its deadline, less than the configured one.
    let short = engine.open_agent_ask_within(agent_ask(), Agent::VsCode, Duration::from_secs(20)).unwrap().opened.pending;
    assert!((15_000..=20_000).contains(&lapses_in(&short)), "{:?}", short.deadline_ms);
    assert_eq!(short.asker.unwrap().agent, "vscode");

    // A waiter with an earlier deadline brings it forward, and the listed Pending shows it.
    let (engine2, id) = (Arc::clone(&engine), long.id.clone());
    let waiting = tokio::spawn(async move { engine2.approvals().wait(&id, Some(Duration::from_secs(30))).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let listed = engine.approvals().get(&long.id).unwrap();
    assert!((25_000..=30_000).contains(&lapses_in(&listed)), "{:?}", listed.deadline_ms);
    waiting.abort();

    // The fallback `agent` hands the call to the agent's own prompt; Codex has none and denies.
    fs::write(ws.path().join(".orchestration/hooks.yaml"), "version: 1\napprovals:\n  fallback: agent\n").unwrap();
    let engine = Arc::new(Engine::open(ws.path()).unwrap());
    let handed = engine.open_agent_ask_within(agent_ask(), Agent::ClaudeCode, Duration::from_secs(599)).unwrap().opened.pending;
    assert_eq!(handed.on_timeout, Lapse::AgentPrompt);
    assert!((295_000..=300_000).contains(&lapses_in(&handed)), "the default five minutes: {:?}", handed.deadline_ms);
    let codex = engine.open_agent_ask_within(agent_ask(), Agent::Codex, Duration::from_secs(599)).unwrap().opened.pending;
    assert_eq!(codex.on_timeout, Lapse::Deny);

    // Our own runtime's ask: no agent named, rejected at its deadline.
    let own = engine.open_ask(agent_ask()).unwrap().pending;
    assert_eq!((own.asker, own.on_timeout), (None, Lapse::Reject));
    assert!(own.deadline_ms.is_some());
}
