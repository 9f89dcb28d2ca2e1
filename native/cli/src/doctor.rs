//! `chokepoint doctor`: for every agent configured in a workspace (a hooks file of that agent is
//! there), every guard that cannot fire and why. The files are read by the core
//! (`agents::inspect`); this file checks what only a process can: that each hook's program is there
//! and executable, and that the gate hooks, sent a write outside the workspace exactly as the agent
//! would send it (`sh -c`, the input on stdin), answer with a deny; and what the configuration leaves
//! off for every agent (`EngineInfo::warnings`: no active_intents.yaml). It also lists the tools the
//! ledger saw called that the tool table does not know (`inspect::unknown_tools`), and the team's
//! coordination database when one is configured (`coordination`), and what this platform lacks
//! of what Chokepoint uses, with what that means (`platform`). Exit code: 1
//! when a guard is inert, 0 otherwise, 2 when the workspace cannot be opened.
//!
//! What the core's `inspect::check` reads: the gate and session start hooked, the gate's matcher
//! selecting every write and shell tool of the agent's tool table, events the agent fires, timeouts
//! above `--deadline`, the agent's switches, the MCP server. What this file adds: for the portable
//! guard, the program it finds on this machine (a person's `CHOKEPOINT_PROGRAM` in Claude Code's local
//! settings first; none found is a warning, since the hooks then block every call); every absolute
//! path an older init or another member's machine wrote into the shared files (`inspect::named_paths`:
//! a hook's program, the MCP server's program and `--workspace`), inert when it does not exist here and
//! a warning when it is this machine's, both with the fix `chokepoint init --agent <a>`; whether
//! Codex's user `config.toml` trusts the project; and the probe (`inspect::probe`, session
//! `doctor-<pid>`) sent to every handler the agent would run for a write on its gate event, which must
//! block it (`Reply::blocks`) within its timeout (at most 60 s, the process group killed after). The
//! probe selects nothing; whatever its session holds is released. The configuration's warnings are
//! said first; a trust the files cannot show is a warning.
//!
//! The shared `.github/hooks` is examined for both its readers: VS Code's agent's report maps the
//! file's keys to its events, reads `.vscode/settings.json` as JSON with comments (`chat.useHooks`,
//! `chat.hookFilesLocations`) and the file's `disableAllHooks`, and probes with its own input; Copilot
//! CLI's missing MCP server is only a warning there, since the file alone does not show that Copilot
//! CLI works in the workspace. Two entries of ours on one event (in any agent's files) are a warning:
//! each call would be judged and recorded twice.

mod coordination;
mod platform;

use crate::{EXIT_CONFIG, EXIT_DENY};
use chokepoint_core::Engine;
use chokepoint_core::agents::inspect::{self, ConfiguredHook, Finding, Severity};
use chokepoint_core::agents::portable;
use chokepoint_core::agents::reply::Reply;
use chokepoint_core::agents::setup;
use chokepoint_core::model::external_events::Agent;
use chokepoint_core::serve::client;
use chokepoint_core::serve::endpoint::Endpoint;
use chokepoint_core::serve::token::Access;
use serde_json::json;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

/// The longest doctor waits for one probed hook, whatever the agent would.
const PROBE_LIMIT_SECS: f64 = 60.0;

#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    #[arg(long, default_value = ".")]
    workspace: PathBuf,
    /// Print machine-readable JSON.
    #[arg(long)]
    json: bool,
}

struct Report {
    agent: Agent,
    files: Vec<String>,
    findings: Vec<Finding>,
    /// The MCP servers other than ours in the agent's files: tools the table does not know.
    mcp_servers: Vec<String>,
}

