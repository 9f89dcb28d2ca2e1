//! Command hooks: a process per hook run, fed the event as JSON on stdin, answering on stdout.
//!
//! The protocol is Claude Code's where it applies, so existing hook scripts work unchanged:
//! - stdin: `{"session_id", "hook_event_name", "cwd", "tool_name", "tool_input" | "tool_response", ...}`
//!   plus a `chokepoint` object with everything else we know about the event;
//! - exit 0 with a JSON object on stdout: a decision (`hookSpecificOutput.permissionDecision`,
//!   `updatedInput`, `additionalContext`, `decision: "block"`, `continue: false`, or our own
//!   `decision: allow|deny|ask|modify` with `reason`, `remediation`, `suggested_tool`, `modified`);
//! - exit 0 with other text: allow, and the text is the hook's output (piped to the agent if asked);
//! - exit 2: deny, with stderr as the reason;
//! - any other exit, a signal, a timeout, output over the cap, or stdout that starts like JSON but is
//!   not: a failure, which the hook's failure mode turns into a deny (`closed`) or a note (`open`).
//!
//! Every hook runs as a process tree of its own (`base::tree`: a process group, on Windows a Job
//! Object); when it times out the whole tree is killed, and when it ends the tree is killed too, so
//! nothing a hook started outlives it.

use crate::base::tree::Tree;
use crate::hooks::template;
use crate::model::decision::{Answer, Denial, HookAnswer, HookFailure};
use crate::model::event::{Event, EventKind};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

/// Output beyond this many bytes on stdout or stderr is a failure: the rest is dropped and said so.
pub const DEFAULT_OUTPUT_CAP: usize = 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSpec {
    pub argv: Vec<String>,
    pub shell: bool,
    pub timeout: Duration,
}

/// What a command hook run produced: its answer (or failure) and its plain-text output, which is
/// what `pipe_output` delivers to the agent (for a failing test command, the failures it printed).
#[derive(Debug, Clone, PartialEq)]
pub struct CommandRun {
    pub result: Result<HookAnswer, HookFailure>,
    pub output: Option<String>,
}

impl CommandRun {
    fn failed(failure: HookFailure) -> Self {
        CommandRun { result: Err(failure), output: None }
    }
}

/// Runs one command hook for `event` in `cwd`.
pub async fn run(spec: &CommandSpec, event: &Event, cwd: &Path, output_cap: usize) -> CommandRun {
    let values = template::values(event);
    let mut command = if spec.shell {
        shell_command(spec)
    } else {
        let argv: Vec<String> = spec.argv.iter().map(|a| template::expand_arg(a, &values)).collect();
        let Some((program, args)) = argv.split_first() else { return CommandRun::failed(HookFailure::Error("empty command".into())) };
        // `[cmd, /c, …]` on Windows: cmd's line as written (`base::shell::add_args`).
        let mut c = std::process::Command::new(program);
        let args: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
        crate::base::shell::add_args(&mut c, program.as_ref(), &args);
        tokio::process::Command::from(c)
    };
    for (_, env, value) in &values {
        command.env(env, value);
    }
    // Whatever the hook asks of Chokepoint while it runs is one level deeper and does not re-enter the hooks.
    command.env("CHOKEPOINT_EVENT", event.kind.as_str()).env("CHOKEPOINT_HOOK_DEPTH", (event.depth + 1).to_string());
    command.current_dir(cwd).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    crate::base::tree::prepare_async(&mut command);

    let program = spec.argv.first().cloned().unwrap_or_default();
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return CommandRun::failed(HookFailure::Error(format!("cannot start `{program}`: {e}"))),
    };
    let tree = match Tree::adopt(child.id()) {
        Ok(tree) => tree,
        Err(e) => {
            // Still suspended (Windows): it never ran, and is not left behind.
            let _ = child.start_kill();
            let _ = child.wait().await;
            return CommandRun::failed(HookFailure::Error(format!("`{program}` was not run: {e}")));
        }
    };

    let input = serde_json::to_vec(&stdin_json(event, cwd)).unwrap_or_default();
    let mut stdin = child.stdin.take().expect("stdin is piped");
    // A hook that does not read its stdin must not block us: write in the background and ignore EPIPE.
    let writer = tokio::spawn(async move {
        let _ = stdin.write_all(&input).await;
        let _ = stdin.shutdown().await;
    });
    let stdout = tokio::spawn(read_capped(child.stdout.take().expect("stdout is piped"), output_cap));
    let stderr = tokio::spawn(read_capped(child.stderr.take().expect("stderr is piped"), output_cap));

    let status = match tokio::time::timeout(spec.timeout, child.wait()).await {
        Ok(status) => status.map_err(|e| HookFailure::Error(format!("waiting for `{program}`: {e}"))),
        Err(_) => {
            tree.kill();
            // The hook itself too, should it have left its group or job (a `setsid`), else the wait is forever.
            let _ = child.start_kill();
            let _ = child.wait().await;
            Err(HookFailure::Timeout { after_ms: spec.timeout.as_millis() as u64 })
        }
    };
    // Whatever the hook left running in its group or job goes with it; this also closes the pipes it held.
    tree.kill();
    writer.abort();
    // A process the hook left holding its output open (one that left the group with `setsid`) is not
    // waited for past the hook's own timeout: a failure, not a hang.
    let (Ok(out), Ok(err)) = (tokio::time::timeout(spec.timeout, stdout).await, tokio::time::timeout(spec.timeout, stderr).await) else {
        return CommandRun::failed(HookFailure::Error(format!(
            "`{program}` ended, but a process it started kept its output open past the hook's timeout"
        )));
    };
    let (out, out_overflow) = out.unwrap_or_default();
    let (err, err_overflow) = err.unwrap_or_default();
    let status = match status {
        Ok(status) => status,
        Err(failure) => return CommandRun { result: Err(failure), output: text_output(&out, &err) },
    };
    if out_overflow || err_overflow {
        let failure = HookFailure::BadAnswer(format!(
            "output exceeds {output_cap} bytes on {}; the rest was dropped",
            if out_overflow { "stdout" } else { "stderr" }
        ));
        return CommandRun { result: Err(failure), output: text_output(&out, &err) };
    }
    interpret(status, &out, &err)
}

