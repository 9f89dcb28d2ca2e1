//! The platform's shell for a script Chokepoint runs itself (a command hook with `shell: true`, a
//! contained script): `sh -c` on Unix; on Windows `cmd.exe /d /s /c`, as npm runs its scripts there
//! (Windows has no `sh`, and a Windows user's scripts are cmd's).
//!
//! cmd does not read its command line as a C program reads its argv: everything after `/c` is one
//! command line, taken as it is written. So the words after `/c` are handed to cmd raw
//! ([`add_args`]), never quoted for argv, which would put `\"` in a script where it wrote `"`.

use std::ffi::{OsStr, OsString};
use std::process::Command;

/// The argv that runs `script` in the platform's shell: `sh -c <script>`, or on Windows
/// `cmd.exe /d /s /c <script>` (`/d`: no AutoRun commands from the registry; `/s`: the line after
/// `/c` is taken as it is between its outer quotes).
pub fn script_argv(script: &str) -> Vec<OsString> {
    if cfg!(windows) {
        vec![cmd_exe(), "/d".into(), "/s".into(), "/c".into(), script.into()]
    } else {
        vec!["sh".into(), "-c".into(), script.into()]
    }
}

/// cmd.exe: `%ComSpec%` where it is set, as Windows' own programs find it, else by name.
pub fn cmd_exe() -> OsString {
    std::env::var_os("ComSpec").filter(|c| !c.is_empty()).unwrap_or_else(|| "cmd.exe".into())
}

/// Whether `program` is cmd.exe (by its file name after either separator, in any case).
pub fn is_cmd(program: &OsStr) -> bool {
    let text = program.to_string_lossy();
    let name = text.rsplit(['\\', '/']).next().unwrap_or(&text).to_ascii_lowercase();
    name == "cmd" || name == "cmd.exe"
}

/// Adds `args` to `command`, a command that runs `program`. Every argument is one argv word, except
/// for cmd.exe on Windows: the words after its `/c` (or `/k`) are its command line, joined by spaces
/// and handed over raw, in one pair of quotes when `/s` came before (cmd takes off exactly those).
pub fn add_args(command: &mut Command, program: &OsStr, args: &[OsString]) {
    let line_at = args.iter().position(|a| a.eq_ignore_ascii_case("/c") || a.eq_ignore_ascii_case("/k"));
    match line_at {
        Some(at) if cfg!(windows) && is_cmd(program) => {
            command.args(&args[..=at]);
            let quoted = args[..at].iter().any(|a| a.eq_ignore_ascii_case("/s"));
            raw(command, &command_line(&args[at + 1..], quoted));
        }
        _ => {
            command.args(args);
        }
    }
}

/// cmd's command line of `words`: joined by spaces, in one pair of quotes when `quoted`.
fn command_line(words: &[OsString], quoted: bool) -> OsString {
    let mut line = OsString::new();
    if quoted {
        line.push("\"");
    }
    for (i, word) in words.iter().enumerate() {
        if i > 0 {
            line.push(" ");
        }
        line.push(word);
    }
    if quoted {
        line.push("\"");
    }
    line
}

#[cfg(windows)]
fn raw(command: &mut Command, line: &OsStr) {
    std::os::windows::process::CommandExt::raw_arg(command, line);
}

#[cfg(not(windows))]
fn raw(command: &mut Command, line: &OsStr) {
    command.arg(line);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmd_is_known_by_its_file_name_in_any_case() {
        assert!(is_cmd(OsStr::new("cmd")) && is_cmd(OsStr::new("CMD.EXE")) && is_cmd(OsStr::new(r"C:\Windows\system32\cmd.exe")));
        assert!(!is_cmd(OsStr::new("sh")) && !is_cmd(OsStr::new("cmdx.exe")));
    }

    #[test]
    fn cmd_s_line_is_its_words_as_written_in_one_pair_of_quotes() {
        let words: Vec<OsString> = ["echo", "\"a b\"", ">", "out.txt"].into_iter().map(OsString::from).collect();
        assert_eq!(command_line(&words, true), OsString::from("\"echo \"a b\" > out.txt\""));
        assert_eq!(command_line(&words, false), OsString::from("echo \"a b\" > out.txt"));
    }

    /// The script reaches the shell unchanged, quotes and all (on Windows through cmd's raw line).
    #[test]
    fn a_script_with_quotes_and_operators_runs_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let argv = script_argv("echo \"a b\"> out.txt && echo second>> out.txt");
        let mut command = Command::new(&argv[0]);
        add_args(&mut command, &argv[0], &argv[1..]);
        let status = command.current_dir(dir.path()).status().unwrap();
        assert!(status.success());
        let text = std::fs::read_to_string(dir.path().join("out.txt")).unwrap();
        assert_eq!(
            text.lines().map(str::trim_end).collect::<Vec<_>>(),
            ["\"a b\"", "second"].map(|l| if cfg!(windows) { l } else { l.trim_matches('"') })
        );
    }
}
