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
    assert!(engine.runs_good_configuration(), "what runs is the user's last good configuration");
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
    let engine = Engine::open(ws.path()).unwrap();
    let info = engine.info();
    assert_eq!((info.hooks.status, info.hook_count), (FileStatus::Invalid, 0));
    assert_eq!(info.diagnostics.len(), 1);
    assert!(!engine.runs_good_configuration(), "the defaults stand in for a file that never loaded");
    // Still broken on a reload: still not the user's configuration.
    engine.reload();
    assert!(!engine.runs_good_configuration());
    write(ws.path(), "hooks.yaml", "version: 1\n");
    engine.reload();
    assert!(engine.runs_good_configuration());
}

#[test]
fn opening_a_file_or_a_missing_folder_is_an_error() {
    let ws = workspace(None, None);
    assert!(Engine::open(ws.path().join("nope")).is_err());
    fs::write(ws.path().join("file"), "").unwrap();
    assert!(Engine::open(ws.path().join("file")).is_err());
}

mod chains {
    use super::*;
    use chokepoint_core::{Answer, Decision, Denial, Event, HookAnswer, HookFailure, NativeHook, Priority, Registration};
    use std::sync::Arc;

    const TYPED: &str = "version: 1
hooks:
  BeforeSubmit:
    - name: project-tests
      builtin: run_tests
  PreToolUse:
    - name: project-gate
      priority: critical
      tool: write_to_file
      builtin: run_tests
task_types:
  bugfix:
    agents: [implementer-1, implementer-2]
    hooks:
      BeforeSubmit:
        - name: bugfix-tests
          builtin: run_tests
        - name: bugfix-pr
          builtin: create_pr
  docs:
    description: anyone may write docs
";

    fn event(kind: EventKind, task_type: Option<&str>) -> Event {
        Event { task_type: task_type.map(Into::into), ..Event::new(kind) }
    }

    #[test]
    fn task_type_then_project_then_defaults() {
        let ws = workspace(Some(TYPED), None);
        let engine = Engine::open(ws.path()).unwrap();
        assert_eq!(engine.plan(&event(EventKind::BeforeSubmit, Some("bugfix"))), ["bugfix-tests", "bugfix-pr"]);
        assert_eq!(engine.plan(&event(EventKind::BeforeSubmit, None)), ["project-tests"]);
        assert_eq!(
            engine.plan(&event(EventKind::BeforeSubmit, Some("docs"))),
            ["project-tests"],
            "a type without hooks uses the project's hooks"
        );
        assert_eq!(
            engine.plan(&event(EventKind::BeforeSubmit, Some("feature"))),
            ["project-tests"],
            "an undeclared type uses the project's hooks"
        );
        assert_eq!(
            engine.plan(&event(EventKind::PreToolUse, Some("bugfix"))),
            ["gatekeeper"],
            "no tool: only the gatekeeper, the project's tool matcher does not match"
        );
        assert!(engine.plan(&event(EventKind::TurnStart, Some("bugfix"))).is_empty(), "no hooks anywhere: the built-in default");
    }

    #[test]
    fn a_task_type_says_which_agents_may_work_on_it() {
        let ws = workspace(Some(TYPED), None);
        let engine = Engine::open(ws.path()).unwrap();
        let lists = engine.allowlists();
        assert_eq!(lists.check("bugfix", Some("implementer-2")), Ok(()));
        assert!(lists.check("bugfix", Some("reviewer-1")).is_err());
        assert_eq!(lists.check("docs", Some("reviewer-1")), Ok(()), "a type without `agents` is open to all");
        assert_eq!(
            lists.check("feature", Some("anyone")).unwrap_err().to_string(),
            "unknown task type `feature`; the declared task types are bugfix, docs",
            "an undeclared type is refused: a typo must not open a type's work to every agent"
        );
    }

