//! Shell containment isolated (the command in namespaces of its own over an overlay of the workspace,
//! with this crate's `chokepoint` program as its supervisor), with real processes on real files: the
//! command's changes inside the scope are applied, those outside never land, and nobody else's work
//! is ever touched, with Landlock on and off. (Observed containment, without isolation, is tested in
//! the core's `tests/containment.rs`.)
#![cfg(target_os = "linux")]

mod common;

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
        ("src/billing/pay.ts", "pay\n"),
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
    plan.isolator = Some(env!("CARGO_BIN_EXE_chokepoint").into());
    plan
}

fn contained(root: &Path, mode: LandlockMode, script: &str) -> ContainReport {
    let report = run(&plan(root, mode), Shell::script(script, root), Some(Duration::from_secs(20))).unwrap();
    assert_eq!(report.isolation, Isolation::Isolated, "{report:?}");
    report
}

/// Someone else (a person, another agent) writing in the workspace `after_ms` into a command:
/// `write` runs on a thread of its own; join the handle once the command has ended.
fn meanwhile(root: &Path, after_ms: u64, write: impl FnOnce(&Path) + Send + 'static) -> std::thread::JoinHandle<()> {
    let root = root.to_path_buf();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(after_ms));
        write(&root);
    })
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

/// Whether this machine can isolate a command: one probe, which must succeed where the kernel offers
/// user namespaces and overlayfs (or the runner says so with `CHOKEPOINT_REQUIRE_ISOLATION`).
fn isolation_or_skip(test: &str) -> bool {
    let ws = workspace();
    let report = run(&plan(ws.path(), LandlockMode::Off), Shell::script("true", ws.path()), None).unwrap();
    let expected = std::env::var_os("CHOKEPOINT_REQUIRE_ISOLATION").is_some()
        || (fs::read_to_string("/proc/sys/user/max_user_namespaces").is_ok_and(|n| n.trim() != "0")
            && fs::read_to_string("/proc/filesystems").is_ok_and(|f| f.contains("overlay")));
    match report.isolation {
        Isolation::Isolated => true,
        Isolation::Observed { reason } => {
            assert!(!expected, "this kernel has user namespaces and overlayfs, but the command was not isolated: {reason}");
            eprintln!("{test}: skipped: commands cannot be isolated here: {reason}");
            false
        }
    }
}

fn both_modes(test: &str, check: impl Fn(LandlockMode)) {
    if !isolation_or_skip(test) {
        return;
    }
    for mode in [LandlockMode::Off, LandlockMode::Auto] {
        check(mode);
    }
}

// ---- Nobody else's work is touched (issue 27, item 1) ----

#[test]
#[cfg_attr(
    qemu,
    ignore = "qemu-user's clone() takes no namespace flags (EINVAL), so no command can be isolated under it; the same Linux code is tested natively in the cargo layer"
)]
fn a_person_and_another_agent_writing_during_a_command_keep_their_work() {
    both_modes("a_person_and_another_agent_writing_during_a_command_keep_their_work", |mode| {
        let ws = workspace();
        let root = ws.path().to_path_buf();
        let writer = meanwhile(&root, 700, |root| {
            // Another agent's allowed write outside this session's scope, a person's new file, and
            // a person's edit of a file inside the scope that the command does not touch.
            fs::write(root.join("src/billing/pay.ts"), "edit\n").unwrap();
            fs::create_dir_all(root.join("docs")).unwrap();
            fs::write(root.join("docs/person.md"), "x\n").unwrap();
            fs::write(root.join("src/auth/login.ts"), "person\n").unwrap();
        });
        let report = contained(&root, mode, "sleep 2; echo mine > src/auth/new.ts");
        writer.join().unwrap();
        assert_eq!(fs::read_to_string(root.join("src/billing/pay.ts")).unwrap(), "edit\n", "{mode:?}");
        assert_eq!(fs::read_to_string(root.join("docs/person.md")).unwrap(), "x\n", "{mode:?}");
        assert_eq!(fs::read_to_string(root.join("src/auth/login.ts")).unwrap(), "person\n", "{mode:?}");
        assert_eq!(fs::read_to_string(root.join("src/auth/new.ts")).unwrap(), "mine\n", "{mode:?}");
        assert_eq!(report.allowed, [change("src/auth/new.ts", ChangeKind::Created)], "{mode:?}");
        assert!(report.refused.is_empty() && report.not_applied.is_empty(), "{report:?}");
        assert_eq!(report.exit_code(), Some(0));
        assert_eq!(report.tool_error(), None);
    });
}

