//! `chokepoint serve`: the workspace's engine kept loaded, answering the `chokepoint hook` calls of
//! every agent on the workspace over a local socket (`chokepoint_core::serve`), for people who work
//! without VS Code (whose Chokepoint extension serves its own engine). Configuration edits are picked
//! up as they are saved; a configuration that stops loading keeps the last good one running and says
//! so here. Runs until SIGINT or SIGTERM, then removes its socket: hooks judge alone again. Beside
//! the socket, agents whose hooks post to a URL (Claude Code's `type: "http"`) reach it on 127.0.0.1,
//! with the URL and the run's token in `.orchestration/serve.json`.
//!
//! With `--review`, the person at this terminal decides the asks of every agent's hooks as they open
//! (`review.rs`), on a thread beside the server, until stdin ends.

use chokepoint_core::Engine;
use chokepoint_core::engine::watch::DEFAULT_DEBOUNCE;
use chokepoint_core::serve::deciders::Act;
use chokepoint_core::serve::server::{Limits, ServeOptions, Server};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The workspace to serve.
    #[arg(long, default_value = ".")]
    workspace: PathBuf,
    /// Print each Pending as it opens (a hook's ask about an agent's tool call) and decide it here:
    /// approve, reject with a reason, or modify its input in $EDITOR. Until stdin ends.
    #[arg(long)]
    review: bool,
    /// The port of the HTTP endpoint for agents' HTTP hooks, on 127.0.0.1. Default: one the system
    /// picks (see .orchestration/serve.json).
    #[arg(long, default_value_t = 0)]
    http_port: u16,
    /// How many connections the socket takes at once (each process at most 64 of them); over it, a
    /// hook judges alone at once. For tests and tuning.
    #[arg(long, hide = true)]
    max_connections: Option<usize>,
}

pub fn run(args: ServeArgs) -> ExitCode {
    let engine = match Engine::open(&args.workspace) {
        Ok(engine) => Arc::new(engine),
        Err(e) => {
            eprintln!("error: cannot open workspace `{}`: {e}", args.workspace.display());
            return ExitCode::from(crate::EXIT_CONFIG);
        }
    };
    // A live engine copies the worktree's ledger to the team's database, when one is configured.
    engine.tracer().copy_in_background();
    // Whoever runs the live engine decides its Pendings at its prompt (`--review`) and holds its
    // token: not an agent's process.
    if let Err(refused) = chokepoint_core::serve::deciders::check_this_process(&engine, Act::Serve) {
        eprintln!("error: {refused}");
        return ExitCode::from(1);
    }
    for d in &engine.info().diagnostics {
        eprintln!("warning: {d} (gates are denied until the configuration loads)");
    }
    let watcher = engine.watch(DEFAULT_DEBOUNCE, |diagnostics| {
        if diagnostics.is_empty() {
            eprintln!("chokepoint: configuration reloaded");
        }
        for d in &diagnostics {
            eprintln!("warning: {d} (the last good configuration keeps running)");
        }
    });
    if let Err(e) = &watcher {
        eprintln!("warning: configuration edits will not be picked up ({e}); restart `chokepoint serve` after editing");
    }
    let mut limits = Limits::default();
    if let Some(max) = args.max_connections {
        limits = Limits { connections: max, per_peer: limits.per_peer.min(max), ..limits };
    }
    let options = ServeOptions { program: std::env::current_exe().ok(), http_port: args.http_port, limits };
    // The stop signals are caught before the server says it serves: a stop that comes at once (a
    // person's Ctrl-C, a supervisor's SIGTERM) still stops the server and flushes the trace, instead
    // of killing the process with its socket left behind.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime starts");
    let stopped = match stop_signals(&runtime) {
        Ok(signals) => signals,
        Err(e) => {
            eprintln!("error: cannot wait for a signal: {e}");
            return ExitCode::from(1);
        }
    };
    let mut server = match Server::start(Arc::clone(&engine), options) {
        Ok(server) => server,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    eprintln!(
        "chokepoint: serving {} at {} (stop with Ctrl-C)",
        engine.sidecar().workspace_root().display(),
        server.endpoint().socket().display()
    );
    // None on Windows (`serve::server` says why).
    if !server.http_url().is_empty() {
        eprintln!("chokepoint: http hooks post to {}/hook/claude (its token is in {})", server.http_url(), server.access_file().display());
    }
    if args.review {
        let desk = crate::approvals::Local { engine: Arc::clone(&engine), by: crate::approvals::by() };
        // The review ends with its input; the server keeps serving until a signal. Its thread is left
        // to the exit: a read of the terminal cannot be interrupted.
        let spawned = std::thread::Builder::new().name("chokepoint-review".into()).spawn(move || {
            let (stdin, mut stdout) = (std::io::stdin(), std::io::stdout());
            if let Err(e) = crate::review::run(&desk, None, &mut stdin.lock(), &mut stdout) {
                eprintln!("error: the review stopped: {e}");
            }
        });
        if let Err(e) = spawned {
            eprintln!("warning: cannot start the review ({e}); decide with `chokepoint approvals` from another terminal");
        }
    }
    runtime.block_on(stopped);
    server.stop();
    if let Err(e) = engine.tracer().flush() {
        eprintln!("error: the trace could not be written: {e}");
        return ExitCode::from(1);
    }
    eprintln!("chokepoint: stopped after {} calls ({} refused)", server.served(), server.refused());
    ExitCode::SUCCESS
}

/// The stop signals, caught from this call on; the future ends at the first. SIGINT (a person's
/// Ctrl-C) and SIGTERM (a supervisor's) on Unix.
#[cfg(unix)]
fn stop_signals(runtime: &tokio::runtime::Runtime) -> std::io::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let _in_runtime = runtime.enter();
    let (mut interrupt, mut terminate) = (signal(SignalKind::interrupt())?, signal(SignalKind::terminate())?);
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    })
}

/// Windows' console events instead: Ctrl-C and Ctrl-Break.
#[cfg(not(unix))]
fn stop_signals(runtime: &tokio::runtime::Runtime) -> std::io::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::windows::{ctrl_break, ctrl_c};
    let _in_runtime = runtime.enter();
    let (mut interrupt, mut brk) = (ctrl_c()?, ctrl_break()?);
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = brk.recv() => {}
        }
    })
}
