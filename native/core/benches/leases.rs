//! What one intent lease costs: an acquire and its release, timed as a pair.
//!
//! - `gate.lock.1proc`: this process alone on the database.
//! - `gate.lock.4proc`: this process and three children (this binary again, told by
//!   `CHOKEPOINT_BENCH_LEASES_DB` to act as one) taking and releasing leases on the same database at
//!   the same time, each on its own intent, so every pair succeeds and what is measured is the cost of
//!   sharing SQLite's write lock between processes. Each process times its own pairs; the children
//!   send theirs back as one JSON array on stdout.
//!
//! - `lease.select.sqlite` and `lease.select.postgres`: what an intent's selection costs the
//!   gatekeeper (a take and its release, through `LeaseStore`), on this repository's SQLite file and on
//!   a team's PostgreSQL database on loopback (a server this bench starts, with the tests' harness),
//!   compared with SQLite (goal ≤ 5×); `lease.check.postgres`: the look-up of a session's lease that
//!   a write pays once per `RECHECK`, compared with SQLite's (`lease.check.sqlite`);
//!   `postgres.roundtrip`: an empty statement (`SELECT 1`) through the same client, the floor of
//!   every operation on the database, compared with SQLite's whole select: a select (a take and a
//!   release) is two of them, so on a machine whose loopback round trip is over 2.5× SQLite's
//!   select, ≤ 5× cannot be met by any client;
//! - `lease.contend.postgres.8x2`: 8 agents, each with a connection of its own as on 8 machines, taking
//!   and releasing 2 intents on the database at once: each sample is one decision (a take, granted or
//!   refused, and the winner's release); decisions per second are printed.
//!
//! Criterion cannot time several processes at once, so this writes per-pair nanoseconds itself to
//! `target/bench-samples/<name>.json` (`{ name, baseline?, samples }`), which `scripts/bench.js`
//! reads. Command-line arguments (cargo passes `--bench`) are ignored.

/// The allocator the edges ship with (the workspace Cargo.toml says why).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod samples;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use chokepoint_core::base::team::{Settings, TeamDb, Unreachable};
use chokepoint_core::scope::leases::{AcquireError, Holder, LeaseStore, Leases};
use chokepoint_core::scope::team_leases::TeamLeases;
use std::sync::{Arc, Barrier};

#[path = "../tests/support/postgres.rs"]
mod postgres;

const CHILD_ENV: &str = "CHOKEPOINT_BENCH_LEASES_DB";
const INDEX_ENV: &str = "CHOKEPOINT_BENCH_LEASES_INDEX";
const WARMUP: usize = 200;
const PAIRS_ALONE: usize = 3000;
const PAIRS_EACH: usize = 1500;
const CHILDREN: usize = 3;
const TTL: Duration = Duration::from_secs(60);

fn main() {
    if let Ok(db) = std::env::var(CHILD_ENV) {
        child(Path::new(&db));
        return;
    }
    let dir = tempfile::tempdir().expect("a temporary folder");

    let alone = dir.path().join("alone.db");
    let leases = Leases::open(&alone).expect("open the lock database");
    pairs(&leases, 0, WARMUP);
    let one = pairs(&leases, 0, PAIRS_ALONE);
    drop(leases);

    let shared = dir.path().join("shared.db");
    let leases = Leases::open(&shared).expect("open the lock database");
    let mut children: Vec<_> = (1..=CHILDREN)
        .map(|i| {
            Command::new(std::env::current_exe().expect("the bench's own path"))
                .env(CHILD_ENV, &shared)
                .env(INDEX_ENV, i.to_string())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .expect("spawn a child bench process")
        })
        .collect();
    let mut outputs: Vec<_> = children.iter_mut().map(|c| BufReader::new(c.stdout.take().unwrap())).collect();
    pairs(&leases, 0, WARMUP);
    // Everyone warms up and says so before anyone starts timing, so the timed loops overlap.
    for output in &mut outputs {
        assert_eq!(line(output), "ready", "a child bench process did not start");
    }
    for child in &mut children {
        child.stdin.take().unwrap().write_all(b"go\n").expect("start a child bench process");
    }
    let mut four = pairs(&leases, 0, PAIRS_EACH);
    for (child, output) in children.iter_mut().zip(&mut outputs) {
        let samples: Vec<u64> = serde_json::from_str(&line(output)).expect("a child's samples as JSON");
        assert_eq!(samples.len(), PAIRS_EACH);
        four.extend(samples);
        assert!(child.wait().expect("wait for a child bench process").success());
    }

    samples::write("gate.lock.1proc", None, &one);
    samples::write("gate.lock.4proc", Some("gate.lock.1proc"), &four);
    eprintln!("leases: gate.lock.1proc {}, gate.lock.4proc {}", summary(&one), summary(&four));
    team(dir.path());
}

