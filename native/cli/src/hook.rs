//! `chokepoint hook --agent <agent>`: another agent's hook. Reads the agent's hook input on stdin,
//! has the core judge it (`chokepoint_core::agents`) and prints the answer in the agent's format with
//! its exit code. This file owns only what a process owns: stdin, the deadline, a panic, the exit.
//!
//! It never fails open. Every agent lets a call through when its hook exits with another code than 2,
//! prints something it cannot read, or runs past its timeout; so whatever goes wrong here (input we
//! cannot read, a workspace that will not open, a panic, our own deadline, which comes before the
//! agent's), a gate is denied in the form that blocks in that agent, with a reason that says what to
//! fix, and any other event goes on with the reason on stderr.

use chokepoint_core::Engine;
use chokepoint_core::agents::hook::{HookOptions, answer};
use chokepoint_core::agents::input::{self, Call};
use chokepoint_core::agents::reply::{self, Reply};
use chokepoint_core::external_events::Agent;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Duration;

/// The most we read from stdin: a hook input is a few KiB (a write's content included, up to a few
/// MiB); more is not an agent's hook input.
const MAX_INPUT: u64 = 64 * 1024 * 1024;

#[derive(Debug, clap::Args)]
pub struct HookArgs {
    /// The agent whose hook this is: claude, codex, gemini, copilot, cursor, vscode.
    #[arg(long, value_parser = parse_agent)]
    agent: Agent,
    /// The event, for an agent that does not name it in its input (Copilot CLI).
    #[arg(long)]
    event: Option<String>,
    /// The workspace. Default: the agent's project directory ($CLAUDE_PROJECT_DIR,
    /// $GEMINI_PROJECT_DIR), else the nearest folder above the input's `cwd` that holds
    /// `.orchestration/`, else that `cwd`, else the current directory.
    #[arg(long)]
    workspace: Option<PathBuf>,
    /// Seconds after which the hook answers on its own (a deny, for a gate): keep it under the
    /// agent's timeout for the hook.
    #[arg(long, default_value_t = 25)]
    deadline: u64,
}

fn parse_agent(id: &str) -> Result<Agent, String> {
    Agent::from_id(id).ok_or_else(|| {
        let known: Vec<&str> = Agent::ALL.iter().map(|a| a.id()).collect();
        format!("unknown agent `{id}`; known agents: {}", known.join(", "))
    })
}

pub fn run(args: HookArgs) -> ExitCode {
    let reply = judge(&args);
    // A reply is one write each; a closed pipe leaves the exit code to say it.
    let _ = std::io::stdout().write_all(reply.stdout.as_bytes());
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().write_all(reply.stderr.as_bytes());
    // Without waiting for a judge that ran past the deadline: its answer no longer counts.
    std::process::exit(i32::from(reply.exit));
}

fn judge(args: &HookArgs) -> Reply {
    let mut bytes = Vec::new();
    if let Err(e) = std::io::stdin().take(MAX_INPUT).read_to_end(&mut bytes) {
        return Reply::block(&format!("Chokepoint could not read the hook input: {e}"));
    }
    let call = match input::parse(args.agent, &bytes, args.event.as_deref()) {
        Ok(call) => call,
        Err(e) => {
            let reason = format!(
                "Chokepoint could not read this {} hook input ({e}); check that the hook is `chokepoint hook --agent {}`",
                args.agent.as_str(),
                args.agent.id()
            );
            return match &args.event {
                // The command line says which event: answered in its format (a gate is denied).
                Some(event) => reply::failure(&Call::bare(args.agent, event), &reason),
                // We cannot tell which event this is: exit 2 blocks wherever blocking is possible.
                None => Reply::block(&reason),
            };
        }
    };
    if call.kind.is_none() {
        return Reply::default();
    }
    let workspace = args.workspace.clone().unwrap_or_else(|| workspace_of(&call));
    let options = HookOptions { program: std::env::current_exe().ok(), depth: crate::hook_depth() };
    let (send, receive) = mpsc::channel();
    let judged = call.clone();
    let spawned = std::thread::Builder::new().name("chokepoint-hook".into()).spawn(move || {
        // A panic is caught here and answered below: the channel closes without a reply.
        let reply = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| judge_in(&workspace, &judged, &options)));
        if let Ok(reply) = reply {
            let _ = send.send(reply);
        }
    });
    if let Err(e) = spawned {
        return reply::failure(&call, &format!("Chokepoint could not start judging: {e}"));
    }
    match receive.recv_timeout(Duration::from_secs(args.deadline)) {
        Ok(reply) => reply,
        Err(mpsc::RecvTimeoutError::Timeout) => reply::failure(
            &call,
            &format!(
                "Chokepoint did not decide within {} s (a hook of .orchestration/hooks.yaml may be slow); raise `--deadline` together with the agent's hook timeout, or make the hook faster",
                args.deadline
            ),
        ),
        Err(mpsc::RecvTimeoutError::Disconnected) => reply::failure(
            &call,
            "Chokepoint's hook crashed while judging this call (the message is above); please report it with the hook input",
        ),
    }
}

fn judge_in(workspace: &Path, call: &Call, options: &HookOptions) -> Reply {
    let engine = match Engine::open(workspace) {
        Ok(engine) => engine,
        Err(e) => {
            return reply::failure(
                call,
                &format!(
                    "Chokepoint cannot open the workspace `{}`: {e}; run `chokepoint doctor` there, or pass `--workspace`",
                    workspace.display()
                ),
            );
        }
    };
    let reply = crate::block_on(answer(&engine, call, options));
    // What nobody waited for (a session's start, a tool's result) is made durable before the process
    // ends; a gate's record already was, before its answer.
    // The databases are closed as usual: a process that left SQLite's log unchecked would make the
    // next one read the whole log back when it opens (measured: slower than the checkpoint's syncs).
    if let Err(e) = engine.tracer().flush()
        && !call.is_gate()
    {
        return Reply { stderr: format!("{}chokepoint: the trace could not be written: {e}\n", reply.stderr), ..reply };
    }
    reply
}

/// Where the agent works: its project directory when it says, else the nearest folder above its
/// `cwd` that Chokepoint governs.
fn workspace_of(call: &Call) -> PathBuf {
    for var in ["CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR", "CURSOR_PROJECT_DIR"] {
        if let Some(dir) = std::env::var_os(var).filter(|d| !d.is_empty()) {
            return PathBuf::from(dir);
        }
    }
    let start = call.cwd.as_deref().map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
    start.ancestors().find(|dir| dir.join(".orchestration").is_dir()).map(Path::to_path_buf).unwrap_or(start)
}
