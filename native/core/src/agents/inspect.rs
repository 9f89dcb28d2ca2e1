//! What `chokepoint doctor` reads in an agent's configuration: the hooks it runs, and every reason
//! a guard of ours cannot fire that the files themselves show (an event the agent does not know, a
//! matcher that misses its write tools, a timeout that ends before our deadline, a switch that turns
//! hooks off, a missing MCP server). Pure, like `setup.rs`: the caller reads the files, and checks
//! what only a process can (the program is there, the hook answers the probe built here with a
//! deny). Also the tools the ledger saw called that the tool table does not know
//! ([`unknown_tools`], the one reader of an engine here).

use crate::agents::json::{Json, without_comments};
use crate::agents::setup::{self, DEFAULT_DEADLINE_SECS, SERVER};
use crate::base::diagnostic::Diagnostic;
use crate::model::event::EventKind;
use crate::model::external_events::{Agent, EXTERNAL_EVENTS, lookup, vscode_event_of_key};
use crate::scope::tools::builtin_tools;
use std::path::{Path, PathBuf};

/// One handler the agent runs for an event.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfiguredHook {
    /// The file it is in, relative to the workspace.
    pub file: String,
    pub event: String,
    /// Its group's matcher (or its own); `None`: every tool.
    pub matcher: Option<String>,
    pub command: String,
    /// How long the agent waits for it, in seconds: the file's value in the agent's unit, else the
    /// agent's default; `None` when that default is not known (Cursor).
    pub timeout_secs: Option<f64>,
}

impl ConfiguredHook {
    pub fn ours(&self, agent: Agent) -> bool {
        setup::is_ours(agent, &self.command)
    }

    /// The `--deadline` on its command line, else `chokepoint hook`'s default.
    pub fn deadline_secs(&self) -> u64 {
        let mut words = self.command.split_whitespace();
        while let Some(word) = words.next() {
            if word == "--deadline" {
                return words.next().and_then(|d| d.trim_matches(['\'', '"']).parse().ok()).unwrap_or(DEFAULT_DEADLINE_SECS);
            }
            if let Some(d) = word.strip_prefix("--deadline=") {
                return d.trim_matches(['\'', '"']).parse().unwrap_or(DEFAULT_DEADLINE_SECS);
            }
        }
        DEFAULT_DEADLINE_SECS
    }

    /// Whether the agent runs this handler for `tool`.
    pub fn matches(&self, agent: Agent, tool: &str) -> bool {
        matcher_matches(agent, self.matcher.as_deref(), tool)
    }

    /// Whether the agent runs this handler on its event `event` (its own name for it).
    pub fn runs_on(&self, agent: Agent, event: &str) -> bool {
        event_of_key(agent, &self.event) == Some(event)
    }
}

/// The agent's name for the event that a hooks file's `key` runs on, `None` when the agent ignores
/// the key: the key itself for most, but VS Code's agent reads Copilot CLI's and Claude Code's keys
/// too (`agentStop` runs on its `Stop`), which is how it reads the file it shares with Copilot CLI.
pub fn event_of_key(agent: Agent, key: &str) -> Option<&'static str> {
    match agent {
        Agent::VsCode => vscode_event_of_key(key),
        _ => lookup(agent, key).map(|row| row.name),
    }
}

/// What the agent waits for a hook when its file does not say (docs/agents/clients.md).
fn default_timeout_secs(agent: Agent) -> Option<f64> {
    match agent {
        Agent::ClaudeCode | Agent::Codex | Agent::VsCode => Some(600.0),
        Agent::GeminiCli => Some(60.0),
        Agent::Copilot => Some(30.0),
        Agent::Cursor => None,
    }
}

/// The handlers of one hooks file of `agent`. A file that is not JSON is a diagnostic: the agent
/// cannot read it either.
pub fn hooks_in(agent: Agent, file: &str, text: &str) -> Result<Vec<ConfiguredHook>, Diagnostic> {
    let doc: Json = serde_json::from_str(text).map_err(|e| {
        let (line, column) = (e.line() as u32, e.column() as u32);
        let message = e.to_string().replacen(&format!(" at line {line} column {column}"), "", 1);
        Diagnostic { file: PathBuf::from(file), line, column, code: "json", message }
    })?;
    let mut out = Vec::new();
    let Some(events) = doc.get("hooks").and_then(Json::as_object) else { return Ok(out) };
    let (key, unit) = setup::timeout_key(agent);
    for (event, entries) in events.iter() {
        for entry in entries.as_array().into_iter().flatten() {
            let matcher = entry.get("matcher").and_then(Json::as_str).map(str::to_owned);
            // Nested (`{matcher, hooks: [handler]}`) or flat (the entry is the handler).
            let handlers: Vec<&Json> = match entry.get("hooks").and_then(Json::as_array) {
                Some(handlers) => handlers.iter().collect(),
                None => vec![entry],
            };
            for handler in handlers {
                let Some(command) = ["command", "bash"].iter().find_map(|k| handler.get(k).and_then(Json::as_str)) else { continue };
                let timeout = [key, "timeout", "timeoutSec"].iter().find_map(|k| handler.get(k).and_then(Json::as_f64));
                out.push(ConfiguredHook {
                    file: file.to_owned(),
                    event: event.to_owned(),
                    matcher: handler.get("matcher").and_then(Json::as_str).map(str::to_owned).or_else(|| matcher.clone()),
                    command: command.to_owned(),
                    timeout_secs: timeout.map(|t| t / unit as f64).or_else(|| default_timeout_secs(agent)),
                });
            }
        }
    }
    Ok(out)
}

