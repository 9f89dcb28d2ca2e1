//! Where things are in a YAML text, for diagnostics serde cannot place, and the version check every
//! configuration file makes. Shared by hooks.yaml and active_intents.yaml.

use super::diagnostic::Diagnostic;
use std::path::Path;

/// What a layer finds wrong in its own section of a configuration file: the key to point at (the
/// file's reader locates it) and the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub key: String,
    /// The key's value, when the problem is about one item of a list (`tool: save_note`).
    pub value: Option<String>,
    pub message: String,
}

impl Problem {
    pub fn new(key: impl Into<String>, message: impl Into<String>) -> Problem {
        Problem { key: key.into(), value: None, message: message.into() }
    }

    /// A problem with the item whose `key` is `value`.
    pub fn at(key: impl Into<String>, value: impl Into<String>, message: impl Into<String>) -> Problem {
        Problem { key: key.into(), value: Some(value.into()), message: message.into() }
    }

    /// Where the problem is in `text`: 1-based line and column.
    pub(crate) fn locate(&self, text: &str) -> (u32, u32) {
        match &self.value {
            Some(value) => locate_value(text, &self.key, value),
            None => locate_key(text, &self.key),
        }
    }
}

/// The diagnostic for a file that declares a schema version this engine does not read, if it does.
pub(crate) fn check_version(file: &Path, text: &str, what: &str, found: u32, expected: u32) -> Option<Diagnostic> {
    (found != expected).then(|| {
        let (line, column) = locate_key(text, "version");
        Diagnostic {
            file: file.to_path_buf(),
            line,
            column,
            code: "unsupported-version",
            message: format!("{what} version {found} is not supported; this engine reads version {expected}"),
        }
    })
}

/// The 1-based line and column of the first `key:` in a YAML text, for semantic errors that serde
/// cannot place. Falls back to `(1, 1)` so a diagnostic always points into the file.
pub(crate) fn locate_key(text: &str, key: &str) -> (u32, u32) {
    locate(text, |line| {
        let trimmed = line.trim_start().trim_start_matches("- ");
        trimmed.strip_prefix(key).is_some_and(|rest| rest.trim_start().starts_with(':'))
    })
}

/// The position of a `key: value` pair (quoted or not), for diagnostics about one named item.
pub(crate) fn locate_value(text: &str, key: &str, value: &str) -> (u32, u32) {
    locate(text, |line| {
        let trimmed = line.trim_start().trim_start_matches("- ");
        trimmed
            .strip_prefix(key)
            .and_then(|r| r.trim_start().strip_prefix(':'))
            .is_some_and(|v| v.trim().trim_matches(|c| c == '"' || c == '\'') == value)
    })
}

/// Finds the first line that `hit` accepts; the column is that of the key, after any `- ` marker.
fn locate(text: &str, mut hit: impl FnMut(&str) -> bool) -> (u32, u32) {
    text.lines()
        .enumerate()
        .find(|(_, line)| hit(line))
        .map(|(i, line)| {
            let indented = line.trim_start();
            let key = indented.trim_start_matches("- ");
            (i as u32 + 1, (line.len() - key.len()) as u32 + 1)
        })
        .unwrap_or((1, 1))
}
