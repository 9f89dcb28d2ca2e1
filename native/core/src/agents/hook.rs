//! One hook call of another agent, judged: read into our event, run through the workspace's chain
//! (the same gatekeeper, hooks.yaml and ledger as our own agent), and answered in the agent's words.
//! What only an external agent needs happens here: a shell command rewritten to run contained
//! (`chokepoint exec`), the handshake's next step spelled out in a denial, the rules handed over at
//! session start, a configuration that does not load denying every gate instead of running on
//! defaults, and a hook's `ask` about a tool call taken to a person (`ask_person`): a Pending the
//! live engine shows (VS Code's sidebar, `chokepoint approvals`) while the hook waits, then the
//! configured fallback (`approvals.fallback`); a hook judging alone relays it to another worktree's
//! live engine (`relay.rs`), else, with a team's database, shares it with the team's machines and
//! waits for their answer until its deadline (`approvals::team`).
//!
//! **Invariant: an external agent's ask goes to a person, never to a default yes** (`ask_person`). A
//! hook's `ask` on a tool call (not `scope_expansion_request`, which has its own flow, nor a
//! `PermissionRequest`, where the agent asks its person already) opens a `tool_call` Pending through
//! `Engine::open_agent_ask` (`engine/settle.rs`) and waits for it until the hook's deadline, which
//! travels in the request (`HookRequest::deadline_ms`), less `serve::call::ASK_MARGIN` (1 s); the wait
//! brings the Pending's own deadline forward to that, so an unanswered one times out (recorded)
//! instead of lingering. Then `Engine::settle`: approved runs the call as the agent made it (a shell
//! command still contained); modified runs the person's input after the chain judged it again (a
//! deny, or another hook's unanswered ask, refuses it; an agent that cannot take a rewrite refuses
//! it); rejected is a deny carrying the person's reason; timed out is `approvals.fallback`: `deny` (the
//! default: nobody decided, and how to approve next time) or `agent` (the agent's own prompt; Codex
//! has none, so a deny there too). A failure to open or record one refuses the call.
//!
//! **Sessions and sub-agents.** An external agent's session is `<agent>:<its session id>`, so two
//! agents' ids never meet in the lease table; a sub-agent acts in its parent's session (under its
//! intent) and is recorded apart (`data.subagent`) where the input marks it (`input.rs` says how each
//! client does; pinned with the real clients by `tests/agents/governed.test.js`). The hook's workspace
//! is the nearest governed folder at or above the agent's project folder or `cwd`, so an agent started
//! below it is judged by it. Its shell commands are rewritten to `chokepoint exec --session <session>`
//! (the same containment as our agent's), and a command already wrapped for this session is not
//! wrapped again. A turn that the completion gate lets end yields the session's lease
//! (`Gatekeeper::yield_turn`; why in `scope/leases.rs`).
//!
//! A deny says its reason and next step (the remediation, and the suggested tool with where this agent
//! finds it: `denial_text`) in every field the agent gives its model and its person (`reply.rs`).

