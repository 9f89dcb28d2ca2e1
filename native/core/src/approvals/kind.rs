//! The kinds of Pending and the subject each one carries. The table of what can be done with each
//! kind is `actions.rs`.

use super::error::ApprovalError;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What a Pending is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PendingKind {
    /// An agent's tool call that a hook escalated (`ask`).
    ToolCall,
    /// A `scope_expansion_request`: paths an intent asks to add to its owned scope.
    ScopeExpansion,
    /// A plan submitted for approval (`PlanSubmit`).
    Plan,
    /// A compaction of the prompt under review: the summaries that replace older turns.
    Compaction,
    /// A completion whose `BeforeSubmit` hooks failed.
    Submit,
}

crate::base::names::names!(PendingKind {
    Self::ToolCall => "tool_call",
    Self::ScopeExpansion => "scope_expansion",
    Self::Plan => "plan",
    Self::Compaction => "compaction",
    Self::Submit => "submit",
});

impl PendingKind {
    pub const ALL: [PendingKind; 5] =
        [PendingKind::ToolCall, PendingKind::ScopeExpansion, PendingKind::Plan, PendingKind::Compaction, PendingKind::Submit];

    pub fn parse(name: &str) -> Result<PendingKind, ApprovalError> {
        PendingKind::from_name(name).ok_or_else(|| ApprovalError::UnknownKind(name.to_owned()))
    }
}

// ---- the subjects --------------------------------------------------------------------------------

/// What a Pending is about, one shape per kind. The caller's extra fields are kept as they came
/// (`extra`), so a host can carry what its own views need (a diff, a preview) through the core.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Subject {
    ToolCall(ToolCallSubject),
    ScopeExpansion(ScopeExpansionSubject),
    Plan(PlanSubject),
    Compaction(CompactionSubject),
    Submit(SubmitSubject),
}

impl Subject {
    /// Reads a caller's subject for `kind`, checking the fields the kind requires.
    pub fn parse(kind: PendingKind, value: Value) -> Result<Subject, ApprovalError> {
        fn read<T: DeserializeOwned>(kind: PendingKind, value: Value) -> Result<T, ApprovalError> {
            serde_json::from_value(value).map_err(|e| ApprovalError::BadSubject { kind: kind.as_str(), message: e.to_string() })
        }
        let invalid = |message: String| ApprovalError::BadSubject { kind: kind.as_str(), message };
        Ok(match kind {
            PendingKind::ToolCall => Subject::ToolCall(read(kind, value)?),
            PendingKind::ScopeExpansion => {
                let subject: ScopeExpansionSubject = read(kind, value)?;
                check_scope_paths(&subject.paths).map_err(invalid)?;
                Subject::ScopeExpansion(subject)
            }
            PendingKind::Plan => {
                let subject: PlanSubject = read(kind, value)?;
                check_tasks(&subject.tasks).map_err(invalid)?;
                Subject::Plan(subject)
            }
            PendingKind::Compaction => Subject::Compaction(read(kind, value)?),
            PendingKind::Submit => Subject::Submit(read(kind, value)?),
        })
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a subject always serialises")
    }

    /// The subject in one line, for `describe_api` and warnings.
    pub fn summary(&self) -> String {
        match self {
            Subject::ToolCall(s) => {
                let paths = s.paths.as_deref().filter(|p| !p.is_empty()).map(|p| format!(" on {}", p.join(", "))).unwrap_or_default();
                let reason = s.reason.as_deref().map(|r| format!(" (escalated: {r})")).unwrap_or_default();
                format!("tool `{}`{paths}{reason}", s.tool)
            }
            Subject::ScopeExpansion(s) => format!(
                "intent `{}` asks for {}{}",
                s.intent_id,
                s.paths.join(", "),
                s.justification.as_deref().map(|j| format!(" because {j}")).unwrap_or_default()
            ),
            Subject::Plan(s) => format!(
                "plan{} of {} task(s): {}",
                s.title.as_deref().map(|t| format!(" `{t}`")).unwrap_or_default(),
                s.tasks.len(),
                s.tasks.iter().map(|t| t.title.as_deref().unwrap_or(&t.prompt)).collect::<Vec<_>>().join("; ")
            ),
            Subject::Compaction(s) => format!(
                "{} summaries replacing {} tokens with about {} (budget {}){}",
                s.summaries.len(),
                s.original_tokens,
                s.estimated_tokens,
                s.budget,
                s.guidance.as_deref().map(|g| format!("; guidance: {g}")).unwrap_or_default()
            ),
            Subject::Submit(s) => format!(
                "submission with {} failing hook(s): {}",
                s.failures.len(),
                s.failures.iter().map(|f| format!("{} ({})", f.hook, f.reason)).collect::<Vec<_>>().join("; ")
            ),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallSubject {
    pub tool: String,
    #[serde(default)]
    pub input: Value,
    #[serde(default)]
    pub paths: Option<Vec<String>>,
    /// Why it was escalated (the asking hooks' reasons).
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScopeExpansionSubject {
    pub intent_id: String,
    pub paths: Vec<String>,
    #[serde(default)]
    pub justification: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanSubject {
    #[serde(default)]
    pub title: Option<String>,
    pub tasks: Vec<PlanTask>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One task of a plan: defined with the rewrites, since a hook may rewrite a plan's and a queue's.
pub use crate::model::rewrite::PlanTask;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactionSubject {
    pub summaries: Vec<Summary>,
    #[serde(default)]
    pub guidance: Option<String>,
    #[serde(default)]
    pub original_tokens: u64,
    #[serde(default)]
    pub estimated_tokens: u64,
    pub budget: u64,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub text: String,
    /// What it summarises (a turn range, a file).
    #[serde(default)]
    pub source: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubmitSubject {
    #[serde(default)]
    pub result: Value,
    #[serde(default)]
    pub failures: Vec<SubmitFailure>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubmitFailure {
    pub hook: String,
    pub reason: String,
    #[serde(default)]
    pub output: Option<String>,
}

/// Paths a scope may be given: relative, without `..`, each a glob that compiles; at least one.
pub(super) fn check_scope_paths(paths: &[String]) -> Result<(), String> {
    if paths.is_empty() {
        return Err("`paths` must name at least one path".to_owned());
    }
    for path in paths {
        let p = std::path::Path::new(path);
        if path.trim().is_empty() {
            return Err("`paths` holds an empty path".to_owned());
        }
        if p.is_absolute() || path.starts_with('/') || path.starts_with('\\') || path.starts_with('~') || path.get(1..2) == Some(":") {
            return Err(format!("path `{path}` must be relative to the workspace"));
        }
        if path.split(['/', '\\']).any(|c| c == "..") {
            return Err(format!("path `{path}` must not contain `..`"));
        }
        globset::Glob::new(path).map_err(|e| format!("path `{path}` is not a valid glob: {e}"))?;
    }
    // What the grant itself will accept (`approveScopeExpansion`): an edit that passes here is never
    // refused there.
    crate::scope::expansion::check_globs(paths).map(drop).map_err(String::from)
}

pub(super) fn check_tasks(tasks: &[PlanTask]) -> Result<(), String> {
    if tasks.is_empty() {
        return Err("`tasks` must hold at least one task".to_owned());
    }
    match tasks.iter().position(|t| t.prompt.trim().is_empty()) {
        Some(i) => Err(format!("task {i} has an empty `prompt`")),
        None => Ok(()),
    }
}
