//! What we answer another agent, in that agent's format and with its exit codes
//! (docs/agents/protocols.md holds the sources). Every agent blocks only on exit code 2 or on a
//! well-formed JSON deny, and lets anything else through; so a deny is always one of those two, and
//! a failure of ours whose event we cannot even tell is exit 2 with the reason on stderr, which
//! blocks wherever blocking is possible and is shown to the person everywhere else.
//!
//! **Invariant: an external agent's gate never fails open.** Every agent lets a call through when its
//! hook exits with another code than 2, prints what it cannot read or runs past its timeout
//! (docs/agents/protocols.md, docs/agents/clients.md). So a deny is answered only as exit 2 with a
//! reason or as that agent's JSON deny, an `ask` the agent cannot ask (Codex) as a deny naming who
//! approves, and [`failure`] turns every failure of ours on a gate (input we cannot read, a workspace
//! that does not open, a configuration that does not load, a panic, the hook's own deadline before
//! the agent's) into that deny; other events are never blocked on our account.
//!
//! A deny carries its reason and next step in every field the agent shows: `systemMessage` beside
//! Claude Code's, VS Code's, Gemini CLI's and Codex's deny (Codex's on `PreToolUse` only, the one event
//! where the real client was seen to keep a deny carrying it), Copilot CLI's and Cursor's own fields.
//! A contained command's refused writes reach the model on its stderr (`chokepoint exec`: the report's
//! `tool_error`, or, when the kernel refused them and left nothing to list,
//! `agents::shell::confined_failure`). Pinned by the golden protocol tests (`native/cli/tests/hook.rs`:
//! every documented input of six agents in four workspaces, VS Code's through the entries it shares
//! with Copilot CLI; each blocking answer shows the person what it tells the model), the `hook_input`
//! fuzz target, and with the real clients by `tests/agents/reasons.test.js`.

use crate::agents::input::Call;
use crate::model::event::EventKind;
use crate::model::external_events::Agent;
use serde_json::{Map, Value, json};

/// The exit code that blocks in every agent, with the reason on stderr.
pub const EXIT_BLOCK: u8 = 2;

/// What was decided for one call, before it is put in the agent's words.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Nothing to say: the agent goes on as it would without us (its own permission prompts stay).
    Pass,
    /// Goes on with this input instead of the agent's (a contained shell command, a hook's rewrite).
    Rewrite(Value),
    Deny(String),
    /// A person must decide, through the agent's own prompt.
    Ask(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub outcome: Outcome,
    /// Context for the model (the handshake's rules at session start, hooks' additional context).
    pub context: Vec<String>,
    /// Why the input was rewritten, for an agent that shows it with the rewrite (Claude Code); none:
    /// the shell command is contained.
    pub reason: Option<String>,
}

impl Verdict {
    pub fn pass() -> Verdict {
        Verdict { outcome: Outcome::Pass, context: Vec::new(), reason: None }
    }

    pub fn of(outcome: Outcome) -> Verdict {
        Verdict { outcome, ..Verdict::pass() }
    }
}

/// What the hook process prints and how it exits (also what the live engine sends the hook back).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Reply {
    pub stdout: String,
    pub stderr: String,
    pub exit: u8,
}

impl Reply {
    fn json(value: Value) -> Reply {
        Reply { stdout: value.to_string(), ..Reply::default() }
    }

    /// Exit 2, the reason on stderr: blocks a tool, a prompt or a stop in every agent that can block
    /// them, and is shown to the person where it cannot.
    pub fn block(reason: &str) -> Reply {
        Reply { stderr: format!("{reason}\n"), exit: EXIT_BLOCK, ..Reply::default() }
    }

    /// This reply as the body of an HTTP hook's answer (Claude Code's `type: "http"`, always a 200):
    /// what the hook would print. An HTTP hook has no exit code, and its failures let the call
    /// through, so a reply that blocks by its exit code (input whose event we cannot tell) becomes
    /// `continue: false`, which stops the agent wherever it is; a note on stderr becomes a
    /// `systemMessage` the person sees.
    pub fn http_body(&self) -> String {
        let reason = self.stderr.trim();
        if self.exit != 0 {
            return json!({ "continue": false, "stopReason": reason, "decision": "block", "reason": reason }).to_string();
        }
        if self.stdout.trim().is_empty() && !reason.is_empty() {
            return json!({ "systemMessage": reason }).to_string();
        }
        self.stdout.clone()
    }

