//! Scope expansions: paths an agent asked to write beyond its intent's `owned_scope`
//! (`scope_expansion_request`), once whoever answers asks has approved them.
//!
//! An approved expansion applies to that intent for the rest of the session that asked. It is kept in
//! the coordination database (`Sidecar::coordination_db`, shared by the worktrees of a repository),
//! not in memory, for two reasons: every process on the workspace and its repository (the extension,
//! `chokepoint exec`, another agent's hooks, in any worktree) must judge the session's writes the same
//! way, and the approval is a fact worth keeping (who approved what, when, and why it was asked).
//! Saving it into `active_intents.yaml` for good is a separate, explicit step ([`write_back`]).

use crate::base::sqlite::StateDb;
use crate::scope::error::ScopeError;
use crate::scope::intents::IntentSet;
use rusqlite::params;
use std::path::Path;
use std::sync::Arc;

/// One approved expansion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expansion {
    pub session: String,
    pub intent: String,
    /// Globs relative to the workspace root, as approved.
    pub paths: Vec<String>,
    pub justification: String,
    /// Who approved it: `human`, a policy's name, a reviewer model.
    pub approved_by: String,
    pub approved_at_ms: u64,
}

/// The approved expansions of one workspace.
#[derive(Debug)]
pub struct Expansions {
    state: Arc<StateDb>,
}

fn db_error(e: rusqlite::Error) -> String {
    format!("the scope expansion store failed: {e}")
}

impl Expansions {
    pub fn open(db: &Path) -> Result<Expansions, ScopeError> {
        Expansions::on(Arc::new(StateDb::new(db)))
    }

    /// The expansions in `state`, the connection the engine shares between its stores.
    pub(crate) fn on(state: Arc<StateDb>) -> Result<Expansions, ScopeError> {
        // The database is shared with the lease table and with other processes (base::sqlite: WAL, and
        // waits for a writer rather than failing).
        let conn = state.lock().map_err(db_error)?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS scope_expansions_v1 (
                 session TEXT NOT NULL,
                 intent TEXT NOT NULL,
                 paths TEXT NOT NULL,
                 justification TEXT NOT NULL,
                 approved_by TEXT NOT NULL,
                 approved_at_ms INTEGER NOT NULL
             );
             CREATE INDEX IF NOT EXISTS scope_expansions_v1_by_session ON scope_expansions_v1 (session, intent);",
        )
        .map_err(db_error)?;
        drop(conn);
        Ok(Expansions { state })
    }

    /// Records an approval. The paths must have passed [`check_globs`].
    pub fn approve(&self, expansion: &Expansion) -> Result<(), ScopeError> {
        let db = self.state.lock().map_err(db_error)?;
        db.execute(
            "INSERT INTO scope_expansions_v1 (session, intent, paths, justification, approved_by, approved_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                expansion.session,
                expansion.intent,
                serde_json::to_string(&expansion.paths).expect("strings serialise"),
                expansion.justification,
                expansion.approved_by,
                expansion.approved_at_ms as i64
            ],
        )
        .map_err(db_error)?;
        Ok(())
    }

    /// Every glob approved for this session on this intent, oldest first.
    pub fn globs(&self, session: &str, intent: &str) -> Result<Vec<String>, ScopeError> {
        Ok(self.list(Some(session))?.into_iter().filter(|e| e.intent == intent).flat_map(|e| e.paths).collect())
    }

    /// The approvals of one session, or of every session, oldest first.
    pub fn list(&self, session: Option<&str>) -> Result<Vec<Expansion>, ScopeError> {
        let db = self.state.lock().map_err(db_error)?;
        let mut stmt = db
            .prepare_cached(
                "SELECT session, intent, paths, justification, approved_by, approved_at_ms FROM scope_expansions_v1
                 WHERE ?1 IS NULL OR session = ?1 ORDER BY rowid",
            )
            .map_err(db_error)?;
        let rows = stmt
            .query_map(params![session], |r| {
                let paths: String = r.get(2)?;
                Ok(Expansion {
                    session: r.get(0)?,
                    intent: r.get(1)?,
                    paths: serde_json::from_str(&paths).unwrap_or_default(),
                    justification: r.get(3)?,
                    approved_by: r.get(4)?,
                    approved_at_ms: r.get::<_, i64>(5)? as u64,
                })
            })
            .map_err(db_error)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| db_error(e).into())
    }
}

