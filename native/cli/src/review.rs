//! The interactive review of Pendings, for people outside VS Code (`chokepoint serve --review`,
//! `chokepoint approvals review`): each Pending is printed as it opens, and the person approves it,
//! rejects it with a reason, modifies a tool call's input in `$EDITOR` (shown as a diff, then
//! confirmed) or skips it. The terminal's part only: the Pendings and their decisions are the
//! engine's, reached through a [`Desk`] (this process's engine, or the live engine's socket).
//!
//! New Pendings are found by polling the open list. `serve --review` runs this process's desk on a
//! thread beside the server; `approvals review [<id>]` works over the socket. The edited input is
//! written to a 0600 temporary file for `$VISUAL`/`$EDITOR`.

use crate::pending_text::{describe, diff};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::io::{BufRead, Write};
use std::path::Path;
use std::time::Duration;

/// How often the open Pendings are looked at while none is new.
const POLL: Duration = Duration::from_millis(200);

/// Where the Pendings are, and where decisions go.
pub trait Desk {
    /// The workspace, for a write's diff.
    fn root(&self) -> &Path;
    /// The open Pendings, oldest first.
    fn open(&self) -> Result<Vec<Value>, String>;
    fn get(&self, id: &str) -> Result<Value, String>;
    /// Applies `decision` (`{ "action": …, …arguments }`); the line that says what happened.
    fn decide(&self, id: &str, decision: Value) -> Result<String, String>;
}