const TEAM_PAIRS: usize = 2000;
const AGENTS: usize = 8;
const DECISIONS_EACH: usize = 500;

/// The PostgreSQL figures, against SQLite's measured here, interleaved in rounds of 100 so the
/// machine's noise falls on both alike.
fn team(dir: &Path) {
    let server = postgres::Server::start();
    let env = server.env();
    let lookup = move |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let db = |machine: &str| {
        let settings = Settings {
            url: server.url(),
            namespace: "bench".into(),
            machine: machine.into(),
            unreachable: Unreachable::Deny,
            source: "bench",
        };
        Arc::new(TeamDb::new(settings, &lookup).expect("the bench's database"))
    };
    let sqlite = Leases::open(&dir.join("select.db")).expect("open the lock database");
    let team = TeamLeases::new(db("bench"));
    let (mut select_sqlite, mut select_team, mut check_sqlite, mut check_team) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut roundtrip = Vec::new();
    let floor = db("floor");
    select(&sqlite, WARMUP);
    select(&team, WARMUP);
    round_trips(&floor, WARMUP);
    for _ in 0..TEAM_PAIRS / 100 {
        select_sqlite.extend(select(&sqlite, 100));
        select_team.extend(select(&team, 100));
        check_sqlite.extend(check(&sqlite, 100));
        check_team.extend(check(&team, 100));
        roundtrip.extend(round_trips(&floor, 100));
    }
    samples::write("lease.select.sqlite", None, &select_sqlite);
    samples::write("lease.select.postgres", Some("lease.select.sqlite"), &select_team);
    samples::write("lease.check.sqlite", None, &check_sqlite);
    samples::write("lease.check.postgres", Some("lease.check.sqlite"), &check_team);
    samples::write("postgres.roundtrip", Some("lease.select.sqlite"), &roundtrip);
    eprintln!(
        "leases: lease.select.sqlite {}, lease.select.postgres {}, lease.check.sqlite {}, lease.check.postgres {}",
        summary(&select_sqlite),
        summary(&select_team),
        summary(&check_sqlite),
        summary(&check_team)
    );
    eprintln!("leases: postgres.roundtrip {} (the floor: a select is two round trips)", summary(&roundtrip));

    // 8 agents, 2 intents: agent i wants intent i % 2, all at once.
    let stores: Vec<Arc<TeamLeases>> = (0..AGENTS).map(|i| Arc::new(TeamLeases::new(db(&format!("m-{i}"))))).collect();
    let start = Arc::new(Barrier::new(AGENTS + 1));
    let threads: Vec<_> = stores
        .iter()
        .enumerate()
        .map(|(i, store)| {
            let (store, start) = (Arc::clone(store), Arc::clone(&start));
            std::thread::spawn(move || {
                let (intent, holder) = (format!("INT-{}", i % 2), Holder::new(format!("s-{i}"), Some("bench")));
                let _ = store.held_by("warm");
                start.wait();
                (0..DECISIONS_EACH)
                    .map(|_| {
                        let started = Instant::now();
                        match store.acquire(&intent, &holder, TTL) {
                            Ok(_) => assert!(store.release(&intent, &holder.session).expect("release")),
                            Err(AcquireError::Held(_)) => {}
                            Err(e) => panic!("{e}"),
                        }
                        u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX)
                    })
                    .collect::<Vec<u64>>()
            })
        })
        .collect();
    start.wait();
    let began = Instant::now();
    let contended: Vec<u64> = threads.into_iter().flat_map(|t| t.join().expect("an agent's thread")).collect();
    let per_second = contended.len() as f64 / began.elapsed().as_secs_f64();
    samples::write("lease.contend.postgres.8x2", Some("lease.select.postgres"), &contended);
    eprintln!("leases: lease.contend.postgres.8x2 {} per decision, {per_second:.0} decisions/s", summary(&contended));
}

