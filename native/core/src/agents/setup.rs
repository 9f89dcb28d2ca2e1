//! How an agent is set up to be governed, as a plan: given the agent and the current text of each
//! file the agent reads, the new text of each (and, for a person's own program, of the agent's local
//! settings: [`plan_local`]).
//! The hook before a tool call is given `--deadline 600` under the agent's 610 s
//! ([`ASK_DEADLINE_SECS`], [`ASK_TIMEOUT_SECS`]), so an ask lasts `approvals.timeout_seconds` and a
//! lapse is always ours, never the agent's fail-open timeout. JSON files are planned on an
//! order-keeping document (`json.rs`), TOML through `toml_edit`.
//! Pure: the caller reads the files and writes the plan (`chokepoint init`; the extension later,
//! through the binding).
//!
//! Every event of the agent that maps onto ours (`external_events`) runs
//! `chokepoint hook --agent <id> --deadline <s>`, except the rows that say they are not installed
//! (another event already judges the same call). The agent's timeout for the hook is a margin above
//! our deadline, so that we answer (a deny, for a gate we could not judge) before the agent gives up
//! on us and lets the call through. The MCP server `chokepoint` goes where the agent reads project
//! servers, and the runtime files go into the sidecar's `.gitignore`.
//!
//! **What a plan writes names no machine's path.** These files are shared through git: the hook
//! and the server's command are `portable::guarded`, which finds `chokepoint` at run time on the
//! machine it runs on and blocks when there is none, and the server finds its workspace from where
//! the agent starts it (`chokepoint mcp` without `--workspace`). A person's own program path goes
//! into the agent's local, ignored settings instead ([`plan_local`]: Claude Code's
//! `.claude/settings.local.json`, as `CHOKEPOINT_PROGRAM` in its `env`). An older plan's absolute
//! commands carry the same marker, so the next plan replaces them in place.
//!
//! A plan merges: the user's other hooks, servers and settings stay, in their order; an earlier
//! entry of ours (a command holding ` hook --agent <id>`) is replaced where it was; a plan of a file
//! already set up leaves its text as it is, byte for byte.
//!
//! **VS Code's agent and Copilot CLI share one file.** Both run the hooks of every
//! `.github/hooks/*.json`, so two sets of entries of ours there would judge each call twice (and
//! each with the other's parser). `init --agent vscode` and `init --agent copilot` therefore write
//! the same `.github/hooks/chokepoint.json`, byte for byte: Copilot CLI's format, which VS Code
//! reads too (`bash` as its command, `timeoutSec` as its timeout, the camelCase keys mapped by
//! `external_events::VSCODE_FILE_KEYS`), and each takes the other's entries for its own, so whichever
//! ran last replaces them in place. The entries say `--agent copilot --event <key>`: Copilot CLI's
//! input does not name its event, so its command line must, while VS Code's input names the event
//! and has its own shape (snake_case, `hook_event_name`), by which `chokepoint hook` recognises it
//! whatever `--agent` says (`input::parse`). Saying `copilot` keeps every file `init --agent
//! copilot` already wrote correct for VS Code, with nothing to rewrite. VS Code's PreCompact and
//! SubagentStart have no key in that format and are left out (the event table's notes say so).

use crate::agents::error::SetupError;
use crate::agents::json::{Json, Object};
use crate::agents::portable::{PROGRAM_VAR, guarded, guarded_powershell};
use crate::base::diagnostic::Diagnostic;
use crate::base::sidecar::{IGNORE_FILE, IGNORE_HEADER, RUNTIME_FILES, runtime_ignore, with_lines};
use crate::model::event::EventKind;
use crate::model::external_events::{Agent, EXTERNAL_EVENTS};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The agents whose configuration Chokepoint writes.
pub const AGENTS: [Agent; 6] = [Agent::ClaudeCode, Agent::Codex, Agent::GeminiCli, Agent::Copilot, Agent::Cursor, Agent::VsCode];

/// The name of our MCP server in every agent's configuration (its tools reach hooks as
/// `mcp__chokepoint__<tool>` and the like).
pub const SERVER: &str = "chokepoint";

