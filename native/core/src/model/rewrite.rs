//! What a hook's `modify` may rewrite, per event, read into the shape the caller applies.
//!
//! The chain passes a `modify` answer through as the hook wrote it (`Evaluation.modified`); the
//! reading is here, once, so every host (our runtime through the binding, a CLI caller) applies the
//! same rewrite of the same answer. Each reading is lenient, as the runtime always was: a field of
//! the wrong type is ignored (the caller keeps its own value), never an error of the task, because a
//! `modify` that a hook got half wrong should not end the agent's work. A task queued without a prompt
//! is skipped; a rewrite of nothing the event rewrites is `None`.
//!
//! `PreToolUse` is the exception: its rewrite is a whole new tool input, which only the tool can
//! validate (the runtime validates it against the tool's schema and judges it again).

use super::event::EventKind;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One task of a plan or a queue: what the agent is asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanTask {
    /// What the agent is asked to do.
    pub prompt: String,
    /// A short name for the task.
    #[serde(default)]
    pub title: Option<String>,
}

/// `PostToolUse`: the tool's result as the model is told it (e.g. a linter's errors appended).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResultRewrite {
    pub output: String,
    /// Only a literal `true` makes the result an error.
    pub is_error: bool,
}

/// `TurnPrepare`: the last mutable point before inference. Each field is `None` when the hook did
/// not rewrite it (or not in its type).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TurnRewrite {
    pub system_prompt: Option<String>,
    /// A model of the same endpoint, for the rest of the task; never empty.
    pub model: Option<String>,
    /// The messages of this inference only (the conversation is kept); all of them or none, since a
    /// conversation with one malformed message cannot be sent.
    pub messages: Option<Vec<TurnMessage>>,
}

/// Who wrote a message of a rewritten turn. `system` is not among them: the system prompt is its own
/// field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageRole {
    User,
    Assistant,
    Tool,
}

crate::base::names::names!(MessageRole {
    Self::User => "user",
    Self::Assistant => "assistant",
    Self::Tool => "tool",
});

/// One message of a rewritten turn. Both spellings of the two-word fields are read (`tool_call_id`
/// as hooks write JSON, `toolCallId` as the runtime's own messages are shaped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnMessage {
    pub role: MessageRole,
    pub content: String,
    /// A `tool` message: the call it answers and the tool's name (both required for it).
    pub tool_call_id: Option<String>,
    pub name: Option<String>,
    /// An `assistant` message: the calls it made.
    pub tool_calls: Vec<MessageToolCall>,
}

/// A tool call inside a rewritten assistant message; `arguments` is the raw JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// `PlanSubmit`: the plan as a hook rewrote it.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanRewrite {
    pub title: Option<String>,
    pub tasks: Vec<PlanTask>,
}

/// What a `modify` answer rewrote, read for the event it answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Rewrite {
    /// `PreToolUse`: the tool's whole new input.
    ToolInput(Value),
    /// `PostToolUse`.
    ToolResult(ToolResultRewrite),
    /// `TurnPrepare`.
    Turn(TurnRewrite),
    /// `PlanSubmit`.
    Plan(PlanRewrite),
    /// `AllTasksComplete`: more tasks for the queue (those with a prompt; none ends the run).
    Queue(Vec<PlanTask>),
}

