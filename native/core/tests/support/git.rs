//! `git` as the tests run it, the core's and the CLI's alike (the CLI's `tests/common` includes this
//! file): a fixed identity and default branch, no signing, and none of the caller's
//! `GIT_DIR`/`GIT_WORK_TREE`.

use std::path::Path;
use std::process::{Command, Output};

/// `git ARGS` in `dir`; its output, whether or not it succeeded (a merge that conflicts, say).
pub fn git_output(dir: &Path, args: &[&str]) -> Output {
    Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"])
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .output()
        .expect("git runs")
}

/// `git ARGS` in `dir`, which must succeed (a failure fails the test with git's own words); its stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = git_output(dir, args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "git {}: {}{}", args.join(" "), stdout, String::from_utf8_lossy(&out.stderr));
    stdout
}
