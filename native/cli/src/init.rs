//! `chokepoint init --agent <agent>`: writes the agent's hook configuration for a workspace, so that
//! every event of the agent we judge runs `chokepoint hook`, with its MCP server and the sidecar's
//! `.gitignore`. The plan (which file becomes what) is the core's (`agents::setup`); this file reads
//! the files, writes them (or prints the diff), and says what the person must still do in the agent.
//!
//! What it writes is meant to be committed: no file names this machine's paths (the hooks find
//! `chokepoint` at run time, `agents::portable`). `--local --program <path>` is the one personal
//! override, written only to the agent's local, git-ignored settings.
//!
//! Each changed file is written in one step (a temporary file renamed over it), or printed as a
//! unified diff (`--dry-run`, `similar`). The MCP server `chokepoint` (`sh -c` of `chokepoint mcp`,
//! which takes its workspace from the agent's project folder or its own) is added where the agent
//! reads project servers (Claude Code's approved by name in `enabledMcpjsonServers`, so `-p` loads
//! it); VS Code's agent gets none (its intent tools come from the extension). Init also creates or
//! updates the shared brain (`engine::brain`, printing `Refreshed::damage`).
//!
//! **Invariant: what init writes into the files an agent's project settings share through git names
//! no machine's path** (`agents::portable`; `native/cli/tests/init.rs`). The guard holds no `${...}`,
//! which Claude Code expands in `.mcp.json` before a shell sees it (the real Claude Code's test,
//! `tests/agents/portable.test.js`, caught that). `--local --program` writes Claude Code's
//! `.claude/settings.local.json` (`CHOKEPOINT_PROGRAM` in its `env`, which Claude Code gives its hooks
//! and MCP servers; `.claude/.gitignore` made to list it); the other agents read no such file, so init
//! says to set `CHOKEPOINT_PROGRAM` in the environment instead. Why PATH and a pointer rather than a
//! path: the VS Code extension prepends its binary's folder to PATH for VS Code's terminals
//! (`environmentVariableCollection`) and for its own extension host's children, which covers an agent
//! started in VS Code; the pointer, which the extension rewrites on activation
//! (`extension/src/engine/findable.ts`), covers one started anywhere else without touching the
//! person's shell profile or `~/.local/bin`.
//!
//! **Invariant: init never loses what the user wrote.** Other hooks, servers and settings stay in
//! their order (the core's own ordered JSON document, `agents::json`, rather than serde_json's
//! `preserve_order`, which would reorder every record the engine serialises in every crate of the
//! build); a file that does not parse stops the run before anything is written, with its
//! file:line:column. The agent's own trust step (Codex's hook review, Gemini CLI's and Copilot CLI's
//! folder trust) is said, not done.

use crate::EXIT_CONFIG;
use chokepoint_core::agents::portable;
use chokepoint_core::agents::setup::{self, PlannedFile, Setup};
use chokepoint_core::model::external_events::Agent;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// The agent to set up: claude, codex, gemini, copilot, cursor, vscode (VS Code's own agent).
    #[arg(long, value_parser = parse_agent)]
    agent: Agent,
    #[arg(long, default_value = ".")]
    workspace: PathBuf,
    /// Print a unified diff of every file that would change, and write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Write this machine's own settings instead of the shared ones: the agent's local, git-ignored
    /// settings file (Claude Code's `.claude/settings.local.json`), naming `--program`.
    #[arg(long, requires = "program")]
    local: bool,
    /// With `--local`: the `chokepoint` program this machine's hooks and MCP server run. The shared
    /// files never name one: their hooks find `chokepoint` on PATH, through CHOKEPOINT_PROGRAM, or
    /// the pointer the VS Code extension writes.
    #[arg(long, requires = "local")]
    program: Option<PathBuf>,
}

pub fn parse_agent(id: &str) -> Result<Agent, String> {
    setup::AGENTS.into_iter().find(|a| a.id() == id).ok_or_else(|| {
        let known: Vec<&str> = setup::AGENTS.iter().map(|a| a.id()).collect();
        format!("unknown agent `{id}`; chokepoint sets up: {}", known.join(", "))
    })
}

