//! `.orchestration/active_intents.yaml`: the intents an agent may declare it works on, as typed data.
//!
//! This module parses and validates the file. Scope matching and locks live in their own modules.

use crate::base::diagnostic::Diagnostic;
use crate::base::yaml::locate_value;
use schemars::JsonSchema;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
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

impl IntentStatus {
    /// The status as active_intents.yaml spells it (`IN_PROGRESS`).
    pub fn as_str(self) -> &'static str {
        match self {
            IntentStatus::Planned => "PLANNED",
            IntentStatus::InProgress => "IN_PROGRESS",
            IntentStatus::Blocked => "BLOCKED",
            IntentStatus::Completed => "COMPLETED",
        }
    }
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
    /// The type of task this intent is (a `task_types` key of hooks.yaml). Selecting the intent
    /// claims a task of that type: only the agents the type lists may (`scope::claims`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_type: Option<String>,
}

impl IntentSet {
    pub fn parse(file: &Path, text: &str) -> Result<IntentSet, Vec<Diagnostic>> {
        let set: IntentSet = serde_norway::from_str(text).map_err(|e| vec![serde_diagnostic(file, text, &e)])?;
        let mut problems: Vec<Diagnostic> =
            crate::base::yaml::check_version(file, text, "active_intents.yaml", set.version, INTENTS_SCHEMA_VERSION).into_iter().collect();
        let mut seen = HashSet::new();
        for (i, intent) in set.active_intents.iter().enumerate() {
            // Where the intent's own entries are, by the parser's positions; the intent's `id` line
            // when even that fails (it cannot on text that just parsed, but a diagnostic must point).
            let at = |steps: &[Step<'_>]| {
                let path = [&[Step::Key("active_intents"), Step::Index(i)], steps].concat();
                locate_node(text, &path).unwrap_or_else(|| locate_value(text, "id", &intent.id))
            };
            if intent.id.trim().is_empty() {
                // Every other check and message names an intent by its id: one without is refused.
                let (line, column) = at(&[Step::Key("id")]);
                let named =
                    if intent.name.trim().is_empty() { String::from("an intent") } else { format!("the intent named `{}`", intent.name) };
                problems.push(Diagnostic {
                    file: file.to_path_buf(),
                    line,
                    column,
                    code: "empty-intent-id",
                    message: format!("{named} has an empty `id`"),
                });
            } else if !seen.insert(intent.id.as_str()) {
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
            for (j, glob) in intent.owned_scope.iter().enumerate() {
                for (code, message) in scope_problems(&intent.id, glob) {
                    let (line, column) = at(&[Step::Key("owned_scope"), Step::Index(j)]);
                    problems.push(Diagnostic { file: file.to_path_buf(), line, column, code, message });
                }
            }
        }
        if problems.is_empty() { Ok(set) } else { Err(problems) }
    }
}

/// What is wrong with one `owned_scope` glob of intent `id`, as (code, message) pairs. Scopes are
/// matched against canonical workspace-relative paths (`canonical.rs`), which are never absolute and
/// never contain `..`: a glob that is either could never match what it seems to allow, so it is
/// refused rather than left to silently match nothing.
fn scope_problems(id: &str, glob: &str) -> Vec<(&'static str, String)> {
    let mut problems = Vec::new();
    let outside = if glob.starts_with('~') {
        Some("starts with `~`, which is not expanded")
    } else if glob.starts_with('/') || glob.starts_with('\\') || Path::new(glob).is_absolute() {
        Some("is an absolute path")
    } else if glob.split('/').any(|c| c == "..") {
        Some("has a `..` component")
    } else {
        None
    };
    if let Some(why) = outside {
        problems.push((
            "scope-outside-workspace",
            format!("intent `{id}`: scope `{glob}` {why}; scopes are globs relative to the workspace root"),
        ));
    }
    // Compiled as the gatekeeper compiles scopes (`*` does not cross `/`), so what passes here builds there.
    if let Err(e) = globset::GlobBuilder::new(glob).literal_separator(true).build() {
        problems.push(("bad-scope-glob", format!("intent `{id}`: scope `{glob}` is not a valid glob: {}", e.kind())));
    }
    problems
}

/// The diagnostic for a YAML or typing error, naming the intent it is inside when there is one: serde
/// says `active_intents[3].status: ...`, and a person looks for `INT-004`, not for the fourth entry.
fn serde_diagnostic(file: &Path, text: &str, err: &serde_norway::Error) -> Diagnostic {
    let mut diagnostic = Diagnostic::from_yaml(file.to_path_buf(), err);
    if let Some(message) = name_the_intent(&diagnostic.message, text) {
        diagnostic.message = message;
    }
    diagnostic
}

/// `active_intents[N]<rest>: <message>` with the Nth intent's id in place of its index, if the text
/// still gives that id (it does unless the error is in the id itself, or the YAML does not parse).
fn name_the_intent(message: &str, text: &str) -> Option<String> {
    let (index, rest) = message.strip_prefix("active_intents[")?.split_once(']')?;
    let index: usize = index.parse().ok()?;
    let value: serde_norway::Value = serde_norway::from_str(text).ok()?;
    let id = match value.get("active_intents")?.get(index)?.get("id")? {
        serde_norway::Value::String(s) if !s.trim().is_empty() => s.clone(),
        serde_norway::Value::Number(n) => n.to_string(),
        _ => return None,
    };
    // `rest` is `: message` for the intent itself, or `.field: message` (or deeper) inside it; the
    // field is kept, since serde's message alone does not always say which one it means.
    Some(match rest.strip_prefix('.') {
        Some(inner) => format!("intent `{id}`: {inner}"),
        None => format!("intent `{id}`{rest}"),
    })
}

/// One step of a path into the YAML document.
#[derive(Debug, Clone, Copy)]
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// Marks the error with which `Seek` stops the parser at the node it was sent to.
const FOUND: &str = "\u{1}chokepoint: node found";

/// The 1-based line and column where the node at `path` starts, or `None` if there is no such node.
///
/// serde_norway keeps no positions in parsed values, only in errors, so this walks the document with
/// a deserializer that fails on purpose when it reaches the node: the error then carries the parser's
/// own position for it, right for block and flow style, quoted or not, where a search of the text
/// by line (`locate_value`) cannot find a list item at all.
fn locate_node(text: &str, path: &[Step<'_>]) -> Option<(u32, u32)> {
    let err = Seek(path).deserialize(serde_norway::Deserializer::from_str(text)).err()?;
    if !err.to_string().contains(FOUND) {
        return None;
    }
    err.location().map(|l| (l.line() as u32, l.column() as u32))
}

/// Follows the rest of a path through the document, skipping everything off it.
struct Seek<'p>(&'p [Step<'p>]);

impl<'de> DeserializeSeed<'de> for Seek<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl Seek<'_> {
    /// A scalar: the end of the path if the path ends here, else the path does not exist.
    fn scalar<E: de::Error>(self) -> Result<(), E> {
        if self.0.is_empty() { Err(E::custom(FOUND)) } else { Ok(()) }
    }
}

impl<'de> Visitor<'de> for Seek<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        match self.0.split_first() {
            None => Err(de::Error::custom(FOUND)),
            Some((Step::Key(wanted), rest)) => {
                while let Some(key) = map.next_key::<serde_norway::Value>()? {
                    if key.as_str() == Some(*wanted) {
                        return map.next_value_seed(Seek(rest));
                    }
                    map.next_value::<IgnoredAny>()?;
                }
                Ok(())
            }
            Some((Step::Index(_), _)) => Ok(()),
        }
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        match self.0.split_first() {
            None => Err(de::Error::custom(FOUND)),
            Some((Step::Index(wanted), rest)) => {
                for _ in 0..*wanted {
                    if seq.next_element::<IgnoredAny>()?.is_none() {
                        return Ok(());
                    }
                }
                seq.next_element_seed(Seek(rest)).map(|_| ())
            }
            Some((Step::Key(_), _)) => Ok(()),
        }
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.scalar()
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.scalar()
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.scalar()
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.scalar()
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.scalar()
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.scalar()
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.scalar()
    }

    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
        // A tagged value (`!tag x`) is no part of this file's format: the path can end at it, not go
        // through it.
        if self.0.is_empty() { Err(de::Error::custom(FOUND)) } else { IgnoredAny.visit_enum(data).map(|_| ()) }
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