use crate::agents::input::Call;
use crate::agents::relay::{AskRelay, Relayed};
use crate::agents::reply::{self, Outcome, Reply, Verdict};
use crate::agents::shell::{Syntax, exec_command, exec_prefix, is_own_handshake, program_word, quote};
use crate::approvals::config::AskFallback;
use crate::approvals::{Ask, Next, Settlement};
use crate::engine::engine::Engine;
use crate::hooks::chain::Evaluation;
use crate::model::decision::{Asked, Decision, Denial};
use crate::model::event::{Event, EventKind};
use crate::model::external_events::Agent;
use crate::model::governance::{SCOPE_EXPANSION_TOOL, SELECT_INTENT_TOOL};
use crate::scope::tools::ToolRole;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// What the edge that runs the hook knows and the core does not.
#[derive(Debug, Clone, Default)]
pub struct HookOptions {
    /// The `chokepoint` program, to run an agent's shell commands contained (`<program> exec`) and
    /// to name in the next steps the model is told. `None`: shell commands are judged, not rewritten.
    pub program: Option<PathBuf>,
    /// `CHOKEPOINT_HOOK_DEPTH` of the process: a call raised from inside one of our hooks.
    pub depth: u32,
    /// Until when a person may decide an ask about this call: set by the live engine (the hook's
    /// deadline less a margin), where the Pending is seen; `None` when the hook judges alone, where
    /// nobody could see it, so the configured fallback answers at once.
    pub decide_by: Option<Instant>,
    /// Where an ask goes when `decide_by` is `None` (the hook judges alone): the live engine of
    /// another worktree of the repository, set by `chokepoint hook` (`serve::relay`). `None`: the
    /// fallback answers at once.
    pub relay: Option<Arc<dyn AskRelay>>,
    /// Until when a person on any machine of the team may decide an ask when this hook judges alone
    /// and no other worktree's live engine took it: with a team's database configured, the Pending
    /// is shared there and waited for until then (`approvals::team`). `None`: not shared.
    pub team_until: Option<Instant>,
}

/// Whether the agent obeys a rewritten tool input from this event (docs/agents/protocols.md): all
/// but Cursor from their PreToolUse, Cursor from `preToolUse` only.
pub fn rewrites_input(call: &Call) -> bool {
    match call.agent {
        Agent::Cursor => call.event == "preToolUse",
        _ => !asking_already(call),
    }
}

/// Whether the agent is asking its person already: the permission step of a call whose PreToolUse
/// was judged (Claude Code's and Codex's `PermissionRequest`, Copilot CLI's `permissionRequest`).
fn asking_already(call: &Call) -> bool {
    call.event == "PermissionRequest" || call.event == "permissionRequest"
}

/// Judges `call` and answers it. Never fails: what goes wrong is a deny of a gate, and a note on
/// anything else.
pub async fn answer(engine: &Arc<Engine>, call: &Call, options: &HookOptions) -> Reply {
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
    let evaluation = engine.evaluate_async(event_of(call, kind, call.subject.clone(), options), None).await;

    let mut verdict = Verdict::pass();
    verdict.context = evaluation.additional_context.clone();
    verdict.outcome = match &evaluation.decision {
        Decision::Deny(denial) => Outcome::Deny(denial_text(engine, call, denial, options)),
        Decision::Ask { .. } if call.tool.as_deref() == Some(SCOPE_EXPANSION_TOOL) => {
            Outcome::Deny(expansion_text(engine, call, &evaluation.decision, options))
        }
        Decision::Ask { asks } if call.is_gate() && !asking_already(call) => {
            ask_person(engine, call, &evaluation, asks, options, &mut verdict).await
        }
        Decision::Ask { .. } => Outcome::Ask(format!("Chokepoint asks a person: {}", evaluation.decision.ask_reasons().join("; "))),
        Decision::Allow if kind == EventKind::PreToolUse => {
            allowed(engine, call, evaluation.modified.clone(), options, "a Chokepoint hook")
        }
        Decision::Allow => Outcome::Pass,
    };
    // A turn its completion gate let end: the session's lease yields, so the next chat may take the
    // intent at once while this one is idle (it renews it at its next call if nobody did).
    if kind == EventKind::BeforeSubmit
        && matches!(verdict.outcome, Outcome::Pass)
        && call.subagent.is_none()
        && crate::model::external_events::ends_turn(call.agent, &call.event)
        && let Some(session) = call.session.as_deref()
        && let Err(e) = engine.gatekeeper().yield_turn(session)
    {
        verdict.context.push(format!(
            "Chokepoint could not free this session's intent at the end of its turn ({e}); it is free when its lease lapses"
        ));
    }
    if matches!(kind, EventKind::SessionStart | EventKind::PreCompact) {
        verdict.context.insert(0, crate::agents::context::handshake(engine, call, options.program.as_deref()));
        if let Some(brain) = crate::agents::context::shared_brain(engine, kind) {
            verdict.context.insert(1, brain);
        }
    }
    if let Some(broken) = broken {
        verdict.context.insert(0, broken);
    }
    reply::render(call, &verdict)
}

