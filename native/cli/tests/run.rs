//! `chokepoint run BeforeMerge|AfterMerge|AfterSubmit` as a CI job runs it: real processes in a real
//! workspace, its hooks real commands and builtins, its records read back from the ledger on disk and
//! the chain verified by `chokepoint trace verify`.

mod common;

use common::{chokepoint, program, records, stderr, stdout, verify};
use serde_json::{Value, json};
use std::fs;
use std::process::Command;

/// Three task types: `product` gated by QA (the test suite, a builtin that fails here) after a lint
/// that passes, with an architecture review after it and a write-only rule that never applies on a
/// merge; `infrastructure` with no merge-side hooks at all; `review`, whose gate asks a person.
/// The project gates every other type's merge with `project-gate`.
const POSIX_HOOKS: &str = r#"version: 1
hooks:
  BeforeMerge:
    - name: project-gate
      command: [sh, -c, "touch project-gate-ran"]
task_types:
  product:
    agents: [implementer-1]
    hooks:
      BeforeMerge:
        - name: lint
          command: [sh, -c, "exit 0"]
        - name: flaky-notify
          command: [sh, -c, "echo 'slack is down' >&2; exit 1"]
        - name: qa
          builtin: run_tests
          command: [sh, -c, "echo '1 of 40 tests failed: login locks out'; exit 1"]
        - name: architecture
          command: [sh, -c, "touch architecture-ran"]
        - name: writes-only
          tool: write_to_file
          deny: { reason: never on a merge }
      AfterMerge:
        - name: announce
          command: [sh, -c, "touch announced"]
  infrastructure:
    hooks:
      BeforeMerge: []
  review:
    hooks:
      BeforeMerge:
        - name: sign-off
          ask: a maintainer signs off on reviews
  docs:
    description: no hooks of its own
"#;

/// How a run shows the failing suite's command: POSIX's, or [`hooks`]'s cmd line on Windows.
const POSIX_QA: &str = "sh -c echo '1 of 40 tests failed: login locks out'; exit 1";
fn qa_command() -> &'static str {
    if cfg!(windows) { "cmd /d /s /c echo 1 of 40 tests failed: login locks out& exit 1" } else { POSIX_QA }
}

