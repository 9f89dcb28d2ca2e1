//! Policy replay for the extension: `Engine.traceReplay`, the workspace's recorded tool calls judged
//! again against another hooks.yaml / active_intents.yaml (`chokepoint_core::engine::replay`), converted.
//! A promise of the core's report; a configuration that does not load comes back as its diagnostics,
//! as data.

use crate::Engine;
use crate::engine::JsDiagnostic;
use chokepoint_core as core;
use napi::bindgen_prelude::{Error, Status};
use napi_derive::napi;

/// What to replay, and against what.
#[napi(object, js_name = "ReplayOptions")]
pub struct JsReplayOptions {
    /// A folder holding the hooks.yaml and/or active_intents.yaml to judge with (or a checkout with
    /// them in `.orchestration/`); a file it lacks is the workspace's own.
    pub config: String,
    /// Only calls recorded at or after this time: RFC 3339, a date, or unix milliseconds as a string.
    pub since: Option<String>,
    /// Only calls made under this intent.
    pub intent: Option<String>,
    /// Run command and builtin hooks (with their side effects) instead of their recorded answers.
    pub run_commands: Option<bool>,
}

/// One recorded call whose decision would change.
#[napi(object, js_name = "ReplayChange")]
pub struct JsReplayChange {
    pub seq: f64,
    pub time: String,
    pub session: Option<String>,
    pub agent: Option<String>,
    pub intent: Option<String>,
    pub tool: String,
    pub paths: Vec<String>,
    #[napi(ts_type = "DecisionName")]
    pub from: String,
    #[napi(ts_type = "DecisionName")]
    pub to: String,
    /// The hook the change is down to: the one that decides now when it denies or asks, else the one
    /// that decided then.
    pub hook: Option<String>,
    pub reason: Option<String>,
    /// The hooks not run for this call, and what stood in for each.
    pub stand_ins: Vec<String>,
}

/// The changes of one hook, intent and direction.
#[napi(object, js_name = "ReplayGroup")]
pub struct JsReplayGroup {
    pub hook: Option<String>,
    pub intent: Option<String>,
    #[napi(ts_type = "DecisionName")]
    pub from: String,
    #[napi(ts_type = "DecisionName")]
    pub to: String,
    pub count: u32,
}

#[napi(object, js_name = "ReplaySkipped")]
pub struct JsReplaySkipped {
    pub reason: String,
    pub count: u32,
}

#[napi(object, js_name = "ReplayReport")]
pub struct JsReplayReport {
    pub hooks_file: String,
    pub intents_file: String,
    pub replayed: u32,
    pub unchanged: u32,
    pub changes: Vec<JsReplayChange>,
    pub groups: Vec<JsReplayGroup>,
    pub skipped: Vec<JsReplaySkipped>,
    /// Calls judged with a command hook neither run nor named by their record (counted as allowing).
    pub unverified: u32,
}

/// A replay's report, or, when the configuration to replay against does not load, its problems
/// (each with file, line and column) and no report.
#[napi(object, js_name = "ReplayResult")]
pub struct JsReplayResult {
    pub report: Option<JsReplayReport>,
    pub diagnostics: Vec<JsDiagnostic>,
}

impl From<core::engine::replay::ReplayReport> for JsReplayReport {
    fn from(r: core::engine::replay::ReplayReport) -> Self {
        JsReplayReport {
            hooks_file: r.hooks_file.to_string_lossy().into_owned(),
            intents_file: r.intents_file.to_string_lossy().into_owned(),
            replayed: r.replayed as u32,
            unchanged: r.unchanged as u32,
            changes: r
                .changes
                .into_iter()
                .map(|c| JsReplayChange {
                    seq: c.seq as f64,
                    time: c.time,
                    session: c.session,
                    agent: c.agent,
                    intent: c.intent,
                    tool: c.tool,
                    paths: c.paths,
                    from: c.from,
                    to: c.to,
                    hook: c.hook,
                    reason: c.reason,
                    stand_ins: c.stand_ins,
                })
                .collect(),
            groups: r
                .groups
                .into_iter()
                .map(|g| JsReplayGroup { hook: g.hook, intent: g.intent, from: g.from, to: g.to, count: g.count as u32 })
                .collect(),
            skipped: r.skipped.into_iter().map(|s| JsReplaySkipped { reason: s.reason, count: s.count as u32 }).collect(),
            unverified: r.unverified as u32,
        }
    }
}

#[napi]
impl Engine {
    /// Judges this workspace's recorded tool calls again against `options.config` and reports the
    /// decisions that would change. Appends nothing to the ledger and takes no lease; command hooks
    /// are not run unless `runCommands`. Rejects (code `GenericFailure`: napi's async exports carry no
    /// other) for a folder that holds no configuration, a `since` that is not a time, or a trace that
    /// cannot be read; a configuration that does not load is data (`diagnostics`).
    #[napi(catch_unwind)]
    pub async fn trace_replay(&self, options: JsReplayOptions) -> napi::Result<JsReplayResult> {
        let options = core::engine::replay::ReplayOptions {
            config: options.config.into(),
            since: options.since,
            intent: options.intent,
            run_commands: options.run_commands.unwrap_or(false),
        };
        match core::engine::replay::replay(self.inner.sidecar().workspace_root(), &options).await {
            Ok(report) => Ok(JsReplayResult { report: Some(report.into()), diagnostics: Vec::new() }),
            Err(core::engine::replay::ReplayError::Config(diagnostics)) => {
                Ok(JsReplayResult { report: None, diagnostics: diagnostics.into_iter().map(Into::into).collect() })
            }
            Err(e @ (core::engine::replay::ReplayError::BadOption(_) | core::engine::replay::ReplayError::Unreadable(_))) => {
                Err(Error::new(Status::GenericFailure, e.to_string()))
            }
        }
    }
}
