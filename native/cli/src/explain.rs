//! `chokepoint explain`: one tool call judged by the workspace's chain, with every hook's outcome and
//! the canonical paths the gatekeeper judged. How users debug their scopes; it calls the same
//! `Engine::evaluate_async` as the agents' calls, so it cannot disagree with them.

use crate::{EXIT_ASK, EXIT_CONFIG, EXIT_DENY};
use chokepoint_core::scope::gatekeeper::JudgedPath;
use chokepoint_core::{Decision, Evaluation, Event, EventKind, OutcomeKind};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct ExplainArgs {
    #[arg(long, default_value = ".")]
    workspace: PathBuf,
    /// The session whose call it is (its selected intent and approved expansions apply).
    #[arg(long)]
    session: Option<String>,
    /// The agent making the call.
    #[arg(long)]
    agent: Option<String>,
    /// The type of the task the call belongs to (its hooks replace the project's).
    #[arg(long)]
    task_type: Option<String>,
    /// The tool name, as the agent calls it (`write_to_file`, `Edit`, `execute_command`, ...).
    #[arg(long)]
    tool: String,
    /// The tool's input, as a JSON object.
    #[arg(long, default_value = "{}")]
    input: String,
    /// Print machine-readable JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: ExplainArgs) -> ExitCode {
    let input: serde_json::Value = match serde_json::from_str(&args.input) {
        Ok(v @ serde_json::Value::Object(_)) => v,
        Ok(_) => return usage("--input must be a JSON object"),
        Err(e) => return usage(&format!("--input is not valid JSON: {e}")),
    };
    crate::with_valid_engine(&args.workspace, |engine| {
        let mut event = Event::tool(EventKind::PreToolUse, args.tool.clone(), input);
        event.ids.session = args.session.clone();
        event.ids.agent = args.agent.clone();
        event.task_type = args.task_type.clone();
        event.depth = crate::hook_depth();
        // As an adapter does: the paths a write names travel with the event, for path matchers.
        let judged = engine.gatekeeper().judged_paths(&event);
        event.paths = judged.iter().map(|p| p.raw.clone()).collect();
        let evaluation = crate::block_on(engine.evaluate_async(event, None));
        let intent = args.session.as_deref().and_then(|s| engine.gatekeeper().selected(s));
        if args.json {
            println!("{}", json(&args, intent.as_deref(), &judged, &evaluation));
        } else {
            print!("{}", text(&args, intent.as_deref(), &judged, &evaluation));
        }
        exit_code(&evaluation.decision)
    })
}

fn usage(message: &str) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(EXIT_CONFIG)
}

pub fn exit_code(decision: &Decision) -> ExitCode {
    match decision {
        Decision::Allow => ExitCode::SUCCESS,
        Decision::Deny(_) => ExitCode::from(EXIT_DENY),
        Decision::Ask { .. } => ExitCode::from(EXIT_ASK),
    }
}

fn outcome_text(kind: &OutcomeKind) -> String {
    match kind {
        OutcomeKind::FailedOpen(f) | OutcomeKind::FailedClosed(f) => format!("{} ({f})", kind.as_str()),
        other => other.as_str().to_owned(),
    }
}

fn text(args: &ExplainArgs, intent: Option<&str>, judged: &[JudgedPath], e: &Evaluation) -> String {
    let session = args.session.as_deref().map_or("no session".to_owned(), |s| format!("session `{s}`"));
    let intent = intent.map_or("no intent selected".to_owned(), |i| format!("intent `{i}`"));
    let mut out = format!("{}: `{}` for {session} ({intent})\n", e.decision.as_str(), args.tool);
    match &e.decision {
        Decision::Allow => {}
        Decision::Deny(d) => {
            out += &format!("  reason: {}\n", d.reason);
            if let Some(r) = &d.remediation {
                out += &format!("  remediation: {r}\n");
            }
            if let Some(t) = &d.suggested_tool {
                out += &format!("  suggested tool: {t}\n");
            }
        }
        Decision::Ask { asks } => asks.iter().for_each(|a| out += &format!("  asks: {a}\n")),
    }
    if !judged.is_empty() {
        out += "paths judged:\n";
        let width = judged.iter().map(|p| p.raw.len()).max().unwrap_or(0);
        for p in judged {
            let verdict = match &p.canonical {
                Ok(rel) => rel.clone(),
                Err(refusal) => format!("refused: {refusal}"),
            };
            out += &format!("  {:width$}  ->  {verdict}\n", p.raw);
        }
    }
    out += "hooks, in the order they ran:\n";
    let width = e.outcomes.iter().map(|o| o.hook.len()).max().unwrap_or(0);
    for o in &e.outcomes {
        out += &format!("  {:width$}  {:<13}  {:.3} ms\n", o.hook, outcome_text(&o.kind), o.duration_ns as f64 / 1e6);
    }
    if e.outcomes.is_empty() {
        out += "  (none apply)\n";
    }
    for c in &e.additional_context {
        out += &format!("context for the model:\n{}\n", c.lines().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n"));
    }
    out
}

fn json(args: &ExplainArgs, intent: Option<&str>, judged: &[JudgedPath], e: &Evaluation) -> serde_json::Value {
    let mut v = serde_json::json!({
        "decision": e.decision.as_str(),
        "tool": args.tool,
        "session": args.session,
        "intent": intent,
        "paths": judged.iter().map(|p| match &p.canonical {
            Ok(rel) => serde_json::json!({ "raw": p.raw, "canonical": rel }),
            Err(refusal) => serde_json::json!({ "raw": p.raw, "refused": refusal.to_string() }),
        }).collect::<Vec<_>>(),
        "hooks": e.outcomes.iter().map(|o| {
            let mut h = serde_json::json!({ "name": &*o.hook, "outcome": o.kind.as_str(), "durationNs": o.duration_ns });
            if let OutcomeKind::FailedOpen(f) | OutcomeKind::FailedClosed(f) = &o.kind {
                h["failure"] = f.to_string().into();
            }
            h
        }).collect::<Vec<_>>(),
        "additionalContext": e.additional_context,
    });
    match &e.decision {
        Decision::Deny(d) => {
            v["reason"] = d.reason.clone().into();
            v["remediation"] = d.remediation.clone().into();
            v["suggestedTool"] = d.suggested_tool.clone().into();
        }
        Decision::Ask { .. } => v["reasons"] = e.decision.ask_reasons().into(),
        Decision::Allow => {}
    }
    v
}
