//! `chokepoint doctor` on temporary workspaces: one set up by `chokepoint init` passes for each
//! agent (its gate hook, sent a write outside the workspace, denies it; no lease is left), and each
//! inert guard of a broken one is found, naming the file and the fix, with exit code 1.

use serde_json::{Value, json};
use std::fs;
use std::path::Path;
use std::process::{Command, Output};

const AGENTS: [&str; 6] = ["claude", "codex", "gemini", "copilot", "cursor", "vscode"];

fn program() -> &'static str {
    env!("CARGO_BIN_EXE_chokepoint")
}

/// A workspace with intents, set up for `agent` by `chokepoint init`.
fn workspace(agent: &str) -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    fs::create_dir_all(ws.path().join(".orchestration")).unwrap();
    fs::write(
        ws.path().join(".orchestration/active_intents.yaml"),
        "version: 1\nactive_intents:\n  - id: INT-SRC\n    name: Sources\n    status: IN_PROGRESS\n    owned_scope: ['src/**']\n",
    )
    .unwrap();
    let out = Command::new(program()).args(["init", "--agent", agent, "--workspace", ws.path().to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    ws
}

/// `PATH` with the folder of the `chokepoint` under test first, as a user who installed it has
/// (the hooks `init` writes find it there).
fn path_with_chokepoint() -> std::ffi::OsString {
    let dir = Path::new(program()).parent().unwrap().to_path_buf();
    std::env::join_paths(std::iter::once(dir).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()))).unwrap()
}

/// Runs doctor with a Codex home of its own, which trusts the workspace unless told otherwise, on a
/// machine where `chokepoint` is on PATH.
fn doctor(ws: &Path, codex_trusts: bool, json: bool) -> Output {
    doctor_with(ws, codex_trusts, json, &path_with_chokepoint())
}

fn doctor_with(ws: &Path, codex_trusts: bool, json: bool, path: &std::ffi::OsStr) -> Output {
    let home = ws.join(".test-codex-home");
    fs::create_dir_all(&home).unwrap();
    let real = fs::canonicalize(ws).unwrap();
    let trust = if codex_trusts { format!("[projects.{:?}]\ntrust_level = \"trusted\"\n", real.to_str().unwrap()) } else { String::new() };
    fs::write(home.join("config.toml"), format!("model = \"gpt-5.5\"\n{trust}")).unwrap();
    let mut command = Command::new(program());
    // A state home of its own: no pointer to a chokepoint but the one a test writes.
    command
        .args(["doctor", "--workspace", ws.to_str().unwrap()])
        .env("CODEX_HOME", &home)
        .env("PATH", path)
        .env("XDG_STATE_HOME", ws.join(".test-state"))
        .env_remove("CHOKEPOINT_PROGRAM");
    if json {
        command.arg("--json");
    }
    command.output().unwrap()
}

fn report(ws: &Path, codex_trusts: bool) -> (Option<i32>, Value) {
    let out = doctor(ws, codex_trusts, true);
    let stdout = String::from_utf8(out.stdout).unwrap();
    (out.status.code(), serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}")))
}

fn inert(report: &Value) -> Vec<&Value> {
    report["agents"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|a| a["findings"].as_array().unwrap())
        .filter(|f| f["severity"] == "inert")
        .collect()
}

#[test]
#[cfg_attr(
    windows,
    ignore = "runs the hook entries chokepoint init writes, a guard of POSIX sh, which Windows has not (a PowerShell guard is not written yet: agents/portable.rs)"
)]
fn a_workspace_set_up_by_init_passes_for_each_agent() {
    for agent in AGENTS {
        let ws = workspace(agent);
        let (code, report) = report(ws.path(), true);
        assert_eq!(inert(&report), Vec::<&Value>::new(), "{agent}: {report:#}");
        assert_eq!(code, Some(0), "{agent}");
        // Only the agent set up is examined, and both readers of .github/hooks for either of them.
        let examined: Vec<&str> = report["agents"].as_array().unwrap().iter().map(|a| a["agent"].as_str().unwrap()).collect();
        let readers = if matches!(agent, "copilot" | "vscode") { vec!["copilot", "vscode"] } else { vec![agent] };
        assert_eq!(examined, readers, "{agent}");

        // The probe reached the gate, was denied, and holds nothing.
        let trace = chokepoint_core::ledger::chains::all_lines(&chokepoint_core::Sidecar::new(ws.path())).join("\n");
        let probe: Value = trace
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .find(|r: &Value| r["event"] == "PreToolUse" && r["session"].as_str().unwrap().starts_with(&format!("{agent}:doctor-")))
            .unwrap_or_else(|| panic!("{agent}: no probe in {trace}"));
        assert_eq!(probe["decision"]["decision"], "deny", "{probe}");
        let out = Command::new(program()).args(["intent", "list", "--json", "--workspace", ws.path().to_str().unwrap()]).output().unwrap();
        let intents: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            intents,
            json!([{ "id": "INT-SRC", "holder": null, "agent": null, "machine": null, "worktree": null, "worktree_root": null, "branch": null, "since": null, "expires": null }])
        );
    }
}

