//! Where a hook runs in its chain and what its failure means: the two properties every hook has,
//! whatever runs it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a hook runs in the chain: security gates first, post-processing last.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    Critical,
    High,
    #[default]
    Normal,
    Low,
}

crate::base::names::names!(Priority {
    Self::Critical => "critical",
    Self::High => "high",
    Self::Normal => "normal",
    Self::Low => "low",
});

/// What a hook's failure (error, timeout, crash, unreadable output) means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FailureMode {
    /// The failure is a deny with a structured reason. The default for `critical` hooks.
    Closed,
    /// The failure is recorded and the chain goes on. The default for every other priority.
    Open,
}

crate::base::names::names!(FailureMode {
    Self::Closed => "closed",
    Self::Open => "open",
});

impl FailureMode {
    /// Security gates fail closed unless told otherwise; everything else fails open.
    pub fn default_for(priority: Priority) -> FailureMode {
        if priority == Priority::Critical { FailureMode::Closed } else { FailureMode::Open }
    }
}

/// The default timeout of a command hook, in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 30;
