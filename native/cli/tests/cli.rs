//! The `chokepoint` binary as a user runs it: output, exit codes.

use std::fs;
use std::process::{Command, Output};

fn chokepoint(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_chokepoint")).args(args).output().unwrap()
}

fn sample_workspace() -> tempfile::TempDir {
    let repo = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join(".orchestration")).unwrap();
    for f in ["hooks.yaml", "active_intents.yaml"] {
        fs::copy(format!("{repo}/.orchestration/{f}"), dir.path().join(".orchestration").join(f)).unwrap();
    }
    dir
}

#[test]
fn version_flag_prints_the_crate_version() {
    let out = chokepoint(&["--version"]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), format!("chokepoint {}", env!("CARGO_PKG_VERSION")));
}

#[test]
fn info_json_describes_the_sample() {
    let ws = sample_workspace();
    let out = chokepoint(&["info", "--json", "--workspace", ws.path().to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(v["hooks"]["status"], "loaded");
    assert_eq!(v["hookCount"], 3);
    assert_eq!(v["intentIds"], serde_json::json!(["INT-001", "INT-002", "INT-003"]));
    assert_eq!(v["taskTypes"], serde_json::json!(["bugfix"]));
}

#[test]
fn config_check_exits_2_with_a_located_error() {
    let ws = sample_workspace();
    let hooks = ws.path().join(".orchestration/hooks.yaml");
    fs::write(&hooks, "version: 1\nhooks:\n  BeforeSubmit:\n    - name: t\n      builtin: run_tests\n      timeot: 5\n").unwrap();
    let out = chokepoint(&["config", "check", "--workspace", ws.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with(&format!("error: {}:6:7: ", hooks.display())), "{stderr}");
    assert!(stderr.contains("unknown field `timeot`"), "{stderr}");
}

#[test]
fn config_check_passes_on_the_sample() {
    let ws = sample_workspace();
    let out = chokepoint(&["config", "check", "--workspace", ws.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "configuration ok: 3 hooks, 3 intents");
}

#[test]
fn a_missing_workspace_is_a_usage_error() {
    let out = chokepoint(&["info", "--workspace", "/no/such/workspace/here"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: cannot open workspace `/no/such/workspace/here`"));
}
