//! `chokepoint exec`: runs a command exactly as the agent's `execute_command` tool does: contained to
//! the session's intent scope (isolated where Linux allows, with this program as its supervisor;
//! Landlock where the kernel has it), with the same report. So a terminal, a script or another
//! agent's shell tool can be wrapped. Also the hidden `__isolate` and `__isolate-init` roles of that
//! supervisor (`containment::isolate`). On Windows, where the command runs in the open beside this
//! program, this program guards itself against the command and stops the command when the shell
//! that started it ends (`supervise`).
//!
//! Exit code: the command's own; [`EXIT_CONTAINED`] when some of its changes were held back (outside
//! the scope, or in conflict with someone else's), whatever the command returned; 124 when it timed
//! out; 128 + N when a signal N ended it; 2 when it could not be started contained at all.

use crate::EXIT_CONFIG;
use chokepoint_core::containment::ContainReport;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

/// Some of the command's changes were held back: outside the scope, or in conflict with someone
/// else's.
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
        let cwd = match std::env::current_dir() {
            Ok(d) => d,
            Err(e) => {
                eprintln!("chokepoint: cannot read the working folder: {e}");
                return ExitCode::from(EXIT_CONFIG);
            }
        };
        let shell = chokepoint_core::containment::Shell { argv: args.command.clone(), cwd, env: Vec::new(), capture: false };
        // This program is the isolated command's supervisor.
        let isolator = std::env::current_exe().ok();
        let timeout = args.timeout.map(std::time::Duration::from_secs);
        let report = supervise::run(engine, &args.session, || {
            engine.run_contained(&args.session, shell, isolator.as_deref(), timeout).map_err(|e| e.to_string())
        });
        let report = match report {
            Ok(r) => r,
            Err(e) => {
                eprintln!("chokepoint: {e}");
                return ExitCode::from(EXIT_CONFIG);
            }
        };
        // On stderr, which every agent's shell tool hands its model with the command's output.
        if let Some(error) = report.tool_error().or_else(|| chokepoint_core::agents::shell::confined_failure(&report)) {
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

/// The contained run, under this program's supervision: on Unix as it is (an isolated command's
/// namespace hides its supervisor from it); on Windows, where the command runs in the open beside
/// this program and could end it, guarded and watching the shell that started it
/// (`chokepoint_win::supervisor` says how, and what that leaves).
#[cfg(not(windows))]
mod supervise {
    use chokepoint_core::Engine;
    use chokepoint_core::containment::ContainReport;

    pub fn run(
        _engine: &Engine,
        _session: &str,
        contained: impl FnOnce() -> Result<ContainReport, String>,
    ) -> Result<ContainReport, String> {
        contained()
    }
}

#[cfg(windows)]
mod supervise {
    use chokepoint_core::Engine;
    use chokepoint_core::containment::ContainReport;
    use chokepoint_win::supervisor::{Parent, guard};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    /// How often the watcher looks whether the run is over: what it can add to `exec`'s own end.
    const POLL: Duration = Duration::from_millis(25);

    /// Watches the process that started this one (the agent's shell), guards this process, then
    /// runs `contained`. When that shell ends, which is how agents cancel a command (this process
    /// no longer can be ended by them), the command is stopped; what it changed is still judged and
    /// recorded. A process that cannot be guarded runs nothing.
    pub fn run(engine: &Engine, session: &str, contained: impl FnOnce() -> Result<ContainReport, String>) -> Result<ContainReport, String> {
        let done = AtomicBool::new(false);
        std::thread::scope(|scope| {
            // A parent that cannot be opened (another user's, an elevated one) is not watched: the
            // command then runs to its end or its timeout, as it would without a watcher.
            if let Ok(Some(parent)) = Parent::of_this_process() {
                let done = &done;
                scope.spawn(move || {
                    while !done.load(Ordering::Acquire) {
                        if parent.ended_within(POLL) {
                            // Until the run has begun there is nothing to cancel: tried again until it has.
                            while !done.load(Ordering::Acquire) && !engine.cancel_contained(session) {
                                std::thread::sleep(POLL);
                            }
                            return;
                        }
                    }
                });
            }
            // After the watcher started, so that its thread is guarded too.
            let report = guard()
                .map_err(|e| {
                    format!(
                        "the command was not run: this process cannot guard itself against it ({e}), and a command that could end its supervisor would leave what it changed unrecorded"
                    )
                })
                .and_then(|()| contained());
            // Also when the guard failed: the watcher, if it started, ends with the run.
            done.store(true, Ordering::Release);
            report
        })
    }
}

/// Which role of an isolated command's supervision `arg` names, if any.
pub fn isolation_role(arg: &str) -> Option<&'static str> {
    use chokepoint_core::containment::isolate::{INIT_ARG, SUPERVISOR_ARG};
    [SUPERVISOR_ARG, INIT_ARG].into_iter().find(|r| *r == arg)
}

/// `chokepoint __isolate -- <command…>` and `chokepoint __isolate-init -- <command…>`.
pub fn isolation(role: &str) -> ExitCode {
    use chokepoint_core::containment::isolate;
    let command: Vec<OsString> = std::env::args_os().skip(2).skip_while(|a| a == "--").collect();
    let result = if role == isolate::SUPERVISOR_ARG { isolate::supervise(&command) } else { isolate::init(&command) };
    match result {
        Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
        Err(e) => {
            eprintln!("chokepoint: {e}");
            ExitCode::from(isolate::NOT_ISOLATED)
        }
    }
}

fn exit_code(report: &ContainReport) -> ExitCode {
    if report.held_back() {
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
    let changes = |list: &[chokepoint_core::containment::snapshot::Change]| {
        list.iter().map(|c| serde_json::json!({ "path": c.path, "kind": c.kind.as_str() })).collect::<Vec<_>>()
    };
    serde_json::json!({
        "exitCode": report.exit_code(),
        "timedOut": report.timed_out,
        "cancelled": report.cancelled,
        "confinement": confinement(report),
        "isolated": matches!(report.isolation, chokepoint_core::containment::Isolation::Isolated),
        "intent": report.intent_id,
        "scope": report.scope,
        "allowed": changes(&report.allowed),
        "refused": changes(&report.refused),
        "notApplied": report.not_applied.iter().map(|n| serde_json::json!({ "path": n.change.path, "kind": n.change.kind.as_str(), "conflict": n.conflict, "kept": n.kept, "reason": n.reason })).collect::<Vec<_>>(),
        "unattributed": changes(&report.unattributed),
        "toolError": report.tool_error(),
        "notes": report.notes(),
        "durationMs": report.duration.as_millis() as u64,
    })
}

fn confinement(report: &ContainReport) -> &'static str {
    match report.confinement {
        chokepoint_core::containment::sandbox::Confinement::Enforced { .. } => "enforced",
        chokepoint_core::containment::sandbox::Confinement::Partial { .. } => "partial",
        chokepoint_core::containment::sandbox::Confinement::Unavailable { .. } => "unavailable",
    }
}
