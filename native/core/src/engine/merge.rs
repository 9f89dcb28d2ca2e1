//! Merge-side runs: the chain of a merge-side event (`BeforeMerge`, `AfterMerge`, `AfterSubmit`) for a
//! task of a type, run from a CI job or a merge queue (`chokepoint run`), judged through the engine's
//! one judging path (`evaluate_async`: the chain resolved task type → project → default, recorded in
//! the ledger) and summarised per hook of that chain: SUCCESS, FAILURE or SKIP, with the reason and
//! the remediation a person or an agent acts on.
//!
//! A run never reports success on our account: a configuration that does not load, an undeclared task
//! type or intent, a record that cannot be made durable, or a run from inside a running hook is a
//! [`MergeRunError`], not a report.
//!
//! **Merge-side runs never pass on our account** (`Engine::run_merge_side`). The event is judged by
//! `evaluate_async` like any other (the record carries task, intent and `data.task_type`, as every
//! record of a typed event does), then summarised over the resolved chain: the applying hooks ran in
//! order up to the first that ended it (`SUCCESS` allow; `FAILURE` deny, failed closed, or ask, since
//! nobody answers an ask there; `SKIP` failed open); the rest are `SKIP` (not matching, or not
//! reached). Besides the cases above, an undeclared type (a typo must not fall through to the
//! project's weaker chain), a ledger that cannot be opened before the run, a deny no hook of the chain
//! made, or a chain that changed while it ran are errors too. A type that declares the event with no
//! hooks (`BeforeMerge: []`) has an empty chain: that is how a type is exempted from a project's
//! merge gate.

use crate::base::diagnostic::Diagnostic;
use crate::engine::engine::Engine;
use crate::model::decision::{Decision, OutcomeKind};
use crate::model::event::{Event, EventKind};
use std::sync::Arc;

/// The events a merge-side run judges: the scheduler's side of a task's life (design note 004).
pub const MERGE_SIDE: [EventKind; 3] = [EventKind::BeforeMerge, EventKind::AfterMerge, EventKind::AfterSubmit];

/// What to run: one merge-side event of one task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeRun {
    pub event: EventKind,
    /// A `task_types` key of hooks.yaml.
    pub task_type: String,
    pub task: Option<String>,
    /// An intent of active_intents.yaml the task serves; recorded with the run.
    pub intent: Option<String>,
    /// The hook depth of the caller (`CHOKEPOINT_HOOK_DEPTH`): a run from inside a running hook is
    /// refused, since its chain would not run.
    pub depth: u32,
}

/// One hook's part in a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookStatus {
    /// It ran and allowed.
    Success,
    /// It denied, failed closed, or asked (nobody answers an ask on the merge side): the run fails.
    Failure,
    /// It did not run (its matchers do not match the event, or an earlier hook failed), or it failed
    /// open and was recorded and skipped.
    Skip,
}

impl HookStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            HookStatus::Success => "SUCCESS",
            HookStatus::Failure => "FAILURE",
            HookStatus::Skip => "SKIP",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookResult {
    pub name: String,
    pub status: HookStatus,
    /// What the hook answered (`allow`, `deny`, `ask`, `failed_open`, `failed_closed`), when it ran.
    pub outcome: Option<&'static str>,
    /// Why it failed or was skipped.
    pub reason: Option<String>,
    /// What to do about a failure: the hook's remediation text, when it gave one.
    pub remediation: Option<String>,
    pub duration_ns: u64,
}

/// A merge-side run's result: every hook of the resolved chain, in chain order, and the verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct MergeReport {
    pub run: MergeRun,
    pub hooks: Vec<HookResult>,
    /// The chain's decision, as recorded in the ledger.
    pub decision: Decision,
}

impl MergeReport {
    /// The run passed: every hook that ran allowed (or failed open), none asked.
    pub fn passed(&self) -> bool {
        matches!(self.decision, Decision::Allow)
    }

    /// The resolved chain has no hooks at all for the event: the task type auto-accepts.
    pub fn no_hooks(&self) -> bool {
        self.hooks.is_empty()
    }
}

/// Why a run could not be made: our failure, never a verdict on the task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeRunError {
    /// hooks.yaml or active_intents.yaml does not load: the defaults standing in for it must not
    /// accept a merge.
    Configuration(Vec<Diagnostic>),
    /// Anything else, said with how to fix it.
    Refused(String),
}

