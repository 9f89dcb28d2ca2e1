//! The hooks built into the engine, by name: `run_tests`, `rebase_on_main`, `create_pr`.
//!
//! Each reports SUCCESS, FAILURE or SKIP with a message, context values and, on FAILURE, a remediation
//! prompt that tells the agent how to fix what failed. In the chain, SUCCESS and SKIP allow and FAILURE
//! denies with the remediation, so on `BeforeSubmit` they run fail-fast and the agent gets the prompt.

use crate::hooks::command::{self, CommandSpec};
use crate::hooks::context::RunContext;
use crate::hooks::tested_tree;
use crate::model::decision::{Answer, Denial, HookAnswer, HookFailure};
use crate::model::event::Event;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// The names the configuration may use.
pub const BUILTINS: [&str; 3] = ["run_tests", "rebase_on_main", "create_pr"];

/// Builtins run whole test suites and git operations: a longer default than the 30 s of a command hook.
pub const DEFAULT_BUILTIN_TIMEOUT_SECS: u64 = 600;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltinSpec {
    pub name: String,
    /// `run_tests`: the test command (detected when absent); `create_pr`: the command that opens the
    /// pull request (SKIP when absent).
    pub command: Option<Vec<String>>,
    pub timeout: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuiltinStatus {
    Success,
    Failure,
    Skip,
}

/// What a builtin reports, before the chain turns it into an answer.
#[derive(Debug, Clone, PartialEq)]
pub struct BuiltinRun {
    pub status: BuiltinStatus,
    pub message: String,
    pub context: BTreeMap<String, String>,
    pub remediation: Option<String>,
    /// The chain's view: allow for SUCCESS and SKIP, a deny for FAILURE, a failure if it could not run.
    pub result: Result<HookAnswer, HookFailure>,
    pub output: Option<String>,
}

impl BuiltinRun {
    fn new(status: BuiltinStatus, message: impl Into<String>, remediation: Option<String>, output: Option<String>) -> Self {
        let message = message.into();
        let result = match status {
            BuiltinStatus::Success | BuiltinStatus::Skip => {
                Ok(HookAnswer { answer: Answer::Allow, additional_context: (status == BuiltinStatus::Skip).then(|| message.clone()) })
            }
            BuiltinStatus::Failure => {
                Ok(Answer::Deny(Denial { reason: message.clone(), remediation: remediation.clone(), suggested_tool: None }).into())
            }
        };
        BuiltinRun { status, message, context: BTreeMap::new(), remediation, result, output }
    }

    fn broken(failure: HookFailure) -> Self {
        BuiltinRun {
            status: BuiltinStatus::Failure,
            message: failure.to_string(),
            context: BTreeMap::new(),
            remediation: None,
            result: Err(failure),
            output: None,
        }
    }
}

pub async fn run(spec: &BuiltinSpec, event: &Event, ctx: &RunContext) -> BuiltinRun {
    match spec.name.as_str() {
        "run_tests" => run_tests(spec, event, ctx).await,
        "rebase_on_main" => rebase_on_main(spec, event, ctx).await,
        "create_pr" => create_pr(spec, event, ctx).await,
        other => BuiltinRun::broken(HookFailure::Error(format!("unknown builtin `{other}`"))),
    }
}

/// The project's test command, from the files at its root.
pub fn detect_test_command(root: &Path) -> Option<Vec<String>> {
    let argv = |a: &[&str]| Some(a.iter().map(|s| (*s).to_owned()).collect());
    if let Ok(text) = std::fs::read_to_string(root.join("package.json")) {
        let has_test = serde_json::from_str::<serde_json::Value>(&text).ok().and_then(|v| v.pointer("/scripts/test").cloned()).is_some();
        if has_test {
            return argv(&["npm", "test", "--silent"]);
        }
    }
    if root.join("Cargo.toml").is_file() {
        return argv(&["cargo", "test"]);
    }
    if root.join("go.mod").is_file() {
        return argv(&["go", "test", "./..."]);
    }
    if root.join("pyproject.toml").is_file() || root.join("pytest.ini").is_file() {
        return argv(&["python3", "-m", "pytest", "-q"]);
    }
    None
}

async fn run_tests(spec: &BuiltinSpec, event: &Event, ctx: &RunContext) -> BuiltinRun {
    let Some(argv) = spec.command.clone().or_else(|| detect_test_command(&ctx.workspace)) else {
        return BuiltinRun::new(BuiltinStatus::Skip, "run_tests: no test command found (give one with `command`)", None, None);
    };
    let shown = argv.join(" ");
    // The tree these tests last passed on is not tested again (`tested_tree`): a completion gate
    // fires after every turn, and most turns change nothing.
    let tree = {
        let (workspace, argv) = (ctx.workspace.clone(), argv.clone());
        tokio::task::spawn_blocking(move || tested_tree::fingerprint(&workspace, &argv)).await.ok().flatten()
    };
    if let Some(at) = tree.as_deref().and_then(|t| tested_tree::passed_on(&ctx.workspace, t)) {
        let when = crate::base::clock::format_utc(at);
        return BuiltinRun::new(
            BuiltinStatus::Skip,
            format!("run_tests: `{shown}` passed on this same tree at {when}; nothing changed since, so it was not run again"),
            None,
            None,
        );
    }
    let run = command::run(&CommandSpec { argv, shell: false, timeout: spec.timeout }, event, &ctx.workspace, ctx.output_cap).await;
    match run.result {
        Ok(_) => {
            if let Some(tree) = &tree {
                tested_tree::remember_pass(&ctx.workspace, tree);
            }
            BuiltinRun::new(BuiltinStatus::Success, format!("`{shown}` passed"), None, run.output)
        }
        Err(HookFailure::Error(reason)) => {
            let output = run.output.unwrap_or_default();
            let remediation =
                format!("The tests failed (`{shown}` {reason}). Fix the failures, then complete again.\n\n{}", last_lines(&output, 60));
            BuiltinRun::new(BuiltinStatus::Failure, format!("`{shown}` failed"), Some(remediation), Some(output))
        }
        Err(other) => BuiltinRun::broken(other),
    }
}

async fn git(args: &[&str], event: &Event, ctx: &RunContext, timeout: Duration) -> command::CommandRun {
    let argv = std::iter::once("git").chain(args.iter().copied()).map(str::to_owned).collect();
    command::run(&CommandSpec { argv, shell: false, timeout }, event, &ctx.workspace, ctx.output_cap).await
}

async fn rebase_on_main(spec: &BuiltinSpec, event: &Event, ctx: &RunContext) -> BuiltinRun {
    if git(&["rev-parse", "--git-dir"], event, ctx, spec.timeout).await.result.is_err() {
        return BuiltinRun::new(BuiltinStatus::Skip, "rebase_on_main: not a git repository", None, None);
    }
    let rebase = git(&["rebase", "main"], event, ctx, spec.timeout).await;
    match rebase.result {
        Ok(_) => BuiltinRun::new(BuiltinStatus::Success, "rebased on main", None, rebase.output),
        Err(HookFailure::Error(_)) => {
            let conflicts = git(&["diff", "--name-only", "--diff-filter=U"], event, ctx, spec.timeout).await.output.unwrap_or_default();
            let aborted = git(&["rebase", "--abort"], event, ctx, spec.timeout).await;
            let files: Vec<&str> = conflicts.lines().filter(|l| !l.trim().is_empty()).collect();
            let remediation = format!(
                "Rebasing onto main conflicts in: {}. The rebase was aborted{}. Run `git rebase main`, resolve the conflicts in those files, `git add` them, `git rebase --continue`, then complete again.",
                if files.is_empty() { "(unknown files)".to_owned() } else { files.join(", ") },
                if aborted.result.is_ok() { "" } else { " (the abort failed too: check `git status`)" }
            );
            let mut run = BuiltinRun::new(BuiltinStatus::Failure, "rebase on main has conflicts", Some(remediation), rebase.output);
            run.context.insert("conflicts".into(), files.join("\n"));
            run
        }
        Err(other) => BuiltinRun::broken(other),
    }
}

async fn create_pr(spec: &BuiltinSpec, event: &Event, ctx: &RunContext) -> BuiltinRun {
    let Some(argv) = spec.command.clone() else {
        return BuiltinRun::new(BuiltinStatus::Skip, "create_pr: no pull-request command configured (give one with `command`)", None, None);
    };
    let run = command::run(&CommandSpec { argv, shell: false, timeout: spec.timeout }, event, &ctx.workspace, ctx.output_cap).await;
    match run.result {
        Ok(_) => {
            let output = run.output.unwrap_or_default();
            let mut built = BuiltinRun::new(BuiltinStatus::Success, "pull request created", None, Some(output.clone()));
            if let Some(url) = output.split_whitespace().find(|w| w.starts_with("https://") || w.starts_with("http://")) {
                built.context.insert("pr_url".into(), url.to_owned());
            }
            built
        }
        Err(HookFailure::Error(reason)) => BuiltinRun::new(
            BuiltinStatus::Failure,
            format!("creating the pull request failed: {reason}"),
            Some(format!("Creating the pull request failed: {reason}. Check the branch is pushed and try again.")),
            run.output,
        ),
        Err(other) => BuiltinRun::broken(other),
    }
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
