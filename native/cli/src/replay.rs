//! `chokepoint trace replay`: the ledger's recorded tool calls judged again against another
//! hooks.yaml / active_intents.yaml (`chokepoint_core::engine::replay`), and the decisions that would change,
//! printed for a person or as JSON. Appends nothing to the ledger.
//!
//! Exit codes: 0 the replay ran (whatever changed), 1 the workspace or its trace cannot be read, 2 a
//! configuration to replay against that does not load (each problem with its file:line:column), a
//! folder that holds none, or a `--since` that is not a time.

use crate::EXIT_CONFIG;
use chokepoint_core::engine::replay::{ReplayError, ReplayOptions, ReplayReport};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    #[arg(long, default_value = ".")]
    workspace: PathBuf,
    /// A folder holding the hooks.yaml and/or active_intents.yaml to judge with (a draft, or a
    /// branch's checkout with them in .orchestration/); a file it lacks is the workspace's own.
    /// The workspace's own configuration by default.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Only calls recorded at or after this time: RFC 3339, a date, or unix milliseconds.
    #[arg(long)]
    since: Option<String>,
    /// Only calls made under this intent.
    #[arg(long)]
    intent: Option<String>,
    /// Run command and builtin hooks (with their side effects) instead of using their recorded answers.
    #[arg(long)]
    run_commands: bool,
    /// Print machine-readable JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: ReplayArgs) -> ExitCode {
    let options = ReplayOptions {
        config: args.config.clone().unwrap_or_else(|| chokepoint_core::Sidecar::new(&args.workspace).dir()),
        since: args.since.clone(),
        intent: args.intent.clone(),
        run_commands: args.run_commands,
    };
    match crate::block_on(chokepoint_core::engine::replay::replay(&args.workspace, &options)) {
        Ok(report) if args.json => {
            println!("{}", json(&report));
            ExitCode::SUCCESS
        }
        Ok(report) => {
            print!("{}", text(&report));
            ExitCode::SUCCESS
        }
        Err(ReplayError::Config(diagnostics)) => {
            for d in &diagnostics {
                eprintln!("error: {d}");
            }
            eprintln!("error: the configuration to replay against does not load; fix it first");
            ExitCode::from(EXIT_CONFIG)
        }
        Err(e @ ReplayError::BadOption(_)) => {
            eprintln!("error: {e}");
            ExitCode::from(EXIT_CONFIG)
        }
        Err(e @ ReplayError::Unreadable(_)) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn or_none(value: &Option<String>) -> &str {
    value.as_deref().unwrap_or("(none)")
}

fn text(r: &ReplayReport) -> String {
    let mut out = format!("replayed against {} and {}\n", r.hooks_file.display(), r.intents_file.display());
    out += &format!("{} calls judged again: {} unchanged, {} would change\n", r.replayed, r.unchanged, r.changes.len());
    for s in &r.skipped {
        out += &format!("skipped {}: {}\n", s.count, s.reason);
    }
    if r.unverified > 0 {
        out += &format!(
            "{} calls ran into a command hook neither re-run nor recorded for them (counted as allow; --run-commands runs them)\n",
            r.unverified
        );
    }
    if r.groups.is_empty() {
        return out;
    }
    out += "by hook and intent:\n";
    for g in &r.groups {
        out += &format!("  {:>5}  {} -> {}  hook {}  intent {}\n", g.count, g.from, g.to, or_none(&g.hook), or_none(&g.intent));
    }
    out += "changes:\n";
    for c in &r.changes {
        let paths = if c.paths.is_empty() { String::new() } else { format!(" {}", c.paths.join(", ")) };
        out += &format!("  #{} {} {} -> {}  {}{}\n", c.seq, c.time, c.from, c.to, c.tool, paths);
        out += &format!("      session {}  intent {}  hook {}\n", or_none(&c.session), or_none(&c.intent), or_none(&c.hook));
        if let Some(reason) = &c.reason {
            out += &format!("      reason: {reason}\n");
        }
        for s in &c.stand_ins {
            out += &format!("      {s}\n");
        }
    }
    out
}

fn json(r: &ReplayReport) -> serde_json::Value {
    serde_json::json!({
        "hooksFile": r.hooks_file,
        "intentsFile": r.intents_file,
        "replayed": r.replayed,
        "unchanged": r.unchanged,
        "changed": r.changes.len(),
        "unverified": r.unverified,
        "skipped": r.skipped.iter().map(|s| serde_json::json!({ "reason": s.reason, "count": s.count })).collect::<Vec<_>>(),
        "groups": r.groups.iter().map(|g| serde_json::json!({
            "hook": g.hook, "intent": g.intent, "from": g.from, "to": g.to, "count": g.count,
        })).collect::<Vec<_>>(),
        "changes": r.changes.iter().map(|c| serde_json::json!({
            "seq": c.seq, "time": c.time, "session": c.session, "agent": c.agent, "intent": c.intent,
            "tool": c.tool, "paths": c.paths, "from": c.from, "to": c.to, "hook": c.hook,
            "reason": c.reason, "standIns": c.stand_ins,
        })).collect::<Vec<_>>(),
    })
}
