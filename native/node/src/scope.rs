//! Intents and their scope: who holds which intent (leases across processes), releasing one, and
//! granting an approved scope expansion outside an ask (an ask's grant is `settlePending`'s).

use crate::Engine;
use crate::errors::{Code, Result, as_error};
use chokepoint_core as core;
use napi_derive::napi;

/// Who holds an intent (a lease in the coordination database every worktree of the repository
/// shares), and where it works.
#[napi(object, js_name = "IntentHolder")]
pub struct JsIntentHolder {
    pub intent_id: String,
    pub session_id: String,
    pub agent_id: Option<String>,
    /// The git worktree the holder works in (its folder's name); absent outside a repository.
    pub worktree: Option<String>,
    /// That worktree's root folder.
    pub worktree_root: Option<String>,
    /// The branch checked out there when it took the intent (`detached at <hash>` for a detached HEAD).
    pub branch: Option<String>,
    /// Unix milliseconds.
    pub since: f64,
    pub expires: f64,
}

impl From<core::leases::Lease> for JsIntentHolder {
    fn from(l: core::leases::Lease) -> Self {
        let (worktree, worktree_root, branch) = match l.checkout {
            Some(c) => (Some(c.worktree), Some(c.root), c.branch),
            None => (None, None, None),
        };
        JsIntentHolder {
            intent_id: l.intent,
            session_id: l.session,
            agent_id: l.agent,
            worktree,
            worktree_root,
            branch,
            since: l.acquired_at_ms as f64,
            expires: l.expires_at_ms as f64,
        }
    }
}

/// An approved `scope_expansion_request`.
#[napi(object, js_name = "ScopeExpansion")]
pub struct JsScopeExpansion {
    pub session_id: String,
    pub intent_id: String,
    pub paths: Vec<String>,
    pub justification: String,
    /// Who approved it: `human`, a policy's name, a reviewer.
    pub approved_by: String,
    /// Also add the paths to the intent's owned_scope in active_intents.yaml.
    pub save: Option<bool>,
}

#[napi]
impl Engine {
    /// The intent a session holds, as every process on the workspace sees it; null if none.
    #[napi(catch_unwind)]
    pub fn selected_intent(&self, session_id: String) -> Option<String> {
        self.inner.gatekeeper().selected(&session_id)
    }

    /// Who holds which intent now, across every process on the workspace and every worktree of its
    /// repository.
    #[napi(catch_unwind)]
    pub fn intent_holders(&self) -> Result<Vec<JsIntentHolder>> {
        let holders = self.inner.gatekeeper().holders().map_err(as_error(Code::Scope))?;
        Ok(holders.into_iter().map(Into::into).collect())
    }

    /// Releases the intent a session holds; returns how many leases were released (0 or 1).
    #[napi(catch_unwind)]
    pub fn release_intent(&self, session_id: String) -> Result<u32> {
        self.inner.gatekeeper().release(&session_id).map(|n| n as u32).map_err(as_error(Code::Scope))
    }

    /// Records an approved scope expansion (and, with `save`, writes it into active_intents.yaml).
    /// Throws (`ESCOPE`) with the reason when the paths cannot be granted (governance files, outside
    /// the workspace, an invalid glob).
    #[napi(catch_unwind)]
    pub fn approve_scope_expansion(&self, expansion: JsScopeExpansion) -> Result<()> {
        let save = expansion.save.unwrap_or(false);
        let expansion = core::scope_expansion::Expansion {
            session: expansion.session_id,
            intent: expansion.intent_id,
            paths: expansion.paths,
            justification: expansion.justification,
            approved_by: expansion.approved_by,
            approved_at_ms: core::clock::now_ms(),
        };
        self.inner.gatekeeper().approve_expansion(&expansion, save).map_err(as_error(Code::Scope))
    }
}
