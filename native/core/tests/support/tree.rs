//! A grandchild that outlives its parent, for the tests that a killed process tree ends as one (a
//! timed-out command hook, a timed-out contained command): the test binary itself, run again as the
//! ignored test `tree_helper`, whose extra filter arguments say what it plays. The parent starts the
//! grandchild, which beats (appends a byte to a file every 20 ms for a minute), then sleeps a minute.
//! The test then sees the beat stop: the grandchild is gone.

use std::path::Path;
use std::time::{Duration, Instant};

/// The argv of a parent that starts a beating grandchild, writing to `beat`, and sleeps.
pub fn parent_argv(beat: &Path) -> Vec<String> {
    let exe = std::env::current_exe().unwrap();
    let mut argv = vec![exe.to_string_lossy().into_owned()];
    // libtest runs the tests named by any filter; the two role filters name none.
    argv.extend(["--exact", "--ignored", "--test-threads=1", "tree_helper", "role:parent"].map(String::from));
    argv.push(format!("beat:{}", beat.display()));
    argv
}

/// What `tree_helper` does, as the test binary run again by [`parent_argv`].
pub fn helper() {
    let args: Vec<String> = std::env::args().collect();
    let Some(beat) = args.iter().find_map(|a| a.strip_prefix("beat:")) else { return };
    if args.iter().any(|a| a == "role:parent") {
        let mut argv = parent_argv(Path::new(beat));
        argv.retain(|a| a != "role:parent");
        argv.push("role:child".into());
        // Not waited for: it outlives this process if the tree is not ended as one.
        #[allow(clippy::zombie_processes)]
        let _child = std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_secs(60));
    } else if args.iter().any(|a| a == "role:child") {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(60) {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().create(true).append(true).open(beat).unwrap();
            let _ = f.write_all(b".");
            drop(f);
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Fails unless the grandchild beat at `beat` and has stopped: the file does not grow over a second
/// (fifty beats).
pub fn assert_beat_stopped(beat: &Path) {
    let len = || std::fs::metadata(beat).map_or(0, |m| m.len());
    assert!(len() > 0, "the grandchild never beat at {} (a process starts slowly under Wine: a longer timeout?)", beat.display());
    // A last write may be under way as the tree ends.
    std::thread::sleep(Duration::from_millis(200));
    let before = len();
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(len(), before, "the grandchild still beats at {}: it outlived its killed tree", beat.display());
}
