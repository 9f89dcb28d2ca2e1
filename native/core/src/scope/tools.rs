//! Which tools write, which run shell commands and which change no file, per agent, as data: the
//! gatekeeper reads this table to find the paths a tool call writes, and `chokepoint hook` to find
//! the shell command it contains. Every agent names its tools differently (Claude Code's `Write`,
//! Gemini CLI's `write_file`, Codex's `apply_patch`, VS Code's `create_file`), so a row names the
//! agent it is for, or none for a tool of any agent (our own agent's). hooks.yaml adds rows
//! (`gatekeeper.tools`, and the older `write_tools` and `shell_tools`), and a configured row replaces
//! a built-in one with the same agent and tool.
//!
//! A tool the table does not know is judged by its input ([`unknown_tool_role`]): one whose input
//! names a path (`path`, `file_path`, `filePath`, `notebook_path`, …) is judged as a write of it, so
//! a write tool we have not heard of (a new release's, an MCP server's) is refused outside the scope
//! rather than let through; a person declares such a tool read-only with a `read` row. Where each
//! agent's list comes from is said at its rows: the tools the real clients offered their model
//! (`tests/agents`, the pinned versions of `scripts/agents.js`), Cursor's from its documentation and
//! third parties (no client runs here: second-hand).

use crate::model::external_events::Agent;
use std::collections::HashMap;

/// What a tool does that the gatekeeper judges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolRole {
    /// Writes the paths held by these input fields (each a string or an array of strings; see
    /// [`paths_in`] for a field inside a list of objects).
    Write(Vec<String>),
    /// Writes the files named inside the patch held by this input field (`patch.rs`).
    Patch(String),
    /// Runs the shell command held by this input field: contained, and judged as a patch when it
    /// carries one (Codex's `apply_patch` heredoc).
    Shell(String),
    /// Changes no file itself, whatever paths its input names (it reads, searches, or starts a
    /// sub-agent whose own calls are judged): never judged as a write.
    Read,
}

impl ToolRole {
    pub fn writes(&self) -> bool {
        matches!(self, ToolRole::Write(_) | ToolRole::Patch(_))
    }
}

/// Whether an input field's name says it holds a path: `file`, `files`, `filename`, `directory`,
/// a name ending in `_file`/`File` (`target_file`, `outputFile`), or in `path`/`paths` in any case
/// (`path`, `file_path`, `filePath`, `absolute_path`, `notebook_path`, `dir_path`, `scriptPath`).
pub fn is_path_field(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    matches!(lower.as_str(), "file" | "files" | "filename" | "directory")
        || name.ends_with("_file")
        || name.ends_with("File")
        || lower.ends_with("path")
        || lower.ends_with("paths")
}

/// What a tool the table does not know is judged as: a write of the paths its input names in
/// path-like fields ([`is_path_field`], at the top level, each a string or a list of strings), or
/// nothing when it names none.
pub fn unknown_tool_role(input: &serde_json::Value) -> Option<ToolRole> {
    let fields: Vec<String> = input
        .as_object()?
        .iter()
        .filter(|(name, value)| {
            is_path_field(name) && (value.is_string() || value.as_array().is_some_and(|a| a.iter().any(|v| v.is_string())))
        })
        .map(|(name, _)| name.clone())
        .collect();
    (!fields.is_empty()).then_some(ToolRole::Write(fields))
}

use Agent::{ClaudeCode, Codex, Copilot, Cursor, GeminiCli, VsCode};

const fn write(fields: &'static [&'static str]) -> Builtin {
    Builtin::Write(fields)
}

const COPILOT_FILE: &[&str] = &["path", "file_path"];

/// Cursor's write tools name their file `file_path` [2nd]; `path` too, in case (a field a tool does
/// not send is simply absent).
const CURSOR_FILE: &[&str] = &["file_path", "path"];

