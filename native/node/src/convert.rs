//! Conversions between napi objects and core types. The only place that knows both shapes.

use chokepoint_core as core;
use napi::bindgen_prelude::*;
use napi_derive::napi;

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
    /// `loaded`, `missing` or `invalid`.
    pub status: String,
}

#[napi(object, js_name = "EngineInfo")]
pub struct JsEngineInfo {
    pub version: String,
    pub workspace_root: String,
    pub hooks: JsConfigStatus,
    pub intents: JsConfigStatus,
    pub hook_count: u32,
    pub events: Vec<String>,
    pub task_types: Vec<String>,
    pub intent_ids: Vec<String>,
    pub diagnostics: Vec<JsDiagnostic>,
}

/// One event as the extension hands it to the chain.
#[napi(object, js_name = "Event")]
pub struct JsEvent {
    /// A canonical event name, e.g. `PreToolUse`.
    pub event: String,
    pub tool: Option<String>,
    pub input: Option<serde_json::Value>,
}

#[napi(object, js_name = "Evaluation")]
pub struct JsEvaluation {
    /// `allow`.
    pub decision: String,
    pub hooks_run: u32,
}

impl JsEvent {
    pub fn try_into_core(self) -> Result<(core::EventKind, Option<core::ToolCall>)> {
        let kind = self.event.parse::<core::EventKind>().map_err(|e| Error::new(Status::InvalidArg, e))?;
        let call = self
            .tool
            .map(|tool| core::ToolCall { tool, input: self.input.unwrap_or(serde_json::Value::Null) });
        Ok((kind, call))
    }
}

fn path_string(p: &std::path::Path) -> String {
    p.to_string_lossy().into_owned()
}

impl From<core::Diagnostic> for JsDiagnostic {
    fn from(d: core::Diagnostic) -> Self {
        JsDiagnostic {
            file: path_string(&d.file),
            line: d.line,
            column: d.column,
            code: d.code.to_owned(),
            message: d.message,
        }
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

impl From<core::Evaluation> for JsEvaluation {
    fn from(e: core::Evaluation) -> Self {
        JsEvaluation { decision: e.decision.as_str().to_owned(), hooks_run: e.hooks_run }
    }
}