/// The agent's timeout and our deadline for a hook that judges a prompt or records an event.
pub const TOOL_TIMEOUT_SECS: u64 = 30;
pub const TOOL_DEADLINE_SECS: u64 = 25;
/// The same for the hook that judges a tool call before it runs (`PreToolUse` and its kin), where a
/// hooks.yaml `ask:` waits for a person: ten minutes, so that `approvals.timeout_seconds` (300 by
/// default) is what a person has, not the hook's deadline. No agent we set up caps a hook's timeout
/// (Claude Code's and Codex's default is 600 s; VS Code's agent and Copilot CLI default to 30 s and
/// take any `timeoutSec`; Gemini CLI's is in milliseconds, 60 000 by default), and every one of them
/// lets the call through when it gives up on a hook: our deadline stays below theirs, so a lapse is
/// always our answer (a deny, or the configured fallback). A call nobody asks about is answered in
/// milliseconds whatever these say.
pub const ASK_TIMEOUT_SECS: u64 = 610;
pub const ASK_DEADLINE_SECS: u64 = 600;
/// The same for a completion gate, which runs the configured BeforeSubmit hooks (tests, linters).
pub const GATE_TIMEOUT_SECS: u64 = 600;
pub const GATE_DEADLINE_SECS: u64 = 590;
/// `chokepoint hook`'s deadline when its command line gives none.
pub const DEFAULT_DEADLINE_SECS: u64 = 25;

/// What to set up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setup {
    pub agent: Agent,
    /// Where the files are, for the diagnostics of one that does not parse; no file names it.
    pub workspace: PathBuf,
}

/// One event of the agent that runs our hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Installed {
    /// The agent's name for it.
    pub event: &'static str,
    pub kind: EventKind,
    /// What the agent waits, in seconds (written in the agent's unit).
    pub timeout_secs: u64,
    /// Ours (`--deadline`), below the agent's.
    pub deadline_secs: u64,
}

/// The events of `agent` that run our hook, in the table's order: every row that maps onto one of
/// ours, but those whose note says they are not installed (the same call is judged by another).
pub fn installed(agent: Agent) -> Vec<Installed> {
    EXTERNAL_EVENTS
        .iter()
        .filter(|row| row.agent == agent && !row.note.contains("not installed"))
        .filter_map(|row| {
            let kind = row.maps_to?;
            let (timeout_secs, deadline_secs) = match kind {
                EventKind::BeforeSubmit => (GATE_TIMEOUT_SECS, GATE_DEADLINE_SECS),
                EventKind::PreToolUse => (ASK_TIMEOUT_SECS, ASK_DEADLINE_SECS),
                _ => (TOOL_TIMEOUT_SECS, TOOL_DEADLINE_SECS),
            };
            Some(Installed { event: row.name, kind, timeout_secs, deadline_secs })
        })
        .collect()
}

/// The file that holds the agent's hooks (relative to the workspace, `/`-separated). `None`: an
/// agent we do not set up.
pub fn hooks_file(agent: Agent) -> Option<&'static str> {
    match agent {
        Agent::ClaudeCode => Some(".claude/settings.json"),
        Agent::Codex => Some(".codex/hooks.json"),
        Agent::GeminiCli => Some(".gemini/settings.json"),
        // The same file for both: they read each other's (see the module's comment).
        Agent::Copilot | Agent::VsCode => Some(".github/hooks/chokepoint.json"),
        Agent::Cursor => Some(".cursor/hooks.json"),
    }
}

/// The agent whose format and entries the hooks file of `agent` holds: its own, but VS Code's
/// agent's, which are Copilot CLI's (the two share `.github/hooks/chokepoint.json`).
pub fn written_as(agent: Agent) -> Agent {
    match agent {
        Agent::VsCode => Agent::Copilot,
        other => other,
    }
}

/// The agents whose entries of ours in `agent`'s hooks file are the same entries: VS Code's agent
/// and Copilot CLI take each other's for their own.
fn sharing(agent: Agent) -> &'static [Agent] {
    match agent {
        Agent::Copilot | Agent::VsCode => &[Agent::Copilot, Agent::VsCode],
        Agent::ClaudeCode => &[Agent::ClaudeCode],
        Agent::Codex => &[Agent::Codex],
        Agent::GeminiCli => &[Agent::GeminiCli],
        Agent::Cursor => &[Agent::Cursor],
    }
}

/// Where the agent reads the project's MCP servers. Copilot CLI 1.0.102 was seen loading the
/// workspace's `.mcp.json` (docs/agents/clients.md; protocols.md §4.2, older, calls it unverified).
/// VS Code's agent gets the handshake's tools from the Chokepoint extension (language model tools),
/// not from an MCP server: none is written for it.
pub fn mcp_file(agent: Agent) -> Option<&'static str> {
    match agent {
        Agent::ClaudeCode | Agent::Copilot => Some(".mcp.json"),
        Agent::Codex => Some(".codex/config.toml"),
        Agent::GeminiCli => Some(".gemini/settings.json"),
        Agent::Cursor => Some(".cursor/mcp.json"),
        Agent::VsCode => None,
    }
}

