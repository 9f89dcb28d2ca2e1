//! Paths as people read them. Windows' canonical form of a path is verbatim (`\\?\C:\work\app`,
//! `\\?\UNC\server\share`): right for comparing (no further parsing by Windows), wrong in a message
//! or a command line a person copies, where `C:\work\app` is the path they know. [`path`] drops
//! the verbatim prefix where the plain form means the same file (as the `dunce` crate does); the
//! comparisons keep the canonical form. Elsewhere a path is shown as it is.

use std::path::{Path, PathBuf};

/// `path` as a person reads it: without Windows' verbatim prefix where the plain form names the
/// same file; unchanged otherwise (and everywhere but Windows).
pub fn path(path: &Path) -> PathBuf {
    plain(&path.to_string_lossy()).map_or_else(|| path.to_path_buf(), PathBuf::from)
}

/// [`path`] as text.
pub fn text(path: &Path) -> String {
    self::path(path).to_string_lossy().into_owned()
}

/// The plain form of a verbatim Windows path, when it means the same: a drive (`\\?\C:\…` → `C:\…`)
/// or a share (`\\?\UNC\server\share\…` → `\\server\share\…`), no longer than `MAX_PATH`, and no
/// component that Windows would read otherwise without the prefix (`.`, `..`, a reserved device name
/// such as `NUL` or `COM1`, a trailing dot or space, a `/`).
fn plain(text: &str) -> Option<String> {
    if !cfg!(windows) {
        return None;
    }
    let (plain, rest) = if let Some(share) = text.strip_prefix(r"\\?\UNC\") {
        (format!(r"\\{share}"), share)
    } else {
        let rest = text.strip_prefix(r"\\?\")?;
        let drive = rest.as_bytes();
        if drive.len() < 3 || !drive[0].is_ascii_alphabetic() || drive[1] != b':' || drive[2] != b'\\' {
            return None;
        }
        (rest.to_owned(), &rest[3..])
    };
    const MAX_PATH: usize = 260;
    let reserved = |name: &str| {
        let stem = name.split('.').next().unwrap_or(name).trim_end().to_ascii_uppercase();
        matches!(stem.as_str(), "CON" | "PRN" | "AUX" | "NUL" | "CONIN$" | "CONOUT$")
            || (stem.len() == 4 && (stem.starts_with("COM") || stem.starts_with("LPT")) && stem.as_bytes()[3].is_ascii_digit())
    };
    let ok = plain.len() < MAX_PATH
        && !rest.contains('/')
        && rest.split('\\').filter(|c| !c.is_empty()).all(|c| c != "." && c != ".." && !c.ends_with(['.', ' ']) && !reserved(c));
    ok.then_some(plain)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg_attr(not(windows), ignore = "a verbatim path is Windows' (elsewhere every path is shown as it is)")]
    fn a_verbatim_path_is_shown_plain_where_it_means_the_same() {
        for (verbatim, shown) in [
            (r"\\?\C:\work\app", r"C:\work\app"),
            (r"\\?\c:\", r"c:\"),
            (r"\\?\UNC\server\share\app", r"\\server\share\app"),
            (r"C:\work\app", r"C:\work\app"),
            // Windows would read these otherwise without the prefix: kept verbatim.
            (r"\\?\C:\work\NUL", r"\\?\C:\work\NUL"),
            (r"\\?\C:\work\com1.txt", r"\\?\C:\work\com1.txt"),
            (r"\\?\C:\work\trailing.", r"\\?\C:\work\trailing."),
            (r"\\?\C:\work\..\app", r"\\?\C:\work\..\app"),
            (r"\\?\GLOBALROOT\Device\HarddiskVolume1", r"\\?\GLOBALROOT\Device\HarddiskVolume1"),
        ] {
            assert_eq!(text(Path::new(verbatim)), shown, "{verbatim}");
        }
        let long = format!(r"\\?\C:\{}", "a".repeat(300));
        assert_eq!(text(Path::new(&long)), long);
    }

    #[test]
    fn a_path_elsewhere_is_shown_as_it_is() {
        let canonical = std::fs::canonicalize(std::env::temp_dir()).unwrap();
        let shown = path(&canonical);
        assert!(!shown.to_string_lossy().starts_with(r"\\?\"), "{}", shown.display());
        assert_eq!(std::fs::canonicalize(&shown).unwrap(), canonical, "the shown path names the same folder");
    }
}
