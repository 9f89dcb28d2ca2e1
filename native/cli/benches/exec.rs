//! `chokepoint exec` as an agent's shell tool pays for it: one contained command, `true`, in a
//! governed workspace of 1,000 files. Three figures, timed in one run and interleaved (each round
//! runs each once, so the machine's noise falls on all alike):
//!
//! - `exec.spawn_true`: spawning `/bin/true`: the floor of any command;
//! - `exec.true.isolated`: `chokepoint exec -- true`, isolated (its own namespaces over an overlay of
//!   the workspace, the default where Linux allows it): the engine's start, the snapshot, the
//!   supervisor and init, reading the (empty) upper layer, the record; compared with the spawn;
//! - `exec.true.observed`: the same with `gatekeeper.isolation: off` (compared before and after,
//!   never undone), compared with the spawn; the isolated figure's ratio to this one is what
//!   attribution costs.
//!
//! The program timed is `CHOKEPOINT_BENCH_PROGRAM` when set (as in the hook bench), else cargo's
//! own build of it. Samples go to `target/bench-samples/` (see scripts/bench.js).
#![allow(clippy::print_stdout)] // a bench reports what it measured

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

#[path = "../../core/benches/samples/mod.rs"]
mod samples;

const ROUNDS: usize = 60;

fn workspace(isolation: &str) -> tempfile::TempDir {
    // Beneath the working folder's target directory, not /tmp: /tmp is a writable directory of the
    // default settings, which must not contain the workspace.
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench-workspaces");
    std::fs::create_dir_all(&base).unwrap();
    let ws = tempfile::tempdir_in(&base).expect("a temporary workspace");
    let root = ws.path();
    std::fs::create_dir_all(root.join(".orchestration")).unwrap();
    for dir in 0..10 {
        let d = root.join(format!("src/mod{dir}"));
        std::fs::create_dir_all(&d).unwrap();
        for file in 0..100 {
            std::fs::write(d.join(format!("f{file}.ts")), format!("export const x{file} = {dir};\n")).unwrap();
        }
    }
    std::fs::write(
        root.join(".orchestration/active_intents.yaml"),
        "version: 1\nactive_intents:\n  - id: INT-1\n    name: Sources\n    status: IN_PROGRESS\n    owned_scope: ['src/**']\n",
    )
    .unwrap();
    std::fs::write(root.join(".orchestration/hooks.yaml"), format!("version: 1\ngatekeeper:\n  isolation: {isolation}\n")).unwrap();
    ws
}

fn exec(program: &str, root: &Path) -> Command {
    let mut c = Command::new(program);
    c.args(["exec", "--workspace", root.to_str().unwrap(), "--session", "claude:bench", "--", "true"]).current_dir(root);
    c
}

fn timed(command: &mut Command) -> u64 {
    let started = Instant::now();
    let status = command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).status().expect("the command runs");
    let elapsed = started.elapsed().as_nanos() as u64;
    assert!(status.success(), "{command:?} exited {status}");
    elapsed
}

fn main() {
    let program = std::env::var("CHOKEPOINT_BENCH_PROGRAM").unwrap_or_else(|_| env!("CARGO_BIN_EXE_chokepoint").to_owned());
    let program = program.as_str();
    let isolated = workspace("auto");
    let observed = workspace("off");
    for ws in [&isolated, &observed] {
        let selected = Command::new(program)
            .args(["intent", "select", "--workspace", ws.path().to_str().unwrap(), "--session", "claude:bench", "INT-1"])
            .output()
            .unwrap();
        assert!(selected.status.success(), "{}", String::from_utf8_lossy(&selected.stderr));
        // The first snapshot reads every file; every later one reuses the hashes, as between an
        // agent's commands.
        timed(&mut exec(program, ws.path()));
    }
    // The figure is what it says only if the command really ran isolated: checked once, untimed.
    let report = isolated.path().join("report.json");
    let out = Command::new(program)
        .args(["exec", "--workspace", isolated.path().to_str().unwrap(), "--session", "claude:bench", "--report"])
        .arg(&report)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let isolated_here = report["isolated"] == true;
    std::fs::remove_file(isolated.path().join("report.json")).ok();

    let (mut t_true, mut t_isolated, mut t_observed) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        t_true.push(timed(&mut Command::new("/bin/true")));
        t_isolated.push(timed(&mut exec(program, isolated.path())));
        t_observed.push(timed(&mut exec(program, observed.path())));
    }
    samples::write("exec.spawn_true", None, &t_true);
    if isolated_here {
        samples::write("exec.true.isolated", Some("exec.spawn_true"), &t_isolated);
    }
    samples::write("exec.true.observed", Some("exec.spawn_true"), &t_observed);
    let median = |v: &mut Vec<u64>| {
        v.sort_unstable();
        v[v.len() / 2] as f64 / 1e6
    };
    println!(
        "exec: /bin/true {:.2} ms, isolated {:.2} ms{}, observed {:.2} ms (medians of {ROUNDS})",
        median(&mut t_true),
        median(&mut t_isolated),
        if isolated_here { "" } else { " (NOT isolated here: the figure is left out)" },
        median(&mut t_observed),
    );
}