/// The approved expansions, whichever database holds them: this repository's SQLite file
/// ([`Expansions`]) or a team's PostgreSQL database (`scope::team_expansions::TeamExpansions`).
pub trait ExpansionStore: Send + Sync + std::fmt::Debug {
    /// Records an approval. The paths must have passed [`check_globs`].
    fn approve(&self, expansion: &Expansion) -> Result<(), ScopeError>;
    /// The approvals of one session, or of every session, oldest first.
    fn list(&self, session: Option<&str>) -> Result<Vec<Expansion>, ScopeError>;
    /// Every glob approved for this session on this intent, oldest first.
    fn globs(&self, session: &str, intent: &str) -> Result<Vec<String>, ScopeError> {
        Ok(self.list(Some(session))?.into_iter().filter(|e| e.intent == intent).flat_map(|e| e.paths).collect())
    }
}

impl ExpansionStore for Expansions {
    fn approve(&self, expansion: &Expansion) -> Result<(), ScopeError> {
        Expansions::approve(self, expansion)
    }
    fn list(&self, session: Option<&str>) -> Result<Vec<Expansion>, ScopeError> {
        Expansions::list(self, session)
    }
    fn globs(&self, session: &str, intent: &str) -> Result<Vec<String>, ScopeError> {
        Expansions::globs(self, session, intent)
    }
}

/// Checks the paths of a request: each a glob relative to the workspace root that compiles the way
/// owned scopes compile. Returns them trimmed, or what is wrong with the first bad one.
pub fn check_globs(paths: &[String]) -> Result<Vec<String>, ScopeError> {
    if paths.is_empty() {
        return Err("a scope expansion names no paths".to_owned().into());
    }
    paths
        .iter()
        .map(|raw| {
            let p = raw.trim().trim_start_matches("./");
            if p.is_empty() {
                return Err("an empty path cannot be added to a scope".to_owned());
            }
            if p.starts_with('/') || p.starts_with('~') || p.split('/').any(|c| c == "..") || p.contains('\0') {
                return Err(format!("`{raw}` is not a path inside the workspace (scopes are relative to its root, without `..`)"));
            }
            globset::GlobBuilder::new(p).literal_separator(true).build().map_err(|e| format!("`{raw}` is not a valid glob: {e}"))?;
            Ok(p.to_owned())
        })
        .collect::<Result<Vec<_>, String>>()
        .map_err(ScopeError::from)
}

/// Adds `globs` to the `owned_scope` of intent `intent_id` in the text of an `active_intents.yaml`,
/// keeping every other line, comment and the file's indentation as they are. The result is parsed
/// again and must hold exactly the old scope plus the new globs, or nothing is changed.
pub fn add_to_scope(text: &str, intent_id: &str, globs: &[String]) -> Result<String, ScopeError> {
    let before = IntentSet::parse(Path::new("active_intents.yaml"), text)
        .map_err(|_| "active_intents.yaml is not valid now; fix it first".to_owned())?;
    let old =
        &before.active_intents.iter().find(|i| i.id == intent_id).ok_or_else(|| format!("there is no intent `{intent_id}`"))?.owned_scope;
    let new: Vec<&String> = globs.iter().filter(|g| !old.contains(g)).collect();
    if new.is_empty() {
        return Ok(text.to_owned());
    }
    let lines: Vec<&str> = text.lines().collect();
    let is_key = |line: &str, key: &str| {
        let t = line.trim_start().trim_start_matches("- ");
        t.strip_prefix(key).is_some_and(|r| r.trim_start().starts_with(':'))
    };
    let key_value = |line: &str| line.split_once(':').map(|(_, v)| v.trim().trim_matches(|c| c == '"' || c == '\'').to_owned());
    let id_line = lines
        .iter()
        .position(|l| is_key(l, "id") && key_value(l).as_deref() == Some(intent_id))
        .ok_or_else(|| format!("cannot find `id: {intent_id}` in the file"))?;
    let key_indent = lines[id_line].len() - lines[id_line].trim_start().trim_start_matches("- ").len();
    let indent_of = |l: &str| l.len() - l.trim_start().len();
    // The intent's block: the lines after its id that are indented at least as far as its keys.
    let block_end = (id_line + 1..lines.len())
        .find(|&i| !lines[i].trim().is_empty() && !lines[i].trim_start().starts_with('#') && indent_of(lines[i]) < key_indent)
        .unwrap_or(lines.len());
    let quoted = |g: &str| serde_json::to_string(g).expect("strings serialise");
    let mut out: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
    let pad = " ".repeat(key_indent);
    match (id_line..block_end).find(|&i| indent_of(lines[i]) <= key_indent && is_key(lines[i], "owned_scope")) {
        Some(i) => {
            let value = lines[i].split_once(':').map(|(_, v)| v.trim()).unwrap_or_default();
            if value.starts_with('[') {
                let mut items: Vec<String> = old.iter().map(|g| quoted(g)).collect();
                items.extend(new.iter().map(|g| quoted(g)));
                let head = &lines[i][..lines[i].find(':').expect("a key line has a colon")];
                out[i] = format!("{head}: [{}]", items.join(", "));
            } else {
                // Block list: append after the last item, with the items' own indentation.
                let items: Vec<usize> = (i + 1..block_end)
                    .take_while(|&j| {
                        lines[j].trim().is_empty()
                            || lines[j].trim_start().starts_with('#')
                            || indent_of(lines[j]) > key_indent
                            || (indent_of(lines[j]) == key_indent && lines[j].trim_start().starts_with("- "))
                    })
                    .filter(|&j| lines[j].trim_start().starts_with("- "))
                    .collect();
                let (after, item_pad) = match items.last() {
                    Some(&last) => (last, " ".repeat(indent_of(lines[last]))),
                    None => (i, format!("{pad}  ")),
                };
                let head = &lines[i][..lines[i].find(':').expect("a key line has a colon")];
                if items.is_empty() {
                    out[i] = format!("{head}:");
                }
                for (k, g) in new.iter().enumerate() {
                    out.insert(after + 1 + k, format!("{item_pad}- {}", quoted(g)));
                }
            }
        }
        None => {
            let mut insert = vec![format!("{pad}owned_scope:")];
            insert.extend(new.iter().map(|g| format!("{pad}  - {}", quoted(g))));
            for (k, l) in insert.into_iter().enumerate() {
                out.insert(id_line + 1 + k, l);
            }
        }
    }
    let mut result = out.join("\n");
    if text.ends_with('\n') {
        result.push('\n');
    }
    let after = IntentSet::parse(Path::new("active_intents.yaml"), &result)
        .map_err(|d| format!("the edited file would not be valid ({})", d[0].message))?;
    let mut expected = old.clone();
    expected.extend(new.into_iter().cloned());
    let got = &after.active_intents.iter().find(|i| i.id == intent_id).expect("the id is unchanged").owned_scope;
    if *got != expected || after.active_intents.len() != before.active_intents.len() {
        return Err("the edit would change more than the intent's scope; edit active_intents.yaml by hand".to_owned().into());
    }
    Ok(result)
}