#[derive(Debug, Clone, Copy)]
enum Builtin {
    Write(&'static [&'static str]),
    Patch(&'static str),
    Shell(&'static str),
    Read,
}

/// The built-in rows: our agent's tools (for any agent), then each agent's own, as their hook input
/// reports them (docs/agents/protocols.md says where each is documented). The read rows are the
/// tools of each client that name a path and change no file; a client's tool that is in no row is
/// judged by [`unknown_tool_role`].
const BUILTIN: &[(Option<Agent>, &str, Builtin)] = &[
    (None, "write_to_file", write(&["path"])),
    (None, "apply_diff", write(&["path"])),
    (None, "execute_command", Builtin::Shell("command")),
    (None, "read_file", Builtin::Read),
    (None, "list_files", Builtin::Read),
    (None, "search_files", Builtin::Read),
    // Claude Code 2.1.331: the tools it offers its model, and its deferred ones (NotebookEdit).
    (Some(ClaudeCode), "Write", write(&["file_path"])),
    (Some(ClaudeCode), "Edit", write(&["file_path"])),
    (Some(ClaudeCode), "MultiEdit", write(&["file_path"])),
    (Some(ClaudeCode), "NotebookEdit", write(&["notebook_path"])),
    (Some(ClaudeCode), "Bash", Builtin::Shell("command")),
    (Some(ClaudeCode), "Read", Builtin::Read),
    (Some(ClaudeCode), "Glob", Builtin::Read),
    (Some(ClaudeCode), "Grep", Builtin::Read),
    (Some(ClaudeCode), "LS", Builtin::Read),
    // Runs a workflow script (`scriptPath`) of sub-agents, each of whose calls reaches the hooks.
    (Some(ClaudeCode), "Workflow", Builtin::Read),
    // Name no file: a sub-agent (whose own calls are judged), the tool search, its own stores.
    (Some(ClaudeCode), "Agent", Builtin::Read),
    (Some(ClaudeCode), "Task", Builtin::Read),
    (Some(ClaudeCode), "ToolSearch", Builtin::Read),
    (Some(ClaudeCode), "Skill", Builtin::Read),
    (Some(ClaudeCode), "TodoWrite", Builtin::Read),
    (Some(ClaudeCode), "WebFetch", Builtin::Read),
    (Some(ClaudeCode), "WebSearch", Builtin::Read),
    // Codex 0.169: `apply_patch` (freeform), `exec_command` (reported as `Bash`), `view_image`.
    (Some(Codex), "apply_patch", Builtin::Patch("command")),
    (Some(Codex), "Bash", Builtin::Shell("command")),
    (Some(Codex), "view_image", Builtin::Read),
    // Gemini CLI 0.61.
    (Some(GeminiCli), "write_file", write(&["file_path"])),
    (Some(GeminiCli), "replace", write(&["file_path"])),
    (Some(GeminiCli), "run_shell_command", Builtin::Shell("command")),
    (Some(GeminiCli), "read_file", Builtin::Read),
    (Some(GeminiCli), "read_many_files", Builtin::Read),
    (Some(GeminiCli), "list_directory", Builtin::Read),
    (Some(GeminiCli), "glob", Builtin::Read),
    (Some(GeminiCli), "grep_search", Builtin::Read),
    (Some(GeminiCli), "web_fetch", Builtin::Read),
    (Some(GeminiCli), "google_web_search", Builtin::Read),
    (Some(GeminiCli), "invoke_agent", Builtin::Read),
    (Some(GeminiCli), "activate_skill", Builtin::Read),
    (Some(GeminiCli), "update_topic", Builtin::Read),
    (Some(GeminiCli), "write_todos", Builtin::Read),
    // Copilot CLI 1.0.102 (`apply_patch` and `str_replace_editor` for models that are given them).
    // Its `permissionRequest` names the file `file_path` (`toolInput`), its `preToolUse` `path`.
    (Some(Copilot), "create", write(COPILOT_FILE)),
    (Some(Copilot), "edit", write(COPILOT_FILE)),
    (Some(Copilot), "str_replace_editor", write(COPILOT_FILE)),
    (Some(Copilot), "apply_patch", Builtin::Patch("patch")),
    (Some(Copilot), "bash", Builtin::Shell("command")),
    (Some(Copilot), "view", Builtin::Read),
    (Some(Copilot), "grep", Builtin::Read),
    (Some(Copilot), "glob", Builtin::Read),
    (Some(Copilot), "task", Builtin::Read),
    (Some(Copilot), "read_agent", Builtin::Read),
    (Some(Copilot), "list_agents", Builtin::Read),
    (Some(Copilot), "skill", Builtin::Read),
    (Some(Copilot), "read_bash", Builtin::Read),
    (Some(Copilot), "list_bash", Builtin::Read),
    // Cursor [2nd]: its documented `preToolUse` tool names (no client runs here).
    (Some(Cursor), "Write", write(CURSOR_FILE)),
    (Some(Cursor), "Edit", write(CURSOR_FILE)),
    (Some(Cursor), "StrReplace", write(CURSOR_FILE)),
    (Some(Cursor), "MultiEdit", write(CURSOR_FILE)),
    (Some(Cursor), "EditNotebook", write(&["target_notebook", "notebook_path", "file_path", "path"])),
    (Some(Cursor), "Delete", write(CURSOR_FILE)),
    (Some(Cursor), "Shell", Builtin::Shell("command")),
    (Some(Cursor), "execute_command", Builtin::Shell("command")),
    (Some(Cursor), "Read", Builtin::Read),
    (Some(Cursor), "Grep", Builtin::Read),
    (Some(Cursor), "Glob", Builtin::Read),
    (Some(Cursor), "LS", Builtin::Read),
    // VS Code 1.139.1 with Copilot Chat 0.67 (its `languageModelTools`).
    (Some(VsCode), "create_file", write(&["filePath"])),
    (Some(VsCode), "replace_string_in_file", write(&["filePath"])),
    // Copilot Chat 0.67 sends `{explanation, replacements: [{filePath, oldString, newString}]}`.
    (Some(VsCode), "multi_replace_string_in_file", write(&["filePath", "replacements[].filePath"])),
    (Some(VsCode), "insert_edit_into_file", write(&["filePath"])),
    (Some(VsCode), "edit_notebook_file", write(&["filePath"])),
    (Some(VsCode), "create_directory", write(&["dirPath"])),
    // `{input: <patch>, explanation}`, the patch in Codex's format with absolute paths.
    (Some(VsCode), "apply_patch", Builtin::Patch("input")),
    (Some(VsCode), "run_in_terminal", Builtin::Shell("command")),
    // `read_file` (our agent's row) and `list_dir` seen in 0.67's tool list; `file_search`,
    // `grep_search` and `get_errors` are Copilot Chat's read tools as documented [2nd].
    (Some(VsCode), "list_dir", Builtin::Read),
    (Some(VsCode), "file_search", Builtin::Read),
    (Some(VsCode), "grep_search", Builtin::Read),
    (Some(VsCode), "get_errors", Builtin::Read),
    // Writes only its own store, whose `/memories/…` paths are no files of the workspace.
    (Some(VsCode), "memory", Builtin::Read),
];

/// The paths a write tool's input holds in `field`: a string, or a list of strings. A field named
/// `<list>[].<field>` is that field of every object of the list (VS Code's
/// `multi_replace_string_in_file` names its files as `replacements[].filePath`).
pub fn paths_in<'a>(input: &'a serde_json::Value, field: &str) -> Vec<&'a str> {
    use serde_json::Value;
    if let Some((list, inner)) = field.split_once("[].") {
        return input.get(list).and_then(Value::as_array).into_iter().flatten().flat_map(|item| paths_in(item, inner)).collect();
    }
    match input.get(field) {
        Some(Value::String(one)) => vec![one.as_str()],
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// The tools the built-in table names for `agent` itself (not our own agent's) that write or run
/// shell commands, which its gate hook must see.
pub fn builtin_tools(agent: Agent) -> impl Iterator<Item = &'static str> {
    BUILTIN.iter().filter(move |(a, _, role)| *a == Some(agent) && !matches!(role, Builtin::Read)).map(|(_, tool, _)| *tool)
}