    /// Whether this reply lets the call through (for the fuzz target and the tests: a gate's reply
    /// must never).
    pub fn blocks(&self, agent: Agent) -> bool {
        if self.exit == EXIT_BLOCK {
            return true;
        }
        if self.exit != 0 {
            return false;
        }
        let Ok(v) = serde_json::from_str::<Value>(&self.stdout) else { return false };
        let said = |key: &str, value: &str| v.pointer(key).and_then(Value::as_str).is_some_and(|s| s == value);
        match agent {
            Agent::ClaudeCode | Agent::Codex | Agent::VsCode => {
                said("/hookSpecificOutput/permissionDecision", "deny")
                    || said("/hookSpecificOutput/decision/behavior", "deny")
                    || said("/decision", "block")
            }
            Agent::GeminiCli => said("/decision", "deny") || said("/decision", "block"),
            Agent::Copilot => said("/permissionDecision", "deny"),
            Agent::Cursor => said("/permission", "deny") || v.get("continue") == Some(&Value::Bool(false)),
        }
    }
}

/// The verdict for `call`, in its agent's words.
pub fn render(call: &Call, verdict: &Verdict) -> Reply {
    let Some(kind) = call.kind else { return Reply::default() };
    match call.agent {
        Agent::ClaudeCode | Agent::Codex | Agent::VsCode => claude(call, kind, verdict),
        Agent::GeminiCli => gemini(call, kind, verdict),
        Agent::Copilot => copilot(kind, verdict),
        Agent::Cursor => cursor(call, kind, verdict),
    }
}

/// Claude Code's format, which Codex and VS Code's agent share: `hookSpecificOutput` with a
/// `permissionDecision` on PreToolUse, a top-level `decision: "block"` on the events that block
/// otherwise, `additionalContext` for the model. Codex refuses a key its event does not list (and
/// then lets the call through), so each event says only what it takes.
fn claude(call: &Call, kind: EventKind, verdict: &Verdict) -> Reply {
    let codex = call.agent == Agent::Codex;
    let mut specific = Map::new();
    specific.insert("hookEventName".into(), Value::String(call.event.clone()));
    let mut out = Map::new();
    let event = call.event.as_str();
    match (event, &verdict.outcome) {
        (_, Outcome::Pass) => {}
        ("PermissionRequest", Outcome::Deny(reason)) => {
            specific.insert("decision".into(), json!({ "behavior": "deny", "message": reason }));
            tell_person(&mut out, call.agent, reason);
        }
        // A person is being asked already; a rewrite was made at PreToolUse.
        ("PermissionRequest", _) => {}
        (_, Outcome::Deny(reason)) if kind == EventKind::PreToolUse => {
            specific.insert("permissionDecision".into(), "deny".into());
            specific.insert("permissionDecisionReason".into(), reason.clone().into());
            out.insert("systemMessage".into(), reason.clone().into());
        }
        // Codex has no prompt of its own for a hook's ask (an `ask` there lets the call through).
        (_, Outcome::Ask(reason)) if kind == EventKind::PreToolUse && codex => {
            let reason =
                format!("{reason}. Codex cannot ask a person from a hook: tell the user what needs approving, and retry once they have.");
            specific.insert("permissionDecision".into(), "deny".into());
            specific.insert("permissionDecisionReason".into(), reason.clone().into());
            out.insert("systemMessage".into(), reason.into());
        }
        (_, Outcome::Ask(reason)) if kind == EventKind::PreToolUse => {
            specific.insert("permissionDecision".into(), "ask".into());
            specific.insert("permissionDecisionReason".into(), reason.clone().into());
        }
        (_, Outcome::Rewrite(input)) if kind == EventKind::PreToolUse => {
            // A rewrite must carry a decision. `allow` also skips the person's own permission
            // prompt, so Claude Code gets it only where it would not ask anyway; Codex takes a
            // rewrite only with `allow`.
            let skip_prompt = codex || matches!(call.permission_mode.as_deref(), Some("bypassPermissions" | "acceptEdits" | "dontAsk"));
            specific.insert("permissionDecision".into(), if skip_prompt { "allow" } else { "ask" }.into());
            if !codex {
                let reason = verdict.reason.as_deref().unwrap_or("Chokepoint runs this command contained to the session's intent scope");
                specific.insert("permissionDecisionReason".into(), reason.into());
            }
            specific.insert("updatedInput".into(), input.clone());
        }
        ("UserPromptSubmit" | "PostToolUse" | "Stop" | "SubagentStop", Outcome::Deny(reason) | Outcome::Ask(reason)) => {
            out.insert("decision".into(), "block".into());
            out.insert("reason".into(), reason.clone().into());
            // A blocked prompt's reason is shown to the person already.
            if event != "UserPromptSubmit" {
                tell_person(&mut out, call.agent, reason);
            }
        }
        // The rest cannot block: the person hears why.
        (_, Outcome::Deny(reason) | Outcome::Ask(reason)) => {
            out.insert("systemMessage".into(), reason.clone().into());
        }
        (_, Outcome::Rewrite(_)) => {}
    }
    if !verdict.context.is_empty() && matches!(event, "SessionStart" | "UserPromptSubmit" | "PostToolUse" | "SubagentStart" | "PreToolUse")
    {
        specific.insert("additionalContext".into(), verdict.context.join("\n\n").into());
    }
    if specific.len() > 1 {
        out.insert("hookSpecificOutput".into(), Value::Object(specific));
    }
    if out.is_empty() { Reply::default() } else { Reply::json(Value::Object(out)) }
}

