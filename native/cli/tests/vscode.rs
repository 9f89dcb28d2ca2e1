//! VS Code's own agent, governed through `.github/hooks/chokepoint.json`, the file it shares with
//! Copilot CLI: `chokepoint init --agent vscode` and `--agent copilot` write one set of entries
//! whichever ran last, and each entry's command, run as written in the file (`sh -c`, the input on
//! stdin, as both agents run it), answers VS Code's input as VS Code's agent (Claude Code's format,
//! session `vscode:<id>`, its own tools) and Copilot CLI's input as Copilot CLI.

use chokepoint_core::agents::reply::Reply;
use chokepoint_core::model::external_events::Agent;
use serde_json::{Value, json};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn program() -> &'static str {
    env!("CARGO_BIN_EXE_chokepoint")
}

fn init(ws: &Path, agent: &str) -> String {
    let out = Command::new(program()).args(["init", "--agent", agent, "--workspace", ws.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "init --agent {agent}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Every file under `ws`, with its bytes.
fn snapshot(ws: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut dirs = vec![ws.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                out.push((path.strip_prefix(ws).unwrap().to_string_lossy().into_owned(), fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

const HOOKS: &str = ".github/hooks/chokepoint.json";

fn hooks_file(ws: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(ws.join(HOOKS)).unwrap()).unwrap()
}

/// Every entry of ours in the file, as (key, command).
fn our_entries(ws: &Path) -> Vec<(String, String)> {
    let doc = hooks_file(ws);
    let mut out = Vec::new();
    for (key, entries) in doc["hooks"].as_object().unwrap() {
        for entry in entries.as_array().unwrap() {
            let command = entry["bash"].as_str().or(entry["command"].as_str()).unwrap_or_default();
            if command.contains(" hook --agent ") {
                out.push((key.clone(), command.to_owned()));
            }
        }
    }
    out
}

#[test]
fn vs_code_and_copilot_cli_share_one_set_of_entries_whichever_ran_last() {
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    let out = init(ws, "vscode");
    assert!(out.contains("created .github/hooks/chokepoint.json"), "{out}");
    assert!(!ws.join(".mcp.json").exists(), "VS Code's agent gets its intent tools from the extension: {out}");
    let ignore = fs::read_to_string(ws.join(".orchestration/.gitignore")).unwrap();
    for line in ["state.db", "state.db-*", "trace.db", "trace.db-*", "agent_trace.lock", "snapshots/"] {
        assert!(ignore.lines().any(|l| l == line), "{line} in {ignore}");
    }
    let doc = hooks_file(ws);
    assert_eq!(doc["version"], 1, "Copilot CLI's format, which VS Code reads too");
    assert_eq!(
        doc["hooks"]["preToolUse"],
        json!([{
            "type": "command",
            "bash": chokepoint_core::agents::portable::guarded("hook --agent copilot --event preToolUse --deadline 600"),
            "powershell": chokepoint_core::agents::portable::guarded_powershell("hook --agent copilot --event preToolUse --deadline 600"),
            "timeoutSec": 610
        }])
    );
    assert_eq!(doc["hooks"]["agentStop"][0]["timeoutSec"], 600, "VS Code's Stop is a completion gate");
    let first = our_entries(ws);
    let hooks_text = fs::read(ws.join(HOOKS)).unwrap();

    // Copilot CLI's set-up after it: the same entries, byte for byte; only its MCP server is added.
    let out = init(ws, "copilot");
    assert!(out.contains("unchanged .github/hooks/chokepoint.json") && out.contains("created .mcp.json"), "{out}");
    assert_eq!(fs::read(ws.join(HOOKS)).unwrap(), hooks_text);
    let after_copilot = snapshot(ws);

    // And VS Code's again: nothing to do.
    let out = init(ws, "vscode");
    assert!(out.contains("nothing changed"), "{out}");
    assert_eq!(snapshot(ws), after_copilot, "byte for byte");
    assert_eq!(our_entries(ws), first, "one set of entries");

    // Entries written by hand for `--agent vscode`, beside the user's own: replaced in place by
    // either set-up, the user's kept.
    let by_hand = String::from_utf8(hooks_text.clone())
        .unwrap()
        .replace("--agent copilot", "--agent vscode")
        .replace("\"preToolUse\": [\n", "\"preToolUse\": [\n      {\"type\": \"command\", \"bash\": \"./audit.sh\", \"timeoutSec\": 3},\n");
    assert!(by_hand.contains("./audit.sh"), "{by_hand}");
    for agent in ["copilot", "vscode"] {
        fs::write(ws.join(HOOKS), &by_hand).unwrap();
        init(ws, agent);
        let doc = hooks_file(ws);
        assert_eq!(doc["hooks"]["preToolUse"].as_array().unwrap().len(), 2, "{agent}: {doc:#}");
        assert_eq!(doc["hooks"]["preToolUse"][0]["bash"], "./audit.sh", "{agent}");
        assert_eq!(our_entries(ws), first, "{agent}: ours in their place, once");
    }
}

const INTENTS: &str = "version: 1
active_intents:
  - id: INT-SRC
    name: Sources
    status: IN_PROGRESS
    owned_scope: ['src/**']
";

/// `PATH` with the folder of the `chokepoint` under test first, where the entries (which name no
/// path) find it, as on a machine that installed it.
fn path_with_chokepoint() -> std::ffi::OsString {
    let dir = Path::new(program()).parent().unwrap().to_path_buf();
    std::env::join_paths(std::iter::once(dir).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()))).unwrap()
}

/// A workspace with intents, set up for VS Code's agent.
fn governed() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let ws = fs::canonicalize(dir.path()).unwrap();
    fs::create_dir_all(ws.join(".orchestration")).unwrap();
    fs::create_dir_all(ws.join("src")).unwrap();
    fs::create_dir_all(ws.join("docs")).unwrap();
    fs::write(ws.join(".orchestration/active_intents.yaml"), INTENTS).unwrap();
    fs::write(ws.join(".orchestration/hooks.yaml"), "version: 1\n").unwrap();
    init(&ws, "vscode");
    (dir, ws)
}

/// Runs the command the file holds for `key` as VS Code's agent and Copilot CLI run it: `sh -c`
/// (they take `bash` as their Linux command), in the workspace, `input` on stdin.
fn run_entry(ws: &Path, key: &str, input: &Value) -> Reply {
    run_entry_with(ws, key, input, &[])
}

fn run_entry_with(ws: &Path, key: &str, input: &Value, env: &[(&str, &Path)]) -> Reply {
    let command = hooks_file(ws)["hooks"][key][0]["bash"].as_str().unwrap_or_else(|| panic!("no entry for {key}")).to_owned();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(&command)
        .current_dir(ws)
        .env("PATH", path_with_chokepoint())
        .envs(env.iter().copied())
        .env_remove("CHOKEPOINT_HOOK_DEPTH")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    Reply {
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
        exit: out.status.code().expect("the hook exits, not killed by a signal") as u8,
    }
}

/// VS Code's input for one event (Copilot Chat 0.67's fields: snake_case, absolute paths).
fn vscode(ws: &Path, event: &str, tool: Option<(&str, Value)>) -> Value {
    let mut input = json!({
        "timestamp": "2026-11-26T10:00:00.000Z",
        "hook_event_name": event,
        "session_id": "v-1",
        "transcript_path": "/tmp/transcript.json",
        "cwd": ws,
    });
    if let Some((name, tool_input)) = tool {
        input["tool_name"] = name.into();
        input["tool_input"] = tool_input;
        input["tool_use_id"] = "call_1".into();
    }
    input
}

fn create_file(ws: &Path, path: &Path) -> Value {
    vscode(ws, "PreToolUse", Some(("create_file", json!({ "filePath": path, "content": "x\n" }))))
}

fn answer(reply: &Reply) -> Value {
    assert_eq!(reply.exit, 0, "{reply:?}");
    serde_json::from_str(&reply.stdout).unwrap_or_else(|e| panic!("{e}: {reply:?}"))
}

fn select(ws: &Path, session: &str) {
    let out = Command::new(program())
        .args(["intent", "select", "--workspace", ws.to_str().unwrap(), "--session", session, "--agent", "vscode", "INT-SRC"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
#[cfg_attr(
    windows,
    ignore = "runs the hook entries chokepoint init writes, a guard of POSIX sh, which Windows has not (a PowerShell guard is not written yet: agents/portable.rs)"
)]
fn vs_codes_calls_through_the_shared_entries_are_answered_as_vs_codes() {
    let (_dir, ws) = governed();

    // Before the handshake: denied in VS Code's format, with the next step for this session.
    let reply = run_entry(&ws, "preToolUse", &create_file(&ws, &ws.join("src/a.ts")));
    assert!(reply.blocks(Agent::VsCode), "{reply:?}");
    let denied = answer(&reply);
    assert_eq!(denied["hookSpecificOutput"]["hookEventName"], "PreToolUse", "VS Code's own event name: {denied}");
    assert_eq!(denied["hookSpecificOutput"]["permissionDecision"], "deny");
    let reason = denied["hookSpecificOutput"]["permissionDecisionReason"].as_str().unwrap();
    assert!(reason.contains("no intent is selected"), "{reason}");
    assert!(reason.contains("`select_active_intent` that the Chokepoint extension contributes"), "{reason}");
    assert!(reason.contains("intent select") && reason.contains("--session 'vscode:v-1'"), "{reason}");
    assert!(denied.get("permissionDecision").is_none(), "not Copilot CLI's format: {denied}");

    // The same entry, given Copilot CLI's input, answers Copilot CLI.
    let copilot = json!({ "sessionId": "c-1", "timestamp": 1_795_587_897_007u64, "cwd": ws, "toolName": "create",
        "toolArgs": { "path": "src/a.ts", "file_text": "x" } });
    let reply = run_entry(&ws, "preToolUse", &copilot);
    assert!(reply.blocks(Agent::Copilot), "{reply:?}");
    let denied = answer(&reply);
    assert_eq!(denied["permissionDecision"], "deny", "{denied}");
    assert!(denied["permissionDecisionReason"].as_str().unwrap().contains("--session 'copilot:c-1'"), "{denied}");
    assert!(denied.get("hookSpecificOutput").is_none(), "{denied}");

    // After the handshake: a write in scope passes silently; one out of scope, or out of the
    // workspace, is denied.
    select(&ws, "vscode:v-1");
    let reply = run_entry(&ws, "preToolUse", &create_file(&ws, &ws.join("src/a.ts")));
    assert_eq!(reply, Reply::default(), "allowed");
    for outside in [ws.join("docs/b.md"), ws.parent().unwrap().join("elsewhere.txt")] {
        let reply = run_entry(&ws, "preToolUse", &create_file(&ws, &outside));
        assert!(reply.blocks(Agent::VsCode), "{}: {reply:?}", outside.display());
    }
    let directory = vscode(&ws, "PreToolUse", Some(("create_directory", json!({ "dirPath": ws.join("docs/new") }))));
    assert!(run_entry(&ws, "preToolUse", &directory).blocks(Agent::VsCode), "create_directory's dirPath is judged");
    // Its edits of several files name them inside a list, or inside a patch: each is judged, and one
    // out of scope refuses the call whole.
    let replacements = |second: &str| {
        let edit = |path: PathBuf| json!({ "filePath": path, "oldString": "x", "newString": "y" });
        vscode(
            &ws,
            "PreToolUse",
            Some((
                "multi_replace_string_in_file",
                json!({ "explanation": "rename", "replacements": [edit(ws.join("src/a.ts")), edit(ws.join(second))] }),
            )),
        )
    };
    assert_eq!(run_entry(&ws, "preToolUse", &replacements("src/b.ts")), Reply::default(), "both in scope");
    let reply = run_entry(&ws, "preToolUse", &replacements("docs/b.md"));
    assert!(reply.blocks(Agent::VsCode) && reply.stdout.contains("docs/b.md"), "{reply:?}");
    let patch = |path: &str| {
        let text = format!("*** Begin Patch\n*** Update File: {}\n@@\n-x\n+y\n*** End Patch\n", ws.join(path).display());
        vscode(&ws, "PreToolUse", Some(("apply_patch", json!({ "input": text, "explanation": "edit" }))))
    };
    assert_eq!(run_entry(&ws, "preToolUse", &patch("src/a.ts")), Reply::default(), "a patch in scope");
    let reply = run_entry(&ws, "preToolUse", &patch("docs/b.md"));
    assert!(reply.blocks(Agent::VsCode) && reply.stdout.contains("docs/b.md"), "{reply:?}");
    // Copilot CLI's session holds nothing: still denied.
    assert!(run_entry(&ws, "preToolUse", &copilot).blocks(Agent::Copilot));

    // The tool's result, through the `postToolUse` entry: recorded as VS Code's agent's.
    let mut result = create_file(&ws, &ws.join("src/a.ts"));
    result["hook_event_name"] = "PostToolUse".into();
    result["tool_response"] = json!("The file was created");
    fs::write(ws.join("src/a.ts"), "x\n").unwrap();
    let reply = run_entry(&ws, "postToolUse", &result);
    assert_eq!(reply.exit, 0, "{reply:?}");
    let ledger = chokepoint_core::ledger::chains::all_lines(&chokepoint_core::Sidecar::new(&ws)).join("\n");
    let records: Vec<Value> = ledger.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let post = records.iter().find(|r| r["event"] == "PostToolUse").unwrap_or_else(|| panic!("no PostToolUse in {ledger}"));
    assert_eq!(
        (&post["agent"], &post["session"], &post["tool"]),
        (&json!("vscode"), &json!("vscode:v-1"), &json!("create_file")),
        "{post}"
    );
    assert!(records.iter().any(|r| r["event"] == "PreToolUse" && r["agent"] == "copilot" && r["session"] == "copilot:c-1"));

    // The session's start and stop, through `sessionStart` and `agentStop` (VS Code's Stop).
    let start = answer(&run_entry(&ws, "sessionStart", &vscode(&ws, "SessionStart", None)));
    let context = start["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert!(context.contains("Your session is `vscode:v-1`") && context.contains("holds intent `INT-SRC`"), "{context}");
    let stop = run_entry(&ws, "agentStop", &vscode(&ws, "Stop", None));
    assert_eq!(stop.exit, 0, "{stop:?}");
    assert!(records_now(&ws).iter().any(|r| r["event"] == "BeforeSubmit" && r["session"] == "vscode:v-1"), "Stop judged as VS Code's");
}

fn records_now(ws: &Path) -> Vec<Value> {
    chokepoint_core::ledger::chains::all_lines(&chokepoint_core::Sidecar::new(ws))
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
#[cfg_attr(
    windows,
    ignore = "runs the hook entries chokepoint init writes, a guard of POSIX sh, which Windows has not (a PowerShell guard is not written yet: agents/portable.rs)"
)]
#[cfg_attr(
    qemu,
    ignore = "qemu-user's clone() takes no namespace flags (EINVAL), so no command can be isolated under it; the same Linux code is tested natively in the cargo layer"
)]
fn vs_codes_terminal_command_is_rewritten_to_run_contained() {
    let (_dir, ws) = governed();
    select(&ws, "vscode:v-1");
    let tool_input = json!({ "command": "echo hi > src/x.md && echo no > docs/y.md", "explanation": "write two files",
        "goal": "notes", "mode": "sync" });
    let reply = run_entry(&ws, "preToolUse", &vscode(&ws, "PreToolUse", Some(("run_in_terminal", tool_input.clone()))));
    let v = answer(&reply);
    let specific = &v["hookSpecificOutput"];
    assert_eq!(specific["hookEventName"], "PreToolUse");
    // Without a permission mode of its own, the person keeps VS Code's confirmation of the command.
    assert_eq!(specific["permissionDecision"], "ask", "{v}");
    let updated = &specific["updatedInput"];
    let command = updated["command"].as_str().unwrap().to_owned();
    assert!(command.contains(" exec --workspace ") && command.contains("--session 'vscode:v-1'"), "{command}");
    // VS Code validates the rewritten input against the tool's schema: only `command` changes.
    let mut unchanged = updated.clone();
    unchanged["command"] = tool_input["command"].clone();
    assert_eq!(unchanged, tool_input);

    // The rewritten command, as VS Code's terminal runs it: the write in scope stays, the one out
    // of scope is refused or undone, and said so.
    let out = Command::new("bash").arg("-c").arg(&command).current_dir(&ws).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(!ws.join("docs/y.md").exists(), "{stderr}");
    assert!(stderr.contains("docs/y.md"), "{stderr}");
    assert_eq!(fs::read_to_string(ws.join("src/x.md")).unwrap_or_default(), "hi\n", "{stderr}");

    // What VS Code sends back is not wrapped twice.
    let again = json!({ "command": command, "explanation": "write two files", "goal": "notes", "mode": "sync" });
    assert_eq!(run_entry(&ws, "preToolUse", &vscode(&ws, "PreToolUse", Some(("run_in_terminal", again)))), Reply::default());
}

#[test]
#[cfg_attr(
    windows,
    ignore = "runs the hook entries chokepoint init writes, a guard of POSIX sh, which Windows has not (a PowerShell guard is not written yet: agents/portable.rs)"
)]
fn vs_codes_input_that_cannot_be_read_is_denied_in_its_format() {
    let (_dir, ws) = governed();
    // A gate without its tool input: VS Code reads only `hookSpecificOutput`, so the deny is there.
    let mut broken = create_file(&ws, &ws.join("src/a.ts"));
    broken.as_object_mut().unwrap().remove("tool_input");
    let reply = run_entry(&ws, "preToolUse", &broken);
    assert!(reply.blocks(Agent::VsCode), "{reply:?}");
    assert!(answer(&reply)["hookSpecificOutput"]["permissionDecisionReason"].as_str().unwrap().contains("could not read"));
}

