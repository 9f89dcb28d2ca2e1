//! `chokepoint info` and `chokepoint config check`.

use crate::{EXIT_CONFIG, EXIT_UNGUARDED};
use chokepoint_core::{Diagnostic, Engine, EngineInfo};
use std::process::ExitCode;

pub fn info(engine: &Engine, json: bool) -> ExitCode {
    let info = engine.info();
    if json {
        println!("{}", info_json(&info));
    } else {
        print!("{}", info_text(&info));
    }
    ExitCode::SUCCESS
}

pub fn check(engine: &Engine) -> ExitCode {
    let info = engine.info();
    let warnings = info.warnings();
    if info.diagnostics.is_empty() && !warnings.is_empty() {
        println!("configuration loads, but scope checks are OFF: {} hooks, no active_intents.yaml", info.hook_count);
        for w in &warnings {
            eprintln!("warning: {w}");
        }
        ExitCode::from(EXIT_UNGUARDED)
    } else if info.diagnostics.is_empty() {
        println!("configuration ok: {} hooks, {} intents", info.hook_count, info.intent_ids.len());
        ExitCode::SUCCESS
    } else {
        for d in &info.diagnostics {
            eprintln!("error: {d}");
        }
        ExitCode::from(EXIT_CONFIG)
    }
}

fn info_text(info: &EngineInfo) -> String {
    let list = |items: &[String]| if items.is_empty() { "none".to_owned() } else { items.join(", ") };
    let events: Vec<String> = info.events.iter().map(ToString::to_string).collect();
    let mut out = format!("chokepoint {}\n", info.version);
    out += &format!("workspace   {}\n", info.workspace_root.display());
    out += &format!(
        "hooks       {} ({} hooks; events: {}; task types: {})\n",
        info.hooks.status.as_str(),
        info.hook_count,
        list(&events),
        list(&info.task_types)
    );
    out += &format!("intents     {} ({})\n", info.intents.status.as_str(), list(&info.intent_ids));
    for d in &info.diagnostics {
        out += &format!("error: {d}\n");
    }
    for w in info.warnings() {
        out += &format!("warning: {w}\n");
    }
    out
}

pub fn diagnostic_json(d: &Diagnostic) -> serde_json::Value {
    serde_json::json!({ "file": d.file, "line": d.line, "column": d.column, "code": d.code, "message": d.message })
}

fn info_json(info: &EngineInfo) -> serde_json::Value {
    serde_json::json!({
        "version": info.version,
        "workspaceRoot": info.workspace_root,
        "hooks": { "path": info.hooks.path, "status": info.hooks.status.as_str() },
        "intents": { "path": info.intents.path, "status": info.intents.status.as_str() },
        "hookCount": info.hook_count,
        "events": info.events.iter().map(|e| e.as_str()).collect::<Vec<_>>(),
        "taskTypes": info.task_types,
        "intentIds": info.intent_ids,
        "diagnostics": info.diagnostics.iter().map(diagnostic_json).collect::<Vec<_>>(),
        "warnings": info.warnings(),
    })
}