    #[test]
    fn starting_a_task_of_a_type_claims_it() {
        // Our runtime's typed tasks: its TaskStart carries the type and its agent id (`chokepoint`).
        let ws = workspace(Some(TYPED), None);
        let engine = Engine::open(ws.path()).unwrap();
        let start = |agent: &str, task_type: Option<&str>| {
            let mut e = event(EventKind::TaskStart, task_type);
            e.ids.agent = Some(agent.into());
            engine.evaluate(e).unwrap().decision
        };
        match start("chokepoint", Some("bugfix")) {
            Decision::Deny(d) => assert_eq!(
                d.reason,
                "agent `chokepoint` may not work on tasks of type `bugfix`; the agents allowed are implementer-1, implementer-2 (hooks.yaml `task_types.bugfix.agents`)"
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(start("implementer-1", Some("bugfix")), Decision::Allow);
        assert_eq!(start("chokepoint", Some("docs")), Decision::Allow, "a type without `agents` is open to all");
        assert_eq!(start("chokepoint", None), Decision::Allow, "an untyped task claims nothing");
    }

    #[derive(Debug)]
    struct Gate;
    impl NativeHook for Gate {
        fn call(&self, event: &Event) -> Result<HookAnswer, HookFailure> {
            Ok(if event.paths.iter().any(|p| p.starts_with(".orchestration/")) {
                Answer::Deny(Denial::new("governance files are not writable")).into()
            } else {
                Answer::Allow.into()
            })
        }
    }

    #[test]
    fn native_hooks_run_first_among_equals_and_decide_synchronously() {
        let ws = workspace(Some(TYPED), None);
        let gate = Registration::native("governance", Priority::Critical, vec![EventKind::PreToolUse], Arc::new(Gate));
        let engine = Engine::open_with(ws.path(), vec![gate]).unwrap();
        let write = |path: &str| Event {
            paths: vec![path.into()],
            ..Event::tool(EventKind::PreToolUse, "write_to_file", serde_json::json!({ "path": path }))
        };
        // The engine's own gatekeeper first, then the registered hook, then the configured one.
        assert_eq!(engine.plan(&write("src/a.js")), ["gatekeeper", "governance", "project-gate"]);
        // The configured critical gate is a builtin: the synchronous path says so instead of skipping it.
        assert!(engine.evaluate(write("src/a.js")).is_err());
        let read = Event {
            paths: vec![".orchestration/hooks.yaml".into()],
            ..Event::tool(EventKind::PreToolUse, "read_file", serde_json::json!({}))
        };
        let e = engine.evaluate(read).unwrap();
        assert_eq!(e.decision, Decision::Deny(Denial::new("governance files are not writable")));
        assert_eq!(e.outcomes.iter().map(|o| &*o.hook).collect::<Vec<_>>(), ["gatekeeper", "governance"]);
    }

    #[test]
    fn an_invalid_matcher_is_a_located_configuration_error() {
        let ws =
            workspace(Some("version: 1\nhooks:\n  PreToolUse:\n    - name: bad\n      tool: \"(write\"\n      builtin: run_tests\n"), None);
        let info = Engine::open(ws.path()).unwrap().info();
        assert_eq!(info.diagnostics.len(), 1);
        let d = &info.diagnostics[0];
        assert_eq!((d.line, d.column, d.code), (4, 7, "hook-matcher"));
        assert!(d.message.starts_with("hook `bad`: invalid tool pattern `(write`"), "{}", d.message);
    }
}

#[test]
fn committed_schemas_match_the_rust_types() {
    // Regenerate with UPDATE_SCHEMAS=1 cargo test -p chokepoint-core --test engine
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.orchestration/schema");
    for (file, generated) in [
        ("hooks.schema.json", chokepoint_core::config::schema::hooks_schema()),
        ("active_intents.schema.json", chokepoint_core::config::schema::intents_schema()),
        ("agent_trace.schema.json", chokepoint_core::config::schema::trace_record_schema()),
    ] {
        let path = dir.join(file);
        if std::env::var_os("UPDATE_SCHEMAS").is_some() {
            fs::create_dir_all(&dir).unwrap();
            fs::write(&path, &generated).unwrap();
        }
        let committed = fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == generated,
            "{} is out of date with the Rust types; run UPDATE_SCHEMAS=1 cargo test -p chokepoint-core --test engine",
            path.display()
        );
    }
}

#[test]
fn declared_rules_answer_in_process_on_the_synchronous_path() {
    use chokepoint_core::{Decision, Event};
    let yaml = "version: 1
hooks:
  PreToolUse:
    - name: no-env-files
      priority: critical
      paths: ['**/.env', '.env']
      deny:
        reason: secrets stay out of agent edits
        suggested_tool: scope_expansion_request
    - name: big-deletes
      tool: delete_file
      ask: deleting needs a human
    - name: style
      priority: low
      tool: write_to_file
      context: use two-space indentation
";
    let ws = workspace(Some(yaml), None);
    let engine = Engine::open(ws.path()).unwrap();
    assert!(engine.info().diagnostics.is_empty(), "{:?}", engine.info().diagnostics);
    let write =
        |path: &str| Event { paths: vec![path.into()], ..Event::tool(EventKind::PreToolUse, "write_to_file", serde_json::json!({})) };
    let e = engine.evaluate(write("config/.env")).unwrap();
    let Decision::Deny(d) = e.decision else { panic!("{:?}", e.decision) };
    assert_eq!((d.reason.as_str(), d.suggested_tool.as_deref()), ("secrets stay out of agent edits", Some("scope_expansion_request")));
    let e = engine.evaluate(write("src/a.js")).unwrap();
    assert_eq!((e.decision, e.additional_context), (Decision::Allow, vec!["use two-space indentation".to_owned()]));
    let e = engine.evaluate(Event::tool(EventKind::PreToolUse, "delete_file", serde_json::json!({}))).unwrap();
    assert_eq!(e.decision.ask_reasons(), ["big-deletes: deleting needs a human"]);
}

#[test]
fn path_rules_match_the_writes_resolved_from_another_agents_tool_input() {
    use chokepoint_core::{Decision, Event};
    // Another agent's hook names no paths: only its tool's input does (absolute, as VS Code's).
    let yaml = "version: 1\nhooks:\n  PreToolUse:\n    - name: review\n      paths: ['src/auth/**']\n      ask: auth is reviewed\n";
    let ws = workspace(Some(yaml), None);
    let engine = Engine::open(ws.path()).unwrap();
    let root = std::fs::canonicalize(ws.path()).unwrap();
    let create = |rel: &str| {
        let mut event =
            Event::tool(EventKind::PreToolUse, "create_file", serde_json::json!({ "filePath": root.join(rel), "content": "x" }));
        event.ids.agent = Some("vscode".into());
        event
    };
    let e = engine.evaluate(create("src/auth/session.js")).unwrap();
    assert_eq!(e.decision.ask_reasons(), ["review: auth is reviewed"]);
    assert_eq!(engine.evaluate(create("src/billing/a.js")).unwrap().decision, Decision::Allow);
}

#[test]
fn a_hook_with_two_kinds_is_refused() {
    let ws = workspace(Some("version: 1\nhooks:\n  PreToolUse:\n    - name: both\n      ask: why\n      context: hm\n"), None);
    let d = &Engine::open(ws.path()).unwrap().info().diagnostics;
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].message, "hook `both` must have exactly one of `command`, `builtin`, `deny`, `ask` or `context`");
}

