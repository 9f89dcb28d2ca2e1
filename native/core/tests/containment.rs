//! Shell containment with real processes on real files: Landlock prevents writes outside the scope,
//! the snapshot undoes the ones it did not prevent, and the report names everything.
#![cfg(unix)]

use chokepoint_core::containment::{ContainPlan, ContainReport, Containment, LandlockMode, run};
use chokepoint_core::sandbox::{self, Confinement};
use chokepoint_core::snapshot::{Change, ChangeKind};
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const INTENT: &str = "INT-001";

fn workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    for (path, content) in [
        ("src/auth/a.js", "export const a = 1;\n"),
        ("src/auth/login.ts", "login\n"),
        ("lib/util.py", "def util(): pass\n"),
        ("README.md", "# readme\n"),
        (".orchestration/hooks.yaml", "version: 1\n"),
    ] {
        fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
        fs::write(root.join(path), content).unwrap();
    }
    ws
}

fn plan(root: &Path, mode: LandlockMode) -> ContainPlan {
    let mut plan = ContainPlan::for_scope(root, Some(INTENT), &["src/auth/**".to_owned()]);
    plan.landlock = mode;
    plan
}

fn sh(root: &Path, script: &str) -> Command {
    let mut c = Command::new("sh");
    c.arg("-c").arg(script).current_dir(root).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

fn contained(root: &Path, mode: LandlockMode, script: &str) -> ContainReport {
    run(&plan(root, mode), sh(root, script), Some(Duration::from_secs(20))).unwrap()
}

fn change(path: &str, kind: ChangeKind) -> Change {
    Change { path: path.to_owned(), kind }
}

fn paths(changes: &[Change]) -> Vec<&str> {
    changes.iter().map(|c| c.path.as_str()).collect()
}

fn stderr(report: &ContainReport) -> String {
    report.output.as_ref().map(|o| String::from_utf8_lossy(&o.stderr).into_owned()).unwrap_or_default()
}

/// Whether this machine should have Landlock: the kernel's LSM list names it, or the runner says so.
fn landlock_expected() -> bool {
    std::env::var_os("CHOKEPOINT_REQUIRE_LANDLOCK").is_some()
        || fs::read_to_string("/sys/kernel/security/lsm").is_ok_and(|l| l.split(',').any(|m| m.trim() == "landlock"))
}

/// The kernel's ABI, or `None` after saying why the Landlock part is skipped.
fn landlock_or_skip(test: &str) -> Option<u32> {
    let abi = sandbox::landlock_abi();
    if cfg!(target_os = "linux") && landlock_expected() {
        assert!(abi.is_some(), "the kernel lists Landlock but landlock_abi() is None");
    }
    if abi.is_none() {
        eprintln!("{test}: skipped: this kernel reports no Landlock ABI (not Linux, not built in, or not enabled at boot)");
    }
    abi
}

// ---- Layer 1: Landlock ----

#[test]
fn landlock_blocks_writes_outside_the_scope_and_allows_them_inside() {
    let Some(abi) = landlock_or_skip("landlock_blocks_writes_outside_the_scope_and_allows_them_inside") else { return };
    assert!(abi >= 1);
    let ws = workspace();
    let root = ws.path();

    let report = contained(root, LandlockMode::Auto, "echo x > outside.txt");
    assert!(matches!(report.confinement, Confinement::Enforced { .. } | Confinement::Partial { .. }), "{:?}", report.confinement);
    assert_ne!(report.exit_code(), Some(0));
    assert!(stderr(&report).contains("Permission denied"), "{}", stderr(&report));
    assert!(!root.join("outside.txt").exists(), "the kernel refused the write: nothing to undo");
    assert!(report.reverted.is_empty() && report.allowed.is_empty() && report.not_reverted.is_empty());
    let error = report.tool_error().expect("a refused write is reported to the agent");
    assert!(error.contains("scope_expansion_request") && error.contains("src/auth/**"), "{error}");

    // Existing files outside the scope cannot be changed or removed, nor files moved out.
    let report = contained(root, LandlockMode::Auto, "echo x >> README.md; rm lib/util.py; mv src/auth/a.js lib/a.js; ln -s x lib/link");
    assert_eq!(fs::read_to_string(root.join("README.md")).unwrap(), "# readme\n");
    assert!(root.join("lib/util.py").exists() && root.join("src/auth/a.js").exists());
    assert!(!root.join("lib/a.js").exists() && fs::symlink_metadata(root.join("lib/link")).is_err());
    assert!(report.reverted.is_empty(), "{:?}", report.reverted);

    let report = contained(
        root,
        LandlockMode::Auto,
        "echo ok > src/auth/a.txt && mkdir -p src/auth/deep && echo deep > src/auth/deep/b.txt 2>/dev/null",
    );
    assert_eq!(report.exit_code(), Some(0), "{}", stderr(&report));
    assert_eq!(fs::read_to_string(root.join("src/auth/a.txt")).unwrap(), "ok\n");
    assert_eq!(paths(&report.allowed), ["src/auth/a.txt", "src/auth/deep", "src/auth/deep/b.txt"]);
    assert_eq!(report.tool_error(), None);
    assert!(report.notes().is_empty(), "{:?}", report.notes());

    // Only the command was confined, never this process.
    fs::write(root.join("written_by_the_test.txt"), "free").unwrap();
}

#[test]
fn landlock_grants_missing_scope_dirs_and_named_temp_dirs_only() {
    let Some(_) = landlock_or_skip("landlock_grants_missing_scope_dirs_and_named_temp_dirs_only") else { return };
    let ws = workspace();
    let root = ws.path();
    let tmp = tempfile::tempdir().unwrap();

    let mut p = ContainPlan::for_scope(root, Some(INTENT), &["src/new/**".to_owned()]);
    p.writable = vec![tmp.path().to_path_buf(), std::env::temp_dir()];
    let script = format!("echo t > {}/t.txt && echo n > src/new/n.txt", tmp.path().display());
    let report = run(&p, sh(root, &script), None).unwrap();
    assert_eq!(report.exit_code(), Some(0), "{}", stderr(&report));
    assert_eq!(report.created_scope_dirs, ["src/new"]);
    assert_eq!(paths(&report.allowed), ["src/new/n.txt"]);
    assert!(tmp.path().join("t.txt").exists());
    let notes = report.notes().join("\n");
    assert!(notes.contains("contains the workspace"), "the system temp dir holds the workspace and is not granted: {notes}");
    assert!(notes.contains("`src/new`"), "{notes}");

    // A scope directory created for a command that wrote nothing is gone again.
    let mut p = ContainPlan::for_scope(root, Some(INTENT), &["docs/api/**".to_owned()]);
    p.landlock = LandlockMode::Auto;
    let report = run(&p, sh(root, "true"), None).unwrap();
    assert_eq!(report.created_scope_dirs, ["docs/api"]);
    assert!(!root.join("docs").exists());
}

// ---- Layer 2: snapshot and revert (Landlock off: everything reaches the disk) ----

#[test]
fn an_overwritten_file_outside_the_scope_is_restored_byte_for_byte() {
    let ws = workspace();
    let root = ws.path();
    let report = contained(root, LandlockMode::Off, "echo > README.md");
    assert_eq!(fs::read_to_string(root.join("README.md")).unwrap(), "# readme\n");
    assert_eq!(report.reverted, [change("README.md", ChangeKind::Modified)]);
    assert!(report.allowed.is_empty());
    let error = report.tool_error().unwrap();
    assert!(error.contains("`README.md`: modified; restored"), "{error}");
    assert!(error.contains("INT-001") && error.contains("scope_expansion_request(intent_id, paths, justification)"), "{error}");
    assert!(report.notes().iter().any(|n| n.contains("Landlock is turned off") && n.contains("undone afterwards, not prevented")));
}

#[test]
fn a_removed_file_comes_back() {
    let ws = workspace();
    let root = ws.path();
    let report = contained(root, LandlockMode::Off, "rm lib/util.py && rmdir lib");
    assert_eq!(fs::read_to_string(root.join("lib/util.py")).unwrap(), "def util(): pass\n");
    assert_eq!(report.reverted, [change("lib", ChangeKind::Deleted), change("lib/util.py", ChangeKind::Deleted)]);
}

#[test]
fn sed_in_place_is_undone_outside_the_scope_and_kept_inside() {
    let ws = workspace();
    let root = ws.path();
    let report = contained(root, LandlockMode::Off, "sed -i 's/util/evil/' lib/util.py && sed -i 's/login/logout/' src/auth/login.ts");
    assert_eq!(report.exit_code(), Some(0), "{}", stderr(&report));
    assert_eq!(fs::read_to_string(root.join("lib/util.py")).unwrap(), "def util(): pass\n");
    assert_eq!(fs::read_to_string(root.join("src/auth/login.ts")).unwrap(), "logout\n");
    assert_eq!(report.reverted, [change("lib/util.py", ChangeKind::Modified)]);
    assert_eq!(report.allowed, [change("src/auth/login.ts", ChangeKind::Modified)]);
}

#[test]
fn a_file_python_creates_outside_the_scope_is_removed() {
    let ws = workspace();
    let root = ws.path();
    if Command::new("python3").arg("-c").arg("pass").status().map(|s| !s.success()).unwrap_or(true) {
        eprintln!("a_file_python_creates_outside_the_scope_is_removed: skipped: no python3");
        return;
    }
    let report = contained(root, LandlockMode::Off, "python3 -c \"open('lib/x.py','w').write('1')\"");
    assert_eq!(report.exit_code(), Some(0), "{}", stderr(&report));
    assert!(!root.join("lib/x.py").exists());
    assert_eq!(report.reverted, [change("lib/x.py", ChangeKind::Created)]);
    assert!(report.tool_error().unwrap().contains("`lib/x.py`: created; removed"));
}

#[test]
fn a_file_moved_out_of_the_scope_is_moved_back() {
    let ws = workspace();
    let root = ws.path();
    let report = contained(root, LandlockMode::Off, "mv src/auth/a.js lib/a.js");
    assert!(!root.join("lib/a.js").exists());
    assert_eq!(fs::read_to_string(root.join("src/auth/a.js")).unwrap(), "export const a = 1;\n");
    assert_eq!(report.reverted, [change("lib/a.js", ChangeKind::Created), change("src/auth/a.js", ChangeKind::Deleted)]);
    assert!(report.allowed.is_empty());
    let error = report.tool_error().unwrap();
    assert!(error.contains("`src/auth/a.js`: moved to `lib/a.js`, outside the scope; moved back"), "{error}");
}

#[test]
fn symlinks_and_directories_created_outside_are_removed() {
    let ws = workspace();
    let root = ws.path();
    let report = contained(root, LandlockMode::Off, "ln -s /etc/passwd lib/passwd && mkdir -p build/out && echo x > build/out/y");
    assert!(fs::symlink_metadata(root.join("lib/passwd")).is_err());
    assert!(!root.join("build").exists());
    assert_eq!(paths(&report.reverted), ["build", "build/out", "build/out/y", "lib/passwd"]);
}

#[test]
fn a_symlink_retargeted_outside_the_scope_points_back() {
    let ws = workspace();
    let root = ws.path();
    std::os::unix::fs::symlink("util.py", root.join("lib/current")).unwrap();
    let report = contained(root, LandlockMode::Off, "ln -sfn /etc/shadow lib/current");
    assert_eq!(fs::read_link(root.join("lib/current")).unwrap(), Path::new("util.py"));
    assert_eq!(report.reverted, [change("lib/current", ChangeKind::Modified)]);
}

#[test]
fn a_directory_swapped_for_a_symlink_out_of_the_workspace_comes_back_without_writing_through_it() {
    let ws = workspace();
    let root = ws.path();
    let outside = tempfile::tempdir().unwrap();
    let script = format!("rm -r lib && ln -s {} lib", outside.path().display());
    let report = contained(root, LandlockMode::Off, &script);
    assert!(fs::symlink_metadata(root.join("lib")).unwrap().is_dir());
    assert_eq!(fs::read_to_string(root.join("lib/util.py")).unwrap(), "def util(): pass\n");
    assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0, "nothing was restored through the link");
    assert_eq!(report.reverted, [change("lib", ChangeKind::TypeChanged), change("lib/util.py", ChangeKind::Deleted)]);
}

