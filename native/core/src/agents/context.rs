//! What an external agent's model is told at session start (and after a compaction): that this
//! workspace is governed, the intents it may work on and who holds each, and the one next step before
//! a write; and the shared brain (`.orchestration/CLAUDE.md`). Our own agent learns the same from its
//! prompt; an external agent learns it here, as the hook's additional context.
//!
//! The shared brain is handed over at `SessionStart` and `PreCompact` ([`shared_brain`], inside
//! `<shared_brain>`, the people's file first, at most `engine::brain::MAX_CONTEXT_BYTES`, 32 KiB).

use crate::agents::input::Call;
use crate::agents::shell::{program_word, quote};
use crate::engine::engine::Engine;
use crate::model::event::EventKind;
use crate::model::external_events::Agent;
use crate::model::governance::{SCOPE_EXPANSION_TOOL, SELECT_INTENT_TOOL};
use std::path::Path;

/// Where the agent's model finds the handshake's tool: VS Code's agent gets it from the Chokepoint
/// extension (a language model tool), the others from our MCP server.
pub fn select_tool(agent: Agent) -> String {
    handshake_tool(agent, SELECT_INTENT_TOOL)
}

/// Where the agent's model finds the handshake's tool `tool` (as [`select_tool`]).
pub fn handshake_tool(agent: Agent, tool: &str) -> String {
    match agent {
        Agent::VsCode => format!("the tool `{tool}` that the Chokepoint extension contributes"),
        _ => format!("the MCP tool `{tool}` of server `chokepoint`"),
    }
}

/// The handshake's rules for `call`'s session, with the intents as they stand.
pub fn handshake(engine: &Engine, call: &Call, program: Option<&Path>) -> String {
    let session = call.session.as_deref().unwrap_or("<session>");
    let intents = engine.intents().active_intents;
    let holders = engine.gatekeeper().holders().unwrap_or_default();
    // The session's own intent is one of the holders: no second look-up of the lease table.
    let held = holders.iter().find(|l| Some(l.session.as_str()) == call.session.as_deref()).map(|l| l.intent.clone());
    let program = program_word(program);
    let mut text = format!("<chokepoint>\nThis workspace is governed by Chokepoint. Your session is `{session}`.\n");
    if intents.is_empty() {
        text.push_str(
            "It declares no intents: you may write anywhere except the governance files (.orchestration/ and the agents' hook settings).\n",
        );
    } else {
        match &held {
            Some(intent) => text.push_str(&format!("This session holds intent `{intent}`.\n")),
            None => text.push_str(&format!(
                "Before any write, declare the intent you work on: call {} with its id, or run `{program} intent select --session {} <intent_id>`.\n",
                match call.agent {
                    Agent::VsCode => select_tool(call.agent),
                    _ => format!("the MCP tool `{SELECT_INTENT_TOOL}` (server `chokepoint`)"),
                },
                quote(session)
            )),
        }
        text.push_str(&format!(
            "Writes outside the intent's owned_scope are refused; ask for more with `{SCOPE_EXPANSION_TOOL}` (a person approves). Shell commands run contained: what they change outside the scope never lands, and you are told. Governance files (.orchestration/, the agents' hook settings) are never writable.\nIntents:\n"
        ));
        for intent in &intents {
            let holder = holders.iter().find(|l| l.intent == intent.id).map(|l| format!(", held by `{}`", l.session)).unwrap_or_default();
            let status = intent.status.as_str();
            text.push_str(&format!("- {} ({}) [{status}{holder}] scope: {}\n", intent.id, intent.name, intent.owned_scope.join(", ")));
        }
    }
    text.push_str("</chokepoint>");
    text
}

/// The shared brain as the agent is shown it (the people's file, then the generated part), `None`
/// when the workspace has none. At a session's start its generated part is brought up to date
/// first (a hooks.yaml edited while no engine watched it is then listed as it is): once per
/// session, a rewrite only when something changed. After a compaction the files are read as they
/// stand.
pub fn shared_brain(engine: &Engine, kind: EventKind) -> Option<String> {
    if kind == EventKind::SessionStart {
        // A rewrite that fails leaves the file as it was, which is still worth reading.
        let _ = engine.brain().refresh(false);
    }
    engine.brain().context()
}