/// Whether `matcher` selects `tool` for `agent`: none, `""` or `"*"` select every tool; a list of
/// names (`Bash|Write`) selects those names exactly; anything else is a regular expression, whole
/// for Claude Code, found anywhere for the others (Codex's `common.rs`, Gemini CLI's `RegExp.test`).
/// Codex's `Write` and `Edit` select its `apply_patch`.
pub fn matcher_matches(agent: Agent, matcher: Option<&str>, tool: &str) -> bool {
    // VS Code 1.139 reads no matcher from a hooks file: each handler runs for every tool.
    if agent == Agent::VsCode {
        return true;
    }
    let Some(matcher) = matcher.map(str::trim).filter(|m| !m.is_empty() && *m != "*") else { return true };
    let names: &[&str] = match (agent, tool) {
        (Agent::Codex, "apply_patch") => &["apply_patch", "Write", "Edit"],
        _ => std::slice::from_ref(&tool),
    };
    if matcher.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '|') {
        return matcher.split('|').any(|alt| names.contains(&alt));
    }
    let pattern = if agent == Agent::ClaudeCode { format!("^(?:{matcher})$") } else { matcher.to_owned() };
    regex::Regex::new(&pattern).is_ok_and(|re| names.iter().any(|n| re.is_match(n)))
}

/// The tools of `agent` that write or run shell commands, by the gatekeeper's table: its gate hook
/// must see each. (A tool the table implies for an event, as Cursor's `beforeShellExecution`
/// implies `execute_command`, is not a name its matcher ever sees.)
pub fn guarded_tools(agent: Agent) -> Vec<&'static str> {
    let implied: Vec<&str> = EXTERNAL_EVENTS.iter().filter(|r| r.agent == agent).filter_map(|r| r.tool).collect();
    builtin_tools(agent).filter(|t| !implied.contains(t)).collect()
}

/// A tool an agent called, by the ledger, that the tool table does not know: judged as a write of
/// the paths its input names, and let through when it names none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownTool {
    /// The agent's id (`claude`, ...), when the record names it.
    pub agent: Option<String>,
    pub tool: String,
    pub calls: u64,
    pub denied: u64,
}

/// The tools the workspace's ledger saw called that `engine`'s tool table (built-in rows and
/// hooks.yaml's) does not know, most called first; our MCP server's tools are known. None for a
/// workspace with no ledger (nothing is created to find out).
pub fn unknown_tools(engine: &crate::engine::engine::Engine) -> Result<Vec<UnknownTool>, String> {
    if !crate::ledger::chains::any(engine.sidecar()) {
        return Ok(Vec::new());
    }
    let index = engine.tracer().index().map_err(|e| e.to_string())?;
    let called = index.tools_called().map_err(|e| e.to_string())?;
    let gatekeeper = engine.gatekeeper();
    Ok(called
        .into_iter()
        .filter(|c| !crate::agents::input::MCP_TOOLS.contains(&c.tool.as_str()))
        .filter(|c| !gatekeeper.knows_tool(c.agent.as_deref().and_then(Agent::from_id), &c.tool))
        .map(|c| UnknownTool { agent: c.agent, tool: c.tool, calls: c.calls, denied: c.denied })
        .collect())
}

/// The MCP servers other than ours configured where `agent` reads the project's servers (its MCP
/// file, by `read`): their tools are in no row of the tool table, so each call of one is judged by
/// the paths its input names. Empty when the file is absent or does not parse (`check` says so).
pub fn other_mcp_servers(agent: Agent, read: impl Fn(&str) -> Option<String>) -> Vec<String> {
    let Some(text) = setup::mcp_file(agent).and_then(&read) else { return Vec::new() };
    let mut names: Vec<String> = if setup::mcp_file(agent).is_some_and(|f| f.ends_with(".toml")) {
        let Ok(doc) = text.parse::<toml_edit::DocumentMut>() else { return Vec::new() };
        doc.get("mcp_servers").and_then(|s| s.as_table_like()).map(|t| t.iter().map(|(k, _)| k.to_owned()).collect()).unwrap_or_default()
    } else {
        let Ok(doc) = serde_json::from_str::<serde_json::Value>(&without_comments(&text)) else { return Vec::new() };
        doc.get("mcpServers").and_then(serde_json::Value::as_object).map(|m| m.keys().cloned().collect()).unwrap_or_default()
    };
    names.retain(|n| n != SERVER);
    names
}

