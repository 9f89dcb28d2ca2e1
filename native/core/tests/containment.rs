//! Shell containment observed (without isolation: the core alone cannot isolate, the `chokepoint`
//! program does, tested in native/cli/tests/containment.rs) with real processes on real files:
//! Landlock prevents writes outside the scope, the snapshot sees what changed, nothing is ever undone
//! (a comparison cannot tell whose a change is), and the report names everything.
#![cfg(unix)]

use chokepoint_core::containment::sandbox::{self, Confinement};
use chokepoint_core::containment::snapshot::{Change, ChangeKind};
use chokepoint_core::containment::{ContainPlan, ContainReport, Containment, Isolation, LandlockMode, Shell, run};
use std::fs;
use std::path::Path;
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

fn sh(root: &Path, script: &str) -> Shell {
    Shell::script(script, root)
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
    assert!(report.allowed.is_empty() && report.unattributed.is_empty() && report.others.is_empty(), "{report:?}");
    let error = report.tool_error().expect("a refused write is reported to the agent");
    assert!(error.contains("scope_expansion_request") && error.contains("src/auth/**"), "{error}");

    // Existing files outside the scope cannot be changed or removed, nor files moved out.
    let report = contained(root, LandlockMode::Auto, "echo x >> README.md; rm lib/util.py; mv src/auth/a.js lib/a.js; ln -s x lib/link");
    assert_eq!(fs::read_to_string(root.join("README.md")).unwrap(), "# readme\n");
    assert!(root.join("lib/util.py").exists() && root.join("src/auth/a.js").exists());
    assert!(!root.join("lib/a.js").exists() && fs::symlink_metadata(root.join("lib/link")).is_err());
    assert!(report.unattributed.is_empty(), "{:?}", report.unattributed);

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
fn landlock_grants_the_nearest_existing_folder_of_a_missing_scope_directory_and_creates_nothing() {
    let Some(_) = landlock_or_skip("landlock_grants_the_nearest_existing_folder_of_a_missing_scope_directory_and_creates_nothing") else {
        return;
    };
    let ws = workspace();
    let root = ws.path();
    let tmp = tempfile::tempdir().unwrap();

    let mut p = ContainPlan::for_scope(root, Some(INTENT), &["src/new/**".to_owned()]);
    p.writable = vec![tmp.path().to_path_buf(), std::env::temp_dir()];
    let script = format!("echo t > {}/t.txt && mkdir -p src/new && echo n > src/new/n.txt", tmp.path().display());
    let report = run(&p, sh(root, &script), None).unwrap();
    assert_eq!(report.exit_code(), Some(0), "{}", stderr(&report));
    assert_eq!(paths(&report.allowed), ["src/new", "src/new/n.txt"]);
    assert!(tmp.path().join("t.txt").exists());
    let warnings = report.warnings.join("\n");
    assert!(warnings.contains("contains the workspace"), "the system temp dir holds the workspace and is not granted: {warnings}");
    assert!(report.notes().is_empty(), "the person's warnings are not the model's notes: {:?}", report.notes());

    // Nothing is made in the work tree for a command that wrote nothing.
    let p = ContainPlan::for_scope(root, Some(INTENT), &["docs/api/**".to_owned()]);
    let report = run(&p, sh(root, "true"), None).unwrap();
    assert!(!root.join("docs").exists());
    assert!(report.notes().is_empty() && report.tool_error().is_none(), "{report:?}");
}

// ---- Observed: seen, reported, never undone (Landlock off: everything reaches the disk) ----

#[test]
fn a_person_s_write_during_an_observed_command_is_kept_and_reported_as_unattributed() {
    let ws = workspace();
    let root = ws.path().to_path_buf();
    let writer = {
        let root = root.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(400));
            fs::write(root.join("README.md"), "person\n").unwrap();
            fs::write(root.join("lib/person.py"), "x\n").unwrap();
        })
    };
    let report = contained(&root, LandlockMode::Off, "sleep 1.2");
    writer.join().unwrap();
    assert_eq!(fs::read_to_string(root.join("README.md")).unwrap(), "person\n");
    assert_eq!(fs::read_to_string(root.join("lib/person.py")).unwrap(), "x\n");
    assert!(matches!(report.isolation, Isolation::Observed { .. }), "{:?}", report.isolation);
    assert_eq!(report.unattributed, [change("README.md", ChangeKind::Modified), change("lib/person.py", ChangeKind::Created)]);
    assert!(report.refused.is_empty() && report.not_applied.is_empty() && !report.held_back());
    let error = report.tool_error().unwrap();
    assert!(error.contains("cannot tell whether the command or someone else") && error.contains("`lib/person.py`: created"), "{error}");
}

#[test]
fn with_landlock_a_change_outside_the_granted_folders_is_someone_else_s() {
    let Some(_) = landlock_or_skip("with_landlock_a_change_outside_the_granted_folders_is_someone_else_s") else { return };
    let ws = workspace();
    let root = ws.path().to_path_buf();
    let writer = {
        let root = root.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(400));
            fs::write(root.join("lib/person.py"), "x\n").unwrap();
        })
    };
    let report = contained(&root, LandlockMode::Auto, "sleep 1.2; echo ok > src/auth/ok.ts");
    writer.join().unwrap();
    assert_eq!(fs::read_to_string(root.join("lib/person.py")).unwrap(), "x\n");
    assert_eq!(report.others, [change("lib/person.py", ChangeKind::Created)]);
    assert_eq!(report.allowed, [change("src/auth/ok.ts", ChangeKind::Created)]);
    assert!(report.unattributed.is_empty());
    assert_eq!(report.tool_error(), None, "the kernel refused the command any write there: nothing to tell the model");
}

