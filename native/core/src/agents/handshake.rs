//! The intent handshake's tools, answered: `list_intents`, `select_active_intent`, `intent_context`
//! and `scope_expansion_request`, as other agents get them. One answer for every edge that offers
//! them: `chokepoint mcp` (an MCP server, for Claude Code, Codex, Gemini CLI, Copilot CLI, Cursor)
//! and the extension's language model tools (VS Code's agent), so the model reads the same words
//! whichever way it called.
//!
//! Read-only, and that is the design: a tool never learns the agent's session id. The agent's
//! PreToolUse hook sees the call of these tools with the session id and runs the gatekeeper, which
//! takes the intent's lease; by the time a tool answers, the hook has allowed it. So the tools only
//! read what the workspace says now (the intents, who holds each, an intent's context) and tell the
//! model what a person must do when the hook could not do it. Nothing here selects, takes or renews
//! a lease, grants an expansion or writes the ledger.

use crate::agents::shell::word;
use crate::base::clock;
use crate::engine::engine::Engine;
use crate::model::governance::{SCOPE_EXPANSION_TOOL, SELECT_INTENT_TOOL};
use crate::scope::gatekeeper::intent_context;
use crate::scope::intents::{Intent, IntentSet, IntentStatus};
use crate::scope::leases::Lease;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// What an agent is told about the tools as a whole (an MCP server's instructions).
pub const INSTRUCTIONS: &str = "Chokepoint governs writes in this workspace. Before any write, call \
select_active_intent with the id of the intent your change serves (list_intents shows the intents and \
who holds each): your agent's hooks then give your session that intent, and you receive its \
<intent_context>. Write only inside its owned_scope. To write elsewhere, call scope_expansion_request \
with the intent id, the paths and why; a person approves it. intent_context shows an intent's context \
again.";

const LIST_INTENTS: &str = "list_intents";
const INTENT_CONTEXT: &str = "intent_context";

/// One tool as an agent is offered it: its name, what the model reads about it, its input's schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    pub name: &'static str,
    pub description: &'static str,
    /// A JSON Schema of an object.
    pub input_schema: Value,
}

/// What a tool answers: text for the model, the same as structured content, and whether it failed.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolAnswer {
    pub text: String,
    pub structured: Value,
    pub is_error: bool,
}

impl ToolAnswer {
    fn ok(text: String, structured: Value) -> ToolAnswer {
        ToolAnswer { text, structured, is_error: false }
    }

    fn error(text: String, structured: Value) -> ToolAnswer {
        ToolAnswer { text, structured, is_error: true }
    }
}

// Lenient: a model that sends an argument to a tool that takes none still gets the list.
#[derive(Debug, Deserialize, JsonSchema)]
struct NoArgs {}

#[derive(Debug, Deserialize, JsonSchema)]
struct IntentArgs {
    /// The intent's id, as list_intents shows it (for example INT-001).
    intent_id: String,
}

// The gatekeeper reads these same fields from the tool's input: their names are the contract.
#[derive(Debug, Deserialize, JsonSchema)]
struct ExpansionArgs {
    /// The intent your session holds, whose scope you need widened.
    intent_id: String,
    /// Globs relative to the workspace root that the change needs (for example docs/**).
    paths: Vec<String>,
    /// Why the change needs these paths; a person reads it before approving.
    justification: String,
}

/// The tools, in the order an agent lists them.
pub fn tools() -> Vec<Tool> {
    vec![
        Tool {
            name: LIST_INTENTS,
            description: "List this workspace's intents (.orchestration/active_intents.yaml): id, name, status, \
owned_scope, and which session holds each now. Call it to choose the intent your change serves before \
select_active_intent.",
            input_schema: schema::<NoArgs>(),
        },
        Tool {
            name: SELECT_INTENT_TOOL,
            description: "The handshake: call this BEFORE any write (creating, editing or deleting a file) in this \
workspace, with the id of the intent your change serves. Writes are denied until your session holds an \
intent, and then allowed only inside its owned_scope. Answers the intent's <intent_context> (owned scope, \
constraints, acceptance criteria) and whether a session now holds it. Call it again to switch intents.",
            input_schema: schema::<IntentArgs>(),
        },
        Tool {
            name: INTENT_CONTEXT,
            description: "Show an intent's <intent_context> (owned_scope, constraints, acceptance criteria) without \
selecting it: to read again the rules of the intent you hold, or to compare intents before choosing one.",
            input_schema: schema::<IntentArgs>(),
        },
        Tool {
            name: SCOPE_EXPANSION_TOOL,
            description: "Ask to write paths outside your intent's owned_scope, after a write there was refused. \
Give the intent your session holds, the globs you need (relative to the workspace root) and why. A person \
decides: until they approve, writes there stay denied. Not needed for paths inside the scope.",
            input_schema: schema::<ExpansionArgs>(),
        },
    ]
}

