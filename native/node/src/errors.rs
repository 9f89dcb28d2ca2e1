//! The errors the binding throws: a JavaScript `Error` whose `code` says which domain refused and
//! whether the caller misused the API or the engine could not do it, so the extension branches on
//! `code`, never on a message. Expected outcomes (a deny, a configuration diagnostic) are data, not
//! errors.
//!
//! The codes: `EINVAL` (misuse), `EREFUSED` (a decision the kind's table refuses), `ELEDGER`,
//! `ESCOPE`, `EENGINE`.

use napi::bindgen_prelude::{Error, Status};

/// An error's `code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    /// The caller passed something the API does not accept (an unknown event name, a bad number).
    Invalid,
    /// A decision on a Pending that its kind's table refuses, or on a Pending no longer open.
    Refused,
    /// The trace ledger (or its index) cannot be read or written.
    Ledger,
    /// Leases, expansions or active_intents.yaml refused or failed.
    Scope,
    /// The engine failed at its own work (a chain that needs the async entry, a watcher, a panic).
    Engine,
}

impl AsRef<str> for Code {
    fn as_ref(&self) -> &str {
        match self {
            Code::Invalid => "EINVAL",
            Code::Refused => "EREFUSED",
            Code::Ledger => "ELEDGER",
            Code::Scope => "ESCOPE",
            Code::Engine => "EENGINE",
        }
    }
}

/// napi's own conversions (a wrong argument type) come as a `Status`; they are misuse.
impl From<Status> for Code {
    fn from(_: Status) -> Code {
        Code::Invalid
    }
}

pub type Result<T> = napi::Result<T, Code>;

pub fn error(code: Code, message: impl Into<String>) -> Error<Code> {
    Error::new(code, message.into())
}

/// `error` as a closure argument of `map_err`, for a domain error type with a message.
pub fn as_error<E: std::fmt::Display>(code: Code) -> impl Fn(E) -> Error<Code> {
    move |e| Error::new(code, e.to_string())
}

pub fn invalid(message: impl Into<String>) -> Error<Code> {
    error(Code::Invalid, message)
}

/// A napi conversion error (it carries a `Status`) with the binding's code.
pub fn from_napi(e: Error) -> Error<Code> {
    Error::new(Code::Invalid, e.reason.clone())
}
