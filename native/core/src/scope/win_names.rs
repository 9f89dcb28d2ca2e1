//! What Windows does to a path's text before any file is reached, as a pure function of the text,
//! so that a spelling Windows treats as another file's (or as no file's) is judged as what it is.
//!
//! Win32 rewrites a path before the file system sees it: it takes `/` for `\`, strips trailing dots
//! and spaces from each name (`x.ts.` is `x.ts`), opens a device for a reserved name in any folder
//! (`src/NUL`, `src/con.txt`: no file is written, or the console is), and reads `name:stream` as an
//! alternate data stream of `name` (a write the file's scope would not see as the file's). A
//! `\\?\` path skips the rewriting: there `x.ts.` is a file of its own, which most tools cannot open.
//!
//! So, before the canonicaliser resolves a path on Windows (`canonical.rs`): the prefix forms are
//! read (`\\?\C:\…` as `C:\…`, `\\?\UNC\server\share\…` as `\\server\share\…`), a device path
//! (`\\.\…`, `\\?\GLOBALROOT…`) is refused, each name is checked, and what Win32 strips is stripped.
//! Refused, never guessed at: a reserved device name, a stream, and a trailing dot or space under
//! `\\?\`. What only the file system can answer (8.3 short names such as `PROGRA~1`, junctions) is
//! the resolution's: an existing 8.3 alias resolves to its long name there.
//!
//! Plain text in, so it is tested on every platform (`tests` below, and `tests/canonical.rs` under
//! Wine for the real file system's answers).

/// Why a path's text cannot name a file on Windows that a scope can judge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WinNameRefusal {
    /// `CON`, `NUL`, `COM1`, … (with any extension): a device, not a file.
    Device(String),
    /// `name:stream`: an alternate data stream of `name`.
    Stream(String),
    /// A name ending in a dot or a space under `\\?\`, where Win32 does not strip it.
    Trailing(String),
    /// `\\.\…` or `\\?\GLOBALROOT…`: the device namespace.
    DevicePath,
    /// `C:name`: relative to drive C's current folder, which is the process's, not the agent's.
    DriveRelative(String),
}

impl std::fmt::Display for WinNameRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WinNameRefusal::Device(name) => {
                write!(
                    f,
                    "`{name}` is a reserved device name on Windows (CON, PRN, AUX, NUL, COM0-9, LPT0-9, with any extension): no file is written; name the file otherwise"
                )
            }
            WinNameRefusal::Stream(name) => {
                write!(f, "`{name}` names an alternate data stream, whose writes a scope does not see as the file's; write the file itself")
            }
            WinNameRefusal::Trailing(name) => {
                write!(
                    f,
                    "`{name}` ends in a dot or a space under `\\\\?\\`, which makes it a file most tools cannot open; drop the `\\\\?\\` prefix or the dot"
                )
            }
            WinNameRefusal::DevicePath => write!(f, "the path is in Windows' device namespace (`\\\\.\\`), not a file of the workspace"),
            WinNameRefusal::DriveRelative(path) => {
                write!(
                    f,
                    "`{path}` is relative to a drive's current folder, which is not the agent's; give the path from the drive's root (`C:\\…`)"
                )
            }
        }
    }
}

const DEVICES: [&str; 4] = ["CON", "PRN", "AUX", "NUL"];

/// Whether `name` opens a device in any folder: a reserved base name, case ignored, whatever follows
/// its first dot, trailing spaces ignored (`con .txt` is the console too).
fn is_device(name: &str) -> bool {
    let base = name.split('.').next().unwrap_or(name).trim_end_matches(' ').to_ascii_uppercase();
    if DEVICES.contains(&base.as_str()) {
        return true;
    }
    // COM0-9 and LPT0-9, and the superscript digits Windows also takes (COM¹).
    let Some(rest) = base.strip_prefix("COM").or_else(|| base.strip_prefix("LPT")) else { return false };
    let mut chars = rest.chars();
    matches!((chars.next(), chars.next()), (Some('0'..='9' | '¹' | '²' | '³'), None))
}

/// The path as Windows reads its text: `\` separated, the verbatim prefix read, each name checked,
/// and trailing dots and spaces stripped where Win32 strips them. `.` and `..` are left for the
/// resolution (which takes `..` from the real parent).
pub fn read(raw: &str) -> Result<String, WinNameRefusal> {
    let text = raw.replace('/', "\\");
    if text.starts_with("\\\\.\\") || text.to_ascii_uppercase().starts_with("\\\\?\\GLOBALROOT") {
        return Err(WinNameRefusal::DevicePath);
    }
    let (prefix, rest, verbatim) = if let Some(unc) = strip_prefix_ignoring_case(&text, "\\\\?\\UNC\\") {
        ("\\\\".to_owned(), unc.to_owned(), true)
    } else if let Some(path) = text.strip_prefix("\\\\?\\") {
        split_root(path, true)?
    } else {
        split_root(&text, false)?
    };
    let mut names = Vec::new();
    for name in rest.split('\\') {
        if name.is_empty() || name == "." || name == ".." {
            names.push(name.to_owned());
            continue;
        }
        if name.contains(':') {
            return Err(WinNameRefusal::Stream(name.to_owned()));
        }
        if is_device(name) {
            return Err(WinNameRefusal::Device(name.to_owned()));
        }
        let stripped = name.trim_end_matches(['.', ' ']);
        if stripped.len() != name.len() && verbatim {
            return Err(WinNameRefusal::Trailing(name.to_owned()));
        }
        // A name of only dots and spaces is stripped to nothing by Win32: it names its folder.
        names.push(stripped.to_owned());
    }
    Ok(format!("{prefix}{}", names.join("\\")))
}

