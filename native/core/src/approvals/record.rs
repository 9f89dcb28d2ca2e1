//! The trace of Pendings: the ledger record (`RecordKind::Approval`) of each thing that happens to
//! one. A Pending leaves at least two: `open` and its outcome (`decision`, which covers timeouts and
//! the automatic routes); `edit` for each change of its subject and `warning` for a handler that
//! returned without deciding, and `escalation` for a Pending handed to another route (the reviewer
//! to the human, with its reasoning), come in between. The subject itself is not kept in the ledger (it may
//! hold file contents), only its digest, as for tool inputs. Outcomes are enqueued for a prompt sync;
//! opens and edits lazily (`ledger::writer`'s `LAZY_SYNC`). The decision's record is queued before the
//! Pending's waiters wake (`engine/settle.rs`).

use super::pending::PendingDict;
use crate::ledger::{Record, RecordKind, RecordedDecision};
use serde_json::json;

/// What happened to a Pending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Open,
    Edit,
    Decision,
    Warning,
    Escalation,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Open => "open",
            Phase::Edit => "edit",
            Phase::Decision => "decision",
            Phase::Warning => "warning",
            Phase::Escalation => "escalation",
        }
    }

    /// Whether the record should be synced promptly (an outcome lets something happen, or not), or
    /// may wait for the next sync.
    pub fn is_outcome(self) -> bool {
        matches!(self, Phase::Decision | Phase::Warning)
    }
}

/// The record of `phase` for `pending` as it is now; `action` names the edit; `text` is a warning's
/// text, or an escalation's note.
pub fn approval_record(phase: Phase, pending: &PendingDict, action: Option<&str>, text: Option<&str>) -> Record {
    let (warning, escalation_note) = match phase {
        Phase::Warning => (text, None),
        Phase::Escalation => (None, text),
        _ => (None, None),
    };
    let mut record = Record::new(RecordKind::Approval);
    record.session = pending.session_id.clone();
    record.task = pending.task_id.clone();
    record.tool =
        pending.subject.get("tool").and_then(|t| t.as_str()).filter(|_| pending.kind == super::PendingKind::ToolCall).map(str::to_owned);
    record.input_sha256 = Some(crate::ledger::record::digest_json(&pending.subject));
    let decision = pending.decision.as_ref();
    if phase == Phase::Decision {
        record.decision = Some(RecordedDecision {
            decision: pending.status.as_str().to_owned(),
            reason: decision.and_then(|d| d.reason.clone().or_else(|| d.note.clone())),
            hooks: Vec::new(),
        });
    }
    record.data = Some(json!({
        "phase": phase.as_str(),
        "pending_id": pending.id,
        "pending_kind": pending.kind.as_str(),
        "triggered_by": pending.triggered_by,
        "route": pending.route,
        "status": pending.status.as_str(),
        "action": action.or(decision.map(|d| d.action.as_str())),
        "decided_by": decision.map(|d| d.by.as_str()),
        "decided_machine": decision.and_then(|d| d.machine.as_deref()),
        "reason": decision.and_then(|d| d.reason.as_deref()),
        "note": escalation_note.or(decision.and_then(|d| d.note.as_deref())),
        "save": decision.is_some_and(|d| d.save),
        "warning": warning,
    }));
    record
}