pub fn run(args: DoctorArgs) -> ExitCode {
    let workspace = match std::fs::canonicalize(&args.workspace) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("error: cannot open workspace `{}`: {e}", args.workspace.display());
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    let reports: Vec<Report> = setup::AGENTS.into_iter().filter_map(|agent| examine(&workspace, agent)).collect();
    let unknown = unknown_tools(&workspace);
    // Guards the configuration itself leaves off (no active_intents.yaml: no scope is checked), for
    // every agent at once. Opening the engine creates no state.
    // The team's database, when one is configured: asked once, here. The engine is closed before the
    // probes run: they judge in processes of their own on the same workspace.
    let (unguarded, coordination) =
        Engine::open(&workspace).map(|engine| (engine.info().warnings(), coordination::examine(&engine.team()))).unwrap_or_default();
    let inert = reports.iter().flat_map(|r| &r.findings).filter(|f| f.severity == Severity::Inert).count()
        + unguarded.len()
        + usize::from(coordination.failing());
    // Not a guard: without a live engine each hook judges alone, as safely and more slowly.
    let endpoint = Endpoint::for_workspace(&workspace);
    let live = client::probe(&endpoint);
    // Where Claude Code's `type: "http"` hooks post while this engine runs (its serve file).
    let http = live
        .as_ref()
        .ok()
        .and_then(|()| Access::read_live(&chokepoint_core::Sidecar::new(&workspace).serve_file()).ok())
        .map(|a| format!("{}/hook/claude", a.url));
    if args.json {
        let agents: Vec<_> = reports
            .iter()
            .map(|r| {
                let findings: Vec<_> = r
                    .findings
                    .iter()
                    .map(|f| json!({ "severity": f.severity.as_str(), "file": f.file, "event": f.event, "problem": f.problem, "fix": f.fix }))
                    .collect();
                json!({ "agent": r.agent.id(), "name": r.agent.as_str(), "files": r.files, "findings": findings, "other_mcp_servers": r.mcp_servers })
            })
            .collect();
        let platform = platform::json(&platform::lacks());
        let live_engine = json!({ "serving": live.is_ok(), "socket": endpoint.socket(), "http_url": http, "reason": live.as_ref().err() });
        let unknown_tools: Vec<_> = match &unknown {
            Ok(tools) => tools.iter().map(|t| json!({ "agent": t.agent, "tool": t.tool, "calls": t.calls, "denied": t.denied })).collect(),
            Err(_) => Vec::new(),
        };
        println!(
            "{}",
            json!({ "workspace": workspace, "configuration": { "warnings": unguarded }, "coordination": coordination.json(), "platform": platform, "agents": agents, "inert": inert, "live_engine": live_engine, "unknown_tools": unknown_tools, "unknown_tools_error": unknown.as_ref().err() })
        );
    } else {
        for w in &unguarded {
            println!("configuration: inert: {w}");
        }
        coordination.print();
        platform::print(&platform::lacks());
        print_text(&workspace, &reports, inert);
        print_unknown(&reports, &unknown);
        match &live {
            Ok(()) => {
                println!("live engine: answering hooks at {}", endpoint.socket().display());
                if let Some(url) = &http {
                    println!("  and Claude Code's HTTP hooks at {url} (the token is in .orchestration/serve.json)");
                }
            }
            Err(why) => {
                println!(
                    "live engine: none ({why}); each hook judges alone, which is slower: open the workspace in VS Code with Chokepoint, or run `chokepoint serve`"
                );
                if coordination.is_team() {
                    println!(
                        "  with the team's database, each hook alone also connects to it (a new connection and its login: several ms a call); a live engine keeps one connection"
                    );
                }
            }
        }
    }
    if inert > 0 { ExitCode::from(EXIT_DENY) } else { ExitCode::SUCCESS }
}

fn print_text(workspace: &Path, reports: &[Report], inert: usize) {
    if reports.is_empty() {
        println!(
            "no agent is set up in {}: `chokepoint init --agent <claude|codex|gemini|copilot|cursor|vscode>` sets one up",
            workspace.display()
        );
        return;
    }
    for report in reports {
        let count = |s: Severity| report.findings.iter().filter(|f| f.severity == s).count();
        let state = match (count(Severity::Inert), count(Severity::Warning)) {
            (0, 0) => "every guard can fire".to_owned(),
            (0, w) => format!("every guard can fire; {w} to check"),
            (i, w) => format!("{i} inert{}", if w > 0 { format!("; {w} to check") } else { String::new() }),
        };
        println!("{} ({}): {state}", report.agent.as_str(), report.files.join(", "));
        for f in &report.findings {
            let event = f.event.as_deref().map(|e| format!(" {e}")).unwrap_or_default();
            println!("  {}: {}{event}: {}", f.severity.as_str(), f.file, f.problem);
            println!("    fix: {}", f.fix);
        }
    }
    if inert > 0 {
        println!("{inert} inert: a call these guards should judge goes through unjudged");
    }
}