/// Edits a JSON file of the workspace.
fn edit(ws: &Path, file: &str, change: impl FnOnce(&mut Value)) {
    let path = ws.join(file);
    let mut doc: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    change(&mut doc);
    fs::write(path, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
}

fn pre_tool_use(doc: &mut Value) -> &mut Value {
    &mut doc["hooks"]["PreToolUse"][0]["hooks"][0]
}

/// Breaks a workspace set up for `agent` with `change`, and expects doctor to find an inert guard
/// in `file` whose problem says `says`, with a fix.
fn finds(agent: &str, change: impl FnOnce(&Path), file: &str, says: &str) {
    let ws = workspace(agent);
    change(ws.path());
    let (code, report) = report(ws.path(), true);
    assert_eq!(code, Some(1), "{says}: {report:#}");
    let found = inert(&report)
        .into_iter()
        .find(|f| f["problem"].as_str().unwrap().contains(says))
        .unwrap_or_else(|| panic!("`{says}` in {report:#}"));
    assert_eq!(found["file"], file, "{found:#}");
    assert!(!found["fix"].as_str().unwrap().is_empty(), "{found:#}");
}

/// Settings committed on another machine, by an older `chokepoint init` that wrote absolute paths:
/// its program and workspace, which do not exist here.
fn from_another_machine(ws: &Path) {
    edit(ws, ".claude/settings.json", |d| {
        for (_, groups) in d["hooks"].as_object_mut().unwrap() {
            let handler = &mut groups[0]["hooks"][0];
            let command = handler["command"].as_str().unwrap();
            let rest = &command[command.find("hook --agent").unwrap()..];
            handler["command"] = json!(format!("'/home/someone-else/bin/chokepoint' {rest}"));
        }
    });
    edit(ws, ".mcp.json", |d| {
        d["mcpServers"]["chokepoint"] =
            json!({ "command": "/home/someone-else/bin/chokepoint", "args": ["mcp", "--workspace", "/home/someone-else/ws"] })
    });
}

#[test]
#[cfg_attr(
    windows,
    ignore = "runs the hook entries chokepoint init writes, a guard of POSIX sh, which Windows has not (a PowerShell guard is not written yet: agents/portable.rs)"
)]
fn settings_committed_on_another_machine_are_reported_with_their_paths_and_init_makes_them_portable() {
    let says = ["names the hook's program `/home/someone-else/bin/chokepoint`, which does not exist on this machine"];
    finds("claude", from_another_machine, ".claude/settings.json", says[0]);
    finds(
        "claude",
        from_another_machine,
        ".mcp.json",
        "names the MCP server's program `/home/someone-else/bin/chokepoint`, which does not exist",
    );
    finds("claude", from_another_machine, ".mcp.json", "names the MCP server's workspace `/home/someone-else/ws`, which does not exist");
    // And the gate, tried, does not answer: the shell cannot start it.
    finds("claude", from_another_machine, ".claude/settings.json", "exited with code 127");

    let ws = workspace("claude");
    from_another_machine(ws.path());
    let (_, report) = report(ws.path(), true);
    let found = inert(&report).into_iter().find(|f| f["problem"].as_str().unwrap().contains(says[0])).unwrap();
    assert!(found["fix"].as_str().unwrap().starts_with("run `chokepoint init --agent claude`"), "{found:#}");
    let out = Command::new(program()).args(["init", "--agent", "claude", "--workspace", ws.path().to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for file in [".claude/settings.json", ".mcp.json"] {
        let text = fs::read_to_string(ws.path().join(file)).unwrap();
        assert!(!text.contains("someone-else") && !text.contains(&*ws.path().to_string_lossy()), "{file}: {text}");
    }
    let (code, report) = self::report(ws.path(), true);
    assert_eq!((code, inert(&report)), (Some(0), Vec::<&Value>::new()), "{report:#}");
}

#[test]
#[cfg_attr(
    windows,
    ignore = "runs the hook entries chokepoint init writes, a guard of POSIX sh, which Windows has not (a PowerShell guard is not written yet: agents/portable.rs)"
)]
fn with_no_chokepoint_on_this_machine_the_hooks_block_and_doctor_says_how_to_fix_it() {
    let ws = workspace("claude");
    let out = doctor_with(ws.path(), true, true, std::ffi::OsStr::new("/usr/bin:/bin"));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    // The gate blocks (nothing goes through unjudged): no guard is inert, one thing is to check.
    assert_eq!(inert(&report), Vec::<&Value>::new(), "{report:#}");
    let findings = report["agents"][0]["findings"].as_array().unwrap();
    let found = findings
        .iter()
        .find(|f| f["problem"].as_str().unwrap().contains("the hooks find no chokepoint on this machine"))
        .unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(found["severity"], "warning");
    assert!(found["fix"].as_str().unwrap().contains("--local --program"), "{found:#}");
    // A person's own program in Claude Code's local settings is what the hooks find then.
    let local = Command::new(program())
        .args(["init", "--agent", "claude", "--workspace", ws.path().to_str().unwrap(), "--local", "--program", program()])
        .output()
        .unwrap();
    assert!(local.status.success(), "{}", String::from_utf8_lossy(&local.stderr));
    let out = doctor_with(ws.path(), true, true, std::ffi::OsStr::new("/usr/bin:/bin"));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!report.to_string().contains("find no chokepoint"), "{report:#}");
}

