//! The one table of actions per kind ([`PendingKind::actions`]): the whole agent interface.
//! `to_dict().actions`, `to_tools()`, `describe_api()`, `apply_decision()` and `execute_tool()` are all
//! generated from it, never written per kind. Adding an action is one entry in the table and one
//! argument struct that derives `Deserialize` (with `deny_unknown_fields`) and `JsonSchema` and
//! implements [`Action`]. Nothing outside the table can be reached through those entry points: an
//! action name that is not in the kind's entry is refused before any argument is read.

use super::error::ApprovalError;
use super::kind::{PendingKind, PlanTask, Subject, check_scope_paths, check_tasks};
use super::pending::{Decision, Effect, Pending, Status};
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

impl PendingKind {
    /// The kind's public actions, in the order they are offered. The only table of actions.
    pub fn actions(self) -> &'static [ActionSpec] {
        match self {
            PendingKind::ToolCall => &TOOL_CALL,
            PendingKind::ScopeExpansion => &SCOPE_EXPANSION,
            PendingKind::Plan => &PLAN,
            PendingKind::Compaction => &COMPACTION,
            PendingKind::Submit => &SUBMIT,
        }
    }

    pub fn action(self, name: &str) -> Option<&'static ActionSpec> {
        self.actions().iter().find(|a| a.name == name)
    }

    pub fn action_names(self) -> Vec<&'static str> {
        self.actions().iter().map(|a| a.name).collect()
    }
}

const TOOL_CALL: [ActionSpec; 3] = [
    action::<Approve>("approve", "Allow the tool call as the agent asked for it."),
    action::<Reject>("reject", "Refuse the tool call; the reason is returned to the agent as the tool's result."),
    action::<Modify>("modify", "Allow the tool call with a corrected input; the note tells the agent what was changed."),
];

const SCOPE_EXPANSION: [ActionSpec; 4] = [
    action::<Approve>("approve", "Grant the paths to the intent for this session."),
    action::<Reject>("reject", "Refuse the expansion; the reason is returned to the agent."),
    action::<EditPaths>("edit", "Replace the requested paths (the Pending stays open for a decision)."),
    action::<ApproveAndSave>("approve_and_save", "Grant the paths and write them into active_intents.yaml."),
];

const PLAN: [ActionSpec; 3] = [
    action::<Approve>("approve", "Accept the plan as it stands."),
    action::<Reject>("reject", "Refuse the plan; the reason is returned to the agent."),
    action::<EditTasks>("edit", "Replace the plan's tasks (the Pending stays open for a decision)."),
];

const COMPACTION: [ActionSpec; 5] = [
    action::<Approve>("approve", "Accept the summaries in place of the turns they replace."),
    action::<CompactionReject>("reject", "Refuse the compaction; the prompt is not compacted this way."),
    action::<EditSummary>("edit_summary", "Replace the text of one summary (the Pending stays open)."),
    action::<EditGuidance>("edit_guidance", "Replace the guidance the summaries are written with (the Pending stays open)."),
    action::<RetrySummary>("retry", "Ask for one summary to be written again with this guidance (the Pending stays open)."),
];

const SUBMIT: [ActionSpec; 3] = [
    action::<SubmitRetry>("retry", "Give the agent another round to fix the failures, with this guidance."),
    action::<Reject>("reject", "Refuse the submission."),
    action::<Override>("override", "Accept the submission despite the failing hooks; the reason is recorded."),
];

/// One public action of a kind: its name, what it does, the JSON Schema of its arguments, and how it
/// applies. Built only by [`action`], from an argument type.
pub struct ActionSpec {
    pub name: &'static str,
    pub description: &'static str,
    schema: fn() -> Value,
    apply: fn(&'static str, Value, &mut Pending, &str) -> Result<Effect, ApprovalError>,
}

impl std::fmt::Debug for ActionSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActionSpec").field("name", &self.name).finish()
    }
}

impl ActionSpec {
    /// The JSON Schema (draft 2020-12) of the arguments: an object, `additionalProperties: false`,
    /// every subschema inlined (model APIs do not all follow `$ref`).
    pub fn parameters(&self) -> Value {
        (self.schema)()
    }

    /// Reads `args` as this action's arguments and applies them. Refuses bad or missing arguments,
    /// naming the field, before anything changes.
    pub(crate) fn apply(&self, args: Value, pending: &mut Pending, by: &str) -> Result<Effect, ApprovalError> {
        (self.apply)(self.name, args, pending, by)
    }
}