#[test]
fn the_event_mapping_document_is_generated_from_the_table() {
    // Regenerate with UPDATE_DOCS=1 cargo test -p chokepoint-core --test engine
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/event-mapping.md");
    let generated = chokepoint_core::model::external_events::render_markdown();
    if std::env::var_os("UPDATE_DOCS").is_some() {
        fs::write(&path, &generated).unwrap();
    }
    assert!(
        fs::read_to_string(&path).unwrap_or_default() == generated,
        "{} is out of date; run UPDATE_DOCS=1 cargo test -p chokepoint-core --test engine",
        path.display()
    );
}

#[test]
fn every_agent_maps_its_tool_and_session_events() {
    use chokepoint_core::model::external_events::{Agent, lookup};
    for agent in Agent::ALL {
        let any = |kind: EventKind| {
            chokepoint_core::model::external_events::EXTERNAL_EVENTS.iter().any(|e| e.agent == agent && e.maps_to == Some(kind))
        };
        assert!(any(EventKind::PreToolUse) && any(EventKind::SessionStart) && any(EventKind::BeforeSubmit), "{}", agent.as_str());
    }
    assert_eq!(lookup(Agent::Cursor, "beforeShellExecution").and_then(|e| e.tool), Some("execute_command"));
    assert_eq!(lookup(Agent::GeminiCli, "BeforeModel").and_then(|e| e.maps_to), Some(EventKind::TurnPrepare));
    assert!(lookup(Agent::ClaudeCode, "Notification").unwrap().maps_to.is_none());
    assert!(lookup(Agent::ClaudeCode, "NoSuchEvent").is_none());
}

#[test]
fn an_edit_is_picked_up_while_running_debounced_and_a_bad_one_keeps_the_last_good() {
    use std::sync::mpsc;
    use std::time::Duration;
    let ws = workspace(Some(HOOKS), Some(INTENTS));
    let engine = std::sync::Arc::new(Engine::open(ws.path()).unwrap());
    let (tx, rx) = mpsc::channel();
    let _watch = engine.watch(Duration::from_millis(100), move |d| tx.send(d).unwrap()).unwrap();

    // A burst of writes (as an editor's save) becomes one reload.
    for n in 0..3 {
        write(ws.path(), "hooks.yaml", &format!("version: 1\nhooks:\n  TurnEnd:\n    - name: h{n}\n      command: ['true']\n"));
    }
    let diagnostics = rx.recv_timeout(Duration::from_secs(10)).expect("a reload after the edit");
    assert!(diagnostics.is_empty());
    assert!(rx.recv_timeout(Duration::from_millis(400)).is_err(), "the burst was debounced into one reload");
    assert_eq!(engine.plan(&chokepoint_core::Event::new(EventKind::TurnEnd)), ["h2"]);

    write(ws.path(), "hooks.yaml", "version: 1\nhooks: [\n");
    let diagnostics = rx.recv_timeout(Duration::from_secs(10)).expect("a reload after the bad edit");
    assert_eq!(diagnostics.len(), 1);
    assert_eq!(engine.plan(&chokepoint_core::Event::new(EventKind::TurnEnd)), ["h2"], "the last good configuration keeps running");
}