/// Our MCP server's command and arguments where `agent` reads the project's servers, `None` when
/// there is none (or the file does not parse: `check` says so).
pub fn server_command(agent: Agent, read: impl Fn(&str) -> Option<String>) -> Option<(String, Vec<String>)> {
    let file = setup::mcp_file(agent)?;
    let text = read(file)?;
    if file.ends_with(".toml") {
        let doc = text.parse::<toml_edit::DocumentMut>().ok()?;
        let server = doc.get("mcp_servers")?.get(SERVER)?;
        let command = server.get("command")?.as_str()?.to_owned();
        let args = server.get("args").and_then(|a| a.as_array()).map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect());
        return Some((command, args.unwrap_or_default()));
    }
    let doc = serde_json::from_str::<serde_json::Value>(&without_comments(&text)).ok()?;
    let server = doc.get("mcpServers")?.get(SERVER)?;
    let command = server.get("command")?.as_str()?.to_owned();
    let args =
        server.get("args").and_then(serde_json::Value::as_array).map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect());
    Some((command, args.unwrap_or_default()))
}

/// A path of one machine written into a settings file meant to be shared: an absolute program or
/// workspace that an older `chokepoint init` (or another member's) wrote. The caller checks
/// whether it exists here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedPath {
    /// Relative to the workspace.
    pub file: String,
    pub event: Option<String>,
    /// What it is: "the hook's program", "the MCP server's program", "the MCP server's workspace".
    pub what: &'static str,
    pub path: String,
}

/// Every absolute path our entries in `agent`'s files name literally (no variable of the agent's):
/// each hook's program (once per file) and the MCP server's program and `--workspace`. The portable
/// form `chokepoint init` writes names none.
pub fn named_paths(agent: Agent, hooks: &[ConfiguredHook], read: impl Fn(&str) -> Option<String>) -> Vec<NamedPath> {
    let mut out: Vec<NamedPath> = Vec::new();
    for hook in hooks.iter().filter(|h| h.ours(agent)) {
        let Some(program) = program_of(&hook.command, &[]).filter(|p| p.starts_with('/')) else { continue };
        if !out.iter().any(|n| n.file == hook.file && n.path == program) {
            out.push(NamedPath { file: hook.file.clone(), event: Some(hook.event.clone()), what: "the hook's program", path: program });
        }
    }
    if let (Some(file), Some((command, args))) = (setup::mcp_file(agent), server_command(agent, &read)) {
        let named = |what, path: String| NamedPath { file: file.to_owned(), event: None, what, path };
        if command.starts_with('/') {
            out.push(named("the MCP server's program", command));
        }
        let workspace = args
            .iter()
            .skip_while(|a| *a != "--workspace")
            .nth(1)
            .map(String::as_str)
            .or_else(|| args.iter().find_map(|a| a.strip_prefix("--workspace=")));
        if let Some(workspace) = workspace.filter(|w| w.starts_with('/')) {
            out.push(named("the MCP server's workspace", workspace.to_owned()));
        }
    }
    out
}

/// The agent's event that judges a tool call before it runs (the gate), and the one that hands the
/// model the handshake's rules: the two a governed workspace cannot do without.
pub fn needed_events(agent: Agent) -> Vec<(&'static str, EventKind)> {
    setup::installed(agent)
        .into_iter()
        .filter(|i| {
            (i.kind == EventKind::PreToolUse && lookup(agent, i.event).is_some_and(|r| r.tool.is_none()))
                || i.kind == EventKind::SessionStart
        })
        .map(|i| (i.event, i.kind))
        .collect()
}

/// The gate event: [`needed_events`]' PreToolUse.
pub fn gate_event(agent: Agent) -> Option<&'static str> {
    needed_events(agent).into_iter().find(|(_, k)| *k == EventKind::PreToolUse).map(|(e, _)| e)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// A guard that cannot fire: a call it should judge goes through unjudged.
    Inert,
    /// Something that may make it inert which the files cannot show (trust kept by the agent).
    Warning,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Inert => "inert",
            Severity::Warning => "warning",
        }
    }
}

/// One reason a guard cannot (or may not) fire, where to fix it and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub severity: Severity,
    /// Relative to the workspace.
    pub file: String,
    pub event: Option<String>,
    pub problem: String,
    pub fix: String,
}

