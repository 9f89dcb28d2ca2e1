//! The sessions working in the workspace, as the Sessions view lists them, and a
//! person's revocation of a session's lease: `sessions` (the core's read model) and `revokeLease`.

use crate::Engine;
use crate::errors::{Code, Result, as_error, invalid};
use crate::scope::JsIntentHolder;
use chokepoint_core as core;
use napi_derive::napi;

/// A person's revocation of a session's lease, which the session has not answered by selecting an
/// intent again.
#[napi(object, js_name = "LeaseRevocation")]
pub struct JsLeaseRevocation {
    pub session_id: String,
    pub intent_id: String,
    pub agent_id: Option<String>,
    /// Who revoked it and where (`alice via VS Code`).
    pub by: String,
    pub reason: Option<String>,
    /// Unix milliseconds.
    pub at: f64,
}

// The From impls below take the core's struct apart by every field, so a field the core adds is a
// compile error here until it is carried (or named as left out, with why), never silently dropped.
impl From<core::scope::leases::Revocation> for JsLeaseRevocation {
    fn from(r: core::scope::leases::Revocation) -> Self {
        // The revoked tenure's fencing token is the gatekeeper's, not the view's.
        let core::scope::leases::Revocation { session, intent, agent, version: _, by, reason, at_ms } = r;
        JsLeaseRevocation { session_id: session, intent_id: intent, agent_id: agent, by, reason, at: at_ms as f64 }
    }
}

/// One record of a session, in short.
#[napi(object, js_name = "SessionAction")]
pub struct JsSessionAction {
    pub seq: f64,
    /// RFC 3339 UTC with milliseconds.
    pub time: String,
    #[napi(ts_type = "RecordKindName")]
    pub kind: String,
    pub event: Option<String>,
    pub tool: Option<String>,
    /// What it touched: the files a write changed, a contained command, a revocation.
    pub summary: Option<String>,
    /// `allow`, `deny`, `ask`; an approval's status; `revoked` for a person's revocation.
    pub decision: Option<String>,
    pub reason: Option<String>,
    pub subagent: Option<String>,
}

impl From<core::engine::sessions::SessionAction> for JsSessionAction {
    fn from(a: core::engine::sessions::SessionAction) -> Self {
        let core::engine::sessions::SessionAction { seq, time, kind, event, tool, summary, decision, reason, subagent } = a;
        JsSessionAction { seq: seq as f64, time, kind: kind.as_str().to_owned(), event, tool, summary, decision, reason, subagent }
    }
}

/// A session working in the workspace (or another worktree of its repository): seen in the trace in
/// the last 24 hours, or holding a lease.
#[napi(object, js_name = "SessionView")]
pub struct JsSessionView {
    /// `<agent>:<its session id>` for another agent's session (`claude:…`), a plain id for ours.
    pub session_id: String,
    /// `claude`, `codex`, `gemini`, `vscode`, `copilot`, `cursor`, `chokepoint`, when known.
    pub agent_id: Option<String>,
    /// The agent's name for people (`Claude Code`, `VS Code's agent`, `Chokepoint agent`).
    pub label: String,
    pub subagents: Vec<String>,
    pub model: Option<String>,
    /// The git worktree it works in (its lease's, else the one whose trace holds its records);
    /// absent outside a repository.
    pub worktree: Option<String>,
    /// The branch checked out there (when it took its lease, else now).
    pub branch: Option<String>,
    /// The intent it holds now and until when; or, with `lease_idle`, the lease whose time is up.
    pub lease: Option<JsIntentHolder>,
    /// Its lease's time is up since `lease.expires` (its turn ended and the lease yielded, or it
    /// lapsed) and nobody took the intent: any session may take it, and this one renews it at its
    /// next call if nobody did.
    pub lease_idle: bool,
    pub revoked: Option<JsLeaseRevocation>,
    /// Newest first, at most five.
    pub actions: Vec<JsSessionAction>,
    /// Its records, allowed and denied tool calls in the last 24 hours.
    pub records: f64,
    pub allowed: f64,
    pub denied: f64,
    pub last_denial: Option<JsSessionAction>,
    /// When it last acted or renewed its lease (unix milliseconds).
    pub last_seen: Option<f64>,
}

impl From<core::engine::sessions::SessionView> for JsSessionView {
    fn from(s: core::engine::sessions::SessionView) -> Self {
        let core::engine::sessions::SessionView {
            session,
            agent,
            label,
            subagents,
            model,
            lease,
            lease_idle,
            checkout,
            revoked,
            actions,
            records,
            allowed,
            denied,
            last_denial,
            last_seen_ms,
        } = s;
        // The checkout's root folder is left out: the view names the worktree (the lease carries its root).
        let (worktree, branch) =
            checkout.map_or((None, None), |core::scope::leases::Checkout { worktree, root: _, branch }| (Some(worktree), branch));
        JsSessionView {
            session_id: session,
            agent_id: agent,
            label,
            subagents,
            model,
            worktree,
            branch,
            lease: lease.map(Into::into),
            lease_idle,
            revoked: revoked.map(Into::into),
            actions: actions.into_iter().map(Into::into).collect(),
            records: records as f64,
            allowed: allowed as f64,
            denied: denied as f64,
            last_denial: last_denial.map(Into::into),
            last_seen: last_seen_ms.map(|ms| ms as f64),
        }
    }
}

#[napi]
impl Engine {
    /// The sessions working in the workspace, most recently active first: every session with a
    /// trace record in the last 24 hours (at most 50), and every session holding a lease or revoked.
    /// An ungoverned workspace has none. Throws (`ELEDGER`) when the trace's index or the lease
    /// table cannot be read.
    #[napi(catch_unwind)]
    pub fn sessions(&self) -> Result<Vec<JsSessionView>> {
        let sessions = self.inner.sessions().map_err(as_error(Code::Ledger))?;
        Ok(sessions.into_iter().map(Into::into).collect())
    }

    /// A person revokes a session's lease: released and remembered in the workspace's state database,
    /// so the session's next write is denied saying who revoked it and why (in this engine at once,
    /// in another process within a second), and recorded in the trace. `by` names the person and
    /// where (`alice via VS Code`). Null when the session held no lease. Throws (`ESCOPE`) when the
    /// lease table cannot be written or the revocation cannot be recorded (the message says which).
    #[napi(catch_unwind)]
    pub fn revoke_lease(&self, session_id: String, by: String, reason: Option<String>) -> Result<Option<JsLeaseRevocation>> {
        if by.trim().is_empty() {
            return Err(invalid("who revokes the lease is not said (`by` is empty)"));
        }
        let revoked = self.inner.revoke_lease(&session_id, &by, reason.as_deref()).map_err(as_error(Code::Scope))?;
        Ok(revoked.map(Into::into))
    }
}

/// An agent's name for people (`claude` → `Claude Code`), as the Sessions view names it: for a
/// Pending whose subject names the agent that asked.
#[napi(catch_unwind)]
pub fn agent_label(agent: String) -> String {
    core::engine::sessions::label(Some(&agent))
}
