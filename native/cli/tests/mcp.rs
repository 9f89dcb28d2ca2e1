//! `chokepoint mcp` as an agent's MCP client drives it: newline-delimited JSON-RPC 2.0 over the
//! built binary's stdin and stdout, on a workspace of its own.

use chokepoint_core::scope::gatekeeper::{SCOPE_EXPANSION_TOOL, SELECT_INTENT_TOOL};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

/// Long enough for a debug build on a busy machine; a hung server fails the test instead of the run.
const PATIENCE: Duration = Duration::from_secs(20);

fn workspace() -> tempfile::TempDir {
    let repo = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join(".orchestration")).unwrap();
    std::fs::copy(format!("{repo}/.orchestration/active_intents.yaml"), intents_yaml(dir.path())).unwrap();
    dir
}

fn intents_yaml(ws: &Path) -> PathBuf {
    ws.join(".orchestration").join("active_intents.yaml")
}

/// Runs another `chokepoint` command on the workspace (the hook's side of the handshake).
fn chokepoint(ws: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_chokepoint")).args(args).current_dir(ws).output().unwrap();
    assert!(out.status.success(), "chokepoint {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// `chokepoint mcp` on a workspace, and the client's end of its stdio.
struct Mcp {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
}

impl Mcp {
    fn spawn(ws: &Path) -> Mcp {
        let mut child = Command::new(env!("CARGO_BIN_EXE_chokepoint"))
            .args(["mcp", "--workspace", ws.to_str().unwrap()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Mcp { stdin: child.stdin.take(), child, lines, next_id: 1 }
    }

    /// Spawned and through the MCP handshake; answers the `initialize` result.
    fn start(ws: &Path) -> (Mcp, Value) {
        let mut mcp = Mcp::spawn(ws);
        let init = mcp.request(
            "initialize",
            json!({ "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "test", "version": "0" } }),
        );
        mcp.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        (mcp, init)
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a request and answers its whole response (`result` or `error`), skipping notifications.
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).unwrap_or_else(|e| panic!("no answer to `{method}`: {e}"));
            let message: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
            assert_eq!(message["jsonrpc"], "2.0", "{message}");
            if message["id"] == id {
                return message;
            }
        }
    }

    /// Calls a tool and answers its `CallToolResult`.
    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let response = self.request("tools/call", json!({ "name": tool, "arguments": arguments }));
        assert!(response["error"].is_null(), "`{tool}` failed as a request: {response}");
        response["result"].clone()
    }

    /// Closes stdin and waits for the server to end.
    fn close(mut self) -> (ExitStatus, Duration) {
        drop(self.stdin.take());
        let closed = Instant::now();
        while closed.elapsed() < PATIENCE {
            if let Some(status) = self.child.try_wait().unwrap() {
                return (status, closed.elapsed());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("the server was still running {PATIENCE:?} after its stdin closed");
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text content: {result}"))
}

fn is_error(result: &Value) -> bool {
    result["isError"] == true
}

#[test]
fn initialize_names_the_server_and_states_the_handshake() {
    let ws = workspace();
    let (_mcp, init) = Mcp::start(ws.path());
    let result = &init["result"];
    assert_eq!(result["serverInfo"]["name"], "chokepoint", "{init}");
    assert_eq!(result["serverInfo"]["version"], chokepoint_core::VERSION);
    assert_eq!(result["protocolVersion"], "2025-06-18", "the client's version is kept: {init}");
    assert!(result["capabilities"]["tools"].is_object(), "{init}");
    let instructions = result["instructions"].as_str().unwrap();
    assert!(instructions.contains("Before any write, call select_active_intent"), "{instructions}");
    assert!(instructions.contains("scope_expansion_request"), "{instructions}");
}

#[test]
fn tools_list_offers_the_four_tools_with_the_arguments_the_gatekeeper_reads() {
    let ws = workspace();
    let (mut mcp, _) = Mcp::start(ws.path());
    let listed = mcp.request("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap_or_else(|| panic!("{listed}"));
    let tool = |name: &str| tools.iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("no tool `{name}`: {listed}"));
    assert_eq!(tools.len(), 4, "{listed}");

    let required = |name: &str| tool(name)["inputSchema"]["required"].clone();
    assert_eq!(required("list_intents"), Value::Null);
    assert_eq!(required(SELECT_INTENT_TOOL), json!(["intent_id"]));
    assert_eq!(required("intent_context"), json!(["intent_id"]));
    let mut expansion: Vec<String> = serde_json::from_value(required(SCOPE_EXPANSION_TOOL)).unwrap();
    expansion.sort();
    assert_eq!(expansion, ["intent_id", "justification", "paths"]);

    let properties = &tool(SCOPE_EXPANSION_TOOL)["inputSchema"]["properties"];
    assert_eq!(properties["intent_id"]["type"], "string");
    assert_eq!(properties["paths"]["type"], "array");
    assert_eq!(properties["paths"]["items"]["type"], "string");
    assert_eq!(properties["justification"]["type"], "string");
    assert_eq!(tool("list_intents")["inputSchema"]["type"], "object");

    let description = tool(SELECT_INTENT_TOOL)["description"].as_str().unwrap();
    assert!(description.contains("BEFORE any write"), "{description}");
}

#[test]
fn list_intents_shows_every_intent_and_the_session_holding_it() {
    let ws = workspace();
    chokepoint(ws.path(), &["intent", "select", "--session", "s1", "--agent", "claude", "INT-001"]);
    let (mut mcp, _) = Mcp::start(ws.path());
    let result = mcp.call("list_intents", json!({}));
    assert!(!is_error(&result), "{result}");
    let intents = result["structuredContent"]["intents"].as_array().unwrap();
    let ids: Vec<&str> = intents.iter().map(|i| i["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["INT-001", "INT-002", "INT-003"]);

    let held = &intents[0];
    assert_eq!(held["name"], "Harden the login flow");
    assert_eq!(held["status"], "IN_PROGRESS");
    assert_eq!(held["owned_scope"], json!(["src/auth/**", "tests/auth/**"]));
    assert_eq!(held["holder"]["session"], "s1");
    assert_eq!(held["holder"]["agent"], "claude");
    assert!(held["holder"]["expires_at_ms"].as_u64().unwrap() > chokepoint_core::base::clock::now_ms());
    assert_eq!(intents[1]["holder"], Value::Null);
    assert_eq!(intents[2]["status"], "PLANNED");

    let text = text(&result);
    assert!(
        text.contains(
            "INT-001  Harden the login flow  [IN_PROGRESS]  scope: src/auth/**, tests/auth/**  held by session `s1` of agent `claude`"
        ),
        "{text}"
    );
    assert!(text.contains("INT-002  Invoice totals in integer cents  [IN_PROGRESS]  scope: src/billing/**  free"), "{text}");
}

#[test]
fn select_active_intent_answers_the_context_of_the_intent_the_hook_took() {
    let ws = workspace();
    let (mut mcp, _) = Mcp::start(ws.path());
    // The server was started before the lease was taken: it reads who holds what at each call.
    chokepoint(ws.path(), &["intent", "select", "--session", "s1", "INT-001"]);
    let result = mcp.call(SELECT_INTENT_TOOL, json!({ "intent_id": "INT-001" }));
    assert!(!is_error(&result), "{result}");
    let structured = &result["structuredContent"];
    assert_eq!(structured["held"], true);
    assert_eq!(structured["holder"]["session"], "s1");
    assert!(structured["intent_context"].as_str().unwrap().starts_with("<intent_context>\nid: INT-001\n"));
    let text = text(&result);
    assert!(text.starts_with("Intent `INT-001` is held by session `s1`"), "{text}");
    assert!(text.contains("<intent_context>\nid: INT-001\nname: Harden the login flow\n"), "{text}");
}

#[test]
fn select_active_intent_no_session_holds_says_the_hooks_did_not_see_it_and_takes_nothing() {
    let ws = workspace();
    let (mut mcp, _) = Mcp::start(ws.path());
    let result = mcp.call(SELECT_INTENT_TOOL, json!({ "intent_id": "INT-002" }));
    assert!(is_error(&result), "writes will be denied, so the handshake did not happen: {result}");
    assert_eq!(result["structuredContent"]["held"], false);
    let text = text(&result);
    assert!(text.starts_with("No session holds intent `INT-002`: your agent's hooks did not see this call"), "{text}");
    assert!(text.contains("every write will be denied"), "{text}");
    assert!(text.contains("`chokepoint init --agent <agent>`"), "{text}");
    let ws_path = shown_workspace(ws.path());
    assert!(text.contains(&format!("`chokepoint intent select --workspace {ws_path} --session <session> INT-002`")), "{text}");
    assert!(text.contains("<intent_context>\nid: INT-002\n"), "the context is given anyway: {text}");
    assert_eq!(mcp.close().0.code(), Some(0));

    // The server took no lease and wrote neither the ledger nor the lease table.
    let listed: Value = serde_json::from_str(&chokepoint(ws.path(), &["intent", "list", "--json"])).unwrap();
    assert!(listed.as_array().unwrap().iter().all(|i| i["holder"].is_null()), "{listed}");
    let orchestration = ws.path().join(".orchestration");
    let mut files: Vec<String> =
        std::fs::read_dir(&orchestration).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    files.sort();
    assert_eq!(files, ["active_intents.yaml"]);
}

#[test]
fn intent_context_answers_the_block() {
    let ws = workspace();
    let (mut mcp, _) = Mcp::start(ws.path());
    let result = mcp.call("intent_context", json!({ "intent_id": "INT-003" }));
    assert!(!is_error(&result), "{result}");
    let expected = "<intent_context>\nid: INT-003\nname: Refresh the user documentation\nowned_scope:\n  - docs/**\n  - README.md\n\
                    constraints:\nacceptance_criteria:\n  - Every command in the README runs as written\n</intent_context>";
    assert_eq!(text(&result), expected);
    assert_eq!(result["structuredContent"], json!({ "intent_id": "INT-003", "intent_context": expected }));
}

#[test]
fn an_unknown_intent_is_a_tool_error_listing_the_valid_ids() {
    let ws = workspace();
    let (mut mcp, _) = Mcp::start(ws.path());
    for (tool, arguments) in [
        (SELECT_INTENT_TOOL, json!({ "intent_id": "INT-999" })),
        ("intent_context", json!({ "intent_id": "INT-999" })),
        (SCOPE_EXPANSION_TOOL, json!({ "intent_id": "INT-999", "paths": ["docs/**"], "justification": "x" })),
    ] {
        let result = mcp.call(tool, arguments);
        assert!(is_error(&result), "{tool}: {result}");
        assert_eq!(text(&result), "there is no intent `INT-999`; the valid ids are INT-001, INT-002, INT-003", "{tool}");
        assert_eq!(result["structuredContent"]["valid_ids"], json!(["INT-001", "INT-002", "INT-003"]), "{tool}");
    }
}

#[test]
#[cfg_attr(
    windows,
    ignore = "runs the answered command in POSIX sh as a person would, and a person's decision from a terminal rests on the chain of processes that started it, which Windows lets a process forge (it may name any process of its user as its child's parent): refused there by design (fails closed, serve::deciders)"
)]
fn scope_expansion_request_answers_the_command_that_grants_it() {
    let ws = workspace();
    chokepoint(ws.path(), &["intent", "select", "--session", "s1", "INT-001"]);
    let (mut mcp, _) = Mcp::start(ws.path());
    let result = mcp.call(
        SCOPE_EXPANSION_TOOL,
        json!({ "intent_id": "INT-001", "paths": ["docs/auth/**", "README.md"], "justification": "document the user's lockout" }),
    );
    assert!(!is_error(&result), "{result}");
    let ws_path = shown_workspace(ws.path());
    let command = format!(
        "chokepoint intent approve --workspace {ws_path} --session <the session id your hook reported> --intent INT-001 \
         --path 'docs/auth/**' --path README.md --justification 'document the user'\\''s lockout'"
    );
    assert_eq!(result["structuredContent"]["approve_command"], command.as_str());
    assert_eq!(result["structuredContent"]["granted"], false);
    let text = text(&result);
    assert!(text.starts_with("A scope expansion needs a person's approval"), "{text}");
    assert!(text.contains(&format!("\n  {command}\n")), "{text}");
    assert!(text.contains("write only inside INT-001's owned_scope (src/auth/**, tests/auth/**)"), "{text}");

    // The command runs as written once the session is filled in, and then the write is allowed.
    let write = r#"{"path":"docs/auth/lockout.md","content":"x"}"#;
    let explain = || {
        Command::new(env!("CARGO_BIN_EXE_chokepoint"))
            .args(["explain", "--session", "s1", "--tool", "write_to_file", "--input", write])
            .current_dir(ws.path())
            .output()
            .unwrap()
    };
    assert_eq!(explain().status.code(), Some(1), "denied before the approval");
    let command = command.replacen("chokepoint", env!("CARGO_BIN_EXE_chokepoint"), 1).replace("<the session id your hook reported>", "s1");
    let approved = Command::new("sh").args(["-c", &command]).output().unwrap();
    // (A person's terminal: POSIX sh, as the answer quotes for; Windows refuses a terminal's
    // decision until it reads the process tree, see the ignore.)
    assert!(approved.status.success(), "{command}: {}", String::from_utf8_lossy(&approved.stderr));
    assert_eq!(explain().status.code(), Some(0), "allowed after the approval");
}

#[test]
fn a_broken_active_intents_is_a_tool_error_naming_file_line_and_column_until_fixed() {
    let ws = workspace();
    let (mut mcp, _) = Mcp::start(ws.path());
    let good = std::fs::read_to_string(intents_yaml(ws.path())).unwrap();
    std::fs::write(
        intents_yaml(ws.path()),
        "version: 1\nactive_intents:\n  - id: INT-001\n    name: x\n    status: IN_PROGRESS\n    owend_scope: []\n",
    )
    .unwrap();
    let located = format!("{}:6:5: intent `INT-001`: unknown field `owend_scope`", intents_yaml(ws.path()).display());
    for (tool, arguments) in [
        ("list_intents", json!({})),
        (SELECT_INTENT_TOOL, json!({ "intent_id": "INT-001" })),
        ("intent_context", json!({ "intent_id": "INT-001" })),
        (SCOPE_EXPANSION_TOOL, json!({ "intent_id": "INT-001", "paths": ["docs/**"], "justification": "x" })),
    ] {
        let result = mcp.call(tool, arguments);
        assert!(is_error(&result), "{tool}: {result}");
        assert!(text(&result).starts_with("the workspace configuration does not load"), "{tool}: {}", text(&result));
        assert!(text(&result).contains(&located), "{tool}: {}", text(&result));
        let diagnostic = &result["structuredContent"]["diagnostics"][0];
        assert_eq!((&diagnostic["line"], &diagnostic["column"]), (&json!(6), &json!(5)), "{tool}: {result}");
    }

    // Fixed while the server runs: the next call sees it.
    std::fs::write(intents_yaml(ws.path()), good).unwrap();
    let result = mcp.call("list_intents", json!({}));
    assert!(!is_error(&result), "{result}");
    assert_eq!(result["structuredContent"]["intents"].as_array().unwrap().len(), 3);
}

#[test]
fn arguments_missing_a_required_field_are_a_tool_error_naming_it() {
    let ws = workspace();
    let (mut mcp, _) = Mcp::start(ws.path());
    // rmcp answers a tool error the model reads, not a JSON-RPC error its client hides.
    let result = mcp.call(SCOPE_EXPANSION_TOOL, json!({ "intent_id": "INT-001", "paths": ["docs/**"] }));
    assert!(is_error(&result), "{result}");
    assert!(text(&result).contains("missing field `justification`"), "{result}");
}

#[test]
fn closing_stdin_ends_the_server_with_exit_code_0() {
    let ws = workspace();
    let (mut mcp, _) = Mcp::start(ws.path());
    mcp.call("list_intents", json!({}));
    let (status, took) = mcp.close();
    assert_eq!(status.code(), Some(0));
    assert!(took < Duration::from_secs(2), "took {took:?}");

    // Before the MCP handshake too: a client that goes away is not a failure.
    let (status, took) = Mcp::spawn(ws.path()).close();
    assert_eq!(status.code(), Some(0));
    assert!(took < Duration::from_secs(2), "took {took:?}");
}

#[test]
fn a_missing_workspace_is_a_usage_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_chokepoint")).args(["mcp", "--workspace", "/no/such/workspace"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: cannot open workspace `/no/such/workspace`"));
}

/// The workspace as a command the tools answer names it: canonical, as people read it (no `\\?\`
/// on Windows), one shell word.
fn shown_workspace(ws: &std::path::Path) -> String {
    chokepoint_core::agents::shell::word(&chokepoint_core::base::shown::text(&ws.canonicalize().unwrap()))
}
