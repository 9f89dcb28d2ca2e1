//! The files a patch in Codex's `apply_patch` format touches. Codex sends such a patch as its
//! `apply_patch` tool's input, or as a heredoc through its shell tool; either way the paths are only
//! inside the text, so the gatekeeper reads them here and judges the patch as one write: one file out
//! of scope refuses it whole.
//!
//! The format (codex-rs `apply-patch`): a `*** Begin Patch` line, then per file one of
//! `*** Add File: <path>`, `*** Update File: <path>` (optionally followed by `*** Move to: <path>`)
//! or `*** Delete File: <path>`, each with its hunk lines, then `*** End Patch`. Every one of those
//! paths is written (a delete and a move's source too).

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const FILE_MARKERS: [&str; 4] = ["*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: "];

crate::base::error::domain_error! {
    /// Why a patch's paths cannot be read; the gatekeeper refuses such a write rather than guess.
    PatchError
}

/// Whether `text` holds a patch at all (the start marker on a line of its own).
pub fn contains_patch(text: &str) -> bool {
    text.lines().any(|l| l.trim() == BEGIN)
}

/// Every path the patches in `text` write, in order, each once. `text` is a patch, or a shell command
/// holding one or more (`apply_patch <<'EOF' … EOF`). A patch without its end, or one that names no
/// file, is an error: a write whose paths cannot be read is not judged by guessing.
pub fn paths(text: &str) -> Result<Vec<String>, PatchError> {
    let mut out: Vec<String> = Vec::new();
    let mut inside = false;
    let mut patches = 0;
    let mut files_in_patch = 0;
    for line in text.lines() {
        // Codex tolerates indentation from heredocs; so does this reader.
        let trimmed = line.trim();
        if !inside {
            if trimmed == BEGIN {
                inside = true;
                patches += 1;
                files_in_patch = 0;
            }
            continue;
        }
        if trimmed == END {
            if files_in_patch == 0 {
                return Err(PatchError::from(String::from(
                    "the patch names no file (no `*** Add File:`, `*** Update File:` or `*** Delete File:` line)",
                )));
            }
            inside = false;
            continue;
        }
        // Hunk lines start with ' ', '+', '-' or '@@'; only the markers name files. A context line
        // whose text is a marker (' *** Add File: x') is counted too: judging a path too many can
        // refuse a patch, never let one through.
        if let Some(path) = FILE_MARKERS.iter().find_map(|m| line.trim_start().strip_prefix(m)) {
            let path = path.trim();
            if path.is_empty() {
                return Err(PatchError::from(format!("`{trimmed}` names no path")));
            }
            files_in_patch += 1;
            if !out.iter().any(|p| p == path) {
                out.push(path.to_owned());
            }
        }
    }
    if inside {
        return Err(PatchError::from(format!("the patch has no `{END}` line")));
    }
    if patches == 0 {
        return Err(PatchError::from(format!("no patch found (no `{BEGIN}` line)")));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_line_is_a_path() {
        let patch = "*** Begin Patch\n*** Add File: src/new.rs\n+fn main() {}\n*** Update File: src/lib.rs\n*** Move to: src/core.rs\n@@\n-a\n+b\n*** Delete File: old.txt\n*** End Patch\n";
        assert_eq!(paths(patch).unwrap(), ["src/new.rs", "src/lib.rs", "src/core.rs", "old.txt"]);
    }

    #[test]
    fn a_heredoc_through_the_shell_is_read_too() {
        let command = "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: /ws/a.txt\n@@\n-x\n+y\n*** End Patch\nEOF\n";
        assert!(contains_patch(command));
        assert_eq!(paths(command).unwrap(), ["/ws/a.txt"]);
    }

    #[test]
    fn hunk_lines_that_look_like_markers_are_not_paths() {
        // An added line whose text is a marker starts with '+', so it is not one.
        let patch = "*** Begin Patch\n*** Add File: notes.md\n+*** Add File: /etc/passwd\n*** End Patch";
        assert_eq!(paths(patch).unwrap(), ["notes.md"]);
    }

    #[test]
    fn a_patch_that_cannot_be_read_is_an_error() {
        assert!(paths("*** Begin Patch\n*** Add File: a\n+x\n").unwrap_err().message().contains("End Patch"));
        assert!(paths("*** Begin Patch\n*** End Patch\n").unwrap_err().message().contains("names no file"));
        assert!(paths("echo hi").unwrap_err().message().contains("no patch"));
        assert!(paths("*** Begin Patch\n*** Add File:   \n*** End Patch").is_err());
    }
}