/// The person's copy of a reason the model is given (`systemMessage`, which Claude Code shows as
/// "<hook> says: <reason>"), on the events where the model's field alone does not reach the person.
/// Codex gets it on `PreToolUse` only, the one event where it was seen to keep the deny (0.169 refuses
/// an unknown key, and a refused answer lets the call through).
fn tell_person(out: &mut Map<String, Value>, agent: Agent, reason: &str) {
    if agent != Agent::Codex {
        out.insert("systemMessage".into(), reason.into());
    }
}

/// Gemini CLI's format: a top-level `decision` (`allow`, `deny`, `ask`), `reason`, and
/// `hookSpecificOutput` with `additionalContext` or, on BeforeTool, the whole rewritten `tool_input`.
fn gemini(call: &Call, kind: EventKind, verdict: &Verdict) -> Reply {
    let mut out = Map::new();
    let blocks = matches!(kind, EventKind::PreToolUse | EventKind::PostToolUse | EventKind::TaskStart | EventKind::BeforeSubmit);
    match &verdict.outcome {
        Outcome::Pass => {}
        // `reason` is what the model reads, `systemMessage` what the person is shown.
        Outcome::Deny(reason) if blocks => {
            out.insert("decision".into(), "deny".into());
            out.insert("reason".into(), reason.clone().into());
            out.insert("systemMessage".into(), reason.clone().into());
        }
        Outcome::Ask(reason) if kind == EventKind::PreToolUse => {
            out.insert("decision".into(), "ask".into());
            out.insert("reason".into(), reason.clone().into());
            out.insert("systemMessage".into(), reason.clone().into());
        }
        Outcome::Ask(reason) if blocks => {
            out.insert("decision".into(), "deny".into());
            out.insert("reason".into(), reason.clone().into());
            out.insert("systemMessage".into(), reason.clone().into());
        }
        // These cannot be blocked; the person still hears why.
        Outcome::Deny(reason) | Outcome::Ask(reason) => {
            out.insert("systemMessage".into(), reason.clone().into());
        }
        Outcome::Rewrite(input) => {
            out.insert("decision".into(), "allow".into());
            out.insert("hookSpecificOutput".into(), json!({ "hookEventName": call.event, "tool_input": input }));
        }
    }
    if !verdict.context.is_empty() && matches!(kind, EventKind::SessionStart | EventKind::TaskStart | EventKind::PostToolUse) {
        let specific = out.entry("hookSpecificOutput").or_insert_with(|| json!({ "hookEventName": call.event }));
        specific["additionalContext"] = verdict.context.join("\n\n").into();
    }
    if out.is_empty() { Reply::default() } else { Reply::json(Value::Object(out)) }
}

