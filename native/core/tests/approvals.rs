//! Approvals: routing, the recursion guard, the whitelist, each kind's actions, the generated tool
//! definitions, timeouts and waiters, validation and retry, policy feedback, and the ledger records.

use chokepoint_core::approvals::{
    ApprovalError, Approvals, Effect, FeedbackSource, OpenRequest, Pending, PendingDict, PendingKind, Policy, Rejection, Route, Status,
    auto_retry,
};
use chokepoint_core::ledger::{Record, RecordKind};
use chokepoint_core::{ApprovalRoute, ApprovalsConfig, Engine};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fs;
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn subject(kind: PendingKind) -> Value {
    match kind {
        PendingKind::ToolCall => {
            json!({ "tool": "delete_file", "input": { "path": "src/a.js" }, "paths": ["src/a.js"], "reason": "deleting needs a human" })
        }
        PendingKind::ScopeExpansion => {
            json!({ "intent_id": "INT-001", "paths": ["src/api/**"], "justification": "the login calls the api" })
        }
        PendingKind::Plan => {
            json!({ "title": "login", "tasks": [{ "prompt": "write the form", "title": "form" }] })
        }
        PendingKind::Compaction => json!({
            "summaries": [{ "text": "the user asked for a login form", "source": "turns 1-3" }, { "text": "tests were added", "source": null }],
            "guidance": null, "original_tokens": 4000, "estimated_tokens": 20, "budget": 200
        }),
        PendingKind::Submit => {
            json!({ "result": "done", "failures": [{ "hook": "tests", "reason": "2 tests failed", "output": null }] })
        }
    }
}

fn open(approvals: &Approvals, kind: PendingKind) -> PendingDict {
    approvals.open(OpenRequest::new(kind, subject(kind), "gatekeeper")).unwrap().pending
}

fn config(default: ApprovalRoute, handlers: &[(&str, ApprovalRoute)]) -> ApprovalsConfig {
    ApprovalsConfig {
        default,
        handlers: handlers.iter().map(|(k, r)| (k.to_string(), *r)).collect::<BTreeMap<_, _>>(),
        ..ApprovalsConfig::default()
    }
}

// ---- routing ------------------------------------------------------------------------------------

#[test]
fn routing_order_is_caller_review_then_the_kinds_handler_then_star_then_the_configured_default() {
    use ApprovalRoute::*;
    // (configured default, hooks.yaml handlers, the host's registrations, review, kind) → route
    let check = |default, configured: &[(&str, ApprovalRoute)], registered: &[(&str, &str)], review, kind, expected: &str| {
        let approvals = Approvals::default();
        approvals.configure(&config(default, configured));
        for (key, name) in registered {
            approvals.set_handler(key, Some(name)).unwrap();
        }
        let request = OpenRequest { review, ..OpenRequest::new(kind, subject(kind), "gatekeeper") };
        let opened = approvals.open(request).unwrap();
        assert_eq!(
            opened.route.to_string(),
            expected,
            "default {default:?}, configured {configured:?}, registered {registered:?}, review {review}, {kind:?}"
        );
        assert_eq!(opened.pending.route, expected);
    };
    let tool = PendingKind::ToolCall;
    let scope = PendingKind::ScopeExpansion;
    check(Human, &[], &[], false, tool, "human");
    check(Reviewer, &[], &[], false, tool, "reviewer");
    check(Human, &[("*", Reviewer)], &[], false, tool, "reviewer");
    check(Human, &[("*", Reviewer), ("scope_expansion", AutoApprove)], &[], false, scope, "auto-approve");
    check(Human, &[("*", Reviewer), ("scope_expansion", AutoApprove)], &[], false, tool, "reviewer");
    // The host's registrations override hooks.yaml's key by key; a kind's entry still beats `*`.
    check(Human, &[("*", Reviewer)], &[("*", "sidebar")], false, tool, "handler:sidebar");
    check(Human, &[("tool_call", AutoDeny)], &[("*", "sidebar")], false, tool, "auto-deny");
    check(Human, &[("tool_call", AutoDeny)], &[("tool_call", "human")], false, tool, "human");
    check(Human, &[], &[("plan", "planner")], false, PendingKind::Plan, "handler:planner");
    // A caller that reviews gets it back, whatever is registered.
    check(AutoDeny, &[("*", AutoApprove)], &[("tool_call", "sidebar")], true, tool, "caller");
}

#[test]
fn removing_a_registration_lets_the_configuration_answer_again_and_unknown_keys_are_refused() {
    let approvals = Approvals::default();
    approvals.configure(&config(ApprovalRoute::Human, &[("tool_call", ApprovalRoute::Reviewer)]));
    approvals.set_handler("tool_call", Some("sidebar")).unwrap();
    assert_eq!(approvals.config().handlers["tool_call"], "sidebar");
    approvals.set_handler("tool_call", None).unwrap();
    assert_eq!(approvals.config().handlers["tool_call"], "reviewer");
    assert_eq!(open(&approvals, PendingKind::ToolCall).route, "reviewer");
    let err = approvals.set_handler("commit", Some("x")).unwrap_err();
    assert!(err.to_string().contains("handlers are registered for a kind"), "{err}");
}

