//! Asks settled in the core: an ask opens its Pending (`open_ask`, the subject built by
//! `approvals::ask`), and one call (`settle`) waits for the decision, makes the approval durable,
//! applies what it grants, and says what the agent does next. Two invariants live here, not in a
//! host: an approval is durable before what it allows happens (write-ahead, as for a gate), and an
//! approved scope expansion is granted.
//!
//! `open_ask` builds the Pending from the ask: its kind from the event and tool, its subject from the
//! input, `triggered_by` from `Decision::Ask`'s first asker. An external agent's ask goes through
//! `Engine::open_agent_ask`, whose subject also names the agent (`subject.agent`, `subject.tool`,
//! `subject.input`, `subject.paths`, `subject.reason`; the session is the Pending's `session_id`);
//! what the hook does with it is `agents::hook` (`ask_person`). `settle` waits for the decision
//! without a thread of its own (a future on the Pending's watch channel), makes it durable (a blocking
//! thread of the runtime syncs), applies an approved expansion's grant, and returns a `Settlement`:
//! what runs next and the line the model is told. A sync or a grant that fails makes the settlement a
//! refusal. A host never builds a subject, syncs for an approval or grants.
//!
//! **Invariant: a decision is queued before its waiters wake.** The registry tells a Pending's
//! waiters (the watch channel `wait` subscribes to) only after the decision's record went to the
//! ledger's queue, and `settle` makes it durable whatever it is: an approval before the call it
//! allows runs, a refusal or a timeout before the agent hears it (CI once caught a settle whose flush
//! ran before the record was queued).
//!
//! **Invariant: an agent's ask lapses by our hand, not the agent's.** Its Pending's deadline is the
//! smaller of `approvals.timeout_seconds` and the hook's `--deadline` less a second
//! (`Engine::open_agent_ask_within`), and the timeout `chokepoint init` writes for the agent is above
//! that deadline (`agents::setup`, `ASK_TIMEOUT_SECS`): every agent lets a call through when it gives
//! up on its hook. Pinned by
//! `setup::tests::the_hook_a_person_answers_through_waits_ten_minutes_in_every_agent` and
//! `tests/settle.rs::an_agents_ask_carries_its_deadline_its_lapse_and_who_waits_on_it`;
//! `tests/ui/chat.test.js` has VS Code's agent wait over a minute on a card and run its write once
//! approved.

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