#[test]
fn a_save_by_rename_is_picked_up_and_the_engines_own_writes_beside_it_are_not() {
    use std::sync::mpsc;
    use std::time::Duration;
    let ws = workspace(Some("version: 1\nhooks: {}\n"), Some(INTENTS));
    let engine = std::sync::Arc::new(Engine::open(ws.path()).unwrap());
    let (tx, rx) = mpsc::channel();
    let _watch = engine.watch(Duration::from_millis(50), move |d| tx.send(d).unwrap()).unwrap();

    // The ledger and the state database live in the same folder and change at every judged event;
    // so does any other file there. None of it is configuration.
    for _ in 0..20 {
        let mut event = chokepoint_core::Event::new(EventKind::TurnStart);
        event.ids.session = Some("s".into());
        engine.evaluate(event).unwrap();
    }
    engine.tracer().flush().unwrap();
    write(ws.path(), "notes.txt", "not configuration");
    assert!(
        chokepoint_core::ledger::chains::any(&chokepoint_core::Sidecar::new(ws.path())),
        "the events were recorded beside the configuration"
    );
    assert!(rx.recv_timeout(Duration::from_millis(400)).is_err(), "a write that is not configuration reloaded the engine");

    // Most editors save by writing a temporary file and renaming it over the old one.
    write(ws.path(), ".hooks.yaml.swp", "version: 1\nhooks:\n  TurnEnd:\n    - name: renamed\n      command: ['true']\n");
    fs::rename(ws.path().join(".orchestration/.hooks.yaml.swp"), ws.path().join(".orchestration/hooks.yaml")).unwrap();
    let diagnostics = rx.recv_timeout(Duration::from_secs(10)).expect("a reload after the save by rename");
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    assert_eq!(engine.plan(&chokepoint_core::Event::new(EventKind::TurnEnd)), ["renamed"]);
}

/// The README's YAML examples are configurations this engine accepts, so the documentation cannot
/// drift from the types.
#[test]
fn the_readme_examples_are_valid_configuration() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let blocks: Vec<&str> = readme.split("```yaml\n").skip(1).map(|b| b.split("```").next().unwrap()).collect();
    assert!(blocks.len() >= 3, "the README shows hooks.yaml, active_intents.yaml and the gatekeeper section");
    for block in blocks {
        // The writable folder is Linux's and macOS's; on Windows a folder is written with its drive.
        let windows = cfg!(windows).then(|| block.replace("[/tmp]", &format!("['{}']", std::env::temp_dir().display())));
        let block = windows.as_deref().unwrap_or(block);
        if block.starts_with("# .github/workflows/") {
            continue; // a CI workflow that runs chokepoint, not its configuration
        }
        let result = if block.contains("schema/active_intents") {
            chokepoint_core::IntentSet::parse(Path::new("README.md"), block).map(|_| ())
        } else if block.starts_with("gatekeeper:") {
            chokepoint_core::HooksConfig::parse(Path::new("README.md"), &format!("version: 1\n{block}")).map(|_| ())
        } else {
            chokepoint_core::HooksConfig::parse(Path::new("README.md"), block).map(|_| ())
        };
        assert!(result.is_ok(), "README example does not load: {result:?}\n{block}");
    }
}

/// Outside a governed workspace nothing is recorded, and the chain runs on the caller's event as it
/// came: a hook that reads the input reads the caller's (the synchronous entry once replaced it with
/// what its "load the input" callback gave, nothing for `evaluate`, so a write named by its input
/// alone was refused as naming no path).
#[test]
fn an_ungoverned_workspace_judges_the_input_the_caller_gave() {
    use chokepoint_core::{Decision, Event};
    let ws = tempfile::tempdir().unwrap();
    let engine = Engine::open(ws.path()).unwrap();
    let write = Event::tool(EventKind::PreToolUse, "write_to_file", serde_json::json!({ "path": "src/a.txt", "content": "x" }));
    assert_eq!(engine.evaluate(write).unwrap().decision, Decision::Allow);
    assert!(!ws.path().join(".orchestration").exists(), "judging never creates the sidecar folder");
}