impl Finding {
    pub fn inert(file: &str, event: Option<&str>, problem: String, fix: String) -> Finding {
        Finding { severity: Severity::Inert, file: file.to_owned(), event: event.map(str::to_owned), problem, fix }
    }

    pub fn warning(file: &str, event: Option<&str>, problem: String, fix: String) -> Finding {
        Finding { severity: Severity::Warning, file: file.to_owned(), event: event.map(str::to_owned), problem, fix }
    }
}

fn rerun(agent: Agent) -> String {
    format!("run `chokepoint init --agent {}`", agent.id())
}

/// Everything the files show: `hooks` are the agent's handlers (from [`hooks_in`], every hooks file
/// of the agent), `read` gives a workspace file's text (`None`: not there).
pub fn check(agent: Agent, hooks: &[ConfiguredHook], read: impl Fn(&str) -> Option<String>) -> Vec<Finding> {
    let name = agent.as_str();
    let home = setup::hooks_file(agent).unwrap_or_default();
    let mut out = Vec::new();
    let ours: Vec<&ConfiguredHook> = hooks.iter().filter(|h| h.ours(agent)).collect();

    for hook in &ours {
        // In the file VS Code's agent shares with Copilot CLI, a key only Copilot CLI reads is
        // Copilot CLI's hook, not one that VS Code misses.
        let other = setup::written_as(agent);
        if event_of_key(agent, &hook.event).is_none() && (other == agent || lookup(other, &hook.event).is_none()) {
            out.push(Finding::inert(
                &hook.file,
                Some(&hook.event),
                format!("`{}` is not an event {name} fires: it ignores this hook without a word", hook.event),
                format!("{}, which hooks the events {name} fires (docs/event-mapping.md lists them)", rerun(agent)),
            ));
        }
        let deadline = hook.deadline_secs();
        if let Some(timeout) = hook.timeout_secs.filter(|t| *t <= deadline as f64) {
            let (key, unit) = setup::timeout_key(agent);
            let shown = if unit == 1 { format!("{timeout} s") } else { format!("{} ms ({timeout} s)", timeout * unit as f64) };
            out.push(Finding::inert(
                &hook.file,
                Some(&hook.event),
                format!(
                    "the Chokepoint hook's timeout ({shown}) is not above its --deadline ({deadline} s): {name} gives up on it first and lets the call through"
                ),
                {
                    let (t, d) = setup::installed(setup::written_as(agent))
                        .iter()
                        .find(|i| i.event == hook.event)
                        .map_or((setup::TOOL_TIMEOUT_SECS, setup::TOOL_DEADLINE_SECS), |i| (i.timeout_secs, i.deadline_secs));
                    format!("raise `{key}` above the deadline (`chokepoint init` writes {} for a --deadline of {d})", t * unit)
                },
            ));
        }
    }

    // An older set-up's hook before a tool call (`--deadline 25`): an ask about the call lapses
    // before a person can answer it, whatever `approvals.timeout_seconds` says.
    for hook in &ours {
        let ask_hook =
            setup::installed(setup::written_as(agent)).into_iter().find(|i| i.event == hook.event && i.kind == EventKind::PreToolUse);
        let Some(installed) = ask_hook else { continue };
        let deadline = hook.deadline_secs();
        if deadline < installed.deadline_secs {
            let (key, unit) = setup::timeout_key(agent);
            out.push(Finding::warning(
                &hook.file,
                Some(&hook.event),
                format!(
                    "a person has at most {} s to answer an ask about {name}'s tool call (the hook's --deadline is {deadline} s), less than `approvals.timeout_seconds` promises",
                    deadline.saturating_sub(1)
                ),
                format!(
                    "{} (it writes --deadline {} and `{key}` {})",
                    rerun(agent),
                    installed.deadline_secs,
                    installed.timeout_secs * unit
                ),
            ));
        }
    }

    // Two entries of ours on one event (another hooks file VS Code's agent or Copilot CLI reads, a
    // copy by hand): each call judged and recorded twice.
    let mut seen: Vec<&str> = Vec::new();
    for hook in &ours {
        let Some(event) = event_of_key(agent, &hook.event) else { continue };
        if seen.contains(&event) {
            continue;
        }
        seen.push(event);
        let files: Vec<&str> = ours.iter().filter(|h| h.runs_on(agent, event)).map(|h| h.file.as_str()).collect();
        if files.len() > 1 {
            out.push(Finding::warning(
                &hook.file,
                Some(event),
                format!(
                    "{} Chokepoint hooks run on `{event}` ({}): each call is judged and recorded {} times",
                    files.len(),
                    files.join(", "),
                    files.len()
                ),
                format!("keep one: remove the others, then {}", rerun(agent)),
            ));
        }
    }

    for (event, kind) in needed_events(agent) {
        let on_event: Vec<&&ConfiguredHook> = ours.iter().filter(|h| h.runs_on(agent, event)).collect();
        let file = on_event.first().map_or(home, |h| h.file.as_str());
        if on_event.is_empty() {
            let consequence = if kind == EventKind::PreToolUse {
                "no write and no shell command of the agent is judged"
            } else {
                "the model is never told the workspace's intents or how to select one"
            };
            out.push(Finding::inert(file, Some(event), format!("no Chokepoint hook runs on `{event}`: {consequence}"), rerun(agent)));
            continue;
        }
        if kind != EventKind::PreToolUse {
            continue;
        }
        let missed: Vec<&str> = guarded_tools(agent).into_iter().filter(|tool| !on_event.iter().any(|h| h.matches(agent, tool))).collect();
        if !missed.is_empty() {
            let mut matchers: Vec<String> = on_event.iter().map(|h| format!("`{}`", h.matcher.as_deref().unwrap_or("*"))).collect();
            matchers.dedup();
            out.push(Finding::inert(
                file,
                Some(event),
                format!(
                    "the matcher {} of the Chokepoint hook on `{event}` does not select {}: those calls are never judged",
                    matchers.join(", "),
                    missed.join(", ")
                ),
                format!("set the matcher to \"*\" (or {})", rerun(agent)),
            ));
        }
    }

    out.extend(switches(agent, &read));
    out.extend(server(agent, &read));
    out
}

