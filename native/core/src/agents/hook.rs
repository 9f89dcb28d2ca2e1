//! One hook call of another agent, judged: read into our event, run through the workspace's chain
//! (the same gatekeeper, hooks.yaml and ledger as our own agent), and answered in the agent's words.
//! What only an external agent needs happens here: a shell command rewritten to run contained
//! (`chokepoint exec`), the handshake's next step spelled out in a denial, the rules handed over at
//! session start, and a configuration that does not load denying every gate instead of running on
//! defaults.

use crate::agents::input::Call;
use crate::agents::reply::{self, Outcome, Reply, Verdict};
use crate::agents::shell::{exec_command, exec_prefix, program_word, quote};
use crate::engine::judge::Engine;
use crate::model::decision::{Decision, Denial};
use crate::model::event::{Event, EventKind};
use crate::model::external_events::Agent;
use crate::model::governance::{SCOPE_EXPANSION_TOOL, SELECT_INTENT_TOOL};
use crate::scope::tools::ToolRole;
use std::path::PathBuf;

/// What the edge that runs the hook knows and the core does not.
#[derive(Debug, Clone, Default)]
pub struct HookOptions {
    /// The `chokepoint` program, to run an agent's shell commands contained (`<program> exec`) and
    /// to name in the next steps the model is told. `None`: shell commands are judged, not rewritten.
    pub program: Option<PathBuf>,
    /// `CHOKEPOINT_HOOK_DEPTH` of the process: a call raised from inside one of our hooks.
    pub depth: u32,
}

/// Whether the agent obeys a rewritten tool input from this event (docs/agents/protocols.md): all
/// but Cursor from their PreToolUse, Cursor from `preToolUse` only.
pub fn rewrites_input(call: &Call) -> bool {
    match call.agent {
        Agent::Cursor => call.event == "preToolUse",
        _ => call.event != "PermissionRequest" && call.event != "permissionRequest",
    }
}

/// Judges `call` and answers it. Never fails: what goes wrong is a deny of a gate, and a note on
/// anything else.
pub async fn answer(engine: &Engine, call: &Call, options: &HookOptions) -> Reply {
    let Some(kind) = call.kind else { return Reply::default() };
    let info = engine.info();
    // A file that does not load denies every gate, unless its last good version keeps running (a
    // live engine that loaded it before): then the calls are judged by that, and the person is told.
    let last_good = engine.runs_good_configuration();
    let broken = (!info.diagnostics.is_empty()).then(|| {
        let list: Vec<String> = info.diagnostics.iter().map(ToString::to_string).collect();
        let consequence = if last_good {
            "the last good configuration keeps running until it is fixed"
        } else {
            "so no write is allowed until it is fixed"
        };
        format!(
            "Chokepoint's configuration does not load, {consequence}: {}. Fix the file (`chokepoint config check` lists every problem).",
            list.join("; ")
        )
    });
    if let Some(broken) = &broken
        && call.is_gate()
        && !last_good
    {
        return reply::failure(call, broken);
    }
    let mut event = Event::new(kind);
    event.tool = call.tool.clone();
    event.subject = call.subject.clone();
    event.depth = options.depth;
    event.ids.session = call.session.clone();
    event.ids.agent = Some(call.agent.id().to_owned());
    event.ids.model = call.model.clone();
    event.ids.subagent = call.subagent.clone();
    let evaluation = engine.evaluate_async(event, None).await;

    let mut verdict = Verdict::pass();
    verdict.context = evaluation.additional_context.clone();
    verdict.outcome = match &evaluation.decision {
        Decision::Deny(denial) => Outcome::Deny(denial_text(engine, call, denial, options)),
        Decision::Ask { .. } if call.tool.as_deref() == Some(SCOPE_EXPANSION_TOOL) => {
            Outcome::Deny(expansion_text(engine, call, &evaluation.decision, options))
        }
        Decision::Ask { .. } => Outcome::Ask(format!("Chokepoint asks a person: {}", evaluation.decision.ask_reasons().join("; "))),
        Decision::Allow if kind == EventKind::PreToolUse => {
            let input = evaluation.modified.clone();
            match (contained(engine, call, input.as_ref().unwrap_or(&call.subject), options), input) {
                (Some(rewritten), _) => Outcome::Rewrite(rewritten),
                (None, Some(input)) if rewrites_input(call) => Outcome::Rewrite(input),
                // A hook rewrote the call and this agent cannot take a rewrite: the original must not run.
                (None, Some(_)) => Outcome::Deny(format!(
                    "a Chokepoint hook rewrote this call, and {} cannot run a rewritten tool input; the original is refused",
                    call.agent.as_str()
                )),
                (None, None) => Outcome::Pass,
            }
        }
        Decision::Allow => Outcome::Pass,
    };
    if matches!(kind, EventKind::SessionStart | EventKind::PreCompact) {
        verdict.context.insert(0, crate::agents::context::handshake(engine, call, options.program.as_deref()));
    }
    if let Some(broken) = broken {
        verdict.context.insert(0, broken);
    }
    reply::render(call, &verdict)
}