/// Every file a plan for `agent` reads and may write, in the order it reports them.
pub fn files(agent: Agent) -> Vec<&'static str> {
    let mut files: Vec<&'static str> = hooks_file(agent).into_iter().chain(mcp_file(agent)).collect();
    files.dedup();
    if hooks_file(agent).is_some() {
        files.push(IGNORE_FILE);
    }
    files
}

/// How a hook of ours is recognised in any agent's file: its command holds this.
pub fn marker(agent: Agent) -> String {
    format!(" hook --agent {}", agent.id())
}

/// Whether a configured command is a hook of ours for `agent`: one with its marker, or (VS Code's
/// agent, Copilot CLI) with the marker of the agent it shares the file with.
pub fn is_ours(agent: Agent, command: &str) -> bool {
    sharing(agent).iter().any(|a| command.contains(&marker(*a)))
}

/// The hook's command line for one event: `chokepoint hook …` behind the guard that finds the
/// program on this machine (`portable::guarded`).
pub fn command(agent: Agent, hook: &Installed) -> String {
    guarded(&command_args(agent, hook))
}

/// [`command`] for an agent that runs it through PowerShell (Copilot CLI on Windows: a handler's
/// `powershell` command; `portable::guarded_powershell`).
pub fn powershell_command(agent: Agent, hook: &Installed) -> String {
    guarded_powershell(&command_args(agent, hook))
}

/// The arguments of `chokepoint` in a hook's command line.
fn command_args(agent: Agent, hook: &Installed) -> String {
    let agent = written_as(agent);
    // Copilot CLI's input does not name its event: the command line does.
    let event = if agent == Agent::Copilot { format!(" --event {}", hook.event) } else { String::new() };
    format!("{}{event} --deadline {}", marker(agent).trim_start(), hook.deadline_secs)
}

/// The key and unit of a handler's timeout in the agent's file: seconds, but Gemini CLI's
/// milliseconds and Copilot CLI's `timeoutSec`.
pub fn timeout_key(agent: Agent) -> (&'static str, u64) {
    match agent {
        Agent::GeminiCli => ("timeout", 1000),
        Agent::Copilot | Agent::VsCode => ("timeoutSec", 1),
        _ => ("timeout", 1),
    }
}

/// The MCP server's command: `sh`, which every agent that reads these files runs on (Linux,
/// macOS), with [`server_args`].
pub const SERVER_COMMAND: &str = "sh";

/// The MCP server's arguments: `chokepoint mcp` behind the guard; the server takes the workspace
/// from the folder the agent starts it in (or its project folder variable), so no path is named.
pub fn server_args() -> [String; 2] {
    ["-c".to_owned(), guarded("mcp")]
}

/// One file of the plan. `after == before` when it needs no change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedFile {
    /// Relative to the workspace, `/`-separated.
    pub path: &'static str,
    /// Its text now; `None` when it does not exist.
    pub before: Option<String>,
    pub after: String,
}

impl PlannedFile {
    pub fn changed(&self) -> bool {
        self.before.as_deref() != Some(self.after.as_str())
    }
}

/// The plan: every file of [`files`] with its new text. `current` gives a file's text, or `None`
/// when it does not exist. A file that cannot be read as its format is an error, and then nothing
/// of the plan should be written.
pub fn plan(setup: &Setup, current: impl Fn(&str) -> Option<String>) -> Result<Vec<PlannedFile>, SetupError> {
    let Some(hooks_path) = hooks_file(setup.agent) else { return Err(SetupError::Unsupported(setup.agent)) };
    let mut out = Vec::new();
    for path in files(setup.agent) {
        let before = current(path);
        let after = if path == IGNORE_FILE {
            ignore(before.as_deref())
        } else if path.ends_with(".toml") {
            codex_config(setup, path, before.as_deref())?
        } else {
            let mut doc = JsonFile::parse(setup, path, before.as_deref())?;
            if path == hooks_path {
                set_hooks(setup, &mut doc)?;
                if setup.agent == Agent::ClaudeCode {
                    enable_claude_server(&mut doc)?;
                }
            }
            if mcp_file(setup.agent) == Some(path) {
                set_server(&mut doc)?;
            }
            doc.text(before.as_deref())
        };
        out.push(PlannedFile { path, before, after });
    }
    Ok(out)
}

