//! The engine of one workspace: open, reload, what it loaded, the configuration watch, close. The
//! other domains add their methods to `Engine` in their own files (evaluate, scope, containment,
//! trace, approvals). `serve` starts the live engine (`core::serve`) and returns a `HookServer`
//! handle.

use crate::errors::{Code, Result, as_error};
use crate::host::HostTable;
use chokepoint_core as core;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use std::sync::Arc;

#[napi(object, js_name = "Diagnostic")]
pub struct JsDiagnostic {
    pub file: String,
    pub line: u32,
    pub column: u32,
    pub code: String,
    pub message: String,
}

#[napi(object, js_name = "ConfigStatus")]
pub struct JsConfigStatus {
    pub path: String,
    #[napi(ts_type = "FileStatusName")]
    pub status: String,
}

#[napi(object, js_name = "EngineInfo")]
pub struct JsEngineInfo {
    pub version: String,
    pub workspace_root: String,
    pub hooks: JsConfigStatus,
    pub intents: JsConfigStatus,
    pub hook_count: u32,
    #[napi(ts_type = "EventName[]")]
    pub events: Vec<String>,
    pub task_types: Vec<String>,
    pub intent_ids: Vec<String>,
    pub diagnostics: Vec<JsDiagnostic>,
}

fn path_string(p: &std::path::Path) -> String {
    p.to_string_lossy().into_owned()
}

impl From<core::Diagnostic> for JsDiagnostic {
    fn from(d: core::Diagnostic) -> Self {
        JsDiagnostic { file: path_string(&d.file), line: d.line, column: d.column, code: d.code.to_owned(), message: d.message }
    }
}

impl From<core::ConfigStatus> for JsConfigStatus {
    fn from(s: core::ConfigStatus) -> Self {
        JsConfigStatus { path: path_string(&s.path), status: s.status.as_str().to_owned() }
    }
}

impl From<core::EngineInfo> for JsEngineInfo {
    fn from(i: core::EngineInfo) -> Self {
        JsEngineInfo {
            version: i.version.to_owned(),
            workspace_root: path_string(&i.workspace_root),
            hooks: i.hooks.into(),
            intents: i.intents.into(),
            hook_count: i.hook_count as u32,
            events: i.events.iter().map(|e| e.as_str().to_owned()).collect(),
            task_types: i.task_types,
            intent_ids: i.intent_ids,
            diagnostics: i.diagnostics.into_iter().map(Into::into).collect(),
        }
    }
}

/// The engine of one workspace.
#[napi]
pub struct Engine {
    pub(crate) inner: Arc<core::Engine>,
    pub(crate) host: Arc<HostTable>,
}

#[napi]
impl Engine {
    /// Opens the engine on a workspace folder. Throws (`EINVAL`) if the folder does not exist;
    /// configuration problems do not throw, they are reported by `info().diagnostics`.
    #[napi(factory, catch_unwind)]
    pub fn open(workspace_root: String) -> Result<Engine> {
        core::Engine::open(&workspace_root)
            .map(|inner| {
                // The extension's engine lives: it copies the ledger to the team's database, if any.
                inner.tracer().copy_in_background();
                Engine { inner: Arc::new(inner), host: Arc::default() }
            })
            .map_err(|e| crate::errors::invalid(format!("cannot open workspace `{workspace_root}`: {e}")))
    }

    /// Re-reads the configuration; returns the number of diagnostics of this load.
    #[napi(catch_unwind)]
    pub fn reload(&self) -> u32 {
        self.inner.reload().len() as u32
    }

    /// The shared brain (`.orchestration/CLAUDE.md`) as an agent is shown it: the file, at most 32
    /// KiB, in a `<shared_brain>` block; `null` when the workspace has none. The runtime pins it in
    /// every prompt (`kind: 'brain'` for `planCompaction`).
    #[napi(catch_unwind)]
    pub fn brain_context(&self) -> Option<String> {
        self.inner.brain().context()
    }

    #[napi(catch_unwind)]
    pub fn info(&self) -> JsEngineInfo {
        self.inner.info().into()
    }

    /// Reloads the engine whenever hooks.yaml or active_intents.yaml changes (debounced), then calls
    /// `onReload` with the number of problems that reload found (0: the new configuration runs;
    /// more: the last good one keeps running). Keep the returned handle; `close()` stops watching.
    #[napi(catch_unwind, ts_args_type = "onReload: (problems: number) => void")]
    pub fn watch(&self, on_reload: ThreadsafeFunction<u32, (), u32, napi::Status, false>) -> Result<ConfigWatch> {
        let watcher = self
            .inner
            .watch(core::engine::watch::DEFAULT_DEBOUNCE, move |diagnostics| {
                on_reload.call(diagnostics.len() as u32, ThreadsafeFunctionCallMode::NonBlocking);
            })
            .map_err(as_error(Code::Engine))?;
        Ok(ConfigWatch { inner: Some(watcher) })
    }

    /// Serves this engine to other agents' hooks (`chokepoint hook` hands its calls to it) on the
    /// workspace's local socket, and to HTTP hooks on 127.0.0.1 (`httpUrl`; the token is in
    /// `.orchestration/serve.json`), until the returned handle is closed. `program` is the
    /// `chokepoint` program an HTTP hook's shell commands run contained through (without it they are
    /// refused). Throws (`EENGINE`) when another engine already serves the workspace
    /// or the socket's folder cannot be trusted.
    #[napi(catch_unwind)]
    pub fn serve(&self, program: Option<String>) -> Result<HookServer> {
        let options = core::serve::server::ServeOptions { program: program.map(Into::into), ..Default::default() };
        let server = core::serve::server::Server::start(Arc::clone(&self.inner), options).map_err(as_error(Code::Engine))?;
        Ok(HookServer { inner: Some(server) })
    }

    /// Releases the JavaScript functions registered as host hooks, so that they no longer keep Node
    /// running. A host hook that is called afterwards fails (and its failure mode applies).
    #[napi]
    pub fn close(&self) {
        self.host.clear();
    }
}

/// A running configuration watch (see `Engine.watch`).
#[napi]
pub struct ConfigWatch {
    inner: Option<core::engine::watch::ConfigWatcher>,
}

#[napi]
impl ConfigWatch {
    /// Stops watching. Idempotent.
    #[napi]
    pub fn close(&mut self) {
        self.inner = None;
    }
}

/// The engine serving other agents' hooks (see `Engine.serve`).
#[napi]
pub struct HookServer {
    inner: Option<core::serve::server::Server>,
}

#[napi]
impl HookServer {
    /// The socket it listens on.
    #[napi(getter)]
    pub fn socket(&self) -> String {
        self.inner.as_ref().map(|s| s.endpoint().socket().display().to_string()).unwrap_or_default()
    }

    /// Where agents' HTTP hooks post (`http://127.0.0.1:<port>`; a hook's URL adds `/hook/claude`).
    #[napi(getter)]
    pub fn http_url(&self) -> String {
        self.inner.as_ref().map(|s| s.http_url().to_owned()).unwrap_or_default()
    }

    /// Hook calls answered so far.
    #[napi]
    pub fn served(&self) -> u32 {
        self.inner.as_ref().map_or(0, |s| s.served() as u32)
    }

    /// Stops serving and removes the socket: hooks judge alone again. Idempotent.
    #[napi]
    pub fn close(&mut self) {
        self.inner = None;
    }
}
