//! Approvals: one Pending model for every ask (a hook's `ask` on a tool call, a scope expansion, a
//! plan, a compaction under review, a submission whose hooks failed), answered by a human in the
//! sidebar, a reviewing model or a policy, through the same methods.
//!
//! - `kind.rs`: the kinds and their subjects;
//! - `actions.rs`: the one table of actions per kind with their typed arguments; the agent interface
//!   is generated from it.
//! - `pending.rs`: the Pending, its dictionary form and decision, `to_tools`, `describe_api`,
//!   `apply_decision`, `execute_tool` (both refuse what the table does not list), `validate` and
//!   `auto_retry`.
//! - `routing.rs`: who answers (caller review > recursion guard > handler for the kind > `*` >
//!   configured default).
//! - `broker.rs`: `Approvals`, the registry of one engine: open, route, decide, time out, wait,
//!   listeners and policy feedback.
//! - `record.rs`: the ledger records of Pendings.
//! - `ask.rs`: which Pending an ask opens, with the subject built from the event the chain judged.
//! - `settlement.rs`: what a decision means for the agent (`Next`) and the line its model is told.
//! - `preview.rs`: what a tool call's Pending would do to its file, for whoever decides it.
//! - `team.rs`: Pendings shared with a team's coordination database (`chokepoint.pendings`): the
//!   first answer on any machine wins (a compare-and-set), the asker settles it.
//! - `listener.rs`: the thread that hears the team's notifications (LISTEN/NOTIFY) and catches up on
//!   every connection.
//! - `config.rs`: the approvals' section of hooks.yaml (who answers, how long a Pending may wait);
//! - `error.rs`: refusals, lower-case, naming what is allowed.

mod actions;
mod ask;
mod broker;
mod error;
mod kind;
mod listener;
mod pending;
mod preview;
mod record;
mod routing;
mod settlement;
pub mod team;

pub use actions::{Action, ActionSpec};
pub use ask::Ask;
pub use broker::{Applied, Approvals, ChangeListener, EffectiveConfig, FeedbackSource, OpenRequest, Opened, Policy, RecordSink, Rejection};
pub use error::ApprovalError;
pub use kind::{
    CompactionSubject, PendingKind, PlanSubject, PlanTask, ScopeExpansionSubject, Subject, SubmitFailure, SubmitSubject, Summary,
    ToolCallSubject,
};
pub use pending::{
    Asker, Decision, Effect, Lapse, Pending, PendingDict, RetryOutcome, Retryable, Status, ToolDefinition, ValidationResult, auto_retry,
};
pub use preview::{Preview, preview};
pub use record::{Phase, approval_record};
pub use routing::{ANY_KIND, Route, route};
pub use settlement::{Next, Settlement, expansion};
pub mod config;