/// The hooks of this platform: [`POSIX_HOOKS`], with each `sh` line in cmd on Windows (line for line,
/// so a location in the file is the same).
fn hooks() -> String {
    if cfg!(not(windows)) {
        return POSIX_HOOKS.to_owned();
    }
    [
        (r#"[sh, -c, "touch project-gate-ran"]"#, r#"[cmd, /d, /s, /c, "type nul > project-gate-ran"]"#),
        (r#"[sh, -c, "exit 0"]"#, r#"[cmd, /d, /s, /c, "exit 0"]"#),
        (r#"[sh, -c, "echo 'slack is down' >&2; exit 1"]"#, r#"[cmd, /d, /s, /c, "echo slack is down>&2& exit 1"]"#),
        (
            r#"[sh, -c, "echo '1 of 40 tests failed: login locks out'; exit 1"]"#,
            r#"[cmd, /d, /s, /c, "echo 1 of 40 tests failed: login locks out& exit 1"]"#,
        ),
        (r#"[sh, -c, "touch architecture-ran"]"#, r#"[cmd, /d, /s, /c, "type nul > architecture-ran"]"#),
        (r#"[sh, -c, "touch announced"]"#, r#"[cmd, /d, /s, /c, "type nul > announced"]"#),
    ]
    .iter()
    .fold(POSIX_HOOKS.to_owned(), |text, (sh, cmd)| text.replace(sh, cmd))
}

const INTENTS: &str = "version: 1
active_intents:
  - id: INT-001
    name: Harden the login flow
    status: IN_PROGRESS
    owned_scope: ['src/**']
";

/// Every line with its durations blanked: they are the only part of a run that changes.
fn without_durations(text: &str) -> String {
    text.lines()
        .map(|l| match l.rfind("  ") {
            Some(at) if l.ends_with(" ms") => l[..at].trim_end().to_owned(),
            _ => l.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn before_merge_fails_on_a_failing_gatekeeper_of_one_type_and_accepts_a_type_without_any() {
    let ws = common::workspace(&hooks(), INTENTS);
    let ws = ws.path();

    let out = chokepoint(ws, &["run", "BeforeMerge", "--task-type", "product", "--task", "T-7", "--intent", "INT-001"]);
    assert_eq!(out.status.code(), Some(1), "a failing gatekeeper fails the run: {}", stderr(&out));
    assert_eq!(
        without_durations(&stdout(&out)),
        "BeforeMerge for task `T-7` of type `product` (intent `INT-001`): FAILURE
  SUCCESS  lint
  SKIP     flaky-notify
           failed: exited with status 1: slack is down; it fails open, so it was recorded and skipped (`failure: closed` or `priority: critical` in hooks.yaml makes it gate)
  FAILURE  qa
           `sh -c echo '1 of 40 tests failed: login locks out'; exit 1` failed
           remediation: The tests failed (`sh -c echo '1 of 40 tests failed: login locks out'; exit 1` exited with status 1). Fix the failures, then complete again.

             1 of 40 tests failed: login locks out
  SKIP     architecture
           not run: an earlier hook failed, which ends the chain
  SKIP     writes-only
           does not apply: its `tool` or `paths` matcher matches nothing on a merge-side event
recorded in the trace ledger (.orchestration/trace/)"
            .replace(POSIX_QA, qa_command()),
    );
    assert!(!ws.join("architecture-ran").exists(), "nothing after the failing gatekeeper runs");
    assert!(!ws.join("project-gate-ran").exists(), "the type's hooks replace the project's");

    let out = chokepoint(ws, &["run", "BeforeMerge", "--task-type", "infrastructure", "--task", "T-8"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "no before-merge hooks for task type infrastructure: accepted for task `T-8`\n");
    assert!(!ws.join("project-gate-ran").exists(), "`BeforeMerge: []` exempts the type from the project's gate");

    let out = chokepoint(ws, &["run", "BeforeMerge", "--task-type", "docs"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("BeforeMerge of type `docs`: SUCCESS\n  SUCCESS  project-gate"), "{}", stdout(&out));
    assert!(ws.join("project-gate-ran").exists(), "a type without merge hooks of its own runs the project's");

    let out = chokepoint(ws, &["run", "BeforeMerge", "--task-type", "review"]);
    assert_eq!(out.status.code(), Some(1), "nobody answers an ask on the merge side: {}", stdout(&out));
    assert!(
        without_durations(&stdout(&out))
            .contains("  FAILURE  sign-off\n           asks for a person's decision: a maintainer signs off on reviews\n"),
        "{}",
        stdout(&out)
    );

    let out = chokepoint(ws, &["run", "AfterMerge", "--task-type", "product", "--task", "T-7"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(ws.join("announced").exists());
    let out = chokepoint(ws, &["run", "AfterSubmit", "--task-type", "product"]);
    assert_eq!(stdout(&out), "no after-submit hooks for task type product: nothing to run\n");
    verify(ws);
}

#[test]
fn json_is_one_document_with_every_hook() {
    let ws = common::workspace(&hooks(), INTENTS);
    let ws = ws.path();
    let out = chokepoint(ws, &["run", "BeforeMerge", "--task-type", "product", "--task", "T-7", "--intent", "INT-001", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let mut doc: Value = serde_json::from_slice(&out.stdout).expect("stdout is one JSON document");
    for hook in doc["hooks"].as_array_mut().unwrap() {
        let took = hook["durationNs"].take();
        assert_eq!(took.as_u64().is_some_and(|ns| ns > 0), hook["outcome"].is_string(), "{hook}: a hook that ran took time");
        if let Some(remediation) = hook["remediation"].as_str() {
            assert!(remediation.contains("1 of 40 tests failed"), "{remediation}");
            hook["remediation"] = json!("...");
        }
        if let Some(reason) = hook["reason"].as_str().filter(|r| r.contains("slack")) {
            assert!(reason.starts_with("failed: exited with status 1"), "{reason}");
            hook["reason"] = json!("...");
        }
    }
    let qa = &format!("`{}` failed", qa_command());
    let skipped = |reason: &str| json!({ "status": "SKIP", "outcome": null, "reason": reason, "remediation": null, "durationNs": null });
    let mut expected = json!({
        "event": "BeforeMerge",
        "taskType": "product",
        "task": "T-7",
        "intent": "INT-001",
        "status": "failure",
        "decision": "deny",
        "reason": qa,
        "autoAccepted": false,
        "hooks": [
            { "name": "lint", "status": "SUCCESS", "outcome": "allow", "reason": null, "remediation": null, "durationNs": null },
            { "name": "flaky-notify", "status": "SKIP", "outcome": "failed_open", "reason": "...", "remediation": null, "durationNs": null },
            { "name": "qa", "status": "FAILURE", "outcome": "deny", "reason": qa, "remediation": "...", "durationNs": null },
            skipped("not run: an earlier hook failed, which ends the chain"),
            skipped("does not apply: its `tool` or `paths` matcher matches nothing on a merge-side event"),
        ],
    });
    expected["hooks"][3]["name"] = json!("architecture");
    expected["hooks"][4]["name"] = json!("writes-only");
    assert_eq!(doc, expected);

    let out = chokepoint(ws, &["run", "BeforeMerge", "--task-type", "infrastructure", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((&doc["status"], &doc["autoAccepted"], &doc["hooks"]), (&json!("success"), &json!(true), &json!([])));
}

#[test]
fn every_run_is_recorded_with_its_task_intent_and_type_and_the_chain_verifies() {
    let ws = common::workspace(&hooks(), INTENTS);
    let ws = ws.path();
    assert_eq!(
        chokepoint(ws, &["run", "BeforeMerge", "--task-type", "product", "--task", "T-7", "--intent", "INT-001"]).status.code(),
        Some(1)
    );
    assert_eq!(chokepoint(ws, &["run", "BeforeMerge", "--task-type", "infrastructure", "--task", "T-8"]).status.code(), Some(0));
    let records = records(ws);
    assert_eq!(records.len(), 2, "{records:#?}");
    let failed = &records[0];
    assert_eq!(
        (&failed["kind"], &failed["event"], &failed["task"], &failed["intent"], &failed["data"]),
        (&json!("lifecycle"), &json!("BeforeMerge"), &json!("T-7"), &json!("INT-001"), &json!({ "task_type": "product" }))
    );
    assert_eq!(failed["decision"]["decision"], "deny");
    let hooks: Vec<(&str, &str)> = failed["decision"]["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["name"].as_str().unwrap(), h["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(hooks, [("lint", "allow"), ("flaky-notify", "failed_open"), ("qa", "deny")]);
    let accepted = &records[1];
    assert_eq!(
        (&accepted["task"], &accepted["decision"]["decision"], &accepted["data"]["task_type"]),
        (&json!("T-8"), &json!("allow"), &json!("infrastructure"))
    );
    verify(ws);
}

#[test]
fn our_own_failures_exit_2_with_a_reason_and_never_report_success() {
    let ws = common::workspace(&hooks(), INTENTS);
    let ws = ws.path();

    // An undeclared task type: a typo must not fall through to the project's hooks, or to none.
    let out = chokepoint(ws, &["run", "BeforeMerge", "--task-type", "prodcut"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out), "error: unknown task type `prodcut`; the declared task types are docs, infrastructure, product, review\n");
    assert_eq!(stdout(&out), "");
    let out = chokepoint(ws, &["run", "BeforeMerge", "--task-type", "product", "--intent", "INT-404"]);
    assert_eq!((out.status.code(), stderr(&out)), (Some(2), "error: there is no intent `INT-404`; the intents are INT-001\n".to_owned()));
    let out = chokepoint(ws, &["run", "PreToolUse", "--task-type", "product"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("`PreToolUse` is not a merge-side event; the merge-side events are BeforeMerge, AfterMerge, AfterSubmit")
    );

    // Bad configuration: named by file, line and column, and the defaults do not accept the merge.
    let broken = hooks().replace("    agents: [implementer-1]\n", "    agent: [implementer-1]\n");
    fs::write(ws.join(".orchestration/hooks.yaml"), &broken).unwrap();
    let out = chokepoint(ws, &["run", "BeforeMerge", "--task-type", "infrastructure"]);
    assert_eq!(out.status.code(), Some(2));
    let file = ws.join(".orchestration").join("hooks.yaml");
    assert!(
        stderr(&out).starts_with(&format!("error: {}:8:5: task_types.product: unknown field `agent`", file.display())),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).ends_with("error: the configuration does not load; fix it first (`chokepoint config check`)\n"));
    assert_eq!(stdout(&out), "", "nothing that reads like a verdict");
    let out = chokepoint(ws, &["run", "BeforeMerge", "--task-type", "infrastructure", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((&doc["status"], &doc["diagnostics"][0]["line"], &doc["diagnostics"][0]["column"]), (&json!("error"), &json!(8), &json!(5)));
    fs::write(ws.join(".orchestration/hooks.yaml"), hooks()).unwrap();

    // A ledger that cannot be written: the run is not run, since it could not be recorded.
    let lock = ws.join(".orchestration/agent_trace.lock");
    let _ = fs::remove_file(&lock);
    fs::create_dir(&lock).unwrap();
    let out = chokepoint(ws, &["run", "BeforeMerge", "--task-type", "docs"]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(stderr(&out).starts_with("error: cannot record the run: cannot open the trace ledger"), "{}", stderr(&out));
    assert!(!ws.join("project-gate-ran").exists(), "no hook ran");

    // From inside a running hook the chain would not run: refused, not an empty pass.
    fs::remove_dir(&lock).unwrap();
    let out = Command::new(program())
        .args(["run", "BeforeMerge", "--task-type", "docs", "--workspace", ws.to_str().unwrap()])
        .env("CHOKEPOINT_HOOK_DEPTH", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("started by a hook while a chain ran"), "{}", stderr(&out));
}
