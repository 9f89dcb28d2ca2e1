//! The gate decision: a write judged by the engine's gatekeeper (canonical path, governance files,
//! the session's intent, its owned scope), with 1,000 intents declaring 10,000 scope globs, against
//! the same decision with 100 globs (10 intents) measured in the same run.
//!
//! Each operation is timed on its own and written to `target/bench-samples/` (see scripts/bench.js),
//! so the p99 is the p99 of single decisions, not of batch means.
//!
//! `gate.path_floor` is the kernel's part of the same decisions, timed alone on the same paths: what
//! the canonicaliser asks of it (one `openat2` beneath the root refusing symlinks, then `statx` and
//! `close` when something is there). It is `gate.decide.100_globs`'s baseline, so the ratio says how
//! much the engine adds above what no user-space change can remove on this machine.

/// The allocator the edges ship with (the workspace Cargo.toml says why).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod samples;

use chokepoint_core::{Decision, Engine, Event, EventKind};
use std::fs;
use std::hint::black_box;
use std::time::Instant;

const SAMPLES: usize = 20_000;
const WARMUP: usize = 2_000;

/// A workspace with `intents` intents of ten globs each, the selected one owning `src/m0/**` and
/// deep directories under it, so the paths judged are up to 256 bytes and partly exist.
fn workspace(intents: usize) -> (tempfile::TempDir, Vec<String>) {
    let ws = tempfile::tempdir().unwrap();
    fs::create_dir_all(ws.path().join(".orchestration")).unwrap();
    let mut yaml = String::from("version: 1\nactive_intents:\n");
    for i in 0..intents {
        yaml += &format!("  - id: INT-{i:04}\n    name: intent {i}\n    status: IN_PROGRESS\n    owned_scope:\n");
        for g in 0..10 {
            let glob = match g % 4 {
                0 => format!("src/m{i}/**"),
                1 => format!("tests/m{i}/part{g}/**/*.rs"),
                2 => format!("docs/m{i}/*.md"),
                _ => format!("lib/m{i}/g{g}/**"),
            };
            yaml += &format!("      - \"{glob}\"\n");
        }
    }
    fs::write(ws.path().join(".orchestration/active_intents.yaml"), yaml).unwrap();
    let deep = "src/m0/services/authentication/providers/oauth2/handlers/callbacks/validation/tokens/refresh";
    fs::create_dir_all(ws.path().join(deep)).unwrap();
    let mut paths = Vec::new();
    for k in 0..32 {
        let existing = format!("{deep}/handler_{k:02}_with_a_rather_long_descriptive_name.rs");
        fs::write(ws.path().join(&existing), "x").unwrap();
        paths.push(existing);
        // A file to be created, in a directory that does not exist yet.
        paths.push(format!("{deep}/new_module_{k:02}/implementation_of_the_new_thing.rs"));
        // Outside the scope: refused, as often as allowed ones.
        paths.push(format!("src/m1/elsewhere/file_{k:02}.rs"));
    }
    assert!(paths.iter().all(|p| p.len() <= 256));
    (ws, paths)
}

fn decide(name: &str, intents: usize, baseline: Option<&str>) {
    let (ws, paths) = workspace(intents);
    let engine = Engine::open(ws.path()).unwrap();
    assert!(engine.info().diagnostics.is_empty(), "{:?}", engine.info().diagnostics);
    let mut select = Event::tool(EventKind::PreToolUse, "select_active_intent", serde_json::json!({ "intent_id": "INT-0000" }));
    select.ids.session = Some("bench".into());
    assert_eq!(engine.evaluate(select).unwrap().decision, Decision::Allow);
    let events: Vec<Event> = paths
        .iter()
        .map(|p| {
            let mut e = Event::tool(EventKind::PreToolUse, "write_to_file", serde_json::Value::Null);
            e.ids.session = Some("bench".into());
            e.paths = vec![p.clone()];
            e
        })
        .collect();
    // The benchmark must judge, not just run: existing and new paths in scope pass, the others not.
    let allowed = events.iter().filter(|e| engine.evaluate((*e).clone()).unwrap().decision == Decision::Allow).count();
    assert_eq!(allowed, 64, "two thirds of the paths are inside the scope");
    let mut samples = Vec::with_capacity(SAMPLES);
    for i in 0..WARMUP + SAMPLES {
        let event = events[i % events.len()].clone();
        let start = Instant::now();
        black_box(engine.evaluate(black_box(event)).unwrap());
        let ns = start.elapsed().as_nanos() as u64;
        if i >= WARMUP {
            samples.push(ns);
        }
    }
    write_samples(name, baseline, &samples);
}

/// The kernel's part of judging these paths (see the module's comment).
#[cfg(target_os = "linux")]
fn path_floor(name: &str) {
    use nix::fcntl::{OFlag, OpenHow, ResolveFlag, openat2};
    let (ws, paths) = workspace(1);
    let root = fs::File::open(ws.path()).unwrap();
    let how = || {
        OpenHow::new()
            .flags(OFlag::O_PATH | OFlag::O_CLOEXEC)
            .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_SYMLINKS | ResolveFlag::RESOLVE_NO_MAGICLINKS)
    };
    // The same kinds as the decisions: existing files open, missing ones stop at their first absent part.
    let opened = paths.iter().filter(|p| openat2(&root, p.as_str(), how()).is_ok()).count();
    assert_eq!(opened, 32, "a third of the paths exist");
    let mut samples = Vec::with_capacity(SAMPLES);
    for i in 0..WARMUP + SAMPLES {
        let path = &paths[i % paths.len()];
        let start = Instant::now();
        match openat2(&root, black_box(path.as_str()), how()) {
            Ok(fd) => drop(black_box(fs::File::from(fd).metadata().unwrap())),
            Err(e) => drop(black_box(e)),
        }
        let ns = start.elapsed().as_nanos() as u64;
        if i >= WARMUP {
            samples.push(ns);
        }
    }
    write_samples(name, None, &samples);
}

fn write_samples(name: &str, baseline: Option<&str>, samples: &[u64]) {
    samples::write(name, baseline, samples);
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    eprintln!("{name}: median {} ns, p99 {} ns", sorted[sorted.len() / 2], sorted[sorted.len() * 99 / 100]);
}

fn main() {
    // cargo passes `--bench` (and criterion flags for the other benches): nothing here reads them.
    #[cfg(target_os = "linux")]
    path_floor("gate.path_floor");
    let floor = cfg!(target_os = "linux").then_some("gate.path_floor");
    decide("gate.decide.100_globs", 10, floor);
    decide("gate.decide.10k_globs", 1_000, Some("gate.decide.100_globs"));
}