#[test]
#[cfg_attr(
    qemu,
    ignore = "qemu-user's clone() takes no namespace flags (EINVAL), so no command can be isolated under it; the same Linux code is tested natively in the cargo layer"
)]
fn a_file_someone_changed_meanwhile_keeps_their_version_and_the_command_s_is_set_aside() {
    both_modes("a_file_someone_changed_meanwhile_keeps_their_version_and_the_command_s_is_set_aside", |mode| {
        let ws = workspace();
        let root = ws.path().to_path_buf();
        let writer = meanwhile(&root, 500, |root| {
            fs::write(root.join("src/auth/login.ts"), "person\n").unwrap();
        });
        let report = contained(&root, mode, "sleep 1.5; echo agent > src/auth/login.ts; echo ok > src/auth/b.ts");
        writer.join().unwrap();
        assert_eq!(fs::read_to_string(root.join("src/auth/login.ts")).unwrap(), "person\n");
        assert_eq!(fs::read_to_string(root.join("src/auth/b.ts")).unwrap(), "ok\n");
        assert_eq!(report.allowed, [change("src/auth/b.ts", ChangeKind::Created)]);
        assert_eq!(report.not_applied.len(), 1, "{report:?}");
        let conflict = &report.not_applied[0];
        assert!(conflict.conflict && conflict.change.path == "src/auth/login.ts", "{conflict:?}");
        let kept = conflict.kept.as_deref().expect("the command's version is kept");
        assert_eq!(fs::read_to_string(kept).unwrap(), "agent\n");
        assert!(report.held_back());
        let error = report.tool_error().unwrap();
        assert!(error.contains("`src/auth/login.ts`") && error.contains("someone else changed it"), "{error}");
    });
}

// ---- The command's own writes outside the scope never land ----

#[test]
#[cfg_attr(
    qemu,
    ignore = "qemu-user's clone() takes no namespace flags (EINVAL), so no command can be isolated under it; the same Linux code is tested natively in the cargo layer"
)]
fn writes_outside_the_scope_never_land_and_inside_they_do() {
    both_modes("writes_outside_the_scope_never_land_and_inside_they_do", |mode| {
        let ws = workspace();
        let root = ws.path();
        let report = contained(
            root,
            mode,
            "echo > README.md; rm lib/util.py; sed -i 's/login/logout/' src/auth/login.ts; ln -s /etc/passwd lib/passwd; \
             mkdir -p build/out && echo x > build/out/y; true",
        );
        assert_eq!(fs::read_to_string(root.join("README.md")).unwrap(), "# readme\n");
        assert_eq!(fs::read_to_string(root.join("lib/util.py")).unwrap(), "def util(): pass\n");
        assert_eq!(fs::read_to_string(root.join("src/auth/login.ts")).unwrap(), "logout\n");
        assert!(fs::symlink_metadata(root.join("lib/passwd")).is_err() && !root.join("build").exists());
        assert_eq!(report.allowed, [change("src/auth/login.ts", ChangeKind::Modified)]);
        // The command made them in its own layer (Landlock grants it the workspace: it guards what is
        // outside); they never reached the workspace, and the model is told each one.
        assert_eq!(paths(&report.refused), ["README.md", "build", "build/out", "build/out/y", "lib/passwd", "lib/util.py"]);
        let error = report.tool_error().unwrap();
        assert!(error.contains("`README.md`: modified; not applied"), "{error}");
        assert!(error.contains("INT-001") && error.contains("scope_expansion_request(intent_id, paths, justification)"), "{error}");
        assert!(!stderr(&report).contains("Permission denied"), "{}", stderr(&report));
    });
}