/// The agent's own switches that turn hooks off, and the trust it keeps outside the workspace.
fn switches(agent: Agent, read: &impl Fn(&str) -> Option<String>) -> Vec<Finding> {
    let json = |path: &str| read(path).and_then(|t| serde_json::from_str::<Json>(&t).ok());
    let mut out = Vec::new();
    match agent {
        Agent::ClaudeCode => {
            for file in [".claude/settings.json", ".claude/settings.local.json"] {
                if json(file).and_then(|d| d.get("disableAllHooks").and_then(Json::as_bool)) == Some(true) {
                    out.push(Finding::inert(
                        file,
                        None,
                        "`disableAllHooks: true` turns every hook off".into(),
                        "remove `disableAllHooks`".into(),
                    ));
                }
            }
            // VS Code's agent reads this file too, but only when told to; it then runs these hooks as
            // Claude Code's, and its own write tools are judged through the tool table's fallback.
            let vscode = json(".vscode/settings.json").and_then(|d| d.get("chat.useClaudeHooks").and_then(Json::as_bool));
            if vscode != Some(true) {
                out.push(Finding::warning(
                    ".vscode/settings.json",
                    None,
                    "VS Code's agent does not run .claude/settings.json hooks: `chat.useClaudeHooks` is not on".into(),
                    "to govern VS Code's agent with these hooks too, set `\"chat.useClaudeHooks\": true` and reload the window".into(),
                ));
            }
        }
        Agent::Codex => {
            let config = read(".codex/config.toml").and_then(|t| t.parse::<toml_edit::DocumentMut>().ok());
            for key in ["hooks", "codex_hooks"] {
                if config.as_ref().and_then(|c| c.get("features")).and_then(|f| f.get(key)).and_then(toml_edit::Item::as_bool)
                    == Some(false)
                {
                    out.push(Finding::inert(
                        ".codex/config.toml",
                        None,
                        format!("`[features] {key} = false` turns Codex's hooks off"),
                        format!("remove `{key} = false` from [features]"),
                    ));
                }
            }
            out.push(Finding::warning(
                ".codex/hooks.json",
                None,
                "Codex runs a project's hooks only when the project is trusted and each hook, as it is now, was reviewed in `/hooks`; it skips the others without a word (`codex exec` too)".into(),
                "open `codex` in the workspace and check `/hooks`: every Chokepoint hook must show as trusted (again after each `chokepoint init`)".into(),
            ));
        }
        Agent::GeminiCli => {
            let settings = json(".gemini/settings.json");
            let config = settings.as_ref().and_then(|s| s.get("hooksConfig"));
            if config.and_then(|c| c.get("enabled")).and_then(Json::as_bool) == Some(false) {
                out.push(Finding::inert(
                    ".gemini/settings.json",
                    None,
                    "`hooksConfig.enabled: false` turns every hook off".into(),
                    "set `hooksConfig.enabled` to true".into(),
                ));
            }
            let disabled = config.and_then(|c| c.get("disabled")).and_then(Json::as_array).into_iter().flatten().filter_map(Json::as_str);
            for entry in disabled.filter(|d| *d == SERVER || setup::is_ours(agent, d)) {
                out.push(Finding::inert(
                    ".gemini/settings.json",
                    None,
                    format!("`hooksConfig.disabled` lists `{entry}`: Gemini CLI skips the Chokepoint hooks"),
                    format!("remove `{entry}` from `hooksConfig.disabled`"),
                ));
            }
            out.push(Finding::warning(
                ".gemini/settings.json",
                None,
                "Gemini CLI loads a project's hooks only in a trusted folder, and says so only in its debug log".into(),
                "trust the workspace when Gemini CLI asks at start, or list it in ~/.gemini/trustedFolders.json".into(),
            ));
        }
        // Whether Copilot CLI trusts the folder is in the user's own files, which `doctor` reads
        // (`copilot_trust`): the hooks file is VS Code's agent's too, and a VS Code user who never
        // ran Copilot CLI should not be warned about it.
        Agent::Copilot => {}
        Agent::VsCode => out.extend(vscode_switches(&read)),
        Agent::Cursor => {}
    }
    out
}

