//! An agent's shell command put inside our containment, as one command line its shell tool runs:
//! `chokepoint exec --session <session> …`, never wrapped twice for the same session, written in the
//! shell that agent's tool runs ([`Syntax`]): bash, or PowerShell on Windows. When the kernel refused a
//! contained command's writes and left nothing to list, [`confined_failure`] is what the model is told
//! on stderr.
//!
//! **Quoting that cannot be broken out of.** In bash every word is single-quoted with each `'` closed,
//! escaped and reopened ([`quote`]). In PowerShell the agent's command is not quoted at all: it travels
//! as `powershell.exe -EncodedCommand <base64 of its UTF-16>`, a word of letters, digits, `+`, `/` and
//! `=` that no shell reads anything into; the other words (our program, the workspace, the session) are
//! single-quoted with every one of PowerShell's single-quote characters doubled ([`ps_quote`]), and a
//! word with a `"` (which PowerShell 5.1 passes to a program unescaped, splitting its argument) or a
//! control character is refused, never written.

use crate::containment::ContainReport;
use crate::model::external_events::Agent;
use crate::model::governance::{SCOPE_EXPANSION_TOOL, SELECT_INTENT_TOOL};
use std::path::Path;

/// The shell an agent's shell tool runs a command line in, so the syntax of what it is handed back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// bash (and any POSIX shell).
    Posix,
    /// Windows PowerShell and PowerShell 7.
    PowerShell,
}

impl Syntax {
    /// The shell `agent`'s tool runs on this platform: bash everywhere but Windows; there, Claude Code
    /// still runs Git for Windows' bash, and Codex, Copilot CLI, Gemini CLI, Cursor and VS Code's
    /// terminal run PowerShell.
    pub fn of(agent: Agent) -> Syntax {
        Syntax::on(agent, cfg!(windows))
    }

    /// [`Syntax::of`] on Windows (`windows`) or elsewhere.
    pub fn on(agent: Agent, windows: bool) -> Syntax {
        if windows && agent != Agent::ClaudeCode { Syntax::PowerShell } else { Syntax::Posix }
    }

    /// One word of this shell. PowerShell refuses a word with a `"` or a control character.
    pub fn quote(self, text: &str) -> Result<String, String> {
        match self {
            Syntax::Posix => Ok(quote(text)),
            Syntax::PowerShell => ps_quote(text),
        }
    }

    /// A program to run, at the start of a command line (PowerShell runs a quoted path only after
    /// its call operator `&`).
    pub fn program(self, program: &Path) -> Result<String, String> {
        let word = self.quote(&program.to_string_lossy())?;
        Ok(match self {
            Syntax::Posix => word,
            Syntax::PowerShell => format!("& {word}"),
        })
    }

    /// The command that runs `command`, written in this shell, as `chokepoint exec`'s argv.
    fn inner(self, command: &str) -> String {
        match self {
            Syntax::Posix => format!("bash -c {}", quote(command)),
            Syntax::PowerShell => format!("powershell.exe -NoProfile -NonInteractive -EncodedCommand {}", encoded_command(command)),
        }
    }

    fn inner_start(self) -> &'static str {
        match self {
            Syntax::Posix => "bash -c ",
            Syntax::PowerShell => "powershell.exe -NoProfile -NonInteractive -EncodedCommand ",
        }
    }
}

/// `'<program>' exec --workspace '<root>' --session '<session>' -- bash -c '<command>'`: the
/// agent's command, unchanged, inside our containment. bash, because every agent's shell tool runs
/// bash, but on Windows: there `syntax` says which shell, and PowerShell's line is
/// `& '<program>' exec … -- powershell.exe -NoProfile -NonInteractive -EncodedCommand <base64>`.
/// An error when a word cannot be written safely in that shell: the call must be refused then.
pub fn exec_command(program: &Path, root: &Path, session: &str, command: &str, syntax: Syntax) -> Result<String, String> {
    Ok(format!("{}{}", exec_prefix_head(program, root, session, syntax)?, syntax.inner(command)))
}

/// Everything of [`exec_command`] before the command: a command that starts with it is already
/// contained for this session (another session's prefix is not: it is contained again).
pub fn exec_prefix(program: &Path, root: &Path, session: &str, syntax: Syntax) -> Result<String, String> {
    Ok(format!("{}{}", exec_prefix_head(program, root, session, syntax)?, syntax.inner_start()))
}

