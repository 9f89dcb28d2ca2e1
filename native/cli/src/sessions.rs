//! `chokepoint sessions`: the sessions working in the workspace (every agent's, from the trace and
//! the leases, in every worktree of its repository, as the sidebar's Sessions section shows them), and a person's revocation of a
//! session's lease. Both are one call into the core (`Engine::sessions`, `Engine::revoke_lease`).
//!
//! `chokepoint sessions [--json]` prints each session with its `worktree` and `branch` (text, or JSON
//! with times in RFC 3339); `chokepoint sessions revoke <session> [--reason R] [--by NAME]` names the
//! revoker `<--by, else $USER or $LOGNAME> via chokepoint sessions revoke`. Exit 1 when the session held
//! no lease (nothing revoked or recorded) or the lease table or ledger fails.

use crate::EXIT_DENY;
use chokepoint_core::base::clock::format_utc;
use chokepoint_core::engine::sessions::{SessionAction, SessionView};
use chokepoint_core::serve::deciders::Act;
use clap::{Args, Subcommand};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct SessionsArgs {
    #[command(subcommand)]
    command: Option<SessionsCommand>,
    #[arg(long, default_value = ".", global = true)]
    workspace: PathBuf,
    /// Print machine-readable JSON.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum SessionsCommand {
    /// Take a session's lease away: its intent is free at once, and the session's next write is
    /// denied saying who revoked it and why (within a second, in every process judging it).
    /// Recorded in the trace. Exit code: 0 revoked, 1 the session held no lease.
    Revoke {
        /// The session, as `chokepoint sessions` lists it (`claude:<id>`, ...).
        session: String,
        /// Why, told to the session's agent.
        #[arg(long)]
        reason: Option<String>,
        /// Who revokes it (default: the user name from $USER or $LOGNAME).
        #[arg(long)]
        by: Option<String>,
    },
}

pub fn run(args: SessionsArgs) -> ExitCode {
    let SessionsArgs { command, workspace, json } = args;
    match command {
        None => crate::with_engine(&workspace, |engine| match engine.sessions() {
            Ok(sessions) if json => {
                println!("{}", Value::Array(sessions.iter().map(session_json).collect()));
                ExitCode::SUCCESS
            }
            Ok(sessions) => {
                if sessions.is_empty() {
                    println!("no session has acted in this workspace in the last 24 hours or holds an intent");
                }
                for session in &sessions {
                    print_session(session);
                }
                ExitCode::SUCCESS
            }
            Err(e) => failure(e.message()),
        }),
        Some(SessionsCommand::Revoke { session, reason, by }) => crate::with_engine(&workspace, |engine| {
            // A person revokes a lease, never another session's agent.
            let decider = match chokepoint_core::serve::deciders::check_this_process(engine, Act::Revoke) {
                Ok(decider) => decider,
                Err(refused) => return failure(&refused),
            };
            let person = by
                .or_else(|| ["USER", "LOGNAME"].iter().find_map(|v| std::env::var(v).ok().filter(|u| !u.is_empty())))
                .unwrap_or_else(|| "an unnamed user".to_owned());
            // The name is the person's word; the process and terminal are the kernel's.
            let place = decider.terminal.as_deref().map(|t| format!(" on {t}")).unwrap_or_default();
            let by = format!("{person} via chokepoint sessions revoke, pid {}{place}", decider.pid);
            match engine.revoke_lease(&session, &by, reason.as_deref()) {
                Ok(Some(revocation)) if json => {
                    println!("{}", revocation_json(&revocation));
                    ExitCode::SUCCESS
                }
                Ok(Some(revocation)) => {
                    println!("revoked: {revocation}");
                    println!("intent `{}` is free; the session's next write is denied saying so", revocation.intent);
                    ExitCode::SUCCESS
                }
                Ok(None) => failure(&format!(
                    "session `{session}` holds no lease; nothing was revoked (`chokepoint sessions` lists who holds what)"
                )),
                Err(e) => failure(e.message()),
            }
        }),
    }
}