    fn problems(text: &str) -> Vec<String> {
        IntentSet::parse(Path::new("i.yaml"), text).unwrap_err().iter().map(ToString::to_string).collect()
    }

    fn intent(id: &str, scope: &str) -> String {
        format!("  - id: {id}\n    name: n\n    status: IN_PROGRESS\n    owned_scope:\n{scope}")
    }

    #[test]
    fn good_scopes_parse() {
        let text =
            format!("version: 1\nactive_intents:\n{}", intent("A", "      - \"src/**\"\n      - docs/*.md\n      - \"{a,b}/**/x?.rs\"\n"));
        let set = IntentSet::parse(Path::new("i.yaml"), &text).unwrap();
        assert_eq!(set.active_intents[0].owned_scope.len(), 3);
    }

    #[test]
    fn bad_scope_glob_points_at_the_glob_and_names_the_intent() {
        let text = format!(
            "version: 1\nactive_intents:\n{}{}",
            intent("INT-001", "      - \"src/**\"\n"),
            intent("INT-002", "      - \"src/**\"\n      - \"src/[ab\"\n"),
        );
        assert_eq!(
            problems(&text),
            ["i.yaml:13:9: intent `INT-002`: scope `src/[ab` is not a valid glob: unclosed character class; missing ']' [bad-scope-glob]"]
        );
    }

