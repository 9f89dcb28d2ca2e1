//! A task claimed by an agent: the per-type allowlist checked (`scope::claims`, the same check the
//! gatekeeper makes when an agent selects an intent of a type) and the claim recorded in the ledger.
//!
//! `Engine::claim_task` (`chokepoint task claim`) records `claimed` or `refused`, durable before it
//! returns, and fails when it cannot record; the refusal's text is the check's, the same for all its
//! callers (`scope/claims.rs`).

use crate::engine::engine::{Engine, EngineError};
use crate::ledger::{Record, RecordKind, RecordedDecision};
use crate::scope::claims::ClaimRefusal;

/// The record's decision for an accepted claim.
pub const CLAIMED: &str = "claimed";
/// The record's decision for a refused one.
pub const REFUSED: &str = "refused";

/// An agent's claim of a task of a type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub agent: String,
    pub task_type: String,
    pub task: Option<String>,
}

impl Engine {
    /// Checks a claim against the type's allowlist and records the verdict (a `lifecycle` record
    /// deciding `claimed` or `refused`, `data.task_type`), durable before this returns. `Ok(Err)` is a
    /// refusal; an undeclared type is refused without a record (nothing was claimed of anything).
    /// `Err` when the configuration does not load or the verdict cannot be recorded: an accepted claim
    /// that is not in the ledger is not a claim.
    pub fn claim_task(&self, claim: &Claim) -> Result<Result<(), ClaimRefusal>, EngineError> {
        if !self.info().diagnostics.is_empty() || !self.runs_good_configuration() {
            return Err("the configuration does not load; fix it first (`chokepoint config check`)".to_owned().into());
        }
        let allowlists = self.allowlists();
        if let Err(unknown) = allowlists.known(&claim.task_type) {
            return Ok(Err(unknown));
        }
        let verdict = allowlists.check(&claim.task_type, Some(&claim.agent));
        let mut record = Record::new(RecordKind::Lifecycle);
        record.agent = Some(claim.agent.clone());
        record.task = claim.task.clone();
        record.decision = Some(RecordedDecision {
            decision: if verdict.is_ok() { CLAIMED } else { REFUSED }.to_owned(),
            reason: verdict.as_ref().err().map(ToString::to_string),
            hooks: Vec::new(),
        });
        record.data = Some(serde_json::json!({ "task_type": claim.task_type }));
        self.tracer().append(record).map_err(|e| {
            EngineError::from(match &verdict {
                Ok(()) => format!("the claim is allowed, but it could not be recorded in the trace ledger, so it does not stand: {e}"),
                Err(refusal) => format!("{refusal}; and the refusal could not be recorded in the trace ledger: {e}"),
            })
        })?;
        Ok(verdict)
    }
}
