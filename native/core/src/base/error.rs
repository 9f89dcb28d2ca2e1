//! How a layer declares its error type when what callers need from a failure is its layer and a
//! sentence for a person (lower-case, no final period), not a case to match on: the index, the
//! scope's stores, the trace. Layers whose callers do branch on the failure (the ledger's writer,
//! approvals) have enums of their own.

/// Declares `pub struct $name`: a domain's failure, with its message. `From<String>` lets the
/// domain's own code build one with `?` and `format!`; `From<$name> for String` lets a caller that
/// reports failures as text keep doing so.
macro_rules! domain_error {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct $name(String);

        impl $name {
            /// What went wrong, for a person.
            pub fn message(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl std::error::Error for $name {}

        impl From<String> for $name {
            fn from(message: String) -> Self {
                $name(message)
            }
        }

        impl From<$name> for String {
            fn from(error: $name) -> String {
                error.0
            }
        }
    };
}

pub(crate) use domain_error;
