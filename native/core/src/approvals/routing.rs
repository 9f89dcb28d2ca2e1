//! Who answers a Pending: the routes, and the one function that picks a route.
//!
//! The order, pinned by `tests/approvals.rs`: a caller that asked for review gets the Pending back
//! (`caller`); a Pending opened by work running inside a handler is approved at once (`guard`, so a
//! handler never re-enters the handlers); otherwise the handler registered for the kind, else the one
//! registered for `*`; otherwise the configured default (`approvals.default`, built-in `human`).
//! Registrations by the host override hooks.yaml's, key by key: a kind's entry beats `*` whichever
//! side each came from.

use super::kind::PendingKind;
use crate::approvals::config::ApprovalRoute;
use std::collections::BTreeMap;
use std::fmt;

/// The fallback key of the handler table.
pub const ANY_KIND: &str = "*";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// Returned to the caller, who asked to review it.
    Caller,
    /// The human, in the sidebar.
    Human,
    /// The configured reviewing model.
    Reviewer,
    /// Approved at once by the core.
    AutoApprove,
    /// Rejected at once by the core.
    AutoDeny,
    /// A handler the host registered by name.
    Handler(String),
    /// Opened inside a handler: approved at once (the recursion guard).
    Guard,
}

impl Route {
    /// The route a handler name stands for: a built-in route by its name, any other a host handler.
    pub fn from_handler(name: &str) -> Route {
        match name {
            "human" => Route::Human,
            "reviewer" => Route::Reviewer,
            "auto-approve" => Route::AutoApprove,
            "auto-deny" => Route::AutoDeny,
            other => Route::Handler(other.strip_prefix("handler:").unwrap_or(other).to_owned()),
        }
    }

    /// The name the handler table shows for this route (`human`, `my-handler`).
    pub fn handler_name(&self) -> String {
        match self {
            Route::Handler(name) => name.clone(),
            other => other.to_string(),
        }
    }
}

impl From<ApprovalRoute> for Route {
    fn from(route: ApprovalRoute) -> Route {
        match route {
            ApprovalRoute::Human => Route::Human,
            ApprovalRoute::Reviewer => Route::Reviewer,
            ApprovalRoute::AutoApprove => Route::AutoApprove,
            ApprovalRoute::AutoDeny => Route::AutoDeny,
        }
    }
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Route::Caller => f.write_str("caller"),
            Route::Human => f.write_str("human"),
            Route::Reviewer => f.write_str("reviewer"),
            Route::AutoApprove => f.write_str("auto-approve"),
            Route::AutoDeny => f.write_str("auto-deny"),
            Route::Handler(name) => write!(f, "handler:{name}"),
            Route::Guard => f.write_str("guard"),
        }
    }
}

/// The handler table in effect: hooks.yaml's entries with the host's registrations over them.
pub fn merged_handlers(configured: &BTreeMap<String, ApprovalRoute>, registered: &BTreeMap<String, Route>) -> BTreeMap<String, Route> {
    let mut handlers: BTreeMap<String, Route> = configured.iter().map(|(k, r)| (k.clone(), Route::from(*r))).collect();
    handlers.extend(registered.iter().map(|(k, r)| (k.clone(), r.clone())));
    handlers
}

/// Picks the route of a Pending of `kind` (see the module's order).
pub fn route(review: bool, in_handler: bool, kind: PendingKind, handlers: &BTreeMap<String, Route>, default: ApprovalRoute) -> Route {
    if review {
        return Route::Caller;
    }
    if in_handler {
        return Route::Guard;
    }
    handlers.get(kind.as_str()).or_else(|| handlers.get(ANY_KIND)).cloned().unwrap_or_else(|| default.into())
}