#[test]
#[cfg_attr(
    windows,
    ignore = "runs the hook entries chokepoint init writes, a guard of POSIX sh, which Windows has not (a PowerShell guard is not written yet: agents/portable.rs)"
)]
fn doctor_reports_vs_codes_setup_and_its_switch() {
    let (_dir, ws) = governed();
    let doctor = || {
        let out = Command::new(program())
            .args(["doctor", "--json", "--workspace", ws.to_str().unwrap()])
            .env("PATH", path_with_chokepoint())
            .output()
            .unwrap();
        let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
        (out.status.code(), report)
    };
    let (code, report) = doctor();
    assert_eq!(code, Some(0), "{report:#}");
    let agents: Vec<&str> = report["agents"].as_array().unwrap().iter().map(|a| a["agent"].as_str().unwrap()).collect();
    assert_eq!(agents, ["copilot", "vscode"], "both read .github/hooks: {report:#}");
    // Each agent's probe, in its own format, reached the gate through the shared entry and was denied.
    for agent in ["copilot", "vscode"] {
        let probe = records_now(&ws)
            .into_iter()
            .find(|r| r["event"] == "PreToolUse" && r["session"].as_str().unwrap().starts_with(&format!("{agent}:doctor-")))
            .unwrap_or_else(|| panic!("no probe of {agent}"));
        assert_eq!(probe["decision"]["decision"], "deny", "{probe}");
    }

    // A second file with entries of ours: every call judged twice, which doctor says.
    fs::copy(ws.join(HOOKS), ws.join(".github/hooks/old-copy.json")).unwrap();
    let (_, report) = doctor();
    let vscode = report["agents"].as_array().unwrap().iter().find(|a| a["agent"] == "vscode").unwrap();
    assert!(
        vscode["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["event"] == "PreToolUse" && f["problem"].as_str().unwrap().contains("judged and recorded 2 times")),
        "{vscode:#}"
    );
    fs::remove_file(ws.join(".github/hooks/old-copy.json")).unwrap();

    // `chat.useHooks: false` in the workspace's settings (JSON with comments, as VS Code writes it).
    fs::create_dir_all(ws.join(".vscode")).unwrap();
    fs::write(ws.join(".vscode/settings.json"), "{\n  // no hooks for now\n  \"chat.useHooks\": false,\n}\n").unwrap();
    let (code, report) = doctor();
    assert_eq!(code, Some(1), "{report:#}");
    let vscode = report["agents"].as_array().unwrap().iter().find(|a| a["agent"] == "vscode").unwrap();
    let inert: Vec<&Value> = vscode["findings"].as_array().unwrap().iter().filter(|f| f["severity"] == "inert").collect();
    assert_eq!(inert.len(), 1, "{vscode:#}");
    assert_eq!(inert[0]["file"], ".vscode/settings.json");
    assert!(inert[0]["problem"].as_str().unwrap().contains("chat.useHooks"), "{vscode:#}");
}

/// A live engine answers VS Code's calls through the shared entries as the hook would alone: read
/// as VS Code's agent's by the server (`bounded::read` there too), in VS Code's format.
#[test]
#[cfg_attr(
    windows,
    ignore = "starts `chokepoint serve`, refused from a terminal where no person can be told from an agent's process (serve::deciders); the pipe's served path is in served.rs"
)]
fn a_live_engine_answers_vs_codes_calls_as_vs_codes() {
    use std::io::{BufRead, BufReader};
    let (_dir, ws) = governed();
    let runtime = tempfile::tempdir().unwrap();
    let mut server = Command::new(program())
        .args(["serve", "--workspace", ws.to_str().unwrap()])
        .env("XDG_RUNTIME_DIR", runtime.path())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stderr.take().unwrap()).lines();
    assert!(lines.by_ref().map_while(Result::ok).any(|l| l.contains(" at ")), "chokepoint serve never said where it listens");
    let env = [("XDG_RUNTIME_DIR", runtime.path())];
    select(&ws, "vscode:v-1");
    // The server keeps the configuration it loaded; a hook judging alone would deny every gate now.
    fs::write(ws.join(".orchestration/hooks.yaml"), "version: 1\nhooks: [\n").unwrap();
    let served = run_entry_with(&ws, "preToolUse", &create_file(&ws, &ws.join("src/a.ts")), &env);
    let outside = run_entry_with(&ws, "preToolUse", &create_file(&ws, &ws.join("docs/b.md")), &env);
    let _ = server.kill();
    let _ = server.wait();
    assert!(!served.blocks(Agent::VsCode), "served, with the last good configuration: {served:?}");
    assert!(outside.blocks(Agent::VsCode), "{outside:?}");
    assert_eq!(answer(&outside)["hookSpecificOutput"]["hookEventName"], "PreToolUse", "{outside:?}");
}