/// The agent's local settings file, read by that agent only on this machine and ignored by git, and
/// the ignore file that keeps it out of commits: only Claude Code has one
/// (`.claude/settings.local.json`). Codex, Gemini CLI, Copilot CLI, Cursor and VS Code's agent read
/// no such file: a person sets `CHOKEPOINT_PROGRAM` in their environment instead (README).
pub fn local_files(agent: Agent) -> Option<[&'static str; 2]> {
    match agent {
        Agent::ClaudeCode => Some([".claude/settings.local.json", ".claude/.gitignore"]),
        _ => None,
    }
}

/// The plan of a personal override: this machine's `program` for the guard
/// ([`PROGRAM_VAR`] in the local settings' `env`, which Claude Code gives its hooks and servers),
/// and the local file ignored by git. `None` for an agent without a local settings file.
pub fn plan_local(setup: &Setup, program: &Path, current: impl Fn(&str) -> Option<String>) -> Option<Result<Vec<PlannedFile>, SetupError>> {
    let [settings, ignore_file] = local_files(setup.agent)?;
    let planned = (|| {
        let before = current(settings);
        let mut file = JsonFile::parse(setup, settings, before.as_deref())?;
        let mut doc = std::mem::take(&mut file.doc);
        file.object(&mut doc, "env")?.insert(PROGRAM_VAR, program.to_string_lossy().into_owned().into());
        file.doc = doc;
        let after = file.text(before.as_deref());
        let local = PlannedFile { path: settings, before, after };
        let before = current(ignore_file);
        let name = settings.rsplit('/').next().unwrap_or(settings);
        let after = with_lines(before.as_deref(), LOCAL_IGNORE_HEADER, &[name]);
        Ok(vec![local, PlannedFile { path: ignore_file, before, after }])
    })();
    Some(planned)
}

/// The header of an ignore file Chokepoint writes for an agent's local settings.
const LOCAL_IGNORE_HEADER: &str = "# Written by Chokepoint: settings for this machine only.";

/// A JSON file being planned: its document, as read, and as it becomes.
struct JsonFile<'a> {
    setup: &'a Setup,
    path: &'static str,
    read: Json,
    doc: Object,
    indent: String,
}

impl<'a> JsonFile<'a> {
    fn parse(setup: &'a Setup, path: &'static str, text: Option<&str>) -> Result<JsonFile<'a>, SetupError> {
        let text = text.unwrap_or_default();
        let read = if text.trim().is_empty() {
            Json::Object(Object::default())
        } else {
            serde_json::from_str::<Json>(text).map_err(|e| {
                let (line, column) = (e.line() as u32, e.column() as u32);
                let message = e.to_string().replacen(&format!(" at line {line} column {column}"), "", 1);
                SetupError::Invalid(Diagnostic { file: setup.workspace.join(path), line, column, code: "json", message })
            })?
        };
        let Json::Object(doc) = read.clone() else {
            return Err(invalid(setup, path, format!("the file holds {}, not a JSON object", read.kind())));
        };
        Ok(JsonFile { setup, path, read, doc, indent: indent_of(text) })
    }

    /// The object at `key`, made when it is not there.
    fn object<'o>(&self, parent: &'o mut Object, key: &str) -> Result<&'o mut Object, SetupError> {
        let value = parent.entry(key, || Json::Object(Object::default()));
        let kind = value.kind();
        value.as_object_mut().ok_or_else(|| invalid(self.setup, self.path, format!("`{key}` is {kind}, not an object")))
    }

    /// The new text: the text as it was when nothing changed, so a second run rewrites nothing.
    fn text(self, before: Option<&str>) -> String {
        let doc = Json::Object(self.doc);
        match before {
            Some(before) if doc == self.read => before.to_owned(),
            _ => doc.to_text(&self.indent),
        }
    }
}

fn invalid(setup: &Setup, path: &str, message: String) -> SetupError {
    SetupError::Invalid(Diagnostic { file: setup.workspace.join(path), line: 0, column: 0, code: "agent-settings", message })
}

/// The indentation the file uses (of its first indented line), two spaces for a new one.
fn indent_of(text: &str) -> String {
    text.lines()
        .skip(1)
        .map(|line| &line[..line.len() - line.trim_start().len()])
        .find(|indent| !indent.is_empty())
        .unwrap_or("  ")
        .to_owned()
}

