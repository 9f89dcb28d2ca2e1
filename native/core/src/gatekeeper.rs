//! The intent gatekeeper: the critical native hook that makes an agent declare which intent it works
//! on before it may write, and then lets it write only inside that intent's owned scope.
//!
//! Order of the checks, most fundamental first, so the agent always hears the most useful reason:
//! 1. every path a write names is made canonical (canonical.rs); one that lands outside the workspace,
//!    or cannot be judged, is refused;
//! 2. the governance files (`.orchestration/`, the agents' own hook settings) are never writable;
//! 3. a session that has not selected an intent cannot write (the handshake);
//! 4. a write outside the selected intent's `owned_scope` is refused with `scope_expansion_request`
//!    suggested.
//!
//! Not here yet (the gatekeeper issue continues): the cross-process intent locks (SQLite leases),
//! scope expansions, writes through the shell, and the engine registering this hook by itself.

use crate::canonical::Workspace;
use crate::chain::NativeHook;
use crate::decision::{Answer, Denial, HookAnswer, HookFailure};
use crate::event::{Event, EventKind};
use crate::intents::{Intent, IntentSet, IntentStatus};
use globset::{Glob, GlobSet, GlobSetBuilder};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// The tool that performs the handshake.
pub const SELECT_INTENT_TOOL: &str = "select_active_intent";
/// The tool a refused write is pointed to.
pub const SCOPE_EXPANSION_TOOL: &str = "scope_expansion_request";

/// Which tools write, and which input fields hold their paths: our agent's tools and Claude Code's.
pub const DEFAULT_WRITE_TOOLS: &[(&str, &[&str])] = &[
    ("write_to_file", &["path"]),
    ("apply_diff", &["path"]),
    ("Write", &["file_path"]),
    ("Edit", &["file_path"]),
    ("MultiEdit", &["file_path"]),
    ("NotebookEdit", &["notebook_path"]),
];

/// Never writable by an agent, whatever its scope: an agent that could edit its own rules would have
/// no rules.
pub const GOVERNANCE_FILES: &[&str] = &[
    ".orchestration",
    ".orchestration/**",
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".cursor/hooks.json",
    ".gemini/settings.json",
    ".github/hooks/**",
    ".codex/hooks.json",
];

/// Where the gatekeeper reads the current intents (the engine's last good `active_intents.yaml`).
pub trait IntentSource: Send + Sync + std::fmt::Debug {
    fn intents(&self) -> Arc<IntentSet>;
}

#[derive(Debug)]
pub struct Gatekeeper {
    workspace: Workspace,
    intents: Arc<dyn IntentSource>,
    write_tools: HashMap<String, Vec<String>>,
    governance: GlobSet,
    /// The intent each session selected.
    selected: RwLock<HashMap<String, String>>,
}

impl Gatekeeper {
    pub fn new(workspace: Workspace, intents: Arc<dyn IntentSource>) -> Gatekeeper {
        let mut governance = GlobSetBuilder::new();
        for g in GOVERNANCE_FILES {
            governance.add(Glob::new(g).expect("the governance globs are valid"));
        }
        Gatekeeper {
            workspace,
            intents,
            write_tools: DEFAULT_WRITE_TOOLS.iter().map(|(t, f)| ((*t).to_owned(), f.iter().map(|s| (*s).to_owned()).collect())).collect(),
            governance: governance.build().expect("the governance globs build"),
            selected: RwLock::default(),
        }
    }

    /// Adds or replaces a write tool and the input fields that hold its paths.
    pub fn add_write_tool(&mut self, tool: &str, fields: &[&str]) {
        self.write_tools.insert(tool.to_owned(), fields.iter().map(|s| (*s).to_owned()).collect());
    }

    /// The intent a session selected, if any.
    pub fn selected(&self, session: &str) -> Option<String> {
        self.selected.read().unwrap_or_else(|p| p.into_inner()).get(session).cloned()
    }

    fn select(&self, event: &Event) -> Answer {
        let Some(session) = &event.ids.session else {
            return deny("select_active_intent needs a session id", None);
        };
        let id = event.subject.get("intent_id").and_then(|v| v.as_str()).unwrap_or_default();
        let intents = self.intents.intents();
        let Some(intent) = intents.active_intents.iter().find(|i| i.id == id) else {
            return deny(
                &format!("there is no intent `{id}`; {}", available(&intents)),
                Some("Call select_active_intent with one of the listed intent ids."),
            );
        };
        if matches!(intent.status, IntentStatus::Blocked | IntentStatus::Completed) {
            return deny(&format!("intent `{id}` is {:?} and takes no work; {}", intent.status, available(&intents)), None);
        }
        self.selected.write().unwrap_or_else(|p| p.into_inner()).insert(session.clone(), id.to_owned());
        Answer::Allow
    }

