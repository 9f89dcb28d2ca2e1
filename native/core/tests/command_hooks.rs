//! Command hooks and builtins as real processes: the protocol, every failure mode, no orphans, no
//! template injection, piped output. Each test writes a hooks.yaml and runs the engine's async entry.

use chokepoint_core::{Decision, Engine, Evaluation, Event, EventKind};
use serde_json::json;
use std::fs;
use std::path::Path;

fn engine(hooks_yaml: &str) -> (tempfile::TempDir, Engine) {
    let ws = tempfile::tempdir().unwrap();
    fs::create_dir(ws.path().join(".orchestration")).unwrap();
    fs::write(ws.path().join(".orchestration/hooks.yaml"), hooks_yaml).unwrap();
    let engine = Engine::open(ws.path()).unwrap();
    assert!(engine.info().diagnostics.is_empty(), "{:?}", engine.info().diagnostics);
    (ws, engine)
}

/// A hooks.yaml with the given PreToolUse hooks (YAML list items, already indented by 4).
fn pre_tool_use(items: &str) -> String {
    format!("version: 1\nhooks:\n  PreToolUse:\n{items}")
}

fn write_event() -> Event {
    let mut e = Event::tool(EventKind::PreToolUse, "write_to_file", json!({ "path": "src/a.js", "content": "x" }));
    e.ids.session = Some("S-1".into());
    e.paths = vec!["src/a.js".into()];
    e
}

async fn run(yaml: &str) -> (tempfile::TempDir, Evaluation) {
    let (ws, engine) = engine(yaml);
    let e = engine.evaluate_async(write_event(), None).await;
    (ws, e)
}

/// The configured hooks' outcomes. The gatekeeper runs first in every PreToolUse chain (and allows
/// these tools); these tests are about the hooks after it.
fn outcome(e: &Evaluation) -> Vec<String> {
    let gate = e.outcomes.iter().take_while(|o| &*o.hook == "gatekeeper").count();
    assert!(gate <= 1);
    e.outcomes.iter().skip(gate).map(|o| format!("{}:{}", o.hook, o.kind.as_str())).collect()
}

fn denial_reason(e: &Evaluation) -> String {
    match &e.decision {
        Decision::Deny(d) => d.reason.clone(),
        other => panic!("expected a deny, got {other:?}"),
    }
}

#[tokio::test]
#[cfg_attr(windows, ignore = "its hook is a POSIX sh script or a Unix program, which Windows has not; cmd's case is in windows_cmd")]
async fn plain_text_allows_and_is_the_output() {
    let (_ws, e) = run(&pre_tool_use("    - name: hello\n      command: [echo, hello]\n      pipe_output: true\n")).await;
    assert_eq!(e.decision, Decision::Allow);
    assert_eq!(e.piped.iter().map(|p| p.text.as_str()).collect::<Vec<_>>(), ["hello"]);
}

#[tokio::test]
#[cfg_attr(windows, ignore = "its hook is a POSIX sh script or a Unix program, which Windows has not; cmd's case is in windows_cmd")]
async fn claude_code_json_answers_are_understood() {
    let deny = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no writes on fridays"}}"#;
    let (_ws, e) = run(&pre_tool_use(&format!("    - name: friday\n      command: [printf, '%s', '{deny}']\n"))).await;
    assert_eq!(denial_reason(&e), "no writes on fridays");

    let rewrite = r#"{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"path":"src/b.js"},"additionalContext":"moved"}}"#;
    let (_ws, e) = run(&pre_tool_use(&format!("    - name: mover\n      command: [printf, '%s', '{rewrite}']\n"))).await;
    assert_eq!(e.modified, Some(json!({ "path": "src/b.js" })));
    assert_eq!(e.additional_context, ["moved"]);

    let block = r#"{"decision":"block","reason":"blocked"}"#;
    let (_ws, e) = run(&pre_tool_use(&format!("    - name: legacy\n      command: [printf, '%s', '{block}']\n"))).await;
    assert_eq!(denial_reason(&e), "blocked");

    let ours =
        r#"{"decision":"deny","reason":"outside scope","remediation":"ask for more scope","suggested_tool":"scope_expansion_request"}"#;
    let (_ws, e) = run(&pre_tool_use(&format!("    - name: ours\n      command: [printf, '%s', '{ours}']\n"))).await;
    let Decision::Deny(d) = e.decision else { panic!() };
    assert_eq!((d.remediation.as_deref(), d.suggested_tool.as_deref()), (Some("ask for more scope"), Some("scope_expansion_request")));
}

