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