#[test]
#[cfg_attr(
    qemu,
    ignore = "qemu-user's clone() takes no namespace flags (EINVAL), so no command can be isolated under it; the same Linux code is tested natively in the cargo layer"
)]
fn a_file_moved_out_of_the_scope_stays_where_it_was() {
    if !isolation_or_skip("a_file_moved_out_of_the_scope_stays_where_it_was") {
        return;
    }
    let ws = workspace();
    let root = ws.path();
    let report = contained(root, LandlockMode::Off, "mv src/auth/a.js lib/a.js");
    assert!(!root.join("lib/a.js").exists());
    assert_eq!(fs::read_to_string(root.join("src/auth/a.js")).unwrap(), "export const a = 1;\n");
    assert_eq!(report.refused, [change("lib/a.js", ChangeKind::Created), change("src/auth/a.js", ChangeKind::Deleted)]);
    assert!(report.allowed.is_empty());
    let error = report.tool_error().unwrap();
    assert!(error.contains("`src/auth/a.js`: moved to `lib/a.js`, outside the scope; it stays where it was"), "{error}");
}

#[test]
#[cfg_attr(
    qemu,
    ignore = "qemu-user's clone() takes no namespace flags (EINVAL), so no command can be isolated under it; the same Linux code is tested natively in the cargo layer"
)]
fn a_directory_swapped_for_a_symlink_out_of_the_workspace_never_lands() {
    if !isolation_or_skip("a_directory_swapped_for_a_symlink_out_of_the_workspace_never_lands") {
        return;
    }
    let ws = workspace();
    let root = ws.path();
    let outside = tempfile::tempdir().unwrap();
    let report =
        contained(root, LandlockMode::Off, &format!("rm -r lib && ln -s {} lib && echo x > lib/escaped", outside.path().display()));
    assert!(fs::symlink_metadata(root.join("lib")).unwrap().is_dir());
    assert_eq!(fs::read_to_string(root.join("lib/util.py")).unwrap(), "def util(): pass\n");
    assert_eq!(paths(&report.refused), ["lib", "lib/util.py"]);
    // The command wrote through its link outside the workspace: that is outside containment's reach
    // (Landlock's, when on), and nothing of ours wrote there.
    let _ = fs::remove_file(outside.path().join("escaped"));
}

#[test]
#[cfg_attr(
    qemu,
    ignore = "qemu-user's clone() takes no namespace flags (EINVAL), so no command can be isolated under it; the same Linux code is tested natively in the cargo layer"
)]
fn governance_files_never_change_even_inside_a_wide_scope() {
    if !isolation_or_skip("governance_files_never_change_even_inside_a_wide_scope") {
        return;
    }
    let ws = workspace();
    let root = ws.path();
    fs::write(root.join(".orchestration/agent_trace.jsonl"), "{}\n").unwrap();
    fs::write(root.join(".orchestration/state.db"), "db").unwrap();
    let mut p = ContainPlan::for_scope(root, Some(INTENT), &["**".to_owned()]);
    p.landlock = LandlockMode::Off;
    p.isolator = Some(env!("CARGO_BIN_EXE_chokepoint").into());
    let script = "echo 'hooks: {}' >> .orchestration/hooks.yaml && rm .orchestration/agent_trace.jsonl .orchestration/state.db && echo ok > notes.md";
    let report = run(&p, Shell::script(script, root), None).unwrap();
    assert_eq!(fs::read_to_string(root.join(".orchestration/hooks.yaml")).unwrap(), "version: 1\n");
    assert_eq!(fs::read_to_string(root.join(".orchestration/agent_trace.jsonl")).unwrap(), "{}\n");
    assert_eq!(fs::read_to_string(root.join(".orchestration/state.db")).unwrap(), "db");
    assert_eq!(report.allowed, [change("notes.md", ChangeKind::Created)]);
    assert_eq!(paths(&report.refused), [".orchestration/agent_trace.jsonl", ".orchestration/hooks.yaml", ".orchestration/state.db"]);
}

