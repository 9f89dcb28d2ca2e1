//! Which tools write and which run shell commands, per agent, as data: the gatekeeper reads this
//! table to find the paths a tool call writes, and `chokepoint hook` to find the shell command it
//! contains. Every agent names its tools differently (Claude Code's `Write`, Gemini CLI's
//! `write_file`, Codex's `apply_patch`, VS Code's `create_file`), so a row names the agent it is for,
//! or none for a tool of any agent (our own agent's). hooks.yaml adds rows (`gatekeeper.tools`, and
//! the older `write_tools` and `shell_tools`), and a configured row replaces a built-in one with the
//! same agent and tool.

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
}

impl ToolRole {
    pub fn writes(&self) -> bool {
        !matches!(self, ToolRole::Shell(_))
    }
}

use Agent::{ClaudeCode, Codex, Copilot, Cursor, GeminiCli, VsCode};

const fn write(fields: &'static [&'static str]) -> Builtin {
    Builtin::Write(fields)
}

#[derive(Debug, Clone, Copy)]
enum Builtin {
    Write(&'static [&'static str]),
    Patch(&'static str),
    Shell(&'static str),
}

/// The built-in rows: our agent's tools (for any agent), then each agent's own, as their hook input
/// reports them (docs/agents/protocols.md says where each is documented).
const BUILTIN: &[(Option<Agent>, &str, Builtin)] = &[
    (None, "write_to_file", write(&["path"])),
    (None, "apply_diff", write(&["path"])),
    (None, "execute_command", Builtin::Shell("command")),
    (Some(ClaudeCode), "Write", write(&["file_path"])),
    (Some(ClaudeCode), "Edit", write(&["file_path"])),
    (Some(ClaudeCode), "MultiEdit", write(&["file_path"])),
    (Some(ClaudeCode), "NotebookEdit", write(&["notebook_path"])),
    (Some(ClaudeCode), "Bash", Builtin::Shell("command")),
    (Some(Codex), "apply_patch", Builtin::Patch("command")),
    (Some(Codex), "Bash", Builtin::Shell("command")),
    (Some(GeminiCli), "write_file", write(&["file_path"])),
    (Some(GeminiCli), "replace", write(&["file_path"])),
    (Some(GeminiCli), "run_shell_command", Builtin::Shell("command")),
    (Some(Copilot), "create", write(&["path"])),
    (Some(Copilot), "edit", write(&["path"])),
    (Some(Copilot), "str_replace_editor", write(&["path"])),
    (Some(Copilot), "apply_patch", Builtin::Patch("patch")),
    (Some(Copilot), "bash", Builtin::Shell("command")),
    (Some(Cursor), "Write", write(&["file_path"])),
    (Some(Cursor), "Edit", write(&["file_path"])),
    (Some(Cursor), "Delete", write(&["file_path"])),
    (Some(Cursor), "Shell", Builtin::Shell("command")),
    (Some(Cursor), "execute_command", Builtin::Shell("command")),
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

/// The tools the built-in table names for `agent` itself (not our own agent's): the tools of that
/// agent that write or run shell commands, which its gate hook must see.
pub fn builtin_tools(agent: Agent) -> impl Iterator<Item = &'static str> {
    BUILTIN.iter().filter(move |(a, _, _)| *a == Some(agent)).map(|(_, tool, _)| *tool)
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
    /// another agent's row of that name. Judging a call as the write it might be is the safe mistake:
    /// an agent may run another's hooks (VS Code's agent runs Claude Code's `.claude/settings.json`
    /// hooks, as `--agent claude`, with its own `create_file`), and a caller may not say who it is.
    pub fn role(&self, agent: Option<Agent>, tool: &str) -> Option<&ToolRole> {
        let rows = self.rows.get(tool)?;
        let find = |a: Option<Agent>| rows.iter().find(|(ra, _)| *ra == a).map(|(_, r)| r);
        agent.and_then(|a| find(Some(a))).or_else(|| find(None)).or_else(|| rows.first().map(|(_, r)| r))
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
        table.insert(Some(GeminiCli), "write_file", ToolRole::Write(vec!["target".into()]));
        assert_eq!(table.role(Some(GeminiCli), "write_file"), Some(&ToolRole::Write(vec!["target".into()])));
    }
}
