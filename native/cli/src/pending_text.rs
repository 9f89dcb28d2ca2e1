//! How a Pending reads as text, for a person at a terminal: one line for `approvals list`, the whole
//! of it with a write's diff for `approvals show` and the interactive review (`review.rs`). Its own
//! module so that both read it from below instead of from each other (`tests/layers.rs` fails on an
//! import circle between files of the CLI or the binding as it does in the core). `show` prints the
//! agent, session, tool, input, and a write's diff against the file on disk (`approvals::preview`).

use chokepoint_core::approvals::{PendingKind, preview};
use chokepoint_core::model::external_events::Agent;
use serde_json::Value;
use std::path::Path;

pub fn text<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    value.pointer(pointer).and_then(Value::as_str)
}

/// `agent` of a subject, by name and id (`Claude Code (claude)`).
fn agent(pending: &Value) -> Option<String> {
    let id = text(pending, "/subject/agent")?;
    Some(Agent::from_id(id).map_or_else(|| id.to_owned(), |a| format!("{} ({id})", a.as_str())))
}

/// One line per Pending, for `list`.
pub fn line(pending: &Value) -> String {
    let mut parts = vec![text(pending, "/id").unwrap_or("?").to_owned(), text(pending, "/kind").unwrap_or("?").to_owned()];
    parts.extend(agent(pending));
    parts.extend(text(pending, "/session_id").map(|s| format!("session {s}")));
    parts.extend(text(pending, "/subject/tool").map(|t| format!("tool {t}")));
    if let Some(paths) = pending.pointer("/subject/paths").and_then(Value::as_array).filter(|p| !p.is_empty()) {
        parts.push(paths.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", "));
    }
    parts.extend(text(pending, "/subject/reason").map(|r| format!("({r})")));
    if let Some(machine) = text(pending, "/machine").or(text(pending, "/subject/machine")) {
        parts.push(format!("on machine {machine}"));
    }
    if let Some(worktree) = text(pending, "/worktree") {
        parts.push(match text(pending, "/branch") {
            Some(branch) => format!("in worktree {worktree} on branch {branch}"),
            None => format!("in worktree {worktree}"),
        });
    }
    parts.join("  ")
}

/// A Pending as a person reads it: what it is, who waits, what the call holds and, for a write, the
/// diff against the file on disk in the workspace at `root`.
pub fn describe(pending: &Value, root: &Path) -> String {
    let kind = text(pending, "/kind").unwrap_or("?");
    let mut out = format!("pending {}  {kind}  {}\n", text(pending, "/id").unwrap_or("?"), text(pending, "/status").unwrap_or("?"));
    let mut field = |name: &str, value: Option<String>| {
        if let Some(value) = value {
            out.push_str(&format!("  {name:<9}{value}\n"));
        }
    };
    field("agent", agent(pending));
    field("machine", text(pending, "/machine").or(text(pending, "/subject/machine")).map(str::to_owned));
    field("session", text(pending, "/session_id").map(str::to_owned));
    field("intent", text(pending, "/asker/intent").map(str::to_owned));
    field(
        "from",
        text(pending, "/subject/worktree").map(|w| match text(pending, "/subject/branch") {
            Some(branch) => format!("worktree {w} on branch {branch} (relayed from its hook)"),
            None => format!("worktree {w} (relayed from its hook)"),
        }),
    );
    field("tool", text(pending, "/subject/tool").map(str::to_owned));
    field(
        "paths",
        pending
            .pointer("/subject/paths")
            .and_then(Value::as_array)
            .filter(|p| !p.is_empty())
            .map(|p| p.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", ")),
    );
    field("asked", text(pending, "/subject/reason").or(text(pending, "/triggered_by")).map(str::to_owned));
    field("opened", text(pending, "/created_at").map(|c| format!("{c}, route {}", text(pending, "/route").unwrap_or("?"))));
    field("lapses", lapses(pending));
    field(
        "actions",
        pending.get("actions").and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", ")),
    );
    if let Some(decision) = pending.get("decision").filter(|d| !d.is_null()) {
        let said = text(decision, "/reason").or(text(decision, "/note")).map(|s| format!(": {s}")).unwrap_or_default();
        field("decided", Some(format!("{} by {}{said}", text(decision, "/action").unwrap_or("?"), text(decision, "/by").unwrap_or("?"))));
    }
    let subject = pending.get("subject").cloned().unwrap_or(Value::Null);
    let shown = if kind == PendingKind::ToolCall.as_str() { subject.get("input").cloned().unwrap_or(Value::Null) } else { subject.clone() };
    out.push_str(if kind == PendingKind::ToolCall.as_str() { "  input\n" } else { "  subject\n" });
    out.push_str(&indent(&serde_json::to_string_pretty(&shorten(shown)).unwrap_or_default(), 4));
    let write = PendingKind::parse(kind).ok().and_then(|kind| preview(kind, &subject, root));
    if let Some(write) = write {
        if let Some(patch) = &write.patch {
            out.push_str("  patch\n");
            out.push_str(&indent(patch.trim_end(), 4));
        } else if let (Some(path), Some(after)) = (&write.path, &write.after) {
            out.push_str(&format!("  diff of {path} (on disk, then as the call leaves it)\n"));
            out.push_str(&indent(diff(&write.before, after, path).trim_end(), 4));
        }
        if let Some(note) = &write.note {
            out.push_str(&format!("  ({note})\n"));
        }
    }
    out
}

/// A unified diff of `before` and `after`, both called `name`.
pub fn diff(before: &str, after: &str, name: &str) -> String {
    let diff = similar::TextDiff::from_lines(before, after);
    let text = diff.unified_diff().context_radius(3).header(&format!("a/{name}"), &format!("b/{name}")).to_string();
    if text.is_empty() { "(no change)\n".to_owned() } else { text }
}

fn indent(text: &str, by: usize) -> String {
    let pad = " ".repeat(by);
    text.lines().map(|l| format!("{pad}{l}\n")).collect()
}

/// Long strings cut, for the printed input (a write's content is in its diff).
fn shorten(value: Value) -> Value {
    const KEEP: usize = 400;
    match value {
        Value::String(s) if s.chars().count() > KEEP => {
            let total = s.chars().count();
            Value::String(format!("{}… ({total} characters in all)", s.chars().take(KEEP).collect::<String>()))
        }
        Value::Array(items) => Value::Array(items.into_iter().map(shorten).collect()),
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, shorten(v))).collect()),
        other => other,
    }
}

/// When an open Pending lapses and what happens then: "in 4:12, then the call is denied".
fn lapses(pending: &Value) -> Option<String> {
    if pending.get("decision").is_some_and(|d| !d.is_null()) {
        return None;
    }
    let deadline = pending.get("deadline_ms").and_then(Value::as_u64)?;
    let left = deadline.saturating_sub(chokepoint_core::base::clock::now_ms()) / 1000;
    let then = match text(pending, "/on_timeout") {
        Some("deny") => "the call is denied",
        Some("agent_prompt") => "the agent asks its person in its own prompt",
        _ => "it counts as rejected",
    };
    Some(format!("in {}:{:02}, then {then}", left / 60, left % 60))
}
