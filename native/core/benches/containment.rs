//! The cost the undo layer of shell containment adds to every command: one snapshot of the workspace
//! and its comparison with the previous one, when nothing changed (the common case: the hashes are
//! reused, so it is one `stat` per entry).

/// The allocator the edges ship with (the workspace Cargo.toml says why).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use chokepoint_core::containment::snapshot::{Snapshotter, changes};
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;

/// 10 top directories x 10 subdirectories x 100 small files.
fn workspace_10k() -> tempfile::TempDir {
    let ws = tempfile::tempdir().unwrap();
    for top in 0..10 {
        for sub in 0..10 {
            let dir = ws.path().join(format!("pkg{top}/mod{sub}"));
            std::fs::create_dir_all(&dir).unwrap();
            for file in 0..100 {
                std::fs::write(dir.join(format!("file{file}.rs")), format!("// {top}/{sub}/{file}\npub fn f() {{}}\n")).unwrap();
            }
        }
    }
    ws
}

fn snapshot(c: &mut Criterion) {
    let ws = workspace_10k();
    let store = ws.path().join(".orchestration/snapshots");
    let snapshotter = Snapshotter::new(ws.path(), &store, &[], 32 * 1024 * 1024).unwrap();
    // Files written within a clock tick of a snapshot are hashed again by the next one (racily
    // clean); the workspace is settled well before, as it is between an agent's commands.
    std::thread::sleep(Duration::from_millis(300));
    // The store is warm and the previous snapshot known, as before any command but the first.
    let previous = snapshotter.take(None).unwrap();
    assert!(previous.len() >= 10_000);
    let mut group = c.benchmark_group("gate");
    group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(8));
    group.bench_function("gate.snapshot.10k_files", |b| {
        b.iter(|| {
            let now = snapshotter.take(Some(black_box(&previous))).unwrap();
            assert!(changes(&previous, &now).is_empty());
            now
        })
    });
    group.finish();
}

criterion_group!(benches, snapshot);
criterion_main!(benches);