#[test]
#[cfg_attr(
    qemu,
    ignore = "qemu-user's clone() takes no namespace flags (EINVAL), so no command can be isolated under it; the same Linux code is tested natively in the cargo layer"
)]
fn nothing_is_created_in_the_work_tree_for_a_missing_scope_directory() {
    if !isolation_or_skip("nothing_is_created_in_the_work_tree_for_a_missing_scope_directory") {
        return;
    }
    let ws = workspace();
    let root = ws.path();
    let mut p = ContainPlan::for_scope(root, Some(INTENT), &["tests/auth/**".to_owned()]);
    p.isolator = Some(env!("CARGO_BIN_EXE_chokepoint").into());
    let report = run(&p, Shell::script("true", root), None).unwrap();
    assert!(!root.join("tests").exists(), "the empty scope directory stayed in the command's layer");
    assert!(report.allowed.is_empty() && report.refused.is_empty() && report.notes().is_empty(), "{report:?}");
    // The command makes it, and that lands.
    let report = run(&p, Shell::script("mkdir -p tests/auth && echo t > tests/auth/t.test.js", root), None).unwrap();
    assert_eq!(report.exit_code(), Some(0), "{}", stderr(&report));
    assert_eq!(fs::read_to_string(root.join("tests/auth/t.test.js")).unwrap(), "t\n");
    assert_eq!(paths(&report.allowed), ["tests", "tests/auth", "tests/auth/t.test.js"]);
}

// ---- The command cannot get out from under its supervisor (issue 27, item 2) ----

#[test]
#[cfg_attr(
    qemu,
    ignore = "qemu-user's clone() takes no namespace flags (EINVAL), so no command can be isolated under it; the same Linux code is tested natively in the cargo layer"
)]
fn killing_its_parent_and_detaching_do_not_let_a_write_escape() {
    both_modes("killing_its_parent_and_detaching_do_not_let_a_write_escape", |mode| {
        let ws = workspace();
        let root = ws.path();
        let marker = format!("detached-{}-{mode:?}", std::process::id());
        let report = contained(
            root,
            mode,
            &format!(
                "echo escaped > src/billing/pay.ts; (setsid sh -c 'sleep 1; echo late > lib/late.py; sleep 5; : {marker}' &); kill -9 $PPID; echo alive"
            ),
        );
        // Its parent is the namespace's init: immune to it. The detached writer ended with the namespace,
        // before the report.
        assert_eq!(report.exit_code(), Some(0), "{}", stderr(&report));
        assert_eq!(String::from_utf8_lossy(&report.output.as_ref().unwrap().stdout), "alive\n");
        let alive = std::process::Command::new("pgrep").args(["-f", &marker]).output().unwrap();
        assert!(alive.stdout.is_empty(), "the detached writer outlived the command: {}", String::from_utf8_lossy(&alive.stdout));
        std::thread::sleep(Duration::from_millis(1500));
        assert_eq!(fs::read_to_string(root.join("src/billing/pay.ts")).unwrap(), "pay\n");
        assert!(!root.join("lib/late.py").exists(), "the detached writer outlived the command");
        assert_eq!(paths(&report.refused), ["src/billing/pay.ts"]);
    });
}

