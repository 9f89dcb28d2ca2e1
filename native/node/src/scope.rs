//! Intents and their scope: who holds which intent (leases across processes), releasing one, and
//! granting an approved scope expansion outside an ask (an ask's grant is `settlePending`'s). Leases
//! cross with where their holder works (machine, worktree, branch); `coordination()` says what the
//! agents coordinate on as of the gatekeeper's last operation, for the status bar.

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
    /// The machine the holder runs on (`CHOKEPOINT_MACHINE`, else its host name); absent on a lease
    /// an older Chokepoint took.
    pub machine: Option<String>,
    /// Unix milliseconds.
    pub since: f64,
    pub expires: f64,
}

impl From<core::scope::leases::Lease> for JsIntentHolder {
    fn from(l: core::scope::leases::Lease) -> Self {
        // Every field named, so one the core adds does not compile here until it is carried or left
        // out with a reason: the fencing token and the last renewal are the gatekeeper's bookkeeping.
        let core::scope::leases::Lease {
            intent,
            session,
            agent,
            checkout,
            machine,
            version: _,
            acquired_at_ms,
            renewed_at_ms: _,
            expires_at_ms,
        } = l;
        let (worktree, worktree_root, branch) = match checkout {
            Some(core::scope::leases::Checkout { worktree, root, branch }) => (Some(worktree), Some(root), branch),
            None => (None, None, None),
        };
        JsIntentHolder {
            intent_id: intent,
            session_id: session,
            agent_id: agent,
            worktree,
            worktree_root,
            branch,
            machine,
            since: acquired_at_ms as f64,
            expires: expires_at_ms as f64,
        }
    }
}

/// The coordination state, as of the gatekeeper's last operation (the status bar shows it).
#[napi(object, js_name = "Coordination")]
pub struct JsCoordination {
    /// `off` (this repository's own state), `team` (the team's PostgreSQL database),
    /// `local-fallback` (this machine alone while the team's cannot be reached), `broken` (the team's
    /// setting cannot work: every write that needs a lease is denied).
    #[napi(ts_type = "CoordinationModeName")]
    pub mode: String,
    /// The database's URL without its password (`team`, `local-fallback`).
    pub database: Option<String>,
    /// The repository's name in the database (`team`).
    pub namespace: Option<String>,
    /// This machine's name in its rows (`team`).
    pub machine: Option<String>,
    /// Why: the fallback's note (`local-fallback`) or the setting's failure (`broken`).
    pub cause: Option<String>,
}

impl From<core::scope::gatekeeper::CoordinationState> for JsCoordination {
    fn from(state: core::scope::gatekeeper::CoordinationState) -> Self {
        use core::scope::gatekeeper::CoordinationState as S;
        let none = JsCoordination { mode: state.as_str().to_owned(), database: None, namespace: None, machine: None, cause: None };
        match state {
            S::Off => none,
            S::Team { database, namespace, machine } => {
                JsCoordination { database: Some(database), namespace: Some(namespace), machine: Some(machine), ..none }
            }
            S::LocalFallback { database, cause } => JsCoordination { database: Some(database), cause: Some(cause), ..none },
            S::Broken { message } => JsCoordination { cause: Some(message), ..none },
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

    /// What the workspace's agents coordinate on (this repository's state, a team's database, this
    /// machine alone while the team's cannot be reached, or a setting that cannot work), as of the
    /// gatekeeper's last operation: it never connects.
    #[napi(catch_unwind)]
    pub fn coordination(&self) -> JsCoordination {
        self.inner.gatekeeper().coordination().into()
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
        let expansion = core::scope::expansion::Expansion {
            session: expansion.session_id,
            intent: expansion.intent_id,
            paths: expansion.paths,
            justification: expansion.justification,
            approved_by: expansion.approved_by,
            approved_at_ms: core::base::clock::now_ms(),
        };
        self.inner.gatekeeper().approve_expansion(&expansion, save).map_err(as_error(Code::Scope))
    }
}