pub fn run(args: InitArgs) -> ExitCode {
    let workspace = match std::fs::canonicalize(&args.workspace) {
        Ok(w) => w,
        Err(e) => return usage(&format!("cannot open workspace `{}`: {e}", args.workspace.display())),
    };
    let setup = Setup { agent: args.agent, workspace: workspace.clone() };
    let files: Vec<&'static str> = match (args.local, setup::local_files(args.agent)) {
        (false, _) => setup::files(args.agent),
        (true, Some(files)) => files.to_vec(),
        (true, None) => return usage(&no_local(args.agent)),
    };
    let mut current = Vec::new();
    for path in files {
        match std::fs::read_to_string(workspace.join(path)) {
            Ok(text) => current.push((path, text)),
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return usage(&format!("cannot read {}: {e}; nothing was written", workspace.join(path).display())),
        }
    }
    let read = |path: &str| current.iter().find(|(p, _)| *p == path).map(|(_, t)| t.clone());
    let planned = match args.program.as_deref().map(program) {
        None => setup::plan(&setup, read),
        Some(Ok(program)) => setup::plan_local(&setup, &program, read).unwrap_or_else(|| unreachable!("local files checked above")),
        Some(Err(e)) => return usage(&e),
    };
    let plan = match planned {
        Ok(plan) => plan,
        Err(e) => return usage(&format!("{e}; nothing was written")),
    };
    let changed = plan.iter().any(PlannedFile::changed);
    if args.dry_run {
        for file in plan.iter().filter(|f| f.changed()) {
            print!("{}", diff(file));
        }
        if !changed {
            println!("{}: already set up in {}; nothing would change", args.agent.as_str(), workspace.display());
        }
    } else {
        for file in &plan {
            let what = match (&file.before, file.changed()) {
                (_, false) => "unchanged",
                (None, true) => "created",
                (Some(_), true) => "updated",
            };
            if file.changed()
                && let Err(e) = write(&workspace.join(file.path), &file.after)
            {
                eprintln!("error: cannot write {}: {e}", workspace.join(file.path).display());
                return ExitCode::from(crate::EXIT_DENY);
            }
            println!("{what:>9} {}", file.path);
        }
        // This machine's settings touch nothing shared (the brain is the workspace's).
        let brain = if args.local { Ok(false) } else { brain(&workspace) };
        match brain {
            Ok(true) => {}
            Ok(false) if !changed => println!("{}: already set up; nothing changed", args.agent.as_str()),
            Ok(false) => {}
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(crate::EXIT_DENY);
            }
        }
    }
    if args.local {
        // The local file only names this machine's program: without the shared settings' hooks the
        // agent runs ungoverned, which a person who ran only `--local` would not expect.
        let shared = setup::files(args.agent);
        let read_shared = |path: &str| std::fs::read_to_string(workspace.join(path)).ok();
        if !setup::plan(&setup, read_shared).is_ok_and(|plan| plan.iter().any(PlannedFile::changed)) {
            return ExitCode::SUCCESS;
        }
        println!(
            "warning: the shared settings ({}) are not as `chokepoint init --agent {}` writes them (its hooks are missing or out of date), \
             so {} may run ungoverned here: run `chokepoint init --agent {}` too",
            shared.join(", "),
            args.agent.id(),
            args.agent.as_str(),
            args.agent.id()
        );
    } else {
        for note in notes(&setup, &plan) {
            println!("{note}");
        }
        if let Err(why) = portable::find_program(|var| std::env::var(var).ok()) {
            println!(
                "warning: the hooks find no chokepoint on this machine ({why}), so they block every call: put chokepoint on PATH \
                 (or open the workspace in VS Code with the Chokepoint extension), or run `chokepoint init --agent {} --local --program <path>`",
                args.agent.id()
            );
        }
    }
    ExitCode::SUCCESS
}

/// What a person does instead of `--local` for an agent that reads no local settings file.
fn no_local(agent: Agent) -> String {
    format!(
        "{} has no local settings file for `--local`: set {} to the chokepoint program in the environment it starts from \
         (your shell profile), or put chokepoint on PATH; the shared files find it there",
        agent.as_str(),
        portable::PROGRAM_VAR
    )
}

/// Creates the shared brain (the people's CLAUDE.md), takes an older generated section out of it,
/// and brings the generated part up to date (`engine::brain`), saying what changed. True when a
/// file the person would notice was written; damaged markers of an older section are said.
fn brain(workspace: &Path) -> Result<bool, String> {
    let engine = chokepoint_core::Engine::open(workspace).map_err(|e| format!("cannot open workspace `{}`: {e}", workspace.display()))?;
    let refreshed = engine.brain().refresh(true).map_err(|e| e.to_string())?;
    for damage in &refreshed.damage {
        eprintln!("warning: {}: {damage}", chokepoint_core::BRAIN);
    }
    if refreshed.created {
        println!("{:>9} {}", "created", chokepoint_core::BRAIN);
    }
    if refreshed.stripped {
        println!(
            "{:>9} {} (the section Chokepoint generated in it now lives in {}, which git ignores; what people wrote is kept)",
            "updated",
            chokepoint_core::BRAIN,
            chokepoint_core::engine::brain::GENERATED
        );
    }
    // The generated file is rewritten whenever the state changes, and never committed: not news.
    Ok(refreshed.created || refreshed.stripped)
}