/// `C:\rest` as (`C:\`, `rest`), with the drive letter in upper case (Windows ignores its case);
/// `\\server\share\rest` and a relative path as they are.
fn split_root(path: &str, verbatim: bool) -> Result<(String, String, bool), WinNameRefusal> {
    let bytes = path.as_bytes();
    if bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' {
        let Some(rest) = path[2..].strip_prefix('\\') else { return Err(WinNameRefusal::DriveRelative(path.to_owned())) };
        return Ok((format!("{}:\\", (bytes[0] as char).to_ascii_uppercase()), rest.to_owned(), verbatim));
    }
    if let Some(unc) = path.strip_prefix("\\\\") {
        return Ok(("\\\\".to_owned(), unc.to_owned(), verbatim));
    }
    if let Some(rooted) = path.strip_prefix('\\') {
        return Ok(("\\".to_owned(), rooted.to_owned(), verbatim));
    }
    Ok((String::new(), path.to_owned(), verbatim))
}

fn strip_prefix_ignoring_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    (text.len() >= prefix.len() && text.is_char_boundary(prefix.len()) && text[..prefix.len()].eq_ignore_ascii_case(prefix))
        .then(|| &text[prefix.len()..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scope::canonical::Names;

    /// Windows' default volumes: case ignored, normalisation kept.
    const NTFS: Names = Names { fold_case: true, normalize: false };

    #[test]
    fn windows_spellings_of_a_path_are_read_as_its_canonical_form() {
        let canonical = "C:\\work\\ws\\src\\auth\\x.ts";
        for spelling in [
            "C:\\work\\ws\\src\\auth\\x.ts",
            "c:\\work\\ws\\src\\auth\\x.ts",
            "C:/work/ws/src/auth/x.ts",
            "C:\\work/ws\\src/auth\\x.ts",
            "C:\\WORK\\WS\\SRC\\Auth\\X.TS",
            "\\\\?\\C:\\work\\ws\\src\\auth\\x.ts",
            "\\\\?\\c:\\work\\ws\\src\\auth\\x.ts",
            "C:\\work\\ws\\src\\auth\\x.ts.",
            "C:\\work\\ws\\src\\auth\\x.ts ",
            "C:\\work\\ws\\src\\auth\\x.ts. .",
            "C:\\work\\ws\\src.\\auth \\x.ts",
        ] {
            let read = read(spelling).unwrap_or_else(|e| panic!("{spelling}: {e}"));
            assert_eq!(NTFS.key(read), NTFS.key(canonical.to_owned()), "{spelling}");
        }
        assert_eq!(read("\\\\?\\UNC\\server\\share\\ws\\x.ts").unwrap(), "\\\\server\\share\\ws\\x.ts");
        assert_eq!(read("//server/share/ws/x.ts").unwrap(), "\\\\server\\share\\ws\\x.ts");
        assert_eq!(read("src/auth/../auth/x.ts").unwrap(), "src\\auth\\..\\auth\\x.ts", "`..` is the resolution's");
        assert_eq!(read("src/AUTH~1/x.ts").unwrap(), "src\\AUTH~1\\x.ts", "an 8.3 alias is the file system's to resolve");
    }

    #[test]
    fn devices_streams_and_what_verbatim_paths_keep_are_refused() {
        for device in ["src/NUL", "src/con", "src/con.txt", "src/Con .ts", "src/aux.tar.gz", "COM1", "src/lpt9.log", "src/COM¹"] {
            assert!(matches!(read(device), Err(WinNameRefusal::Device(_))), "{device}");
        }
        for not_a_device in ["src/console.ts", "src/null.ts", "src/com10", "src/lpt", "src/nul_check.rs", "src/CON_x"] {
            assert!(read(not_a_device).is_ok(), "{not_a_device}");
        }
        for stream in ["src/x.ts:hidden", "src/x.ts::$DATA", "src:zone/x.ts", "C:\\ws\\x.ts:s"] {
            assert!(matches!(read(stream), Err(WinNameRefusal::Stream(_))), "{stream}");
        }
        assert_eq!(read("\\\\?\\C:\\ws\\x.ts."), Err(WinNameRefusal::Trailing("x.ts.".into())));
        assert_eq!(read("\\\\?\\C:\\ws\\x.ts "), Err(WinNameRefusal::Trailing("x.ts ".into())));
        assert_eq!(read("C:src\\x.ts"), Err(WinNameRefusal::DriveRelative("C:src\\x.ts".into())));
        for device_path in ["\\\\.\\C:\\ws\\x.ts", "//./pipe/x", "\\\\?\\GLOBALROOT\\Device\\HarddiskVolume1\\x"] {
            assert_eq!(read(device_path), Err(WinNameRefusal::DevicePath), "{device_path}");
        }
    }
}
