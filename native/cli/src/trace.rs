//! `chokepoint trace`: check the ledger's integrity, append an event of a script's own through the same
//! durable writer, and (with the index) show, blame and export.
//!
//! `verify` exit codes say what is wrong: 0 intact, 10 edited, 11 deleted, 12 inserted, 13 reordered,
//! 14 truncated, 15 a torn tail; 1 when the ledger cannot be read; 2 usage.

use crate::EXIT_CONFIG;
use chokepoint_core::Sidecar;
use chokepoint_core::ledger::verify::ProblemKind;
use chokepoint_core::ledger::{Record, RecordKind};
use clap::Subcommand;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Check the whole ledger: the hash chain, the sequence, and the head kept in the state database.
    /// Names the first bad record; the exit code says what is wrong with it.
    Verify {
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Append an event of your own (a CI run, a human commit) through the same durable writer the
    /// agents use; prints its sequence number once it is on disk.
    Record {
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        /// A JSON object: `event` (its name) and any of `session`, `agent`, `task`, `intent`, `tool`,
        /// `model`, `files`; every other field is kept under `data`.
        #[arg(long)]
        event: String,
    },
}

pub fn run(command: TraceCommand) -> ExitCode {
    match command {
        TraceCommand::Verify { workspace, json } => verify(&workspace, json),
        TraceCommand::Record { workspace, event } => record(&workspace, &event),
    }
}

fn verify(workspace: &std::path::Path, json: bool) -> ExitCode {
    let sidecar = Sidecar::new(workspace);
    let head = match chokepoint_core::ledger::head::read(&sidecar.state_db()) {
        Ok(h) => h,
        Err(e) => return failure(&e.to_string()),
    };
    let v = match chokepoint_core::ledger::verify::verify(&sidecar.trace_ledger(), head.as_ref()) {
        Ok(v) => v,
        Err(e) => return failure(&e.to_string()),
    };
    if json {
        println!(
            "{}",
            serde_json::json!({
                "intact": v.is_intact(),
                "records": v.records,
                "headHash": v.head_hash,
                "headInDatabase": head.as_ref().map(|h| serde_json::json!({ "count": h.count, "hash": h.hash })),
                "problem": v.problem.as_ref().map(|p| serde_json::json!({ "kind": p.kind.to_string(), "line": p.line, "offset": p.offset, "detail": p.detail })),
            })
        );
    }
    match &v.problem {
        None => {
            if !json {
                println!("ledger intact: {} records, head {}", v.records, v.head_hash);
            }
            ExitCode::SUCCESS
        }
        Some(p) => {
            if !json {
                eprintln!("ledger damaged: {p}");
            }
            ExitCode::from(match p.kind {
                ProblemKind::Edited => 10,
                ProblemKind::Deleted => 11,
                ProblemKind::Inserted => 12,
                ProblemKind::Reordered => 13,
                ProblemKind::Truncated => 14,
                ProblemKind::TornTail => 15,
            })
        }
    }
}

fn record(workspace: &std::path::Path, event: &str) -> ExitCode {
    let mut fields = match serde_json::from_str::<serde_json::Value>(event) {
        Ok(serde_json::Value::Object(map)) => map,
        Ok(_) => return usage("--event must be a JSON object"),
        Err(e) => return usage(&format!("--event is not valid JSON: {e}")),
    };
    let Some(name) = fields.remove("event").and_then(|v| v.as_str().map(str::to_owned)).filter(|n| !n.is_empty()) else {
        return usage("--event needs an `event` field naming it");
    };
    let mut record = Record::new(RecordKind::External);
    record.event = Some(name);
    let mut take = |key: &str| fields.remove(key).and_then(|v| v.as_str().map(str::to_owned));
    record.session = take("session");
    record.agent = take("agent");
    record.task = take("task");
    record.intent = take("intent");
    record.tool = take("tool");
    record.model = take("model");
    if let Some(files) = fields.remove("files") {
        match serde_json::from_value(files) {
            Ok(files) => record.files = files,
            Err(e) => return usage(&format!("`files` is not a list of {{path, sha256?, ranges?}}: {e}")),
        }
    }
    if !fields.is_empty() {
        record.data = Some(serde_json::Value::Object(fields));
    }
    let sidecar = Sidecar::new(workspace);
    if !sidecar.exists() {
        return usage(&format!("{} has no .orchestration folder", workspace.display()));
    }
    let (ledger, recovery) = match chokepoint_core::ledger::writer::Ledger::open(&sidecar) {
        Ok(l) => l,
        Err(e) => return failure(&e.to_string()),
    };
    if let Some(r) = recovery {
        eprintln!("warning: {r}");
    }
    match ledger.append(record) {
        Ok(appended) => {
            println!("{}", appended.seq);
            ExitCode::SUCCESS
        }
        Err(e) => failure(&e.to_string()),
    }
}

fn usage(message: &str) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(EXIT_CONFIG)
}

fn failure(message: &str) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::FAILURE
}
