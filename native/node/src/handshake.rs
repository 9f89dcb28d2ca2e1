//! The intent handshake's tools (list, select, context, expansion) as the extension offers them to
//! VS Code's agent: their definitions, and their answers from the workspace as the engine has it.
//! The tools are the core's (`agents::handshake`), the same that `chokepoint mcp` serves.

use crate::Engine;
use chokepoint_core::agents::handshake;
use napi_derive::napi;

/// One of the handshake's tools: its name, what the model reads, its input's JSON Schema.
#[napi(object, js_name = "HandshakeTool")]
pub struct JsHandshakeTool {
    pub name: String,
    pub description: String,
    pub input_schema: serde_json::Value,
}

/// A handshake tool's answer: text for the model, the same as data, and whether it is an error.
#[napi(object, js_name = "HandshakeAnswer")]
pub struct JsHandshakeAnswer {
    pub text: String,
    pub structured: serde_json::Value,
    pub is_error: bool,
}

/// The handshake's tools, in the order an agent lists them.
#[napi(catch_unwind)]
pub fn handshake_tools() -> Vec<JsHandshakeTool> {
    handshake::tools()
        .into_iter()
        .map(|t| JsHandshakeTool { name: t.name.to_owned(), description: t.description.to_owned(), input_schema: t.input_schema })
        .collect()
}

#[napi]
impl Engine {
    /// Answers a call of the handshake tool `name`. Read-only: the agent's PreToolUse hook took the
    /// intent's lease before this runs. `connect` says how a person sets the agent's hooks up, for
    /// the answer that says they did not see the call. Never throws for the tool's own failures (an
    /// unknown tool or intent, a bad input, a configuration that does not load): they are answers.
    #[napi(catch_unwind)]
    pub fn handshake_tool(&self, name: String, input: serde_json::Value, connect: String) -> JsHandshakeAnswer {
        let answer = handshake::answer(&self.inner, &name, &input, &connect);
        JsHandshakeAnswer { text: answer.text, structured: answer.structured, is_error: answer.is_error }
    }
}
