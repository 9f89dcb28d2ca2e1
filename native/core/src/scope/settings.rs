//! The gatekeeper's section of hooks.yaml (`gatekeeper:`): which tools write, which run shell
//! commands under containment, the lease time. Defined here, where it is used; `config` composes it
//! into hooks.yaml.

use crate::base::yaml::Problem;
use crate::model::external_events::Agent;
use crate::scope::tools::{ToolRole, ToolTable};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The gatekeeper's settings (hooks.yaml `gatekeeper:`). Every field has a safe default, so the
/// section is optional.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GatekeeperConfig {
    /// More write tools: tool name → the input fields that hold the paths it writes. Added to the
    /// built-in table (our agent's `write_to_file`, `apply_diff`; Claude Code's `Write`, `Edit`,
    /// `MultiEdit`, `NotebookEdit`); an entry with a built-in name replaces its fields.
    #[serde(default)]
    pub write_tools: BTreeMap<String, Vec<String>>,
    /// Tools whose `command` runs inside shell containment (isolated over a copy-on-write layer, or
    /// observed; Landlock where the kernel has it).
    #[serde(default = "default_shell_tools")]
    pub shell_tools: Vec<String>,
    /// More rows of the tool table, per agent (`scope/tools.rs` holds the built-in ones: Claude Code,
    /// Codex, Gemini CLI, Copilot CLI, Cursor, VS Code): which input fields hold the paths a tool
    /// writes (`writes`), the patch it applies (`patch`) or the shell command it runs (`shell`), or
    /// that it changes no file (`read: true`). A row with the agent and tool of a built-in one
    /// replaces it. A tool in no row whose input names a path (`path`, `file_path`, `filePath`, …;
    /// an MCP server's `mcp__<server>__<tool>` too) is judged as a write of that path: declare a
    /// tool that only reads with `read: true`.
    #[serde(default)]
    pub tools: Vec<ToolRow>,
    /// Directories outside the workspace that contained shell commands may write (temp dirs).
    /// `$TMPDIR` is added when set. The default is the platform's temporary folder: `/tmp` on Linux
    /// and macOS, the user's (`%TEMP%`, usually `%LOCALAPPDATA%\Temp`) on Windows.
    #[serde(default = "default_writable")]
    #[schemars(default = "documented_writable")]
    pub writable: Vec<String>,
    /// `auto`: confine shell commands with Landlock when the kernel supports it (macOS: with
    /// Seatbelt, `/usr/bin/sandbox-exec`, and refuse them where it is missing), so a write outside
    /// the scope fails as it happens; `off`: do not.
    #[serde(default)]
    pub landlock: LandlockSetting,
    /// `auto`: run shell commands isolated (Linux: user namespaces and an overlay of the workspace)
    /// where the system allows, so only the command's own changes inside the scope are applied and
    /// nobody else's work is touched; `off`: run them observed: changes are compared afterwards and
    /// reported, never undone (also where isolation is not available).
    #[serde(default)]
    pub isolation: IsolationSetting,
    /// Files larger than this (MiB) are hashed but not copied into the snapshot store.
    #[serde(default = "default_max_held_mib")]
    pub max_held_mib: u64,
    /// How long an intent lock lasts without activity, in seconds. Active sessions renew it.
    #[serde(default = "default_lease_seconds")]
    pub lease_seconds: u64,
}

/// One row of `gatekeeper.tools`: a tool, the agent it belongs to, and exactly one of what it does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolRow {
    /// The agent whose tool this is (`claude`, `codex`, `gemini`, `copilot`, `cursor`, `vscode`);
    /// absent for a tool of any agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The tool's name as the agent's hook input reports it.
    pub tool: String,
    /// The input fields that hold the paths the tool writes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub writes: Vec<String>,
    /// The input field that holds a patch in Codex's `apply_patch` format.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    /// The input field that holds a shell command, run contained.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell: Option<String>,
    /// The tool changes no file, whatever paths its input names: never judged as a write.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read: bool,
}

