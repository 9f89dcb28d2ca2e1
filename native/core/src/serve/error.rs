//! The serve layer's failures: an endpoint that cannot be trusted or bound.

crate::base::error::domain_error! {
    /// Why a workspace's engine cannot be served, or reached, for the person running it.
    ServeError
}