/// The tools the ledger saw that the tool table does not know; none for a workspace without a
/// ledger (doctor creates no state to find out).
fn unknown_tools(workspace: &Path) -> Result<Vec<inspect::UnknownTool>, String> {
    if !chokepoint_core::ledger::chains::any(&chokepoint_core::Sidecar::new(workspace)) {
        return Ok(Vec::new());
    }
    let engine = Engine::open(workspace).map_err(|e| format!("cannot open the workspace: {e}"))?;
    inspect::unknown_tools(&engine)
}

fn print_unknown(reports: &[Report], unknown: &Result<Vec<inspect::UnknownTool>, String>) {
    for r in reports.iter().filter(|r| !r.mcp_servers.is_empty()) {
        println!(
            "{}: the tools of MCP server{} {} are in no row of Chokepoint's tool table: each call is judged as a write of the paths its input names",
            r.agent.as_str(),
            if r.mcp_servers.len() == 1 { "" } else { "s" },
            r.mcp_servers.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ")
        );
    }
    match unknown {
        Ok(tools) if tools.is_empty() => {}
        Ok(tools) => {
            println!(
                "tools the ledger saw that Chokepoint does not know (each call is judged as a write of the paths its input names, and let through when it names none):"
            );
            for t in tools {
                let denied = if t.denied > 0 { format!(", {} denied", t.denied) } else { String::new() };
                println!(
                    "  {}: {} ({} call{}{denied})",
                    t.agent.as_deref().unwrap_or("unknown agent"),
                    t.tool,
                    t.calls,
                    if t.calls == 1 { "" } else { "s" }
                );
            }
            println!(
                "  fix: declare each in hooks.yaml under `gatekeeper.tools`: `{{agent: <id>, tool: <name>, writes: [<field>]}}` for one that writes, `read: true` for one that only reads"
            );
        }
        Err(why) => println!("tools called: the ledger cannot be read ({why})"),
    }
}

/// The report of one agent, if it is set up in the workspace.
fn examine(workspace: &Path, agent: Agent) -> Option<Report> {
    let files = hook_files(workspace, agent);
    if files.is_empty() {
        return None;
    }
    let mut findings = Vec::new();
    let mut hooks = Vec::new();
    for file in &files {
        let text = match std::fs::read_to_string(workspace.join(file)) {
            Ok(text) => text,
            Err(e) => {
                findings.push(Finding::inert(file, None, format!("cannot be read: {e}"), "make it readable".into()));
                continue;
            }
        };
        match inspect::hooks_in(agent, file, &text) {
            Ok(found) => hooks.extend(found),
            Err(d) => findings.push(Finding::inert(
                file,
                None,
                format!("is not valid JSON ({d}): {} reads none of its hooks", agent.as_str()),
                format!("fix the file, then run `chokepoint init --agent {}`", agent.id()),
            )),
        }
    }
    let read = |path: &str| std::fs::read_to_string(workspace.join(path)).ok();
    findings.extend(inspect::check(agent, &hooks, read));
    findings.extend(programs(workspace, agent, &hooks));
    findings.extend(machine_paths(workspace, agent, &hooks));
    if agent == Agent::Codex {
        findings.extend(codex_trust(workspace));
    }
    if agent == Agent::Copilot {
        findings.extend(copilot_trust(workspace));
    }
    findings.extend(probe(workspace, agent, &hooks));
    // Inert first, then what to check; each in the order found.
    findings.sort_by_key(|f| f.severity != Severity::Inert);
    let mcp_servers = inspect::other_mcp_servers(agent, read);
    Some(Report { agent, files, findings, mcp_servers })
}

