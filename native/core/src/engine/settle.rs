//! Asks settled in the core: an ask opens its Pending (`open_ask`, the subject built by
//! `approvals::ask`), and one call (`settle`) waits for the decision, makes the approval durable,
//! applies what it grants, and says what the agent does next. Two invariants live here, not in a
//! host: an approval is durable before what it allows happens (write-ahead, as for a gate), and an
//! approved scope expansion is granted.

use super::judge::Engine;
use crate::approvals::{ApprovalError, Ask, Next, Opened, PendingKind, Settlement};
use crate::scope::expansion::Expansion;
use serde_json::Value;
use std::sync::Arc;

impl Engine {
    /// Opens the Pending of an ask and routes it; the automatic routes have decided it on return.
    pub fn open_ask(&self, ask: Ask) -> Result<Opened, ApprovalError> {
        self.approvals().open(ask.into_request()?)
    }

    /// Waits (without holding a thread) until the Pending `id` is decided or times out, then makes
    /// its approval durable and applies it. Never fails: whatever goes wrong (an unknown Pending, a
    /// ledger that cannot sync, a grant the scope refuses) is a refusal that says why.
    pub async fn settle(self: &Arc<Self>, id: &str) -> Settlement {
        let pending = match self.approvals().wait(id, None).await {
            Ok(pending) => pending,
            Err(e) => return Settlement::unknown(id, &e),
        };
        let settlement = Settlement::of(pending);
        if settlement.next == Next::Refuse {
            return settlement;
        }
        // The decision's record was queued when it was taken; the sync blocks, so it runs on a
        // blocking thread of the runtime, never on the caller's.
        let engine = Arc::clone(self);
        let durable = tokio::task::spawn_blocking(move || engine.tracer().flush()).await;
        let failure = match durable {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(e.to_string()),
            Err(e) => Some(e.to_string()),
        };
        if let Some(e) = failure {
            return settlement.refused(format!("the approval could not be recorded in the trace ledger: {e}"));
        }
        if settlement.next == Next::Granted
            && let Err(e) = self.grant(&settlement)
        {
            return settlement.refused(format!("the expansion could not be granted: {e}"));
        }
        settlement
    }

    /// Applies an approved expansion: its paths as decided (the decider may have edited them).
    fn grant(&self, settlement: &Settlement) -> Result<(), crate::scope::error::ScopeError> {
        let pending = &settlement.pending;
        debug_assert_eq!(pending.kind, PendingKind::ScopeExpansion);
        let subject = &pending.subject;
        let text = |key: &str| subject.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
        let paths = subject.get("paths").and_then(Value::as_array).map(|p| p.iter().filter_map(Value::as_str).map(str::to_owned).collect());
        let expansion = Expansion {
            session: pending.session_id.clone().unwrap_or_default(),
            intent: text("intent_id"),
            paths: paths.unwrap_or_default(),
            justification: text("justification"),
            approved_by: settlement.by.clone(),
            approved_at_ms: crate::base::clock::now_ms(),
        };
        let save = pending.decision.as_ref().is_some_and(|d| d.save);
        self.gatekeeper().approve_expansion(&expansion, save)
    }
}
