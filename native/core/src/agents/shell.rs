//! An agent's shell command put inside our containment, as one command line its shell tool runs.

use crate::containment::ContainReport;
use crate::model::governance::{SCOPE_EXPANSION_TOOL, SELECT_INTENT_TOOL};
use std::path::Path;

/// `'<program>' exec --workspace '<root>' --session '<session>' -- bash -c '<command>'`: the
/// agent's command, unchanged, inside our containment. bash, because every agent's shell tool runs
/// bash.
pub fn exec_command(program: &Path, root: &Path, session: &str, command: &str) -> String {
    format!("{}{}", exec_prefix(program, root, session), quote(command))
}

/// Everything of [`exec_command`] before the command: a command that starts with it is already
/// contained for this session (another session's prefix is not: it is contained again).
pub fn exec_prefix(program: &Path, root: &Path, session: &str) -> String {
    format!(
        "{} exec --workspace {} --session {} -- bash -c ",
        quote(&program.to_string_lossy()),
        quote(&root.to_string_lossy()),
        quote(session)
    )
}

/// One POSIX shell word: single quotes, with each `'` closed, escaped and reopened.
pub fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// One POSIX shell word for a person to read: bare when it is plainly safe, else [`quote`]d.
pub fn word(text: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./=:,@+".contains(c);
    if !text.is_empty() && text.chars().all(safe) { text.to_owned() } else { quote(text) }
}

/// The `chokepoint` program as a shell word in a next step the model is told: this program when the
/// edge said which it is, else the name on `PATH`.
pub fn program_word(program: Option<&Path>) -> String {
    program.map_or_else(|| "chokepoint".to_owned(), |p| quote(&p.to_string_lossy()))
}

/// What the agent's model is told (on the command's stderr, by `chokepoint exec`) when a contained
/// command failed while the kernel confined its writes, and the report has nothing else to say: a
/// write the kernel refused leaves no change to list, only the command's own `Permission denied`,
/// which its output carries without us (it is not captured, so it streams to the agent as it comes).
/// `None` when the report speaks already, the command succeeded or timed out, or nothing confined it.
pub fn confined_failure(report: &ContainReport) -> Option<String> {
    let failed = !report.timed_out && report.status.is_some_and(|s| !s.success());
    if !failed || !report.confinement.is_enforced() || report.tool_error().is_some() {
        return None;
    }
    let Some(intent) = &report.intent_id else {
        return Some(format!(
            "the command failed, and this session holds no intent, so it may write nothing in the workspace: a `Permission denied` in \
             its output is a write the kernel refused. Select an intent with {SELECT_INTENT_TOOL} first, then retry."
        ));
    };
    let scope = if report.scope.is_empty() { "no paths".to_owned() } else { report.scope.join(", ") };
    Some(format!(
        "the command failed while confined to writing inside the scope of intent `{intent}` ({scope}): a `Permission denied` or \
         `Operation not permitted` in its output is a write outside that scope, which the kernel refused, and nothing of it landed. \
         Stay inside {scope}, or ask for more with {SCOPE_EXPANSION_TOOL}(intent_id, paths, justification) naming the paths the \
         command must write, then retry."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quoted_word_survives_any_quote_inside() {
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(
            exec_command(Path::new("/bin/chokepoint"), Path::new("/ws"), "claude:a", "echo 'x' > y"),
            r"'/bin/chokepoint' exec --workspace '/ws' --session 'claude:a' -- bash -c 'echo '\''x'\'' > y'"
        );
    }
}