#[test]
fn governance_files_are_restored_even_inside_a_wide_scope() {
    let ws = workspace();
    let root = ws.path();
    let mut p = ContainPlan::for_scope(root, Some(INTENT), &["**".to_owned()]);
    p.landlock = LandlockMode::Off;
    let report = run(&p, sh(root, "echo 'hooks: {}' >> .orchestration/hooks.yaml && echo ok > notes.md"), None).unwrap();
    assert_eq!(fs::read_to_string(root.join(".orchestration/hooks.yaml")).unwrap(), "version: 1\n");
    assert_eq!(report.reverted, [change(".orchestration/hooks.yaml", ChangeKind::Modified)]);
    assert_eq!(report.allowed, [change("notes.md", ChangeKind::Created)]);
}

#[test]
fn excluded_runtime_files_are_left_alone() {
    let ws = workspace();
    let root = ws.path();
    let report = contained(root, LandlockMode::Off, "echo row > .orchestration/state.db && echo '{}' >> .orchestration/agent_trace.jsonl");
    assert_eq!(fs::read_to_string(root.join(".orchestration/state.db")).unwrap(), "row\n");
    assert_eq!(fs::read_to_string(root.join(".orchestration/agent_trace.jsonl")).unwrap(), "{}\n");
    assert!(report.reverted.is_empty() && report.allowed.is_empty() && report.not_reverted.is_empty(), "{report:?}");
    assert_eq!(report.tool_error(), None);
}

