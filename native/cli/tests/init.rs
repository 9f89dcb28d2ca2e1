//! `chokepoint init --agent <agent>` on temporary workspaces: the files each agent reads, in its
//! format and timeout unit; merged with what the user had (kept, in order); a second run that
//! changes nothing; an old entry of ours replaced rather than duplicated; `--dry-run`; and a file we
//! cannot read, which stops everything before anything is written. What it writes names no path of
//! this machine (it is meant to be committed); `--local --program` writes a person's own program to
//! Claude Code's local, ignored settings.

use chokepoint_core::agents::portable::{guarded, guarded_powershell};
use serde_json::{Value, json};
use std::fs;
use std::path::Path;
use std::process::{Command, Output};

/// A person's own program, for `--local`: there and executable, as init checks.
const PROGRAM: &str = env!("CARGO_BIN_EXE_chokepoint");

fn init(ws: &Path, agent: &str, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_chokepoint"))
        .args(["init", "--agent", agent, "--workspace", ws.to_str().unwrap()])
        .args(extra)
        .output()
        .unwrap()
}

fn init_ok(ws: &Path, agent: &str) -> String {
    let out = init(ws, agent, &[]);
    assert!(out.status.success(), "init --agent {agent}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn read_json(ws: &Path, path: &str) -> Value {
    let text = fs::read_to_string(ws.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
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
                // `/`-separated on every platform, as the assertions name them.
                out.push((path.strip_prefix(ws).unwrap().to_string_lossy().replace('\\', "/"), fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

fn command(agent: &str, event: Option<&str>, deadline: u64) -> String {
    let event = event.map(|e| format!(" --event {e}")).unwrap_or_default();
    guarded(&format!("hook --agent {agent}{event} --deadline {deadline}"))
}

/// The events each agent runs our hook on, and the completion gates among them (600 s / 590 s).
const CLAUDE: &[&str] = &[
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "SubagentStart",
    "Stop",
    "SubagentStop",
    "PreCompact",
    "SessionEnd",
];
const CODEX: &[&str] =
    &["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PreCompact", "SubagentStart", "SubagentStop", "Stop", "SessionEnd"];
const GEMINI: &[&str] = &[
    "SessionStart",
    "BeforeAgent",
    "BeforeModel",
    "BeforeToolSelection",
    "BeforeTool",
    "AfterTool",
    "AfterAgent",
    "PreCompress",
    "SessionEnd",
];
const COPILOT: &[&str] = &[
    "sessionStart",
    "userPromptSubmitted",
    "preToolUse",
    "postToolUse",
    "postToolUseFailure",
    "agentStop",
    "subagentStart",
    "subagentStop",
    "preCompact",
    "errorOccurred",
    "sessionEnd",
];
const CURSOR: &[&str] = &[
    "sessionStart",
    "beforeSubmitPrompt",
    "preToolUse",
    "beforeReadFile",
    "postToolUse",
    "postToolUseFailure",
    "afterShellExecution",
    "afterMCPExecution",
    "afterFileEdit",
    "subagentStart",
    "subagentStop",
    "preCompact",
    "stop",
    "sessionEnd",
];
const GATES: &[&str] = &["Stop", "SubagentStop", "AfterAgent", "agentStop", "subagentStop", "stop"];

fn deadline(event: &str) -> (u64, u64) {
    if GATES.contains(&event) {
        (600, 590)
    } else if BEFORE_TOOL.contains(&event) {
        // Where an ask waits for a person: ten minutes, above `approvals.timeout_seconds`.
        (610, 600)
    } else {
        (30, 25)
    }
}

/// Each agent's event before a tool call runs.
const BEFORE_TOOL: &[&str] = &["PreToolUse", "BeforeTool", "preToolUse", "beforeReadFile"];

fn keys(v: &Value) -> Vec<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

fn sorted(events: &[&'static str]) -> Vec<&'static str> {
    let mut events = events.to_vec();
    events.sort();
    events
}

/// Claude Code, Codex and Gemini CLI: `hooks.<Event>: [{matcher: "*", hooks: [handler]}]`.
fn assert_nested(hooks: &Value, agent: &str, events: &[&'static str], handler: impl Fn(&str, u64, String) -> Value) {
    assert_eq!(keys(hooks), sorted(events), "{agent}: the events hooked");
    for event in events {
        let (timeout, deadline) = deadline(event);
        assert_eq!(
            hooks[event],
            json!([{ "matcher": "*", "hooks": [handler(event, timeout, command(agent, None, deadline))] }]),
            "{agent} {event}"
        );
    }
}

#[test]
fn each_agent_gets_its_hooks_in_its_format_and_timeout_unit() {
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    let server = json!({ "command": "sh", "args": ["-c", guarded("mcp")] });
    for agent in ["claude", "codex", "gemini", "copilot", "cursor"] {
        let out = init_ok(ws, agent);
        assert!(out.contains("created"), "{agent}: {out}");
    }

    let claude = read_json(ws, ".claude/settings.json");
    assert_nested(&claude["hooks"], "claude", CLAUDE, |_, t, c| json!({ "type": "command", "command": c, "timeout": t }));
    assert_eq!(claude["enabledMcpjsonServers"], json!(["chokepoint"]), "loaded headless without a prompt");
    assert_eq!(read_json(ws, ".mcp.json"), json!({ "mcpServers": { "chokepoint": server } }));

    let codex = read_json(ws, ".codex/hooks.json");
    assert_nested(&codex["hooks"], "codex", CODEX, |_, t, c| json!({ "type": "command", "command": c, "timeout": t }));
    let config: toml_edit::DocumentMut = fs::read_to_string(ws.join(".codex/config.toml")).unwrap().parse().unwrap();
    assert_eq!(config["mcp_servers"]["chokepoint"]["command"].as_str(), Some("sh"));
    let args: Vec<&str> = config["mcp_servers"]["chokepoint"]["args"].as_array().unwrap().iter().filter_map(|v| v.as_str()).collect();
    assert_eq!(args, ["-c", server["args"][1].as_str().unwrap()]);

    // Gemini CLI counts milliseconds.
    let gemini = read_json(ws, ".gemini/settings.json");
    assert_nested(
        &gemini["hooks"],
        "gemini",
        GEMINI,
        |_, t, c| json!({ "type": "command", "name": "chokepoint", "command": c, "timeout": t * 1000 }),
    );
    assert_eq!(gemini["hooks"]["AfterAgent"][0]["hooks"][0]["timeout"], 600_000);
    assert_eq!(gemini["hooksConfig"], json!({ "enabled": true }));
    assert_eq!(gemini["mcpServers"], json!({ "chokepoint": server }));

    // Copilot CLI: flat, `bash` (Linux, macOS) and `powershell` (Windows), each guarded, and
    // `timeoutSec`, the event on the command line.
    let copilot = read_json(ws, ".github/hooks/chokepoint.json");
    assert_eq!(copilot["version"], 1);
    assert_eq!(keys(&copilot["hooks"]), sorted(COPILOT));
    for event in COPILOT {
        let (timeout, deadline) = deadline(event);
        assert_eq!(
            copilot["hooks"][event],
            json!([{
                "type": "command",
                "bash": command("copilot", Some(event), deadline),
                "powershell": guarded_powershell(&format!("hook --agent copilot --event {event} --deadline {deadline}")),
                "timeoutSec": timeout
            }]),
            "copilot {event}"
        );
    }

    assert_eq!(read_json(ws, ".mcp.json"), json!({ "mcpServers": { "chokepoint": server } }), "Claude Code's and Copilot CLI's");

    // Cursor: flat, seconds; the gates fail closed.
    let cursor = read_json(ws, ".cursor/hooks.json");
    assert_eq!(cursor["version"], 1);
    assert_eq!(keys(&cursor["hooks"]), sorted(CURSOR));
    for event in CURSOR {
        let (timeout, deadline) = deadline(event);
        let mut handler = json!({ "command": command("cursor", None, deadline), "timeout": timeout });
        if matches!(*event, "preToolUse" | "beforeReadFile") {
            handler["failClosed"] = json!(true);
        }
        assert_eq!(cursor["hooks"][event], json!([handler]), "cursor {event}");
    }
    assert_eq!(read_json(ws, ".cursor/mcp.json"), json!({ "mcpServers": { "chokepoint": server } }));

    let ignore = fs::read_to_string(ws.join(".orchestration/.gitignore")).unwrap();
    for line in ["state.db", "state.db-*", "trace.db", "trace.db-*", "agent_trace.lock", "snapshots/"] {
        assert!(ignore.lines().any(|l| l == line), "{line} in {ignore}");
    }
}

#[test]
fn the_shared_files_name_no_path_of_this_machine() {
    for agent in ["claude", "codex", "gemini", "copilot", "cursor", "vscode"] {
        let ws = tempfile::tempdir().unwrap();
        let real = fs::canonicalize(ws.path()).unwrap();
        init_ok(ws.path(), agent);
        let me = fs::canonicalize(env!("CARGO_BIN_EXE_chokepoint")).unwrap();
        for (file, bytes) in snapshot(ws.path()) {
            let text = String::from_utf8(bytes).unwrap();
            for path in [me.to_str().unwrap(), me.parent().unwrap().to_str().unwrap(), real.to_str().unwrap(), ws.path().to_str().unwrap()]
            {
                assert!(!text.contains(path), "{agent} {file} names {path}: {text}");
            }
        }
    }
}

#[test]
#[cfg_attr(
    wine,
    ignore = "the program's path is the Linux one cargo compiled in (CARGO_BIN_EXE_chokepoint), which the program under Wine reads as Z:\\work\\…"
)]
fn a_personal_program_goes_only_into_claude_codes_local_settings_which_git_ignores() {
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    init_ok(ws, "claude");
    let shared = snapshot(ws);
    let out = init(ws, "claude", &["--local", "--program", PROGRAM]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("warning"), "{}", String::from_utf8_lossy(&out.stdout));
    let after = snapshot(ws);
    let added: Vec<&str> = after.iter().filter(|f| !shared.contains(f)).map(|(f, _)| f.as_str()).collect();
    assert_eq!(added, [".claude/.gitignore", ".claude/settings.local.json"], "nothing shared changed");
    assert_eq!(read_json(ws, ".claude/settings.local.json"), json!({ "env": { "CHOKEPOINT_PROGRAM": PROGRAM } }));
    assert!(fs::read_to_string(ws.join(".claude/.gitignore")).unwrap().lines().any(|l| l == "settings.local.json"));
    // Git agrees: the local file is ignored, the shared ones are not.
    let git = |args: &[&str]| Command::new("git").args(args).current_dir(ws).output().unwrap();
    assert!(git(&["init", "-q"]).status.success());
    assert!(git(&["check-ignore", "-q", ".claude/settings.local.json"]).status.success());
    assert!(!git(&["check-ignore", "-q", ".claude/settings.json"]).status.success());

    // `--program` alone would put one machine's path in the shared files: refused.
    assert_eq!(init(ws, "claude", &["--program", PROGRAM]).status.code(), Some(2));
    // A program that is not there would make every hook block: refused, nothing written.
    let before = snapshot(ws);
    let out = init(ws, "claude", &["--local", "--program", "/nonexistent/chokepoint"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not an executable file"), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(snapshot(ws), before);
    // An agent without a local settings file says what to do instead.
    let out = init(ws, "codex", &["--local", "--program", PROGRAM]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("set CHOKEPOINT_PROGRAM"), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `--local` alone writes only this machine's file: a person who ran only that is told the agent's
/// shared settings have no hooks, and what to run.
#[test]
fn a_local_setup_without_the_shared_one_says_the_agent_runs_ungoverned() {
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    let out = init(ws, "claude", &["--local", "--program", PROGRAM]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("warning") && said.contains("may run ungoverned") && said.contains("`chokepoint init --agent claude` too"),
        "{said}"
    );
    assert!(!ws.join(".claude/settings.json").exists(), "--local writes nothing shared");
}

#[test]
fn the_users_hooks_servers_and_settings_stay_in_their_order() {
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    let user_hook = json!({ "matcher": "Bash", "hooks": [{ "type": "command", "command": "./lint.sh", "timeout": 5 }] });
    fs::create_dir_all(ws.join(".claude")).unwrap();
    // Four-space indentation, keys not in alphabetical order.
    let hook = serde_json::to_string(&user_hook).unwrap();
    fs::write(
        ws.join(".claude/settings.json"),
        format!("{{\n    \"model\": \"opus\",\n    \"hooks\": {{\"PreToolUse\": [{hook}]}},\n    \"env\": {{\"A\": \"1\"}}\n}}\n"),
    )
    .unwrap();
    fs::write(ws.join(".mcp.json"), r#"{"mcpServers":{"memory":{"command":"npx","args":["memory"]}}}"#).unwrap();
    fs::create_dir_all(ws.join(".codex")).unwrap();
    fs::write(ws.join(".codex/config.toml"), "# my settings\nmodel = \"gpt-5\" # the default\n\n[mcp_servers.memory]\ncommand = \"npx\"\n")
        .unwrap();
    fs::create_dir_all(ws.join(".github/hooks")).unwrap();
    fs::write(
        ws.join(".github/hooks/chokepoint.json"),
        r#"{"version":1,"hooks":{"preToolUse":[{"type":"command","bash":"./audit.sh","timeoutSec":3}]}}"#,
    )
    .unwrap();
    fs::create_dir_all(ws.join(".orchestration")).unwrap();
    fs::write(ws.join(".orchestration/.gitignore"), "notes/\nstate.db\n").unwrap();

    init_ok(ws, "claude");
    init_ok(ws, "codex");
    init_ok(ws, "copilot");

    let text = fs::read_to_string(ws.join(".claude/settings.json")).unwrap();
    assert!(text.contains("\n    \"model\""), "the file's indentation is kept: {text}");
    let claude: Value = serde_json::from_str(&text).unwrap();
    let order: Vec<&str> = text.lines().filter(|l| l.starts_with("    \"")).map(|l| l.trim().split('"').nth(1).unwrap()).collect();
    assert_eq!(order, ["model", "hooks", "env", "enabledMcpjsonServers"]);
    assert_eq!(claude["hooks"]["PreToolUse"][0], user_hook, "the user's hook first, as it was");
    assert_eq!(claude["hooks"]["PreToolUse"].as_array().unwrap().len(), 2);
    assert_eq!(claude["env"], json!({ "A": "1" }));
    let mcp = read_json(ws, ".mcp.json");
    assert_eq!(keys(&mcp["mcpServers"]), ["chokepoint", "memory"]); // serde_json sorts; the file keeps memory first
    assert!(
        fs::read_to_string(ws.join(".mcp.json")).unwrap().find("memory")
            < fs::read_to_string(ws.join(".mcp.json")).unwrap().find("chokepoint")
    );

    let config = fs::read_to_string(ws.join(".codex/config.toml")).unwrap();
    assert!(config.starts_with("# my settings\nmodel = \"gpt-5\" # the default\n\n[mcp_servers.memory]\ncommand = \"npx\"\n"), "{config}");
    assert!(config.contains("[mcp_servers.chokepoint]"), "{config}");

    let copilot = read_json(ws, ".github/hooks/chokepoint.json");
    assert_eq!(copilot["hooks"]["preToolUse"][0], json!({ "type": "command", "bash": "./audit.sh", "timeoutSec": 3 }));
    assert_eq!(copilot["hooks"]["preToolUse"].as_array().unwrap().len(), 2);

    let ignore = fs::read_to_string(ws.join(".orchestration/.gitignore")).unwrap();
    assert!(ignore.starts_with("notes/\nstate.db\n"), "{ignore}");
    assert_eq!(ignore.matches("state.db\n").count(), 1, "{ignore}");
}

#[test]
fn a_second_run_changes_nothing_and_says_so() {
    for agent in ["claude", "codex", "gemini", "copilot", "cursor"] {
        let ws = tempfile::tempdir().unwrap();
        fs::create_dir_all(ws.path().join(".codex")).unwrap();
        fs::write(ws.path().join(".codex/config.toml"), "# keep me\n[features]\nweb = true\n").unwrap();
        init_ok(ws.path(), agent);
        let first = snapshot(ws.path());
        let out = init_ok(ws.path(), agent);
        assert_eq!(snapshot(ws.path()), first, "{agent}: files byte-identical");
        assert!(!out.contains("created") && !out.contains("updated"), "{agent}: {out}");
        assert!(out.contains("nothing changed"), "{agent}: {out}");
    }
}

#[test]
fn an_old_entry_of_ours_is_replaced_not_duplicated() {
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    let old = "/old/place/chokepoint hook --agent claude";
    let user = json!({ "type": "command", "command": "./lint.sh" });
    fs::create_dir_all(ws.join(".claude")).unwrap();
    let settings = json!({ "hooks": {
        "SessionStart": [{ "hooks": [user] }],
        "PreToolUse": [{ "matcher": "Bash", "hooks": [user, { "type": "command", "command": old }] }, { "matcher": "*", "hooks": [{ "type": "command", "command": old, "timeout": 10 }] }],
        // An event we no longer hook: our entry goes, and the key with it.
        "PermissionRequest": [{ "matcher": "*", "hooks": [{ "type": "command", "command": old }] }]
    } });
    fs::write(ws.join(".claude/settings.json"), serde_json::to_string_pretty(&settings).unwrap()).unwrap();
    fs::create_dir_all(ws.join(".cursor")).unwrap();
    fs::write(
        ws.join(".cursor/hooks.json"),
        r#"{"version":1,"hooks":{"preToolUse":[{"command":"chokepoint hook --agent cursor","timeout":5},{"command":"./audit.sh"}],"beforeShellExecution":[{"command":"chokepoint hook --agent cursor"}]}}"#,
    )
    .unwrap();

    let out = init_ok(ws, "claude");
    assert!(out.contains("updated .claude/settings.json"), "{out}");
    init_ok(ws, "cursor");

    let claude = read_json(ws, ".claude/settings.json");
    let hooks = &claude["hooks"];
    assert!(hooks.get("PermissionRequest").is_none(), "{hooks:#}");
    assert_eq!(hooks["SessionStart"][0], json!({ "hooks": [user] }), "the user's group stays first");
    assert_eq!(hooks["SessionStart"].as_array().unwrap().len(), 2);
    let ours = json!({ "matcher": "*", "hooks": [{ "type": "command", "command": command("claude", None, 600), "timeout": 610 }] });
    // The user's group loses our handler and keeps theirs; ours replaces our old group.
    assert_eq!(hooks["PreToolUse"], json!([{ "matcher": "Bash", "hooks": [user] }, ours]));
    let all = serde_json::to_string(&claude).unwrap();
    assert_eq!(all.matches("/old/place").count(), 0);

    let cursor = read_json(ws, ".cursor/hooks.json");
    assert_eq!(cursor["hooks"]["preToolUse"][0]["command"], command("cursor", None, 600), "in the old entry's place");
    assert_eq!(cursor["hooks"]["preToolUse"][1], json!({ "command": "./audit.sh" }));
    assert_eq!(cursor["hooks"]["preToolUse"].as_array().unwrap().len(), 2);
    assert!(cursor["hooks"].get("beforeShellExecution").is_none(), "judged twice otherwise");
}

#[test]
fn a_dry_run_prints_the_diff_and_writes_nothing() {
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    fs::create_dir_all(ws.join(".claude")).unwrap();
    fs::write(ws.join(".claude/settings.json"), "{\n  \"model\": \"opus\"\n}\n").unwrap();
    let before = snapshot(ws);
    let out = init(ws, "claude", &["--dry-run"]);
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(snapshot(ws), before, "nothing written");
    assert!(stdout.contains("--- a/.claude/settings.json\n+++ b/.claude/settings.json\n"), "{stdout}");
    assert!(stdout.contains("\n-  \"model\": \"opus\"\n+  \"model\": \"opus\",\n"), "{stdout}");
    assert!(stdout.contains("--- /dev/null\n+++ b/.mcp.json\n"), "{stdout}");
    assert!(stdout.contains("--- /dev/null\n+++ b/.orchestration/.gitignore\n"), "{stdout}");
    let command = serde_json::to_string(&command("claude", None, 25)).unwrap();
    assert!(stdout.contains(&format!("+            \"command\": {command},")), "{stdout}");
}

#[test]
fn a_file_that_does_not_parse_stops_everything_with_its_location() {
    let ws = tempfile::tempdir().unwrap();
    let ws = ws.path();
    fs::create_dir_all(ws.join(".claude")).unwrap();
    fs::write(ws.join(".claude/settings.json"), "{\n  \"hooks\": {,\n}\n").unwrap();
    let before = snapshot(ws);
    let out = init(ws, "claude", &[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    let file = Path::new(".claude").join("settings.json");
    assert!(stderr.contains(&format!("{}:2:13: ", file.display())), "{stderr}");
    assert!(stderr.contains("nothing was written"), "{stderr}");
    assert_eq!(snapshot(ws), before);

    // A TOML file the plan reads after the hooks file: the hooks file is not written either.
    fs::create_dir_all(ws.join(".codex")).unwrap();
    fs::write(ws.join(".codex/config.toml"), "model = \"gpt-5\"\n[mcp_servers\n").unwrap();
    let before = snapshot(ws);
    let out = init(ws, "codex", &[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    let file = Path::new(".codex").join("config.toml");
    assert!(stderr.contains(&format!("{}:2:", file.display())), "{stderr}");
    assert_eq!(snapshot(ws), before);
    assert!(!ws.join(".codex/hooks.json").exists());
}
