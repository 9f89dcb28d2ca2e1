//! The scope layer's failures: the state database of leases and expansions, globs, and
//! active_intents.yaml when an approved expansion is written back.

crate::base::error::domain_error! {
    /// A failure of the scope layer, for a person.
    ScopeError
}