#[test]
fn what_cannot_be_held_is_reported_and_not_silently_lost() {
    let ws = workspace();
    let root = ws.path();
    assert!(Command::new("mkfifo").arg(root.join("lib/pipe")).status().unwrap().success());
    fs::write(root.join("lib/big.bin"), vec![7u8; 4096]).unwrap();
    let mut p = plan(root, LandlockMode::Off);
    p.max_held_bytes = 1024;
    let report = run(&p, sh(root, "echo small > lib/big.bin && rm lib/pipe"), None).unwrap();
    let held: Vec<(&str, String)> = report.not_held.iter().map(|n| (n.path.as_str(), n.reason.to_string())).collect();
    assert_eq!(held.len(), 2, "{held:?}");
    assert!(held[0].0 == "lib/big.bin" && held[0].1.contains("4096 bytes"), "{held:?}");
    assert!(held[1].0 == "lib/pipe" && held[1].1.contains("fifo"), "{held:?}");
    let not: Vec<&str> = report.not_reverted.iter().map(|n| n.change.path.as_str()).collect();
    assert_eq!(not, ["lib/big.bin", "lib/pipe"]);
    assert!(report.reverted.is_empty());
    let error = report.tool_error().unwrap();
    assert!(error.contains("could not be undone") && error.contains("`lib/big.bin`") && error.contains("`lib/pipe`"), "{error}");
    assert!(report.notes().iter().any(|n| n.contains("2 paths could not be held")), "{:?}", report.notes());
}