fn usage(message: &str) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(EXIT_CONFIG)
}

/// This machine's program, for its local settings: `--program` made absolute (the guard runs it
/// as a path, from any folder), and there.
fn program(given: &Path) -> Result<PathBuf, String> {
    let program = std::path::absolute(given).map_err(|e| format!("--program: {e}"))?;
    // Named wrong, every hook of the agent would block: said now, with nothing written.
    if !portable::executable(&program) {
        return Err(format!("--program `{}` is not an executable file; nothing was written", program.display()));
    }
    Ok(program)
}

/// Replaces the file in one step (a reader never sees half of it), with the mode it had; through a
/// symbolic link, its target.
fn write(path: &Path, text: &str) -> std::io::Result<()> {
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let dir = path.parent().ok_or_else(|| std::io::Error::other("no parent folder"))?;
    std::fs::create_dir_all(dir)?;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temp = dir.join(format!(".{name}.chokepoint-{}", std::process::id()));
    std::fs::write(&temp, text)?;
    if let Ok(meta) = std::fs::metadata(&path) {
        let _ = std::fs::set_permissions(&temp, meta.permissions());
    }
    std::fs::rename(&temp, &path).inspect_err(|_| {
        let _ = std::fs::remove_file(&temp);
    })
}

/// A unified diff of one planned file, `/dev/null` for one that does not exist yet.
fn diff(file: &PlannedFile) -> String {
    let before = file.before.as_deref().unwrap_or_default();
    let old = if file.before.is_some() { format!("a/{}", file.path) } else { "/dev/null".to_owned() };
    similar::TextDiff::from_lines(before, file.after.as_str())
        .unified_diff()
        .context_radius(3)
        .header(&old, &format!("b/{}", file.path))
        .to_string()
}

/// What the person must still do in the agent, or know about it (docs/agents/protocols.md).
fn notes(setup: &Setup, plan: &[PlannedFile]) -> Vec<String> {
    let hooks_changed = plan.iter().any(|f| Some(f.path) == setup::hooks_file(setup.agent) && f.changed());
    let workspace = chokepoint_core::base::shown::text(&setup.workspace);
    let mut notes = Vec::new();
    match setup.agent {
        Agent::Codex if hooks_changed => notes.push(format!(
            "warning: Codex runs a new or changed project hook only once it is trusted, and skips it without a word until then: \
             open `codex` in {workspace}, trust the project, and review and trust the hooks in `/hooks` \
             (`codex exec --dangerously-bypass-hook-trust` runs them untrusted). The MCP server in .codex/config.toml also loads only in a trusted project. \
             `chokepoint doctor` lists what it can check."
        )),
        Agent::GeminiCli => notes.push(format!(
            "note: Gemini CLI loads a project's hooks and servers only in a trusted folder, and says so only in its debug log: \
             trust {workspace} when Gemini CLI asks at start (or list it in ~/.gemini/trustedFolders.json)."
        )),
        Agent::ClaudeCode if hooks_changed => notes.push(
            "note: Claude Code reads its hooks when a session starts: restart running sessions (or review the change in `/hooks`). \
             VS Code's agent reads .claude/settings.json only with `chat.useClaudeHooks`."
                .to_owned(),
        ),
        Agent::Copilot => notes.push(format!(
            "note: Copilot CLI loads a project's hooks and .mcp.json only in a trusted folder: trust {workspace} when it asks \
             (`COPILOT_ALLOW_ALL=true` trusts the working directory). The hooks run through `bash` (Linux, macOS): \
             Copilot CLI on Windows runs `powershell`, which is not set up."
        )),
        Agent::VsCode => notes.push(format!(
            "note: VS Code's agent runs the hooks of .github/hooks/*.json at once (`chat.useHooks`, on by default). \
             Copilot CLI reads the same file: both run these entries (`--agent copilot`), and each call is answered as the agent that made it. \
             The model declares its intent with the tools the Chokepoint extension contributes, or a person runs `chokepoint intent select --workspace {workspace} --session vscode:<session> <intent>`; \
             no MCP server is written for VS Code."
        )),
        Agent::Cursor => notes.push(
            "note: Cursor's hook timeout unit is unverified (seconds per its docs); the gate is set to fail closed (`failClosed`), \
             so a hook that runs out of time denies rather than lets the call through."
                .to_owned(),
        ),
        _ => {}
    }
    notes
}