/// The event of `call` with `subject` as its tool input (the agent's, or a person's modification).
fn event_of(call: &Call, kind: EventKind, subject: Value, options: &HookOptions) -> Event {
    let mut event = Event::new(kind);
    event.tool = call.tool.clone();
    event.subject = subject;
    event.depth = options.depth;
    event.ids.session = call.session.clone();
    event.ids.agent = Some(call.agent.id().to_owned());
    event.ids.model = call.model.clone();
    event.ids.subagent = call.subagent.clone();
    event.base = call.base();
    event
}

/// An allowed tool call: as the agent made it, or with `modified` as its input (a hook's rewrite, a
/// person's modification, made by `who`), and a shell command contained either way.
fn allowed(engine: &Engine, call: &Call, modified: Option<Value>, options: &HookOptions, who: &str) -> Outcome {
    match (contained(engine, call, modified.as_ref().unwrap_or(&call.subject), options), modified) {
        (Some(Ok(rewritten)), _) => Outcome::Rewrite(rewritten),
        (Some(Err(refused)), _) => Outcome::Deny(refused),
        (None, Some(input)) if rewrites_input(call) => Outcome::Rewrite(input),
        // The call was rewritten and this agent cannot take a rewrite: the original must not run.
        (None, Some(_)) => Outcome::Deny(format!(
            "{who} rewrote this call, and {} cannot run a rewritten tool input; the original is refused",
            call.agent.as_str()
        )),
        (None, None) => Outcome::Pass,
    }
}

/// A hook asked about a tool call: the Pending is opened on this engine (its subject names the
/// agent, the session and the tool input, for VS Code's Approvals and `chokepoint approvals`) and
/// waited for until `options.decide_by`; undecided then, it times out (recorded, so it does not
/// linger) and the configured fallback answers. A hook judging alone has nobody to show it to here:
/// it relays the ask to another worktree's live engine when one runs (`options.relay`), and applies
/// that Pending's settlement as its own; else, or when the relay fails, the fallback answers at
/// once. Whatever fails here refuses the call (or hands it to the fallback): it never allows.
async fn ask_person(
    engine: &Arc<Engine>,
    call: &Call,
    evaluation: &Evaluation,
    asks: &[Asked],
    options: &HookOptions,
    verdict: &mut Verdict,
) -> Outcome {
    let reasons = evaluation.decision.ask_reasons().join("; ");
    let fallback = engine.approvals().config().fallback;
    let input = evaluation.modified.clone().unwrap_or_else(|| call.subject.clone());
    let ask = Ask {
        event: EventKind::PreToolUse,
        tool: call.tool.clone(),
        paths: written(engine, call, &input, options),
        input,
        asked: asks.to_vec(),
        session_id: call.session.clone(),
        task_id: None,
        review: false,
    };
    // The Pending, its settlement, how long it waited, and the workspace whose live engine held it.
    let (id, settlement, wait, held_at) = match (options.decide_by, &options.relay) {
        (Some(decide_by), _) => match ask_here(engine, call, ask, decide_by, false, options).await {
            Ok(held) => held,
            Err(outcome) => return outcome,
        },
        (None, relay) => {
            let relayed = match relay {
                // The relay blocks on a socket until a person decides: off this runtime's thread.
                Some(relay) => {
                    let (relay, asker, ask) = (Arc::clone(relay), Arc::clone(engine), ask.clone());
                    let agent = call.agent;
                    match tokio::task::spawn_blocking(move || relay.relay(&asker, ask, agent)).await {
                        Ok(relayed) => relayed,
                        Err(e) => Relayed::Failed(e.to_string()),
                    }
                }
                None => Relayed::Nobody,
            };
            match relayed {
                Relayed::Settled { id, settlement, waited, at } => (id, *settlement, waited, at),
                // No live engine here: the team's machines, when a database is shared.
                Relayed::Nobody if options.team_until.is_some() && engine.team().db().is_some() => {
                    let until = options.team_until.unwrap_or_else(Instant::now);
                    match ask_here(engine, call, ask, until, true, options).await {
                        Ok(held) => held,
                        Err(outcome) => return outcome,
                    }
                }
                Relayed::Nobody => return unanswered(engine, call, &reasons, fallback, None, options),
                Relayed::Failed(why) => {
                    let note = format!(" (The ask could not be relayed to the live engine of another worktree: {why}.)");
                    return noted(unanswered(engine, call, &reasons, fallback, None, options), &note);
                }
            }
        }
    };
    match settlement.next {
        Next::Run | Next::Granted | Next::Override => {
            verdict.context.push(format!("Chokepoint: this call was {}", settlement.message));
            allowed(engine, call, evaluation.modified.clone(), options, "a Chokepoint hook")
        }
        Next::RunModified => modified(engine, call, asks, &settlement, options, verdict).await,
        Next::Refuse if settlement.by == "timeout" => {
            let outcome = unanswered(engine, call, &reasons, fallback, Some((&id, wait, &held_at)), options);
            // A shared Pending's timeout says why other machines could not answer it, if they could not.
            match settlement.reason.as_deref().and_then(|r| r.split_once("; ")) {
                Some((_, why)) => noted(outcome, &format!(" ({why}.)")),
                None => outcome,
            }
        }
        Next::Refuse | Next::Retry => Outcome::Deny(format!(
            "Chokepoint: {reasons}. A person was asked, and this call was {}. Take it into account and choose another way.",
            settlement.message
        )),
    }
}

