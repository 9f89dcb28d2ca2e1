//! `run_tests` does not run a suite again over the tree it last passed on (`hooks::tested_tree`):
//! a completion gate fires after every turn of a chat. Any change since (a file edited, a new file,
//! a commit, another command) runs it again; a failure is never remembered; and what it remembers is
//! outside the workspace, where an agent cannot write a "passed" of its own.

#[path = "support/git.rs"]
mod git_support;
use git_support::git;

use chokepoint_core::{Decision, Engine, Event, EventKind};
use std::fs;
use std::process::Command;

#[tokio::test]
#[cfg_attr(wine, ignore = "runs git, and no Windows git is installed under Wine here")]
async fn the_tree_the_tests_passed_on_is_not_tested_again_and_any_change_is() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    // The per-user state folder of this (new, temporary) workspace, removed again at the end.
    let outside = chokepoint_core::Sidecar::new(root).outside_state_dir().expect("HOME is set");
    struct Removed(std::path::PathBuf);
    impl Drop for Removed {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }
    let _removed = Removed(outside.clone());
    let log = tempfile::tempdir().unwrap();
    let runs = log.path().join("runs.log");
    let runs = runs.as_path();
    fs::create_dir_all(root.join(".orchestration")).unwrap();
    // The suite counts its runs outside the tree, and fails while `FAIL` exists.
    let counted = format!("echo run >> {}; test ! -e FAIL", runs.display());
    fs::write(
        root.join(".orchestration/hooks.yaml"),
        format!("version: 1\nhooks:\n  BeforeSubmit:\n    - name: tests\n      builtin: run_tests\n      command: [sh, -c, '{counted}']\n"),
    )
    .unwrap();
    fs::write(root.join("a.js"), "one\n").unwrap();
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "start"]);
    let engine = Engine::open(root).unwrap();
    assert!(engine.info().diagnostics.is_empty(), "{:?}", engine.info().diagnostics);
    let complete = || engine.evaluate_async(Event::new(EventKind::BeforeSubmit), None);
    let count = || fs::read_to_string(runs).map_or(0, |t| t.lines().count());

    assert_eq!(complete().await.decision, Decision::Allow);
    assert_eq!(count(), 1);
    let again = complete().await;
    assert_eq!(again.decision, Decision::Allow);
    assert_eq!(count(), 1, "the same tree is not tested again");
    assert!(
        again.additional_context.iter().any(|c| c.contains("passed on this same tree") && c.contains("not run again")),
        "{:?}",
        again.additional_context
    );

    fs::write(root.join("a.js"), "one\ntwo\n").unwrap();
    complete().await;
    assert_eq!(count(), 2, "an edit is tested");
    fs::write(root.join("b.js"), "new\n").unwrap();
    complete().await;
    assert_eq!(count(), 3, "a new file is tested");
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "more"]);
    complete().await;
    assert_eq!(count(), 4, "a commit is a new HEAD");
    complete().await;
    assert_eq!(count(), 4);

    // A failure is not remembered: it runs (and fails) every time until it passes.
    fs::write(root.join("FAIL"), "").unwrap();
    assert!(matches!(complete().await.decision, Decision::Deny(_)));
    assert!(matches!(complete().await.decision, Decision::Deny(_)));
    assert_eq!(count(), 6);
    fs::remove_file(root.join("FAIL")).unwrap();
    complete().await;
    assert_eq!(count(), 6, "back to the tree that passed");

    // Nothing of it is in the workspace: it lives in the per-user state folder.
    let inside = Command::new("git").current_dir(root).args(["status", "--porcelain", "--ignored"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&inside.stdout).contains("tests-passed"));
    assert!(!outside.starts_with(root));
    assert!(outside.join("tests-passed").is_file());
}