/// What an argument type does to a Pending of its kind. Implementations check their arguments fully
/// before changing anything, so a refusal leaves the Pending as it was.
pub trait Action: DeserializeOwned + JsonSchema {
    fn apply(self, name: &'static str, pending: &mut Pending, by: &str) -> Result<Effect, ApprovalError>;
}

const fn action<A: Action>(name: &'static str, description: &'static str) -> ActionSpec {
    ActionSpec { name, description, schema: parameters_of::<A>, apply: apply_as::<A> }
}

fn parameters_of<A: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12().with(|s| s.inline_subschemas = true).into_generator();
    let mut schema = generator.into_root_schema_for::<A>().to_value();
    if let Some(object) = schema.as_object_mut() {
        // A tool's parameters are a bare schema: the dialect is the tool format's, the title the
        // Rust type's name, neither of use to a model.
        object.remove("$schema");
        object.remove("title");
    }
    schema
}

fn apply_as<A: Action>(name: &'static str, args: Value, pending: &mut Pending, by: &str) -> Result<Effect, ApprovalError> {
    let args: A =
        serde_json::from_value(args).map_err(|e| ApprovalError::BadArguments { action: name.to_owned(), message: e.to_string() })?;
    args.apply(name, pending, by)
}

fn bad(action: &str, message: impl Into<String>) -> ApprovalError {
    ApprovalError::BadArguments { action: action.to_owned(), message: message.into() }
}

fn required(action: &str, field: &str, value: &str) -> Result<(), ApprovalError> {
    if value.trim().is_empty() { Err(bad(action, format!("`{field}` must not be empty"))) } else { Ok(()) }
}

fn decided(pending: &mut Pending, status: Status, decision: Decision) -> Result<Effect, ApprovalError> {
    pending.status = status;
    pending.decision = Some(decision);
    Ok(Effect::Decided)
}

// ---- the argument types -------------------------------------------------------------------------

/// Approve.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Approve {
    /// A note for the agent, delivered with the result.
    #[serde(default)]
    pub note: Option<String>,
}

impl Action for Approve {
    fn apply(self, name: &'static str, pending: &mut Pending, by: &str) -> Result<Effect, ApprovalError> {
        decided(pending, Status::Approved, Decision { note: self.note, ..Decision::new(name, by) })
    }
}

/// Approve, and keep the grant in the configuration file.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApproveAndSave {
    /// A note for the agent, delivered with the result.
    #[serde(default)]
    pub note: Option<String>,
}

impl Action for ApproveAndSave {
    fn apply(self, name: &'static str, pending: &mut Pending, by: &str) -> Result<Effect, ApprovalError> {
        decided(pending, Status::Approved, Decision { note: self.note, save: true, ..Decision::new(name, by) })
    }
}

/// Reject, with the reason the agent reads.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Reject {
    /// Why: delivered to the agent as the result, so say what it should do instead.
    pub reason: String,
}

impl Action for Reject {
    fn apply(self, name: &'static str, pending: &mut Pending, by: &str) -> Result<Effect, ApprovalError> {
        required(name, "reason", &self.reason)?;
        decided(pending, Status::Rejected, Decision { reason: Some(self.reason), ..Decision::new(name, by) })
    }
}

/// Reject a compaction; the reason is optional (the prompt simply stays as it is).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompactionReject {
    /// Why, if worth saying.
    #[serde(default)]
    pub reason: Option<String>,
}

impl Action for CompactionReject {
    fn apply(self, name: &'static str, pending: &mut Pending, by: &str) -> Result<Effect, ApprovalError> {
        let reason = self.reason.filter(|r| !r.trim().is_empty());
        decided(pending, Status::Rejected, Decision { reason, ..Decision::new(name, by) })
    }
}

/// Allow a tool call with another input.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Modify {
    /// The tool's whole input, as it should run.
    pub input: Map<String, Value>,
    /// What was changed and why, for the agent.
    #[serde(default)]
    pub note: Option<String>,
}

impl Action for Modify {
    fn apply(self, name: &'static str, pending: &mut Pending, by: &str) -> Result<Effect, ApprovalError> {
        decided(pending, Status::Modified, Decision { note: self.note, input: Some(Value::Object(self.input)), ..Decision::new(name, by) })
    }
}

