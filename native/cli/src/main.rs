//! The `chokepoint` command. This crate owns argv, output formats and exit codes; every answer comes
//! from `chokepoint-core`. `main.rs` holds the command line; each group of commands has its module.
//!
//! Exit codes are part of the interface and stay stable: 0 success (or allow), 1 deny or other
//! failure, 2 usage or configuration error, 3 ask; `exec` passes on its command's code (4: some of its
//! changes were held back, 124 on timeout); 5 (`config check`) a configuration that loads but leaves
//! scope checks off (`EngineInfo::warnings`). Commands started as hooks read `CHOKEPOINT_HOOK_DEPTH`.
//!
//! Each command is a thin call into the core: `explain` and `intent select` run the same chain as an
//! agent's call, `exec` the same containment as the agent's `execute_command`. Two things are
//! dispatched before the command tree is parsed: `hook`, whose arguments are parsed alone
//! (`HookCli`), since a hook's start is part of every answer; and the hidden `__isolate` and
//! `__isolate-init` (the isolated command's supervisor and init, `exec.rs`), while the process is
//! still single-threaded (a threaded process cannot enter a user namespace). The binary is linked
//! position-dependent on Linux (`build.rs`) and statically where glibc's static archives are installed
//! (`scripts/build.js` passes `crt-static` to this crate alone with `cargo rustc`): no dynamic loader
//! at each start.
#![forbid(unsafe_code)]
#![allow(clippy::print_stdout)] // a CLI prints; this is the one crate that may

// The system allocator, not mimalloc (which the binding and the benches use): every command is a
// short process, and `chokepoint hook` runs once per tool call of another agent, where mimalloc's
// start (its arenas, advised into transparent huge pages that the kernel zeroes) cost about 2 ms of
// an 8 ms answer. Its gain, the p99 of a long-lived engine whose writer thread frees what the judge
// allocated, does not arise in a process that judges one call.

mod approvals;
mod doctor;
mod exec;
mod explain;
mod hook;
mod info;
mod init;
mod intent;
mod mcp;
mod pending_text;
mod replay;
mod review;
mod run;
mod serve;
mod sessions;
mod task;
mod team_pendings;
mod trace;

use chokepoint_core::Engine;
use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};
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
    /// Select, release and inspect the intents sessions work on (the handshake, from a terminal).
    #[command(subcommand)]
    Intent(intent::IntentCommand),
    /// Judge one tool call against the workspace's current configuration, through the same chain as
    /// an agent's call, and print the decision, every hook's outcome and the canonical paths judged.
    /// Hooks run as they would for the agent (a command hook runs; `select_active_intent` takes the
    /// lock); the tool itself does not. Exit code: 0 allow, 1 deny, 3 ask, 2 usage or configuration
    /// error.
    Explain(explain::ExplainArgs),
    /// Run a command as the agent's `execute_command` does: in namespaces of its own over a
    /// copy-on-write layer of the workspace where Linux allows it, so that only its changes inside
    /// the session's intent scope are applied and nobody else's work is ever touched (elsewhere its
    /// changes are compared and reported, never undone); Landlock where the kernel has it. Exit code:
    /// the command's, 4 if some of its changes were held back, 124 on timeout.
    Exec(exec::ExecArgs),
    /// Answer another agent's hook (Claude Code, Codex, Gemini CLI, Copilot CLI, Cursor, VS Code's
    /// agent): reads its hook input on stdin, judges it through the workspace's chain and prints the
    /// answer in that agent's format. A gate that cannot be judged is denied (exit 2 or a JSON deny),
    /// never let through.
    Hook(hook::HookArgs),
    /// Keep the workspace's engine loaded and answer every agent's `chokepoint hook` calls from it,
    /// over a socket only this user can reach: faster than a process per call, and one ledger writer.
    /// VS Code with Chokepoint does the same while it runs. Stops on Ctrl-C or SIGTERM.
    Serve(serve::ServeArgs),
    /// The sessions working in the workspace (every agent's): intent and lease, last actions,
    /// denials; `sessions revoke <session>` takes a session's lease away.
    Sessions(sessions::SessionsArgs),
    /// The Pendings of the workspace's live engine (VS Code with Chokepoint, or `chokepoint serve`):
    /// list, show, approve, reject, modify them, or review them as they open. Exit code: 1 when no
    /// live engine runs (Pendings exist only while one does) or the decision is refused.
    #[command(subcommand)]
    Approvals(approvals::ApprovalsCommand),
    /// Run a task's merge-side hooks (BeforeMerge, AfterMerge, AfterSubmit) from a CI job or a merge
    /// queue: the task type's chain for the event, else the project's; each hook's SUCCESS, FAILURE
    /// or SKIP with its remediation, recorded in the trace ledger with the task and intent. Exit
    /// code: 0 passed (a type without before-merge hooks is accepted), 1 failed, 2 usage,
    /// configuration or ledger error (never a pass).
    Run(run::RunArgs),
    /// Tasks and who may work on them: `task claim` checks a task type's `agents` allowlist.
    #[command(subcommand)]
    Task(task::TaskCommand),
    /// The trace ledger (`.orchestration/trace/`, a file per chain): verify it, record into it.
    #[command(subcommand)]
    Trace(trace::TraceCommand),
    /// Serve the intent handshake to an agent as an MCP server over stdio (list_intents,
    /// select_active_intent, intent_context, scope_expansion_request). Read-only: the agent's hooks
    /// bind its session to the intent. Exit code: 0 when the client closes stdin.
    Mcp(mcp::McpArgs),
    /// Set an agent up to be governed in a workspace: its hooks run `chokepoint hook` on every event
    /// we judge, its MCP servers include `chokepoint`, and the runtime files are git-ignored. Merges
    /// with what is there (the user's hooks, servers and settings stay); a second run changes
    /// nothing. Exit code: 0 done, 2 a file that cannot be read (nothing is written then).
    Init(init::InitArgs),
    /// For every agent set up in the workspace, every guard that cannot fire and why: a hook's
    /// program missing, an event or tool not hooked, a timeout below the deadline, hooks switched
    /// off, the MCP server missing; and each gate hook is sent a write outside the workspace, as the
    /// agent would send it, and must deny it. Exit code: 1 when a guard is inert, 0 otherwise.
    Doctor(doctor::DoctorArgs),
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// Validate hooks.yaml and active_intents.yaml; exit 2 with file:line:column diagnostics if invalid,
    /// 5 with a warning when they load but scope checks are off (no active_intents.yaml).
    Check {
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
    },
}