#[tokio::test]
#[cfg_attr(windows, ignore = "its hook is a POSIX sh script or a Unix program, which Windows has not; cmd's case is in windows_cmd")]
async fn stdin_carries_the_event_in_claude_codes_shape() {
    let (ws, e) = run(&pre_tool_use("    - name: dump\n      command: [sh, -c, 'cat > stdin.json']\n")).await;
    assert_eq!(e.decision, Decision::Allow);
    let v: serde_json::Value = serde_json::from_str(&fs::read_to_string(ws.path().join("stdin.json")).unwrap()).unwrap();
    assert_eq!(v["hook_event_name"], "PreToolUse");
    assert_eq!(v["session_id"], "S-1");
    assert_eq!(v["tool_name"], "write_to_file");
    assert_eq!(v["tool_input"]["path"], "src/a.js");
    assert_eq!(v["cwd"], ws.path().to_str().unwrap());
    assert_eq!(v["chokepoint"]["paths"], json!(["src/a.js"]));
}

#[tokio::test]
#[cfg_attr(windows, ignore = "its hook is a POSIX sh script or a Unix program, which Windows has not; cmd's case is in windows_cmd")]
async fn exit_2_denies_with_stderr_as_the_reason_from_any_interpreter() {
    let (_ws, e) = run(&pre_tool_use(
        "    - name: py\n      command: [python3, -c, \"import sys; sys.stderr.write('blocked by policy'); sys.exit(2)\"]\n",
    ))
    .await;
    assert_eq!(denial_reason(&e), "blocked by policy");
}

#[tokio::test]
#[cfg_attr(windows, ignore = "its hook is a POSIX sh script or a Unix program, which Windows has not; cmd's case is in windows_cmd")]
async fn a_hook_past_its_timeout_is_killed_with_its_whole_process_group() {
    let yaml = pre_tool_use(
        "    - name: slow-gate\n      priority: critical\n      timeout: 1\n      command: [sh, -c, 'sleep 60 & echo $! > grandchild.pid; wait']\n",
    );
    let started = std::time::Instant::now();
    let (ws, e) = run(&yaml).await;
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert_eq!(outcome(&e), ["slow-gate:failed_closed"]);
    assert!(denial_reason(&e).contains("timed out after 1000 ms"), "{}", denial_reason(&e));
    let pid = fs::read_to_string(ws.path().join("grandchild.pid")).unwrap().trim().to_owned();
    assert!(!alive(&pid), "the hook's background child {pid} outlived the timeout");
}

/// Alive and not a zombie (a killed orphan may wait to be reaped by a pid 1 that never reaps).
fn alive(pid: &str) -> bool {
    for _ in 0..50 {
        match fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return false,
            Ok(stat) if stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')) => return false,
            Ok(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
        }
    }
    true
}

#[tokio::test]
#[cfg_attr(windows, ignore = "its hooks are POSIX sh scripts or Unix programs, which Windows has not")]
async fn a_crash_fails_closed_for_a_gate_and_open_for_the_rest() {
    let (_ws, e) = run(&pre_tool_use("    - name: crash\n      priority: critical\n      command: [sh, -c, 'kill -9 $$']\n")).await;
    assert_eq!(outcome(&e), ["crash:failed_closed"]);
    assert!(denial_reason(&e).contains("crashed: killed by signal 9"), "{}", denial_reason(&e));
    let (_ws, e) =
        run(&pre_tool_use("    - name: crash\n      command: [sh, -c, 'kill -9 $$']\n    - name: next\n      command: ['true']\n")).await;
    assert_eq!(outcome(&e), ["crash:failed_open", "next:allow"]);
    assert_eq!(e.decision, Decision::Allow);
}

