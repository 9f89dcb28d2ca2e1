//! What a durable ledger append and a whole-ledger verification cost.
//!
//! - `ledger.append.fsync_each`: one producer appending one record at a time, each acknowledged after
//!   its own fdatasync (nothing to group with): the baseline, nanoseconds per append.
//! - `ledger.append.group_commit`: 8 producer threads appending durably at once through the same
//!   writer, each keeping up to [`WINDOW`] appends in flight (enqueue, then wait for the oldest ticket
//!   before enqueueing more, as the engine's hot path does: it enqueues, and awaits durability
//!   later). Every record counted was acknowledged as synced. A sample is one round's wall time
//!   divided by the records the round appended, so its ratio to the baseline is the throughput gain.
//!   (Producers that each block on one append at a time can group at most 8 records per sync; that
//!   figure is printed on stderr for comparison.)
//! - `ledger.verify`: nanoseconds per record of verifying a chain of [`VERIFY_RECORDS`] records, one
//!   core, the file in the page cache.
//! - `ledger.verify.merged_8`: `trace verify` (`audit::verify_ledger`) of a ledger merged from
//!   [`BRANCHES`] branches (as many chain files, recorded each by its own writer, side by side in one
//!   folder with no head here, as after a merge), nanoseconds per record; its baseline
//!   `ledger.verify.one_chain` verifies the same number of records in one chain, against its head. The
//!   two are interleaved, one run of each at a time.
//! - `ledger.head.raise`: one raise of the head as the syncer does it after each sync: the state
//!   database's row and the copy outside the workspace (`head::HeadCopy`); its baseline
//!   `ledger.head.raise.database_only` raises the row alone. The two are interleaved, one of each at
//!   a time; their difference is what the copy costs each batch.
//!
//! The two append figures are measured interleaved (a group-commit round, then a slice of the
//! one-at-a-time appends, and so on), because a shared disk's sync latency drifts by an order of
//! magnitude over seconds and the ratio must compare like with like.
//!
//! Files live in a temporary folder under `target/` (the repository's disk, so the syncs are real, not
//! tmpfs). Samples go to `target/bench-samples/<name>.json` (`{ name, baseline?, samples }`), which
//! `scripts/bench.js` reads. Command-line arguments (cargo passes `--bench`) are ignored.

/// The allocator the edges ship with (the workspace Cargo.toml says why).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod samples;

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::Instant;

use chokepoint_core::Sidecar;
use chokepoint_core::ledger::record::sha256_hex;
use chokepoint_core::ledger::verify::verify;
use chokepoint_core::ledger::writer::{Ledger, Ticket};
use chokepoint_core::ledger::{FileChange, LineRange, Record, RecordKind, RecordedDecision, RecordedHook};
use chokepoint_core::ledger::{audit, chains, head};

const EACH_WARMUP: usize = 20;
const EACH_SAMPLES: usize = 300;
const PRODUCERS: usize = 8;
const WINDOW: usize = 32;
const PER_PRODUCER: usize = 256;
const ROUNDS: usize = 20;
const BLOCKING_EACH: usize = 40;
const VERIFY_RECORDS: usize = 200_000;
const VERIFY_RUNS: usize = 10;
const BRANCHES: usize = 8;
const HEAD_WARMUP: usize = 50;
const HEAD_RAISES: usize = 2000;
/// The chain whose head `ledger.head.raise` raises.
const CHAIN: &str = "20260101T000000Z-00000001";

fn main() {
    let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
    std::fs::create_dir_all(&target).expect("create target/");
    let dir = tempfile::tempdir_in(&target).expect("a temporary folder under target/");
    let workspace = |name: &str| {
        let sidecar = Sidecar::new(dir.path().join(name));
        std::fs::create_dir_all(sidecar.dir()).expect("create the sidecar folder");
        sidecar
    };

    let (each, group, batch) = appends(&workspace("each"), &workspace("group"));
    let blocking = blocking(&workspace("blocking"));
    let verified = verify_bench(&workspace("verify"));
    let branches: Vec<Sidecar> = (0..BRANCHES).map(|b| workspace(&format!("branch-{b}"))).collect();
    let (one_chain, merged) = verify_merged(&workspace("verify"), &branches, &workspace("merged"));
    let (raised, database_only) = head_raise(&workspace("head"), &workspace("head-database-only"));

    samples::write("ledger.append.fsync_each", None, &each);
    samples::write("ledger.append.group_commit", Some("ledger.append.fsync_each"), &group);
    samples::write("ledger.verify", None, &verified);
    samples::write("ledger.verify.one_chain", None, &one_chain);
    samples::write("ledger.verify.merged_8", Some("ledger.verify.one_chain"), &merged);
    samples::write("ledger.head.raise.database_only", None, &database_only);
    samples::write("ledger.head.raise", Some("ledger.head.raise.database_only"), &raised);
    eprintln!("ledger: ledger.head.raise {} (the database's row alone: {})", summary(&raised), summary(&database_only));
    let ratio = median(&each) / median(&group);
    eprintln!("ledger: ledger.append.fsync_each {}", summary(&each));
    eprintln!("ledger: ledger.append.group_commit {} ({ratio:.0}x the records per second, {batch:.0} records per sync)", summary(&group));
    eprintln!(
        "ledger: 8 producers blocking on one append each: {} per record ({:.1}x)",
        summary(&blocking),
        median(&each) / median(&blocking)
    );
    eprintln!("ledger: ledger.verify {} per record ({:.0} records per second)", summary(&verified), 1e9 / median(&verified));
    eprintln!(
        "ledger: ledger.verify.merged_8 {} per record, {:.2}x one chain's ({})",
        summary(&merged),
        median(&merged) / median(&one_chain),
        summary(&one_chain)
    );
}