/// The agent's hooks files present in the workspace: Copilot CLI and VS Code's agent read every
/// `.github/hooks/*.json`.
fn hook_files(workspace: &Path, agent: Agent) -> Vec<String> {
    let Some(file) = setup::hooks_file(agent) else { return Vec::new() };
    if setup::written_as(agent) != Agent::Copilot {
        return if workspace.join(file).is_file() { vec![file.to_owned()] } else { Vec::new() };
    }
    let mut files: Vec<String> = std::fs::read_dir(workspace.join(".github/hooks"))
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "json") && e.path().is_file())
        .map(|e| format!(".github/hooks/{}", e.file_name().to_string_lossy()))
        .collect();
    files.sort();
    files
}

/// Each program a hook of ours runs, there and executable (once per file and program); for the
/// portable form, the program it finds on this machine, as it looks (a person's override in Claude
/// Code's local settings first).
fn programs(workspace: &Path, agent: Agent, hooks: &[ConfiguredHook]) -> Vec<Finding> {
    let env = inspect::hook_env(agent, workspace);
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for hook in hooks.iter().filter(|h| h.ours(agent)) {
        if portable::is_guarded(&hook.command) {
            if seen.contains(&(&hook.file, String::new())) {
                continue;
            }
            seen.push((&hook.file, String::new()));
            let local = local_program(workspace, agent);
            if let Err(why) = portable::find_program(|var| match (var, &local) {
                (portable::PROGRAM_VAR, Some(program)) => Some(program.clone()),
                _ => std::env::var(var).ok(),
            }) {
                out.push(Finding::warning(
                    &hook.file,
                    Some(&hook.event),
                    format!("the hooks find no chokepoint on this machine ({why}): they block every call of {} until they do", agent.as_str()),
                    format!(
                        "put chokepoint on PATH (or open the workspace in VS Code with the Chokepoint extension), or run `chokepoint init --agent {} --local --program <path>`",
                        agent.id()
                    ),
                ));
            }
            continue;
        }
        let Some(program) = inspect::program_of(&hook.command, &env) else { continue };
        // An absolute path written in the file is `machine_paths`' to report, with its cause.
        if program.starts_with('/') && inspect::program_of(&hook.command, &[]).is_some() {
            continue;
        }
        if seen.contains(&(&hook.file, program.clone())) {
            continue;
        }
        seen.push((&hook.file, program.clone()));
        if let Err(why) = runnable(workspace, &program) {
            out.push(Finding::inert(
                &hook.file,
                Some(&hook.event),
                format!("the hook's program `{program}` {why}: the agent cannot start it and goes on as if it were not there"),
                format!("install chokepoint there, or run `chokepoint init --agent {}` with the chokepoint you mean to use", agent.id()),
            ));
        }
    }
    out
}

/// CHOKEPOINT_PROGRAM as a person's local settings give it to the agent's hooks (Claude Code's
/// `.claude/settings.local.json`), `None` when they do not.
fn local_program(workspace: &Path, agent: Agent) -> Option<String> {
    let [file, _] = setup::local_files(agent)?;
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(workspace.join(file)).ok()?).ok()?;
    doc.get("env")?.get(portable::PROGRAM_VAR)?.as_str().map(str::to_owned)
}

/// Every absolute path our entries in the agent's shared files name (`inspect::named_paths`): one
/// that does not exist here was written on another machine or by an older `chokepoint init` (the
/// agent cannot start it, and goes on unjudged); one that exists is this machine's, and breaks every
/// other member's hooks once committed.
fn machine_paths(workspace: &Path, agent: Agent, hooks: &[ConfiguredHook]) -> Vec<Finding> {
    let read = |path: &str| std::fs::read_to_string(workspace.join(path)).ok();
    let fix = format!(
        "run `chokepoint init --agent {}`: it rewrites the file in the form that finds chokepoint on every machine (a path of your own goes in with `--local --program`)",
        agent.id()
    );
    inspect::named_paths(agent, hooks, read)
        .into_iter()
        .map(|named| {
            let missing = !Path::new(&named.path).exists();
            let consequence = match (missing, named.what) {
                (true, "the MCP server's workspace") => "the server cannot open it, so the model cannot select an intent",
                (true, "the MCP server's program") => "the agent cannot start the server, so the model cannot select an intent",
                (true, _) => "the agent cannot start it and goes on as if the hook were not there",
                (false, _) => "committed, it breaks the hooks of every member whose machine has it elsewhere",
            };
            let problem = if missing {
                format!("names {} `{}`, which does not exist on this machine (written on another machine, or by an older chokepoint init): {consequence}", named.what, named.path)
            } else {
                format!("names {} `{}`, a path of this machine: {consequence}", named.what, named.path)
            };
            if missing {
                Finding::inert(&named.file, named.event.as_deref(), problem, fix.clone())
            } else {
                Finding::warning(&named.file, named.event.as_deref(), problem, fix.clone())
            }
        })
        .collect()
}