/// Whether the agent nests handlers in matcher groups (`{"matcher":…,"hooks":[…]}`), as Claude
/// Code, Codex and Gemini CLI do, or lists them flat under the event (Copilot CLI, Cursor).
fn nested(agent: Agent) -> bool {
    matches!(written_as(agent), Agent::ClaudeCode | Agent::Codex | Agent::GeminiCli)
}

fn handler_is_ours(agent: Agent, handler: &Json) -> bool {
    ["command", "bash", "powershell"].iter().any(|key| handler.get(key).and_then(Json::as_str).is_some_and(|c| is_ours(agent, c)))
}

/// One handler of ours, in the agent's words.
fn handler(setup: &Setup, hook: &Installed) -> Json {
    let command = Json::from(command(setup.agent, hook));
    let (key, unit) = timeout_key(setup.agent);
    let timeout = Json::from(hook.timeout_secs * unit);
    match written_as(setup.agent) {
        Agent::GeminiCli => Json::object([("type", "command".into()), ("name", SERVER.into()), ("command", command), (key, timeout)]),
        // Copilot CLI runs `bash` on Linux and macOS and `powershell` on Windows: both are guarded.
        Agent::Copilot => Json::object([
            ("type", "command".into()),
            ("bash", command),
            ("powershell", powershell_command(setup.agent, hook).into()),
            (key, timeout),
        ]),
        // Cursor's timeout unit is disputed (seconds in its docs' examples, milliseconds by a third
        // party): `failClosed` makes a gate whose hook ran out of time deny rather than allow.
        Agent::Cursor if hook.kind == EventKind::PreToolUse => {
            Json::object([("command", command), (key, timeout), ("failClosed", true.into())])
        }
        Agent::Cursor => Json::object([("command", command), (key, timeout)]),
        _ => Json::object([("type", "command".into()), ("command", command), (key, timeout)]),
    }
}

/// Our entries in the agent's hooks file: every earlier one removed, the new ones in the place of
/// the first removed of their event (else at its end), and the event keys left empty by the removal
/// dropped.
fn set_hooks(setup: &Setup, file: &mut JsonFile<'_>) -> Result<(), SetupError> {
    let agent = setup.agent;
    let mut doc = std::mem::take(&mut file.doc);
    if matches!(written_as(agent), Agent::Copilot | Agent::Cursor) {
        doc.entry("version", || Json::from(1u64));
    }
    let hooks = file.object(&mut doc, "hooks")?;
    let mut places: HashMap<String, usize> = HashMap::new();
    for (event, entries) in hooks.iter_mut() {
        let Some(entries) = entries.as_array_mut() else { continue };
        let mut kept = Vec::with_capacity(entries.len());
        for mut entry in entries.drain(..) {
            let removed_whole = if nested(agent) {
                match entry.as_object_mut().and_then(|group| group.get_mut("hooks")).and_then(Json::as_array_mut) {
                    Some(handlers) => {
                        let before = handlers.len();
                        handlers.retain(|h| !handler_is_ours(agent, h));
                        handlers.len() < before && handlers.is_empty()
                    }
                    None => false,
                }
            } else {
                handler_is_ours(agent, &entry)
            };
            if removed_whole {
                places.entry(event.to_owned()).or_insert(kept.len());
            } else {
                kept.push(entry);
            }
        }
        *entries = kept;
    }
    // VS Code's agent gets Copilot CLI's entries, all of them: the file is the same whichever of
    // the two set it up last (VS Code ignores the keys it does not read).
    for hook in installed(written_as(agent)) {
        let handler = handler(setup, &hook);
        let entry = if nested(agent) { Json::object([("matcher", "*".into()), ("hooks", Json::Array(vec![handler]))]) } else { handler };
        let entries = hooks.entry(hook.event, || Json::Array(Vec::new()));
        let kind = entries.kind();
        let Some(entries) = entries.as_array_mut() else {
            return Err(invalid(setup, file.path, format!("`hooks.{}` is {kind}, not an array", hook.event)));
        };
        let at = places.remove(hook.event).unwrap_or(entries.len()).min(entries.len());
        entries.insert(at, entry);
    }
    // What only held entries of ours for an event we no longer install.
    hooks.retain(|event, entries| !(places.contains_key(event) && entries.as_array().is_some_and(Vec::is_empty)));
    if agent == Agent::GeminiCli {
        // The master switch is on by default; a user's explicit `false` is theirs (doctor reports it).
        file.object(&mut doc, "hooksConfig")?.entry("enabled", || true.into());
    }
    file.doc = doc;
    Ok(())
}

