//! Shell commands contained to a session's scope: `runContained` (off the JavaScript thread) and
//! `cancelContained`, with what the command did and what containment held back. The command runs on
//! the libuv pool.

use crate::Engine;
use crate::errors::{Result, invalid};
use chokepoint_core as core;
use napi::bindgen_prelude::*;
use napi_derive::napi;
use std::sync::Arc;

/// A shell command to run contained (`Engine.runContained`).
#[napi(object, js_name = "ContainedCommand")]
pub struct JsContainedCommand {
    pub session_id: String,
    /// Program and arguments (no shell unless the program is one: `["sh", "-c", script]`).
    pub argv: Vec<String>,
    /// Working directory; the workspace root when absent.
    pub cwd: Option<String>,
    /// Milliseconds before the command is stopped with everything it started.
    pub timeout_ms: Option<u32>,
    /// The `chokepoint` program, which runs the command isolated over a copy-on-write layer of the
    /// workspace (Linux): only its own changes inside the scope are applied. Without it, the command
    /// runs observed: its changes are compared afterwards and reported, never undone.
    pub program: Option<String>,
}

/// A path a contained command changed.
#[napi(object, js_name = "ContainedChange")]
pub struct JsContainedChange {
    pub path: String,
    #[napi(ts_type = "ChangeKindName")]
    pub kind: String,
    /// Why it did not land (only in `notApplied`).
    pub reason: Option<String>,
}

/// What a contained command did, and what containment did about it.
#[napi(object, js_name = "ContainedResult")]
pub struct JsContainedResult {
    /// Null when it timed out or a signal ended it.
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// Stopped by `Engine.cancelContained` (the group was killed).
    pub cancelled: bool,
    pub stdout: String,
    pub stderr: String,
    /// Landlock's part.
    #[napi(ts_type = "ConfinementName")]
    pub confinement: String,
    /// It ran isolated: its changes are exactly its own.
    pub isolated: bool,
    /// Changes inside the scope: applied (isolated), or seen (observed).
    pub allowed: Vec<JsContainedChange>,
    /// Its changes outside the scope, never applied (isolated).
    pub refused: Vec<JsContainedChange>,
    /// Its allowed changes that did not land (someone else changed the path meanwhile, or a failure).
    pub not_applied: Vec<JsContainedChange>,
    /// Observed: changes outside the scope while it ran, by it or someone else; kept.
    pub unattributed: Vec<JsContainedChange>,
    /// The tool error for the agent when some of its changes were held back, could not be
    /// attributed, or a write was blocked.
    pub tool_error: Option<String>,
    /// What changes how the output reads (a timeout, output over the cap, a directory not granted).
    pub notes: Vec<String>,
    pub duration_ms: f64,
}

impl From<core::containment::ContainReport> for JsContainedResult {
    fn from(r: core::containment::ContainReport) -> Self {
        let change = |c: &core::containment::snapshot::Change, reason: Option<String>| JsContainedChange {
            path: c.path.clone(),
            kind: c.kind.as_str().to_owned(),
            reason,
        };
        let (stdout, stderr) = r.output.as_ref().map_or((String::new(), String::new()), |o| {
            (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
        });
        JsContainedResult {
            exit_code: r.exit_code(),
            timed_out: r.timed_out,
            cancelled: r.cancelled,
            stdout,
            stderr,
            confinement: r.confinement.as_str().to_owned(),
            isolated: matches!(r.isolation, core::containment::Isolation::Isolated),
            allowed: r.allowed.iter().map(|c| change(c, None)).collect(),
            refused: r.refused.iter().map(|c| change(c, None)).collect(),
            not_applied: r.not_applied.iter().map(|n| change(&n.change, Some(n.reason.clone()))).collect(),
            unattributed: r.unattributed.iter().map(|c| change(c, None)).collect(),
            tool_error: r.tool_error(),
            notes: r.notes(),
            duration_ms: r.duration.as_secs_f64() * 1e3,
        }
    }
}

#[napi]
impl Engine {
    /// Runs a shell command of a session contained to its intent's scope: isolated over a
    /// copy-on-write layer where `program` is given and Linux allows it, observed otherwise;
    /// Landlock where the kernel has it. Resolves with what the command printed and what
    /// containment did; rejects (code `GenericFailure`: napi's tasks carry no other) only when the command could not be started contained at
    /// all. Runs on the libuv thread pool, never on the extension host's thread.
    #[napi(catch_unwind, ts_return_type = "Promise<ContainedResult>")]
    pub fn run_contained(&self, command: JsContainedCommand) -> Result<AsyncTask<Contained>> {
        if command.argv.is_empty() {
            return Err(invalid("runContained needs a program in `argv`"));
        }
        Ok(AsyncTask::new(Contained { engine: self.inner.clone(), command: Some(command) }))
    }

    /// Stops the contained command a session is running, with everything it started; what it changed
    /// is judged as when it ends by itself, and its `runContained` resolves with `cancelled`.
    /// Returns whether one was running (or waiting for its turn).
    #[napi(catch_unwind)]
    pub fn cancel_contained(&self, session_id: String) -> bool {
        self.inner.cancel_contained(&session_id)
    }
}

/// The work of `Engine.runContained`, off the JavaScript thread.
pub struct Contained {
    engine: Arc<core::Engine>,
    command: Option<JsContainedCommand>,
}

impl Task for Contained {
    type Output = core::containment::ContainReport;
    type JsValue = JsContainedResult;

    // napi's tasks reject with a `Status` only: `code` is then `GenericFailure`.
    fn compute(&mut self) -> napi::Result<Self::Output> {
        let spec = self.command.take().ok_or_else(|| Error::new(Status::GenericFailure, "runContained ran twice".to_owned()))?;
        let shell = core::containment::Shell {
            argv: spec.argv.iter().map(Into::into).collect(),
            cwd: spec.cwd.map_or_else(|| self.engine.sidecar().workspace_root().to_path_buf(), std::path::PathBuf::from),
            env: Vec::new(),
            capture: true,
        };
        let timeout = spec.timeout_ms.map(|ms| std::time::Duration::from_millis(ms.into()));
        let isolator = spec.program.map(std::path::PathBuf::from);
        self.engine
            .run_contained(&spec.session_id, shell, isolator.as_deref(), timeout)
            .map_err(|e| Error::new(Status::GenericFailure, e.to_string()))
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        Ok(output.into())
    }
}
