//! An agent's shell command put inside our containment, as one command line its shell tool runs:
//! `chokepoint exec --session <session> …`, never wrapped twice for the same session. When the
//! kernel refused a contained command's writes and left nothing to list, [`confined_failure`] is what
//! the model is told on stderr.

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

/// Whether `command` is exactly this session's handshake from the command line, as a denial tells the
/// model to run it: `'<program>' intent select|release [--workspace '<root>'] --session '<session>'
/// [--agent A] [<intent_id>]`, nothing else (no operator, no expansion, no other program, workspace
/// or session). Such a command is not put inside containment: there its lease would be taken in the
/// command's own layer, which is never applied, and the agent would be denied again and again. It is
/// judged as the handshake by the command itself (`intent select` runs the gatekeeper's chain).
pub fn is_own_handshake(command: &str, program: &Path, root: &Path, session: &str) -> bool {
    let Some(words) = plain_words(command) else { return false };
    let [first, noun, verb, rest @ ..] = words.as_slice() else { return false };
    if first.as_str() != program.to_string_lossy() || noun != "intent" || !matches!(verb.as_str(), "select" | "release") {
        return false;
    }
    let mut own_session = false;
    let mut positional = 0;
    let mut rest = rest.iter();
    while let Some(word) = rest.next() {
        match word.as_str() {
            "--workspace" => {
                if rest.next().is_none_or(|w| Path::new(w) != root) {
                    return false;
                }
            }
            "--session" => {
                own_session = rest.next().is_some_and(|w| w == session);
                if !own_session {
                    return false;
                }
            }
            "--agent" => {
                if rest.next().is_none_or(|w| !w.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')) {
                    return false;
                }
            }
            id if !id.starts_with('-') && id.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) => positional += 1,
            _ => return false,
        }
    }
    own_session && positional == usize::from(verb == "select")
}

/// The words of a command that is plain: bare words of safe characters and single-quoted words (as
/// [`quote`] writes them), separated by spaces; `None` for anything a shell would read otherwise.
fn plain_words(command: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = command.trim().chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => word.push(c),
                    }
                }
            }
            c if c.is_ascii_alphanumeric() || "-_./=:,@+".contains(c) => {
                in_word = true;
                word.push(c);
            }
            _ => return None,
        }
    }
    if in_word {
        words.push(word);
    }
    Some(words)
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
    fn only_this_session_s_plain_handshake_escapes_containment() {
        let (program, root) = (Path::new("/opt/chokepoint"), Path::new("/ws"));
        let own = |c: &str| is_own_handshake(c, program, root, "claude:a");
        assert!(own("'/opt/chokepoint' intent select --workspace '/ws' --session 'claude:a' INT-001"));
        assert!(own("/opt/chokepoint intent select --session claude:a --agent claude INT-001"));
        assert!(own("'/opt/chokepoint' intent release --session 'claude:a'"));
        for other in [
            "'/opt/chokepoint' intent select --session 'claude:b' INT-001",
            "'/opt/chokepoint' intent select --workspace '/other' --session 'claude:a' INT-001",
            "chokepoint intent select --session claude:a INT-001",
            "./chokepoint intent select --session claude:a INT-001",
            "'/opt/chokepoint' intent approve --session claude:a --intent INT-001 --path '**'",
            "'/opt/chokepoint' intent select --session claude:a INT-001; rm -rf src",
            "'/opt/chokepoint' intent select --session claude:a $(touch x)",
            "'/opt/chokepoint' intent select --session claude:a INT-001 INT-002",
            "'/opt/chokepoint' intent select --session claude:a \"INT-001\"",
            "'/opt/chokepoint' intent select INT-001",
            "'/opt/chokepoint' intent select --session 'claude:a",
        ] {
            assert!(!own(other), "{other}");
        }
    }

    #[test]
    fn a_quoted_word_survives_any_quote_inside() {
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(
            exec_command(Path::new("/bin/chokepoint"), Path::new("/ws"), "claude:a", "echo 'x' > y"),
            r"'/bin/chokepoint' exec --workspace '/ws' --session 'claude:a' -- bash -c 'echo '\''x'\'' > y'"
        );
    }
}