    /// The paths a write names: the event's own, else the tool's path fields of its input.
    fn write_paths(&self, event: &Event, fields: &[String]) -> Vec<String> {
        if !event.paths.is_empty() {
            return event.paths.clone();
        }
        fields.iter().filter_map(|f| event.subject.get(f).and_then(|v| v.as_str()).map(str::to_owned)).collect()
    }

    fn judge_write(&self, event: &Event, fields: &[String]) -> Answer {
        let paths = self.write_paths(event, fields);
        if paths.is_empty() {
            return deny(&format!("`{}` names no path to write", event.tool.as_deref().unwrap_or_default()), None);
        }
        let mut canonical = Vec::with_capacity(paths.len());
        for raw in &paths {
            match self.workspace.canonicalize(raw) {
                Ok(rel) if self.governance.is_match(&rel) => {
                    return deny(&format!("`{rel}` is a governance file; agents never write their own rules"), None);
                }
                Ok(rel) => canonical.push(rel),
                Err(refusal) => return deny(&format!("cannot write `{raw}`: {refusal}"), None),
            }
        }
        let intents = self.intents.intents();
        let selected = event.ids.session.as_deref().and_then(|s| self.selected(s));
        let Some(intent) = selected.and_then(|id| intents.active_intents.iter().find(|i| i.id == id).cloned()) else {
            return deny(
                &format!("no intent is selected for this session: call `{SELECT_INTENT_TOOL}` first; {}", available(&intents)),
                Some("Call select_active_intent(intent_id) with the intent this change serves, then retry the write."),
            );
        };
        let scope = scope_set(&intent);
        for rel in &canonical {
            if !scope.is_match(rel) {
                return Answer::Deny(Denial {
                    reason: format!("`{rel}` is outside the scope of intent `{}` ({})", intent.id, intent.owned_scope.join(", ")),
                    remediation: Some(format!(
                        "Write only inside {}, or ask for more with {SCOPE_EXPANSION_TOOL}(intent_id, paths, justification).",
                        intent.owned_scope.join(", ")
                    )),
                    suggested_tool: Some(SCOPE_EXPANSION_TOOL.to_owned()),
                });
            }
        }
        Answer::Allow
    }
}

/// The `<intent_context>` block the model receives after the handshake.
pub fn intent_context(intent: &Intent) -> String {
    let list = |items: &[String]| items.iter().map(|i| format!("  - {i}\n")).collect::<String>();
    format!(
        "<intent_context>\nid: {}\nname: {}\nowned_scope:\n{}constraints:\n{}acceptance_criteria:\n{}</intent_context>",
        intent.id,
        intent.name,
        list(&intent.owned_scope),
        list(&intent.constraints),
        list(&intent.acceptance_criteria)
    )
}

fn available(intents: &IntentSet) -> String {
    let open: Vec<String> = intents
        .active_intents
        .iter()
        .filter(|i| matches!(i.status, IntentStatus::InProgress | IntentStatus::Planned))
        .map(|i| format!("{} ({})", i.id, i.name))
        .collect();
    if open.is_empty() { "no intent is open for work".to_owned() } else { format!("available intents: {}", open.join(", ")) }
}

fn scope_set(intent: &Intent) -> GlobSet {
    let mut b = GlobSetBuilder::new();
    for g in &intent.owned_scope {
        if let Ok(glob) = globset::GlobBuilder::new(g).literal_separator(true).build() {
            b.add(glob);
        }
    }
    b.build().unwrap_or_else(|_| GlobSet::empty())
}

fn deny(reason: &str, remediation: Option<&str>) -> Answer {
    Answer::Deny(Denial { reason: reason.to_owned(), remediation: remediation.map(str::to_owned), suggested_tool: None })
}

impl NativeHook for Gatekeeper {
    fn call(&self, event: &Event) -> Result<HookAnswer, HookFailure> {
        if event.kind != EventKind::PreToolUse {
            return Ok(Answer::Allow.into());
        }
        let Some(tool) = event.tool.as_deref() else { return Ok(Answer::Allow.into()) };
        if tool == SELECT_INTENT_TOOL {
            let answer = self.select(event);
            let context = matches!(answer, Answer::Allow)
                .then(|| {
                    let id = event.subject.get("intent_id").and_then(|v| v.as_str()).unwrap_or_default();
                    self.intents.intents().active_intents.iter().find(|i| i.id == id).map(intent_context)
                })
                .flatten();
            return Ok(HookAnswer { answer, additional_context: context });
        }
        match self.write_tools.get(tool) {
            Some(fields) => Ok(self.judge_write(event, fields).into()),
            None => Ok(Answer::Allow.into()),
        }
    }

    fn needs_subject(&self, event: &Event) -> bool {
        // The input is read for the handshake, and for writes whose paths did not come separately.
        event.tool.as_deref().is_some_and(|t| t == SELECT_INTENT_TOOL || (event.paths.is_empty() && self.write_tools.contains_key(t)))
    }
}
