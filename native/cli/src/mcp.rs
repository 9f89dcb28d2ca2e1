//! `chokepoint mcp`: the intent handshake as an MCP server over stdio, for agents whose tools come
//! from MCP servers (Claude Code, Codex, Gemini CLI list it as server `chokepoint`).
//!
//! Thin and read-only. The binding of an agent's session to an intent is not made here: this server
//! never learns the session id. The agent's PreToolUse hook (`chokepoint hook`) sees the call of
//! these tools with the session id and runs the gatekeeper, which takes the intent's lease; by the
//! time a tool here runs, the hook has allowed it. So the tools only read what the workspace says
//! now (the intents, who holds each, an intent's context) and tell the model what a person must do
//! when the hook could not do it. Nothing here selects, takes or renews a lease, grants an
//! expansion or writes the ledger.

use crate::{EXIT_CONFIG, EXIT_DENY};
use chokepoint_core::agents::shell::word;
use chokepoint_core::gatekeeper::{SCOPE_EXPANSION_TOOL, intent_context};
use chokepoint_core::leases::Lease;
use chokepoint_core::{Engine, Intent, IntentSet, IntentStatus};
use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::service::ServerInitializeError;
use rmcp::{ErrorData, ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Debug, clap::Args)]
pub struct McpArgs {
    #[arg(long, default_value = ".")]
    workspace: PathBuf,
}

/// What the client shows the model about this server as a whole.
const INSTRUCTIONS: &str = "Chokepoint governs writes in this workspace. Before any write, call \
select_active_intent with the id of the intent your change serves (list_intents shows the intents and \
who holds each): your agent's hooks then give your session that intent, and you receive its \
<intent_context>. Write only inside its owned_scope. To write elsewhere, call scope_expansion_request \
with the intent id, the paths and why; a person approves it. intent_context shows an intent's context \
again.";

pub fn run(args: McpArgs) -> ExitCode {
    // Absolute, so that the commands this server suggests run from any directory.
    let engine = match std::fs::canonicalize(&args.workspace).and_then(Engine::open) {
        Ok(engine) => engine,
        Err(e) => {
            eprintln!("error: cannot open workspace `{}`: {e}", args.workspace.display());
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    // A configuration that does not load is not fatal here: each tool reports it, so a fix made
    // while the agent runs is seen without restarting the server.
    crate::block_on(async move {
        match Handshake::new(engine).serve(rmcp::transport::stdio()).await {
            Ok(running) => match running.waiting().await {
                Ok(_) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: the mcp server stopped: {e}");
                    ExitCode::from(EXIT_DENY)
                }
            },
            // The client went away before the handshake: as normal an end as after it.
            Err(ServerInitializeError::ConnectionClosed(_)) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: the mcp client did not initialise: {e}");
                ExitCode::from(EXIT_DENY)
            }
        }
    })
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct IntentArgs {
    /// The intent's id, as list_intents shows it (for example INT-001).
    intent_id: String,
}

// The gatekeeper reads these same fields from the tool's input: their names are the contract.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct ExpansionArgs {
    /// The intent your session holds, whose scope you need widened.
    intent_id: String,
    /// Globs relative to the workspace root that the change needs (for example docs/**).
    paths: Vec<String>,
    /// Why the change needs these paths; a person reads it before approving.
    justification: String,
}