/// VS Code's switches: `chat.useHooks` (on by default), the hooks folders it reads
/// (`chat.hookFilesLocations`), and a hooks file's own `disableAllHooks`.
fn vscode_switches(read: &impl Fn(&str) -> Option<String>) -> Vec<Finding> {
    let mut out = Vec::new();
    let settings_file = ".vscode/settings.json";
    let home = setup::hooks_file(Agent::VsCode).unwrap_or_default();
    match read(settings_file).map(|text| serde_json::from_str::<Json>(&without_comments(&text))) {
        Some(Ok(settings)) => {
            if settings.get("chat.useHooks").and_then(Json::as_bool) == Some(false) {
                out.push(Finding::inert(
                    settings_file,
                    None,
                    "`\"chat.useHooks\": false` turns off every hook of VS Code's agent".into(),
                    "remove `chat.useHooks` (it is on by default)".into(),
                ));
            }
            let folder = home.rsplit_once('/').map_or(home, |(dir, _)| dir);
            let locations = settings.get("chat.hookFilesLocations");
            if locations.and_then(|l| l.get(folder)).and_then(Json::as_bool) == Some(false) {
                out.push(Finding::inert(
                    settings_file,
                    None,
                    format!("`chat.hookFilesLocations` turns `{folder}` off: VS Code's agent does not read {home}"),
                    format!("set `\"{folder}\": true` in `chat.hookFilesLocations`, or remove the entry"),
                ));
            }
        }
        Some(Err(e)) => out.push(Finding::warning(
            settings_file,
            None,
            format!("cannot be read ({e}): whether it turns `chat.useHooks` off is not known"),
            "fix the file, and check that `chat.useHooks` is not false".into(),
        )),
        None => {}
    }
    if read(home).and_then(|t| serde_json::from_str::<Json>(&t).ok()).and_then(|d| d.get("disableAllHooks").and_then(Json::as_bool))
        == Some(true)
    {
        out.push(Finding::inert(
            home,
            None,
            "`disableAllHooks: true` makes VS Code's agent skip every hook of this file".into(),
            "remove `disableAllHooks`".into(),
        ));
    }
    out.push(Finding::warning(
        settings_file,
        None,
        "VS Code's user settings and the `ChatHooks` policy can turn `chat.useHooks` off, which the workspace's files cannot show".into(),
        "check that `chat.useHooks` is on in VS Code's settings (Preferences: Open Settings, search `chat.useHooks`)".into(),
    ));
    out
}

/// The MCP server `chokepoint` where the agent reads the project's servers, and loaded.
fn server(agent: Agent, read: &impl Fn(&str) -> Option<String>) -> Vec<Finding> {
    let Some(file) = setup::mcp_file(agent) else { return Vec::new() };
    let missing = || {
        // Copilot CLI's hooks file is VS Code's agent's too (`init --agent vscode` writes it and no
        // MCP file): the file does not show that Copilot CLI works here at all.
        if agent == Agent::Copilot {
            return vec![Finding::warning(
                file,
                None,
                format!(
                    "if Copilot CLI works here: no MCP server `{SERVER}`, so its model cannot select an intent itself, only a person through `chokepoint intent select` (VS Code's agent, which reads the same .github/hooks, needs none)"
                ),
                rerun(agent),
            )];
        }
        vec![Finding::inert(
            file,
            None,
            format!("no MCP server `{SERVER}`: the model cannot select an intent itself, only a person through `chokepoint intent select`"),
            rerun(agent),
        )]
    };
    let Some(text) = read(file) else { return missing() };
    let present = if file.ends_with(".toml") {
        text.parse::<toml_edit::DocumentMut>().ok().is_some_and(|d| d.get("mcp_servers").and_then(|s| s.get(SERVER)).is_some())
    } else {
        serde_json::from_str::<Json>(&text).ok().is_some_and(|d| d.get("mcpServers").and_then(|s| s.get(SERVER)).is_some())
    };
    if !present {
        return missing();
    }
    if agent == Agent::ClaudeCode {
        let settings: Vec<Json> = [".claude/settings.json", ".claude/settings.local.json"]
            .iter()
            .filter_map(|f| read(f).and_then(|t| serde_json::from_str(&t).ok()))
            .collect();
        let listed = |key: &str| {
            settings.iter().any(|s| s.get(key).and_then(Json::as_array).is_some_and(|a| a.iter().any(|v| v.as_str() == Some(SERVER))))
        };
        let all = settings.iter().any(|s| s.get("enableAllProjectMcpServers").and_then(Json::as_bool) == Some(true));
        if listed("disabledMcpjsonServers") {
            return vec![Finding::inert(
                ".claude/settings.json",
                None,
                format!("`disabledMcpjsonServers` lists `{SERVER}`: Claude Code does not load it"),
                format!("remove `{SERVER}` from `disabledMcpjsonServers`"),
            )];
        }
        if !all && !listed("enabledMcpjsonServers") {
            return vec![Finding::inert(
                ".claude/settings.json",
                None,
                format!("the `{SERVER}` server of .mcp.json is not approved: Claude Code asks first, and headless (`-p`) nobody answers"),
                format!("add \"{SERVER}\" to `enabledMcpjsonServers` (or {})", rerun(agent)),
            )];
        }
    }
    Vec::new()
}