/// A `shell: true` hook's process. argv[0] is the script; on Unix the rest become `$1`.. after the
/// script name, untouched by templates.
#[cfg(not(windows))]
fn shell_command(spec: &CommandSpec) -> tokio::process::Command {
    let script = template::quote_for_shell(spec.argv.first().map(String::as_str).unwrap_or_default());
    let mut c = tokio::process::Command::new("/bin/sh");
    c.arg("-c").arg(script).arg("chokepoint-hook").args(&spec.argv[1.min(spec.argv.len())..]);
    c
}

/// A `shell: true` hook's process on Windows: the script in cmd (`base::shell`), with delayed
/// expansion for the variables ([`template::quote_for_cmd`]). cmd has no `$1`..: the rest of argv is
/// in `CHOKEPOINT_ARG1`.. (read as `!CHOKEPOINT_ARG1!`).
#[cfg(windows)]
fn shell_command(spec: &CommandSpec) -> tokio::process::Command {
    use std::ffi::OsString;
    let script = template::quote_for_cmd(spec.argv.first().map(String::as_str).unwrap_or_default());
    let cmd = crate::base::shell::cmd_exe();
    let mut c = std::process::Command::new(&cmd);
    let args: Vec<OsString> = ["/d", "/v:on", "/s", "/c"].into_iter().map(OsString::from).chain([OsString::from(script)]).collect();
    crate::base::shell::add_args(&mut c, &cmd, &args);
    for (n, arg) in spec.argv.iter().skip(1).enumerate() {
        c.env(format!("CHOKEPOINT_ARG{}", n + 1), arg);
    }
    tokio::process::Command::from(c)
}

/// The text a failed or plain-text hook printed, stdout then stderr, for piping to the agent.
fn text_output(out: &[u8], err: &[u8]) -> Option<String> {
    let text = [String::from_utf8_lossy(out).trim(), String::from_utf8_lossy(err).trim()]
        .into_iter()
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    (!text.is_empty()).then_some(text)
}

/// Reads a pipe to its end, keeping at most `cap` bytes; reports whether there was more.
async fn read_capped(mut pipe: impl AsyncRead + Unpin, cap: usize) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    let mut overflow = false;
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) if kept.len() + n <= cap => kept.extend_from_slice(&buf[..n]),
            Ok(_) => {
                kept.extend_from_slice(&buf[..cap - kept.len()]);
                overflow = true;
                // Stop reading: the writer gets EPIPE (and usually SIGPIPE) instead of filling memory.
                break;
            }
        }
    }
    (kept, overflow)
}

