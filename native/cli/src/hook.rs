//! `chokepoint hook --agent <agent>`: another agent's hook. Reads the agent's hook input on stdin,
//! has the core judge it (`chokepoint_core::agents`) and prints the answer in the agent's format with
//! its exit code. This file owns only what a process owns: stdin, the deadline, a panic, the exit.
//!
//! It never fails open. Every agent lets a call through when its hook exits with another code than 2,
//! prints something it cannot read, or runs past its timeout; so whatever goes wrong here (input we
//! cannot read, a workspace that will not open, a panic, our own deadline, which comes before the
//! agent's), a gate is denied in the form that blocks in that agent, with a reason that says what to
//! fix, and any other event goes on with the reason on stderr.
//!
//! `chokepoint hook --agent <a> [--event E] [--workspace W] [--deadline S] [--local]`: it reads stdin
//! (bounded), finds the workspace (the agent's project directory, else the nearest folder above the
//! input's `cwd` holding `.orchestration/`), and hands the call to the workspace's live engine when
//! one serves it (`serve::client::forward`, which connects without waiting, so an engine too busy or
//! stopped to queue it is judged without at once; `--local` skips that). Else it judges on a thread
//! of its own (`agents::bounded::within`, through `agents::hook::answer`) with an engine opened by
//! `Engine::open_for_one_call` (the ledger opened on another thread beside the configuration's parse),
//! handing the core a relay for an ask (`serve::relay::ToRepository`, until its own deadline: the
//! other worktrees' live engines; `--local` relays nothing). A panic on that thread, or no answer by
//! the deadline (kept under the agent's hook timeout), is answered with `reply::failure` and the
//! process exits without waiting for the judge. What nobody waited for (a session's start, a tool's
//! result) is flushed to the ledger before the exit, the state database's log is left short, and the
//! engine is not dropped (`Engine::before_exit`): the exit reclaims its threads and memory faster than
//! a drop (0.9 ms of a 4 ms process).
//!
//! VS Code's agent and Copilot CLI share `.github/hooks/chokepoint.json` (`agents::setup`); the
//! input's shape tells them apart (`input::agent_of`: VS Code's snake_case `hook_event_name`, whose
//! event wins over `--event`), so a VS Code call is read, judged and answered as `vscode` whichever id
//! the command line says; input that shows neither is denied in both agents' forms at once
//! (`reply::failure_to_either`).

use chokepoint_core::Engine;
use chokepoint_core::agents::bounded;
use chokepoint_core::agents::hook::{HookOptions, answer};
use chokepoint_core::agents::input::Call;
use chokepoint_core::agents::relay::AskRelay;
use chokepoint_core::agents::reply::{self, Reply};
use chokepoint_core::model::external_events::Agent;
use chokepoint_core::serve::client::{Forwarded, forward};
use chokepoint_core::serve::endpoint::Endpoint;
use chokepoint_core::serve::protocol::HookRequest;
use chokepoint_core::serve::relay::ToRepository;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    /// The workspace. Default: the nearest folder that holds `.orchestration/` at or above the
    /// agent's project directory ($CLAUDE_PROJECT_DIR, $GEMINI_PROJECT_DIR), else above the
    /// input's `cwd`; else that folder itself, else the current directory.
    #[arg(long)]
    workspace: Option<PathBuf>,
    /// Seconds after which the hook answers on its own (a deny, for a gate): keep it under the
    /// agent's timeout for the hook.
    #[arg(long, default_value_t = 25)]
    deadline: u64,
    /// Judge in this process even when a live engine serves the workspace (VS Code with Chokepoint,
    /// or `chokepoint serve`), and relay no ask to another worktree's; by default the call is handed
    /// to it, which answers faster.
    #[arg(long)]
    local: bool,
}

fn parse_agent(id: &str) -> Result<Agent, String> {
    Agent::from_id(id).ok_or_else(|| {
        let known: Vec<&str> = Agent::ALL.iter().map(|a| a.id()).collect();
        format!("unknown agent `{id}`; known agents: {}", known.join(", "))
    })
}

