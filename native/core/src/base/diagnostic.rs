//! Diagnostics: what the user is told when a file we read is wrong, with where it is wrong.

use std::fmt;
use std::path::PathBuf;

/// A problem found in a file the engine reads, located precisely enough to jump to.
///
/// Lines and columns are 1-based, as editors show them; `0` means the position is unknown (for
/// instance when the file could not be read at all).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub file: PathBuf,
    pub line: u32,
    pub column: u32,
    /// A stable, machine-readable identifier such as `yaml-syntax` or `duplicate-intent`.
    pub code: &'static str,
    /// Lower-case, no trailing period, as the rest of our messages.
    pub message: String,
}

impl Diagnostic {
    pub(crate) fn from_yaml(file: PathBuf, err: &serde_norway::Error) -> Self {
        let (line, column) = err.location().map(|l| (l.line() as u32, l.column() as u32)).unwrap_or((0, 0));
        // serde's messages carry the location as text ("... at line 3 column 5, while ..."); we report
        // it in dedicated fields, so remove that one mention and keep any further context.
        let message = err.to_string().replacen(&format!(" at line {line} column {column}"), "", 1);
        Diagnostic { file, line, column, code: "yaml", message }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", crate::base::shown::path(&self.file).display())?;
        if self.line > 0 {
            write!(f, ":{}:{}", self.line, self.column)?;
        }
        write!(f, ": {} [{}]", self.message, self.code)
    }
}