impl ToolRow {
    fn role(&self) -> Result<ToolRole, String> {
        match (self.writes.is_empty(), &self.patch, &self.shell, self.read) {
            (false, None, None, false) => Ok(ToolRole::Write(self.writes.clone())),
            (true, Some(field), None, false) => Ok(ToolRole::Patch(field.clone())),
            (true, None, Some(field), false) => Ok(ToolRole::Shell(field.clone())),
            (true, None, None, true) => Ok(ToolRole::Read),
            _ => Err(format!("tool `{}` must say exactly one of `writes`, `patch`, `shell` or `read: true`", self.tool)),
        }
    }

    fn agent(&self) -> Result<Option<Agent>, String> {
        match &self.agent {
            None => Ok(None),
            Some(id) => Agent::from_id(id).map(Some).ok_or_else(|| {
                let known: Vec<&str> = Agent::ALL.iter().map(|a| a.id()).collect();
                format!("unknown agent `{id}`; known agents: {}", known.join(", "))
            }),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LandlockSetting {
    #[default]
    Auto,
    Off,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum IsolationSetting {
    #[default]
    Auto,
    Off,
}

fn default_shell_tools() -> Vec<String> {
    vec!["execute_command".to_owned()]
}

/// The platform's temporary folder. On Windows it is the user's own (`GetTempPath2`: `%TMP%`,
/// `%TEMP%`, else `%USERPROFILE%`), an absolute path as the setting must be; `/tmp` is not absolute
/// there, and granting it made every configuration fail to load, so the gate denied every write.
fn default_writable() -> Vec<String> {
    if cfg!(windows) { vec![std::env::temp_dir().to_string_lossy().into_owned()] } else { documented_writable() }
}

/// The default the JSON Schema shows, the same on every platform so that the committed schema is
/// one file: Linux's and macOS's (the description says what Windows uses).
fn documented_writable() -> Vec<String> {
    vec!["/tmp".to_owned()]
}

fn default_max_held_mib() -> u64 {
    crate::containment::contain::DEFAULT_MAX_HELD_BYTES / (1024 * 1024)
}

fn default_lease_seconds() -> u64 {
    300
}

impl Default for GatekeeperConfig {
    fn default() -> Self {
        GatekeeperConfig {
            write_tools: BTreeMap::new(),
            shell_tools: default_shell_tools(),
            tools: Vec::new(),
            writable: default_writable(),
            landlock: LandlockSetting::default(),
            isolation: IsolationSetting::default(),
            max_held_mib: default_max_held_mib(),
            lease_seconds: default_lease_seconds(),
        }
    }
}

impl GatekeeperConfig {
    /// The defaults as the JSON Schema shows them, the same on every platform (see
    /// [`documented_writable`]).
    pub fn documented() -> Self {
        GatekeeperConfig { writable: documented_writable(), ..GatekeeperConfig::default() }
    }

    /// What is wrong with this section, each with the key to point at.
    pub fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        for (tool, fields) in &self.write_tools {
            if fields.is_empty() {
                problems.push(Problem::new(tool, format!("write tool `{tool}` names no input field that holds its paths")));
            }
        }
        for dir in &self.writable {
            if !Path::new(dir).is_absolute() {
                problems.push(Problem::new("writable", format!("writable directory `{dir}` must be an absolute path")));
            }
        }
        for row in &self.tools {
            if let Err(e) = row.role() {
                problems.push(Problem::at("tool", &row.tool, e));
            }
            if let (Err(e), Some(agent)) = (row.agent(), &row.agent) {
                problems.push(Problem::at("agent", agent, e));
            }
        }
        if self.lease_seconds == 0 {
            problems.push(Problem::new("lease_seconds", "`lease_seconds` must be at least 1"));
        }
        problems
    }

    /// The tool table these settings make: the built-in rows, then `shell_tools` and `write_tools`
    /// (for any agent), then `tools`. A row with a problem is left out (the configuration that holds
    /// it does not load anyway).
    pub fn tool_table(&self) -> ToolTable {
        let mut table = ToolTable::builtin();
        for tool in &self.shell_tools {
            table.insert(None, tool, ToolRole::Shell("command".to_owned()));
        }
        for (tool, fields) in &self.write_tools {
            table.insert(None, tool, ToolRole::Write(fields.clone()));
        }
        for row in &self.tools {
            if let (Ok(role), Ok(agent)) = (row.role(), row.agent()) {
                table.insert(agent, &row.tool, role);
            }
        }
        table
    }
}
