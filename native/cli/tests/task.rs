//! Per-type agent allowlists (`task_types.<type>.agents`) enforced where a task is claimed, with real
//! processes in a real workspace: `chokepoint task claim` from a scheduler or a script, and an external
//! agent selecting an intent whose `task_type` has an allowlist (Claude Code's hook, judging alone),
//! refused with the same text. Verdicts are read back from the ledger on disk.

mod common;

use common::{chokepoint, records, stderr, verify};
use serde_json::{Value, json};
use std::path::Path;

const HOOKS: &str = "version: 1
task_types:
  product:
    agents: [implementer-1, codex]
  docs:
    description: open to every agent
";

const INTENTS: &str = "version: 1
active_intents:
  - id: INT-PRODUCT
    name: Checkout flow
    status: IN_PROGRESS
    task_type: product
    owned_scope: ['src/**']
  - id: INT-DOCS
    name: User guide
    status: IN_PROGRESS
    task_type: docs
    owned_scope: ['docs/**']
  - id: INT-TYPO
    name: A type nobody declared
    status: IN_PROGRESS
    task_type: prodcut
    owned_scope: ['lib/**']
";

const REFUSAL: &str =
    "may not work on tasks of type `product`; the agents allowed are implementer-1, codex (hooks.yaml `task_types.product.agents`)";

/// Claude Code selecting an intent through the MCP tool, as its PreToolUse hook sees the call,
/// answered by a hook process judging alone. Returns the permission decision and its reason, or
/// `None` when the call goes through.
fn claude_selects(ws: &Path, intent: &str) -> Option<(String, String)> {
    let input = json!({
        "session_id": "S1",
        "cwd": ws,
        "hook_event_name": "PreToolUse",
        "tool_name": "mcp__chokepoint__select_active_intent",
        "tool_input": { "intent_id": intent },
        "tool_use_id": "t1",
    });
    let out = common::claude_hook(ws, &input);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let answer: Value = serde_json::from_slice(&out.stdout).ok()?;
    let specific = &answer["hookSpecificOutput"];
    let decision = specific["permissionDecision"].as_str()?;
    (decision != "allow").then(|| (decision.to_owned(), specific["permissionDecisionReason"].as_str().unwrap().to_owned()))
}

#[test]
fn a_claim_outside_the_types_allowlist_is_refused_and_every_verdict_is_recorded() {
    let ws = common::workspace(HOOKS, INTENTS);
    let ws = ws.path();

    let out = chokepoint(ws, &["task", "claim", "--agent", "reviewer-1", "--task-type", "product", "--task", "T-1"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out), format!("refused: agent `reviewer-1` {REFUSAL}\n"));

    let out = chokepoint(ws, &["task", "claim", "--agent", "implementer-1", "--task-type", "product", "--task", "T-1"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        common::stdout(&out),
        "claimed: agent `implementer-1` works on task `T-1` of type `product` (recorded in the trace ledger)\n"
    );
    let out = chokepoint(ws, &["task", "claim", "--agent", "reviewer-1", "--task-type", "docs"]);
    assert_eq!(out.status.code(), Some(0), "a type without `agents` is open to every agent: {}", stderr(&out));

    let out = chokepoint(ws, &["task", "claim", "--agent", "implementer-1", "--task-type", "prodcut"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out), "error: unknown task type `prodcut`; the declared task types are docs, product\n");

    let seen: Vec<(Value, Value, Value, Value)> = records(ws)
        .into_iter()
        .map(|r| (r["agent"].clone(), r["task"].clone(), r["decision"]["decision"].clone(), r["data"]["task_type"].clone()))
        .collect();
    assert_eq!(
        seen,
        [
            (json!("reviewer-1"), json!("T-1"), json!("refused"), json!("product")),
            (json!("implementer-1"), json!("T-1"), json!("claimed"), json!("product")),
            (json!("reviewer-1"), Value::Null, json!("claimed"), json!("docs")),
        ],
        "an undeclared type claims nothing and is not recorded"
    );
    assert_eq!(records(ws)[0]["decision"]["reason"], format!("agent `reviewer-1` {REFUSAL}"));
    verify(ws);
}

#[test]
fn an_external_agent_selecting_an_intent_of_a_type_meets_the_same_allowlist() {
    let ws = common::workspace(HOOKS, INTENTS);
    let ws = ws.path();

    let (decision, reason) = claude_selects(ws, "INT-PRODUCT").expect("claude is not on product's list");
    assert_eq!(decision, "deny");
    assert_eq!(
        reason,
        format!(
            "Chokepoint: agent `claude` {REFUSAL}. Intent `INT-PRODUCT` is a task of type `product`. Select an intent this agent \
             may work on (available intents: INT-DOCS (User guide)), or ask a person to add the agent to the type's `agents` in hooks.yaml."
        ),
        "the same refusal as `task claim`, and the intents it may select"
    );
    let out = chokepoint(ws, &["intent", "list", "--json"]);
    assert!(!String::from_utf8(out.stdout).unwrap().contains("claude:S1"), "no lease was taken");

    let (decision, reason) = claude_selects(ws, "INT-TYPO").expect("an undeclared type opens nothing");
    assert_eq!(decision, "deny");
    assert!(reason.starts_with("Chokepoint: unknown task type `prodcut`; the declared task types are docs, product"), "{reason}");

    assert_eq!(claude_selects(ws, "INT-DOCS"), None, "docs is open to every agent");

    // The terminal's handshake is judged by the same gatekeeper.
    let out = chokepoint(ws, &["intent", "select", "--session", "codex:S2", "--agent", "codex", "INT-PRODUCT"]);
    assert!(out.status.success(), "codex is on product's list: {}", stderr(&out));
    let out = chokepoint(ws, &["intent", "select", "--session", "gemini:S3", "--agent", "gemini", "INT-PRODUCT"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains(&format!("agent `gemini` {REFUSAL}")), "{}", stderr(&out));
}