/// The table: built-in rows, then the configured ones over them. Keyed by tool name, so a look-up is
/// one hash of the name (no key built) and a scan of the agents that name that tool (one or two).
#[derive(Debug, Clone, Default)]
pub struct ToolTable {
    rows: HashMap<String, Vec<(Option<Agent>, ToolRole)>>,
}

impl ToolTable {
    /// The built-in rows only.
    pub fn builtin() -> ToolTable {
        let mut table = ToolTable::default();
        for (agent, tool, role) in BUILTIN {
            let role = match role {
                Builtin::Write(fields) => ToolRole::Write(fields.iter().map(|f| (*f).to_owned()).collect()),
                Builtin::Patch(field) => ToolRole::Patch((*field).to_owned()),
                Builtin::Shell(field) => ToolRole::Shell((*field).to_owned()),
                Builtin::Read => ToolRole::Read,
            };
            table.insert(*agent, tool, role);
        }
        table
    }

    /// Adds a row, replacing one with the same agent and tool.
    pub fn insert(&mut self, agent: Option<Agent>, tool: &str, role: ToolRole) {
        let rows = self.rows.entry(tool.to_owned()).or_default();
        match rows.iter_mut().find(|(a, _)| *a == agent) {
            Some(row) => row.1 = role,
            None => rows.push((agent, role)),
        }
    }

