//! The live engine's listener where this build has no transport for it: every platform with neither
//! a Unix socket nor a Windows named pipe (`server.rs` listens on both). There [`Server::start`]
//! refuses and says so, nothing listens, and every hook judges alone
//! (`client.rs`): the same answers, without the loaded engine to share and without a person to show
//! an ask to, as when no engine is up on Linux.

use std::sync::Arc;

pub use super::call::{Limits, ServeOptions};
use super::endpoint::Endpoint;
use super::error::ServeError;
use crate::engine::engine::Engine;

pub use super::call::ASK_MARGIN;
pub use super::http::READ_TIMEOUT;

/// Why there is no server here (said in `endpoint.rs`, which the client reads too).
pub use super::endpoint::UNAVAILABLE;

/// A running server: none can be made on this platform.
#[derive(Debug)]
pub struct Server {
    never: std::convert::Infallible,
}

impl Server {
    /// Refused: see [`UNAVAILABLE`].
    pub fn start(engine: Arc<Engine>, options: ServeOptions) -> Result<Server, ServeError> {
        let endpoint = Endpoint::for_workspace(engine.sidecar().workspace_root());
        Server::start_at(engine, endpoint, options)
    }

    /// Refused: see [`UNAVAILABLE`].
    pub fn start_at(_engine: Arc<Engine>, _endpoint: Endpoint, _options: ServeOptions) -> Result<Server, ServeError> {
        Err(UNAVAILABLE.to_owned().into())
    }

    pub fn endpoint(&self) -> &Endpoint {
        match self.never {}
    }

    pub fn http_url(&self) -> &str {
        match self.never {}
    }

    pub fn access_file(&self) -> &std::path::Path {
        match self.never {}
    }

    pub fn served(&self) -> u64 {
        match self.never {}
    }

    pub fn refused(&self) -> u64 {
        match self.never {}
    }

    pub fn stop(&mut self) {
        match self.never {}
    }
}
