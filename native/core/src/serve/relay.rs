//! An ask relayed between the worktrees of one repository: a hook that judged a tool call alone in
//! one worktree (no live engine serves it) and whose chain asks takes the ask to the live engine of
//! another worktree (typically VS Code on the main checkout), which opens the Pending in its own
//! Approvals, records its phases in its own ledger, and answers with its settlement once a person
//! decides or the hook's deadline (less [`ASK_MARGIN`]) passes.
//!
//! Why only the ask, and not the whole call: a live engine is loaded for its own worktree's root and
//! configuration, so it cannot judge another worktree's call; the asker has judged it already with
//! its own, and judges again with its own a person's modified input. What is shared is a person's
//! decision (and the coordination database, where an approved expansion lands for both).
//!
//! Found as `chokepoint approvals` finds them: each worktree's endpoint from its root
//! (`Repository::worktrees`, the main checkout first), tried only when its socket exists. A gate never
//! fails open here: a relay that breaks is [`Relayed::Failed`], which the fallback answers.
//!
//! Only when the chain asks does a hook try (the allow and deny paths never look), and only a tool
//! call's ask is taken (a scope expansion would be granted by an engine whose gatekeeper never judged
//! it). `Request::Ask` carries the tool, its input as the chain left it, the paths, the hooks' asks,
//! the session, the agent, the asking worktree with its root and branch, and the milliseconds left.
//! The Pending names the worktree and branch (`subject.worktree`, `subject.branch`: its sidebar card,
//! `approvals list`), and `subject.workspace_root`, which its paths are relative to, is where
//! `Engine::pending_preview` and `approvals show` read a write's file. The engine registers the asking
//! hook's agent as an agent's process (so it cannot decide its own ask) and answers
//! `Answer::Settled` (next step, decider, reason, note, a modified input, the message), which the
//! asker applies as a local Pending's settlement (`agents::hook`'s `ask_person`).
//!
//! **Invariant: a relay never allows by itself.** No engine anywhere is today's fallback at once; a
//! relay that broke (refused, broke off or went away mid-wait, answered something else) is the
//! fallback too, with why appended to its message. `--local` relays nothing. Pinned by
//! `native/cli/tests/worktrees.rs` (`an_ask_in_a_worktree_nobody_serves_*`,
//! `the_agent_that_relayed_an_ask_cannot_decide_it`).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::call::ASK_MARGIN;
use super::client::{Unanswered, exchange};
use super::endpoint::Endpoint;
use super::protocol::{Answer, AskRequest, Request, Settled};
use crate::agents::relay::{AskRelay, Relayed};
use crate::approvals::{Ask, PendingKind};
use crate::engine::engine::Engine;
use crate::model::event::EventKind;
use crate::model::external_events::Agent;
use crate::scope::leases::Checkout;

/// The relay of one hook process: the other worktrees' live engines, asked until `until` (the
/// hook's own deadline, at which it denies by itself).
#[derive(Debug, Clone, Copy)]
pub struct ToRepository {
    until: Instant,
}

impl ToRepository {
    pub fn until(until: Instant) -> ToRepository {
        ToRepository { until }
    }
}

impl AskRelay for ToRepository {
    fn relay(&self, engine: &Engine, ask: Ask, agent: Agent) -> Relayed {
        let sidecar = engine.sidecar();
        let Some(repo) = sidecar.repo() else { return Relayed::Nobody };
        let here = canonical(sidecar.workspace_root());
        let from = Checkout::of(repo);
        for other in repo.other_workspaces() {
            let left = self.until.saturating_duration_since(Instant::now());
            let request = Request::Ask(request(&ask, agent, &from, &here, left));
            let failed = |why: String| Relayed::Failed(format!("the live engine of {}: {why}", other.display()));
            match exchange(&Endpoint::for_workspace(&other), &request, left) {
                // Not running there: the next worktree's, if any.
                Err(Unanswered::NotServed(_)) => continue,
                Err(Unanswered::Failed(why)) => return failed(why),
                Ok(Answer::Settled(settled)) => return settled_of(*settled, other),
                Ok(Answer::Refused { reason }) => return failed(format!("it refused the ask: {reason}")),
                Ok(_) => return failed("it answered something else than a settlement".into()),
            }
        }
        Relayed::Nobody
    }
}

fn canonical(path: &Path) -> std::path::PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
}

/// The request that relays `ask`, from the worktree `from`, for a hook that waits `left` more.
fn request(ask: &Ask, agent: Agent, from: &Checkout, root: &Path, left: Duration) -> AskRequest {
    AskRequest {
        agent: agent.id().to_owned(),
        tool: ask.tool.clone(),
        input: ask.input.clone(),
        paths: ask.paths.clone(),
        asked: ask.asked.clone(),
        session_id: ask.session_id.clone(),
        worktree: from.worktree.clone(),
        branch: from.branch.clone(),
        workspace_root: root.to_string_lossy().into_owned(),
        deadline_ms: u64::try_from(left.as_millis()).unwrap_or(u64::MAX),
    }
}

/// The asker's reading of the settlement it was answered (the Pending stays with its engine).
fn settled_of(settled: Settled, at: std::path::PathBuf) -> Relayed {
    let waited = Duration::from_millis(settled.waited_ms);
    Relayed::Settled { id: settled.id, settlement: Box::new(settled.settlement), waited, at }
}

/// The live engine's side: opens the relayed ask's Pending here (its subject names the agent, the
/// worktree and branch it comes from, and the asking workspace's root, where a write's diff is read), waits until the hook's deadline less [`ASK_MARGIN`]
/// from `received`, and answers with the settlement. Only a tool call's ask is taken: a scope
/// expansion would be granted here, for a gatekeeper that never judged it.
pub(crate) fn answer(engine: &Arc<Engine>, request: AskRequest, received: Instant) -> Answer {
    let refused = |reason: String| Answer::Refused { reason };
    let Some(agent) = Agent::from_id(&request.agent) else { return refused(format!("unknown agent `{}`", request.agent)) };
    let ask = Ask {
        event: EventKind::PreToolUse,
        tool: request.tool,
        input: request.input,
        paths: request.paths,
        asked: request.asked,
        session_id: request.session_id,
        task_id: None,
        review: false,
    };
    if !matches!(ask.kind(), Ok(PendingKind::ToolCall)) {
        return refused("only a tool call's ask is relayed from another worktree".into());
    }
    let mut open = match engine.agent_request(ask, agent, Some(request.worktree.clone())) {
        Ok(open) => open,
        Err(e) => return refused(e.to_string()),
    };
    open.subject["worktree"] = request.worktree.into();
    open.subject["branch"] = request.branch.into();
    open.subject["workspace_root"] = request.workspace_root.into();
    let id = match engine.approvals().open(open) {
        Ok(opened) => opened.pending.id,
        Err(e) => return refused(format!("its approval could not be opened: {e}")),
    };
    // Shown on the team's other machines too, when a team's database is shared (best effort: this
    // engine's people see it regardless).
    let _ = engine.approvals().publish(&id);
    let wait = Duration::from_millis(request.deadline_ms).saturating_sub(ASK_MARGIN).saturating_sub(received.elapsed());
    let settled = super::call::run_here(async {
        // Brings the Pending's deadline forward to the hook's: nobody decides after the agent gave up.
        let _ = engine.approvals().wait(&id, Some(wait)).await;
        engine.settle(&id).await
    });
    match settled {
        Ok(settlement) => {
            Answer::Settled(Box::new(Settled { id, settlement, waited_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX) }))
        }
        Err(e) => refused(format!("the ask could not be awaited: {e}")),
    }
}
