//! `.orchestration/active_intents.yaml`: the intents an agent may declare it works on, as typed data.
//!
//! This module parses and validates the file. Scope matching and locks live in their own modules.

use crate::config::locate_value;
use crate::diagnostic::Diagnostic;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::path::Path;

pub const INTENTS_SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IntentSet {
    pub version: u32,
    #[serde(default)]
    pub active_intents: Vec<Intent>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum IntentStatus {
    Planned,
    InProgress,
    Blocked,
    Completed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Intent {
    pub id: String,
    pub name: String,
    pub status: IntentStatus,
    /// Globs relative to the workspace root: where an agent working on this intent may write.
    #[serde(default)]
    pub owned_scope: Vec<String>,
    #[serde(default)]
    pub constraints: Vec<String>,
    #[serde(default)]
    pub acceptance_criteria: Vec<String>,
    #[serde(default)]
    pub spec: Option<String>,
    #[serde(default)]
    pub requirements: Option<String>,
}

impl IntentSet {
    pub fn parse(file: &Path, text: &str) -> Result<IntentSet, Vec<Diagnostic>> {
        let set: IntentSet =
            serde_norway::from_str(text).map_err(|e| vec![Diagnostic::from_yaml(file.to_path_buf(), &e)])?;
        let mut problems: Vec<Diagnostic> =
            crate::config::check_version(file, text, "active_intents.yaml", set.version, INTENTS_SCHEMA_VERSION).into_iter().collect();
        let mut seen = HashSet::new();
        for intent in &set.active_intents {
            if !seen.insert(intent.id.as_str()) {
                // Point at the second occurrence: that is the one to rename or remove.
                let first = locate_value(text, "id", &intent.id);
                let rest_start = text.lines().take(first.0 as usize).map(|l| l.len() + 1).sum::<usize>();
                let (line, column) = locate_value(&text[rest_start.min(text.len())..], "id", &intent.id);
                problems.push(Diagnostic {
                    file: file.to_path_buf(),
                    line: line + first.0,
                    column,
                    code: "duplicate-intent",
                    message: format!("intent `{}` is declared twice", intent.id),
                });
            }
        }
        if problems.is_empty() { Ok(set) } else { Err(problems) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_id_points_at_second_occurrence() {
        let text = "version: 1\nactive_intents:\n  - id: A\n    name: a\n    status: IN_PROGRESS\n  - id: \"A\"\n    name: b\n    status: PLANNED\n";
        let err = IntentSet::parse(Path::new("i.yaml"), text).unwrap_err();
        assert_eq!(err[0].to_string(), "i.yaml:6:5: intent `A` is declared twice [duplicate-intent]");
    }

    #[test]
    fn bad_status_names_the_line() {
        let text = "version: 1\nactive_intents:\n  - id: A\n    name: a\n    status: WORKING\n";
        let err = IntentSet::parse(Path::new("i.yaml"), text).unwrap_err();
        assert_eq!((err[0].line, err[0].column), (5, 13));
        assert!(err[0].message.contains("unknown variant `WORKING`"), "{}", err[0].message);
    }
}
