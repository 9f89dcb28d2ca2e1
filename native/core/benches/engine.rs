//! Criterion benches of the core, without any binding in the way. `npm run bench` reads their samples
//! from target/criterion and reports them in target/bench.json under the names given here.

use chokepoint_core::{Engine, Event, EventKind};
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;

fn evaluate(c: &mut Criterion) {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join(".orchestration")).unwrap();
    let engine = Engine::open(ws.path()).unwrap();
    let event = Event::tool(EventKind::PreToolUse, "read_file", serde_json::json!({ "path": "src/auth/login.js" }));
    c.bench_function("engine.evaluate.rust", |b| b.iter(|| engine.evaluate(black_box(event.clone()))));
}

criterion_group!(benches, evaluate);
criterion_main!(benches);