/// `count` selections (take, release) of intent `SEL` by session `s-sel`, in nanoseconds.
fn select(store: &dyn LeaseStore, count: usize) -> Vec<u64> {
    let holder = Holder::new("s-sel", Some("bench"));
    (0..count)
        .map(|_| {
            let started = Instant::now();
            store.acquire("SEL", &holder, TTL).expect("an uncontended intent is free");
            assert!(store.release("SEL", "s-sel").expect("release"));
            u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX)
        })
        .collect()
}

/// `count` look-ups of a session's lease (the gatekeeper's check once per RECHECK), in nanoseconds.
fn check(store: &dyn LeaseStore, count: usize) -> Vec<u64> {
    store.acquire("CHK", &Holder::new("s-chk", Some("bench")), TTL).expect("an uncontended intent is free");
    (0..count)
        .map(|_| {
            let started = Instant::now();
            assert!(store.held_by_at("s-chk").expect("look up").0.is_some());
            u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX)
        })
        .collect()
}

/// `count` empty statements on the database (`SELECT 1` through `TeamDb::run`, as every store's
/// operation goes), in nanoseconds.
fn round_trips(db: &TeamDb, count: usize) -> Vec<u64> {
    (0..count)
        .map(|_| {
            let started = Instant::now();
            let one: i32 = db.run("a round trip", |client| Ok(client.query_hot("SELECT 1", &[])?[0].get(0))).expect("a round trip");
            assert_eq!(one, 1);
            u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX)
        })
        .collect()
}

/// A child: opens the shared database, warms up, says "ready", waits for "go", runs its pairs and
/// writes their timings as one JSON line.
fn child(db: &Path) {
    let index: usize = std::env::var(INDEX_ENV).expect("the child's index").parse().expect("a number");
    let leases = Leases::open(db).expect("open the lock database");
    pairs(&leases, index, WARMUP);
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(b"ready\n").and_then(|()| stdout.flush()).expect("write to the parent");
    assert_eq!(line(&mut BufReader::new(std::io::stdin().lock())), "go");
    let samples = pairs(&leases, index, PAIRS_EACH);
    let json = serde_json::to_string(&samples).expect("samples as JSON");
    stdout.write_all(format!("{json}\n").as_bytes()).and_then(|()| stdout.flush()).expect("write to the parent");
}

/// `count` acquire-and-release pairs by session `s-<index>` on intent `INT-<index>`, in nanoseconds.
fn pairs(leases: &Leases, index: usize, count: usize) -> Vec<u64> {
    let (intent, session) = (format!("INT-{index}"), format!("s-{index}"));
    let holder = Holder::new(session.as_str(), Some("bench"));
    (0..count)
        .map(|_| {
            let started = Instant::now();
            leases.acquire(&intent, &holder, TTL).expect("an uncontended intent is free");
            assert!(leases.release(&intent, &session).expect("release"));
            u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX)
        })
        .collect()
}

fn line(reader: &mut impl BufRead) -> String {
    let mut line = String::new();
    reader.read_line(&mut line).expect("read a line");
    line.trim_end().to_owned()
}

/// "median 41.2 µs, p99 80.3 µs", with the percentiles `scripts/bench.js` computes.
fn summary(samples: &[u64]) -> String {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let at = |p: usize| sorted[(sorted.len() * p).div_ceil(100).saturating_sub(1)] as f64 / 1000.0;
    format!("median {:.1} µs, p99 {:.1} µs", at(50), at(99))
}