#[tokio::test]
#[cfg_attr(windows, ignore = "its hook is a POSIX sh script or a Unix program, which Windows has not; cmd's case is in windows_cmd")]
async fn garbage_that_looks_like_json_is_a_bad_answer() {
    let (_ws, e) = run(&pre_tool_use("    - name: garbage\n      priority: critical\n      command: [echo, '{not json']\n")).await;
    assert!(denial_reason(&e).contains("stdout looks like JSON but is not"), "{}", denial_reason(&e));
}

#[tokio::test]
#[cfg_attr(windows, ignore = "its hooks are POSIX sh scripts or Unix programs, which Windows has not")]
async fn a_hundred_mebibytes_of_output_is_capped_and_said_so() {
    let (_ws, e) = run(&pre_tool_use(
        "    - name: firehose\n      priority: critical\n      command: [sh, -c, 'head -c 104857600 /dev/zero | tr \"\\\\0\" a']\n",
    ))
    .await;
    let reason = denial_reason(&e);
    assert!(reason.contains("output exceeds 1048576 bytes on stdout; the rest was dropped"), "{reason}");
}

#[tokio::test]
#[cfg_attr(
    qemu,
    ignore = "qemu-user runs glibc's posix_spawn (a vfork) as a fork, so an exec that fails reaches the parent as the child's exit 127, not as an error of the spawn; the same code is tested natively in the cargo layer"
)]
async fn a_missing_binary_is_a_failure_that_names_it() {
    let (_ws, e) = run(&pre_tool_use("    - name: ghost\n      priority: critical\n      command: [/no/such/hook-binary]\n")).await;
    assert!(denial_reason(&e).contains("cannot start `/no/such/hook-binary`"), "{}", denial_reason(&e));
    let (_ws, e) = run(&pre_tool_use("    - name: ghost\n      command: [/no/such/hook-binary]\n")).await;
    assert_eq!(outcome(&e), ["ghost:failed_open"]);
}

/// Runs one `TaskComplete` hook (`command`, through the shell or as argv) on a task whose text is
/// `content`, asserts that it allowed, and gives back its workspace to look for what it wrote.
async fn allowed_with_task_content(name: &str, command: &str, shell: bool, content: &str) -> tempfile::TempDir {
    let yaml = format!("version: 1\nhooks:\n  TaskComplete:\n    - name: {name}\n      shell: {shell}\n      command: {command}\n");
    let (ws, engine) = engine(&yaml);
    let mut event = Event::new(EventKind::TaskComplete);
    event.subject = json!({ "task_content": content });
    let e = engine.evaluate_async(event, None).await;
    assert_eq!(e.decision, Decision::Allow, "{name}: {:?}", e.outcomes);
    ws
}

#[tokio::test]
#[cfg_attr(windows, ignore = "runs POSIX sh, which Windows has not; cmd's case is template_values_are_data_never_code_in_cmd")]
async fn template_values_are_data_never_code() {
    let evil = "x\"; touch pwned; echo \"$(touch pwned2)`touch pwned3`";
    for (name, command, shell) in [
        ("argv", "[sh, -c, 'printf %s \"$1\" > out.txt', sh, '{{task_content}}']", false),
        ("shell", "['printf %s {{task_content}} > out.txt']", true),
    ] {
        let ws = allowed_with_task_content(name, command, shell, evil).await;
        assert_eq!(fs::read_to_string(ws.path().join("out.txt")).unwrap(), evil, "{name}");
        for f in ["pwned", "pwned2", "pwned3"] {
            assert!(!ws.path().join(f).exists(), "{name}: the task text ran as code ({f})");
        }
    }
}