impl Rewrite {
    /// Reads `modified` as what `kind` rewrites; `None` where the event rewrites nothing or the
    /// answer holds nothing of what it rewrites.
    pub fn read(kind: EventKind, modified: &Value) -> Option<Rewrite> {
        match kind {
            EventKind::PreToolUse => (!modified.is_null()).then(|| Rewrite::ToolInput(modified.clone())),
            EventKind::PostToolUse => {
                let result = modified.get("result")?;
                let output = result.get("output")?.as_str()?.to_owned();
                Some(Rewrite::ToolResult(ToolResultRewrite { output, is_error: result.get("is_error") == Some(&Value::Bool(true)) }))
            }
            EventKind::TurnPrepare => Some(Rewrite::Turn(TurnRewrite {
                system_prompt: text(modified.get("system_prompt")),
                model: text(modified.get("model")).filter(|m| !m.is_empty()),
                messages: modified.get("messages").and_then(messages),
            })),
            EventKind::PlanSubmit => {
                let tasks = modified.get("tasks")?.as_array()?;
                Some(Rewrite::Plan(PlanRewrite { title: text(modified.get("title")), tasks: tasks.iter().filter_map(task).collect() }))
            }
            EventKind::AllTasksComplete => {
                let tasks = modified.get("tasks").and_then(Value::as_array).map(|t| t.iter().filter_map(task).collect());
                Some(Rewrite::Queue(tasks.unwrap_or_default()))
            }
            _ => None,
        }
    }
}

fn text(value: Option<&Value>) -> Option<String> {
    value?.as_str().map(str::to_owned)
}

/// One of two spellings of a field.
fn field<'a>(value: &'a Value, snake: &str, camel: &str) -> Option<&'a Value> {
    value.get(snake).or_else(|| value.get(camel))
}

fn task(value: &Value) -> Option<PlanTask> {
    Some(PlanTask { prompt: text(value.get("prompt"))?, title: text(value.get("title")) })
}

fn messages(value: &Value) -> Option<Vec<TurnMessage>> {
    value.as_array()?.iter().map(message).collect()
}

fn message(value: &Value) -> Option<TurnMessage> {
    let role = MessageRole::from_name(value.get("role")?.as_str()?)?;
    let tool_call_id = text(field(value, "tool_call_id", "toolCallId"));
    let name = text(value.get("name"));
    if role == MessageRole::Tool && (tool_call_id.is_none() || name.is_none()) {
        return None;
    }
    let tool_calls = match field(value, "tool_calls", "toolCalls") {
        None | Some(Value::Null) => Vec::new(),
        Some(calls) => calls.as_array()?.iter().map(tool_call).collect::<Option<_>>()?,
    };
    Some(TurnMessage { role, content: text(value.get("content"))?, tool_call_id, name, tool_calls })
}

