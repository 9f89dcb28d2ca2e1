//! The configuration an engine runs: what each file loaded to (`FileStatus`, `ConfigStatus`,
//! `EngineInfo`), every event's chain built from hooks.yaml with the hooks an embedder registered
//! (`Registration`, `Chains`), the snapshot a reload swaps whole (`Loaded`), and the loading of one
//! file that keeps its last good value.
//!
//! Invariant: bad configuration never takes effect. A reload that fails keeps the last good value of
//! that file and reports why; a file that was never good falls back to the built-in default (no
//! project hooks, no intents), which the engine reports as such rather than pretending all is well.
//! An active_intents.yaml that was never valid gates with no intents: every write is denied.
//!
//! A reload swaps one `Arc` snapshot: a reader sees the old configuration or the new one, never a
//! mix. Chain resolution for an event: the task type's hooks for that event, else the project's, else
//! the built-in default (none); native hooks are in every chain, registered before configured ones
//! (the gatekeeper first, then the ledger's). A type that declares an event with no hooks
//! (`BeforeMerge: []`) has an empty chain for it: that is how a type is exempted from a project's
//! merge gate.

use crate::base::diagnostic::Diagnostic;
use crate::base::sidecar::Sidecar;
use crate::config::hooks::{HookSpec, HooksConfig};
use crate::hooks::builtin::{BuiltinSpec, DEFAULT_BUILTIN_TIMEOUT_SECS};
use crate::hooks::chain::{Chain, ChainHook, HookImpl, Matcher, NativeHook};
use crate::hooks::command::CommandSpec;
use crate::hooks::priority::{DEFAULT_TIMEOUT_SECS, FailureMode, Priority};
use crate::model::decision::{HookAnswer, HookFailure};
use crate::model::event::{Event, EventKind};
use crate::scope::intents::IntentSet;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// How one configuration file stands after the last (re)load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileStatus {
    /// Not present; built-in defaults apply.
    Missing,
    /// Read and valid; this is what runs.
    Loaded,
    /// Present but invalid; the last good version (or the default) keeps running.
    Invalid,
}

crate::base::names::names!(FileStatus {
    Self::Missing => "missing",
    Self::Loaded => "loaded",
    Self::Invalid => "invalid",
});

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigStatus {
    pub path: PathBuf,
    pub status: FileStatus,
}

/// A snapshot of what the engine runs, for `Show Engine Info`, the status bar and `chokepoint info`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineInfo {
    pub version: &'static str,
    pub workspace_root: PathBuf,
    pub hooks: ConfigStatus,
    pub intents: ConfigStatus,
    pub hook_count: usize,
    pub events: Vec<EventKind>,
    pub task_types: Vec<String>,
    pub intent_ids: Vec<String>,
    pub diagnostics: Vec<Diagnostic>,
}

impl EngineInfo {
    /// What the configuration in force leaves unguarded although it loads: said loudly by `config
    /// check` (a distinct exit code), `doctor` and the status bar. Today one thing: without
    /// active_intents.yaml the gatekeeper requires no intent and judges no scope (a workspace that
    /// never declared intents runs so by design; one whose file was deleted, by a person or a
    /// command, must not look healthy). A folder without `.orchestration/` has none.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        // A folder without `.orchestration/` is not governed at all: nothing was turned off there.
        if self.intents.status == FileStatus::Missing && Sidecar::new(&self.workspace_root).exists() {
            warnings.push(format!(
                "{} is missing: scope checks are off, so any agent may write anywhere in the workspace but the governance \
                 files, without selecting an intent; restore it (`git checkout -- .orchestration/active_intents.yaml`) or \
                 declare the intents work is done under",
                self.intents.path.display()
            ));
        }
        warnings
    }
}