/// The MCP server: the workspace's engine, reloaded before every call.
struct Handshake {
    engine: Arc<Engine>,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Handshake {
    fn new(engine: Engine) -> Handshake {
        Handshake { engine: Arc::new(engine), tool_router: Self::tool_router() }
    }

    #[tool(description = "List this workspace's intents (.orchestration/active_intents.yaml): id, name, \
status, owned_scope, and which session holds each now. Call it to choose the intent your change serves \
before select_active_intent.")]
    fn list_intents(&self) -> Result<CallToolResult, ErrorData> {
        Ok(self.reply(|intents, holders, _| {
            if intents.active_intents.is_empty() {
                return Ok(Reply::ok(NO_INTENTS.to_owned(), json!({ "intents": [] })));
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
            Ok(Reply::ok(text.trim_end().to_owned(), json!({ "intents": rows })))
        }))
    }

    #[tool(description = "The handshake: call this BEFORE any write (creating, editing or deleting a file) \
in this workspace, with the id of the intent your change serves. Writes are denied until your session \
holds an intent, and then allowed only inside its owned_scope. Answers the intent's <intent_context> \
(owned scope, constraints, acceptance criteria) and whether a session now holds it. Call it again to \
switch intents.")]
    fn select_active_intent(&self, Parameters(args): Parameters<IntentArgs>) -> Result<CallToolResult, ErrorData> {
        Ok(self.reply(|intents, holders, workspace| {
            let intent = find(intents, &args.intent_id)?;
            let context = intent_context(intent);
            let holder = holders.iter().find(|l| l.intent == intent.id);
            let structured = json!({
                "intent_id": intent.id,
                "held": holder.is_some(),
                "holder": holder.map(holder_json),
                "intent_context": context,
            });
            Ok(match holder {
                Some(l) => Reply::ok(
                    format!(
                        "Intent `{id}` is held by {holder}. If that is your session, you may write inside its \
owned_scope; for anything else call {SCOPE_EXPANSION_TOOL} first. If it is not, another agent works on \
it and your writes will be denied: choose another intent from list_intents.\n\n{context}",
                        id = intent.id,
                        holder = holder_text(l),
                    ),
                    structured,
                ),
                None => Reply::error(
                    format!(
                        "No session holds intent `{id}`{blocked}: your agent's hooks did not see this call, so \
nothing was selected and every write will be denied. Install the hooks (`chokepoint init --agent \
<agent>`), or ask a person to run `chokepoint intent select --workspace {ws} --session <session> {id}`.\n\n{context}",
                        id = intent.id,
                        blocked = match intent.status {
                            IntentStatus::Blocked | IntentStatus::Completed =>
                                format!(" (it is {} and takes no work)", intent.status.as_str()),
                            IntentStatus::Planned | IntentStatus::InProgress => String::new(),
                        },
                        ws = word(&workspace.display().to_string()),
                    ),
                    structured,
                ),
            })
        }))
    }

    #[tool(description = "Show an intent's <intent_context> (owned_scope, constraints, acceptance criteria) \
without selecting it: to read again the rules of the intent you hold, or to compare intents before \
choosing one.")]
    fn intent_context(&self, Parameters(args): Parameters<IntentArgs>) -> Result<CallToolResult, ErrorData> {
        Ok(self.reply(|intents, _, _| {
            let intent = find(intents, &args.intent_id)?;
            let context = intent_context(intent);
            Ok(Reply::ok(context.clone(), json!({ "intent_id": intent.id, "intent_context": context })))
        }))
    }

    #[tool(description = "Ask to write paths outside your intent's owned_scope, after a write there was \
refused. Give the intent your session holds, the globs you need (relative to the workspace root) and \
why. A person decides: until they approve, writes there stay denied. Not needed for paths inside the \
scope.")]
    fn scope_expansion_request(&self, Parameters(args): Parameters<ExpansionArgs>) -> Result<CallToolResult, ErrorData> {
        Ok(self.reply(|intents, _, workspace| {
            let intent = find(intents, &args.intent_id)?;
            let mut command = format!(
                "chokepoint intent approve --workspace {} --session <the session id your hook reported> --intent {}",
                word(&workspace.display().to_string()),
                word(&intent.id)
            );
            for path in &args.paths {
                command.push_str(&format!(" --path {}", word(path)));
            }
            if !args.justification.trim().is_empty() {
                command.push_str(&format!(" --justification {}", word(args.justification.trim())));
            }
            Ok(Reply::ok(
                format!(
                    "A scope expansion needs a person's approval, which this server cannot give. Unless \
your hook said it was granted, ask a person to run:\n\n  {command}\n\nthen retry the write. Until then, \
write only inside {}'s owned_scope ({}).",
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
        }))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Handshake {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("chokepoint", chokepoint_core::VERSION))
            .with_instructions(INSTRUCTIONS)
    }
}

const NO_INTENTS: &str = "this workspace declares no intents (.orchestration/active_intents.yaml is missing or lists none)";

/// What a tool answers: text for the model, the same as structured content, and whether it failed.
struct Reply {
    text: String,
    structured: Value,
    error: bool,
}

impl Reply {
    fn ok(text: String, structured: Value) -> Reply {
        Reply { text, structured, error: false }
    }

    fn error(text: String, structured: Value) -> Reply {
        Reply { text, structured, error: true }
    }
}

impl From<Reply> for CallToolResult {
    fn from(reply: Reply) -> CallToolResult {
        let mut result = if reply.error {
            CallToolResult::error(vec![ContentBlock::text(reply.text)])
        } else {
            CallToolResult::success(vec![ContentBlock::text(reply.text)])
        };
        result.structured_content = Some(reply.structured);
        result
    }
}

impl Handshake {
    /// Reads the workspace as it is now (its configuration reloaded, who holds what) and answers
    /// with `answer`; a configuration that does not load, or a lease table that cannot be read, is
    /// the tool's error.
    fn reply(&self, answer: impl FnOnce(&IntentSet, &[Lease], &Path) -> Result<Reply, Reply>) -> CallToolResult {
        let diagnostics = self.engine.reload();
        if !diagnostics.is_empty() {
            let lines: Vec<String> = diagnostics.iter().map(ToString::to_string).collect();
            let located: Vec<Value> = diagnostics
                .iter()
                .map(|d| json!({ "file": d.file, "line": d.line, "column": d.column, "code": d.code, "message": d.message }))
                .collect();
            return Reply::error(
                format!(
                    "the workspace configuration does not load; ask a person to fix it (`chokepoint config \
check` shows the same):\n{}",
                    lines.join("\n")
                ),
                json!({ "diagnostics": located }),
            )
            .into();
        }
        let holders = match self.engine.gatekeeper().holders() {
            Ok(holders) => holders,
            Err(e) => return Reply::error(format!("cannot read who holds the intents: {e}"), json!({})).into(),
        };
        let workspace = self.engine.sidecar().workspace_root();
        match answer(&self.engine.intents(), &holders, workspace) {
            Ok(reply) | Err(reply) => reply.into(),
        }
    }
}

/// The intent `id`, or the tool's error naming the ids there are.
fn find<'a>(intents: &'a IntentSet, id: &str) -> Result<&'a Intent, Reply> {
    intents.active_intents.iter().find(|i| i.id == id).ok_or_else(|| {
        let ids: Vec<&str> = intents.active_intents.iter().map(|i| i.id.as_str()).collect();
        let text = if ids.is_empty() {
            format!("there is no intent `{id}`: {NO_INTENTS}")
        } else {
            format!("there is no intent `{id}`; the valid ids are {}", ids.join(", "))
        };
        Reply::error(text, json!({ "intent_id": id, "valid_ids": ids }))
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
        "acquired_at_ms": lease.acquired_at_ms,
        "expires_at_ms": lease.expires_at_ms,
    })
}

fn holder_text(lease: &Lease) -> String {
    let left = lease.expires_at_ms.saturating_sub(chokepoint_core::clock::now_ms()) / 1000;
    format!(
        "session `{}`{} (its lease runs {left} s more, renewed while it writes)",
        lease.session,
        lease.agent.as_ref().map(|a| format!(" of agent `{a}`")).unwrap_or_default()
    )
}
