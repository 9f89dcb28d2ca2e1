//! `.orchestration/hooks.yaml`: the declarative hook configuration, as typed data.
//!
//! This module parses and validates; it does not run anything. Unknown fields are errors rather than
//! silently ignored, because a misspelt `priority` on a security gate must not quietly become `normal`.

use crate::approvals::config::ApprovalsConfig;
use crate::base::diagnostic::Diagnostic;
use crate::base::team::CoordinationConfig;
use crate::base::yaml::{check_version, locate_value};
use crate::hooks::priority::{FailureMode, Priority};
use crate::model::event::EventKind;
use crate::scope::claims::Allowlists;
use crate::scope::settings::GatekeeperConfig;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// The schema version this engine reads. A file that declares another one is refused, not guessed at.
pub const HOOKS_SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HooksConfig {
    pub version: u32,
    /// Hooks per lifecycle event, in registration order.
    #[serde(default)]
    pub hooks: BTreeMap<EventKind, Vec<HookSpec>>,
    /// Task types whose hooks override the project's for tasks of that type.
    #[serde(default)]
    pub task_types: BTreeMap<String, TaskType>,
    /// How the intent gatekeeper recognises writes, holds locks and contains shell commands.
    #[serde(default)]
    #[schemars(default = "GatekeeperConfig::documented")]
    pub gatekeeper: GatekeeperConfig,
    /// Who answers an ask (a Pending) when no caller reviews it, and how long it may wait.
    #[serde(default)]
    pub approvals: ApprovalsConfig,
    /// The team's coordination database (PostgreSQL) several machines share, and what a gate does
    /// when it cannot be reached.
    #[serde(default)]
    pub coordination: CoordinationConfig,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskType {
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub hooks: BTreeMap<EventKind, Vec<HookSpec>>,
    /// The agents (by id) that may work on tasks of this type: claim one (`chokepoint task claim`) or
    /// select an intent whose `task_type` it is. Empty: every agent.
    #[serde(default)]
    pub agents: Vec<String>,
}

impl HooksConfig {
    /// The per-type agent allowlists, for the claim check (`scope::claims`): every declared type,
    /// each with its `agents` (empty: every agent).
    pub fn allowlists(&self) -> Allowlists {
        Allowlists::new(self.task_types.iter().map(|(name, t)| (name.clone(), t.agents.clone())).collect())
    }
}

/// A declared deny: the reason the agent reads, and how it can recover.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DenyRule {
    pub reason: String,
    #[serde(default)]
    pub remediation: Option<String>,
    #[serde(default)]
    pub suggested_tool: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HookSpec {
    pub name: String,
    #[serde(default)]
    pub priority: Priority,
    /// A process to run: program and arguments, no shell unless `shell` says so.
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// A declared rule, answered in-process without starting anything: deny what the matchers match.
    #[serde(default)]
    pub deny: Option<DenyRule>,
    /// A declared rule: escalate what the matchers match, with this reason.
    #[serde(default)]
    pub ask: Option<String>,
    /// A declared rule: add this text to the model's context when the matchers match.
    #[serde(default)]
    pub context: Option<String>,
    /// A hook built into the engine, by name (`run_tests`, `rebase_on_main`, `create_pr`).
    #[serde(default)]
    pub builtin: Option<String>,
    /// A regular expression over the tool name, anchored at both ends; absent matches every tool.
    #[serde(default)]
    pub tool: Option<String>,
    /// Globs over the workspace-relative paths an event touches; the hook runs if any path matches.
    #[serde(default)]
    pub paths: Vec<String>,
    /// `closed` (a failure denies) or `open` (a failure is recorded, the chain goes on). Default:
    /// `closed` for `critical` hooks, `open` for the others.
    #[serde(default)]
    pub failure: Option<FailureMode>,
    /// Seconds before a command hook is killed (its whole process group). Default 30.
    #[serde(default)]
    pub timeout: Option<u64>,
    /// Run `command` through `sh -c` (its first element is the script; on Windows, through
    /// `cmd /d /v:on /s /c`, where `{{name}}` is read as `"!CHOKEPOINT_NAME!"`). Off by default: no
    /// shell, so no injection through a file name or a task text.
    #[serde(default)]
    pub shell: bool,
    /// Send the hook's output to the agent's next turn.
    #[serde(default)]
    pub pipe_output: bool,
}

impl HookSpec {
    pub fn failure_mode(&self) -> FailureMode {
        self.failure.unwrap_or(FailureMode::default_for(self.priority))
    }
}

impl HooksConfig {
    pub fn hook_count(&self) -> usize {
        let project: usize = self.hooks.values().map(Vec::len).sum();
        let typed: usize = self.task_types.values().flat_map(|t| t.hooks.values()).map(Vec::len).sum();
        project + typed
    }

    /// Parses and validates the text of a `hooks.yaml`; `file` is only used to locate diagnostics.
    pub fn parse(file: &Path, text: &str) -> Result<HooksConfig, Vec<Diagnostic>> {
        let config: HooksConfig = serde_norway::from_str(text).map_err(|e| vec![Diagnostic::from_yaml(file.to_path_buf(), &e)])?;
        let mut problems: Vec<Diagnostic> =
            check_version(file, text, "hooks.yaml", config.version, HOOKS_SCHEMA_VERSION).into_iter().collect();
        let all_hooks = config.hooks.values().chain(config.task_types.values().flat_map(|t| t.hooks.values())).flatten();
        for hook in all_hooks {
            if let Err(e) = crate::hooks::chain::Matcher::new(hook.tool.as_deref(), &hook.paths) {
                let (line, column) = locate_value(text, "name", &hook.name);
                problems.push(Diagnostic {
                    file: file.to_path_buf(),
                    line,
                    column,
                    code: "hook-matcher",
                    message: format!("hook `{}`: {e}", hook.name),
                });
            }
            if hook.command.as_ref().is_some_and(Vec::is_empty) {
                let (line, column) = locate_value(text, "name", &hook.name);
                problems.push(Diagnostic {
                    file: file.to_path_buf(),
                    line,
                    column,
                    code: "hook-command",
                    message: format!("hook `{}` has an empty `command`", hook.name),
                });
            }
            let mut problem = |code: &'static str, message: String| {
                let (line, column) = locate_value(text, "name", &hook.name);
                problems.push(Diagnostic { file: file.to_path_buf(), line, column, code, message });
            };
            let declared = [hook.deny.is_some(), hook.ask.is_some(), hook.context.is_some()].iter().filter(|d| **d).count();
            if declared > 1 || (declared == 1 && (hook.command.is_some() || hook.builtin.is_some())) {
                problem(
                    "hook-kind",
                    format!("hook `{}` must have exactly one of `command`, `builtin`, `deny`, `ask` or `context`", hook.name),
                );
            }
            match (&hook.command, &hook.builtin) {
                (None, None) if declared == 0 => {
                    problem("hook-kind", format!("hook `{}` must have one of `command`, `builtin`, `deny`, `ask` or `context`", hook.name))
                }
                (_, Some(b)) if !crate::hooks::builtin::BUILTINS.contains(&b.as_str()) => problem(
                    "hook-builtin",
                    format!("hook `{}`: unknown builtin `{b}`; the builtins are {}", hook.name, crate::hooks::builtin::BUILTINS.join(", ")),
                ),
                (Some(_), Some(b)) if b == "rebase_on_main" => {
                    problem("hook-kind", format!("hook `{}`: builtin `{b}` takes no `command`", hook.name))
                }
                _ => {}
            }
            if hook.shell && hook.builtin.is_some() {
                problem("hook-kind", format!("hook `{}`: `shell` applies to commands, not builtins", hook.name));
            }
            for arg in hook.command.iter().flatten() {
                for unknown in crate::hooks::template::unknown_variables(arg) {
                    problem(
                        "hook-template",
                        format!(
                            "hook `{}`: unknown template variable `{{{{{unknown}}}}}`; the variables are {}",
                            hook.name,
                            crate::hooks::template::VARIABLES.iter().map(|(v, _)| *v).collect::<Vec<_>>().join(", ")
                        ),
                    );
                }
            }
        }
        // The sections other layers own validate themselves; this file places what they report.
        let sections = [
            ("gatekeeper", config.gatekeeper.problems()),
            ("approvals", config.approvals.problems()),
            ("coordination", config.coordination.problems()),
        ];
        for (code, found) in sections {
            for problem in found {
                let (line, column) = problem.locate(text);
                problems.push(Diagnostic { file: file.to_path_buf(), line, column, code, message: problem.message });
            }
        }
        if problems.is_empty() { Ok(config) } else { Err(problems) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approvals::config::{ApprovalRoute, Escalation};

    fn check_err(text: &str, expected: &str) {
        let got = HooksConfig::parse(Path::new("hooks.yaml"), text).unwrap_err();
        let rendered: Vec<String> = got.iter().map(ToString::to_string).collect();
        assert_eq!(rendered.join("\n"), expected);
    }

    #[test]
    fn parses_sample() {
        let text = "version: 1\nhooks:\n  PreToolUse:\n    - name: lint\n      command: [npm, run, lint]\n      priority: high\n";
        let c = HooksConfig::parse(Path::new("hooks.yaml"), text).unwrap();
        assert_eq!(c.hook_count(), 1);
        assert_eq!(c.hooks[&EventKind::PreToolUse][0].priority, Priority::High);
    }

    #[test]
    fn syntax_error_has_line_and_column() {
        check_err(
            "version: 1\nhooks:\n  PreToolUse:\n    - name: \"unclosed\n",
            "hooks.yaml:5:1: found unexpected end of stream, while scanning a quoted scalar at line 4 column 13 [yaml]",
        );
    }

    #[test]
    fn misspelt_field_is_an_error_not_a_default() {
        check_err(
            "version: 1\nhooks:\n  PreToolUse:\n    - name: gate\n      priorty: critical\n      builtin: run_tests\n",
            "hooks.yaml:5:7: hooks.PreToolUse[0]: unknown field `priorty`, expected one of `name`, `priority`, `command`, `deny`, `ask`, `context`, `builtin`, `tool`, `paths`, `failure`, `timeout`, `shell`, `pipe_output` [yaml]",
        );
    }

    #[test]
    fn unknown_event_is_an_error() {
        let got = HooksConfig::parse(Path::new("h.yaml"), "version: 1\nhooks:\n  PreToolUze: []\n").unwrap_err();
        assert_eq!((got[0].line, got[0].column), (3, 3));
        assert!(got[0].message.contains("unknown variant `PreToolUze`"), "{}", got[0].message);
    }

    #[test]
    fn gatekeeper_section_is_optional_and_checked() {
        let c = HooksConfig::parse(Path::new("h.yaml"), "version: 1\n").unwrap();
        assert_eq!(c.gatekeeper, GatekeeperConfig::default());
        assert_eq!(c.gatekeeper.shell_tools, ["execute_command"]);
        check_err(
            "version: 1\ngatekeeper:\n  write_tools:\n    save_note: []\n  writable: [tmp]\n  lease_seconds: 0\n",
            "hooks.yaml:4:5: write tool `save_note` names no input field that holds its paths [gatekeeper]\n\
             hooks.yaml:5:3: writable directory `tmp` must be an absolute path [gatekeeper]\n\
             hooks.yaml:6:3: `lease_seconds` must be at least 1 [gatekeeper]",
        );
    }

    #[test]
    fn approvals_section_is_optional_typed_and_checked() {
        let c = HooksConfig::parse(Path::new("h.yaml"), "version: 1\n").unwrap();
        assert_eq!(c.approvals, ApprovalsConfig::default());
        assert_eq!((c.approvals.default, c.approvals.timeout_seconds), (ApprovalRoute::Human, 300));
        let c = HooksConfig::parse(
            Path::new("h.yaml"),
            "version: 1\napprovals:\n  default: auto-deny\n  timeout_seconds: 5\n  handlers: { scope_expansion: human, \"*\": reviewer }\n  reviewer:\n    model: scripted:reviewer\n",
        )
        .unwrap();
        assert_eq!(c.approvals.handlers["*"], ApprovalRoute::Reviewer);
        assert_eq!(c.approvals.reviewer.unwrap().escalate_on, [Escalation::Reject, Escalation::Unsure]);
        check_err(
            "version: 1\napprovals:\n  default: reviewer\n  timeout_seconds: 0\n  handlers:\n    tool_cal: human\n",
            "hooks.yaml:4:3: `timeout_seconds` must be at least 1 [approvals]\n\
             hooks.yaml:6:5: approval handler for unknown kind `tool_cal`; the kinds are tool_call, scope_expansion, plan, compaction, submit, or `*` [approvals]\n\
             hooks.yaml:2:1: the `reviewer` route needs `approvals.reviewer.model` [approvals]",
        );
        let err = HooksConfig::parse(Path::new("hooks.yaml"), "version: 1\napprovals:\n  defualt: human\n").unwrap_err();
        assert!(err[0].message.contains("unknown field `defualt`"), "{}", err[0].message);
        let err = HooksConfig::parse(Path::new("hooks.yaml"), "version: 1\napprovals:\n  default: maybe\n").unwrap_err();
        assert!(err[0].message.contains("unknown variant `maybe`"), "{}", err[0].message);
    }

    #[test]
    fn semantic_errors_are_located() {
        check_err(
            "version: 2\nhooks:\n  PreToolUse:\n    - name: both\n      builtin: rebase_on_main\n      command: [x]\n    - name: neither\n    - name: typo\n      builtin: run_test\n    - name: tpl\n      command: [echo, \"{{sesion}}\"]\n",
            "hooks.yaml:1:1: hooks.yaml version 2 is not supported; this engine reads version 1 [unsupported-version]\n\
             hooks.yaml:4:7: hook `both`: builtin `rebase_on_main` takes no `command` [hook-kind]\n\
             hooks.yaml:7:7: hook `neither` must have one of `command`, `builtin`, `deny`, `ask` or `context` [hook-kind]\n\
             hooks.yaml:8:7: hook `typo`: unknown builtin `run_test`; the builtins are run_tests, rebase_on_main, create_pr [hook-builtin]\n\
             hooks.yaml:10:7: hook `tpl`: unknown template variable `{{sesion}}`; the variables are session, iteration, task_id, task_content, error, tool, path, intent_id [hook-template]",
        );
    }
}
