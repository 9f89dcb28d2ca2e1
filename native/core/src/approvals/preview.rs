//! What a tool call's Pending would do to its file, for whoever decides it: the file as it is on disk
//! and as the call would leave it (the CLI's `approvals show` prints the two as a diff). The tool
//! input is read the way the agents' write tools shape it: a whole new content (`content`,
//! `file_text`), one replacement (`old_string`/`new_string`, `oldString`/`newString`,
//! `old_str`/`new_str`, with `replace_all`), a list of them (`edits`), or a patch, which is its own
//! diff (`apply_patch`'s text).

use super::kind::PendingKind;
use serde_json::Value;
use std::path::Path;

/// The largest file read for a preview: a diff of more is not read by a person anyway.
const MAX_FILE: u64 = 4 * 1024 * 1024;

/// A write's preview.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preview {
    /// The workspace-relative path the call writes (none for a patch, which names its own files).
    pub path: Option<String>,
    /// The file now; empty when it does not exist yet.
    pub before: String,
    /// The file as the call would leave it, when the input says so in full or as replacements.
    pub after: Option<String>,
    /// The patch the call applies, as the agent wrote it.
    pub patch: Option<String>,
    /// Why `after` could not be worked out (a text to replace that the file does not hold, a file
    /// too large to read).
    pub note: Option<String>,
}

/// The preview of the write of a Pending of `kind` with `subject` in the workspace at `root`; none
/// for another kind than `tool_call`, or a call that writes no one file this can read (a shell
/// command, several paths).
pub fn preview(kind: PendingKind, subject: &Value, root: &Path) -> Option<Preview> {
    if kind != PendingKind::ToolCall {
        return None;
    }
    let input = subject.get("input")?;
    let text = |key: &str| input.get(key).and_then(Value::as_str);
    if let Some(patch) =
        ["patch", "command", "input"].iter().filter_map(|k| text(k)).find(|t| t.trim_start().starts_with("*** Begin Patch"))
    {
        return Some(Preview { path: None, before: String::new(), after: None, patch: Some(patch.to_owned()), note: None });
    }
    // The canonical paths the engine judged: relative to the workspace, inside it.
    let paths: Vec<&str> = subject.get("paths")?.as_array()?.iter().filter_map(Value::as_str).collect();
    let [path] = paths.as_slice() else { return None };
    let mut preview = Preview { path: Some((*path).to_owned()), before: String::new(), after: None, patch: None, note: None };
    let file = root.join(path);
    match std::fs::metadata(&file) {
        Ok(meta) if meta.len() > MAX_FILE => {
            preview.note = Some(format!("{path} holds {} bytes, too many to show", meta.len()));
            return Some(preview);
        }
        Ok(_) => match std::fs::read(&file) {
            Ok(bytes) => preview.before = String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) => preview.note = Some(format!("{path} cannot be read: {e}")),
        },
        Err(_) => {}
    }
    let whole = ["content", "file_text", "text"].iter().find_map(|k| text(k));
    let edits: Vec<&Value> = match input.get("edits") {
        Some(Value::Array(edits)) => edits.iter().collect(),
        _ => vec![input],
    };
    preview.after = match whole {
        Some(content) => Some(content.to_owned()),
        None if preview.note.is_none() => {
            let mut after = preview.before.clone();
            let mut applied = false;
            for edit in edits {
                let field = |keys: [&str; 3]| keys.iter().find_map(|k| edit.get(*k).and_then(Value::as_str));
                let (Some(old), Some(new)) = (field(["old_string", "oldString", "old_str"]), field(["new_string", "newString", "new_str"]))
                else {
                    continue;
                };
                if old.is_empty() || !after.contains(old) {
                    preview.note = Some(format!("the text to replace is not in {path} as it is now"));
                    break;
                }
                let all = edit.get("replace_all").and_then(Value::as_bool).unwrap_or(false);
                after = if all { after.replace(old, new) } else { after.replacen(old, new, 1) };
                applied = true;
            }
            (applied && preview.note.is_none()).then_some(after)
        }
        None => None,
    };
    Some(preview)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approvals::pending::Pending;
    use serde_json::json;

    fn pending(input: Value, paths: &[&str]) -> Value {
        // Through a real Pending: the subject as the kind keeps it.
        Pending::new(PendingKind::ToolCall, json!({ "tool": "Edit", "input": input, "paths": paths }), "t").unwrap().to_dict().subject
    }

    fn preview(subject: &Value, root: &Path) -> Option<Preview> {
        super::preview(PendingKind::ToolCall, subject, root)
    }

    #[test]
    fn a_write_an_edit_and_a_patch_are_previewed() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir(ws.path().join("src")).unwrap();
        std::fs::write(ws.path().join("src/a.ts"), "one\ntwo\n").unwrap();
        let write = preview(&pending(json!({ "file_path": "/x/src/a.ts", "content": "three\n" }), &["src/a.ts"]), ws.path()).unwrap();
        assert_eq!((write.before.as_str(), write.after.as_deref()), ("one\ntwo\n", Some("three\n")));
        let edit = preview(&pending(json!({ "old_string": "two", "new_string": "2" }), &["src/a.ts"]), ws.path()).unwrap();
        assert_eq!(edit.after.as_deref(), Some("one\n2\n"));
        let missing = preview(&pending(json!({ "old_string": "zzz", "new_string": "2" }), &["src/a.ts"]), ws.path()).unwrap();
        assert!(missing.after.is_none() && missing.note.unwrap().contains("not in src/a.ts"));
        let new_file = preview(&pending(json!({ "content": "x" }), &["src/new.ts"]), ws.path()).unwrap();
        assert_eq!((new_file.before.as_str(), new_file.after.as_deref()), ("", Some("x")));
        let patch =
            preview(&pending(json!({ "command": "*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\n" }), &[]), ws.path()).unwrap();
        assert!(patch.patch.unwrap().contains("Add File"));
        assert!(preview(&pending(json!({ "command": "ls" }), &[]), ws.path()).is_none());
    }
}