fn exec_prefix_head(program: &Path, root: &Path, session: &str, syntax: Syntax) -> Result<String, String> {
    Ok(format!(
        "{} exec --workspace {} --session {} -- ",
        syntax.program(program)?,
        syntax.quote(&crate::base::shown::text(root))?,
        syntax.quote(session)?
    ))
}

/// One PowerShell word: single quotes, with each of PowerShell's single-quote characters (`'` and
/// the typographic `‘ ’ ‚ ‛`, which it reads as `'` too) doubled. A `"` or a control character is
/// refused: Windows PowerShell hands a program's argument with a `"` in it on unescaped, so the
/// program would read more words than were written. Two more words it does not pass whole are
/// refused too: an empty one, which it drops, and one with a space that ends in `\`, which it wraps
/// in `"…\"`, where the program reads `\"` as a quote and joins the next word to it.
pub fn ps_quote(text: &str) -> Result<String, String> {
    if let Some(c) = text.chars().find(|c| *c == '"' || c.is_control()) {
        return Err(format!("`{}` holds {c:?}, which cannot be passed safely to a program from PowerShell", text.escape_debug()));
    }
    if text.is_empty() {
        return Err("an empty word cannot be passed to a program from Windows PowerShell, which drops it".to_owned());
    }
    if text.ends_with('\\') && text.contains(' ') {
        return Err(format!(
            "`{text}` has a space and ends in `\\`, which Windows PowerShell passes on as an escaped quote: name it without the trailing `\\`"
        ));
    }
    let mut out = String::with_capacity(text.len() + 2);
    out.push('\'');
    for c in text.chars() {
        out.push(c);
        if matches!(c, '\'' | '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}') {
            out.push(c);
        }
    }
    out.push('\'');
    Ok(out)
}

/// `command` as PowerShell's `-EncodedCommand` takes it: the base64 of its UTF-16LE.
pub fn encoded_command(command: &str) -> String {
    let bytes: Vec<u8> = command.encode_utf16().flat_map(u16::to_le_bytes).collect();
    base64(&bytes)
}