/// The agent's shell command, rewritten to run through `chokepoint exec` for this session, when the
/// tool runs shell commands and the agent obeys a rewrite.
fn contained(engine: &Engine, call: &Call, input: &serde_json::Value, options: &HookOptions) -> Option<serde_json::Value> {
    let program = options.program.as_deref()?;
    if !rewrites_input(call) {
        return None;
    }
    let Some(ToolRole::Shell(field)) = engine.gatekeeper().tool_role(Some(call.agent), call.tool.as_deref()?) else { return None };
    let command = input.get(&field)?.as_str()?;
    let root = engine.sidecar().workspace_root();
    let session = call.session.clone().unwrap_or_else(|| format!("{}:unknown", call.agent.id()));
    // Already ours for this session (the agent sent back the input we gave it): once is enough.
    if command.starts_with(&exec_prefix(program, root, &session)) {
        return None;
    }
    let mut rewritten = input.clone();
    rewritten[field.as_str()] = exec_command(program, root, &session, command).into();
    Some(rewritten)
}

/// A denial as the model should read it: the reason, how to fix it, and for the handshake the exact
/// next step in this agent (our MCP tool, or the command line with this session's id).
fn denial_text(engine: &Engine, call: &Call, denial: &Denial, options: &HookOptions) -> String {
    let mut text = format!("Chokepoint: {}", denial.reason);
    if let Some(remediation) = &denial.remediation {
        text.push_str(". ");
        text.push_str(remediation);
    }
    let handshake = denial.reason.contains(SELECT_INTENT_TOOL) || denial.suggested_tool.as_deref() == Some(SELECT_INTENT_TOOL);
    if handshake {
        text.push_str(&format!(
            " Next step: call the MCP tool `{SELECT_INTENT_TOOL}` of server `chokepoint` with an intent id, or run: {} intent select --workspace {} --session {} <intent_id>",
            program_word(options.program.as_deref()),
            quote(&engine.sidecar().workspace_root().to_string_lossy()),
            quote(call.session.as_deref().unwrap_or("<session>")),
        ));
    }
    text
}

/// A scope expansion an external agent asked for: a person decides it from the command line (or the
/// sidebar, which lists it) and the agent retries after.
fn expansion_text(engine: &Engine, call: &Call, decision: &Decision, options: &HookOptions) -> String {
    let intent = call.subject.get("intent_id").and_then(|v| v.as_str()).unwrap_or("<intent>");
    let paths: Vec<String> = match call.subject.get("paths") {
        Some(serde_json::Value::Array(items)) => items.iter().filter_map(|v| v.as_str()).map(quote).collect(),
        Some(serde_json::Value::String(one)) => vec![quote(one)],
        _ => Vec::new(),
    };
    format!(
        "Chokepoint: {}. A person must approve it; they run: {} intent approve --workspace {} --session {} --intent {} {}. Tell the user, and retry the write once it is approved.",
        decision.ask_reasons().join("; "),
        program_word(options.program.as_deref()),
        quote(&engine.sidecar().workspace_root().to_string_lossy()),
        quote(call.session.as_deref().unwrap_or("<session>")),
        quote(intent),
        paths.iter().map(|p| format!("--path {p}")).collect::<Vec<_>>().join(" ")
    )
}