/// A synthetic gate call for `doctor` to send the agent's gate hooks: a write outside the
/// workspace, which no scope holds, in the agent's own input format (as `tests/fixtures/agents/`
/// records it). Its session is `doctor-<pid>`, recognisable in the trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    pub event: &'static str,
    pub tool: &'static str,
    /// The agent's session id (`doctor-<pid>`); ours is `<agent>:` before it.
    pub session: String,
    /// The path it writes: beside the workspace, never inside it.
    pub path: PathBuf,
    pub input: String,
}

pub fn probe(agent: Agent, workspace: &Path, pid: u32) -> Option<Probe> {
    let event = gate_event(agent)?;
    let session = crate::engine::sessions::probe_session(pid);
    let path = workspace.parent().unwrap_or(Path::new("/")).join(format!("chokepoint-doctor-{pid}.txt"));
    // As an agent names them (on Windows `C:\…`, not the canonical `\\?\C:\…`).
    let (p, ws) = (crate::base::shown::text(&path), crate::base::shown::text(workspace));
    let content = "written by chokepoint doctor; a guard must refuse it\n";
    let (tool, input) = match agent {
        Agent::ClaudeCode => (
            "Write",
            serde_json::json!({ "session_id": session, "transcript_path": "", "cwd": ws, "permission_mode": "default",
                "hook_event_name": event, "tool_name": "Write", "tool_input": { "file_path": p, "content": content }, "tool_use_id": "doctor" }),
        ),
        Agent::VsCode => (
            "create_file",
            serde_json::json!({ "timestamp": "1970-01-01T00:00:00.000Z", "hook_event_name": event, "session_id": session,
                "transcript_path": "", "tool_name": "create_file", "tool_input": { "filePath": p, "content": content },
                "tool_use_id": "doctor", "cwd": ws }),
        ),
        Agent::Codex => (
            "apply_patch",
            serde_json::json!({ "session_id": session, "turn_id": "doctor", "transcript_path": null, "cwd": ws, "hook_event_name": event,
                "model": "doctor", "permission_mode": "default", "tool_name": "apply_patch",
                "tool_input": { "command": format!("*** Begin Patch\n*** Add File: {p}\n+{content}*** End Patch\n") }, "tool_use_id": "doctor" }),
        ),
        Agent::GeminiCli => (
            "write_file",
            serde_json::json!({ "session_id": session, "transcript_path": "", "cwd": ws, "hook_event_name": event,
                "timestamp": "1970-01-01T00:00:00.000Z", "tool_name": "write_file", "tool_input": { "file_path": p, "content": content } }),
        ),
        Agent::Copilot => (
            "create",
            serde_json::json!({ "sessionId": session, "timestamp": 0, "cwd": ws, "toolName": "create", "toolArgs": { "path": p, "file_text": content } }),
        ),
        Agent::Cursor => (
            "Write",
            serde_json::json!({ "conversation_id": session, "generation_id": "doctor", "hook_event_name": event, "workspace_roots": [ws],
                "tool_name": "Write", "tool_input": { "file_path": p, "content": content }, "tool_use_id": "doctor", "cwd": ws }),
        ),
    };
    Some(Probe { event, tool, session, path, input: input.to_string() })
}

