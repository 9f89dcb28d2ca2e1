//! The engine over a real workspace folder: loading, reloading, keeping the last good configuration.

use chokepoint_core::{Engine, EventKind, FileStatus};
use std::fs;
use std::path::Path;

const HOOKS: &str = "version: 1\nhooks:\n  PreToolUse:\n    - name: gate\n      priority: critical\n      builtin: run_tests\n";
const INTENTS: &str = "version: 1\nactive_intents:\n  - id: INT-1\n    name: one\n    status: IN_PROGRESS\n    owned_scope: [src/**]\n";

fn workspace(hooks: Option<&str>, intents: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join(".orchestration")).unwrap();
    if let Some(h) = hooks {
        fs::write(dir.path().join(".orchestration/hooks.yaml"), h).unwrap();
    }
    if let Some(i) = intents {
        fs::write(dir.path().join(".orchestration/active_intents.yaml"), i).unwrap();
    }
    dir
}

fn write(root: &Path, name: &str, text: &str) {
    fs::write(root.join(".orchestration").join(name), text).unwrap();
}

#[test]
fn loads_both_files() {
    let ws = workspace(Some(HOOKS), Some(INTENTS));
    let info = Engine::open(ws.path()).unwrap().info();
    assert_eq!((info.hooks.status, info.intents.status), (FileStatus::Loaded, FileStatus::Loaded));
    assert_eq!(info.hook_count, 1);
    assert_eq!(info.events, vec![EventKind::PreToolUse]);
    assert_eq!(info.intent_ids, vec!["INT-1".to_owned()]);
    assert!(info.diagnostics.is_empty());
    assert_eq!(info.version, chokepoint_core::VERSION);
}

#[test]
fn missing_files_fall_back_to_defaults() {
    let ws = workspace(None, None);
    let info = Engine::open(ws.path()).unwrap().info();
    assert_eq!((info.hooks.status, info.intents.status), (FileStatus::Missing, FileStatus::Missing));
    assert_eq!(info.hook_count, 0);
}

#[test]
fn invalid_reload_keeps_the_last_good_configuration() {
    let ws = workspace(Some(HOOKS), Some(INTENTS));
    let engine = Engine::open(ws.path()).unwrap();
    write(ws.path(), "hooks.yaml", "version: 1\nhooks:\n  PreToolUse: {{{\n");
    let diagnostics = engine.reload();
    assert_eq!(diagnostics.len(), 1);
    assert_eq!(diagnostics[0].file, ws.path().join(".orchestration/hooks.yaml"));
    assert_eq!(diagnostics[0].line, 3);
    let info = engine.info();
    assert_eq!(info.hooks.status, FileStatus::Invalid);
    assert_eq!(info.hook_count, 1, "the last good hooks keep running");
    assert_eq!(info.intents.status, FileStatus::Loaded, "a bad hooks.yaml does not touch the intents");

    // A second bad edit still keeps the first good configuration, not the default.
    write(ws.path(), "hooks.yaml", "version: 7\n");
    engine.reload();
    assert_eq!(engine.info().hook_count, 1);

    // Fixing the file takes effect.
    write(ws.path(), "hooks.yaml", "version: 1\n");
    assert!(engine.reload().is_empty());
    let info = engine.info();
    assert_eq!((info.hooks.status, info.hook_count), (FileStatus::Loaded, 0));
}

#[test]
fn a_file_that_was_never_good_runs_the_default() {
    let ws = workspace(Some("version: 1\nhooks: [\n"), Some(INTENTS));
    let info = Engine::open(ws.path()).unwrap().info();
    assert_eq!((info.hooks.status, info.hook_count), (FileStatus::Invalid, 0));
    assert_eq!(info.diagnostics.len(), 1);
}

#[test]
fn opening_a_file_or_a_missing_folder_is_an_error() {
    let ws = workspace(None, None);
    assert!(Engine::open(ws.path().join("nope")).is_err());
    fs::write(ws.path().join("file"), "").unwrap();
    assert!(Engine::open(ws.path().join("file")).is_err());
}
