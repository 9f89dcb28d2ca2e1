//! Asks settled in the core: an ask opens its Pending (`open_ask`, the subject built by
//! `approvals::ask`), and one call (`settle`) waits for the decision, makes the approval durable,
//! applies what it grants, and says what the agent does next. Two invariants live here, not in a
//! host: an approval is durable before what it allows happens (write-ahead, as for a gate), and an
//! approved scope expansion is granted.

use super::engine::Engine;
use crate::approvals::config::AskFallback;
use crate::approvals::{ApprovalError, Ask, Lapse, Next, OpenRequest, Opened, Settlement, expansion};
use crate::model::external_events::Agent;
use crate::scope::error::ScopeError;
use crate::scope::expansion::Expansion;
use std::sync::Arc;
use std::time::Duration;

/// An ask's Pending, opened, and whether the team's database shares it with other machines.
#[derive(Debug)]
pub struct SharedAsk {
    pub opened: Opened,
    pub shared: Result<bool, ApprovalError>,
}

impl Engine {
    /// Opens the Pending of an ask and routes it; the automatic routes have decided it on return. A
    /// Pending a person is to answer is shared with the team's database, if one is configured (a
    /// database that cannot take it leaves it to this machine's people).
    pub fn open_ask(&self, ask: Ask) -> Result<Opened, ApprovalError> {
        let opened = self.approvals().open(ask.into_request()?)?;
        let _ = self.approvals().publish(&opened.pending.id);
        Ok(opened)
    }

    /// [`Engine::open_ask`] for another agent's call: its subject also names the agent (`agent`).
    pub fn open_agent_ask(&self, ask: Ask, agent: Agent) -> Result<Opened, ApprovalError> {
        let opened = self.approvals().open(self.agent_request(ask, agent, None)?)?;
        let _ = self.approvals().publish(&opened.pending.id);
        Ok(opened)
    }

    /// The request of an ask about `agent`'s call: who waits (the agent, its session, the intent the
    /// session holds here, and its worktree: `worktree`, or this workspace's) and what the call
    /// becomes when nobody decides (`approvals.fallback`; Codex has no prompt of its own, so its call
    /// is denied either way).
    pub fn agent_request(&self, ask: Ask, agent: Agent, worktree: Option<String>) -> Result<OpenRequest, ApprovalError> {
        let mut request = ask.into_request_of(Some(agent))?;
        request.on_timeout = match self.approvals().config().fallback {
            AskFallback::Agent if agent != Agent::Codex => Lapse::AgentPrompt,
            _ => Lapse::Deny,
        };
        if let Some(asker) = request.asker.as_mut() {
            asker.intent = asker.session.as_deref().and_then(|session| {
                let holders = self.gatekeeper().holders().ok()?;
                holders.into_iter().find(|lease| lease.session == session).map(|lease| lease.intent)
            });
            asker.worktree = worktree.or_else(|| match self.sidecar().repo() {
                Some(repo) => Some(crate::scope::leases::Checkout::of(repo).worktree),
                None => self.sidecar().workspace_root().file_name().map(|n| n.to_string_lossy().into_owned()),
            });
        }
        Ok(request)
    }

    /// [`Engine::open_agent_ask`] for a call whose agent waits `within` more: the Pending's deadline,
    /// here and in the team's database. `shared` says whether the team's database took it (`Ok(false)`:
    /// none is configured, or no person is to answer it).
    pub fn open_agent_ask_within(&self, ask: Ask, agent: Agent, within: Duration) -> Result<SharedAsk, ApprovalError> {
        let mut request = self.agent_request(ask, agent, None)?;
        // A person has `approvals.timeout_seconds`, or less when the agent gives up on its hook
        // sooner: a lapse is always our answer, never the agent's timeout letting the call through.
        let configured = Duration::from_secs(self.approvals().config().timeout_seconds);
        request.timeout = Some(within.min(configured));
        let opened = self.approvals().open(request)?;
        let shared = self.approvals().publish(&opened.pending.id);
        Ok(SharedAsk { opened, shared })
    }

    /// What the write of the Pending `id` would do to its file, read now from the workspace (the card
    /// a person decides on shows it as a diff); none for an unknown Pending or one that writes no
    /// one file.
    pub fn pending_preview(&self, id: &str) -> Option<crate::approvals::Preview> {
        let pending = self.approvals().get(id)?;
        // An ask relayed from another worktree's hook (`serve::relay`) writes there: its paths are
        // relative to that workspace's root, which its subject names.
        let relayed = pending.subject.get("workspace_root").and_then(serde_json::Value::as_str).map(std::path::Path::new);
        crate::approvals::preview(pending.kind, &pending.subject, relayed.unwrap_or(self.sidecar().workspace_root()))
    }

    /// Waits (without holding a thread) until the Pending `id` is decided or times out, then makes
    /// its approval durable and applies it. Never fails: whatever goes wrong (an unknown Pending, a
    /// ledger that cannot sync, a grant the scope refuses) is a refusal that says why.
    pub async fn settle(self: &Arc<Self>, id: &str) -> Settlement {
        let pending = match self.approvals().wait(id, None).await {
            Ok(pending) => pending,
            Err(e) => return Settlement::unknown(&e),
        };
        let settlement = Settlement::of(pending);
        // The decision's record was queued before the waiters were told; made durable whatever it
        // is, so a refusal or a timeout is in the ledger too when the agent hears it. The sync
        // blocks, so it runs on a blocking thread of the runtime, never on the caller's.
        let engine = Arc::clone(self);
        let durable = match tokio::task::spawn_blocking(move || engine.tracer().flush()).await {
            Ok(flushed) => flushed.map_err(|e| e.to_string()),
            Err(panicked) => Err(panicked.to_string()),
        };
        if settlement.next == Next::Refuse {
            return settlement;
        }
        if let Err(e) = durable {
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
    fn grant(&self, settlement: &Settlement) -> Result<(), ScopeError> {
        let pending = settlement.pending.as_ref().ok_or_else(|| ScopeError::from("no pending to grant".to_owned()))?;
        let subject = expansion(pending).ok_or_else(|| ScopeError::from("the granted pending is not a scope expansion".to_owned()))?;
        let expansion = Expansion {
            session: pending.session_id.clone().unwrap_or_default(),
            intent: subject.intent_id,
            paths: subject.paths,
            justification: subject.justification.unwrap_or_default(),
            approved_by: settlement.by.clone(),
            approved_at_ms: crate::base::clock::now_ms(),
        };
        let save = pending.decision.as_ref().is_some_and(|d| d.save);
        self.gatekeeper().approve_expansion(&expansion, save)
    }
}