/// A hook the embedder registers with the engine rather than the configuration: a native hook (the
/// gatekeeper, the ledger) or a host hook (a function of the extension, `HookImpl::Host(id)`).
/// Registered hooks come before configured ones in registration order, so among equal priorities they
/// run first, in the order they were registered.
#[derive(Debug, Clone)]
pub struct Registration {
    pub name: String,
    pub priority: Priority,
    pub failure: Option<FailureMode>,
    pub events: Vec<EventKind>,
    pub matcher: Matcher,
    pub hook: HookImpl,
}

impl Registration {
    pub fn native(name: impl Into<String>, priority: Priority, events: Vec<EventKind>, hook: Arc<dyn NativeHook>) -> Self {
        Registration { name: name.into(), priority, failure: None, events, matcher: Matcher::default(), hook: HookImpl::Native(hook) }
    }
}

/// Every event's chain, built once per configuration load.
///
/// Resolution for an event of a task with a type: the task type's hooks for that event if it declares
/// any, else the project's hooks for that event, else the built-in defaults (none today). Native hooks
/// are part of every chain.
#[derive(Debug, Clone, Default)]
pub(super) struct Chains {
    project: HashMap<EventKind, Chain>,
    by_task_type: HashMap<String, HashMap<EventKind, Chain>>,
    natives_only: HashMap<EventKind, Chain>,
}

impl Chains {
    pub(super) fn build(config: &HooksConfig, natives: &[Registration]) -> Chains {
        let native_hooks = |kind: EventKind| -> Vec<ChainHook> {
            natives
                .iter()
                .enumerate()
                .filter(|(_, n)| n.events.contains(&kind))
                .map(|(i, n)| ChainHook {
                    name: n.name.as_str().into(),
                    priority: n.priority,
                    failure: n.failure.unwrap_or(FailureMode::default_for(n.priority)),
                    matcher: n.matcher.clone(),
                    imp: n.hook.clone(),
                    registration: i,
                    pipe_output: false,
                })
                .collect()
        };
        let chain = |kind: EventKind, specs: &[HookSpec]| {
            let mut hooks = native_hooks(kind);
            let first = natives.len();
            hooks.extend(specs.iter().enumerate().filter_map(|(i, spec)| configured_hook(spec, first + i)));
            Chain::new(hooks)
        };
        Chains {
            project: config.hooks.iter().map(|(kind, specs)| (*kind, chain(*kind, specs))).collect(),
            by_task_type: config
                .task_types
                .iter()
                .map(|(name, t)| (name.clone(), t.hooks.iter().map(|(kind, specs)| (*kind, chain(*kind, specs))).collect()))
                .collect(),
            natives_only: EventKind::ALL.iter().map(|k| (*k, chain(*k, &[]))).collect(),
        }
    }

    pub(super) fn resolve(&self, kind: EventKind, task_type: Option<&str>) -> &Chain {
        task_type
            .and_then(|t| self.by_task_type.get(t))
            .and_then(|by_event| by_event.get(&kind))
            .or_else(|| self.project.get(&kind))
            .or_else(|| self.natives_only.get(&kind))
            .expect("natives_only holds every event")
    }
}

/// A `deny`, `ask` or `context` rule from hooks.yaml: a fixed answer for whatever its matchers match,
/// given in-process. The fast path for guards that need no program (a process costs milliseconds).
#[derive(Debug)]
struct DeclaredRule(HookAnswer);

impl DeclaredRule {
    fn from_spec(spec: &HookSpec) -> Option<DeclaredRule> {
        use crate::model::decision::{Answer, Denial, HookAnswer};
        let answer = if let Some(d) = &spec.deny {
            Answer::Deny(Denial { reason: d.reason.clone(), remediation: d.remediation.clone(), suggested_tool: d.suggested_tool.clone() })
                .into()
        } else if let Some(reason) = &spec.ask {
            Answer::Ask { reason: reason.clone() }.into()
        } else {
            HookAnswer { answer: Answer::Allow, additional_context: Some(spec.context.clone()?) }
        };
        Some(DeclaredRule(answer))
    }
}

