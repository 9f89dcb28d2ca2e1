//! The engine: one workspace's loaded configuration and the entry point that judges events.
//!
//! Invariant: bad configuration never takes effect. A reload that fails keeps the last good value of
//! that file and reports why; a file that was never good falls back to the built-in default (no
//! project hooks, no intents), which the engine reports as such rather than pretending all is well.

use crate::config::HooksConfig;
use crate::diagnostic::Diagnostic;
use crate::event::{EventKind, ToolCall};
use crate::intents::IntentSet;
use crate::sidecar::Sidecar;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

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

impl FileStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            FileStatus::Missing => "missing",
            FileStatus::Loaded => "loaded",
            FileStatus::Invalid => "invalid",
        }
    }
}

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

/// The combined verdict of the chain on one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
}

impl Decision {
    pub fn as_str(&self) -> &'static str {
        match self {
            Decision::Allow => "allow",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Evaluation {
    pub decision: Decision,
    /// How many hooks ran to reach the decision.
    pub hooks_run: u32,
}

#[derive(Debug, Default)]
struct Loaded {
    hooks: HooksConfig,
    hooks_status: Option<FileStatus>,
    intents: IntentSet,
    intents_status: Option<FileStatus>,
    diagnostics: Vec<Diagnostic>,
}

#[derive(Debug)]
pub struct Engine {
    sidecar: Sidecar,
    // Readers take a cheap `Arc` clone; a reload swaps the whole snapshot so no caller ever sees a
    // half-applied configuration.
    loaded: RwLock<Arc<Loaded>>,
}

impl Engine {
    /// Opens the engine on a workspace. Fails only when the workspace itself is not a directory;
    /// configuration problems are reported through [`EngineInfo::diagnostics`].
    pub fn open(workspace_root: impl AsRef<Path>) -> std::io::Result<Engine> {
        let root = workspace_root.as_ref();
        if !std::fs::metadata(root)?.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                format!("workspace `{}` is not a directory", root.display()),
            ));
        }
        let engine = Engine { sidecar: Sidecar::new(root), loaded: RwLock::new(Arc::default()) };
        engine.reload();
        Ok(engine)
    }

    pub fn sidecar(&self) -> &Sidecar {
        &self.sidecar
    }

    /// Re-reads the configuration files. Returns the diagnostics of this load (empty when all good).
    pub fn reload(&self) -> Vec<Diagnostic> {
        let previous = self.snapshot();
        let mut diagnostics = Vec::new();
        let (hooks, hooks_status) = load_file(
            &self.sidecar.hooks_yaml(),
            HooksConfig::parse,
            &previous.hooks,
            previous.hooks_status,
            &mut diagnostics,
        );
        let (intents, intents_status) = load_file(
            &self.sidecar.active_intents_yaml(),
            IntentSet::parse,
            &previous.intents,
            previous.intents_status,
            &mut diagnostics,
        );
        let next = Loaded {
            hooks,
            hooks_status: Some(hooks_status),
            intents,
            intents_status: Some(intents_status),
            diagnostics: diagnostics.clone(),
        };
        *self.loaded.write().unwrap_or_else(|poisoned| poisoned.into_inner()) = Arc::new(next);
        diagnostics
    }

    fn snapshot(&self) -> Arc<Loaded> {
        self.loaded.read().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    pub fn info(&self) -> EngineInfo {
        let loaded = self.snapshot();
        EngineInfo {
            version: crate::VERSION,
            workspace_root: self.sidecar.workspace_root().to_path_buf(),
            hooks: ConfigStatus {
                path: self.sidecar.hooks_yaml(),
                status: loaded.hooks_status.unwrap_or(FileStatus::Missing),
            },
            intents: ConfigStatus {
                path: self.sidecar.active_intents_yaml(),
                status: loaded.intents_status.unwrap_or(FileStatus::Missing),
            },
            hook_count: loaded.hooks.hook_count(),
            events: loaded.hooks.hooks.keys().copied().collect(),
            task_types: loaded.hooks.task_types.keys().cloned().collect(),
            intent_ids: loaded.intents.active_intents.iter().map(|i| i.id.clone()).collect(),
            diagnostics: loaded.diagnostics.clone(),
        }
    }

    /// Runs the chain for one event and combines the hooks' answers into one decision.
    ///
    /// The chain holds no hooks yet (the hook engine issue fills it), so every event is allowed by an
    /// empty chain; the entry point exists now so that the binding, the CLI and the benchmarks are
    /// wired to the call the real chain will answer.
    pub fn evaluate(&self, _event: EventKind, _call: Option<&ToolCall>) -> Evaluation {
        Evaluation { decision: Decision::Allow, hooks_run: 0 }
    }
}

/// Loads one YAML file, keeping the previous good value when the new text is invalid.
fn load_file<T: Clone + Default>(
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
fn keep<T: Clone + Default>(previous: &T, previous_status: Option<FileStatus>) -> T {
    match previous_status {
        Some(FileStatus::Loaded | FileStatus::Invalid) => previous.clone(),
        _ => T::default(),
    }
}