/// The input schema of `T`, as agents take it: a plain object schema, without the `$schema` and
/// `title` keys that schemars adds (some clients refuse a tool whose schema has them).
fn schema<T: JsonSchema>() -> Value {
    let mut value = serde_json::to_value(schemars::schema_for!(T)).unwrap_or_else(|_| json!({ "type": "object" }));
    if let Some(map) = value.as_object_mut() {
        map.remove("$schema");
        map.remove("title");
        map.entry("properties").or_insert_with(|| json!({}));
    }
    value
}

/// Answers the call of `tool` with `input`, from the workspace as `engine` has it loaded now.
/// `connect` is how a person sets the agent's hooks up, for the answer that says they did not run.
/// Never fails: an unknown tool, an input of the wrong shape, a configuration that does not load or a
/// lease table that cannot be read are the tool's error, worded for the model.
pub fn answer(engine: &Engine, tool: &str, input: &Value, connect: &str) -> ToolAnswer {
    let info = engine.info();
    if !info.diagnostics.is_empty() {
        let lines: Vec<String> = info.diagnostics.iter().map(ToString::to_string).collect();
        let located: Vec<Value> = info
            .diagnostics
            .iter()
            .map(|d| json!({ "file": d.file, "line": d.line, "column": d.column, "code": d.code, "message": d.message }))
            .collect();
        return ToolAnswer::error(
            format!(
                "the workspace configuration does not load; ask a person to fix it (`chokepoint config check` shows \
the same):\n{}",
                lines.join("\n")
            ),
            json!({ "diagnostics": located }),
        );
    }
    let holders = match engine.gatekeeper().holders() {
        Ok(holders) => holders,
        Err(e) => return ToolAnswer::error(format!("cannot read who holds the intents: {e}"), json!({})),
    };
    let intents = engine.intents();
    let workspace = crate::base::shown::text(engine.sidecar().workspace_root());
    let input = if input.is_null() { json!({}) } else { input.clone() };
    let result = match tool {
        LIST_INTENTS => args::<NoArgs>(tool, input).map(|_| list_intents(&intents, &holders)),
        SELECT_INTENT_TOOL => args::<IntentArgs>(tool, input).and_then(|a| select(&intents, &holders, &a.intent_id, &workspace, connect)),
        INTENT_CONTEXT => args::<IntentArgs>(tool, input).and_then(|a| {
            let intent = find(&intents, &a.intent_id)?;
            let context = intent_context(intent);
            Ok(ToolAnswer::ok(context.clone(), json!({ "intent_id": intent.id, "intent_context": context })))
        }),
        SCOPE_EXPANSION_TOOL => args::<ExpansionArgs>(tool, input).and_then(|a| expansion(&intents, &a, &workspace)),
        other => {
            let names: Vec<&str> = tools().iter().map(|t| t.name).collect();
            Err(ToolAnswer::error(format!("there is no tool `{other}`; the tools are {}", names.join(", ")), json!({ "tool": other })))
        }
    };
    match result {
        Ok(answer) | Err(answer) => answer,
    }
}

fn args<T: for<'de> Deserialize<'de>>(tool: &str, input: Value) -> Result<T, ToolAnswer> {
    serde_json::from_value(input)
        .map_err(|e| ToolAnswer::error(format!("the input of `{tool}` does not fit its schema: {e}"), json!({ "tool": tool })))
}

const NO_INTENTS: &str = "this workspace declares no intents (.orchestration/active_intents.yaml is missing or lists none)";

fn list_intents(intents: &IntentSet, holders: &[Lease]) -> ToolAnswer {
    if intents.active_intents.is_empty() {
        return ToolAnswer::ok(NO_INTENTS.to_owned(), json!({ "intents": [] }));
    }
    let mut text = String::new();
    let mut rows = Vec::new();
    for intent in &intents.active_intents {
        let holder = holders.iter().find(|l| l.intent == intent.id);
        text.push_str(&format!(
            "{}  {}  [{}]  scope: {}  {}\n",
            intent.id,
            intent.name,
            intent.status.as_str(),
            intent.owned_scope.join(", "),
            holder.map_or("free".to_owned(), |l| format!("held by {}", holder_text(l)))
        ));
        rows.push(intent_json(intent, holder));
    }
    ToolAnswer::ok(text.trim_end().to_owned(), json!({ "intents": rows }))
}