    #[test]
    fn bad_scope_glob_in_flow_style_points_at_the_glob() {
        let text = "version: 1\nactive_intents:\n  - {id: A, name: n, status: PLANNED, owned_scope: [\"src/**\", \"{a,b\"]}\n";
        let got = IntentSet::parse(Path::new("i.yaml"), text).unwrap_err();
        assert_eq!((got[0].line, got[0].column, got[0].code), (3, 63, "bad-scope-glob"), "{}", got[0]);
        assert!(got[0].message.starts_with("intent `A`: scope `{a,b` is not a valid glob: "), "{}", got[0]);
    }

    #[test]
    fn scopes_outside_the_workspace_are_refused() {
        let text = format!(
            "version: 1\nactive_intents:\n{}",
            intent("A", "      - /etc/**\n      - \"~/notes/*\"\n      - ../sibling/**\n      - src/../../x\n      - src/..data/**\n"),
        );
        assert_eq!(
            problems(&text),
            [
                "i.yaml:7:9: intent `A`: scope `/etc/**` is an absolute path; scopes are globs relative to the workspace root [scope-outside-workspace]",
                "i.yaml:8:9: intent `A`: scope `~/notes/*` starts with `~`, which is not expanded; scopes are globs relative to the workspace root [scope-outside-workspace]",
                "i.yaml:9:9: intent `A`: scope `../sibling/**` has a `..` component; scopes are globs relative to the workspace root [scope-outside-workspace]",
                "i.yaml:10:9: intent `A`: scope `src/../../x` has a `..` component; scopes are globs relative to the workspace root [scope-outside-workspace]",
            ]
        );
    }

    #[test]
    fn empty_id_is_located() {
        let text = "version: 1\nactive_intents:\n  - id: A\n    name: a\n    status: PLANNED\n  - id: \"\"\n    name: second\n    status: PLANNED\n";
        assert_eq!(problems(text), ["i.yaml:6:9: the intent named `second` has an empty `id` [empty-intent-id]"]);
    }

    #[test]
    fn typing_errors_inside_an_intent_name_it() {
        let text = "version: 1\nactive_intents:\n  - id: INT-001\n    name: a\n    status: PLANNED\n  - name: b\n    status: WORKING\n    id: INT-002\n";
        let err = IntentSet::parse(Path::new("i.yaml"), text).unwrap_err();
        assert_eq!((err[0].line, err[0].column), (7, 13));
        assert!(err[0].message.starts_with("intent `INT-002`: status: unknown variant `WORKING`, expected one of "), "{}", err[0].message);

        let text = "version: 1\nactive_intents:\n  - id: INT-001\n    name: a\n    status: PLANNED\n    owner: me\n";
        let err = IntentSet::parse(Path::new("i.yaml"), text).unwrap_err();
        assert_eq!((err[0].line, err[0].column), (6, 5));
        assert!(err[0].message.starts_with("intent `INT-001`: unknown field `owner`, expected one of "), "{}", err[0].message);
    }

    #[test]
    fn typing_errors_without_an_id_keep_serde_s_path() {
        let text = "version: 1\nactive_intents:\n  - name: a\n    status: PLANNED\n";
        let err = IntentSet::parse(Path::new("i.yaml"), text).unwrap_err();
        assert!(err[0].message.starts_with("active_intents[0]: missing field `id`"), "{}", err[0].message);
        let text = "version: 1\nactive_intents:\n  - id: [x]\n    name: a\n    status: PLANNED\n";
        let err = IntentSet::parse(Path::new("i.yaml"), text).unwrap_err();
        assert_eq!((err[0].line, err[0].column), (3, 9));
        assert!(err[0].message.starts_with("active_intents[0].id: invalid type: sequence"), "{}", err[0].message);
    }

    #[test]
    fn locate_node_follows_block_and_flow_style() {
        let text = "a:\n  - x\n  - {b: [1, \"two\"]}\nc: 3\n";
        assert_eq!(locate_node(text, &[Step::Key("a"), Step::Index(1), Step::Key("b"), Step::Index(1)]), Some((3, 13)));
        assert_eq!(locate_node(text, &[Step::Key("c")]), Some((4, 4)));
        assert_eq!(locate_node(text, &[Step::Key("a"), Step::Index(0)]), Some((2, 5)));
        assert_eq!(locate_node(text, &[Step::Key("a"), Step::Index(2)]), None);
        assert_eq!(locate_node(text, &[Step::Key("d")]), None);
        assert_eq!(locate_node(text, &[Step::Key("c"), Step::Index(0)]), None);
    }
}