#[test]
fn a_matcher_that_misses_the_write_tools_is_inert() {
    let read_only = |ws: &Path| edit(ws, ".claude/settings.json", |d| d["hooks"]["PreToolUse"][0]["matcher"] = json!("Read"));
    finds(
        "claude",
        read_only,
        ".claude/settings.json",
        "the matcher `Read` of the Chokepoint hook on `PreToolUse` does not select Write, Edit, MultiEdit, NotebookEdit, Bash",
    );
    let bash_only = |ws: &Path| edit(ws, ".gemini/settings.json", |d| d["hooks"]["BeforeTool"][0]["matcher"] = json!("run_shell_command"));
    finds("gemini", bash_only, ".gemini/settings.json", "does not select write_file, replace");
}

#[test]
#[cfg_attr(
    windows,
    ignore = "runs the hook entries chokepoint init writes, a guard of POSIX sh, which Windows has not (a PowerShell guard is not written yet: agents/portable.rs)"
)]
fn a_gate_that_answers_allow_is_inert() {
    let allow = |ws: &Path| edit(ws, ".claude/settings.json", |d| pre_tool_use(d)["command"] = json!("true"));
    finds("claude", allow, ".claude/settings.json", "`true` answered allow");
    finds("claude", allow, ".claude/settings.json", "no Chokepoint hook runs on `PreToolUse`");
    let copilot = |ws: &Path| edit(ws, ".github/hooks/chokepoint.json", |d| d["hooks"]["preToolUse"][0]["bash"] = json!("exit 1"));
    finds("copilot", copilot, ".github/hooks/chokepoint.json", "`exit 1` exited with code 1");
}

#[test]
fn a_timeout_not_above_the_deadline_is_inert() {
    let short = |ws: &Path| edit(ws, ".claude/settings.json", |d| pre_tool_use(d)["timeout"] = json!(20));
    finds("claude", short, ".claude/settings.json", "timeout (20 s) is not above its --deadline (600 s)");
    // Gemini CLI counts milliseconds: 610 written as if seconds is 610 ms.
    let seconds = |ws: &Path| edit(ws, ".gemini/settings.json", |d| d["hooks"]["BeforeTool"][0]["hooks"][0]["timeout"] = json!(610));
    finds("gemini", seconds, ".gemini/settings.json", "timeout (610 ms (0.61 s)) is not above its --deadline (600 s)");
}

/// A set-up of an older version (`--deadline 25` before a tool call): an ask lapses in 24 s, before
/// the five minutes `approvals.timeout_seconds` gives a person; doctor says so and how to fix it.
#[test]
fn an_older_short_deadline_before_a_tool_call_is_a_warning() {
    let ws = workspace("copilot");
    edit(ws.path(), ".github/hooks/chokepoint.json", |d| {
        let handler = &mut d["hooks"]["preToolUse"][0];
        handler["bash"] = json!(handler["bash"].as_str().unwrap().replace("--deadline 600", "--deadline 25"));
        handler["timeoutSec"] = json!(30);
    });
    let (_, report) = report(ws.path(), false);
    let text = report.to_string();
    assert!(text.contains("a person has at most 24 s to answer an ask about Copilot CLI's tool call"), "{report:#}");
    assert!(text.contains("(it writes --deadline 600 and `timeoutSec` 610)"), "{report:#}");
}