impl std::fmt::Display for MergeRunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MergeRunError::Configuration(problems) => {
                for p in problems {
                    writeln!(f, "{p}")?;
                }
                write!(f, "the configuration does not load; fix it first (`chokepoint config check`)")
            }
            MergeRunError::Refused(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for MergeRunError {}

impl Engine {
    /// Runs a merge-side event's chain for a task of a type and reports every hook's part. The event
    /// is judged and recorded like any other (the record carries the task, the intent and, in
    /// `data.task_type`, the type), and the record is durable before this returns.
    pub async fn run_merge_side(&self, run: MergeRun) -> Result<MergeReport, MergeRunError> {
        if !MERGE_SIDE.contains(&run.event) {
            let names: Vec<&str> = MERGE_SIDE.iter().map(|e| e.as_str()).collect();
            return Err(MergeRunError::Refused(format!(
                "`{}` is not a merge-side event; the merge-side events are {}",
                run.event,
                names.join(", ")
            )));
        }
        if run.depth > 0 {
            return Err(MergeRunError::Refused(
                "a merge-side run was started by a hook while a chain ran; its chain would not run, so nothing is judged".to_owned(),
            ));
        }
        let info = self.info();
        if !info.diagnostics.is_empty() || !self.runs_good_configuration() {
            return Err(MergeRunError::Configuration(info.diagnostics));
        }
        self.allowlists().known(&run.task_type).map_err(|refusal| MergeRunError::Refused(refusal.to_string()))?;
        if let Some(intent) = &run.intent {
            let intents = self.intents();
            if !intents.active_intents.iter().any(|i| &i.id == intent) {
                let ids: Vec<&str> = intents.active_intents.iter().map(|i| i.id.as_str()).collect();
                let declared = if ids.is_empty() {
                    "active_intents.yaml declares none".to_owned()
                } else {
                    format!("the intents are {}", ids.join(", "))
                };
                return Err(MergeRunError::Refused(format!("there is no intent `{intent}`; {declared}")));
            }
        }
        // The ledger open before anything runs: a run that cannot be recorded is not run.
        self.tracer().ledger().map_err(|e| MergeRunError::Refused(format!("cannot record the run: {e}")))?;

        let mut event = Event::new(run.event);
        event.task_type = Some(run.task_type.clone());
        event.ids.task = run.task.clone();
        event.ids.intent = run.intent.clone();
        let plan = self.chain_plan(&event);
        let evaluation = self.evaluate_async(event, None).await;
        let hooks = summarise(&plan, &evaluation.outcomes, &evaluation.decision)?;
        // Only a gate's record is waited for by the judging path; every run's is durable here.
        self.tracer().flush().map_err(|e| {
            MergeRunError::Refused(format!(
                "the hooks ran ({}), but the run could not be recorded in the trace ledger: {e}",
                evaluation.decision.as_str()
            ))
        })?;
        if !matches!(evaluation.decision, Decision::Allow) && !hooks.iter().any(|h| h.status == HookStatus::Failure) {
            // A refusal no hook of the chain made is the engine's own.
            let reason = match &evaluation.decision {
                Decision::Deny(d) => d.reason.clone(),
                other => other.as_str().to_owned(),
            };
            return Err(MergeRunError::Refused(format!("the engine refused the run: {reason}")));
        }
        Ok(MergeReport { run, hooks, decision: evaluation.decision })
    }
}

/// Every hook of the chain with its part: the applying hooks ran in chain order until the first that
/// ended the chain (`outcomes` says how each ended), the rest did not run.
fn summarise(
    plan: &[(Arc<str>, bool)],
    outcomes: &[crate::model::decision::HookOutcome],
    decision: &Decision,
) -> Result<Vec<HookResult>, MergeRunError> {
    let changed = || MergeRunError::Refused("the configuration changed while the hooks ran; run again".to_owned());
    let mut ran = outcomes.iter();
    let mut ended = false;
    let mut results = Vec::with_capacity(plan.len());
    for (name, applies) in plan {
        let skipped = |reason: &str| HookResult {
            name: name.to_string(),
            status: HookStatus::Skip,
            outcome: None,
            reason: Some(reason.to_owned()),
            remediation: None,
            duration_ns: 0,
        };
        if !applies {
            results.push(skipped("does not apply: its `tool` or `paths` matcher matches nothing on a merge-side event"));
            continue;
        }
        if ended {
            results.push(skipped("not run: an earlier hook failed, which ends the chain"));
            continue;
        }
        let outcome = ran.next().filter(|o| o.hook == *name).ok_or_else(changed)?;
        let (status, reason, remediation) = match &outcome.kind {
            OutcomeKind::Allowed | OutcomeKind::Modified => (HookStatus::Success, None, None),
            OutcomeKind::Denied | OutcomeKind::FailedClosed(_) => {
                ended = true;
                match decision {
                    Decision::Deny(d) => (HookStatus::Failure, Some(d.reason.clone()), d.remediation.clone()),
                    _ => return Err(changed()),
                }
            }
            OutcomeKind::FailedOpen(failure) => (
                HookStatus::Skip,
                Some(format!(
                    "{failure}; it fails open, so it was recorded and skipped (`failure: closed` or `priority: critical` in hooks.yaml makes it gate)"
                )),
                None,
            ),
            OutcomeKind::Asked => {
                let asked = match decision {
                    Decision::Ask { asks } => asks.iter().find(|a| a.hook == *name).map(|a| a.reason.clone()),
                    _ => None,
                };
                (
                    HookStatus::Failure,
                    Some(format!("asks for a person's decision: {}", asked.unwrap_or_default())),
                    Some(
                        "a merge-side run has nobody to ask: make the hook allow or deny on this event, and decide before the merge"
                            .to_owned(),
                    ),
                )
            }
        };
        results.push(HookResult {
            name: name.to_string(),
            status,
            outcome: Some(outcome.kind.as_str()),
            reason,
            remediation,
            duration_ns: outcome.duration_ns,
        });
    }
    if ran.next().is_some() {
        return Err(changed());
    }
    Ok(results)
}