#[test]
fn an_observed_command_s_own_writes_outside_the_scope_are_kept_and_reported() {
    let ws = workspace();
    let root = ws.path();
    let report = contained(root, LandlockMode::Off, "echo > README.md; rm lib/util.py; sed -i 's/login/logout/' src/auth/login.ts");
    assert_eq!(fs::read_to_string(root.join("README.md")).unwrap(), "\n");
    assert!(!root.join("lib/util.py").exists());
    assert_eq!(report.allowed, [change("src/auth/login.ts", ChangeKind::Modified)]);
    assert_eq!(report.unattributed, [change("README.md", ChangeKind::Modified), change("lib/util.py", ChangeKind::Deleted)]);
    let error = report.tool_error().unwrap();
    assert!(error.contains("INT-001") && error.contains("scope_expansion_request(intent_id, paths, justification)"), "{error}");
}

#[test]
fn the_next_command_reuses_the_last_snapshot() {
    let ws = workspace();
    let root = ws.path();
    let p = plan(root, LandlockMode::Off);
    let mut containment = Containment::new();
    let first = containment.run(&p, sh(root, "echo 1 > src/auth/one.ts && echo x > README.md"), None).unwrap();
    assert_eq!(first.unattributed, [change("README.md", ChangeKind::Modified)]);
    let second = containment.run(&p, sh(root, "echo 2 >> src/auth/one.ts"), None).unwrap();
    assert_eq!(second.allowed, [change("src/auth/one.ts", ChangeKind::Modified)]);
    assert!(second.unattributed.is_empty(), "{:?}", second.unattributed);
    assert_eq!(fs::read_to_string(root.join("src/auth/one.ts")).unwrap(), "1\n2\n");
}

// ---- Process handling ----

#[test]
fn a_timeout_kills_the_whole_process_group() {
    let ws = workspace();
    let root = ws.path();
    let started = Instant::now();
    let report = run(&plan(root, LandlockMode::Off), sh(root, "sleep 30 & echo $!; sleep 30"), Some(Duration::from_millis(500))).unwrap();
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    assert!(report.timed_out && report.status.is_none());
    assert!(report.notes().iter().any(|n| n.contains("timed out")));
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

    let shell = Shell { argv: vec!["true".into()], cwd: root.to_path_buf(), env: Vec::new(), capture: false };
    let report = run(&plan(root, LandlockMode::Off), shell, None).unwrap();
    assert!(report.output.is_none());
    assert_eq!(report.exit_code(), Some(0));
}

#[test]
#[cfg_attr(
    qemu,
    ignore = "qemu-user runs glibc's posix_spawn (a vfork) as a fork, so an exec that fails reaches the parent as the child's exit 127, not as an error of the spawn; the same code is tested natively in the cargo layer"
)]
fn a_command_that_cannot_start_is_an_error() {
    let ws = workspace();
    let p = ContainPlan::for_scope(ws.path(), Some(INTENT), &["docs/**".to_owned()]);
    let shell = Shell { argv: vec!["/nonexistent/chokepoint-test".into()], cwd: ws.path().to_path_buf(), env: Vec::new(), capture: true };
    let err = run(&p, shell, None).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    assert!(!ws.path().join("docs").exists());
}

#[test]
fn a_cancelled_command_is_killed_with_its_group() {
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
    let report = run(&plan, sh(root, "echo seen > outside.txt; sleep 30 & wait"), Some(Duration::from_secs(60))).unwrap();
    stopper.join().unwrap();
    assert!(report.cancelled && !report.timed_out, "{report:?}");
    assert!(started.elapsed() < Duration::from_secs(10), "stopped at once, not after the sleep: {:?}", started.elapsed());
    assert_eq!(paths(&report.unattributed), ["outside.txt"]);
}

// ---- Layer 1 on macOS: Seatbelt ----

/// The observed run on a Mac: the command runs under `sandbox-exec` with the scope's profile, so the
/// kernel refuses a write outside the scope as it happens, one inside lands, and the snapshot still
/// reports what changed (`sandbox::confined_argv` and `seatbelt::wrap` are tested on every platform).
#[test]
#[cfg_attr(not(target_os = "macos"), ignore = "needs macOS's kernel and /usr/bin/sandbox-exec: Seatbelt exists nowhere else")]
fn seatbelt_blocks_writes_outside_the_scope_and_allows_them_inside() {
    let ws = workspace();
    let root = ws.path();
    let report = contained(root, LandlockMode::Auto, "echo x > outside.txt");
    assert_eq!(report.confinement, Confinement::Enforced { abi: 0 });
    assert_ne!(report.exit_code(), Some(0));
    assert!(stderr(&report).contains("Operation not permitted"), "{}", stderr(&report));
    assert!(!root.join("outside.txt").exists(), "the kernel refused the write: nothing to undo");
    assert!(report.allowed.is_empty() && report.unattributed.is_empty(), "{report:?}");

    let report = contained(root, LandlockMode::Auto, "echo ok > src/auth/a.txt && echo x >> README.md 2>/dev/null; true");
    assert_eq!(fs::read_to_string(root.join("src/auth/a.txt")).unwrap(), "ok\n");
    assert_eq!(fs::read_to_string(root.join("README.md")).unwrap(), "# readme\n");
    assert_eq!(paths(&report.allowed), ["src/auth/a.txt"]);

    // Turned off, the command runs observed and unconfined, as on a kernel without Landlock.
    let report = contained(root, LandlockMode::Off, "echo x > outside.txt");
    assert!(!report.confinement.is_enforced());
    assert!(root.join("outside.txt").exists());
}