#[test]
fn the_automatic_routes_decide_at_once_through_the_kinds_table() {
    let approvals = Approvals::default();
    approvals.configure(&config(ApprovalRoute::AutoApprove, &[("tool_call", ApprovalRoute::AutoDeny)]));
    let denied = open(&approvals, PendingKind::ToolCall);
    assert_eq!((denied.status, denied.decision.as_ref().unwrap().by.as_str()), (Status::Rejected, "auto-deny"));
    let approved = open(&approvals, PendingKind::Plan);
    assert_eq!((approved.status, approved.decision.as_ref().unwrap().action.as_str()), (Status::Approved, "approve"));
    // A submission has no `approve`: approving it automatically is an override.
    let submit = open(&approvals, PendingKind::Submit);
    assert_eq!((submit.status, submit.decision.as_ref().unwrap().action.as_str()), (Status::Overridden, "override"));
    assert!(approvals.list().is_empty(), "nothing is left open");
}

#[test]
fn work_inside_a_handler_does_not_reenter_the_handlers() {
    let approvals = Approvals::default();
    approvals.set_handler("*", Some("sidebar")).unwrap();
    let in_session = |session: &str, review: bool| {
        let request = OpenRequest {
            session_id: Some(session.into()),
            review,
            ..OpenRequest::new(PendingKind::ToolCall, subject(PendingKind::ToolCall), "x")
        };
        approvals.open(request).unwrap().pending
    };
    approvals.enter_handler("S");
    approvals.enter_handler("S");
    let guarded = in_session("S", false);
    assert_eq!((guarded.route.as_str(), guarded.status), ("guard", Status::Approved));
    assert_eq!(guarded.decision.unwrap().by, "guard");
    assert_eq!(in_session("other", false).route, "handler:sidebar", "only the handler's session is guarded");
    assert_eq!(in_session("S", true).route, "caller", "a caller that reviews still gets it back");
    approvals.exit_handler("S");
    assert_eq!(in_session("S", false).route, "guard", "handlers nest");
    approvals.exit_handler("S");
    assert_eq!(in_session("S", false).route, "handler:sidebar");
}

// ---- the whitelist and the actions --------------------------------------------------------------

#[test]
fn apply_decision_refuses_what_the_kinds_table_does_not_list() {
    let mut tool = Pending::new(PendingKind::ToolCall, subject(PendingKind::ToolCall), "gatekeeper").unwrap();
    let refused = |p: &mut Pending, decision: Value| p.apply_decision(&decision, "human").unwrap_err().to_string();
    assert_eq!(
        refused(&mut tool, json!({ "action": "_execute" })),
        "action `_execute` is not allowed on a tool_call pending; the allowed actions are approve, reject, modify"
    );
    assert_eq!(
        refused(&mut tool, json!({ "action": "to_dict" })).split(';').next().unwrap(),
        "action `to_dict` is not allowed on a tool_call pending"
    );
    assert_eq!(refused(&mut tool, json!({ "reason": "x" })), "invalid decision: a decision needs a string `action`");
    assert_eq!(refused(&mut tool, json!("approve")), "invalid decision: a decision is an object with an `action`");
    assert_eq!(refused(&mut tool, json!({ "action": "reject" })), "bad arguments for `reject`: missing field `reason`");
    assert_eq!(refused(&mut tool, json!({ "action": "reject", "reason": "  " })), "bad arguments for `reject`: `reason` must not be empty");
    assert!(refused(&mut tool, json!({ "action": "approve", "nope": 1 })).starts_with("bad arguments for `approve`: unknown field `nope`"));
    assert!(refused(&mut tool, json!({ "action": "modify", "input": "rm -rf" })).starts_with("bad arguments for `modify`: invalid type"));
    assert!(tool.is_open() && tool.decision.is_none(), "a refusal changes nothing");

    let mut plan = Pending::new(PendingKind::Plan, subject(PendingKind::Plan), "planner").unwrap();
    assert_eq!(
        refused(&mut plan, json!({ "action": "modify", "input": {} })),
        "action `modify` is not allowed on a plan pending; the allowed actions are approve, reject, edit"
    );
    assert_eq!(
        refused(&mut plan, json!({ "action": "edit", "tasks": [] })),
        "bad arguments for `edit`: `tasks` must hold at least one task"
    );

    tool.apply_decision(&json!({ "action": "approve" }), "human").unwrap();
    for action in ["approve", "reject", "modify", "_execute"] {
        let err = tool.execute_tool(action, json!({ "reason": "late", "input": {} }), "human").unwrap_err();
        assert!(matches!(err, ApprovalError::NotOpen { .. }), "{action}: {err}");
        assert_eq!(err.to_string(), format!("pending `{}` is already approved; no action can change it", tool.id));
    }
}

