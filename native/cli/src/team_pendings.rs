//! The team's Pendings for `chokepoint approvals` on a machine where no live engine holds them:
//! read from the team's coordination database (`approvals::team`), and decided there by the same
//! compare-and-set a live engine uses, so the first answer on any machine wins and the asking
//! machine's engine settles it. Who may decide is checked as for every command that decides without
//! a live engine (`serve::deciders::check_this_process`): a person, never an agent's process.

use chokepoint_core::Engine;
use chokepoint_core::approvals::team::{Claim, Origin, TeamPendings, TeamRow};
use chokepoint_core::approvals::{Pending, PendingKind};
use chokepoint_core::serve::deciders::{Act, check_this_process};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

/// The team's database of a workspace, as its hooks.yaml and the environment name it.
pub struct TeamDesk {
    engine: Arc<Engine>,
    pendings: TeamPendings,
}

impl TeamDesk {
    /// `None` when the workspace coordinates through no team's database (or cannot be loaded).
    pub fn of(workspace: &Path) -> Option<TeamDesk> {
        let engine = Arc::new(Engine::open_for_one_call(workspace).ok()?);
        let db = Arc::clone(engine.team().db()?);
        let origin = Origin { worktree: String::new(), branch: None };
        Some(TeamDesk { engine, pendings: TeamPendings::new(db, origin) })
    }

    /// The team's open Pendings, each as `approvals list --json` prints one, with its machine.
    pub fn open(&self) -> Result<Vec<Value>, String> {
        Ok(self.pendings.open_rows().map_err(|e| e.to_string())?.iter().map(placed).collect())
    }

    pub fn get(&self, id: &str) -> Result<Option<Value>, String> {
        Ok(self.pendings.row(id).map_err(|e| e.to_string())?.as_ref().map(placed))
    }

    /// Decides the Pending `id` with `decision` (`{ "action": …, … }`): checked against the kind's
    /// actions first, then claimed in the database. The line that says what happened.
    pub fn decide(&self, id: &str, decision: &Value, by: &str) -> Result<String, String> {
        let decider = check_this_process(&self.engine, Act::Decide)?;
        let by = if by.is_empty() { decider.by() } else { by.to_owned() };
        let row = self.pendings.row(id).map_err(|e| e.to_string())?.ok_or_else(|| format!("no pending `{id}` in the team's database"))?;
        if let Some(first) = decided(&row) {
            return Err(first);
        }
        // The kind's own table refuses what it does not list, as the asking engine would.
        let kind = PendingKind::parse(&row.kind).map_err(|e| e.to_string())?;
        let mut pending = Pending::new(kind, row.subject.clone(), row.triggered_by.clone()).map_err(|e| e.to_string())?;
        pending.apply_decision(decision, &by).map_err(|e| e.to_string())?;
        match self.pendings.claim(id, decision, pending.status, &by).map_err(|e| e.to_string())? {
            Claim::Won => Ok(format!(
                "pending `{id}` is {} by {by} on {}; the engine on {} that asked applies it",
                pending.status.as_str(),
                self.pendings.machine(),
                row.machine
            )),
            Claim::Lost(row) => Err(decided(&row).unwrap_or_else(|| format!("pending `{id}` was decided first by someone else"))),
            Claim::Expired => Err(format!("pending `{id}` timed out before this decision; the agent was refused")),
            Claim::Missing => Err(format!("no pending `{id}` in the team's database")),
        }
    }
}

/// Who decided `row` first, if anyone did, as the refusal of a later decision says it.
fn decided(row: &TeamRow) -> Option<String> {
    row.decision.as_ref()?;
    Some(format!(
        "pending `{}` was decided first by {} on {} ({}); the first answer counts",
        row.id,
        row.decided_by.as_deref().unwrap_or("someone"),
        row.decided_machine.as_deref().unwrap_or("another machine"),
        row.status.as_deref().unwrap_or("decided")
    ))
}

/// A row as `approvals` prints a Pending: `PendingDict`'s fields, its machine, worktree and branch.
fn placed(row: &TeamRow) -> Value {
    let mut pending = row.to_json();
    if let Some(object) = pending.as_object_mut() {
        object.insert("worktree".into(), row.worktree.clone().into());
        object.insert("branch".into(), row.branch.clone().into());
    }
    pending
}