/// Reviews `only` that Pending, or every Pending as it opens until `input` ends. `Err` when the desk
/// cannot be reached (the engine went away).
pub fn run(desk: &dyn Desk, only: Option<&str>, input: &mut dyn BufRead, out: &mut dyn Write) -> Result<(), String> {
    if let Some(id) = only {
        let pending = desk.get(id)?;
        if pending.get("status").and_then(Value::as_str) != Some("open") {
            say(out, &describe(&pending, desk.root()));
            say(out, "it is decided already\n");
            return Ok(());
        }
        review(desk, &pending, input, out);
        return Ok(());
    }
    say(out, "reviewing pendings as they open (end of input stops)\n");
    let mut seen = HashSet::new();
    loop {
        let fresh: Vec<Value> =
            desk.open()?.into_iter().filter(|p| p.get("id").and_then(Value::as_str).is_some_and(|id| !seen.contains(id))).collect();
        if fresh.is_empty() {
            std::thread::sleep(POLL);
            continue;
        }
        for pending in fresh {
            seen.insert(pending.get("id").and_then(Value::as_str).unwrap_or_default().to_owned());
            if review(desk, &pending, input, out) == Ended::Input {
                return Ok(());
            }
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Ended {
    /// The Pending was decided or skipped.
    Pending,
    /// The input ended: nobody is there to answer any more.
    Input,
}

/// One Pending: printed, then asked about until it is decided or skipped.
fn review(desk: &dyn Desk, pending: &Value, input: &mut dyn BufRead, out: &mut dyn Write) -> Ended {
    let id = pending.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
    let actions: Vec<&str> = pending.get("actions").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let can = |action: &str| actions.contains(&action);
    say(out, &format!("\n{}", describe(pending, desk.root())));
    let mut choices = Vec::new();
    if can("approve") {
        choices.push("[a]pprove");
    }
    if can("reject") {
        choices.push("[r]eject");
    }
    if can("modify") {
        choices.push("[m]odify");
    }
    choices.push("[s]kip");
    let prompt = format!("{}? ", choices.join(", "));
    loop {
        let Some(choice) = ask(input, out, &prompt) else { return Ended::Input };
        let decision = match choice.as_str() {
            "a" | "approve" if can("approve") => {
                let Some(note) = ask(input, out, "note for the agent (empty for none): ") else { return Ended::Input };
                json!({ "action": "approve", "note": Some(note).filter(|n| !n.is_empty()) })
            }
            "r" | "reject" if can("reject") => {
                let Some(reason) = ask_until(input, out, "reason (the agent reads it): ") else { return Ended::Input };
                json!({ "action": "reject", "reason": reason })
            }
            "m" | "modify" if can("modify") => match modify(pending, input, out) {
                Modified::Decision(decision) => decision,
                Modified::Back => continue,
                Modified::Ended => return Ended::Input,
            },
            "s" | "skip" => {
                say(out, &format!("skipped {id}: it stays open\n"));
                return Ended::Pending;
            }
            _ => {
                say(out, &format!("answer one of: {}\n", choices.join(", ")));
                continue;
            }
        };
        let mut decision = decision;
        if let Some(object) = decision.as_object_mut() {
            object.retain(|_, v| !v.is_null());
        }
        match desk.decide(&id, decision) {
            Ok(text) => say(out, &format!("{text}\n")),
            Err(e) => say(out, &format!("could not decide {id}: {e}\n")),
        }
        return Ended::Pending;
    }
}

enum Modified {
    Decision(Value),
    /// Not confirmed, or not editable: back to the choice.
    Back,
    Ended,
}

/// The tool call's input, edited in `$VISUAL` or `$EDITOR` (else `vi`) in a private temporary file,
/// shown as a diff, and confirmed.
fn modify(pending: &Value, input: &mut dyn BufRead, out: &mut dyn Write) -> Modified {
    let original = pending.pointer("/subject/input").cloned().unwrap_or(Value::Null);
    let before = serde_json::to_string_pretty(&original).unwrap_or_default() + "\n";
    let file = match private_file(pending.get("id").and_then(Value::as_str).unwrap_or("pending"), &before) {
        Ok(file) => file,
        Err(e) => {
            say(out, &format!("cannot write the input to edit: {e}\n"));
            return Modified::Back;
        }
    };
    let edited = edit(&file);
    let _ = std::fs::remove_file(&file);
    let after = match edited {
        Ok(after) => after,
        Err(e) => {
            say(out, &format!("{e}\n"));
            return Modified::Back;
        }
    };
    let value = match serde_json::from_str::<Value>(&after) {
        Ok(value) if value.is_object() => value,
        Ok(_) => {
            say(out, "the edited input must be a JSON object (the tool's whole input); nothing was changed\n");
            return Modified::Back;
        }
        Err(e) => {
            say(out, &format!("the edited input is not JSON ({e}); nothing was changed\n"));
            return Modified::Back;
        }
    };
    if value == original {
        say(out, "the input was not changed\n");
        return Modified::Back;
    }
    say(out, &diff(&before, &(serde_json::to_string_pretty(&value).unwrap_or_default() + "\n"), "input.json"));
    let Some(yes) = ask(input, out, "run the call with this input? [y/N] ") else { return Modified::Ended };
    if !matches!(yes.as_str(), "y" | "yes") {
        return Modified::Back;
    }
    let Some(note) = ask(input, out, "note for the agent (empty for none): ") else { return Modified::Ended };
    Modified::Decision(json!({ "action": "modify", "input": value, "note": Some(note).filter(|n| !n.is_empty()) }))
}

/// Writes `text` to a new file only this user can read (the input may hold file contents): mode
/// 0600 on Unix; on Windows the temporary folder is the user's own (`%TEMP%` under the profile),
/// whose permissions the file inherits.
fn private_file(id: &str, text: &str) -> std::io::Result<std::path::PathBuf> {
    let name: String = id.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
    let path = std::env::temp_dir().join(format!("chokepoint-{name}-{}.json", std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&path)?;
    file.write_all(text.as_bytes())?;
    Ok(path)
}

/// Runs the person's editor on `file` (through `sh`, so `EDITOR="code --wait"` works) and reads it back.
fn edit(file: &Path) -> Result<String, String> {
    let editor = std::env::var("VISUAL").ok().filter(|e| !e.is_empty()).or_else(|| std::env::var("EDITOR").ok().filter(|e| !e.is_empty()));
    let editor = editor.unwrap_or_else(|| "vi".to_owned());
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(file)
        .status()
        .map_err(|e| format!("cannot run the editor `{editor}`: {e}"))?;
    if !status.success() {
        return Err(format!("the editor `{editor}` failed ({status}); nothing was changed"));
    }
    std::fs::read_to_string(file).map_err(|e| format!("cannot read the edited input back: {e}"))
}

fn say(out: &mut dyn Write, text: &str) {
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// One line of answer to `prompt`, trimmed; `None` at the end of the input.
fn ask(input: &mut dyn BufRead, out: &mut dyn Write, prompt: &str) -> Option<String> {
    say(out, prompt);
    let mut line = String::new();
    match input.read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim().to_owned()),
    }
}

/// Asks until the answer is not empty.
fn ask_until(input: &mut dyn BufRead, out: &mut dyn Write, prompt: &str) -> Option<String> {
    loop {
        let answer = ask(input, out, prompt)?;
        if !answer.is_empty() {
            return Some(answer);
        }
    }
}
