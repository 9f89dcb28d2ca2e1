//! The `chokepoint` command. This file owns argv, output formats and exit codes; every answer comes
//! from `chokepoint-core`.
//!
//! Exit codes are part of the interface and stay stable: 0 success, 2 usage or configuration error,
//! 1 any other failure. (Later commands add 1 = deny, 3 = ask for decisions.)
#![forbid(unsafe_code)]
#![allow(clippy::print_stdout)] // a CLI prints; this is the one crate that may

use chokepoint_core::{Diagnostic, Engine, EngineInfo};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Parser)]
#[command(name = "chokepoint", version, about = "Govern what AI coding agents do to a workspace")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Show the engine version and the configuration it loaded for a workspace.
    Info {
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        /// Print machine-readable JSON.
        #[arg(long)]
        json: bool,
    },
    /// Work with the workspace configuration (`.orchestration/`).
    #[command(subcommand)]
    Config(ConfigCommand),
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// Validate hooks.yaml and active_intents.yaml; exit 2 with file:line:column diagnostics if invalid.
    Check {
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
    },
}

const EXIT_CONFIG: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Info { workspace, json } => with_engine(&workspace, |engine| {
            let info = engine.info();
            if json {
                println!("{}", info_json(&info));
            } else {
                print!("{}", info_text(&info));
            }
            ExitCode::SUCCESS
        }),
        Command::Config(ConfigCommand::Check { workspace }) => with_engine(&workspace, |engine| {
            let info = engine.info();
            if info.diagnostics.is_empty() {
                println!("configuration ok: {} hooks, {} intents", info.hook_count, info.intent_ids.len());
                ExitCode::SUCCESS
            } else {
                for d in &info.diagnostics {
                    eprintln!("error: {d}");
                }
                ExitCode::from(EXIT_CONFIG)
            }
        }),
    }
}

fn with_engine(workspace: &std::path::Path, run: impl FnOnce(&Engine) -> ExitCode) -> ExitCode {
    match Engine::open(workspace) {
        Ok(engine) => run(&engine),
        Err(e) => {
            eprintln!("error: cannot open workspace `{}`: {e}", workspace.display());
            ExitCode::from(EXIT_CONFIG)
        }
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
    out
}

fn info_json(info: &EngineInfo) -> serde_json::Value {
    let diagnostic = |d: &Diagnostic| {
        serde_json::json!({
            "file": d.file, "line": d.line, "column": d.column, "code": d.code, "message": d.message,
        })
    };
    serde_json::json!({
        "version": info.version,
        "workspaceRoot": info.workspace_root,
        "hooks": { "path": info.hooks.path, "status": info.hooks.status.as_str() },
        "intents": { "path": info.intents.path, "status": info.intents.status.as_str() },
        "hookCount": info.hook_count,
        "events": info.events.iter().map(|e| e.as_str()).collect::<Vec<_>>(),
        "taskTypes": info.task_types,
        "intentIds": info.intent_ids,
        "diagnostics": info.diagnostics.iter().map(diagnostic).collect::<Vec<_>>(),
    })
}