fn print_session(s: &SessionView) {
    let lease = match (&s.lease, &s.revoked) {
        (Some(lease), _) if s.lease_idle => {
            format!(
                "idle on {} since {}, free to take (its next call renews it if nobody did)",
                lease.intent,
                format_utc(lease.expires_at_ms)
            )
        }
        (Some(lease), _) => format!("holds {} until {}", lease.intent, format_utc(lease.expires_at_ms)),
        (None, Some(revoked)) => format!("lease on {} revoked by {} at {}", revoked.intent, revoked.by, format_utc(revoked.at_ms)),
        (None, None) => "holds no intent".to_owned(),
    };
    let machine = s.lease.as_ref().and_then(|l| l.machine.as_ref()).map(|m| format!("  on machine `{m}`")).unwrap_or_default();
    let place = s.checkout.as_ref().map(|c| format!("{machine}  {c}")).unwrap_or(machine);
    println!("{}  {}{place}  {lease}  allowed {}  denied {}", s.session, s.label, s.allowed, s.denied);
    if !s.subagents.is_empty() {
        println!("  sub-agents: {}", s.subagents.join(", "));
    }
    if let Some(model) = &s.model {
        println!("  model: {model}");
    }
    if let Some(denial) = &s.last_denial {
        println!("  last denial: {}", action_line(denial));
    }
    for action in &s.actions {
        println!("  {}", action_line(action));
    }
}

fn action_line(a: &SessionAction) -> String {
    let mut parts = vec![a.time.clone()];
    parts.extend(a.event.clone().or_else(|| Some(a.kind.as_str().to_owned())));
    parts.extend(a.tool.clone());
    parts.extend(a.summary.clone());
    parts.extend(a.decision.clone());
    if let Some(subagent) = &a.subagent {
        parts.push(format!("(sub-agent {subagent})"));
    }
    let line = parts.join(" ");
    match (&a.reason, a.decision.as_deref()) {
        (Some(reason), Some("deny" | "ask")) => format!("{line}: {reason}"),
        _ => line,
    }
}

fn action_json(a: &SessionAction) -> Value {
    json!({
        "seq": a.seq,
        "time": a.time,
        "kind": a.kind.as_str(),
        "event": a.event,
        "tool": a.tool,
        "summary": a.summary,
        "decision": a.decision,
        "reason": a.reason,
        "subagent": a.subagent,
    })
}

fn revocation_json(r: &chokepoint_core::scope::leases::Revocation) -> Value {
    json!({ "session": r.session, "intent": r.intent, "agent": r.agent, "by": r.by, "reason": r.reason, "at": format_utc(r.at_ms) })
}

fn session_json(s: &SessionView) -> Value {
    json!({
        "session": s.session,
        "agent": s.agent,
        "label": s.label,
        "subagents": s.subagents,
        "model": s.model,
        "machine": s.lease.as_ref().and_then(|l| l.machine.as_ref()),
        "worktree": s.checkout.as_ref().map(|c| &c.worktree),
        "worktree_root": s.checkout.as_ref().map(|c| &c.root),
        "branch": s.checkout.as_ref().and_then(|c| c.branch.as_ref()),
        "lease": s.lease.as_ref().map(|l| json!({
            "intent": l.intent,
            "since": format_utc(l.acquired_at_ms),
            "expires": format_utc(l.expires_at_ms),
            "idle": s.lease_idle,
        })),
        "revoked": s.revoked.as_ref().map(revocation_json),
        "allowed": s.allowed,
        "denied": s.denied,
        "records": s.records,
        "last_denial": s.last_denial.as_ref().map(action_json),
        "actions": s.actions.iter().map(action_json).collect::<Vec<_>>(),
        "last_seen": s.last_seen_ms.map(format_utc),
    })
}

fn failure(message: &str) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(EXIT_DENY)
}