/// Whether `program` (a path, or a name on `PATH`) can be started from the workspace.
fn runnable(workspace: &Path, program: &str) -> Result<(), String> {
    if !program.contains('/') {
        let found = std::env::var_os("PATH")
            .into_iter()
            .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
            .any(|dir| executable(&dir.join(program)));
        return if found { Ok(()) } else { Err("is not on PATH".into()) };
    }
    let path = workspace.join(program);
    if !path.exists() {
        return Err("does not exist".into());
    }
    if !executable(&path) {
        return Err("is not an executable file".into());
    }
    Ok(())
}

fn executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

/// Codex's trust of the project, from the user's `config.toml` (`$CODEX_HOME`, else `~/.codex`):
/// `[projects."<workspace>"] trust_level = "trusted"`. What it keeps of each hook's review is not
/// readable here (a warning of `inspect::check` says how to look).
fn codex_trust(workspace: &Path) -> Option<Finding> {
    let home =
        std::env::var_os("CODEX_HOME").map(PathBuf::from).or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".codex")))?;
    let file = home.join("config.toml");
    let doc = std::fs::read_to_string(&file).ok().and_then(|t| t.parse::<toml_edit::DocumentMut>().ok());
    let trusted = doc.as_ref().and_then(|d| d.get("projects")).and_then(|p| p.as_table_like()).is_some_and(|projects| {
        projects
            .iter()
            .any(|(path, project)| Path::new(path) == workspace && project.get("trust_level").and_then(|t| t.as_str()) == Some("trusted"))
    });
    (!trusted).then(|| {
        Finding::inert(
            ".codex/hooks.json",
            None,
            format!("the project is not marked trusted in {}: Codex skips its hooks and .codex/config.toml without a word", file.display()),
            "open `codex` in the workspace and trust it (it writes `[projects.\"<workspace>\"] trust_level = \"trusted\"`)".into(),
        )
    })
}

/// Copilot CLI loads a project's hooks only in a folder it trusts (`trusted_folders` of its
/// `config.json`, under `COPILOT_HOME`, else `XDG_CONFIG_HOME/.copilot`, else `~/.copilot`). Its hooks
/// file is VS Code's agent's too: without that folder Copilot CLI never ran for this user, and
/// nothing is said; with it, a workspace it does not trust (or a parent of it) is warned about.
fn copilot_trust(workspace: &Path) -> Option<Finding> {
    let var = |name: &str| std::env::var_os(name).map(PathBuf::from).filter(|p| p.is_absolute());
    let home = var("COPILOT_HOME")
        .or_else(|| var("XDG_CONFIG_HOME").map(|c| c.join(".copilot")).filter(|p| p.is_dir()))
        .or_else(|| var("HOME").map(|h| h.join(".copilot")))?;
    if !home.is_dir() {
        return None;
    }
    let file = home.join("config.json");
    let config: Option<serde_json::Value> = std::fs::read_to_string(&file).ok().and_then(|t| serde_json::from_str(&t).ok());
    let canonical = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    let trusted = config.as_ref().and_then(|c| c.get("trusted_folders")).and_then(|t| t.as_array()).is_some_and(|folders| {
        folders.iter().filter_map(|f| f.as_str()).any(|f| {
            let folder = std::fs::canonicalize(f).unwrap_or_else(|_| PathBuf::from(f));
            canonical.starts_with(&folder)
        })
    });
    (!trusted).then(|| {
        Finding::warning(
            ".github/hooks",
            None,
            format!(
                "Copilot CLI loads a project's hooks and MCP servers only in a folder it trusts, and {} does not list this one",
                file.display()
            ),
            "trust the workspace when Copilot CLI asks (`COPILOT_ALLOW_ALL=true` trusts the working directory)".into(),
        )
    })
}