/// Replace the paths of a scope expansion.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditPaths {
    /// Workspace-relative paths or globs (`src/api/**`); no `..`, not absolute; at least one.
    pub paths: Vec<String>,
}

impl Action for EditPaths {
    fn apply(self, name: &'static str, pending: &mut Pending, _by: &str) -> Result<Effect, ApprovalError> {
        check_scope_paths(&self.paths).map_err(|m| bad(name, m))?;
        let Subject::ScopeExpansion(subject) = &mut pending.subject else {
            return Err(ApprovalError::WrongSubject(name.to_owned()));
        };
        subject.paths = self.paths;
        Ok(Effect::Edited)
    }
}

/// Replace the tasks of a plan.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditTasks {
    /// The plan's tasks in order; at least one.
    pub tasks: Vec<PlanTask>,
}

impl Action for EditTasks {
    fn apply(self, name: &'static str, pending: &mut Pending, _by: &str) -> Result<Effect, ApprovalError> {
        check_tasks(&self.tasks).map_err(|m| bad(name, m))?;
        let Subject::Plan(subject) = &mut pending.subject else {
            return Err(ApprovalError::WrongSubject(name.to_owned()));
        };
        subject.tasks = self.tasks;
        Ok(Effect::Edited)
    }
}

/// Replace one summary's text.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditSummary {
    /// Which summary (0-based).
    pub index: usize,
    /// Its new text.
    pub text: String,
}

impl Action for EditSummary {
    fn apply(self, name: &'static str, pending: &mut Pending, _by: &str) -> Result<Effect, ApprovalError> {
        let Subject::Compaction(subject) = &mut pending.subject else {
            return Err(ApprovalError::WrongSubject(name.to_owned()));
        };
        let count = subject.summaries.len();
        let summary = subject
            .summaries
            .get_mut(self.index)
            .ok_or_else(|| bad(name, format!("`index` {} is out of range; there are {count} summaries", self.index)))?;
        summary.text = self.text;
        Ok(Effect::Edited)
    }
}

/// Replace the guidance of a compaction.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditGuidance {
    /// What the summaries should keep (decisions, open questions, file names...).
    pub text: String,
}

impl Action for EditGuidance {
    fn apply(self, name: &'static str, pending: &mut Pending, _by: &str) -> Result<Effect, ApprovalError> {
        let Subject::Compaction(subject) = &mut pending.subject else {
            return Err(ApprovalError::WrongSubject(name.to_owned()));
        };
        subject.guidance = Some(self.text).filter(|t| !t.trim().is_empty());
        Ok(Effect::Edited)
    }
}

/// Ask for one summary again.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RetrySummary {
    /// Which summary (0-based).
    pub index: usize,
    /// What the new summary should do differently.
    pub guidance: String,
}

impl Action for RetrySummary {
    fn apply(self, name: &'static str, pending: &mut Pending, _by: &str) -> Result<Effect, ApprovalError> {
        let Subject::Compaction(subject) = &pending.subject else {
            return Err(ApprovalError::WrongSubject(name.to_owned()));
        };
        if self.index >= subject.summaries.len() {
            return Err(bad(name, format!("`index` {} is out of range; there are {} summaries", self.index, subject.summaries.len())));
        }
        required(name, "guidance", &self.guidance)?;
        // The host regenerates the summary and writes it back with `edit_summary`; the Pending only
        // says that it was asked for.
        Ok(Effect::RetryRequested { index: self.index, guidance: self.guidance })
    }
}

/// Another round for the agent.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitRetry {
    /// What the agent should fix, delivered with the failures.
    #[serde(default)]
    pub guidance: Option<String>,
}

impl Action for SubmitRetry {
    fn apply(self, name: &'static str, pending: &mut Pending, by: &str) -> Result<Effect, ApprovalError> {
        // The guidance travels as the decision's note: it is what the agent is told.
        decided(pending, Status::Retry, Decision { note: self.guidance.filter(|g| !g.trim().is_empty()), ..Decision::new(name, by) })
    }
}

/// Accept despite the failures.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Override {
    /// Why the failures do not matter here; recorded in the trace.
    pub reason: String,
}

impl Action for Override {
    fn apply(self, name: &'static str, pending: &mut Pending, by: &str) -> Result<Effect, ApprovalError> {
        required(name, "reason", &self.reason)?;
        decided(pending, Status::Overridden, Decision { reason: Some(self.reason), ..Decision::new(name, by) })
    }
}