/// Opens the ask's Pending on this engine and waits for its settlement until `until`: a live
/// engine's, shown to its people (and shared with the team's database, if any), or, with `team`,
/// a hook's judging alone, which must be shared there (nobody here could see it). `Err` is the
/// answer when it could not be opened or shared.
async fn ask_here(
    engine: &Arc<Engine>,
    call: &Call,
    ask: Ask,
    until: Instant,
    team: bool,
    options: &HookOptions,
) -> Result<(String, Settlement, std::time::Duration, PathBuf), Outcome> {
    let reasons = ask.asked.iter().map(|a| a.reason.as_str()).collect::<Vec<_>>().join("; ");
    // A person has `approvals.timeout_seconds`, or less when the hook's deadline comes sooner.
    let configured = std::time::Duration::from_secs(engine.approvals().config().timeout_seconds);
    let wait = until.saturating_duration_since(Instant::now()).min(configured);
    let fallback = engine.approvals().config().fallback;
    let opened = match engine.open_agent_ask_within(ask, call.agent, wait) {
        Ok(opened) => opened,
        Err(e) => {
            return Err(Outcome::Deny(format!(
                "Chokepoint: {reasons}. A person must approve this call, and its approval could not be opened ({e}); the call is refused"
            )));
        }
    };
    let id = opened.opened.pending.id;
    if team && let Err(e) = opened.shared {
        // Nobody on this machine sees a hook's Pending: unshared, it would wait for no one.
        let note = format!(" (The ask could not be shared with the team's other machines: {e}.)");
        return Err(noted(unanswered(engine, call, &reasons, fallback, None, options), &note));
    }
    // Brings the Pending's deadline forward to the hook's: nobody decides after the agent gave up.
    let _ = engine.approvals().wait(&id, Some(wait)).await;
    let settlement = engine.settle(&id).await;
    Ok((id, settlement, wait, engine.sidecar().workspace_root().to_owned()))
}