#[test]
#[cfg_attr(
    qemu,
    ignore = "qemu-user's clone() takes no namespace flags (EINVAL), so no command can be isolated under it; the same Linux code is tested natively in the cargo layer"
)]
fn killing_the_supervisor_lands_nothing_outside_the_scope_and_still_judges_the_rest() {
    if !isolation_or_skip("killing_the_supervisor_lands_nothing_outside_the_scope_and_still_judges_the_rest") {
        return;
    }
    let ws = workspace();
    let root = ws.path();
    // The command finds its supervisor the only way it could, from outside: the test plays the agent.
    // The marker names this test's supervisor alone: other tests' run beside it.
    let marker = format!("kill-me-{}", std::process::id());
    let script = format!("echo in > src/auth/in.ts; echo out > README.md; sleep 30; : {marker}");
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(800));
        let pattern = format!("chokepoint __isolate -- sh -c .*{marker}");
        std::process::Command::new("pkill").args(["-KILL", "-f", &pattern]).output().unwrap().status.success()
    });
    let started = Instant::now();
    let report = run(&plan(root, LandlockMode::Off), Shell::script(&script, root), Some(Duration::from_secs(20))).unwrap();
    assert!(killer.join().unwrap(), "the supervisor was found and killed");
    assert!(started.elapsed() < Duration::from_secs(15), "the namespace ended with its supervisor: {:?}", started.elapsed());
    assert_eq!(fs::read_to_string(root.join("README.md")).unwrap(), "# readme\n");
    // What it wrote before is still judged: its allowed change lands, its refused one does not.
    assert_eq!(report.allowed, [change("src/auth/in.ts", ChangeKind::Created)]);
    assert_eq!(paths(&report.refused), ["README.md"]);
}

#[test]
#[cfg_attr(
    qemu,
    ignore = "qemu-user's clone() takes no namespace flags (EINVAL), so no command can be isolated under it; the same Linux code is tested natively in the cargo layer"
)]
fn a_timeout_ends_everything_the_command_started() {
    if !isolation_or_skip("a_timeout_ends_everything_the_command_started") {
        return;
    }
    let ws = workspace();
    let root = ws.path();
    let started = Instant::now();
    let report = run(
        &plan(root, LandlockMode::Off),
        Shell::script("(setsid sleep 37 &); sleep 37 & sleep 37", root),
        Some(Duration::from_millis(500)),
    )
    .unwrap();
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    assert!(report.timed_out && report.status.is_none(), "{report:?}");
    assert!(report.notes().iter().any(|n| n.contains("timed out")));
    let leftover = std::process::Command::new("pgrep").args(["-f", "^sleep 37$"]).output().unwrap();
    assert!(leftover.stdout.is_empty(), "a sleep outlived the namespace: {}", String::from_utf8_lossy(&leftover.stdout));
}

#[test]
#[cfg_attr(
    qemu,
    ignore = "qemu-user's clone() takes no namespace flags (EINVAL), so no command can be isolated under it; the same Linux code is tested natively in the cargo layer"
)]
fn a_cancelled_command_is_stopped_and_what_it_did_outside_never_lands() {
    if !isolation_or_skip("a_cancelled_command_is_stopped_and_what_it_did_outside_never_lands") {
        return;
    }
    let ws = workspace();
    let root = ws.path();
    let mut plan = plan(root, LandlockMode::Off);
    let cancel = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    plan.cancel = Some(std::sync::Arc::clone(&cancel));
    let flag = std::sync::Arc::clone(&cancel);
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(400));
        flag.store(true, std::sync::atomic::Ordering::Release);
    });
    let started = Instant::now();
    let report = run(&plan, Shell::script("echo leaked > outside.txt; sleep 30 & wait", root), Some(Duration::from_secs(60))).unwrap();
    stopper.join().unwrap();
    assert!(report.cancelled && !report.timed_out, "{report:?}");
    assert!(started.elapsed() < Duration::from_secs(10), "stopped at once: {:?}", started.elapsed());
    assert!(!root.join("outside.txt").exists());
    assert_eq!(paths(&report.refused), ["outside.txt"]);
}

