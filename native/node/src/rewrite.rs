//! What a hook's `modify` rewrote, as the core reads it per event (`model::rewrite::Rewrite`), and
//! the typed parts of a Pending's subject the runtime applies (a plan's tasks, a compaction's
//! summaries). The shapes are the core's; napi generates their TypeScript, so the runtime applies a
//! rewrite without reading JSON of its own.
//!
//! A field whose type is one of these objects names it by `ts_type`: napi knows an object's `js_name`
//! only once the macro has expanded that object, in an order that is not the source's, and otherwise
//! writes the Rust name into `index.d.ts`, where no TypeScript type answers it and the field is `any`
//! (`architecture.test.js` checks `index.d.ts` for such names).

use chokepoint_core as core;
use core::model::rewrite::{MessageToolCall, PlanRewrite, PlanTask, Rewrite, ToolResultRewrite, TurnMessage, TurnRewrite};
use napi_derive::napi;

#[napi(object, js_name = "ToolResultRewrite")]
pub struct JsToolResultRewrite {
    pub output: String,
    pub is_error: bool,
}

#[napi(object, js_name = "MessageToolCall")]
pub struct JsMessageToolCall {
    pub id: String,
    pub name: String,
    /// The call's arguments as JSON text.
    pub arguments: String,
}

/// One task of a plan or a queue.
#[napi(object, js_name = "PlanTask", use_nullable = true)]
pub struct JsPlanTask {
    pub prompt: String,
    pub title: Option<String>,
}

/// One summary of a compaction under review (`approvals::Summary`).
#[napi(object, js_name = "CompactionSummary", use_nullable = true)]
pub struct JsSummary {
    pub text: String,
    /// What it summarises (a turn range, a file).
    pub source: Option<String>,
}

#[napi(object, js_name = "TurnMessage")]
pub struct JsTurnMessage {
    #[napi(ts_type = "MessageRoleName")]
    pub role: String,
    pub content: String,
    /// A `tool` message: the call it answers, and the tool's name.
    pub tool_call_id: Option<String>,
    pub name: Option<String>,
    /// An `assistant` message: the calls it made (empty otherwise).
    #[napi(ts_type = "Array<MessageToolCall>")]
    pub tool_calls: Vec<JsMessageToolCall>,
}

#[napi(object, js_name = "TurnRewrite")]
pub struct JsTurnRewrite {
    pub system_prompt: Option<String>,
    pub model: Option<String>,
    /// The messages of this inference only; all of them or none.
    #[napi(ts_type = "Array<TurnMessage>")]
    pub messages: Option<Vec<JsTurnMessage>>,
}

#[napi(object, js_name = "PlanRewrite")]
pub struct JsPlanRewrite {
    pub title: Option<String>,
    #[napi(ts_type = "Array<PlanTask>")]
    pub tasks: Vec<JsPlanTask>,
}

/// What a hook's `modify` rewrote, read for the event it answered; the one field of that event is
/// set. `PreToolUse`'s rewrite is a whole tool input, which only the tool validates: it is
/// `Evaluation.modified` itself.
#[napi(object, js_name = "Rewrite")]
pub struct JsRewrite {
    /// `PostToolUse`: the tool's result as the model is told it.
    #[napi(ts_type = "ToolResultRewrite")]
    pub tool_result: Option<JsToolResultRewrite>,
    /// `TurnPrepare`: each field absent when the hook did not rewrite it.
    #[napi(ts_type = "TurnRewrite")]
    pub turn: Option<JsTurnRewrite>,
    /// `PlanSubmit`: the plan as rewritten.
    #[napi(ts_type = "PlanRewrite")]
    pub plan: Option<JsPlanRewrite>,
    /// `AllTasksComplete`: the tasks to queue (those with a prompt; none ends the run).
    #[napi(ts_type = "Array<PlanTask>")]
    pub queue: Option<Vec<JsPlanTask>>,
}

/// The typed rewrite of `modified` for `kind`, when the event rewrites something other than a tool
/// input and the answer holds it.
pub fn read(kind: core::EventKind, modified: Option<&serde_json::Value>) -> Option<JsRewrite> {
    let none = JsRewrite { tool_result: None, turn: None, plan: None, queue: None };
    // A tool input is not read here: it would be a copy of `modified` (and this is on every
    // evaluation's way back when a hook modified).
    if kind == core::EventKind::PreToolUse {
        return None;
    }
    Some(match Rewrite::read(kind, modified?)? {
        Rewrite::ToolInput(_) => return None,
        Rewrite::ToolResult(r) => JsRewrite { tool_result: Some(r.into()), ..none },
        Rewrite::Turn(t) => JsRewrite { turn: Some(t.into()), ..none },
        Rewrite::Plan(p) => JsRewrite { plan: Some(p.into()), ..none },
        Rewrite::Queue(tasks) => JsRewrite { queue: Some(tasks.into_iter().map(Into::into).collect()), ..none },
    })
}

// Each `From` takes the core's struct apart by every field: a field the core adds does not compile
// here until it is carried.
impl From<ToolResultRewrite> for JsToolResultRewrite {
    fn from(r: ToolResultRewrite) -> Self {
        let ToolResultRewrite { output, is_error } = r;
        JsToolResultRewrite { output, is_error }
    }
}

impl From<TurnRewrite> for JsTurnRewrite {
    fn from(t: TurnRewrite) -> Self {
        let TurnRewrite { system_prompt, model, messages } = t;
        JsTurnRewrite { system_prompt, model, messages: messages.map(|m| m.into_iter().map(Into::into).collect()) }
    }
}

impl From<TurnMessage> for JsTurnMessage {
    fn from(m: TurnMessage) -> Self {
        let TurnMessage { role, content, tool_call_id, name, tool_calls } = m;
        JsTurnMessage {
            role: role.as_str().to_owned(),
            content,
            tool_call_id,
            name,
            tool_calls: tool_calls.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<MessageToolCall> for JsMessageToolCall {
    fn from(c: MessageToolCall) -> Self {
        let MessageToolCall { id, name, arguments } = c;
        JsMessageToolCall { id, name, arguments }
    }
}

impl From<PlanRewrite> for JsPlanRewrite {
    fn from(p: PlanRewrite) -> Self {
        let PlanRewrite { title, tasks } = p;
        JsPlanRewrite { title, tasks: tasks.into_iter().map(Into::into).collect() }
    }
}

impl From<PlanTask> for JsPlanTask {
    fn from(t: PlanTask) -> Self {
        let PlanTask { prompt, title } = t;
        JsPlanTask { prompt, title }
    }
}

impl From<core::approvals::Summary> for JsSummary {
    fn from(s: core::approvals::Summary) -> Self {
        let core::approvals::Summary { text, source } = s;
        JsSummary { text, source }
    }
}