/// The fallback's answer with a note on why nobody could answer (`note` starts with a space).
fn noted(outcome: Outcome, note: &str) -> Outcome {
    match outcome {
        Outcome::Deny(text) => Outcome::Deny(text + note),
        Outcome::Ask(text) => Outcome::Ask(text + note),
        other => other,
    }
}

/// A person approved the call with another input: judged again first (the decider may not run what
/// the chain refuses), then run as the agent runs a rewrite.
async fn modified(
    engine: &Arc<Engine>,
    call: &Call,
    asks: &[Asked],
    settlement: &Settlement,
    options: &HookOptions,
    verdict: &mut Verdict,
) -> Outcome {
    let Some(input) = settlement.input.clone() else {
        return Outcome::Deny("Chokepoint: the modification of this call carries no input; the call is refused".into());
    };
    let again = engine.evaluate_async(event_of(call, EventKind::PreToolUse, input.clone(), options), None).await;
    match &again.decision {
        Decision::Deny(denial) => {
            return Outcome::Deny(format!(
                "Chokepoint: the call as {} modified it was denied: {}",
                settlement.by,
                denial_text(engine, call, denial, options)
            ));
        }
        // The hook that asked was answered by the person who wrote this input; another hook's
        // question about it is one nobody has answered, and an unanswered question is a no.
        Decision::Ask { asks: again_asks } if again_asks.first().map(|a| &a.hook) != asks.first().map(|a| &a.hook) => {
            return Outcome::Deny(format!(
                "Chokepoint: the call as {} modified it raises another question nobody has answered ({}); retry it to have that decided",
                settlement.by,
                again.decision.ask_reasons().join("; ")
            ));
        }
        _ => {}
    }
    verdict.context.push(format!("Chokepoint: this call was {}", settlement.message));
    verdict.reason = Some(format!("Chokepoint: {} modified this call before approving it", settlement.by));
    allowed(engine, call, Some(again.modified.unwrap_or(input)), options, "the person who approved it")
}

/// What the call becomes when no person decided it: `timed_out` names the Pending, how long it
/// waited and the workspace whose live engine held it (this one's, or another worktree's for a
/// relayed ask); none: no live engine could show it to anyone.
fn unanswered(
    engine: &Engine,
    call: &Call,
    reasons: &str,
    fallback: AskFallback,
    timed_out: Option<(&str, std::time::Duration, &std::path::Path)>,
    options: &HookOptions,
) -> Outcome {
    if fallback == AskFallback::Agent {
        return Outcome::Ask(format!("Chokepoint asks a person: {reasons}"));
    }
    let program = program_word(options.program.as_deref());
    let held_at = timed_out.map_or_else(|| engine.sidecar().workspace_root(), |(_, _, at)| at);
    let workspace = quote(&crate::base::shown::text(held_at));
    let how = format!(
        "To approve it, retry it and decide it while the agent waits: in VS Code's Chokepoint sidebar (Approvals), or with `{program} approvals review --workspace {workspace}` (or `approvals list` and `approvals approve <id>`)"
    );
    match timed_out {
        Some((id, waited, _)) => Outcome::Deny(format!(
            "Chokepoint: {reasons}. Nobody decided this call (pending `{id}`) within {} s, so it is refused. {how}; `approvals.fallback: agent` in hooks.yaml hands such calls to {}'s own prompt instead. Tell the user.",
            waited.as_secs_f64().round(),
            call.agent.as_str()
        )),
        None => Outcome::Deny(format!(
            "Chokepoint: {reasons}. A person must approve this call, and no live engine runs on this workspace to ask one, so it is refused. Start one (open the workspace in VS Code with Chokepoint, or run `{program} serve --review --workspace {workspace}`). {how}. Tell the user."
        )),
    }
}