/// A tool call as the engine records one: a decision with two hooks, a file with one changed range of
/// 15 lines and their line digests.
fn record(i: usize) -> Record {
    let mut record = Record::new(RecordKind::ToolCall);
    record.event = Some("PreToolUse".into());
    record.session = Some(format!("s-{}", i % 8));
    record.agent = Some("claude-code".into());
    record.intent = Some(format!("INT-{:03}", i % 12));
    record.tool = Some("write_to_file".into());
    record.input_sha256 = Some(sha256_hex(&i.to_le_bytes()));
    record.decision = Some(RecordedDecision {
        decision: "allow".into(),
        reason: None,
        hooks: vec![
            RecordedHook { name: "gatekeeper".into(), outcome: "allow".into(), duration_ns: 1800, failure: None },
            RecordedHook { name: "lint".into(), outcome: "allow".into(), duration_ns: 41_000, failure: None },
        ],
    });
    record.files = vec![FileChange {
        path: format!("src/module_{}.rs", i % 40),
        sha256: Some(sha256_hex(&(i * 7).to_le_bytes())),
        before_sha256: None,
        ranges: vec![LineRange {
            start: 10,
            end: 24,
            sha256: sha256_hex(&(i * 13).to_le_bytes()),
            line_digests: Some(sha256_hex(&(i * 17).to_le_bytes()).repeat(2)[..8 * 15].to_owned()),
        }],
    }];
    record
}

fn open(sidecar: &Sidecar) -> Ledger {
    Ledger::open(sidecar).expect("open the ledger").0
}

fn nanos(started: Instant) -> u64 {
    u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// `ledger.append.fsync_each` and `ledger.append.group_commit`, interleaved: [`ROUNDS`] rounds of 8
/// producers × [`PER_PRODUCER`] durable appends with [`WINDOW`] in flight each, each round followed
/// by its share of the [`EACH_SAMPLES`] one-at-a-time appends on another ledger. Returns the
/// one-at-a-time nanoseconds per append, the per-round nanoseconds per record, and the mean records
/// per sync of the group commit.
fn appends(each: &Sidecar, group: &Sidecar) -> (Vec<u64>, Vec<u64>, f64) {
    let single = open(each);
    for i in 0..EACH_WARMUP {
        single.append(record(i)).expect("append");
    }
    let ledger = Arc::new(open(group));
    let start = Arc::new(Barrier::new(PRODUCERS + 1));
    let done = Arc::new(Barrier::new(PRODUCERS + 1));
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let (ledger, start, done) = (Arc::clone(&ledger), Arc::clone(&start), Arc::clone(&done));
            std::thread::spawn(move || {
                // Round 0 warms up.
                for _ in 0..=ROUNDS {
                    // Records are made before the clock starts: what is timed is the ledger.
                    let records: Vec<Record> = (0..PER_PRODUCER).map(|i| record(p * PER_PRODUCER + i)).collect();
                    start.wait();
                    let mut in_flight: VecDeque<Ticket> = VecDeque::with_capacity(WINDOW);
                    for record in records {
                        if in_flight.len() == WINDOW {
                            in_flight.pop_front().expect("full").wait().expect("a durable append");
                        }
                        in_flight.push_back(ledger.enqueue(record));
                    }
                    for ticket in in_flight {
                        ticket.wait().expect("a durable append");
                    }
                    done.wait();
                }
            })
        })
        .collect();
    let mut one_at_a_time = Vec::with_capacity(EACH_SAMPLES);
    let mut grouped = Vec::with_capacity(ROUNDS);
    let mut counted = ledger.stats();
    for round in 0..=ROUNDS {
        if round == 1 {
            counted = ledger.stats();
        }
        // The clock starts once every producer has made its records and stands at the barrier.
        start.wait();
        let started = Instant::now();
        done.wait();
        if round == 0 {
            continue;
        }
        grouped.push(nanos(started) / (PRODUCERS * PER_PRODUCER) as u64);
        let records: Vec<Record> = (0..EACH_SAMPLES / ROUNDS).map(|i| record(round * 1000 + i)).collect();
        for record in records {
            let started = Instant::now();
            single.append(record).expect("append");
            one_at_a_time.push(nanos(started));
        }
    }
    for producer in producers {
        producer.join().expect("a producer thread");
    }
    let stats = ledger.stats();
    let batch = (stats.records - counted.records) as f64 / (stats.batches - counted.batches) as f64;
    (one_at_a_time, grouped, batch)
}