#[test]
#[cfg_attr(
    qemu,
    ignore = "qemu-user's clone() takes no namespace flags (EINVAL), so no command can be isolated under it; the same Linux code is tested natively in the cargo layer"
)]
fn output_is_captured_and_a_missing_program_is_a_failed_command() {
    if !isolation_or_skip("output_is_captured_and_a_missing_program_is_a_failed_command") {
        return;
    }
    let ws = workspace();
    let root = ws.path();
    let report = contained(root, LandlockMode::Off, "echo out; echo err >&2; exit 3");
    assert_eq!(report.exit_code(), Some(3));
    let output = report.output.unwrap();
    assert_eq!((output.stdout.as_slice(), output.stderr.as_slice()), (&b"out\n"[..], &b"err\n"[..]));

    let shell = Shell { argv: vec!["/nonexistent/chokepoint-test".into()], cwd: root.to_path_buf(), env: Vec::new(), capture: true };
    let report = run(&plan(root, LandlockMode::Off), shell, None).unwrap();
    assert_eq!(report.exit_code(), Some(127), "{report:?}");
    assert!(stderr(&report).contains("/nonexistent/chokepoint-test"), "{}", stderr(&report));
}

#[test]
#[cfg_attr(
    qemu,
    ignore = "qemu-user's clone() takes no namespace flags (EINVAL), so no command can be isolated under it; the same Linux code is tested natively in the cargo layer"
)]
fn the_next_command_reuses_the_last_snapshot() {
    if !isolation_or_skip("the_next_command_reuses_the_last_snapshot") {
        return;
    }
    let ws = workspace();
    let root = ws.path();
    let p = plan(root, LandlockMode::Off);
    let mut containment = Containment::new();
    let first = containment.run(&p, Shell::script("echo 1 > src/auth/one.ts && echo x > README.md", root), None).unwrap();
    assert_eq!(first.refused, [change("README.md", ChangeKind::Modified)]);
    let second = containment.run(&p, Shell::script("echo 2 >> src/auth/one.ts && rm README.md", root), None).unwrap();
    assert_eq!(second.allowed, [change("src/auth/one.ts", ChangeKind::Modified)]);
    assert_eq!(second.refused, [change("README.md", ChangeKind::Deleted)]);
    assert_eq!(fs::read_to_string(root.join("README.md")).unwrap(), "# readme\n");
    assert_eq!(fs::read_to_string(root.join("src/auth/one.ts")).unwrap(), "1\n2\n");
}

// ---- Through `chokepoint exec`, as an agent's shell runs it ----

#[test]
#[cfg_attr(
    qemu,
    ignore = "qemu-user's clone() takes no namespace flags (EINVAL), so no command can be isolated under it; the same Linux code is tested natively in the cargo layer"
)]
fn exec_keeps_a_person_s_work_while_an_agent_s_command_runs() {
    if !isolation_or_skip("exec_keeps_a_person_s_work_while_an_agent_s_command_runs") {
        return;
    }
    let ws = common::workspace(
        "version: 1\n",
        "version: 1\nactive_intents:\n  - id: INT-001\n    name: Auth\n    status: IN_PROGRESS\n    owned_scope: ['src/auth/**']\n",
    );
    let root = ws.path();
    let selected = common::chokepoint(root, &["intent", "select", "--session", "claude:me", "INT-001"]);
    assert!(selected.status.success(), "{}", String::from_utf8_lossy(&selected.stderr));
    fs::create_dir_all(root.join("src/billing")).unwrap();
    fs::write(root.join("src/billing/pay.ts"), "old\n").unwrap();
    let mut exec = std::process::Command::new(env!("CARGO_BIN_EXE_chokepoint"));
    exec.args(["exec", "--session", "claude:me", "--", "sleep", "2"]).current_dir(root);
    let child = exec.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(800));
    fs::write(root.join("src/billing/pay.ts"), "edit\n").unwrap();
    fs::create_dir_all(root.join("docs")).unwrap();
    fs::write(root.join("docs/person.md"), "x\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "nothing to say: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(fs::read_to_string(root.join("src/billing/pay.ts")).unwrap(), "edit\n");
    assert_eq!(fs::read_to_string(root.join("docs/person.md")).unwrap(), "x\n");
}