impl NativeHook for DeclaredRule {
    fn call(&self, _event: &Event) -> Result<HookAnswer, HookFailure> {
        Ok(self.0.clone())
    }

    fn needs_subject(&self, _event: &Event) -> bool {
        false
    }
}

fn configured_hook(spec: &HookSpec, registration: usize) -> Option<ChainHook> {
    // HooksConfig::parse has already refused invalid matchers, so this cannot fail for a loaded
    // configuration; a hook that could not be built is left out rather than guessed at.
    let matcher = Matcher::new(spec.tool.as_deref(), &spec.paths).ok()?;
    let imp = match (&spec.command, &spec.builtin) {
        (Some(command), None) => HookImpl::Command(CommandSpec {
            argv: command.clone(),
            shell: spec.shell,
            timeout: Duration::from_secs(spec.timeout.unwrap_or(DEFAULT_TIMEOUT_SECS)),
        }),
        (command, Some(builtin)) => HookImpl::Builtin(BuiltinSpec {
            name: builtin.clone(),
            command: command.clone(),
            timeout: Duration::from_secs(spec.timeout.unwrap_or(DEFAULT_BUILTIN_TIMEOUT_SECS)),
        }),
        (None, None) => HookImpl::Native(Arc::new(DeclaredRule::from_spec(spec)?)),
    };
    Some(ChainHook {
        name: spec.name.as_str().into(),
        priority: spec.priority,
        failure: spec.failure_mode(),
        matcher,
        imp,
        registration,
        pipe_output: spec.pipe_output,
    })
}

#[derive(Debug, Clone, Default)]
pub(super) struct Loaded {
    pub(super) hooks: HooksConfig,
    pub(super) hooks_status: Option<FileStatus>,
    pub(super) intents: IntentSet,
    pub(super) intents_status: Option<FileStatus>,
    /// Per file, whether what runs is the user's: loaded, missing (the defaults are then what the
    /// user chose), or invalid with an earlier good version kept running. False while a file has been
    /// invalid since this engine opened: the defaults stand in for a configuration that never loaded.
    pub(super) hooks_good: bool,
    pub(super) intents_good: bool,
    pub(super) diagnostics: Vec<Diagnostic>,
    pub(super) chains: Chains,
}

/// The two configuration files an engine loads: the workspace's own, or for a replay of its ledger
/// another version of them (`engine::replay`).
#[derive(Debug, Clone)]
pub(crate) struct ConfigFiles {
    pub(crate) hooks: PathBuf,
    pub(crate) intents: PathBuf,
}

/// Loads one YAML file, keeping the previous good value when the new text is invalid.
pub(super) fn load_file<T: Clone + Default>(
    path: &Path,
    parse: fn(&Path, &str) -> Result<T, Vec<Diagnostic>>,
    previous: &T,
    previous_status: Option<FileStatus>,
    diagnostics: &mut Vec<Diagnostic>,
) -> (T, FileStatus) {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (T::default(), FileStatus::Missing),
        Err(e) => {
            diagnostics.push(Diagnostic {
                file: path.to_path_buf(),
                line: 0,
                column: 0,
                code: "io",
                message: format!("cannot read file: {e}"),
            });
            return (keep(previous, previous_status), FileStatus::Invalid);
        }
    };
    match parse(path, &text) {
        Ok(value) => (value, FileStatus::Loaded),
        Err(problems) => {
            diagnostics.extend(problems);
            (keep(previous, previous_status), FileStatus::Invalid)
        }
    }
}

/// The value that keeps running after a failed load: the last good one if there ever was one.
pub(super) fn keep<T: Clone + Default>(previous: &T, previous_status: Option<FileStatus>) -> T {
    match previous_status {
        Some(FileStatus::Loaded | FileStatus::Invalid) => previous.clone(),
        _ => T::default(),
    }
}