/// Windows' shell hooks run in cmd with delayed expansion: a value with cmd's operators, quotes and
/// both kinds of variable reference is written as it is, and runs nothing.
#[cfg(windows)]
#[tokio::test]
async fn template_values_are_data_never_code_in_cmd() {
    let evil = "x\" & echo pwned> pwned & echo \"%PATH% !PATH! ^& | (echo pwned2> pwned2)";
    for (name, command, shell) in [
        ("argv", "[cmd, /d, /v:on, /s, /c, 'echo \"!CHOKEPOINT_TASK_CONTENT!\"> out.txt']", false),
        ("shell", "['echo {{task_content}}> out.txt']", true),
    ] {
        let ws = allowed_with_task_content(name, command, shell, evil).await;
        let written = fs::read_to_string(ws.path().join("out.txt")).unwrap();
        // Wine's cmd expands `%…%` and `!…!` inside a delayed-expanded value again (Windows' does
        // not): there the value is not kept byte for byte, but it still runs nothing.
        if cfg!(not(wine)) {
            assert_eq!(written.trim_end(), format!("\"{evil}\""), "{name}");
        } else {
            assert!(written.starts_with("\"x\" & echo pwned> pwned & echo "), "{name}: {written}");
        }
        for f in ["pwned", "pwned2"] {
            assert!(!ws.path().join(f).exists(), "{name}: the task text ran as code ({f})");
        }
    }
}

#[tokio::test]
#[cfg_attr(windows, ignore = "its hooks are POSIX sh scripts or Unix programs, which Windows has not")]
async fn piped_output_keeps_chain_order_and_includes_a_failing_hooks_output() {
    let yaml = pre_tool_use(
        "    - name: late\n      priority: low\n      command: [echo, three]\n      pipe_output: true\n\
         \x20   - name: quiet\n      command: [echo, not piped]\n\
         \x20   - name: failing-tests\n      priority: high\n      command: [sh, -c, 'echo 2 tests failed; exit 1']\n      pipe_output: true\n",
    );
    let (_ws, e) = run(&yaml).await;
    assert_eq!(
        e.piped.iter().map(|p| (p.hook.as_str(), p.text.as_str())).collect::<Vec<_>>(),
        [("failing-tests", "2 tests failed"), ("late", "three")]
    );
    assert_eq!(outcome(&e), ["failing-tests:failed_open", "quiet:allow", "late:allow"]);
}

fn sh(dir: &Path, script: &str) {
    let out = std::process::Command::new("sh").arg("-c").arg(script).current_dir(dir).output().unwrap();
    assert!(out.status.success(), "{script}: {}", String::from_utf8_lossy(&out.stderr));
}