#[test]
fn a_missing_mcp_server_is_inert() {
    finds("claude", |ws| fs::remove_file(ws.join(".mcp.json")).unwrap(), ".mcp.json", "no MCP server `chokepoint`");
    let unapproved =
        |ws: &Path| edit(ws, ".claude/settings.json", |d| d.as_object_mut().unwrap().remove("enabledMcpjsonServers").map(drop).unwrap());
    finds("claude", unapproved, ".claude/settings.json", "is not approved");
    let codex = |ws: &Path| fs::write(ws.join(".codex/config.toml"), "# nothing\n").unwrap();
    finds("codex", codex, ".codex/config.toml", "no MCP server `chokepoint`");
}

#[test]
fn an_event_the_agent_does_not_know_and_hooks_switched_off_are_inert() {
    let renamed = |ws: &Path| {
        edit(ws, ".claude/settings.json", |d| {
            let hooks = d["hooks"].as_object_mut().unwrap();
            let entry = hooks.remove("PreToolUse").unwrap();
            hooks.insert("preToolUse".into(), entry);
        })
    };
    finds("claude", renamed, ".claude/settings.json", "`preToolUse` is not an event Claude Code fires");
    let off = |ws: &Path| edit(ws, ".gemini/settings.json", |d| d["hooksConfig"]["enabled"] = json!(false));
    finds("gemini", off, ".gemini/settings.json", "`hooksConfig.enabled: false`");
    let codex_off = |ws: &Path| {
        fs::write(
            ws.join(".codex/config.toml"),
            fs::read_to_string(ws.join(".codex/config.toml")).unwrap() + "\n[features]\nhooks = false\n",
        )
        .unwrap()
    };
    finds("codex", codex_off, ".codex/config.toml", "`[features] hooks = false`");
}

#[test]
#[cfg_attr(
    windows,
    ignore = "runs the hook entries chokepoint init writes, a guard of POSIX sh, which Windows has not (a PowerShell guard is not written yet: agents/portable.rs)"
)]
fn an_untrusted_codex_project_is_inert() {
    let ws = workspace("codex");
    let (code, report) = report(ws.path(), false);
    assert_eq!(code, Some(1));
    let found = inert(&report);
    assert_eq!(found.len(), 1, "{report:#}");
    assert!(found[0]["problem"].as_str().unwrap().contains("is not marked trusted"), "{report:#}");
}

#[test]
#[cfg_attr(
    windows,
    ignore = "runs the hook entries chokepoint init writes, a guard of POSIX sh, which Windows has not (a PowerShell guard is not written yet: agents/portable.rs)"
)]
fn the_text_report_names_the_file_the_problem_and_the_fix() {
    let ws = workspace("claude");
    edit(ws.path(), ".claude/settings.json", |d| pre_tool_use(d)["timeout"] = json!(600));
    let out = doctor(ws.path(), true, false);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("Claude Code (.claude/settings.json): 1 inert; 1 to check"), "{text}");
    assert!(
        text.contains(
            "  inert: .claude/settings.json PreToolUse: the Chokepoint hook's timeout (600 s) is not above its --deadline (600 s)"
        ),
        "{text}"
    );
    assert!(text.contains("    fix: raise `timeout` above the deadline (`chokepoint init` writes 610 for a --deadline of 600)"), "{text}");
}

#[test]
fn a_workspace_without_agents_has_nothing_inert() {
    let ws = tempfile::tempdir().unwrap();
    let out = doctor(ws.path(), true, false);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8(out.stdout).unwrap().contains("no agent is set up"));
}