#[test]
fn each_kind_decides_and_edits_as_its_table_says() {
    struct Case {
        kind: PendingKind,
        decision: Value,
        status: Status,
        effect: &'static str,
        /// A JSON pointer into the dict after the action, and the value expected there.
        check: (&'static str, Value),
    }
    let cases = [
        Case {
            kind: PendingKind::ToolCall,
            decision: json!({ "action": "approve", "note": "ok" }),
            status: Status::Approved,
            effect: "decided",
            check: ("/decision/note", json!("ok")),
        },
        Case {
            kind: PendingKind::ToolCall,
            decision: json!({ "action": "reject", "reason": "use git rm" }),
            status: Status::Rejected,
            effect: "decided",
            check: ("/decision/reason", json!("use git rm")),
        },
        Case {
            kind: PendingKind::ToolCall,
            decision: json!({ "action": "modify", "input": { "path": "src/b.js" }, "note": "the other file" }),
            status: Status::Modified,
            effect: "decided",
            check: ("/decision/input/path", json!("src/b.js")),
        },
        Case {
            kind: PendingKind::ScopeExpansion,
            decision: json!({ "action": "approve" }),
            status: Status::Approved,
            effect: "decided",
            check: ("/decision/save", json!(false)),
        },
        Case {
            kind: PendingKind::ScopeExpansion,
            decision: json!({ "action": "approve_and_save" }),
            status: Status::Approved,
            effect: "decided",
            check: ("/decision/save", json!(true)),
        },
        Case {
            kind: PendingKind::ScopeExpansion,
            decision: json!({ "action": "reject", "reason": "too broad" }),
            status: Status::Rejected,
            effect: "decided",
            check: ("/decision/reason", json!("too broad")),
        },
        Case {
            kind: PendingKind::ScopeExpansion,
            decision: json!({ "action": "edit", "paths": ["src/api/login.ts"] }),
            status: Status::Open,
            effect: "edited",
            check: ("/subject/paths/0", json!("src/api/login.ts")),
        },
        Case {
            kind: PendingKind::Plan,
            decision: json!({ "action": "approve" }),
            status: Status::Approved,
            effect: "decided",
            check: ("/decision/action", json!("approve")),
        },
        Case {
            kind: PendingKind::Plan,
            decision: json!({ "action": "reject", "reason": "no tests" }),
            status: Status::Rejected,
            effect: "decided",
            check: ("/decision/reason", json!("no tests")),
        },
        Case {
            kind: PendingKind::Plan,
            decision: json!({ "action": "edit", "tasks": [{ "prompt": "a" }, { "prompt": "b", "title": "B" }] }),
            status: Status::Open,
            effect: "edited",
            check: ("/subject/tasks/1/title", json!("B")),
        },
        Case {
            kind: PendingKind::Compaction,
            decision: json!({ "action": "approve" }),
            status: Status::Approved,
            effect: "decided",
            check: ("/decision/by", json!("human")),
        },
        Case {
            kind: PendingKind::Compaction,
            decision: json!({ "action": "reject" }),
            status: Status::Rejected,
            effect: "decided",
            check: ("/decision/reason", Value::Null),
        },
        Case {
            kind: PendingKind::Compaction,
            decision: json!({ "action": "edit_summary", "index": 1, "text": "tests added for the form" }),
            status: Status::Open,
            effect: "edited",
            check: ("/subject/summaries/1/text", json!("tests added for the form")),
        },
        Case {
            kind: PendingKind::Compaction,
            decision: json!({ "action": "edit_guidance", "text": "keep file names" }),
            status: Status::Open,
            effect: "edited",
            check: ("/subject/guidance", json!("keep file names")),
        },
        Case {
            kind: PendingKind::Compaction,
            decision: json!({ "action": "retry", "index": 0, "guidance": "name the files" }),
            status: Status::Open,
            effect: "retry_requested",
            check: ("/decision", Value::Null),
        },
        Case {
            kind: PendingKind::Submit,
            decision: json!({ "action": "retry", "guidance": "fix the login test" }),
            status: Status::Retry,
            effect: "decided",
            check: ("/decision/note", json!("fix the login test")),
        },
        Case {
            kind: PendingKind::Submit,
            decision: json!({ "action": "reject", "reason": "broken" }),
            status: Status::Rejected,
            effect: "decided",
            check: ("/decision/reason", json!("broken")),
        },
        Case {
            kind: PendingKind::Submit,
            decision: json!({ "action": "override", "reason": "flaky, tracked in #12" }),
            status: Status::Overridden,
            effect: "decided",
            check: ("/decision/reason", json!("flaky, tracked in #12")),
        },
    ];
    let approvals = Approvals::default();
    for case in cases {
        let id = open(&approvals, case.kind).id;
        let applied = approvals.apply_decision(&id, &case.decision, "human").unwrap();
        let what = format!("{:?} {}", case.kind, case.decision);
        assert_eq!(applied.pending.status, case.status, "{what}");
        assert_eq!(applied.effect.as_str(), case.effect, "{what}");
        assert_eq!(applied.pending.to_json().pointer(case.check.0), Some(&case.check.1), "{what}: {}", applied.pending.to_json());
        assert!(!applied.text.is_empty());
    }
    // Edits are checked like subjects: relative paths without `..`, globs that compile.
    let id = open(&approvals, PendingKind::ScopeExpansion).id;
    for (paths, message) in [
        (json!(["/etc/passwd"]), "path `/etc/passwd` must be relative to the workspace"),
        (json!(["src/../../x"]), "path `src/../../x` must not contain `..`"),
        (json!(["src/{a"]), "path `src/{a` is not a valid glob"),
        (json!([]), "`paths` must name at least one path"),
    ] {
        let err = approvals.execute_tool(&id, "edit", json!({ "paths": paths }), "human").unwrap_err().to_string();
        assert!(err.starts_with(&format!("bad arguments for `edit`: {message}")), "{err}");
    }
    let err = approvals.execute_tool(&id, "edit", json!({ "paths": ["a"], "extra": 1 }), "human").unwrap_err();
    assert!(err.is_refusal(), "{err}");
}

#[test]
fn subjects_are_checked_on_open_and_keep_the_callers_extra_fields() {
    let approvals = Approvals::default();
    let err = approvals.open(OpenRequest::new(PendingKind::ScopeExpansion, json!({ "paths": ["a"] }), "x")).unwrap_err();
    assert_eq!(err.to_string(), "invalid scope_expansion subject: missing field `intent_id`");
    let err = approvals.open(OpenRequest::new(PendingKind::Plan, json!({ "tasks": [] }), "x")).unwrap_err();
    assert_eq!(err.to_string(), "invalid plan subject: `tasks` must hold at least one task");
    assert!(PendingKind::parse("commit").unwrap_err().to_string().starts_with("unknown pending kind `commit`"));
    let dict = approvals
        .open(OpenRequest::new(PendingKind::ToolCall, json!({ "tool": "write_to_file", "input": {}, "diff": "+a" }), "x"))
        .unwrap()
        .pending
        .to_json();
    assert_eq!((dict["subject"]["diff"].clone(), dict["subject"]["paths"].clone()), (json!("+a"), Value::Null));
    let keys: Vec<&str> = dict.as_object().unwrap().keys().map(String::as_str).collect();
    for key in ["id", "kind", "created_at", "triggered_by", "session_id", "task_id", "status", "route", "subject", "actions", "decision"] {
        assert!(keys.contains(&key), "to_dict has `{key}`: {dict}");
    }
    assert_eq!(dict["actions"], json!(["approve", "reject", "modify"]));
    assert!(dict["id"].as_str().unwrap().starts_with("pnd-"));
}

// ---- the generated agent interface --------------------------------------------------------------

#[test]
fn to_tools_is_valid_json_schema_generated_from_the_table() {
    for kind in PendingKind::ALL {
        let pending = Pending::new(kind, subject(kind), "x").unwrap();
        let tools = pending.to_tools();
        assert_eq!(tools.iter().map(|t| t.name).collect::<Vec<_>>(), kind.action_names(), "{kind:?}");
        for tool in tools {
            let schema = &tool.parameters;
            assert!(jsonschema::draft202012::meta::is_valid(schema), "{kind:?} `{}`: {schema}", tool.name);
            jsonschema::draft202012::meta::validate(schema).unwrap();
            assert_eq!((schema["type"].as_str(), schema["additionalProperties"].as_bool()), (Some("object"), Some(false)), "{}", tool.name);
            assert!(!schema.to_string().contains("$ref"), "subschemas are inlined: {schema}");
            let validator = jsonschema::draft202012::new(schema).unwrap();
            assert!(!validator.is_valid(&json!({ "_execute": true })), "extra arguments are refused by the schema too");
        }
    }
    let tool = Pending::new(PendingKind::ToolCall, subject(PendingKind::ToolCall), "x").unwrap();
    let reject = tool.to_tools().into_iter().find(|t| t.name == "reject").unwrap();
    let validator = jsonschema::draft202012::new(&reject.parameters).unwrap();
    assert!(validator.is_valid(&json!({ "reason": "no" })));
    assert!(!validator.is_valid(&json!({})), "reason is required");
}

#[test]
fn describe_api_and_execute_tool_follow_the_table() {
    let approvals = Approvals::default();
    let id = open(&approvals, PendingKind::Compaction).id;
    let text = approvals.describe(&id).unwrap();
    assert!(text.starts_with(&format!("pending compaction `{id}` (open), triggered by gatekeeper")), "{text}");
    for line in [
        "- approve(note?: string",
        "- reject(reason?: string",
        "- edit_summary(index: integer",
        "text: string",
        "- retry(",
        "guidance: string",
    ] {
        assert!(text.contains(line), "`{line}` in\n{text}");
    }
    let applied = approvals.execute_tool(&id, "retry", json!({ "index": 1, "guidance": "shorter" }), "reviewer").unwrap();
    assert_eq!(applied.effect, Effect::RetryRequested { index: 1, guidance: "shorter".into() });
    assert!(applied.text.contains("summary 1 will be written again"), "{}", applied.text);
    let applied = approvals.execute_tool(&id, "reject", json!({ "reason": "lost the decisions" }), "reviewer").unwrap();
    assert_eq!(applied.text, format!("pending `{id}` is rejected: lost the decisions"));
    assert!(approvals.execute_tool(&id, "_commit_fn", json!({}), "reviewer").unwrap_err().is_refusal());
}

// ---- timeouts and waiters -----------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_pending_times_out_as_a_rejection_and_its_waiters_resolve() {
    let approvals = Arc::new(Approvals::default());
    // Nobody waits for this one: the timer still times it out.
    let request = OpenRequest {
        timeout: Some(Duration::from_millis(150)),
        ..OpenRequest::new(PendingKind::ToolCall, subject(PendingKind::ToolCall), "x")
    };
    let lonely = approvals.open(request).unwrap().pending.id;
    // A waiter's timeout brings the deadline forward.
    let waited = open(&approvals, PendingKind::Plan).id;
    let started = std::time::Instant::now();
    let dict = approvals.wait(&waited, Some(Duration::from_millis(100))).await.unwrap();
    assert_eq!(dict.status, Status::TimedOut);
    assert_eq!(dict.decision.as_ref().map(|d| (d.by.as_str(), d.reason.as_deref())), Some(("timeout", Some("no decision within 0.1 s"))));
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(approvals.get(&lonely).unwrap().status, Status::TimedOut);
    assert!(approvals.list().is_empty());
    assert!(approvals.apply_decision(&lonely, &json!({ "action": "approve" }), "human").unwrap_err().is_refusal(), "too late");

    // A waiter resolves on a decision made later, elsewhere.
    let id = open(&approvals, PendingKind::ScopeExpansion).id;
    let (a, later) = (Arc::clone(&approvals), id.clone());
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        a.apply_decision(&later, &json!({ "action": "approve_and_save" }), "human").unwrap();
    });
    let waiters: Vec<_> = (0..50)
        .map(|_| {
            let (a, id) = (Arc::clone(&approvals), id.clone());
            tokio::spawn(async move { a.wait(&id, None).await })
        })
        .collect();
    for waiter in waiters {
        let dict = waiter.await.unwrap().unwrap();
        assert_eq!((dict.status, dict.decision.unwrap().save), (Status::Approved, true));
    }
    assert!(matches!(approvals.wait("pnd-none", None).await, Err(ApprovalError::UnknownPending(_))));
}