/// For comparison only: 8 producers each blocking on one append at a time; nanoseconds per record
/// over rounds of 8 appends (one per producer).
fn blocking(sidecar: &Sidecar) -> Vec<u64> {
    let ledger = Arc::new(open(sidecar));
    let batches: Vec<Vec<Record>> = (0..PRODUCERS).map(|p| (0..BLOCKING_EACH).map(|i| record(p * BLOCKING_EACH + i)).collect()).collect();
    let started = Instant::now();
    let producers: Vec<_> = batches
        .into_iter()
        .map(|records| {
            let ledger = Arc::clone(&ledger);
            std::thread::spawn(move || {
                for record in records {
                    ledger.append(record).expect("append");
                }
            })
        })
        .collect();
    for producer in producers {
        producer.join().expect("a producer thread");
    }
    vec![nanos(started) / (PRODUCERS * BLOCKING_EACH) as u64]
}

fn verify_bench(sidecar: &Sidecar) -> Vec<u64> {
    {
        let ledger = open(sidecar);
        for i in 0..VERIFY_RECORDS {
            drop(ledger.enqueue(record(i)));
        }
        ledger.flush().expect("write the ledger to verify");
    }
    let chain = chains::current(sidecar).expect("the chain written");
    let path = chain.path;
    let head = head::read(&sidecar.state_db(), &chain.chain).expect("read the head");
    (0..VERIFY_RUNS)
        .map(|_| {
            let started = Instant::now();
            let verification = verify(&path, head.as_ref()).expect("verify");
            let elapsed = nanos(started);
            assert!(verification.is_intact(), "{:?}", verification.problem);
            assert_eq!(verification.records, VERIFY_RECORDS as u64);
            elapsed / VERIFY_RECORDS as u64
        })
        .collect()
}

/// `trace verify` of `single` (one chain of [`VERIFY_RECORDS`] records, written by `verify_bench`)
/// and of `merged`: the chains of `branches`, [`VERIFY_RECORDS`] / [`BRANCHES`] records each, copied
/// side by side into its folder as a merge leaves them. Interleaved, [`VERIFY_RUNS`] of each.
fn verify_merged(single: &Sidecar, branches: &[Sidecar], merged: &Sidecar) -> (Vec<u64>, Vec<u64>) {
    std::fs::create_dir_all(merged.trace_dir()).expect("create the merged folder of chains");
    for (b, branch) in branches.iter().enumerate() {
        {
            let ledger = open(branch);
            for i in 0..VERIFY_RECORDS / branches.len() {
                drop(ledger.enqueue(record(b * VERIFY_RECORDS + i)));
            }
            ledger.flush().expect("write a branch's chain");
        }
        let chain = chains::current(branch).expect("the branch's chain");
        std::fs::copy(&chain.path, merged.trace_dir().join(format!("{}.jsonl", chain.chain))).expect("merge a chain");
    }
    let run = |sidecar: &Sidecar, chains: usize| {
        let started = Instant::now();
        let verification = audit::verify_ledger(sidecar).expect("verify");
        let elapsed = nanos(started);
        assert!(verification.is_intact(), "{:?}", verification.first_problem());
        assert_eq!((verification.records(), verification.chains.len()), (VERIFY_RECORDS as u64, chains));
        elapsed / VERIFY_RECORDS as u64
    };
    (0..VERIFY_RUNS).map(|_| (run(single, 1), run(merged, branches.len()))).unzip()
}

/// One raise of the head with its copy outside the workspace, then one of the database's row alone,
/// [`HEAD_RAISES`] times each.
fn head_raise(with_copy: &Sidecar, database_only: &Sidecar) -> (Vec<u64>, Vec<u64>) {
    let mut both = head::HeadStore::for_sidecar(with_copy).expect("open the head with its copy");
    let mut alone = head::HeadStore::open(&database_only.state_db()).expect("open the head");
    let hash = "0".repeat(64);
    let (mut raised, mut row) = (Vec::with_capacity(HEAD_RAISES), Vec::with_capacity(HEAD_RAISES));
    for count in 1..=(HEAD_WARMUP + HEAD_RAISES) as u64 {
        let started = Instant::now();
        both.write(CHAIN, count, &hash, count).expect("raise the head and its copy");
        let with = nanos(started);
        let started = Instant::now();
        alone.write(CHAIN, count, &hash, count).expect("raise the head");
        let without = nanos(started);
        if count > HEAD_WARMUP as u64 {
            raised.push(with);
            row.push(without);
        }
    }
    (raised, row)
}

/// The percentile `p` as `scripts/bench.js` computes it.
fn percentile(samples: &[u64], p: usize) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    sorted[(sorted.len() * p).div_ceil(100).saturating_sub(1)] as f64
}

fn median(samples: &[u64]) -> f64 {
    percentile(samples, 50)
}

/// "median 41.2 µs, p99 80.3 µs".
fn summary(samples: &[u64]) -> String {
    format!("median {:.1} µs, p99 {:.1} µs", percentile(samples, 50) / 1000.0, percentile(samples, 99) / 1000.0)
}
