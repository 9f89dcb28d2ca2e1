//! Criterion benches of the core, without any binding in the way. `npm run bench` reads their samples
//! from target/criterion and reports them in target/bench.json under the names given here.

/// The allocator the edges ship with (the workspace Cargo.toml says why).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use chokepoint_core::{Engine, Event, EventKind};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

fn workspace(hooks_yaml: &str) -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join(".orchestration")).unwrap();
    std::fs::write(ws.path().join(".orchestration/hooks.yaml"), hooks_yaml).unwrap();
    ws
}

/// A `write_to_file` of 1 KiB, as the chain8 benchmarks judge it.
fn write_1kib() -> Event {
    let content = "x".repeat(1024 - 40);
    let mut e = Event::tool(EventKind::PreToolUse, "write_to_file", serde_json::json!({ "path": "src/app/main.ts", "content": content }));
    e.paths = vec!["src/app/main.ts".into()];
    e
}

/// `engine.evaluate(event)` timed by criterion in batches of 256, the ledger drained before each,
/// untimed: the figure is one judgment's cost to its caller, with its record queued and built on the
/// ledger's thread as always. Without the drain, criterion's million back-to-back calls outran the
/// ledger's thread (which builds, hashes and writes each record: more work per call than the
/// judging) and its queue grew to gigabytes, so the figure timed fresh pages of that backlog rather
/// than the judging. Agents call far apart; the ledger's own throughput is `ledger.append.*`.
fn drained(c: &mut Criterion, name: &str, engine: &Engine, event: &Event) {
    c.bench_function(name, |b| {
        b.iter_batched(
            || {
                engine.tracer().flush().unwrap();
                event.clone()
            },
            |e| engine.evaluate(black_box(e)),
            BatchSize::NumIterations(256),
        )
    });
}

fn evaluate(c: &mut Criterion) {
    let ws = workspace("version: 1\n");
    let engine = Engine::open(ws.path()).unwrap();
    let event = Event::tool(EventKind::PreToolUse, "read_file", serde_json::json!({ "path": "src/auth/login.js" }));
    // Drained at the end too, so that its backlog does not run beside the next figure.
    drained(c, "engine.evaluate.rust", &engine, &event);
    engine.tracer().flush().unwrap();

    let yaml = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/chain8.hooks.yaml")).unwrap();
    let ws8 = workspace(&yaml);
    let engine8 = Engine::open(ws8.path()).unwrap();
    assert!(engine8.info().diagnostics.is_empty());
    let event = write_1kib();
    assert_eq!(engine8.evaluate(event.clone()).unwrap().additional_context.len(), 2, "the benchmark chain must do its work");
    drained(c, "engine.chain8.rust", &engine8, &event);
}

fn command_hook(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let ws = workspace("version: 1\nhooks:\n  PreToolUse:\n    - name: true\n      command: [/bin/true]\n");
    let engine = Engine::open(ws.path()).unwrap();
    let event = write_1kib();
    let mut group = c.benchmark_group("spawn");
    group.sample_size(40).measurement_time(Duration::from_secs(6));
    // The baseline: the same process, spawned directly, in the same runtime.
    group.bench_function("spawn.true", |b| {
        b.iter(|| rt.block_on(async { tokio::process::Command::new("/bin/true").status().await.unwrap() }))
    });
    group.bench_function("engine.command_hook", |b| {
        b.iter_batched(|| event.clone(), |e| rt.block_on(engine.evaluate_async(e, None)), BatchSize::SmallInput)
    });
    group.finish();
}

criterion_group!(benches, evaluate, command_hook);
criterion_main!(benches);