/// The workspace paths `call` writes with `input`, as the gatekeeper resolves them (for a write's
/// diff in the Pending).
fn written(engine: &Engine, call: &Call, input: &Value, options: &HookOptions) -> Vec<String> {
    let event = event_of(call, EventKind::PreToolUse, input.clone(), options);
    engine.gatekeeper().judged_paths(&event).into_iter().filter_map(|p| p.canonical.ok()).collect()
}

/// The agent's shell command, rewritten to run through `chokepoint exec` for this session, when the
/// tool runs shell commands and the agent obeys a rewrite.
/// An error when the command cannot be written safely in the agent's shell: the call is refused then.
fn contained(engine: &Engine, call: &Call, input: &serde_json::Value, options: &HookOptions) -> Option<Result<serde_json::Value, String>> {
    let program = options.program.as_deref()?;
    if !rewrites_input(call) {
        return None;
    }
    let Some(ToolRole::Shell(field)) = engine.gatekeeper().tool_role(Some(call.agent), call.tool.as_deref()?) else { return None };
    let command = input.get(&field)?.as_str()?;
    let root = engine.sidecar().workspace_root();
    let session = call.session.clone().unwrap_or_else(|| format!("{}:unknown", call.agent.id()));
    // Already ours for this session (the agent sent back the input we gave it): once is enough. The
    // session's own handshake runs as it is (`shell::is_own_handshake` says why).
    let syntax = Syntax::of(call.agent);
    let refused = |e: String| Some(Err(format!("Chokepoint cannot contain this command: {e}; the command is refused")));
    let prefix = match exec_prefix(program, root, &session, syntax) {
        Ok(prefix) => prefix,
        Err(e) => return refused(e),
    };
    if command.starts_with(&prefix) || is_own_handshake(command, program, root, &session, syntax) {
        return None;
    }
    let mut rewritten = input.clone();
    match exec_command(program, root, &session, command, syntax) {
        Ok(line) => rewritten[field.as_str()] = line.into(),
        Err(e) => return refused(e),
    }
    Some(Ok(rewritten))
}

/// A denial as the model and the person should read it: the reason, how to fix it, and the next
/// step in this agent: for the handshake the exact one (our MCP tool, or the command line with this
/// session's id), otherwise where to find the tool the denial suggests.
fn denial_text(engine: &Engine, call: &Call, denial: &Denial, options: &HookOptions) -> String {
    let mut text = format!("Chokepoint: {}", denial.reason);
    if let Some(remediation) = &denial.remediation {
        text.push_str(". ");
        text.push_str(remediation);
    }
    let handshake = denial.reason.contains(SELECT_INTENT_TOOL) || denial.suggested_tool.as_deref() == Some(SELECT_INTENT_TOOL);
    if handshake {
        // The line the agent runs in its own shell (PowerShell on Windows, but for Claude Code).
        let syntax = Syntax::of(call.agent);
        let word = |text: &str| syntax.quote(text).unwrap_or_else(|_| quote(text));
        let program =
            options.program.as_deref().and_then(|p| syntax.program(p).ok()).unwrap_or_else(|| program_word(options.program.as_deref()));
        text.push_str(&format!(
            " Next step: call {} with an intent id, or run: {program} intent select --workspace {} --session {} <intent_id>",
            crate::agents::context::select_tool(call.agent),
            word(&crate::base::shown::text(engine.sidecar().workspace_root())),
            word(call.session.as_deref().unwrap_or("<session>")),
        ));
    } else if let Some(tool) = &denial.suggested_tool {
        let which = match tool.as_str() {
            SCOPE_EXPANSION_TOOL => crate::agents::context::handshake_tool(call.agent, tool),
            _ => format!("the tool `{tool}`"),
        };
        text.push_str(&format!(" Next step: call {which}."));
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
        quote(&crate::base::shown::text(engine.sidecar().workspace_root())),
        quote(call.session.as_deref().unwrap_or("<session>")),
        quote(intent),
        paths.iter().map(|p| format!("--path {p}")).collect::<Vec<_>>().join(" ")
    )
}