/// Claude Code loads a project's `.mcp.json` servers only once approved; headless (`-p`) nobody
/// approves, so the approval is written: our server by name, unless all project servers already are.
fn enable_claude_server(file: &mut JsonFile<'_>) -> Result<(), SetupError> {
    if file.doc.get("enableAllProjectMcpServers").and_then(Json::as_bool) == Some(true) {
        return Ok(());
    }
    let list = file.doc.entry("enabledMcpjsonServers", || Json::Array(Vec::new()));
    let kind = list.kind();
    let Some(list) = list.as_array_mut() else {
        return Err(invalid(file.setup, file.path, format!("`enabledMcpjsonServers` is {kind}, not an array")));
    };
    if !list.iter().any(|s| s.as_str() == Some(SERVER)) {
        list.push(SERVER.into());
    }
    Ok(())
}

/// `mcpServers.chokepoint`: its command and arguments set, anything else the user gave it (`env`)
/// kept.
fn set_server(file: &mut JsonFile<'_>) -> Result<(), SetupError> {
    let mut doc = std::mem::take(&mut file.doc);
    let servers = file.object(&mut doc, "mcpServers")?;
    let server = file.object(servers, SERVER)?;
    server.insert("command", SERVER_COMMAND.into());
    server.insert("args", Json::Array(server_args().into_iter().map(Json::from).collect()));
    file.doc = doc;
    Ok(())
}

/// `.codex/config.toml` with `[mcp_servers.chokepoint]`, edited in place: comments, order and
/// formatting of the rest stay as they are.
fn codex_config(setup: &Setup, path: &'static str, text: Option<&str>) -> Result<String, SetupError> {
    use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, Value};
    let text = text.unwrap_or_default();
    let mut doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        let (line, column) = e.span().map_or((0, 0), |span| line_column(text, span.start));
        SetupError::Invalid(Diagnostic { file: setup.workspace.join(path), line, column, code: "toml", message: e.message().to_owned() })
    })?;
    let servers = doc.entry("mcp_servers").or_insert_with(|| {
        let mut table = Table::new();
        table.set_implicit(true);
        Item::Table(table)
    });
    let inline = servers.is_inline_table();
    let Some(servers) = servers.as_table_like_mut() else {
        return Err(invalid(setup, path, "`mcp_servers` is not a table".to_owned()));
    };
    let server = servers
        .entry(SERVER)
        .or_insert_with(|| if inline { Item::Value(Value::InlineTable(InlineTable::new())) } else { Item::Table(Table::new()) });
    let Some(server) = server.as_table_like_mut() else {
        return Err(invalid(setup, path, format!("`mcp_servers.{SERVER}` is not a table")));
    };
    if server.get("command").and_then(Item::as_str) != Some(SERVER_COMMAND) {
        server.insert("command", toml_edit::value(SERVER_COMMAND));
    }
    let args = server_args();
    let current: Option<Vec<&str>> = server.get("args").and_then(Item::as_array).map(|a| a.iter().filter_map(Value::as_str).collect());
    if current.as_deref() != Some(&args.iter().map(String::as_str).collect::<Vec<_>>()[..]) {
        server.insert("args", toml_edit::value(args.iter().map(String::as_str).collect::<Array>()));
    }
    // toml_edit writes what it did not touch as it read it: an unchanged document is the same text.
    Ok(doc.to_string())
}

/// 1-based line and column of a byte offset.
fn line_column(text: &str, offset: usize) -> (u32, u32) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line as u32, column as u32)
}