fn interpret(status: std::process::ExitStatus, out: &[u8], err: &[u8]) -> CommandRun {
    let stderr = String::from_utf8_lossy(err).trim().to_owned();
    let failed = |failure| CommandRun { result: Err(failure), output: text_output(out, err) };
    match status.code() {
        Some(0) => {}
        Some(2) => {
            let reason = if stderr.is_empty() { "the hook exited with status 2".to_owned() } else { stderr };
            return CommandRun { result: Ok(Answer::Deny(Denial::new(reason)).into()), output: None };
        }
        Some(code) => return failed(HookFailure::Error(format!("exited with status {code}{}", tail(&stderr)))),
        None => return failed(HookFailure::Crashed(format!("killed by {}{}", signal_name(status), tail(&stderr)))),
    }
    let Ok(text) = std::str::from_utf8(out) else { return failed(HookFailure::BadAnswer("stdout is not UTF-8".into())) };
    let trimmed = text.trim();
    if trimmed.starts_with('{') {
        let result = serde_json::from_str::<Value>(trimmed)
            .map_err(|e| HookFailure::BadAnswer(format!("stdout looks like JSON but is not: {e}")))
            .and_then(|value| parse_answer(&value));
        return CommandRun { result, output: None };
    }
    CommandRun { result: Ok(Answer::Allow.into()), output: (!trimmed.is_empty()).then(|| trimmed.to_owned()) }
}

fn tail(stderr: &str) -> String {
    if stderr.is_empty() {
        return String::new();
    }
    let start = stderr.char_indices().rev().nth(499).map(|(i, _)| i).unwrap_or(0);
    format!(": {}", &stderr[start..])
}

#[cfg(unix)]
fn signal_name(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    status.signal().map(|s| format!("signal {s}")).unwrap_or_else(|| "a signal".into())
}

#[cfg(not(unix))]
fn signal_name(_: std::process::ExitStatus) -> String {
    "a signal".into()
}

/// Reads a JSON answer in Claude Code's shape or ours.
pub fn parse_answer(v: &Value) -> Result<HookAnswer, HookFailure> {
    let str_at = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
    let specific = v.get("hookSpecificOutput").unwrap_or(&Value::Null);
    let additional_context = str_at(specific, "additionalContext").or_else(|| str_at(v, "additional_context"));
    let reason = str_at(specific, "permissionDecisionReason").or_else(|| str_at(v, "reason"));
    let denial = |fallback: &str| Denial {
        reason: reason.clone().unwrap_or_else(|| fallback.to_owned()),
        remediation: str_at(v, "remediation"),
        suggested_tool: str_at(v, "suggested_tool"),
    };
    let answer = if v.get("continue") == Some(&Value::Bool(false)) {
        Answer::Deny(Denial {
            reason: str_at(v, "stopReason").or(reason.clone()).unwrap_or_else(|| "the hook stopped the agent".into()),
            ..denial("")
        })
    } else if let Some(decision) = str_at(specific, "permissionDecision") {
        match decision.as_str() {
            "allow" => specific.get("updatedInput").cloned().map(Answer::Modify).unwrap_or(Answer::Allow),
            "deny" => Answer::Deny(denial("denied by hook")),
            "ask" => Answer::Ask { reason: reason.clone().unwrap_or_else(|| "the hook asks for a decision".into()) },
            other => return Err(HookFailure::BadAnswer(format!("unknown permissionDecision `{other}`"))),
        }
    } else if let Some(updated) = specific.get("updatedInput") {
        Answer::Modify(updated.clone())
    } else {
        match str_at(v, "decision") {
            None => Answer::Allow,
            Some(decision) => {
                Answer::from_decision(&decision, reason, str_at(v, "remediation"), str_at(v, "suggested_tool"), v.get("modified").cloned())?
            }
        }
    };
    Ok(HookAnswer { answer, additional_context })
}

/// The event as a hook reads it on stdin: Claude Code's fields where they apply, ours under `chokepoint`.
pub fn stdin_json(event: &Event, cwd: &Path) -> Value {
    let mut v = json!({
        "session_id": event.ids.session,
        "hook_event_name": event.kind.as_str(),
        "cwd": cwd,
        "chokepoint": {
            "event": event.kind.as_str(),
            "agent_id": event.ids.agent,
            "model": event.ids.model,
            "task_id": event.ids.task,
            "plan_id": event.ids.plan,
            "turn": event.ids.turn,
            "intent_id": event.ids.intent,
            "task_type": event.task_type,
            "paths": event.paths,
            "subject": event.subject,
        },
    });
    if let Some(tool) = &event.tool {
        v["tool_name"] = json!(tool);
        match event.kind {
            EventKind::PostToolUse => v["tool_response"] = event.subject.clone(),
            _ => v["tool_input"] = event.subject.clone(),
        }
    }
    v
}