/// Copilot CLI's format: only `preToolUse` decides, with `permissionDecision` (`deny`, `ask`) or a
/// rewrite in `modifiedArgs` with `allow`; a plain allow prints nothing (some versions read any object
/// as a deny).
fn copilot(kind: EventKind, verdict: &Verdict) -> Reply {
    match (kind, &verdict.outcome) {
        (EventKind::PreToolUse, Outcome::Deny(reason)) => {
            Reply::json(json!({ "permissionDecision": "deny", "permissionDecisionReason": reason }))
        }
        (EventKind::PreToolUse, Outcome::Ask(reason)) => {
            Reply::json(json!({ "permissionDecision": "ask", "permissionDecisionReason": reason }))
        }
        // Without `allow`, Copilot CLI asks a person about the rewritten call again, and denies it
        // when nobody can answer (headless): seen with 1.0.102 (tests/agents/governed.test.js).
        (EventKind::PreToolUse, Outcome::Rewrite(input)) => Reply::json(json!({ "permissionDecision": "allow", "modifiedArgs": input })),
        _ => Reply::default(),
    }
}

/// Cursor's format: `permission` (`allow`, `deny`, `ask`) with `user_message` and `agent_message`
/// (what the model reads) on the before-events, `updated_input` on `preToolUse`, `continue: false`
/// to stop a prompt, `followup_message` to send the agent back to work, `additional_context` at
/// session start and after a tool.
fn cursor(call: &Call, kind: EventKind, verdict: &Verdict) -> Reply {
    let context = (!verdict.context.is_empty()).then(|| verdict.context.join("\n\n"));
    match (kind, &verdict.outcome) {
        (EventKind::PreToolUse, Outcome::Deny(reason)) => {
            Reply::json(json!({ "permission": "deny", "user_message": reason, "agent_message": reason }))
        }
        (EventKind::PreToolUse, Outcome::Ask(reason)) => {
            Reply::json(json!({ "permission": "ask", "user_message": reason, "agent_message": reason }))
        }
        (EventKind::PreToolUse, Outcome::Rewrite(input)) if call.event == "preToolUse" => {
            Reply::json(json!({ "permission": "allow", "updated_input": input }))
        }
        (EventKind::TaskStart, Outcome::Deny(reason)) if call.event == "beforeSubmitPrompt" => {
            Reply::json(json!({ "continue": false, "user_message": reason }))
        }
        (EventKind::BeforeSubmit, Outcome::Deny(reason)) if call.event == "stop" || call.event == "subagentStop" => {
            Reply::json(json!({ "followup_message": reason }))
        }
        (EventKind::SessionStart | EventKind::PostToolUse, _) if context.is_some() && call.event != "afterFileEdit" => {
            Reply::json(json!({ "additional_context": context }))
        }
        _ => Reply::default(),
    }
}

/// The reply when we could not judge `call` (our own failure): a gate is denied with `reason`, in
/// the form that blocks in its agent; any other event goes on, and its person hears why.
pub fn failure(call: &Call, reason: &str) -> Reply {
    if call.is_gate() {
        return render(call, &Verdict::of(Outcome::Deny(reason.to_owned())));
    }
    // Not a gate: never block on our account. stderr of a successful hook is shown to the person
    // (in verbose or debug output) by every agent, and to nobody as a decision.
    Reply { stderr: format!("chokepoint: {reason}\n"), ..Reply::default() }
}

/// The reply when we could not judge a call that either of two agents may have made and we cannot
/// tell which (VS Code's agent and Copilot CLI run the same `.github/hooks` entries, and the input
/// did not show whose it is): each agent's deny in one JSON object, which each reads by its own
/// keys (VS Code's agent only `hookSpecificOutput`, Copilot CLI the top-level `permissionDecision`).
pub fn failure_to_either(first: &Call, second: &Call, reason: &str) -> Reply {
    let (one, two) = (failure(first, reason), failure(second, reason));
    let object = |reply: &Reply| match serde_json::from_str::<Value>(&reply.stdout) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    };
    match (object(&one), object(&two)) {
        (Some(mut merged), Some(other)) => {
            for (key, value) in other {
                merged.entry(key).or_insert(value);
            }
            Reply::json(Value::Object(merged))
        }
        // A gate for one of them only: a JSON deny would not block the other; exit 2 blocks both.
        (Some(_), None) | (None, Some(_)) => Reply::block(reason),
        (None, None) => one,
    }
}
