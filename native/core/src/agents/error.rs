//! The agents layer's failures: a hook input that cannot be read.

crate::base::error::domain_error! {
    /// Why another agent's hook input cannot be read, for the person who set the hook up.
    InputError
}

impl InputError {
    pub(crate) fn new(message: impl Into<String>) -> InputError {
        InputError::from(message.into())
    }
}

/// Why `chokepoint init` cannot plan an agent's setup. Nothing is written when there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetupError {
    /// An agent whose configuration Chokepoint does not write (VS Code's agent reads Claude Code's).
    Unsupported(crate::model::external_events::Agent),
    /// A file that is there and cannot be read as the agent's format, where it goes wrong.
    Invalid(crate::base::diagnostic::Diagnostic),
}

impl std::fmt::Display for SetupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SetupError::Unsupported(agent) => {
                write!(f, "chokepoint does not set up {} (supported: claude, codex, gemini, copilot, cursor)", agent.as_str())
            }
            SetupError::Invalid(diagnostic) => diagnostic.fmt(f),
        }
    }
}

impl std::error::Error for SetupError {}
