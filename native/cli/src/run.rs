//! `chokepoint run BeforeMerge|AfterMerge|AfterSubmit --task-type T`: a task's merge-side chain from
//! a CI job or a merge queue. The core resolves, runs, records and summarises
//! (`Engine::run_merge_side`); this prints each hook's SUCCESS / FAILURE / SKIP and picks the exit
//! code: 0 passed, 1 failed, 2 our own failure (configuration, undeclared type or intent, ledger).
//! A type without hooks for the event says it is accepted (exit 0). With `--json`, one document; a
//! `MergeRunError` is on stderr and in the document's `error` and located `diagnostics`.

use crate::{EXIT_CONFIG, EXIT_DENY};
use chokepoint_core::engine::merge::{HookResult, MERGE_SIDE, MergeReport, MergeRun, MergeRunError};
use chokepoint_core::{Decision, EventKind};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The merge-side event: BeforeMerge (the gatekeepers), AfterMerge or AfterSubmit.
    #[arg(value_parser = merge_side_event)]
    event: EventKind,
    /// The task's type, a `task_types` key of hooks.yaml: its hooks for the event, else the project's.
    #[arg(long)]
    task_type: String,
    /// The task's id, recorded with the run (and given to command hooks as `task_id`).
    #[arg(long)]
    task: Option<String>,
    /// The intent the task serves (an id of active_intents.yaml), recorded with the run.
    #[arg(long)]
    intent: Option<String>,
    #[arg(long, default_value = ".")]
    workspace: PathBuf,
    /// Print one JSON document.
    #[arg(long)]
    json: bool,
}

fn merge_side_event(name: &str) -> Result<EventKind, String> {
    name.parse::<EventKind>().ok().filter(|e| MERGE_SIDE.contains(e)).ok_or_else(|| {
        let names: Vec<&str> = MERGE_SIDE.iter().map(|e| e.as_str()).collect();
        format!("`{name}` is not a merge-side event; the merge-side events are {}", names.join(", "))
    })
}

pub fn run(args: RunArgs) -> ExitCode {
    let engine = match chokepoint_core::Engine::open(&args.workspace) {
        Ok(engine) => engine,
        Err(e) => return failed(&args, &MergeRunError::Refused(format!("cannot open workspace `{}`: {e}", args.workspace.display()))),
    };
    let run = MergeRun {
        event: args.event,
        task_type: args.task_type.clone(),
        task: args.task.clone(),
        intent: args.intent.clone(),
        depth: crate::hook_depth(),
    };
    match crate::block_on(engine.run_merge_side(run)) {
        Ok(report) => {
            if args.json {
                println!("{}", json(&report));
            } else {
                print!("{}", text(&report));
            }
            if report.passed() { ExitCode::SUCCESS } else { ExitCode::from(EXIT_DENY) }
        }
        Err(e) => failed(&args, &e),
    }
}

/// Our failure: said on stderr (and as the JSON document with `--json`), exit 2, never a pass.
fn failed(args: &RunArgs, error: &MergeRunError) -> ExitCode {
    if args.json {
        let diagnostics = match error {
            MergeRunError::Configuration(problems) => problems
                .iter()
                .map(|d| {
                    serde_json::json!({
                        "file": d.file, "line": d.line, "column": d.column, "code": d.code, "message": d.message,
                    })
                })
                .collect(),
            MergeRunError::Refused(_) => Vec::new(),
        };
        let doc = serde_json::json!({
            "event": args.event.as_str(),
            "taskType": args.task_type,
            "task": args.task,
            "intent": args.intent,
            "status": "error",
            "error": error.to_string(),
            "diagnostics": diagnostics,
        });
        println!("{doc}");
    }
    for line in error.to_string().lines() {
        eprintln!("error: {line}");
    }
    ExitCode::from(EXIT_CONFIG)
}

/// `before-merge`, as people write the event in a sentence.
fn spoken(event: EventKind) -> &'static str {
    match event {
        EventKind::BeforeMerge => "before-merge",
        EventKind::AfterMerge => "after-merge",
        _ => "after-submit",
    }
}

fn verdict(report: &MergeReport) -> &'static str {
    if report.passed() { "success" } else { "failure" }
}

fn text(report: &MergeReport) -> String {
    let run = &report.run;
    let task = run.task.as_deref().map_or(String::new(), |t| format!(" for task `{t}`"));
    let intent = run.intent.as_deref().map_or(String::new(), |i| format!(" (intent `{i}`)"));
    if report.no_hooks() {
        // Nothing gates the merge of a type without before-merge hooks (design note 004: it auto-accepts).
        let ending = if run.event == EventKind::BeforeMerge { "accepted" } else { "nothing to run" };
        return format!("no {} hooks for task type {}: {ending}{task}{intent}\n", spoken(run.event), run.task_type);
    }
    let mut out = format!("{}{task} of type `{}`{intent}: {}\n", run.event, run.task_type, verdict(report).to_uppercase());
    let width = report.hooks.iter().map(|h| h.name.len()).max().unwrap_or(0);
    for h in &report.hooks {
        let took = h.outcome.map_or(String::new(), |_| format!("  {:.1} ms", h.duration_ns as f64 / 1e6));
        out += &format!("  {:<7}  {:width$}{took}\n", h.status.as_str(), h.name);
        if let Some(reason) = &h.reason {
            out += &format!("           {reason}\n");
        }
        if let Some(remediation) = &h.remediation {
            out += &format!("           remediation: {}\n", remediation.lines().collect::<Vec<_>>().join("\n             "));
        }
    }
    out += "recorded in the trace ledger (.orchestration/trace/)\n";
    // Padding and indented blank lines leave no trailing blanks for a CI log to carry.
    out.lines().map(|l| format!("{}\n", l.trim_end())).collect()
}

fn json(report: &MergeReport) -> serde_json::Value {
    let run = &report.run;
    let hook = |h: &HookResult| {
        serde_json::json!({
            "name": h.name,
            "status": h.status.as_str(),
            "outcome": h.outcome,
            "reason": h.reason,
            "remediation": h.remediation,
            "durationNs": h.duration_ns,
        })
    };
    let reason = match &report.decision {
        Decision::Allow => None,
        Decision::Deny(d) => Some(d.reason.clone()),
        Decision::Ask { .. } => Some(report.decision.ask_reasons().join("; ")),
    };
    serde_json::json!({
        "event": run.event.as_str(),
        "taskType": run.task_type,
        "task": run.task,
        "intent": run.intent,
        "status": verdict(report),
        "decision": report.decision.as_str(),
        "reason": reason,
        "autoAccepted": report.no_hooks(),
        "hooks": report.hooks.iter().map(hook).collect::<Vec<_>>(),
    })
}
