//! `chokepoint mcp`: the intent handshake as an MCP server over stdio, for agents whose tools come
//! from MCP servers (Claude Code, Codex, Gemini CLI list it as server `chokepoint`).
//!
//! Thin: the tools, their schemas and their answers are the core's (`agents::handshake`, which the
//! extension's language model tools answer with too); this is MCP over stdio around them, the
//! configuration reloaded before every call so that a fix made while the agent runs is seen.
//! On the official SDK, `rmcp`; the four tools are `list_intents`, `select_active_intent`,
//! `intent_context`, `scope_expansion_request`. Closing stdin ends it with exit code 0.
//!
//! **Invariant: it only reads.** It never learns the agent's session id, so it never selects an
//! intent, takes or renews a lease, grants an expansion or writes the ledger: the agent's `PreToolUse`
//! hook sees the tool's call (same names, same `intent_id`, `paths`, `justification` input) with the
//! session id and runs the gatekeeper before the tool runs. The tools answer what the workspace says
//! then (`Engine::intents`, `Gatekeeper::holders`, `intent_context`): an intent nobody holds after
//! `select_active_intent` means the hook did not see the call, and the model is told so; a
//! configuration that does not load is every tool's error, with its diagnostics.

use crate::{EXIT_CONFIG, EXIT_DENY};
use chokepoint_core::Engine;
use chokepoint_core::agents::handshake::{self, INSTRUCTIONS};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer, ServerInitializeError};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::Value;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(Debug, clap::Args)]
pub struct McpArgs {
    /// The workspace. Default: the nearest folder that holds `.orchestration/` at or above the
    /// agent's project folder ($CLAUDE_PROJECT_DIR, $GEMINI_PROJECT_DIR, $CURSOR_PROJECT_DIR) or this
    /// process's folder, as the settings `chokepoint init` writes (which name no path) start it.
    #[arg(long)]
    workspace: Option<PathBuf>,
}

pub fn run(args: McpArgs) -> ExitCode {
    let workspace = args.workspace.unwrap_or_else(governed_folder);
    // Absolute, so that the commands this server suggests run from any directory.
    let engine = match std::fs::canonicalize(&workspace).and_then(Engine::open) {
        Ok(engine) => engine,
        Err(e) => {
            eprintln!("error: cannot open workspace `{}`: {e}", workspace.display());
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    // A configuration that does not load is not fatal here: each tool reports it, so a fix made
    // while the agent runs is seen without restarting the server.
    crate::block_on(async move {
        match (Handshake { engine: Arc::new(engine) }).serve(rmcp::transport::stdio()).await {
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

/// Where the agent started this server: the nearest governed folder at or above its project folder
/// (else this process's), that folder itself when none above is governed.
fn governed_folder() -> PathBuf {
    let project = ["CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR", "CURSOR_PROJECT_DIR"]
        .iter()
        .find_map(|var| std::env::var_os(var).filter(|d| !d.is_empty()))
        .map(PathBuf::from);
    let start = project.or_else(|| std::env::current_dir().ok()).unwrap_or_else(|| PathBuf::from("."));
    start.ancestors().find(|dir| chokepoint_core::Sidecar::new(*dir).exists()).map(PathBuf::from).unwrap_or(start)
}

/// How a person sets an agent's hooks up, for the answer that says they did not see the call.
const CONNECT: &str = "`chokepoint init --agent <agent>`";

/// The MCP server: the workspace's engine, reloaded before every call.
struct Handshake {
    engine: Arc<Engine>,
}

impl ServerHandler for Handshake {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("chokepoint", chokepoint_core::VERSION))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(&self, _: Option<PaginatedRequestParams>, _: RequestContext<RoleServer>) -> Result<ListToolsResult, ErrorData> {
        let tools = handshake::tools()
            .into_iter()
            .map(|t| {
                let schema = match t.input_schema {
                    Value::Object(map) => map,
                    _ => serde_json::Map::new(),
                };
                Tool::new(t.name, t.description, schema)
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(&self, request: CallToolRequestParams, _: RequestContext<RoleServer>) -> Result<CallToolResponse, ErrorData> {
        // A configuration that does not load is not fatal here: the tool reports it, so a fix made
        // while the agent runs is seen without restarting the server.
        self.engine.reload();
        let input = request.arguments.map_or(Value::Null, Value::Object);
        let answer = handshake::answer(&self.engine, &request.name, &input, CONNECT);
        let mut result = if answer.is_error {
            CallToolResult::error(vec![ContentBlock::text(answer.text)])
        } else {
            CallToolResult::success(vec![ContentBlock::text(answer.text)])
        };
        result.structured_content = Some(answer.structured);
        Ok(result.into())
    }
}