#[test]
fn a_handler_that_returns_without_deciding_gets_a_warning_and_the_pending_still_times_out() {
    let approvals = Approvals::default();
    approvals.configure(&ApprovalsConfig { timeout_seconds: 7, ..ApprovalsConfig::default() });
    let id = open(&approvals, PendingKind::ToolCall).id;
    let warning = approvals.note_unresolved(&id, "sidebar").unwrap();
    assert_eq!(
        warning,
        format!(
            "approval handler `sidebar` returned without deciding tool_call pending `{id}`; it times out and counts as rejected when its timeout of 7 s runs out"
        )
    );
    assert_eq!(approvals.get(&id).unwrap().status, Status::Open);
    approvals.apply_decision(&id, &json!({ "action": "approve" }), "human").unwrap();
    assert!(approvals.note_unresolved(&id, "sidebar").is_err(), "a decided pending needs no warning");
}

// ---- validation and retry -----------------------------------------------------------------------

fn compaction(summaries: &[&str], budget: u64) -> Pending {
    let summaries: Vec<Value> = summaries.iter().map(|s| json!({ "text": s })).collect();
    Pending::new(
        PendingKind::Compaction,
        json!({ "summaries": summaries, "original_tokens": 1000, "estimated_tokens": 100, "budget": budget }),
        "policy:auto_compact",
    )
    .unwrap()
}

