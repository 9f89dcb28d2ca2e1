//! A killed command's process tree ends as one on every platform (`base::tree`: a process group on
//! Unix, a Job Object on Windows), grandchildren that outlived their parent included: a timed-out
//! command hook's and a timed-out contained command's. The grandchild is this test binary run again
//! (`support/tree.rs`), so the same test runs on Linux, macOS and Windows (under Wine here).

use chokepoint_core::containment::{ContainPlan, LandlockMode, Shell, run};
use chokepoint_core::{Decision, Engine, Event, EventKind};
use serde_json::json;
use std::fs;
use std::time::Duration;

#[path = "support/tree.rs"]
mod tree;

#[test]
#[ignore = "not a test: the process tree the other tests start (support/tree.rs)"]
fn tree_helper() {
    tree::helper();
}

#[tokio::test]
async fn a_hook_past_its_timeout_is_killed_with_its_whole_tree_grandchildren_included() {
    let beat = tempfile::tempdir().unwrap();
    let beat = beat.path().join("beat");
    let ws = tempfile::tempdir().unwrap();
    fs::create_dir(ws.path().join(".orchestration")).unwrap();
    // The argv as a JSON list, which is YAML too.
    let argv = serde_json::to_string(&tree::parent_argv(&beat)).unwrap();
    let yaml = format!(
        "version: 1\nhooks:\n  PreToolUse:\n    - name: slow-gate\n      priority: critical\n      timeout: 5\n      command: {argv}\n"
    );
    fs::write(ws.path().join(".orchestration/hooks.yaml"), yaml).unwrap();
    let engine = Engine::open(ws.path()).unwrap();
    assert!(engine.info().diagnostics.is_empty(), "{:?}", engine.info().diagnostics);
    let mut event = Event::tool(EventKind::PreToolUse, "write_to_file", json!({ "path": "src/a.js", "content": "x" }));
    event.ids.session = Some("S-1".into());
    event.paths = vec!["src/a.js".into()];
    let started = std::time::Instant::now();
    let e = engine.evaluate_async(event, None).await;
    assert!(started.elapsed() < Duration::from_secs(30), "the hook waited {:?} for the tree it should have ended", started.elapsed());
    match &e.decision {
        Decision::Deny(d) => assert!(d.reason.contains("timed out after 5000 ms"), "{}", d.reason),
        other => panic!("expected a deny, got {other:?}"),
    }
    tree::assert_beat_stopped(&beat);
}

#[test]
fn a_contained_command_past_its_timeout_is_killed_with_its_whole_tree_grandchildren_included() {
    let beat = tempfile::tempdir().unwrap();
    let beat = beat.path().join("beat");
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    fs::create_dir_all(root.join("src")).unwrap();
    let mut plan = ContainPlan::for_scope(root, Some("INT-001"), &["src/**".to_owned()]);
    plan.landlock = LandlockMode::Off;
    let argv = tree::parent_argv(&beat).into_iter().map(Into::into).collect();
    let shell = Shell { argv, cwd: root.to_path_buf(), env: Vec::new(), capture: true };
    let started = std::time::Instant::now();
    let report = run(&plan, shell, Some(Duration::from_secs(5))).unwrap();
    assert!(report.timed_out && report.status.is_none(), "{report:?}");
    // Not waited out: the parent sleeps a minute, and its grandchild beats as long.
    assert!(started.elapsed() < Duration::from_secs(30), "the run waited {:?} for the tree it should have ended", started.elapsed());
    tree::assert_beat_stopped(&beat);
}