/// The gate, tried: every handler the agent would run for a write on its gate event is sent a write
/// outside the workspace; one of them must block it.
fn probe(workspace: &Path, agent: Agent, hooks: &[ConfiguredHook]) -> Option<Finding> {
    let probe = inspect::probe(agent, workspace, std::process::id())?;
    let gates: Vec<&ConfiguredHook> = hooks.iter().filter(|h| h.runs_on(agent, probe.event) && h.matches(agent, probe.tool)).collect();
    if gates.is_empty() {
        return None; // `check` reports the missing gate
    }
    let env = inspect::hook_env(agent, workspace);
    let mut answers = Vec::new();
    let mut blocked = false;
    for hook in &gates {
        let limit = hook.timeout_secs.unwrap_or(setup::TOOL_TIMEOUT_SECS as f64).clamp(0.1, PROBE_LIMIT_SECS);
        let answer = match send(&hook.command, &probe.input, workspace, &env, Duration::from_secs_f64(limit)) {
            Ok(Some(reply)) if reply.blocks(agent) => {
                blocked = true;
                continue;
            }
            Ok(Some(reply)) if reply.exit == 0 => "answered allow".to_owned(),
            Ok(Some(reply)) => format!("exited with code {} ({})", reply.exit, reply.stderr.trim().lines().last().unwrap_or("no message")),
            Ok(None) => format!("did not answer within {limit} s"),
            Err(e) => format!("could not be started: {e}"),
        };
        answers.push(format!("`{}` {answer}", hook.command));
    }
    release(workspace, agent, &probe.session);
    if blocked {
        return None;
    }
    let file = gates.first().map_or("", |h| h.file.as_str());
    Some(Finding::inert(
        file,
        Some(probe.event),
        format!(
            "a {} of {} (outside the workspace) sent to the `{}` hooks was let through: {}",
            probe.tool,
            chokepoint_core::base::shown::path(&probe.path).display(),
            probe.event,
            answers.join("; ")
        ),
        format!("make the gate run chokepoint: `chokepoint init --agent {}`", agent.id()),
    ))
}

/// Runs `command` as the agent does (`sh -c`, in the workspace, the input on stdin), in its own
/// process group, killed whole if it runs past `limit`. `None`: it did not answer in time.
fn send(command: &str, input: &str, workspace: &Path, env: &[(&str, PathBuf)], limit: Duration) -> std::io::Result<Option<Reply>> {
    let mut sh = Command::new("sh");
    sh.arg("-c").arg(command).current_dir(workspace).env_remove("CHOKEPOINT_HOOK_DEPTH");
    for (k, v) in env {
        sh.env(k, v);
    }
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut sh, 0);
    let mut child = sh.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    let mut stdin = child.stdin.take();
    let input = input.to_owned();
    // Written from a thread: a hook that never reads its input must not block us.
    std::thread::spawn(move || {
        if let Some(stdin) = stdin.as_mut() {
            let _ = stdin.write_all(input.as_bytes());
        }
    });
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped")));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if start.elapsed() >= limit {
            kill_group(&mut child);
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let reply = Reply {
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
        exit: status.code().map_or(u8::MAX, |c| u8::try_from(c).unwrap_or(u8::MAX)),
    };
    Ok(Some(reply))
}

fn kill_group(child: &mut std::process::Child) {
    #[cfg(unix)]
    {
        if let Ok(pid) = i32::try_from(child.id()) {
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Whatever the probe's session holds is let go (it never selects an intent; this is the
/// guarantee). Only where the lease table exists: doctor creates no state of its own.
fn release(workspace: &Path, agent: Agent, session: &str) {
    if !chokepoint_core::Sidecar::new(workspace).coordination_db().exists() {
        return;
    }
    if let Ok(engine) = Engine::open(workspace) {
        let _ = engine.gatekeeper().release(&format!("{}:{session}", agent.id()));
    }
}
