//! An agent's shell command put inside our containment, as one command line its shell tool runs.

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