#[test]
fn validate_names_the_first_summary_that_is_empty_or_over_its_share() {
    let check = |summaries: &[&str], budget, expected: (bool, Option<usize>, &str)| {
        let v = compaction(summaries, budget).validate();
        assert_eq!((v.passed, v.index), (expected.0, expected.1), "{summaries:?}: {v:?}");
        assert!(v.diagnosis.as_deref().unwrap_or_default().starts_with(expected.2), "{v:?}");
    };
    check(&["short", "also short"], 100, (true, None, ""));
    check(&["short", " "], 100, (false, Some(1), "summary 1 is empty"));
    check(&["short", &"word ".repeat(200)], 100, (false, Some(1), "summary 1 is about"));
    check(&[], 100, (false, None, "there are no summaries"));
    let plan = Pending::new(PendingKind::Plan, subject(PendingKind::Plan), "x").unwrap();
    assert!(plan.validate().passed, "other kinds have nothing to validate");
}

#[test]
fn auto_retry_writes_failing_summaries_again_with_the_diagnosis_as_guidance() {
    let long = "word ".repeat(200);
    let mut pending = compaction(&["fine", &long, ""], 150);
    let mut asked = Vec::new();
    let outcome = auto_retry(&mut pending, 3, |index, guidance| {
        asked.push((index, guidance.split(' ').take(2).collect::<Vec<_>>().join(" ")));
        Ok(format!("summary {index}, rewritten"))
    });
    assert!(outcome.validation.passed, "{outcome:?}");
    assert_eq!((outcome.retries, outcome.error), (2, None));
    assert_eq!(asked, [(1, "summary 1".to_owned()), (2, "summary 2".to_owned())]);
    // The limit is the handler's.
    let mut pending = compaction(&["", ""], 150);
    let outcome = auto_retry(&mut pending, 1, |_, _| Ok(String::new()));
    assert_eq!((outcome.validation.passed, outcome.retries, outcome.validation.index), (false, 1, Some(0)));
    // A retry that fails stops the loop and says why.
    let outcome = auto_retry(&mut compaction(&[""], 150), 3, |_, _| Err("the model is down".into()));
    assert_eq!((outcome.retries, outcome.error.as_deref()), (0, Some("the model is down")));
    // The registry's version: its edits are the registry's (listeners, records).
    let approvals = Approvals::default();
    let changes = Arc::new(Mutex::new(0));
    let counted = Arc::clone(&changes);
    approvals.on_change(Arc::new(move |_| *counted.lock().unwrap() += 1));
    let id = approvals
        .open(OpenRequest::new(PendingKind::Compaction, json!({ "summaries": [{ "text": "" }], "budget": 100 }), "x"))
        .unwrap()
        .pending
        .id;
    let outcome = approvals.auto_retry(&id, 2, |_, _| Ok("rewritten".into()));
    assert!(outcome.validation.passed);
    assert_eq!(approvals.get(&id).unwrap().subject["summaries"][0]["text"], "rewritten");
    assert_eq!(*changes.lock().unwrap(), 2, "open and one edit");
}