/// The environment the agent gives its hooks (docs/agents/clients.md): its project directory.
pub fn hook_env(agent: Agent, workspace: &Path) -> Vec<(&'static str, PathBuf)> {
    let vars: &[&'static str] = match agent {
        Agent::ClaudeCode | Agent::VsCode => &["CLAUDE_PROJECT_DIR"],
        Agent::GeminiCli => &["GEMINI_PROJECT_DIR", "CLAUDE_PROJECT_DIR"],
        Agent::Copilot => &["COPILOT_PROJECT_DIR", "CLAUDE_PROJECT_DIR"],
        Agent::Cursor => &["CURSOR_PROJECT_DIR"],
        Agent::Codex => &[],
    };
    vars.iter().map(|v| (*v, workspace.to_path_buf())).collect()
}

/// The program a hook's command runs: its first shell word, unquoted, with the agent's
/// project-directory variables put in. `None` when the shell would have to work it out (another
/// variable, a substitution).
pub fn program_of(command: &str, env: &[(&str, PathBuf)]) -> Option<String> {
    let mut word = String::new();
    let mut chars = command.trim_start().chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some('\''), '\'') | (Some('"'), '"') => quote = None,
            (Some('\''), c) => word.push(c),
            (Some('"'), '\\') | (None, '\\') => word.push(chars.next()?),
            (None, '\'' | '"') => quote = Some(c),
            (None, c) if c.is_whitespace() || ";&|<>()".contains(c) => break,
            (_, '$') => {
                let braced = chars.peek() == Some(&'{');
                if braced {
                    chars.next();
                }
                let mut name = String::new();
                while let Some(&n) = chars.peek().filter(|n| n.is_ascii_alphanumeric() || **n == '_') {
                    name.push(n);
                    chars.next();
                }
                if braced && chars.next() != Some('}') {
                    return None;
                }
                word.push_str(&env.iter().find(|(k, _)| *k == name)?.1.to_string_lossy());
            }
            (_, '`') => return None,
            (_, c) => word.push(c),
        }
    }
    (quote.is_none() && !word.is_empty()).then_some(word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matchers_select_as_each_agent_does() {
        assert!(matcher_matches(Agent::ClaudeCode, None, "Write"));
        assert!(matcher_matches(Agent::ClaudeCode, Some("*"), "Write"));
        assert!(!matcher_matches(Agent::ClaudeCode, Some("Read"), "Write"));
        assert!(matcher_matches(Agent::ClaudeCode, Some("Bash|Write"), "Write"));
        assert!(!matcher_matches(Agent::Codex, Some("Bash"), "BashOutput"));
        assert!(matcher_matches(Agent::Codex, Some("Edit"), "apply_patch"));
        assert!(matcher_matches(Agent::ClaudeCode, Some("Notebook.*"), "NotebookEdit"));
        assert!(!matcher_matches(Agent::ClaudeCode, Some("Note.*k"), "NotebookEdit"), "whole name");
        assert!(matcher_matches(Agent::GeminiCli, Some("write_.*"), "write_file"));
        assert!(!matcher_matches(Agent::GeminiCli, Some("(unclosed"), "write_file"));
    }

    #[test]
    fn the_guarded_tools_are_the_names_the_matcher_sees() {
        assert_eq!(guarded_tools(Agent::Cursor), ["Write", "Edit", "StrReplace", "MultiEdit", "EditNotebook", "Delete", "Shell"]);
        assert_eq!(guarded_tools(Agent::Codex), ["apply_patch", "Bash"]);
        assert_eq!(needed_events(Agent::Cursor), [("sessionStart", EventKind::SessionStart), ("preToolUse", EventKind::PreToolUse)]);
    }

    #[test]
    fn the_program_is_the_first_word_as_the_shell_reads_it() {
        let env = [("CLAUDE_PROJECT_DIR", PathBuf::from("/ws"))];
        assert_eq!(program_of(r"'/opt/it'\''s/chokepoint' hook --agent claude", &env).as_deref(), Some("/opt/it's/chokepoint"));
        assert_eq!(
            program_of(r#""$CLAUDE_PROJECT_DIR"/node_modules/.bin/chokepoint hook"#, &env).as_deref(),
            Some("/ws/node_modules/.bin/chokepoint")
        );
        assert_eq!(program_of("chokepoint hook", &env).as_deref(), Some("chokepoint"));
        assert_eq!(program_of("$HOME/bin/chokepoint hook", &env), None);
        assert_eq!(program_of("true", &env).as_deref(), Some("true"));
    }

    #[test]
    fn a_deadline_is_read_off_the_command() {
        let hook = |command: &str| ConfiguredHook {
            file: String::new(),
            event: String::new(),
            matcher: None,
            command: command.into(),
            timeout_secs: None,
        };
        assert_eq!(hook("'/x' hook --agent claude --deadline 590").deadline_secs(), 590);
        assert_eq!(hook("/x hook --agent claude").deadline_secs(), DEFAULT_DEADLINE_SECS);
    }
}