    /// What `tool` does when `agent` calls it: the agent's own row, else a row for any agent, else
    /// another agent's row of that name that judges something; another agent's `Read` only for a
    /// caller that does not say who it is (an agent's tool is taken for a read on its own word).
    /// Judging a call as the write it might be is the safe mistake: an agent may run another's
    /// hooks (VS Code's agent runs Claude Code's `.claude/settings.json` hooks, as `--agent claude`,
    /// with its own `create_file`), and a caller may not say who it is.
    pub fn role(&self, agent: Option<Agent>, tool: &str) -> Option<&ToolRole> {
        let rows = self.rows.get(tool)?;
        let find = |a: Option<Agent>| rows.iter().find(|(ra, _)| *ra == a).map(|(_, r)| r);
        agent.and_then(|a| find(Some(a))).or_else(|| find(None)).or_else(|| {
            let judged = rows.iter().map(|(_, r)| r).find(|r| **r != ToolRole::Read);
            judged.or_else(|| agent.is_none().then(|| rows.first().map(|(_, r)| r)).flatten())
        })
    }

    /// Whether the table has a row for `tool` of `agent` (its own or any agent's): a tool it knows.
    pub fn knows(&self, agent: Option<Agent>, tool: &str) -> bool {
        self.rows.get(tool).is_some_and(|rows| rows.iter().any(|(a, _)| a.is_none() || *a == agent))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_read_from_strings_lists_and_lists_of_objects() {
        let input = serde_json::json!({ "filePath": "/a", "paths": ["/b", 3, "/c"],
            "replacements": [{ "filePath": "/d", "oldString": "x" }, { "oldString": "y" }, { "filePath": "/e" }] });
        assert_eq!(paths_in(&input, "filePath"), ["/a"]);
        assert_eq!(paths_in(&input, "paths"), ["/b", "/c"]);
        assert_eq!(paths_in(&input, "replacements[].filePath"), ["/d", "/e"]);
        assert!(paths_in(&input, "missing[].filePath").is_empty() && paths_in(&input, "missing").is_empty());
    }

    #[test]
    fn an_unknown_tool_that_names_a_path_is_a_write_of_it() {
        let role = |input: serde_json::Value| unknown_tool_role(&input);
        let fields = |role: Option<ToolRole>| match role {
            Some(ToolRole::Write(mut f)) => {
                f.sort();
                f
            }
            other => panic!("{other:?}"),
        };
        assert_eq!(fields(role(serde_json::json!({"path": "/a", "content": "x"}))), ["path"]);
        assert_eq!(
            fields(role(
                serde_json::json!({"file_path": "a", "filePath": "b", "absolute_path": "c", "target_file": "d", "notebook_path": "e", "paths": ["f"]})
            )),
            ["absolute_path", "filePath", "file_path", "notebook_path", "paths", "target_file"]
        );
        // A path-like name with no path in it, or no path-like name: nothing to judge.
        assert_eq!(role(serde_json::json!({"path": 3, "query": "x"})), None);
        assert_eq!(role(serde_json::json!({"query": "x"})), None);
        assert_eq!(role(serde_json::json!("text")), None);
    }

    #[test]
    fn an_agents_own_row_comes_first_then_any_agents() {
        let mut table = ToolTable::builtin();
        assert_eq!(table.role(Some(GeminiCli), "write_file"), Some(&ToolRole::Write(vec!["file_path".into()])));
        assert_eq!(table.role(Some(Codex), "apply_patch"), Some(&ToolRole::Patch("command".into())));
        // Our agent's tools are any agent's.
        assert_eq!(table.role(Some(ClaudeCode), "write_to_file"), Some(&ToolRole::Write(vec!["path".into()])));
        // Another agent's tool of the same name is judged as that agent's (VS Code's agent runs
        // Claude Code's hooks with its own tools), and so is a caller that does not say who it is.
        assert_eq!(table.role(Some(ClaudeCode), "create_file"), Some(&ToolRole::Write(vec!["filePath".into()])));
        assert!(table.role(None, "Write").is_some());
        assert_eq!(table.role(Some(GeminiCli), "no_such_tool"), None);
        // Another agent's read row is not taken: `view` is Copilot CLI's read, and nobody else's.
        assert_eq!(table.role(Some(Copilot), "view"), Some(&ToolRole::Read));
        assert_eq!(table.role(Some(ClaudeCode), "view"), None);
        assert_eq!(table.role(None, "view"), Some(&ToolRole::Read));
        assert!(table.knows(Some(Cursor), "StrReplace") && !table.knows(Some(ClaudeCode), "StrReplace"));
        table.insert(Some(GeminiCli), "write_file", ToolRole::Write(vec!["target".into()]));
        assert_eq!(table.role(Some(GeminiCli), "write_file"), Some(&ToolRole::Write(vec!["target".into()])));
    }
}