#[tokio::test]
#[cfg_attr(windows, ignore = "its hooks are POSIX sh scripts or Unix programs, which Windows has not")]
async fn run_tests_detects_the_command_and_gives_a_remediation_on_failure() {
    let yaml =
        "version: 1\nhooks:\n  BeforeSubmit:\n    - name: tests\n      builtin: run_tests\n    - name: pr\n      builtin: create_pr\n";
    let (ws, engine) = engine(yaml);
    fs::write(ws.path().join("package.json"), r#"{"scripts":{"test":"node -e \"console.log('1 failing: adds'); process.exit(1)\""}}"#)
        .unwrap();
    let e = engine.evaluate_async(Event::new(EventKind::BeforeSubmit), None).await;
    assert_eq!(outcome(&e), ["tests:deny"], "fail-fast: create_pr must not run after a failure");
    let Decision::Deny(d) = e.decision else { panic!() };
    assert_eq!(d.reason, "`npm test --silent` failed");
    let remediation = d.remediation.unwrap();
    assert!(remediation.starts_with("The tests failed") && remediation.contains("1 failing: adds"), "{remediation}");

    fs::write(ws.path().join("package.json"), r#"{"scripts":{"test":"node -e \"console.log('ok')\""}}"#).unwrap();
    let e = engine.evaluate_async(Event::new(EventKind::BeforeSubmit), None).await;
    assert_eq!(outcome(&e), ["tests:allow", "pr:allow"]);
    assert_eq!(e.decision, Decision::Allow);
    assert_eq!(e.additional_context, ["create_pr: no pull-request command configured (give one with `command`)"], "create_pr SKIPs");
}

#[tokio::test]
#[cfg_attr(wine, ignore = "runs git, and no Windows git is installed under Wine here")]
async fn rebase_on_main_aborts_a_conflict_and_says_which_files() {
    let yaml = "version: 1\nhooks:\n  BeforeSubmit:\n    - name: rebase\n      builtin: rebase_on_main\n";
    let (ws, engine) = engine(yaml);
    let git = "git -c user.email=t@t -c user.name=t";
    sh(
        ws.path(),
        &format!(
            "git init -q -b main . && echo base > f.txt && {git} add f.txt && {git} commit -qm base && \
         git checkout -q -b work && echo mine > f.txt && {git} commit -qam mine && \
         git checkout -q main && echo theirs > f.txt && {git} commit -qam theirs && git checkout -q work"
        ),
    );
    let e = engine.evaluate_async(Event::new(EventKind::BeforeSubmit), None).await;
    let Decision::Deny(d) = e.decision else { panic!("{:?}", e.outcomes) };
    assert_eq!(d.reason, "rebase on main has conflicts");
    assert!(d.remediation.unwrap().starts_with("Rebasing onto main conflicts in: f.txt. The rebase was aborted."));
    assert_eq!(e.context.get("conflicts").map(String::as_str), Some("f.txt"));
    assert!(!ws.path().join(".git/rebase-merge").exists() && !ws.path().join(".git/rebase-apply").exists(), "the rebase must be aborted");
    assert_eq!(fs::read_to_string(ws.path().join("f.txt")).unwrap().trim(), "mine");
}

#[tokio::test]
#[cfg_attr(windows, ignore = "its hooks are POSIX sh scripts or Unix programs, which Windows has not")]
async fn piped_output_waits_for_the_next_turn_in_order_per_session() {
    let yaml = "version: 1\nhooks:\n  SessionStart:\n    - name: setup\n      command: [echo, deps ok]\n      pipe_output: true\n  TurnEnd:\n    - name: tests\n      command: [sh, -c, 'echo turn $CHOKEPOINT_ITERATION']\n      pipe_output: true\n  Error:\n    - name: diag\n      command: [echo, diff here]\n      pipe_output: true\n  SessionEnd:\n    - name: bye\n      command: [echo, bye]\n      pipe_output: true\n";
    let (_ws, engine) = engine(yaml);
    let ev = |kind, session: &str, turn: Option<u32>| {
        let mut e = Event::new(kind);
        e.ids.session = Some(session.into());
        e.ids.turn = turn;
        e
    };
    let texts = |v: Vec<chokepoint_core::Piped>| v.into_iter().map(|p| p.text).collect::<Vec<_>>();

    engine.evaluate_async(ev(EventKind::SessionStart, "A", None), None).await;
    engine.evaluate_async(ev(EventKind::SessionStart, "B", None), None).await;
    // SessionStart output waits for the first turn.
    assert_eq!(texts(engine.drain_piped("A")), ["deps ok"]);
    engine.evaluate_async(ev(EventKind::TurnEnd, "A", Some(1)), None).await;
    engine.evaluate_async(ev(EventKind::TurnEnd, "A", Some(2)), None).await;
    assert_eq!(texts(engine.drain_piped("A")), ["turn 1", "turn 2"], "FIFO across turns");
    assert!(engine.drain_piped("A").is_empty(), "drained once");
    // Error output is for an immediate recovery prompt, not the queue.
    let e = engine.evaluate_async(ev(EventKind::Error, "A", Some(3)), None).await;
    assert_eq!(texts(e.piped), ["diff here"]);
    assert!(engine.drain_piped("A").is_empty());
    // SessionEnd output is never piped.
    let e = engine.evaluate_async(ev(EventKind::SessionEnd, "A", None), None).await;
    assert_eq!(texts(e.piped), ["bye"], "still listed for the trace");
    assert!(engine.drain_piped("A").is_empty());
    // Sessions do not see each other's output.
    assert_eq!(texts(engine.drain_piped("B")), ["deps ok"]);
}

#[tokio::test]
#[cfg_attr(windows, ignore = "its hook is a POSIX sh script or a Unix program, which Windows has not; cmd's case is in windows_cmd")]
async fn what_a_hook_raises_is_one_level_deeper_and_does_not_run_the_hooks_again() {
    let yaml = pre_tool_use("    - name: depth\n      command: [sh, -c, 'echo depth=$CHOKEPOINT_HOOK_DEPTH']\n      pipe_output: true\n");
    let (_ws, engine) = engine(&yaml);
    let e = engine.evaluate_async(write_event(), None).await;
    assert_eq!(e.piped.iter().map(|p| p.text.as_str()).collect::<Vec<_>>(), ["depth=1"], "the hook's process is told its depth");
    // An event raised at that depth (by the CLI reading CHOKEPOINT_HOOK_DEPTH) runs no hooks.
    let mut nested = write_event();
    nested.depth = 1;
    let e = engine.evaluate_async(nested.clone(), None).await;
    assert!(e.reentered && e.outcomes.is_empty() && e.piped.is_empty());
    assert!(engine.evaluate(nested).unwrap().reentered, "the synchronous path too");
}

/// The hook protocol with Windows' own shell, cmd (no `sh`, `printf` or `echo` program there):
/// plain text, JSON answers, exit 2 with stderr, a timeout, the event on stdin, the depth.
#[cfg(windows)]
mod windows_cmd {
    use super::*;

    /// A hook running `line` in cmd.
    fn cmd(name: &str, line: &str) -> String {
        format!("    - name: {name}\n      command: [cmd, /d, /s, /c, '{line}']\n")
    }

    #[tokio::test]
    async fn plain_text_allows_and_is_the_output() {
        let (_ws, e) = run(&pre_tool_use(&format!("{}      pipe_output: true\n", cmd("hello", "echo hello")))).await;
        assert_eq!(e.decision, Decision::Allow);
        assert_eq!(e.piped.iter().map(|p| p.text.as_str()).collect::<Vec<_>>(), ["hello"]);
    }

    #[tokio::test]
    async fn json_answers_and_exit_2_deny() {
        let deny = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no writes on fridays"}}"#;
        let (_ws, e) = run(&pre_tool_use(&cmd("friday", &format!("echo {deny}")))).await;
        assert_eq!(denial_reason(&e), "no writes on fridays");
        let (_ws, e) = run(&pre_tool_use(&cmd("policy", "echo blocked by policy>&2& exit 2"))).await;
        assert_eq!(denial_reason(&e), "blocked by policy");
        let (_ws, e) = run(&pre_tool_use(&format!("{}      priority: critical\n", cmd("garbage", "echo {not json")))).await;
        assert!(denial_reason(&e).contains("stdout looks like JSON but is not"), "{}", denial_reason(&e));
    }

    #[tokio::test]
    async fn a_hook_past_its_timeout_fails_closed() {
        let yaml =
            pre_tool_use(&format!("{}      priority: critical\n      timeout: 1\n", cmd("slow-gate", "for /l %i in (0,0,1) do @rem")));
        let started = std::time::Instant::now();
        let (_ws, e) = run(&yaml).await;
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
        assert_eq!(outcome(&e), ["slow-gate:failed_closed"]);
        assert!(denial_reason(&e).contains("timed out after 1000 ms"), "{}", denial_reason(&e));
    }

    #[tokio::test]
    async fn stdin_carries_the_event_and_the_depth_is_one_deeper() {
        let (ws, e) = run(&pre_tool_use(&format!(
            "{}      pipe_output: true\n",
            cmd("dump", "findstr \"^\" > stdin.json & echo depth=%CHOKEPOINT_HOOK_DEPTH%")
        )))
        .await;
        assert_eq!(e.decision, Decision::Allow, "{:?}", e.outcomes);
        assert_eq!(e.piped.iter().map(|p| p.text.as_str()).collect::<Vec<_>>(), ["depth=1"]);
        // Wine's findstr reads no pipe: what the hook got on stdin is checked on a real Windows.
        if cfg!(wine) {
            return;
        }
        let v: serde_json::Value = serde_json::from_str(&fs::read_to_string(ws.path().join("stdin.json")).unwrap()).unwrap();
        assert_eq!((v["hook_event_name"].as_str(), v["session_id"].as_str()), (Some("PreToolUse"), Some("S-1")));
        assert_eq!(v["chokepoint"]["paths"], json!(["src/a.js"]));
    }
}
