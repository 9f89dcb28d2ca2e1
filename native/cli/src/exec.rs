//! `chokepoint exec`: runs a command exactly as the agent's `execute_command` tool does: contained to
//! the session's intent scope (Landlock where the kernel has it, snapshot-and-revert everywhere),
//! with the same report. So a terminal, a script or another agent's shell tool can be wrapped.
//!
//! Exit code: the command's own; [`EXIT_CONTAINED`] when something it changed outside the scope was
//! undone (or could not be), whatever the command returned; 124 when it timed out; 128 + N when a
//! signal N ended it; 2 when it could not be started contained at all.

use crate::EXIT_CONFIG;
use chokepoint_core::containment::ContainReport;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

/// The command changed something outside its scope: undone, or reported as not undoable.
pub const EXIT_CONTAINED: u8 = 4;
const EXIT_TIMEOUT: u8 = 124;

#[derive(Debug, clap::Args)]
pub struct ExecArgs {
    #[arg(long, default_value = ".")]
    workspace: PathBuf,
    /// The session whose intent scope contains the command (without one it may change nothing).
    #[arg(long)]
    session: String,
    /// Seconds before the command's whole process group is killed.
    #[arg(long)]
    timeout: Option<u64>,
    /// Also write the containment report as JSON to this file.
    #[arg(long)]
    report: Option<PathBuf>,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true)]
    command: Vec<OsString>,
}

pub fn run(args: ExecArgs) -> ExitCode {
    crate::with_valid_engine(&args.workspace, |engine| {
        // What runs under this process is an agent's (or contained as one): it may decide nothing.
        let _ = chokepoint_core::serve::deciders::remember_me(engine);
        let mut command = std::process::Command::new(&args.command[0]);
        command.args(&args.command[1..]);
        let report = match engine.run_contained(&args.session, command, args.timeout.map(std::time::Duration::from_secs)) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("chokepoint: {e}");
                return ExitCode::from(EXIT_CONFIG);
            }
        };
        if let Some(error) = report.tool_error() {
            eprintln!("chokepoint: {error}");
        }
        for note in report.notes() {
            eprintln!("chokepoint: note: {note}");
        }
        if let Some(path) = &args.report
            && let Err(e) = std::fs::write(path, json(&report).to_string())
        {
            eprintln!("chokepoint: cannot write the report to {}: {e}", path.display());
        }
        exit_code(&report)
    })
}

fn exit_code(report: &ContainReport) -> ExitCode {
    if !report.reverted.is_empty() || !report.not_reverted.is_empty() {
        return ExitCode::from(EXIT_CONTAINED);
    }
    if report.timed_out {
        return ExitCode::from(EXIT_TIMEOUT);
    }
    match report.exit_code() {
        Some(code) => ExitCode::from(code.clamp(0, 255) as u8),
        None => ExitCode::from(signal_code(report)),
    }
}

#[cfg(unix)]
fn signal_code(report: &ContainReport) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    report.status.and_then(|s| s.signal()).map_or(1, |sig| 128u8.saturating_add(sig as u8))
}

#[cfg(not(unix))]
fn signal_code(_report: &ContainReport) -> u8 {
    1
}

/// The report as the trace and wrapping scripts read it.
pub fn json(report: &ContainReport) -> serde_json::Value {
    let changes = |list: &[chokepoint_core::snapshot::Change]| {
        list.iter().map(|c| serde_json::json!({ "path": c.path, "kind": c.kind.as_str() })).collect::<Vec<_>>()
    };
    serde_json::json!({
        "exitCode": report.exit_code(),
        "timedOut": report.timed_out,
        "confinement": confinement(report),
        "intent": report.intent_id,
        "scope": report.scope,
        "allowed": changes(&report.allowed),
        "reverted": changes(&report.reverted),
        "notReverted": report.not_reverted.iter().map(|n| serde_json::json!({ "path": n.change.path, "kind": n.change.kind.as_str(), "reason": n.reason })).collect::<Vec<_>>(),
        "toolError": report.tool_error(),
        "notes": report.notes(),
        "durationMs": report.duration.as_millis() as u64,
    })
}

fn confinement(report: &ContainReport) -> &'static str {
    match report.confinement {
        chokepoint_core::sandbox::Confinement::Enforced { .. } => "enforced",
        chokepoint_core::sandbox::Confinement::Partial { .. } => "partial",
        chokepoint_core::sandbox::Confinement::Unavailable { .. } => "unavailable",
    }
}