/// Standard base64 with padding (RFC 4648).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Whether `command` is exactly this session's handshake from the command line, as a denial tells the
/// model to run it: `'<program>' intent select|release [--workspace '<root>'] --session '<session>'
/// [--agent A] [<intent_id>]`, nothing else (no operator, no expansion, no other program, workspace
/// or session). Such a command is not put inside containment: there its lease would be taken in the
/// command's own layer, which is never applied, and the agent would be denied again and again. It is
/// judged as the handshake by the command itself (`intent select` runs the gatekeeper's chain).
///
/// In PowerShell the line starts with its call operator, `& '<program>' intent …`, and `''` inside a
/// quoted word is one `'`.
pub fn is_own_handshake(command: &str, program: &Path, root: &Path, session: &str, syntax: Syntax) -> bool {
    let command = match syntax {
        Syntax::Posix => command,
        Syntax::PowerShell => command.trim_start().strip_prefix("& ").unwrap_or(command),
    };
    let Some(words) = plain_words(command, syntax) else { return false };
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
                // As shown (`base::shown`: without Windows' verbatim prefix) or as it is.
                if rest.next().is_none_or(|w| Path::new(w) != root && Path::new(w) != crate::base::shown::path(root)) {
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
/// [`quote`] or [`ps_quote`] writes them), separated by spaces; `None` for anything a shell would
/// read otherwise.
fn plain_words(command: &str, syntax: Syntax) -> Option<Vec<String>> {
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
                        '\'' if syntax == Syntax::PowerShell && chars.clone().next() == Some('\'') => {
                            chars.next();
                            word.push('\'');
                        }
                        '\'' => break,
                        // PowerShell reads these as `'` too: nothing plain holds them.
                        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' if syntax == Syntax::PowerShell => return None,
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
        let own = |c: &str| is_own_handshake(c, program, root, "claude:a", Syntax::Posix);
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
            exec_command(Path::new("/bin/chokepoint"), Path::new("/ws"), "claude:a", "echo 'x' > y", Syntax::Posix).unwrap(),
            r"'/bin/chokepoint' exec --workspace '/ws' --session 'claude:a' -- bash -c 'echo '\''x'\'' > y'"
        );
    }

    #[test]
    fn on_windows_claude_code_keeps_bash_and_the_others_run_powershell() {
        for agent in Agent::ALL {
            assert_eq!(Syntax::on(agent, false), Syntax::Posix, "{agent:?}");
            let windows = if agent == Agent::ClaudeCode { Syntax::Posix } else { Syntax::PowerShell };
            assert_eq!(Syntax::on(agent, true), windows, "{agent:?}");
        }
    }

    /// PowerShell's line: our words single-quoted with every kind of single quote doubled, the
    /// agent's command as base64 of its UTF-16, which decodes to the command byte for byte whatever
    /// it holds; a word PowerShell cannot pass whole is refused.
    #[test]
    fn powershell_s_line_cannot_be_broken_out_of() {
        let hostile = "echo 'x' \"y\" `$(calc) ; & whoami | % { $_ } \u{2019}z\u{2018} \n rm -r C:\\";
        let line = exec_command(
            Path::new(r"C:\Program Files\it's\chokepoint.exe"),
            Path::new("C:\\ws\\a\u{2019}b"),
            "codex:1",
            hostile,
            Syntax::PowerShell,
        )
        .unwrap();
        let (head, encoded) = line.rsplit_once(' ').unwrap();
        assert_eq!(
            head,
            "& 'C:\\Program Files\\it''s\\chokepoint.exe' exec --workspace 'C:\\ws\\a\u{2019}\u{2019}b' --session 'codex:1' -- powershell.exe -NoProfile -NonInteractive -EncodedCommand"
        );
        assert!(encoded.chars().all(|c| c.is_ascii_alphanumeric() || "+/=".contains(c)), "{encoded}");
        assert_eq!(decode_utf16_base64(encoded), hostile);
        assert!(
            line.starts_with(
                &exec_prefix(
                    Path::new(r"C:\Program Files\it's\chokepoint.exe"),
                    Path::new("C:\\ws\\a\u{2019}b"),
                    "codex:1",
                    Syntax::PowerShell
                )
                .unwrap()
            )
        );
        for session in ["a\"b", "a\nb", "a\u{0}b", ""] {
            assert!(exec_command(Path::new("C:/c.exe"), Path::new("C:/ws"), session, "dir", Syntax::PowerShell).is_err(), "{session:?}");
        }
        // Windows PowerShell wraps a word with a space in `"…"`, so a trailing `\` would escape the
        // closing quote; a root without a space, as a drive's `C:\`, is passed bare and is fine.
        assert!(exec_command(Path::new("C:/c.exe"), Path::new("C:\\my ws\\"), "s", "dir", Syntax::PowerShell).is_err());
        assert!(exec_command(Path::new("C:/c.exe"), Path::new("C:\\"), "s", "dir", Syntax::PowerShell).is_ok());
        // RFC 4648's test vectors.
        for (plain, encoded) in
            [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="), ("foobar", "Zm9vYmFy")]
        {
            assert_eq!(base64(plain.as_bytes()), encoded);
        }
    }

    #[test]
    fn a_powershell_handshake_is_recognised_only_as_its_own_words() {
        let (program, root) = (Path::new(r"C:\cp\chokepoint.exe"), Path::new(r"C:\ws"));
        let own = |c: &str| is_own_handshake(c, program, root, "codex:a'b", Syntax::PowerShell);
        assert!(own(r"& 'C:\cp\chokepoint.exe' intent select --workspace 'C:\ws' --session 'codex:a''b' INT-001"));
        for other in [
            r"& 'C:\cp\chokepoint.exe' intent select --session 'codex:ab' INT-001",
            r"& 'C:\cp\chokepoint.exe' intent select --session 'codex:a'b' INT-001",
            "& 'C:\\cp\\chokepoint.exe' intent select --session 'codex:a\u{2019}b' INT-001",
            r"& 'C:\cp\chokepoint.exe' intent select --session 'codex:a''b' INT-001; calc",
        ] {
            assert!(!own(other), "{other}");
        }
    }

    /// The test's own decoder of `-EncodedCommand` (the program's side of it).
    fn decode_utf16_base64(encoded: &str) -> String {
        const ALPHABET: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut bits = 0u32;
        let mut count = 0;
        let mut bytes = Vec::new();
        for c in encoded.chars().filter(|c| *c != '=') {
            bits = (bits << 6) | ALPHABET.find(c).unwrap() as u32;
            count += 6;
            if count >= 8 {
                count -= 8;
                bytes.push((bits >> count) as u8);
            }
        }
        let units: Vec<u16> = bytes.chunks(2).map(|b| u16::from_le_bytes([b[0], b[1]])).collect();
        String::from_utf16(&units).unwrap()
    }
}
