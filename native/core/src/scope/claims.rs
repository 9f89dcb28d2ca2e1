//! Who may work on a task of a type: the per-type agent allowlists of hooks.yaml
//! (`task_types.<type>.agents`), and the one check every claim goes through.
//!
//! One check, one refusal text, whoever claims: `chokepoint task claim` (through `Engine::claim_task`),
//! the gatekeeper's `select_active_intent` when the intent names its `task_type` in active_intents.yaml
//! (external agents claim work that way), and the gatekeeper on the `TaskStart` of a typed task (our
//! runtime's). The check lives in this layer, below the configuration, because the gatekeeper that
//! calls it does; the configuration hands it the allowlists on every load.

use std::collections::BTreeMap;

/// The task types hooks.yaml declares, each with the agents that may work on it (empty: every agent).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Allowlists {
    types: BTreeMap<String, Vec<String>>,
}

/// Why a claim is refused. Its text is what the claimant reads, whichever way it claimed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimRefusal {
    /// The type is not declared: a typo must not open a type's work to every agent.
    UnknownType { task_type: String, declared: Vec<String> },
    /// The type's allowlist does not name the agent (or the claimant has no agent id to check).
    NotAllowed { task_type: String, agent: Option<String>, allowed: Vec<String> },
}

impl std::fmt::Display for ClaimRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClaimRefusal::UnknownType { task_type, declared } => write!(f, "unknown task type `{task_type}`; {}", declared_types(declared)),
            ClaimRefusal::NotAllowed { task_type, agent, allowed } => {
                let who = agent.as_deref().map_or("an agent without an id".to_owned(), |a| format!("agent `{a}`"));
                write!(
                    f,
                    "{who} may not work on tasks of type `{task_type}`; the agents allowed are {} (hooks.yaml `task_types.{task_type}.agents`)",
                    allowed.join(", ")
                )
            }
        }
    }
}

/// The declared task types, for a message: `the declared task types are a, b`, or that there are none.
pub fn declared_types(declared: &[String]) -> String {
    if declared.is_empty() {
        "hooks.yaml declares no task types".to_owned()
    } else {
        format!("the declared task types are {}", declared.join(", "))
    }
}

impl Allowlists {
    pub fn new(types: BTreeMap<String, Vec<String>>) -> Allowlists {
        Allowlists { types }
    }

    /// The declared task types, in order.
    pub fn declared(&self) -> Vec<String> {
        self.types.keys().cloned().collect()
    }

    /// Whether the type is declared; `Err` names the declared ones.
    pub fn known(&self, task_type: &str) -> Result<(), ClaimRefusal> {
        if self.types.contains_key(task_type) {
            Ok(())
        } else {
            Err(ClaimRefusal::UnknownType { task_type: task_type.to_owned(), declared: self.declared() })
        }
    }

    /// Whether `agent` may claim a task of `task_type`: the type is declared, and its allowlist is
    /// empty (open to every agent) or names the agent.
    pub fn check(&self, task_type: &str, agent: Option<&str>) -> Result<(), ClaimRefusal> {
        self.known(task_type)?;
        let allowed = &self.types[task_type];
        if allowed.is_empty() || agent.is_some_and(|a| allowed.iter().any(|x| x == a)) {
            return Ok(());
        }
        Err(ClaimRefusal::NotAllowed { task_type: task_type.to_owned(), agent: agent.map(str::to_owned), allowed: allowed.clone() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lists() -> Allowlists {
        Allowlists::new(BTreeMap::from([
            ("product".to_owned(), vec!["impl-1".to_owned(), "impl-2".to_owned()]),
            ("docs".to_owned(), vec![]),
        ]))
    }

    #[test]
    fn a_claim_is_checked_against_the_types_allowlist() {
        let lists = lists();
        assert_eq!(lists.check("product", Some("impl-2")), Ok(()));
        assert_eq!(lists.check("docs", Some("anyone")), Ok(()), "a type without `agents` is open to every agent");
        assert_eq!(
            lists.check("product", Some("reviewer")).unwrap_err().to_string(),
            "agent `reviewer` may not work on tasks of type `product`; the agents allowed are impl-1, impl-2 (hooks.yaml `task_types.product.agents`)"
        );
        assert_eq!(
            lists.check("product", None).unwrap_err().to_string(),
            "an agent without an id may not work on tasks of type `product`; the agents allowed are impl-1, impl-2 (hooks.yaml `task_types.product.agents`)"
        );
        assert_eq!(
            lists.check("prodcut", Some("impl-1")).unwrap_err().to_string(),
            "unknown task type `prodcut`; the declared task types are docs, product"
        );
        assert_eq!(Allowlists::default().known("x").unwrap_err().to_string(), "unknown task type `x`; hooks.yaml declares no task types");
    }
}