/// Issue 27, item 6: doctor lists the tools the ledger saw that Chokepoint's tool table does not
/// know, per agent, with how a person declares one that only reads.
#[test]
fn doctor_lists_the_tools_the_ledger_saw_that_the_table_does_not_know() {
    let ws = workspace("claude");
    let root = fs::canonicalize(ws.path()).unwrap();
    for (tool, input) in [
        ("mcp__files__write_file", json!({"path": root.join("docs/x.md")})),
        ("mcp__files__write_file", json!({"path": root.join("docs/y.md")})),
        ("Read", json!({"file_path": root.join("docs/x.md")})),
        ("Write", json!({"file_path": root.join("src/a.ts"), "content": "x"})),
    ] {
        let call = json!({"session_id":"s1","cwd":root,"hook_event_name":"PreToolUse","tool_name":tool,"tool_input":input});
        let mut child = Command::new(program())
            .args(["hook", "--agent", "claude", "--workspace", root.to_str().unwrap()])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), call.to_string().as_bytes()).unwrap();
        child.wait().unwrap();
    }
    let (_, report) = report(ws.path(), true);
    let unknown = report["unknown_tools"].as_array().unwrap_or_else(|| panic!("{report:#}"));
    assert_eq!(unknown.len(), 1, "{report:#}");
    assert_eq!(
        (unknown[0]["agent"].as_str(), unknown[0]["tool"].as_str(), unknown[0]["calls"].as_u64()),
        (Some("claude"), Some("mcp__files__write_file"), Some(2))
    );
    let text = String::from_utf8(doctor(ws.path(), true, false).stdout).unwrap();
    assert!(text.contains("mcp__files__write_file") && text.contains("read: true"), "{text}");
    // And the MCP servers in the agent's files, whose tools nobody listed.
    let mcp = root.join(".mcp.json");
    let mut servers: Value = serde_json::from_str(&fs::read_to_string(&mcp).unwrap()).unwrap();
    servers["mcpServers"]["files"] = json!({"command": "files-mcp"});
    fs::write(&mcp, servers.to_string()).unwrap();
    let (_, again) = self::report(ws.path(), true);
    assert_eq!(again["agents"][0]["other_mcp_servers"], json!(["files"]), "{again:#}");
}

/// Copilot CLI's folder trust is asked of the user's own Copilot files: a VS Code user who never
/// ran Copilot CLI (no `COPILOT_HOME` folder) is told nothing about it; a user of it is warned until
/// the workspace (or a folder above it) is in its `trusted_folders`.
#[test]
fn copilot_clis_folder_trust_is_said_only_to_someone_who_runs_it_and_has_not_trusted_the_folder() {
    let ws = workspace("vscode");
    let warned = |copilot_home: &Path| {
        let out = Command::new(program())
            .args(["doctor", "--json", "--workspace", ws.path().to_str().unwrap()])
            .env("COPILOT_HOME", copilot_home)
            .env("PATH", path_with_chokepoint())
            .env("XDG_STATE_HOME", ws.path().join(".test-state"))
            .env_remove("CHOKEPOINT_PROGRAM")
            .output()
            .unwrap();
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        report["agents"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|a| a["findings"].as_array().unwrap())
            .any(|f| f["problem"].as_str().unwrap().contains("Copilot CLI loads a project's hooks"))
    };
    let home = tempfile::tempdir().unwrap();
    let never_ran = home.path().join("absent");
    assert!(!warned(&never_ran), "no Copilot CLI here: nothing to say about its trust");
    let copilot = home.path().join("copilot");
    fs::create_dir_all(&copilot).unwrap();
    assert!(warned(&copilot), "Copilot CLI ran, and trusts no folder yet");
    let parent = fs::canonicalize(ws.path()).unwrap().parent().unwrap().to_path_buf();
    fs::write(copilot.join("config.json"), json!({ "trusted_folders": [parent] }).to_string()).unwrap();
    assert!(!warned(&copilot), "a folder above the workspace is trusted");
}

#[test]
fn doctor_says_what_this_platform_lacks_and_what_that_means() {
    let ws = workspace("claude");
    let (_, report) = report(ws.path(), true);
    assert_eq!(report["platform"]["os"], std::env::consts::OS, "{report:#}");
    let lacks: Vec<&str> = report["platform"]["lacks"].as_array().unwrap().iter().map(|l| l["what"].as_str().unwrap()).collect();
    // Linux has all of it but, on some kernels, Landlock; elsewhere isolation at least is missing.
    assert_eq!(lacks.iter().any(|w| w.starts_with("isolation")), !cfg!(target_os = "linux"), "{lacks:?}");
    assert_eq!(lacks.iter().any(|w| w.starts_with("a live engine")), !cfg!(any(unix, windows)), "{lacks:?}");
    // Windows' live engine is a named pipe, without the loopback HTTP endpoint beside it.
    assert_eq!(lacks.iter().any(|w| w.contains("loopback HTTP endpoint")), cfg!(windows), "{lacks:?}");
    let text = String::from_utf8(doctor(ws.path(), true, false).stdout).unwrap();
    assert!(text.lines().any(|l| l.starts_with(&format!("platform: {} ", std::env::consts::OS))), "{text}");
}