pub const EXIT_DENY: u8 = 1;
pub const EXIT_CONFIG: u8 = 2;
pub const EXIT_ASK: u8 = 3;
/// `config check`: the configuration loads but leaves a guard off (`EngineInfo::warnings`: no
/// active_intents.yaml, so no scope is checked). Not 0, which would read as healthy in CI; not 2,
/// which means a file to fix at a line; its own code, so a team that runs without intents on
/// purpose can accept exactly this one.
pub const EXIT_UNGUARDED: u8 = 5;

/// `chokepoint hook` parsed on its own: the same arguments, without building the parser of every
/// other command first. A hook runs once per tool call of another agent, and building the whole
/// command tree was a measurable part of its start.
#[derive(Debug, Parser)]
#[command(
    name = "chokepoint hook",
    bin_name = "chokepoint hook",
    version,
    about = "Answer another agent's hook (see `chokepoint help hook`)"
)]
struct HookCli {
    #[command(flatten)]
    args: hook::HookArgs,
}

fn main() -> ExitCode {
    let first = std::env::args_os().nth(1);
    if first.as_ref().is_some_and(|a| a == "hook") {
        return hook::run(HookCli::parse_from(std::env::args_os().skip(1)).args);
    }
    // An isolated command's supervisor and init (`containment::isolate`): hidden, started by the
    // engine only, and dispatched before anything else so the process is still single-threaded.
    if let Some(role) = first.as_ref().and_then(|a| a.to_str()).and_then(exec::isolation_role) {
        return exec::isolation(role);
    }
    let cli = Cli::parse();
    match cli.command {
        Command::Info { workspace, json } => with_engine(&workspace, |engine| info::info(engine, json)),
        Command::Config(ConfigCommand::Check { workspace }) => with_engine(&workspace, info::check),
        Command::Intent(command) => intent::run(command),
        Command::Explain(args) => explain::run(args),
        Command::Exec(args) => exec::run(args),
        Command::Hook(args) => hook::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Approvals(command) => approvals::run(command),
        Command::Sessions(args) => sessions::run(args),
        Command::Run(args) => run::run(args),
        Command::Task(command) => task::run(command),
        Command::Trace(command) => trace::run(command),
        Command::Mcp(args) => mcp::run(args),
        Command::Init(args) => init::run(args),
        Command::Doctor(args) => doctor::run(args),
    }
}

/// Opens the workspace's engine, or says why not (exit 2).
pub fn with_engine(workspace: &Path, run: impl FnOnce(&Engine) -> ExitCode) -> ExitCode {
    match Engine::open(workspace) {
        Ok(engine) => run(&engine),
        Err(e) => {
            eprintln!("error: cannot open workspace `{}`: {e}", workspace.display());
            ExitCode::from(EXIT_CONFIG)
        }
    }
}

/// Like [`with_engine`], for commands that judge: a configuration that does not load is a
/// configuration error (exit 2) rather than a judgement by the built-in defaults.
pub fn with_valid_engine(workspace: &Path, run: impl FnOnce(&Engine) -> ExitCode) -> ExitCode {
    with_engine(workspace, |engine| {
        let info = engine.info();
        if info.diagnostics.is_empty() {
            return run(engine);
        }
        for d in &info.diagnostics {
            eprintln!("error: {d}");
        }
        eprintln!("error: the configuration does not load; fix it first (`chokepoint config check`)");
        ExitCode::from(EXIT_CONFIG)
    })
}

/// The hook depth this process runs at: set by the engine for the commands it starts as hooks, so
/// that what a hook asks is judged without running the hooks again.
pub fn hook_depth() -> u32 {
    std::env::var("CHOKEPOINT_HOOK_DEPTH").ok().and_then(|d| d.parse().ok()).unwrap_or(0)
}

/// A current-thread runtime for the commands that run the asynchronous chain (command hooks).
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime starts").block_on(future)
}