#[test]
fn the_next_command_reuses_the_last_snapshot() {
    let ws = workspace();
    let root = ws.path();
    let p = plan(root, LandlockMode::Off);
    let mut containment = Containment::new();
    let first = containment.run(&p, sh(root, "echo 1 > src/auth/one.ts && echo x > README.md"), None).unwrap();
    assert_eq!(first.reverted, [change("README.md", ChangeKind::Modified)]);
    let second = containment.run(&p, sh(root, "echo 2 >> src/auth/one.ts && rm README.md"), None).unwrap();
    assert_eq!(second.allowed, [change("src/auth/one.ts", ChangeKind::Modified)]);
    assert_eq!(second.reverted, [change("README.md", ChangeKind::Deleted)]);
    assert_eq!(fs::read_to_string(root.join("README.md")).unwrap(), "# readme\n");
    assert_eq!(fs::read_to_string(root.join("src/auth/one.ts")).unwrap(), "1\n2\n");
}

// ---- Process handling ----

#[test]
fn a_timeout_kills_the_whole_process_group() {
    let ws = workspace();
    let root = ws.path();
    let started = Instant::now();
    let report =
        run(&plan(root, LandlockMode::Off), sh(root, "sleep 30 & echo $! > lib/grandchild; sleep 30"), Some(Duration::from_millis(500)))
            .unwrap();
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    assert!(report.timed_out && report.status.is_none());
    assert!(report.notes().iter().any(|n| n.contains("timed out")));
    // The pid file it wrote outside the scope is undone like anything else; read it from the output
    // of a second run instead.
    assert_eq!(report.reverted, [change("lib/grandchild", ChangeKind::Created)]);

    let report = run(&plan(root, LandlockMode::Off), sh(root, "sleep 30 & echo $!; sleep 30"), Some(Duration::from_millis(500))).unwrap();
    let pid: u32 = String::from_utf8_lossy(&report.output.unwrap().stdout).trim().parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        // Gone, or a zombie waiting for a reaper that is not us.
        let state =
            fs::read_to_string(format!("/proc/{pid}/stat")).ok().and_then(|s| s.rsplit(')').next().map(|r| r.trim().chars().next()));
        if matches!(state, None | Some(Some('Z'))) {
            break;
        }
        assert!(Instant::now() < deadline, "the grandchild {pid} outlived the timeout");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn piped_output_is_captured_and_inherited_output_is_not() {
    let ws = workspace();
    let root = ws.path();
    let report = contained(root, LandlockMode::Off, "echo out; echo err >&2; exit 3");
    assert_eq!(report.exit_code(), Some(3));
    let output = report.output.unwrap();
    assert_eq!((output.stdout.as_slice(), output.stderr.as_slice()), (&b"out\n"[..], &b"err\n"[..]));

    let mut c = Command::new("true");
    c.current_dir(root).stdout(Stdio::null()).stderr(Stdio::null());
    let report = run(&plan(root, LandlockMode::Off), c, None).unwrap();
    assert!(report.output.is_none());
    assert_eq!(report.exit_code(), Some(0));
}

#[test]
fn a_command_that_cannot_start_is_an_error() {
    let ws = workspace();
    let p = ContainPlan::for_scope(ws.path(), Some(INTENT), &["docs/**".to_owned()]);
    let err = run(&p, Command::new("/nonexistent/chokepoint-test"), None).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    // The scope directory created for it (with Landlock) was not left behind.
    assert!(!ws.path().join("docs").exists());
}

#[test]
fn a_cancelled_command_is_killed_with_its_group_and_what_it_did_outside_is_undone() {
    let ws = workspace();
    let root = ws.path();
    let mut plan = plan(root, LandlockMode::Off);
    let cancel = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    plan.cancel = Some(std::sync::Arc::clone(&cancel));
    let flag = std::sync::Arc::clone(&cancel);
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        flag.store(true, std::sync::atomic::Ordering::Release);
    });
    let started = std::time::Instant::now();
    // A child of the shell keeps the group alive: the whole group must go, not just the leader.
    let report = run(&plan, sh(root, "echo leaked > outside.txt; sleep 30 & wait"), Some(Duration::from_secs(60))).unwrap();
    stopper.join().unwrap();
    assert!(report.cancelled && !report.timed_out, "{report:?}");
    assert!(started.elapsed() < Duration::from_secs(10), "stopped at once, not after the sleep: {:?}", started.elapsed());
    assert!(!root.join("outside.txt").exists(), "what it wrote outside its scope is undone after a cancel too");
    assert_eq!(report.reverted.iter().map(|c| c.path.as_str()).collect::<Vec<_>>(), ["outside.txt"]);
}