/// How long before the hook's deadline a shared ask stops waiting: time to settle and reply.
const TEAM_ASK_MARGIN: Duration = Duration::from_millis(1500);

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
    let started = Instant::now();
    let deadline = Duration::from_secs(args.deadline);
    let mut bytes = Vec::new();
    if let Err(e) = std::io::stdin().take(MAX_INPUT).read_to_end(&mut bytes) {
        return Reply::block(&format!("Chokepoint could not read the hook input: {e}"));
    }
    let call = match bounded::read(args.agent, &bytes, args.event.as_deref()) {
        Ok(call) => call,
        Err(refused) => return refused,
    };
    if call.kind.is_none() {
        return Reply::default();
    }
    let workspace = args.workspace.clone().unwrap_or_else(|| workspace_of(&call));
    // Alone, nobody here could see an ask's Pending: `decide_by` stays unset, and an ask is relayed
    // to another worktree's live engine if one runs (not with `--local`), else the fallback answers.
    let relay = (!args.local).then(|| Arc::new(ToRepository::until(started + deadline)) as Arc<dyn AskRelay>);
    // With a team's database, an ask no worktree's live engine took is shared with the team's
    // machines and waited for until a little before our deadline, so the reply is written in time.
    let team_until = (!args.local).then(|| started + deadline.saturating_sub(TEAM_ASK_MARGIN));
    let options = HookOptions { program: std::env::current_exe().ok(), depth: crate::hook_depth(), decide_by: None, relay, team_until };
    let mut note = String::new();
    if !args.local {
        match served(args, &workspace, bytes, &options, deadline.saturating_sub(started.elapsed())) {
            Forwarded::Answered(reply) => return reply,
            Forwarded::NotServed(_) => {}
            Forwarded::Failed(why) => {
                if started.elapsed() >= deadline {
                    return reply::failure(&call, &format!("Chokepoint's live engine did not answer in time ({why})"));
                }
                note = format!("chokepoint: judged without the live engine: {why}\n");
            }
        }
    }
    let judged = call.clone();
    let reply = bounded::within(&call, deadline.saturating_sub(started.elapsed()), move || judge_in(&workspace, &judged, &options));
    Reply { stderr: note + &reply.stderr, ..reply }
}

/// Hands the call to the workspace's live engine, if one is up, and waits for it until our deadline
/// (`left`), which travels with it: an ask waits for a person until a little before it.
fn served(args: &HookArgs, workspace: &Path, bytes: Vec<u8>, options: &HookOptions, left: Duration) -> Forwarded {
    // Not UTF-8 cannot be an agent's JSON: judged alone, which says so in the agent's format.
    let Ok(input) = String::from_utf8(bytes) else { return Forwarded::NotServed("the input is not UTF-8".into()) };
    let request = HookRequest {
        agent: args.agent.id().to_owned(),
        event: args.event.clone(),
        input,
        depth: options.depth,
        program: options.program.clone(),
        deadline_ms: Some(u64::try_from(left.as_millis()).unwrap_or(u64::MAX)),
    };
    forward(&Endpoint::for_workspace(workspace), request, left)
}

fn judge_in(workspace: &Path, call: &Call, options: &HookOptions) -> Reply {
    let engine = match Engine::open_for_one_call(workspace) {
        Ok(engine) => Arc::new(engine),
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
    // The ledger is being opened beside the judging (`Engine::open_for_one_call`), so that the
    // event's record waits only for its write and sync. The judging waits for that open when it gets
    // there first, and a gate whose record cannot be made is denied as ever.
    let reply = crate::block_on(answer(&engine, call, options));
    // The agent that started this hook is an agent's process to every command that decides
    // (`serve::deciders`); the live engine learns it from the socket, alone it is written here.
    let _ = chokepoint_core::serve::deciders::remember_my_agent(&engine);
    // What nobody waited for (a session's start, a tool's result) is made durable before the process
    // ends; a gate's record already was, before its answer. Then the engine is left to the exit that
    // follows (`Engine::before_exit` says why).
    let flushed = engine.before_exit();
    std::mem::forget(engine);
    if let Err(e) = flushed
        && !call.is_gate()
    {
        return Reply { stderr: format!("{}chokepoint: the trace could not be written: {e}\n", reply.stderr), ..reply };
    }
    reply
}

/// Where the agent works: the nearest folder Chokepoint governs at or above its project directory
/// when it says ($CLAUDE_PROJECT_DIR, $GEMINI_PROJECT_DIR: the folder it was started in, which may
/// lie below the workspace), else above its `cwd`; that folder itself when none above is governed.
fn workspace_of(call: &Call) -> PathBuf {
    let project = ["CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR", "CURSOR_PROJECT_DIR"]
        .iter()
        .find_map(|var| std::env::var_os(var).filter(|d| !d.is_empty()))
        .map(PathBuf::from);
    let start = project.or_else(|| call.cwd.as_deref().map(PathBuf::from)).unwrap_or_else(|| PathBuf::from("."));
    start.ancestors().find(|dir| dir.join(".orchestration").is_dir()).map(Path::to_path_buf).unwrap_or(start)
}
