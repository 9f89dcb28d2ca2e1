//! `chokepoint intent`: the handshake from a terminal (select, release), who holds what, and a
//! human's approval of a scope expansion. Selecting goes through the chain, as an agent's
//! `select_active_intent` call does.

use crate::{EXIT_CONFIG, EXIT_DENY};
use chokepoint_core::scope::expansion::Expansion;
use chokepoint_core::serve::deciders::Act;
use chokepoint_core::{Decision, Event, EventKind};
use clap::Subcommand;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Subcommand)]
pub enum IntentCommand {
    /// Select an intent for a session: checks it, takes its lock, prints its <intent_context>.
    Select {
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        #[arg(long)]
        session: String,
        #[arg(long)]
        agent: Option<String>,
        /// The intent id, as in active_intents.yaml.
        intent: String,
    },
    /// Release whatever intent a session holds.
    Release {
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        #[arg(long)]
        session: String,
    },
    /// List the intents and who holds each (in a git repository, in any of its worktrees, with the
    /// holder's worktree and branch).
    List {
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Approve a scope expansion for a session's intent (a human answering `scope_expansion_request`).
    Approve {
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        #[arg(long)]
        session: String,
        #[arg(long)]
        intent: String,
        /// A glob relative to the workspace root; repeat for several.
        #[arg(long = "path", required = true)]
        paths: Vec<String>,
        #[arg(long, default_value = "approved from the command line")]
        justification: String,
        /// Also add the globs to the intent's owned_scope in active_intents.yaml.
        #[arg(long)]
        save: bool,
    },
}

pub fn run(command: IntentCommand) -> ExitCode {
    match command {
        IntentCommand::Select { workspace, session, agent, intent } => crate::with_valid_engine(&workspace, |engine| {
            let mut event = Event::tool(
                EventKind::PreToolUse,
                chokepoint_core::scope::gatekeeper::SELECT_INTENT_TOOL,
                serde_json::json!({ "intent_id": intent }),
            );
            event.ids.session = Some(session.clone());
            event.ids.agent = agent;
            event.depth = crate::hook_depth();
            let evaluation = crate::block_on(engine.evaluate_async(event, None));
            match &evaluation.decision {
                Decision::Allow => {
                    println!("session `{session}` holds intent `{intent}`");
                    for c in &evaluation.additional_context {
                        println!("{c}");
                    }
                    ExitCode::SUCCESS
                }
                Decision::Deny(d) => {
                    eprintln!("error: {}", d.reason);
                    if let Some(r) = &d.remediation {
                        eprintln!("{r}");
                    }
                    ExitCode::from(EXIT_DENY)
                }
                Decision::Ask { .. } => {
                    eprintln!("waiting for approval: {}", evaluation.decision.ask_reasons().join("; "));
                    ExitCode::from(crate::EXIT_ASK)
                }
            }
        }),
        IntentCommand::Release { workspace, session } => crate::with_engine(&workspace, |engine| {
            // Releasing a session's intent frees it for others: a person's act, like a revocation.
            if let Err(refused) = chokepoint_core::serve::deciders::check_this_process(engine, Act::Revoke) {
                return failure(&refused);
            }
            match engine.gatekeeper().release(&session) {
                Ok(0) => {
                    println!("session `{session}` held no intent");
                    ExitCode::SUCCESS
                }
                Ok(_) => {
                    engine.brain().refresh_later();
                    println!("session `{session}` released its intent");
                    ExitCode::SUCCESS
                }
                Err(e) => failure(e.message()),
            }
        }),
        IntentCommand::List { workspace, json } => crate::with_engine(&workspace, |engine| {
            let holders = match engine.gatekeeper().holders() {
                Ok(h) => h,
                Err(e) => return failure(e.message()),
            };
            let info = engine.info();
            if json {
                let rows: Vec<serde_json::Value> = info
                    .intent_ids
                    .iter()
                    .map(|id| {
                        let lease = holders.iter().find(|l| &l.intent == id);
                        serde_json::json!({
                            "id": id,
                            "holder": lease.map(|l| &l.session),
                            "agent": lease.and_then(|l| l.agent.as_ref()),
                            "machine": lease.and_then(|l| l.machine.as_ref()),
                            "worktree": lease.and_then(|l| l.checkout.as_ref()).map(|c| &c.worktree),
                            "worktree_root": lease.and_then(|l| l.checkout.as_ref()).map(|c| &c.root),
                            "branch": lease.and_then(|l| l.checkout.as_ref()).and_then(|c| c.branch.as_ref()),
                            "since": lease.map(|l| l.acquired_at_ms),
                            "expires": lease.map(|l| l.expires_at_ms),
                        })
                    })
                    .collect();
                println!("{}", serde_json::Value::Array(rows));
            } else {
                for id in &info.intent_ids {
                    match holders.iter().find(|l| &l.intent == id) {
                        Some(l) => println!(
                            "{id}  held by session `{}`{}{}{}",
                            l.session,
                            l.agent.as_ref().map(|a| format!(" (agent `{a}`)")).unwrap_or_default(),
                            l.machine.as_ref().map(|m| format!(" on machine `{m}`")).unwrap_or_default(),
                            l.checkout.as_ref().map(|c| format!(" in {c}")).unwrap_or_default()
                        ),
                        None => println!("{id}  free"),
                    }
                }
            }
            ExitCode::SUCCESS
        }),
        IntentCommand::Approve { workspace, session, intent, paths, justification, save } => {
            crate::with_valid_engine(&workspace, |engine| {
                // A person widens a session's scope, never the session's own agent.
                let decider = match chokepoint_core::serve::deciders::check_this_process(engine, Act::WidenScope) {
                    Ok(decider) => decider,
                    Err(refused) => return failure(&refused),
                };
                let expansion = Expansion {
                    session: session.clone(),
                    intent: intent.clone(),
                    paths,
                    justification,
                    approved_by: format!("human (chokepoint intent approve, {})", decider.by()),
                    approved_at_ms: chokepoint_core::base::clock::now_ms(),
                };
                match engine.gatekeeper().approve_expansion(&expansion, save) {
                    Ok(()) => {
                        println!(
                            "session `{session}` may now also write {} for intent `{intent}`{}",
                            expansion.paths.join(", "),
                            if save { " (saved to active_intents.yaml)" } else { "" }
                        );
                        ExitCode::SUCCESS
                    }
                    Err(e) => {
                        eprintln!("error: {e}");
                        ExitCode::from(EXIT_CONFIG)
                    }
                }
            })
        }
    }
}

fn failure(message: &str) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(EXIT_DENY)
}