fn select(intents: &IntentSet, holders: &[Lease], id: &str, workspace: &str, connect: &str) -> Result<ToolAnswer, ToolAnswer> {
    let intent = find(intents, id)?;
    let context = intent_context(intent);
    let holder = holders.iter().find(|l| l.intent == intent.id);
    let structured = json!({
        "intent_id": intent.id,
        "held": holder.is_some(),
        "holder": holder.map(holder_json),
        "intent_context": context,
    });
    Ok(match holder {
        Some(l) => ToolAnswer::ok(
            format!(
                "Intent `{id}` is held by {holder}. If that is your session, you may write inside its owned_scope; \
for anything else call {SCOPE_EXPANSION_TOOL} first. If it is not, another agent works on it and your writes \
will be denied: choose another intent from list_intents.\n\n{context}",
                id = intent.id,
                holder = holder_text(l),
            ),
            structured,
        ),
        None => ToolAnswer::error(
            format!(
                "No session holds intent `{id}`{blocked}: your agent's hooks did not see this call, so nothing was \
selected and every write will be denied. Set the hooks up ({connect}), or ask a person to run `chokepoint \
intent select --workspace {ws} --session <session> {id}`.\n\n{context}",
                id = intent.id,
                blocked = match intent.status {
                    IntentStatus::Blocked | IntentStatus::Completed => format!(" (it is {} and takes no work)", intent.status.as_str()),
                    IntentStatus::Planned | IntentStatus::InProgress => String::new(),
                },
                ws = word(workspace),
            ),
            structured,
        ),
    })
}

fn expansion(intents: &IntentSet, args: &ExpansionArgs, workspace: &str) -> Result<ToolAnswer, ToolAnswer> {
    let intent = find(intents, &args.intent_id)?;
    let mut command = format!(
        "chokepoint intent approve --workspace {} --session <the session id your hook reported> --intent {}",
        word(workspace),
        word(&intent.id)
    );
    for path in &args.paths {
        command.push_str(&format!(" --path {}", word(path)));
    }
    if !args.justification.trim().is_empty() {
        command.push_str(&format!(" --justification {}", word(args.justification.trim())));
    }
    Ok(ToolAnswer::ok(
        format!(
            "A scope expansion needs a person's approval, which this tool cannot give. Unless your hook said it was \
granted, ask a person to run:\n\n  {command}\n\nthen retry the write. Until then, write only inside {}'s \
owned_scope ({}).",
            intent.id,
            intent.owned_scope.join(", ")
        ),
        json!({
            "intent_id": intent.id,
            "paths": args.paths,
            "justification": args.justification,
            "granted": false,
            "approve_command": command,
        }),
    ))
}

/// The intent `id`, or the tool's error naming the ids there are.
fn find<'a>(intents: &'a IntentSet, id: &str) -> Result<&'a Intent, ToolAnswer> {
    intents.active_intents.iter().find(|i| i.id == id).ok_or_else(|| {
        let ids: Vec<&str> = intents.active_intents.iter().map(|i| i.id.as_str()).collect();
        let text = if ids.is_empty() {
            format!("there is no intent `{id}`: {NO_INTENTS}")
        } else {
            format!("there is no intent `{id}`; the valid ids are {}", ids.join(", "))
        };
        ToolAnswer::error(text, json!({ "intent_id": id, "valid_ids": ids }))
    })
}

fn intent_json(intent: &Intent, holder: Option<&Lease>) -> Value {
    json!({
        "id": intent.id,
        "name": intent.name,
        "status": intent.status.as_str(),
        "owned_scope": intent.owned_scope,
        "holder": holder.map(holder_json),
    })
}

fn holder_json(lease: &Lease) -> Value {
    json!({
        "session": lease.session,
        "agent": lease.agent,
        "machine": lease.machine,
        "worktree": lease.checkout.as_ref().map(|c| &c.worktree),
        "branch": lease.checkout.as_ref().and_then(|c| c.branch.as_ref()),
        "acquired_at_ms": lease.acquired_at_ms,
        "expires_at_ms": lease.expires_at_ms,
    })
}

fn holder_text(lease: &Lease) -> String {
    let left = lease.expires_at_ms.saturating_sub(clock::now_ms()) / 1000;
    format!(
        "session `{}`{}{}{} (its lease runs {left} s more, renewed while it writes)",
        lease.session,
        lease.agent.as_ref().map(|a| format!(" of agent `{a}`")).unwrap_or_default(),
        lease.machine.as_ref().map(|m| format!(" on machine `{m}`")).unwrap_or_default(),
        lease.checkout.as_ref().map(|c| format!(" in {c}")).unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_an_object_schema_without_schemars_keys() {
        let tools = tools();
        assert_eq!(
            tools.iter().map(|t| t.name).collect::<Vec<_>>(),
            ["list_intents", "select_active_intent", "intent_context", "scope_expansion_request"]
        );
        for tool in &tools {
            assert_eq!(tool.input_schema["type"], "object", "{}", tool.name);
            assert!(tool.input_schema.get("$schema").is_none() && tool.input_schema.get("title").is_none(), "{}", tool.name);
        }
        assert_eq!(tools[1].input_schema["required"], json!(["intent_id"]));
        assert_eq!(tools[3].input_schema["required"], json!(["intent_id", "paths", "justification"]));
    }
}