/// Saves approved globs into `active_intents.yaml` for good ([`add_to_scope`]), atomically: the file
/// is replaced by a fully written copy, so a crash leaves the old file or the new one.
pub fn write_back(file: &Path, intent_id: &str, globs: &[String]) -> Result<(), ScopeError> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let edited = add_to_scope(&text, intent_id, globs)?;
    if edited == text {
        return Ok(());
    }
    let tmp = file.with_extension("yaml.chokepoint-tmp");
    std::fs::write(&tmp, edited).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, file).map_err(|e| format!("cannot replace {}: {e}", file.display()).into())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# intents\nversion: 1\nactive_intents:\n  - id: A\n    name: a\n    status: IN_PROGRESS\n    owned_scope:\n      - src/a/**   # the module\n    constraints: []\n  - id: \"B\"\n    name: b\n    status: PLANNED\n    owned_scope: [docs/**]\n  - id: C\n    name: c\n    status: PLANNED\n";

    fn scope(text: &str, id: &str) -> Vec<String> {
        IntentSet::parse(Path::new("x"), text).unwrap().active_intents.into_iter().find(|i| i.id == id).unwrap().owned_scope
    }

    #[test]
    fn appends_to_a_block_list_keeping_comments() {
        let out = add_to_scope(TEXT, "A", &["lib/**".into(), "src/a/**".into()]).unwrap();
        assert_eq!(scope(&out, "A"), ["src/a/**", "lib/**"]);
        assert!(out.contains("      - src/a/**   # the module\n      - \"lib/**\"\n    constraints: []"), "{out}");
        assert_eq!(scope(&out, "B"), ["docs/**"]);
    }

    #[test]
    fn rewrites_a_flow_list_and_adds_a_missing_key() {
        let out = add_to_scope(TEXT, "B", &["*.md".into()]).unwrap();
        assert_eq!(scope(&out, "B"), ["docs/**", "*.md"]);
        let out = add_to_scope(&out, "C", &["c/**".into()]).unwrap();
        assert_eq!(scope(&out, "C"), ["c/**"]);
        assert_eq!(scope(&out, "A"), ["src/a/**"]);
    }

    #[test]
    fn refuses_what_it_cannot_place() {
        assert!(add_to_scope(TEXT, "Z", &["x".into()]).unwrap_err().message().contains("no intent `Z`"));
        assert!(add_to_scope("version: 1\nactive_intents: [{id: A, name: a, status: PLANNED}]\n", "A", &["x".into()]).is_err());
    }

    #[test]
    fn checks_request_globs() {
        assert_eq!(check_globs(&["./lib/**".into()]).unwrap(), ["lib/**"]);
        for bad in ["/etc/**", "~/x", "../x", "a/../../x", "src/[", ""] {
            assert!(check_globs(&[bad.into()]).is_err(), "{bad}");
        }
        assert!(check_globs(&[]).is_err());
    }
}