// ---- listeners and policy feedback --------------------------------------------------------------

#[derive(Default)]
struct Recorder {
    heard: Mutex<Vec<String>>,
}

impl Policy for Recorder {
    fn on_rejection(&self, r: &Rejection) {
        self.heard.lock().unwrap().push(format!("rejection {} {} {}", r.pending.kind.as_str(), r.source.as_str(), r.reason));
    }
    fn on_success(&self, p: &PendingDict) {
        self.heard.lock().unwrap().push(format!("success {} {}", p.kind.as_str(), p.status.as_str()));
    }
}

#[test]
fn the_policy_that_triggered_a_pending_hears_of_its_rejection_or_success() {
    let approvals = Approvals::default();
    let policy = Arc::new(Recorder::default());
    approvals.register_policy("policy:auto_compact", policy.clone());
    let by_policy = |kind| approvals.open(OpenRequest::new(kind, subject(kind), "policy:auto_compact")).unwrap().pending.id;
    let id = by_policy(PendingKind::Compaction);
    approvals.apply_decision(&id, &json!({ "action": "edit_guidance", "text": "keep names" }), "human").unwrap();
    approvals.apply_decision(&id, &json!({ "action": "reject", "reason": "keep the last turn" }), "human").unwrap();
    let id = by_policy(PendingKind::Compaction);
    approvals.apply_decision(&id, &json!({ "action": "approve" }), "reviewer").unwrap();
    let id = by_policy(PendingKind::ToolCall);
    approvals.apply_decision(&id, &json!({ "action": "reject", "reason": "no" }), "reviewer").unwrap();
    let request = OpenRequest {
        timeout: Some(Duration::from_millis(30)),
        ..OpenRequest::new(PendingKind::Plan, subject(PendingKind::Plan), "policy:auto_compact")
    };
    approvals.open(request).unwrap();
    approvals.configure(&config(ApprovalRoute::AutoDeny, &[]));
    by_policy(PendingKind::Submit);
    // Someone else's Pending is not this policy's business.
    let other = approvals.open(OpenRequest::new(PendingKind::Plan, subject(PendingKind::Plan), "gatekeeper")).unwrap();
    assert_eq!(other.pending.status, Status::Rejected);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        *policy.heard.lock().unwrap(),
        [
            "rejection compaction human keep the last turn",
            "success compaction approved",
            "rejection tool_call reviewer no",
            "rejection submit policy rejected without review by the approvals configuration (auto-deny)",
            "rejection plan timeout no decision within 0.03 s",
        ]
    );
    assert_eq!(FeedbackSource::of("handler:sidebar"), FeedbackSource::Policy);
}