/// The sidecar's `.gitignore` with every runtime file in it: the lines missing from the user's
/// file added at its end (a file an older Chokepoint wrote gets the runtime files added since).
fn ignore(text: Option<&str>) -> String {
    match text {
        None => runtime_ignore(),
        Some(_) => with_lines(text, IGNORE_HEADER, RUNTIME_FILES),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::external_events;

    #[test]
    fn the_rows_not_installed_are_the_ones_judged_elsewhere() {
        let skipped: Vec<(Agent, &str)> = EXTERNAL_EVENTS
            .iter()
            .filter(|r| r.maps_to.is_some() && !installed(r.agent).iter().any(|i| i.event == r.name))
            .map(|r| (r.agent, r.name))
            .collect();
        assert_eq!(
            skipped,
            [
                (Agent::ClaudeCode, "PermissionRequest"),
                (Agent::Codex, "PermissionRequest"),
                (Agent::Copilot, "permissionRequest"),
                (Agent::Copilot, "preMcpToolCall"),
                (Agent::Cursor, "beforeShellExecution"),
                (Agent::Cursor, "beforeMCPExecution"),
                (Agent::VsCode, "PreCompact"),
                (Agent::VsCode, "SubagentStart"),
            ]
        );
    }

    #[test]
    fn vs_code_and_copilot_cli_write_one_file_alike() {
        let setup = |agent| Setup { agent, workspace: PathBuf::from("/ws") };
        let hooks = |agent, current: Option<String>| {
            plan(&setup(agent), |p| if Some(p) == hooks_file(agent) { current.clone() } else { None })
                .unwrap()
                .into_iter()
                .find(|f| Some(f.path) == hooks_file(agent))
                .unwrap()
                .after
        };
        let copilot = hooks(Agent::Copilot, None);
        assert_eq!(hooks(Agent::VsCode, None), copilot);
        // Each takes the other's entries for its own: replaced, never added beside them.
        assert_eq!(hooks(Agent::VsCode, Some(copilot.clone())), copilot);
        let by_hand = copilot.replace("--agent copilot", "--agent vscode");
        assert_eq!(hooks(Agent::Copilot, Some(by_hand.clone())), copilot);
        assert_eq!(hooks(Agent::VsCode, Some(by_hand)), copilot);
        assert_eq!(files(Agent::VsCode), [".github/hooks/chokepoint.json", IGNORE_FILE], "no MCP file");
        // Every event VS Code's agent runs our hook on has its key in the shared file.
        for hook in installed(Agent::VsCode) {
            assert!(
                installed(Agent::Copilot).iter().any(|c| external_events::vscode_event_of_key(c.event) == Some(hook.event)),
                "{}",
                hook.event
            );
        }
    }

    #[test]
    fn a_completion_gate_and_a_tool_call_wait_longer_than_a_prompt() {
        let gemini = installed(Agent::GeminiCli);
        let after_agent = gemini.iter().find(|i| i.event == "AfterAgent").unwrap();
        assert_eq!((after_agent.timeout_secs, after_agent.deadline_secs), (GATE_TIMEOUT_SECS, GATE_DEADLINE_SECS));
        let before_tool = gemini.iter().find(|i| i.event == "BeforeTool").unwrap();
        assert_eq!((before_tool.timeout_secs, before_tool.deadline_secs), (ASK_TIMEOUT_SECS, ASK_DEADLINE_SECS));
        assert_eq!(command(Agent::Copilot, before_tool), guarded("hook --agent copilot --event BeforeTool --deadline 600"));
        let before_agent = gemini.iter().find(|i| i.event == "BeforeAgent").unwrap();
        assert_eq!((before_agent.timeout_secs, before_agent.deadline_secs), (TOOL_TIMEOUT_SECS, TOOL_DEADLINE_SECS));
    }

    /// What each agent's file says for the hook where an ask waits for a person: the agent's
    /// timeout (in its own key and unit) and our `--deadline`, ten seconds below it, above the
    /// default `approvals.timeout_seconds` (300), so a person has the configured five minutes.
    #[test]
    fn the_hook_a_person_answers_through_waits_ten_minutes_in_every_agent() {
        let table: [(Agent, &str, &str, u64); 6] = [
            (Agent::ClaudeCode, "PreToolUse", "timeout", 610),
            (Agent::Codex, "PreToolUse", "timeout", 610),
            (Agent::GeminiCli, "BeforeTool", "timeout", 610_000),
            (Agent::Copilot, "preToolUse", "timeoutSec", 610),
            (Agent::VsCode, "preToolUse", "timeoutSec", 610),
            (Agent::Cursor, "preToolUse", "timeout", 610),
        ];
        for (agent, event, key, written) in table {
            let file = planned(agent, &[]).into_iter().find(|f| Some(f.path) == hooks_file(agent)).unwrap();
            let doc: serde_json::Value = serde_json::from_str(&file.after).unwrap();
            let entries = &doc["hooks"][event];
            // Claude Code's format nests the handlers under a matcher; the others list them.
            let handler = entries[0].get("hooks").map_or(&entries[0], |h| &h[0]);
            assert_eq!(handler[key], serde_json::json!(written), "{agent:?}: {handler}");
            let command = handler.get("command").or_else(|| handler.get("bash")).and_then(|c| c.as_str()).unwrap();
            assert!(command.contains(&format!("--deadline {ASK_DEADLINE_SECS}")), "{agent:?}: {command}");
            assert!(ASK_DEADLINE_SECS < written / timeout_key(agent).1, "{agent:?}: our deadline is below the agent's timeout");
            assert!(ASK_DEADLINE_SECS > crate::approvals::config::ApprovalsConfig::default().timeout_seconds);
        }
    }

    /// Every file of `agent`'s plan, from the files `current` holds.
    fn planned(agent: Agent, current: &[(&str, &str)]) -> Vec<PlannedFile> {
        let setup = Setup { agent, workspace: PathBuf::from("/home/me/ws") };
        plan(&setup, |p| current.iter().find(|(f, _)| *f == p).map(|(_, t)| (*t).to_owned())).unwrap()
    }

    #[test]
    fn what_a_plan_writes_names_no_path_of_this_machine_and_replaces_an_older_absolute_one() {
        let old_hooks = r#"{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"'/home/me/bin/chokepoint' hook --agent claude --deadline 25","timeout":30}]}]}}"#;
        let old_server = r#"{"mcpServers":{"chokepoint":{"command":"/home/me/bin/chokepoint","args":["mcp","--workspace","/home/me/ws"],"env":{"A":"1"}}}}"#;
        let old_codex =
            "[mcp_servers.chokepoint]\ncommand = \"/home/me/bin/chokepoint\"\nargs = [\"mcp\", \"--workspace\", \"/home/me/ws\"]\n";
        for agent in AGENTS {
            let fresh = planned(agent, &[]);
            let old = planned(agent, &[(".claude/settings.json", old_hooks), (".mcp.json", old_server), (".codex/config.toml", old_codex)]);
            for file in fresh.iter().chain(&old) {
                assert!(!file.after.contains("/home/me"), "{agent:?} {}: {}", file.path, file.after);
                assert!(!file.after.contains("--workspace"), "{agent:?} {}: {}", file.path, file.after);
            }
            // The same as a fresh plan (the old entries replaced in their place) but for what the
            // user had (the server's `env`).
            let value = |text: &str| {
                text.parse::<toml_edit::DocumentMut>()
                    .map(|d| d.to_string())
                    .unwrap_or_else(|_| serde_json::from_str::<serde_json::Value>(text).unwrap().to_string())
            };
            for (old, fresh) in old.iter().zip(&fresh) {
                if old.path != ".mcp.json" && old.path != IGNORE_FILE {
                    assert_eq!(value(&old.after), value(&fresh.after), "{agent:?} {}", old.path);
                }
            }
        }
        let mcp = planned(Agent::ClaudeCode, &[(".mcp.json", old_server)]).into_iter().find(|f| f.path == ".mcp.json").unwrap();
        let server: serde_json::Value = serde_json::from_str(&mcp.after).unwrap();
        assert_eq!(server["mcpServers"]["chokepoint"], serde_json::json!({ "command": "sh", "args": server_args(), "env": { "A": "1" } }));
    }

    #[test]
    fn a_personal_program_goes_into_claude_codes_local_settings_kept_out_of_git() {
        let setup = Setup { agent: Agent::ClaudeCode, workspace: PathBuf::from("/ws") };
        let local = plan_local(&setup, Path::new("/opt/it's/chokepoint"), |p| {
            (p == ".claude/settings.local.json").then(|| r#"{"env":{"A":"1"}}"#.to_owned())
        })
        .unwrap()
        .unwrap();
        assert_eq!(local[0].path, ".claude/settings.local.json");
        let settings: serde_json::Value = serde_json::from_str(&local[0].after).unwrap();
        assert_eq!(settings, serde_json::json!({ "env": { "A": "1", "CHOKEPOINT_PROGRAM": "/opt/it's/chokepoint" } }));
        assert_eq!(local[1].after, format!("{LOCAL_IGNORE_HEADER}\nsettings.local.json\n"));
        assert!(plan_local(&Setup { agent: Agent::Codex, ..setup }, Path::new("/x"), |_| None).is_none());
    }

    #[test]
    fn a_user_gitignore_gets_only_the_missing_lines() {
        assert_eq!(
            ignore(Some("state.db\ncustom")),
            format!(
                "state.db\ncustom\n{IGNORE_HEADER}\nstate.db-*\ntrace.db\ntrace.db-*\nagent_trace.lock\nsnapshots/\nserve.json\nbrain.lock\nbrain.generated.md\nimages.db\nimages.db-*\n"
            )
        );
        assert_eq!(ignore(Some(&runtime_ignore())), runtime_ignore());
    }

    #[test]
    fn toml_errors_are_located() {
        assert_eq!(line_column("a = 1\nb = \n", 10), (2, 5));
    }
}