fn tool_call(value: &Value) -> Option<MessageToolCall> {
    Some(MessageToolCall { id: text(value.get("id"))?, name: text(value.get("name"))?, arguments: text(value.get("arguments"))? })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn task(prompt: &str, title: Option<&str>) -> PlanTask {
        PlanTask { prompt: prompt.into(), title: title.map(Into::into) }
    }

    #[test]
    fn a_tool_result_is_rewritten_only_by_text_and_is_an_error_only_when_it_says_so() {
        let read = |v: Value| match Rewrite::read(EventKind::PostToolUse, &v) {
            Some(Rewrite::ToolResult(r)) => Some((r.output, r.is_error)),
            None => None,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            read(json!({"result": {"output": "ok\nlinter: 2 warnings", "is_error": false}})),
            Some(("ok\nlinter: 2 warnings".into(), false))
        );
        assert_eq!(read(json!({"result": {"output": "failed", "is_error": true}})), Some(("failed".into(), true)));
        assert_eq!(read(json!({"result": {"output": "no flag"}})), Some(("no flag".into(), false)));
        assert_eq!(read(json!({"result": {"output": "odd flag", "is_error": "yes"}})), Some(("odd flag".into(), false)));
        assert_eq!(read(json!({"result": {"output": 7}})), None);
        assert_eq!(read(json!({"result": "text"})), None);
        assert_eq!(read(Value::Null), None);
    }

    #[test]
    fn a_turn_keeps_each_field_that_was_not_rewritten_in_its_type() {
        let read = |v: Value| match Rewrite::read(EventKind::TurnPrepare, &v) {
            Some(Rewrite::Turn(t)) => t,
            other => panic!("{other:?}"),
        };
        let steered = read(json!({"turn": 1, "system_prompt": "steered", "model": "bigger-model", "message_count": 3}));
        assert_eq!(steered, TurnRewrite { system_prompt: Some("steered".into()), model: Some("bigger-model".into()), messages: None });
        let odd = read(json!({"system_prompt": 5, "model": "", "messages": [{"role": "user", "content": "hi"}]}));
        assert_eq!((odd.system_prompt, odd.model), (None, None));
        assert_eq!(odd.messages.unwrap()[0].content, "hi");
        assert_eq!(read(Value::Null), TurnRewrite::default());
        assert_eq!(read(json!("not an object")), TurnRewrite::default());
    }

    #[test]
    fn a_turn_s_messages_are_taken_all_or_none() {
        let messages = |v: Value| match Rewrite::read(EventKind::TurnPrepare, &json!({ "messages": v })) {
            Some(Rewrite::Turn(t)) => t.messages,
            other => panic!("{other:?}"),
        };
        let both = messages(json!([
            {"role": "assistant", "content": "", "toolCalls": [{"id": "c1", "name": "read_file", "arguments": "{}"}]},
            {"role": "tool", "content": "text", "tool_call_id": "c1", "name": "read_file"},
        ]))
        .unwrap();
        assert_eq!(both[0].tool_calls, vec![MessageToolCall { id: "c1".into(), name: "read_file".into(), arguments: "{}".into() }]);
        assert_eq!((both[1].role, both[1].tool_call_id.as_deref()), (MessageRole::Tool, Some("c1")));
        // A tool message that does not say which call it answers cannot be sent: none is taken.
        assert_eq!(messages(json!([{"role": "user", "content": "hi"}, {"role": "tool", "content": "x", "name": "t"}])), None);
        assert_eq!(messages(json!([{"role": "system", "content": "the system prompt is its own field"}])), None);
        assert_eq!(messages(json!([{"role": "user", "content": 3}])), None);
        assert_eq!(messages(json!("all of them")), None);
    }

    #[test]
    fn queued_tasks_are_those_with_a_prompt_and_their_titles_when_text() {
        let read = |v: Value| match Rewrite::read(EventKind::AllTasksComplete, &v) {
            Some(Rewrite::Queue(tasks)) => tasks,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            read(json!({"tasks": [{"prompt": "next", "title": "Next"}, {"prompt": "then"}]})),
            vec![task("next", Some("Next")), task("then", None)]
        );
        assert_eq!(read(json!({"tasks": [{"title": "no prompt"}, null, {"prompt": "kept", "title": 3}]})), vec![task("kept", None)]);
        assert_eq!(read(json!({"tasks": "all of them"})), vec![]);
        assert_eq!(read(Value::Null), vec![]);
    }

    #[test]
    fn a_plan_is_rewritten_only_by_a_list_of_tasks() {
        let read = |v: Value| Rewrite::read(EventKind::PlanSubmit, &v);
        assert_eq!(
            read(json!({"title": "Smaller", "tasks": [{"prompt": "one"}, {"title": "none"}]})),
            Some(Rewrite::Plan(PlanRewrite { title: Some("Smaller".into()), tasks: vec![task("one", None)] }))
        );
        assert_eq!(read(json!({"title": "no tasks"})), None);
        assert_eq!(read(json!({"tasks": {"prompt": "not a list"}})), None);
    }

    #[test]
    fn a_tool_input_is_taken_whole_and_other_events_rewrite_nothing() {
        assert_eq!(Rewrite::read(EventKind::PreToolUse, &json!({"path": "a"})), Some(Rewrite::ToolInput(json!({"path": "a"}))));
        assert_eq!(Rewrite::read(EventKind::PreToolUse, &Value::Null), None);
        for kind in EventKind::ALL {
            if kind.rewrites().is_none() {
                assert_eq!(Rewrite::read(kind, &json!({"tasks": [{"prompt": "x"}], "result": {"output": "y"}})), None, "{kind}");
            }
        }
    }
}