#[test]
fn listeners_hear_every_open_edit_and_decision_in_order() {
    let approvals = Approvals::default();
    let heard = Arc::new(Mutex::new(Vec::new()));
    let into = Arc::clone(&heard);
    approvals
        .on_change(Arc::new(move |p: &PendingDict| into.lock().unwrap().push(format!("{} {}", p.status.as_str(), p.subject["paths"]))));
    approvals.on_change(Arc::new(|_| panic!("a listener that panics does not stop the others")));
    let id = open(&approvals, PendingKind::ScopeExpansion).id;
    approvals.apply_decision(&id, &json!({ "action": "edit", "paths": ["src/x"] }), "human").unwrap();
    approvals.apply_decision(&id, &json!({ "action": "approve" }), "human").unwrap();
    let _ = approvals.apply_decision(&id, &json!({ "action": "approve" }), "human");
    assert_eq!(*heard.lock().unwrap(), [r#"open ["src/api/**"]"#, r#"open ["src/x"]"#, r#"approved ["src/x"]"#]);
}

#[test]
fn an_escalated_pending_changes_route_is_heard_and_recorded_with_its_note() {
    let (ws, engine) = governed("version: 1\napprovals:\n  default: reviewer\n  reviewer: { model: scripted:reviewer }\n");
    let approvals = engine.approvals();
    let heard = Arc::new(Mutex::new(Vec::new()));
    let into = Arc::clone(&heard);
    approvals.on_change(Arc::new(move |p: &PendingDict| into.lock().unwrap().push(format!("{} {}", p.status.as_str(), p.route))));
    let opened = approvals.open(OpenRequest::new(PendingKind::ToolCall, subject(PendingKind::ToolCall), "gatekeeper")).unwrap();
    assert_eq!(opened.pending.route.to_string(), "reviewer");
    let id = opened.pending.id;
    // Nobody would answer on an automatic route.
    for to in ["auto-approve", "auto-deny"] {
        assert!(approvals.escalate(&id, to, "x").unwrap_err().is_refusal(), "{to}");
    }
    let escalated = approvals.escalate(&id, "human", "it rewrites the whole login module").unwrap();
    assert_eq!((escalated.route.to_string(), escalated.status.as_str()), ("human".to_owned(), "open"));
    approvals.apply_decision(&id, &json!({ "action": "reject", "reason": "split it" }), "human").unwrap();
    assert!(approvals.escalate(&id, "human", "late").unwrap_err().is_refusal(), "a decided pending stays decided");
    assert_eq!(*heard.lock().unwrap(), ["open reviewer", "open human", "rejected human"]);
    engine.tracer().flush().unwrap();
    let phases: Vec<(String, String)> = approval_records(&ws)
        .iter()
        .map(|r| {
            let d = r.data.as_ref().unwrap();
            (d["phase"].as_str().unwrap().to_owned(), d["note"].as_str().unwrap_or("-").to_owned())
        })
        .collect();
    assert_eq!(
        phases,
        [("open".into(), "-".into()), ("escalation".into(), "it rewrites the whole login module".into()), ("decision".into(), "-".into())]
    );
}

// ---- the engine: configuration and the ledger ---------------------------------------------------

fn governed(hooks: &str) -> (tempfile::TempDir, Engine) {
    let ws = tempfile::tempdir().unwrap();
    fs::create_dir_all(ws.path().join(".orchestration")).unwrap();
    fs::write(ws.path().join(".orchestration/hooks.yaml"), hooks).unwrap();
    let engine = Engine::open(ws.path()).unwrap();
    (ws, engine)
}

fn approval_records(ws: &tempfile::TempDir) -> Vec<Record> {
    let text = chokepoint_core::ledger::chains::all_lines(&chokepoint_core::Sidecar::new(ws.path())).join("\n");
    text.lines().map(|l| Record::from_line(l).unwrap()).filter(|r| r.kind == RecordKind::Approval).collect()
}

#[test]
fn the_engine_configures_its_approvals_from_the_last_good_hooks_yaml() {
    let (ws, engine) = governed("version: 1\napprovals:\n  default: auto-deny\n  timeout_seconds: 9\n  handlers: { plan: human }\n");
    let config = engine.approvals().config();
    assert_eq!((config.default, config.timeout_seconds, config.handlers["plan"].as_str()), (ApprovalRoute::AutoDeny, 9, "human"));
    fs::write(ws.path().join(".orchestration/hooks.yaml"), "version: 1\napprovals:\n  default: sometimes\n").unwrap();
    assert_eq!(engine.reload().len(), 1);
    assert_eq!(engine.approvals().config().default, ApprovalRoute::AutoDeny, "bad configuration never takes effect");
    fs::write(ws.path().join(".orchestration/hooks.yaml"), "version: 1\n").unwrap();
    assert!(engine.reload().is_empty());
    assert_eq!(engine.approvals().config().default, ApprovalRoute::Human);
}

#[test]
fn every_pending_and_its_outcome_is_in_the_ledger_and_the_ledger_verifies() {
    let (ws, engine) = governed("version: 1\napprovals:\n  handlers: { submit: auto-deny }\n");
    let approvals = engine.approvals();
    let request = |kind| OpenRequest {
        session_id: Some("S".into()),
        task_id: Some("T1".into()),
        ..OpenRequest::new(kind, subject(kind), "gatekeeper")
    };
    let rejected = approvals.open(request(PendingKind::ToolCall)).unwrap().pending.id;
    approvals.apply_decision(&rejected, &json!({ "action": "reject", "reason": "use git rm" }), "human").unwrap();
    let edited = approvals.open(request(PendingKind::ScopeExpansion)).unwrap().pending.id;
    approvals.apply_decision(&edited, &json!({ "action": "edit", "paths": ["src/api/login.ts"] }), "human").unwrap();
    approvals.note_unresolved(&edited, "sidebar").unwrap();
    let timed_out =
        approvals.open(OpenRequest { timeout: Some(Duration::from_millis(20)), ..request(PendingKind::Plan) }).unwrap().pending.id;
    let denied = approvals.open(request(PendingKind::Submit)).unwrap().pending.id;
    std::thread::sleep(Duration::from_millis(200));
    engine.tracer().flush().unwrap();

    let records = approval_records(&ws);
    let seen: Vec<(String, String, String, String)> = records
        .iter()
        .map(|r| {
            let d = r.data.as_ref().unwrap();
            let s = |k: &str| d[k].as_str().unwrap_or("-").to_owned();
            (s("pending_id"), s("phase"), s("status"), s("decided_by"))
        })
        .collect();
    let expect = |id: &str, phase: &str, status: &str, by: &str| (id.to_owned(), phase.to_owned(), status.to_owned(), by.to_owned());
    assert_eq!(
        seen,
        [
            expect(&rejected, "open", "open", "-"),
            expect(&rejected, "decision", "rejected", "human"),
            expect(&edited, "open", "open", "-"),
            expect(&edited, "edit", "open", "-"),
            expect(&edited, "warning", "open", "-"),
            expect(&timed_out, "open", "open", "-"),
            expect(&denied, "open", "open", "-"),
            expect(&denied, "decision", "rejected", "auto-deny"),
            expect(&timed_out, "decision", "timed_out", "timeout"),
        ]
    );
    let rejection = &records[1];
    assert_eq!(
        (rejection.session.as_deref(), rejection.task.as_deref(), rejection.tool.as_deref()),
        (Some("S"), Some("T1"), Some("delete_file"))
    );
    let decision = rejection.decision.as_ref().unwrap();
    assert_eq!((decision.decision.as_str(), decision.reason.as_deref()), ("rejected", Some("use git rm")));
    let data = rejection.data.as_ref().unwrap();
    assert_eq!(
        (data["pending_kind"].as_str(), data["triggered_by"].as_str(), data["route"].as_str()),
        (Some("tool_call"), Some("gatekeeper"), Some("human"))
    );
    assert!(
        records[4].data.as_ref().unwrap()["warning"].as_str().unwrap().starts_with("approval handler `sidebar` returned without deciding")
    );
    assert_eq!(records[8].decision.as_ref().unwrap().reason.as_deref(), Some("no decision within 0.02 s"));
    assert!(records.iter().all(|r| r.input_sha256.is_some()), "the subject is kept as its digest");

    let sidecar = engine.sidecar();
    let verification = chokepoint_core::ledger::audit::verify_ledger(sidecar).unwrap();
    assert!(verification.is_intact(), "{:?}", verification.first_problem());
    // Read back through the index, like the sidebar does.
    let filter = chokepoint_core::ledger::index::Filter { kind: Some(RecordKind::Approval), ..Default::default() };
    assert_eq!(engine.tracer().query(&filter).unwrap().len(), 9);
}

#[test]
fn an_ungoverned_workspace_records_nothing_but_its_approvals_work() {
    let ws = tempfile::tempdir().unwrap();
    let engine = Engine::open(ws.path()).unwrap();
    let id = open(engine.approvals(), PendingKind::ToolCall).id;
    assert_eq!(engine.approvals().apply_decision(&id, &json!({ "action": "approve" }), "human").unwrap().pending.status, Status::Approved);
    assert!(!ws.path().join(".orchestration").exists());
    assert_eq!(Route::from_handler("handler:x"), Route::Handler("x".into()));
}