#[test]
#[cfg_attr(
    qemu,
    ignore = "qemu-user's clone() takes no namespace flags (EINVAL), so no command can be isolated under it; the same Linux code is tested natively in the cargo layer"
)]
fn with_landlock_an_isolated_command_cannot_write_outside_the_workspace() {
    if !isolation_or_skip("with_landlock_an_isolated_command_cannot_write_outside_the_workspace")
        || chokepoint_core::containment::sandbox::landlock_abi().is_none()
    {
        return;
    }
    let ws = workspace();
    let root = ws.path();
    let outside = tempfile::tempdir().unwrap();
    let report = contained(root, LandlockMode::Auto, &format!("echo x > {}/escaped", outside.path().display()));
    assert_ne!(report.exit_code(), Some(0));
    assert!(stderr(&report).contains("Permission denied"), "{}", stderr(&report));
    assert!(!outside.path().join("escaped").exists());
}

#[test]
#[cfg_attr(
    qemu,
    ignore = "qemu-user's clone() takes no namespace flags (EINVAL), so no command can be isolated under it; the same Linux code is tested natively in the cargo layer"
)]
fn a_folder_someone_else_made_meanwhile_takes_the_command_s_files_too() {
    if !isolation_or_skip("a_folder_someone_else_made_meanwhile_takes_the_command_s_files_too") {
        return;
    }
    let ws = workspace();
    let root = ws.path().to_path_buf();
    let writer = meanwhile(&root, 500, |root| {
        fs::create_dir_all(root.join("src/auth/new")).unwrap();
        fs::write(root.join("src/auth/new/person.ts"), "person\n").unwrap();
    });
    let report = contained(&root, LandlockMode::Off, "sleep 1.5; mkdir -p src/auth/new && echo agent > src/auth/new/agent.ts");
    writer.join().unwrap();
    assert_eq!(fs::read_to_string(root.join("src/auth/new/person.ts")).unwrap(), "person\n");
    assert_eq!(fs::read_to_string(root.join("src/auth/new/agent.ts")).unwrap(), "agent\n");
    assert!(report.not_applied.is_empty(), "{:?}", report.not_applied);
    assert_eq!(paths(&report.allowed), ["src/auth/new", "src/auth/new/agent.ts"]);
}

/// The denial of a write before the handshake tells the model to run `chokepoint intent select`
/// with its session; through its shell that command was rewritten into `chokepoint exec`, whose
/// isolation kept the lease in the command's own layer: the agent was denied again and again. The
/// session's own plain handshake now runs as it is; anything more is contained as before.
#[test]
fn an_agent_s_own_handshake_through_its_shell_is_not_contained() {
    let ws = common::workspace(
        "version: 1\n",
        "version: 1\nactive_intents:\n  - id: INT-001\n    name: Auth\n    status: IN_PROGRESS\n    owned_scope: ['src/auth/**']\n",
    );
    let root = ws.path();
    let bash = |command: &str| {
        let out = common::claude_hook(
            root,
            &serde_json::json!({
                "session_id": "me", "cwd": root, "hook_event_name": "PreToolUse",
                "tool_name": "Bash", "tool_input": { "command": command },
            }),
        );
        assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
        let answer: serde_json::Value = serde_json::from_str(&common::stdout(&out)).unwrap_or(serde_json::Value::Null);
        answer["hookSpecificOutput"]["updatedInput"]["command"].as_str().map(str::to_owned)
    };
    let program = common::program();
    let handshake = format!("'{program}' intent select --workspace '{}' --session 'claude:me' INT-001", root.display());
    assert_eq!(bash(&handshake), None, "run as it is");
    let wrapped = bash(&format!("{handshake}; touch src/x")).expect("anything more is contained");
    assert!(wrapped.contains(" exec --workspace "), "{wrapped}");
    // Run as the agent's shell runs it, the lease is taken for real.
    let out = std::process::Command::new("sh").args(["-c", &handshake]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let list = common::chokepoint(root, &["intent", "list"]);
    assert!(common::stdout(&list).contains("claude:me"), "{}", common::stdout(&list));
}
