//! The trace ledger's writer and verifier, with real files and real processes.
//!
//! Several tests run other processes: this test binary again, with `--exact child` and
//! `CHOKEPOINT_LEDGER_CHILD` saying what to do; without that variable `child` returns at once, so it
//! passes as an ordinary test.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chokepoint_core::Sidecar;
use chokepoint_core::ledger::chains;
use chokepoint_core::ledger::head::{self, Head};
use chokepoint_core::ledger::record::{line_hash, sha256_hex};
use chokepoint_core::ledger::verify::{ProblemKind, Verification, verify};
use chokepoint_core::ledger::writer::{Ledger, LedgerError, Notice};
use chokepoint_core::ledger::{FileChange, GENESIS, LineRange, Record, RecordKind, RecordedDecision, RecordedHook};
use common::Rng;

const CHILD_ENV: &str = "CHOKEPOINT_LEDGER_CHILD";
const DIR_ENV: &str = "CHOKEPOINT_LEDGER_DIR";
const TAG_ENV: &str = "CHOKEPOINT_LEDGER_TAG";
const COUNT_ENV: &str = "CHOKEPOINT_LEDGER_COUNT";

/// The chain the tests' workspaces begin with, so that a test knows its file before the first append.
const CHAIN: &str = "20260101T000000Z-00000001";

/// A workspace whose current chain is [`CHAIN`], begun and still empty: what the writer's first batch
/// would have made, under a name the test knows.
fn workspace() -> (tempfile::TempDir, Sidecar) {
    let dir = tempfile::tempdir().unwrap();
    let sidecar = Sidecar::new(dir.path());
    std::fs::create_dir_all(sidecar.trace_dir()).unwrap();
    std::fs::write(chain_path(&sidecar), "").unwrap();
    std::fs::write(sidecar.trace_lock(), format!("{CHAIN}\n")).unwrap();
    (dir, sidecar)
}

fn chain_path(sidecar: &Sidecar) -> PathBuf {
    chains::path_of(sidecar, CHAIN)
}

/// A record like the engine writes, varied by `rng`, tagged with `agent`. `big` adds to a quarter of
/// them a payload of up to 8 KiB, so that batches span several pages (a write that SIGKILL can cut
/// between pages).
fn sample(rng: &mut Rng, agent: &str, big: bool) -> Record {
    let kinds = [RecordKind::ToolCall, RecordKind::Lifecycle, RecordKind::Approval, RecordKind::Containment, RecordKind::External];
    let mut record = Record::new(kinds[(rng.next() % 5) as usize]);
    record.agent = Some(agent.to_owned());
    record.session = Some(format!("s-{}", rng.next() % 7));
    if rng.next().is_multiple_of(2) {
        record.event = Some(rng.pick(&["PreToolUse", "PostToolUse", "SessionStart", "Stop"]).to_owned());
        record.tool = Some(rng.pick(&["write_to_file", "execute_command", "read_file"]).to_owned());
        record.intent = Some(format!("INT-{:03}", rng.next() % 20));
        record.input_sha256 = Some(sha256_hex(&rng.next().to_le_bytes()));
        record.decision = Some(RecordedDecision {
            decision: rng.pick(&["allow", "deny", "ask"]).to_owned(),
            reason: (rng.next().is_multiple_of(3)).then(|| "outside the intent's scope: src/\"quoted\"/é".to_owned()),
            hooks: vec![RecordedHook {
                name: "gatekeeper".into(),
                outcome: "allow".into(),
                duration_ns: rng.next() % 100_000,
                failure: None,
            }],
        });
    }
    if rng.next().is_multiple_of(3) {
        let path = format!("src/m{}.rs", rng.next() % 50);
        let sha256 = Some(sha256_hex(&rng.next().to_le_bytes()));
        let end = 1 + (rng.next() % 40) as u32;
        let line_digests = Some("0123abcd".repeat(end as usize));
        record.files = vec![FileChange {
            path,
            sha256,
            before_sha256: None,
            ranges: vec![LineRange { start: 1, end, sha256: sha256_hex(b"x"), line_digests }],
        }];
    }
    if big && rng.next().is_multiple_of(4) {
        let size = (rng.next() % 8192) as usize;
        record.data = Some(serde_json::json!({ "output": "y".repeat(size) }));
    }
    record
}

fn lines_of(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().map(str::to_owned).collect()
}

fn verified(sidecar: &Sidecar) -> Verification {
    let head = head::read(&sidecar.state_db(), CHAIN).unwrap();
    verify(&chain_path(sidecar), head.as_ref()).unwrap()
}

// ---- one process --------------------------------------------------------------------------------

#[test]
fn appends_from_many_threads_form_one_chain() {
    let (_dir, sidecar) = workspace();
    let (ledger, recovery) = Ledger::open(&sidecar).unwrap();
    assert!(recovery.is_none());
    let ledger = Arc::new(ledger);
    const BLOCKING: usize = 8;
    const EACH: usize = 60;
    const PIPELINED: usize = 2;
    const QUEUED: usize = 300;
    let mut threads = Vec::new();
    for t in 0..BLOCKING {
        let ledger = Arc::clone(&ledger);
        threads.push(std::thread::spawn(move || {
            let mut rng = Rng(t as u64 + 1);
            (0..EACH).map(|_| ledger.append(sample(&mut rng, &format!("b{t}"), false)).unwrap()).collect::<Vec<_>>()
        }));
    }
    for t in 0..PIPELINED {
        let ledger = Arc::clone(&ledger);
        threads.push(std::thread::spawn(move || {
            let mut rng = Rng(t as u64 + 100);
            let tickets: Vec<_> = (0..QUEUED).map(|_| ledger.enqueue(sample(&mut rng, &format!("q{t}"), false))).collect();
            tickets.into_iter().map(|ticket| ticket.wait().unwrap()).collect()
        }));
    }
    let appended: Vec<_> = threads.into_iter().flat_map(|t| t.join().unwrap()).collect();
    ledger.flush().unwrap();
    let total = BLOCKING * EACH + PIPELINED * QUEUED;
    let seqs: BTreeSet<u64> = appended.iter().map(|a| a.seq).collect();
    assert_eq!(seqs, (1..=total as u64).collect(), "every seq once, none missing");

    // What each producer was told is what the file holds, and the file verifies against its head.
    let lines = lines_of(&chain_path(&sidecar));
    assert_eq!(lines.len(), total);
    for a in &appended {
        let line = &lines[a.seq as usize - 1];
        assert_eq!(line_hash(line), a.hash);
        assert_eq!(*line, a.record.to_line());
    }
    // Each producer's own appends were acknowledged in the order it made them.
    for thread_seqs in appended.chunks(EACH).take(BLOCKING) {
        assert!(thread_seqs.windows(2).all(|w| w[0].seq < w[1].seq));
    }
    let verification = verified(&sidecar);
    assert!(verification.is_intact(), "{:?}", verification.problem);
    assert_eq!(verification.records, total as u64);
    let stats = ledger.stats();
    assert_eq!((stats.records, stats.durable_seq), (total as u64, total as u64));
    assert!(stats.batches < total as u64 / 4, "appends queued during a sync share the next one: {stats:?}");
    assert!(ledger.notices().is_empty());
}

/// An agent's gate waits for its record's sync, not for the head (which may lag, never lead: see
/// ledger::head); a flush returns only once the head counts everything it flushed.
#[test]
fn an_append_is_acknowledged_after_its_sync_and_a_flush_after_its_head() {
    let (_dir, sidecar) = workspace();
    let (ledger, _) = Ledger::open(&sidecar).unwrap();
    let ledger = Arc::new(ledger);
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (ledger, db) = (Arc::clone(&ledger), sidecar.state_db());
            std::thread::spawn(move || {
                let mut rng = Rng(t + 7);
                let mut seen = Vec::new();
                for _ in 0..25 {
                    let appended = ledger.append(sample(&mut rng, "a", false)).unwrap();
                    // The writer counts a record durable right after the sync that covers it.
                    let durable = ledger.stats().durable_seq;
                    assert!(durable >= appended.seq, "seq {} acknowledged while only {durable} was synced", appended.seq);
                    // A flush returns after the head that counts it was written (the head follows the data).
                    if appended.seq % 5 == 0 {
                        ledger.flush().unwrap();
                        let head = head::read(&db, CHAIN).unwrap().unwrap();
                        assert!(head.count >= appended.seq, "seq {} flushed before its head ({})", appended.seq, head.count);
                    }
                    seen.push(appended.seq);
                }
                seen
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    // Tickets waited on later report the same, and a flush after them leaves the head on the last.
    let mut rng = Rng(99);
    let tickets: Vec<_> = (0..50).map(|_| ledger.enqueue(sample(&mut rng, "q", false))).collect();
    let last = tickets.into_iter().map(|t| t.wait().unwrap()).last().unwrap();
    assert!(ledger.stats().durable_seq >= last.seq);
    ledger.flush().unwrap();
    let head = head::read(&sidecar.state_db(), CHAIN).unwrap().unwrap();
    assert_eq!((head.count, head.hash), (last.seq, last.hash));
}

#[test]
fn enqueued_records_are_written_without_anyone_waiting() {
    let (_dir, sidecar) = workspace();
    let (ledger, _) = Ledger::open(&sidecar).unwrap();
    let mut rng = Rng(3);
    for _ in 0..20 {
        drop(ledger.enqueue(sample(&mut rng, "fire-and-forget", false)));
    }
    ledger.flush().unwrap();
    assert_eq!(lines_of(&chain_path(&sidecar)).len(), 20);
    // Closing writes what is still queued.
    drop(ledger.enqueue(sample(&mut rng, "last", false)));
    drop(ledger);
    assert_eq!(lines_of(&chain_path(&sidecar)).len(), 21);
    assert!(verified(&sidecar).is_intact());
}

#[test]
fn a_torn_tail_is_moved_aside_and_reported_on_open() {
    let (_dir, sidecar) = workspace();
    let path = chain_path(&sidecar);
    let mut rng = Rng(5);
    {
        let (ledger, _) = Ledger::open(&sidecar).unwrap();
        for _ in 0..5 {
            ledger.append(sample(&mut rng, "a", false)).unwrap();
        }
    }
    let intact = std::fs::read(&path).unwrap();
    for (torn, why) in [
        (&b"{\"v\":1,\"seq\":6,\"ti"[..], "after the last newline"),
        (&b"garbage\n"[..], "not a record"),
        (&b"{\"v\":1,\"seq\":6,\"ti\n{\"v\":1,\"seq\":7}\n\0\0\0"[..], "after the last newline"),
    ] {
        let mut bytes = intact.clone();
        bytes.extend_from_slice(torn);
        std::fs::write(&path, &bytes).unwrap();
        let verification = verify(&path, None).unwrap();
        assert!(!verification.is_intact());
        let (ledger, recovery) = Ledger::open(&sidecar).unwrap();
        let recovery = recovery.expect("a torn tail is reported");
        assert_eq!((recovery.from_offset, recovery.moved_bytes), (intact.len() as u64, torn.len() as u64));
        assert!(recovery.reason.contains(why), "{}", recovery.reason);
        assert_eq!(std::fs::read(&recovery.to).unwrap(), torn, "the recovery file holds exactly what was cut");
        assert_eq!(std::fs::read(&path).unwrap(), intact);
        assert!(recovery.to.file_name().unwrap().to_str().unwrap().starts_with(&format!("{CHAIN}.recovered-")));
        drop(ledger);
    }
    // Every recovery got its own file.
    let recovered = std::fs::read_dir(sidecar.trace_dir())
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_str().unwrap().starts_with(&format!("{CHAIN}.recovered-")));
    assert_eq!(recovered.count(), 3);
    // They are evidence, not chains: readers pass them by.
    assert_eq!(chains::list(&sidecar).unwrap().len(), 1);
    // And the chain continues from the last good record.
    let (ledger, recovery) = Ledger::open(&sidecar).unwrap();
    assert!(recovery.is_none());
    assert_eq!(ledger.append(sample(&mut rng, "a", false)).unwrap().seq, 6);
    drop(ledger);
    assert!(verified(&sidecar).is_intact());
}

/// The tail is searched backwards a few KiB at first and more after: records and a torn end each
/// longer than that first read are still found whole.
#[test]
fn records_and_a_torn_end_longer_than_the_first_read_back_are_found_whole() {
    let (_dir, sidecar) = workspace();
    let path = chain_path(&sidecar);
    let mut rng = Rng(11);
    {
        let (ledger, _) = Ledger::open(&sidecar).unwrap();
        for n in 0..3 {
            let mut record = sample(&mut rng, "a", false);
            record.data = Some(serde_json::json!({ "payload": "y".repeat(20_000 + n * 7_000) }));
            ledger.append(record).unwrap();
        }
    }
    let intact = std::fs::read(&path).unwrap();
    let torn = format!("{{\"v\":2,\"seq\":4,\"data\":\"{}", "z".repeat(50_000));
    let mut bytes = intact.clone();
    bytes.extend_from_slice(torn.as_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let (ledger, recovery) = Ledger::open(&sidecar).unwrap();
    let recovery = recovery.expect("the torn end is found");
    assert_eq!((recovery.from_offset, recovery.moved_bytes), (intact.len() as u64, torn.len() as u64));
    assert_eq!(ledger.append(sample(&mut rng, "a", false)).unwrap().seq, 4, "the chain continues from the long last record");
    drop(ledger);
    assert!(verified(&sidecar).is_intact());
}

#[test]
fn a_tail_torn_by_another_process_is_recovered_before_the_next_batch() {
    let (_dir, sidecar) = workspace();
    let (ledger, _) = Ledger::open(&sidecar).unwrap();
    let mut rng = Rng(11);
    ledger.append(sample(&mut rng, "a", false)).unwrap();
    // Another process took the lock, wrote half a line and died.
    let torn = b"{\"v\":1,\"seq\":2,\"time\":\"2026";
    std::fs::OpenOptions::new().append(true).open(chain_path(&sidecar)).unwrap().write_all(torn).unwrap();
    let appended = ledger.append(sample(&mut rng, "a", false)).unwrap();
    assert_eq!(appended.seq, 2);
    let notices = ledger.notices();
    assert!(matches!(&notices[..], [Notice::Recovered(r)] if r.moved_bytes == torn.len() as u64), "{notices:?}");
    assert!(verified(&sidecar).is_intact());
}

#[test]
fn a_line_the_head_vouches_for_is_never_moved_aside() {
    let (_dir, sidecar) = workspace();
    let path = chain_path(&sidecar);
    let mut rng = Rng(12);
    {
        let (ledger, _) = Ledger::open(&sidecar).unwrap();
        for _ in 0..3 {
            ledger.append(sample(&mut rng, "a", false)).unwrap();
        }
    }
    // Line 2 edited: line 3 no longer chains, but the head says line 3 was acknowledged.
    let mut lines = lines_of(&path);
    lines[1] = lines[1].replace("\"agent\":\"a\"", "\"agent\":\"b\"");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let (ledger, recovery) = Ledger::open(&sidecar).unwrap();
    assert!(recovery.is_none());
    drop(ledger);
    assert_eq!(lines_of(&path).len(), 3);
    let problem = verified(&sidecar).problem.unwrap();
    assert_eq!((problem.kind, problem.line), (ProblemKind::Edited, 2));
}

#[test]
fn a_chain_shorter_than_its_head_is_left_as_found_and_a_new_one_begun() {
    let (_dir, sidecar) = workspace();
    let path = chain_path(&sidecar);
    let (ledger, _) = Ledger::open(&sidecar).unwrap();
    let mut rng = Rng(13);
    for _ in 0..4 {
        ledger.append(sample(&mut rng, "a", false)).unwrap();
    }
    // The last record is cut off while the ledger is open (git checked out an older version, or
    // someone cut it): the next batch does not stop, and does not touch the chain either (moving its
    // head back would erase the evidence): it begins a new chain and says why.
    let lines = lines_of(&path);
    std::fs::write(&path, lines[..3].join("\n") + "\n").unwrap();
    let appended = ledger.enqueue(sample(&mut rng, "a", false)).wait().unwrap();
    assert_eq!((appended.seq, appended.record.prev.as_str()), (1, GENESIS), "a new chain, from its start");
    let notices = ledger.notices();
    let [Notice::LeftChain { chain, cause }] = &notices[..] else { panic!("{notices:?}") };
    assert_eq!(chain, CHAIN);
    assert!(matches!(cause, LedgerError::HeadMismatch { found_count: 3, head: Head { count: 4, .. }, .. }), "{cause:?}");
    assert!(cause.to_string().contains("ends at record 3 but its head says 4 records"), "{cause}");
    ledger.flush().unwrap();
    let new = ledger.chain().unwrap();
    assert_ne!(new, CHAIN);
    assert_eq!(chains::current(&sidecar).unwrap().chain, new, "the lock file names the new chain for every process");
    drop(ledger);
    assert_eq!(lines_of(&path).len(), 3, "the old chain is as it was found");
    // Its head stays: verify names the truncation (this workspace is no git repository to explain it).
    let problem = verified(&sidecar).problem.unwrap();
    assert_eq!((problem.kind, problem.line), (ProblemKind::Truncated, 4));
    let audit = chokepoint_core::ledger::audit::verify_ledger(&sidecar).unwrap();
    let (failing, _) = audit.first_problem().unwrap();
    assert_eq!(failing.chain, CHAIN);
    // Another process opens the ledger and appends to the new chain.
    let (ledger, recovery) = Ledger::open(&sidecar).unwrap();
    assert!(recovery.is_none() && ledger.notices().is_empty());
    assert_eq!(ledger.append(sample(&mut rng, "a", false)).unwrap().seq, 2);
    assert_eq!(ledger.chain().unwrap(), new);
    drop(ledger);

    // The old chain named current again (the lock file of a worktree that never saw the new one), its
    // end rewritten to the same length: left too, on opening.
    let mut forged = Record::new(RecordKind::External);
    forged.seq = 4;
    forged.time = "2026-01-01T00:00:00.000Z".into();
    forged.prev = line_hash(&lines[2]);
    std::fs::write(&path, lines[..3].join("\n") + "\n" + &forged.to_line() + "\n").unwrap();
    std::fs::write(sidecar.trace_lock(), CHAIN).unwrap();
    let (ledger, _) = Ledger::open(&sidecar).unwrap();
    let notices = ledger.notices();
    assert!(
        matches!(&notices[..], [Notice::LeftChain { cause, .. }] if cause.to_string().contains("its end was rewritten")),
        "{notices:?}"
    );
    assert_eq!(ledger.append(sample(&mut rng, "a", false)).unwrap().seq, 1);
    drop(ledger);
    assert_eq!(lines_of(&path).len(), 4, "nothing was appended to it");
    assert_eq!(chains::list(&sidecar).unwrap().len(), 3);
}

#[test]
fn a_last_line_rewritten_to_the_same_length_is_noticed_before_the_next_batch() {
    let (_dir, sidecar) = workspace();
    let path = chain_path(&sidecar);
    let (ledger, _) = Ledger::open(&sidecar).unwrap();
    let mut rng = Rng(14);
    for _ in 0..3 {
        ledger.append(sample(&mut rng, "a", false)).unwrap();
    }
    // Same file, same length, different last line: the writer must not chain onto its stale hash.
    let text = std::fs::read_to_string(&path).unwrap();
    let edited = text.replacen("\"agent\":\"a\"", "\"agent\":\"b\"", 3);
    assert_eq!(edited.len(), text.len());
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().write_all(edited.as_bytes()).unwrap();
    let appended = ledger.append(sample(&mut rng, "a", false)).unwrap();
    assert_eq!(appended.seq, 1, "a new chain");
    let notices = ledger.notices();
    assert!(matches!(&notices[..], [Notice::LeftChain { cause: LedgerError::HeadMismatch { found_count: 3, .. }, .. }]), "{notices:?}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), edited, "nothing was appended, nothing moved");
}

/// A chain's file that is gone (git switched to a branch without it, a stash took it) is left, not
/// made anew; and a workspace whose lock file names no chain begins one with its first batch only.
#[test]
#[cfg_attr(
    wine,
    ignore = "under Wine a file removed while the ledger holds it open stays until its handle closes (a pending delete), so the chain is not gone yet"
)]
fn a_chain_whose_file_is_gone_is_left_and_nothing_is_created_before_the_first_batch() {
    let (_dir, sidecar) = workspace();
    let (ledger, _) = Ledger::open(&sidecar).unwrap();
    let mut rng = Rng(15);
    ledger.append(sample(&mut rng, "a", false)).unwrap();
    std::fs::remove_file(chain_path(&sidecar)).unwrap();
    assert_eq!(ledger.append(sample(&mut rng, "a", false)).unwrap().seq, 1);
    assert!(matches!(&ledger.notices()[..], [Notice::LeftChain { chain, .. }] if chain == CHAIN));
    assert!(!chain_path(&sidecar).exists(), "the gone chain was not made anew");
    drop(ledger);

    let fresh = tempfile::tempdir().unwrap();
    let sidecar = Sidecar::new(fresh.path());
    std::fs::create_dir(sidecar.dir()).unwrap();
    let (ledger, _) = Ledger::open(&sidecar).unwrap();
    assert!(!sidecar.trace_dir().exists() && ledger.chain().is_none(), "opening creates no chain");
    ledger.flush().unwrap();
    assert_eq!(ledger.append(sample(&mut rng, "a", false)).unwrap().seq, 1);
    let chain = ledger.chain().unwrap();
    assert!(chains::is_chain_name(&chain), "{chain}");
    assert_eq!(chains::list(&sidecar).unwrap().iter().map(|c| c.chain.clone()).collect::<Vec<_>>(), [chain]);
}

#[test]
fn reading_the_head_creates_nothing() {
    let (_dir, sidecar) = workspace();
    assert_eq!(head::read(&sidecar.state_db(), CHAIN).unwrap(), None);
    assert!(!sidecar.state_db().exists());
    chokepoint_core::scope::leases::Leases::open(&sidecar.state_db()).unwrap();
    assert_eq!(head::read(&sidecar.state_db(), CHAIN).unwrap(), None);
    let tables = rusqlite_tables(&sidecar.state_db());
    // The lease module's schema: the leases and their revocations, nothing of the head's.
    assert_eq!(tables, ["lease_revocations_v1", "leases"]);
    // The lease module's schema and the head's live side by side.
    drop(Ledger::open(&sidecar).unwrap());
    assert!(rusqlite_tables(&sidecar.state_db()).contains(&"ledger_heads_v2".to_owned()));
    let leases = chokepoint_core::scope::leases::Leases::open(&sidecar.state_db()).unwrap();
    assert!(leases.list().unwrap().is_empty());
}

/// The tables of a SQLite database.
fn rusqlite_tables(db: &Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut statement = conn.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name").unwrap();
    statement.query_map([], |row| row.get(0)).unwrap().map(Result::unwrap).collect()
}

#[test]
fn a_missing_sidecar_folder_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let error = Ledger::open(&Sidecar::new(dir.path())).unwrap_err();
    assert!(matches!(&error, LedgerError::Io { op: "open the lock file", .. }), "{error:?}");
    assert!(error.to_string().contains("agent_trace.lock"), "{error}");
}

// ---- verify: mutations -------------------------------------------------------------------------

/// `n` records chained as the writer chains them, without the writer (no fsync), for speed.
fn chain(rng: &mut Rng, n: usize) -> Vec<String> {
    let mut prev = GENESIS.to_owned();
    (1..=n as u64)
        .map(|seq| {
            let mut record = sample(rng, "m", false);
            record.seq = seq;
            record.time = chokepoint_core::base::clock::format_utc(1_795_000_000_000 + seq * 1000);
            record.prev = std::mem::take(&mut prev);
            let line = record.to_line();
            prev = line_hash(&line);
            line
        })
        .collect()
}

fn bytes_of(lines: &[impl AsRef<[u8]>]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for line in lines {
        bytes.extend_from_slice(line.as_ref());
        bytes.push(b'\n');
    }
    bytes
}

fn forged(rng: &mut Rng, seq: u64, prev: String) -> String {
    let mut record = sample(rng, "forger", false);
    record.seq = seq;
    record.time = "2030-01-01T00:00:00.000Z".into();
    record.prev = prev;
    record.to_line()
}

/// What the verifier must say: the kind, and the lines any of which is a right answer (a line
/// inserted next to an identical one may be named as either).
struct Expected {
    kind: Option<ProblemKind>,
    lines: Vec<u64>,
}

fn expect(kind: ProblemKind, line: u64) -> Expected {
    Expected { kind: Some(kind), lines: vec![line] }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Tamper {
    EditByte,
    DeleteLine,
    DeleteAndRechain,
    InsertCopy,
    InsertForged,
    Swap,
    TruncateTail,
    TruncateAndRewrite,
}

/// Applies `tamper` at a random place; returns the tampered bytes and what verify must say with the
/// original head, and without a head (`None` when only the head can tell).
fn tamper(rng: &mut Rng, lines: &[String], tamper: Tamper) -> Option<(Vec<u8>, Expected, Option<Expected>)> {
    let n = lines.len() as u64;
    let pick = |rng: &mut Rng, below: u64| rng.next() % below;
    let mut out: Vec<Vec<u8>> = lines.iter().map(|l| l.as_bytes().to_vec()).collect();
    let joined = |out: &[Vec<u8>]| bytes_of(out);
    match tamper {
        Tamper::EditByte => {
            let k = 1 + pick(rng, n);
            let line = lines[k as usize - 1].as_bytes();
            let at = pick(rng, line.len() as u64) as usize;
            let mut edited = line.to_vec();
            let byte = loop {
                let b = 0x20 + pick(rng, 0x5f) as u8;
                if b != line[at] {
                    break b;
                }
            };
            edited[at] = byte;
            // A byte of a multi-byte character makes the line invalid utf-8: not a record either.
            let parsed =
                std::str::from_utf8(&edited).map_err(|e| e.to_string()).and_then(|line| Record::from_line(line).map_err(String::from));
            out[k as usize - 1] = edited;
            let original = Record::from_line(&lines[k as usize - 1]).unwrap();
            let with_head = match parsed {
                Ok(r) if k == n && r.seq == original.seq && r.prev == original.prev => expect(ProblemKind::Truncated, n),
                // The last record numbered past its place, chaining: read as a record missing before it.
                Ok(r) if k == n && r.seq > original.seq && r.prev == original.prev => expect(ProblemKind::Deleted, n),
                _ => expect(ProblemKind::Edited, k),
            };
            let without = (k < n).then(|| expect(ProblemKind::Edited, k));
            Some((joined(&out), with_head, without))
        }
        Tamper::DeleteLine => {
            let k = 1 + pick(rng, n);
            out.remove(k as usize - 1);
            if k < n {
                Some((joined(&out), expect(ProblemKind::Deleted, k), Some(expect(ProblemKind::Deleted, k))))
            } else {
                Some((joined(&out), expect(ProblemKind::Truncated, n), None))
            }
        }
        Tamper::DeleteAndRechain => {
            // A record removed and every later one chained anew: only the seq gap shows it.
            let k = 1 + pick(rng, n);
            out.remove(k as usize - 1);
            let mut prev = if k == 1 { GENESIS.to_owned() } else { line_hash(&lines[k as usize - 2]) };
            for line in out.iter_mut().skip(k as usize - 1) {
                let mut record = Record::from_line(std::str::from_utf8(line).unwrap()).unwrap();
                record.prev = prev;
                *line = record.to_line().into_bytes();
                prev = sha256_hex(line);
            }
            if k < n {
                Some((joined(&out), expect(ProblemKind::Deleted, k), Some(expect(ProblemKind::Deleted, k))))
            } else {
                Some((joined(&out), expect(ProblemKind::Truncated, n), None))
            }
        }
        Tamper::InsertCopy => {
            let k = 1 + pick(rng, n + 1);
            let j = 1 + pick(rng, n);
            let copy = lines[j as usize - 1].as_bytes().to_vec();
            out.insert(k as usize - 1, copy.clone());
            // The copy, or an identical neighbour of it.
            let lines: Vec<u64> = [k - 1, k, k + 1].into_iter().filter(|&l| l >= 1 && out.get(l as usize - 1) == Some(&copy)).collect();
            let e = || Expected { kind: Some(ProblemKind::Inserted), lines: lines.clone() };
            Some((joined(&out), e(), Some(e())))
        }
        Tamper::InsertForged => {
            let k = 1 + pick(rng, n);
            let prev = if k == 1 { GENESIS.to_owned() } else { line_hash(&lines[k as usize - 2]) };
            out.insert(k as usize - 1, forged(rng, k, prev).into_bytes());
            Some((joined(&out), expect(ProblemKind::Inserted, k), Some(expect(ProblemKind::Inserted, k))))
        }
        Tamper::Swap => {
            if n < 2 {
                return None;
            }
            let i = 1 + pick(rng, n - 1);
            // Neighbours half the time: the hardest to tell from an insertion.
            let j = if rng.next().is_multiple_of(2) { i + 1 } else { i + 1 + pick(rng, n - i) };
            out.swap(i as usize - 1, j as usize - 1);
            Some((joined(&out), expect(ProblemKind::Reordered, i), Some(expect(ProblemKind::Reordered, i))))
        }
        Tamper::TruncateTail => {
            let bytes = joined(&out);
            // Mostly within the last few lines, sometimes anywhere.
            let span = if rng.next().is_multiple_of(4) { bytes.len() } else { bytes.len().min(2000) };
            let cut = bytes.len() - 1 - pick(rng, span as u64) as usize;
            let kept = &bytes[..cut];
            let complete = kept.iter().filter(|&&b| b == b'\n').count() as u64;
            let torn = kept.last().is_some_and(|&b| b != b'\n');
            let without = if torn { expect(ProblemKind::TornTail, complete + 1) } else { Expected { kind: None, lines: vec![] } };
            Some((kept.to_vec(), expect(ProblemKind::Truncated, complete + 1), Some(without)))
        }
        Tamper::TruncateAndRewrite => {
            let m = pick(rng, n);
            let r = pick(rng, n - m + 3);
            out.truncate(m as usize);
            let mut prev = out.last().map_or(GENESIS.to_owned(), |l| sha256_hex(l));
            for seq in m + 1..=m + r {
                let line = forged(rng, seq, prev);
                prev = line_hash(&line);
                out.push(line.into_bytes());
            }
            let total = m + r;
            let with_head = if total < n { expect(ProblemKind::Truncated, total + 1) } else { expect(ProblemKind::Truncated, n) };
            Some((joined(&out), with_head, Some(Expected { kind: None, lines: vec![] })))
        }
    }
}

fn check(case: &str, verification: &Verification, expected: &Expected, bytes: &[u8]) {
    match (&verification.problem, expected.kind) {
        (None, None) => {}
        (Some(problem), Some(kind)) => {
            assert_eq!(problem.kind, kind, "{case}: {problem}");
            assert!(expected.lines.contains(&problem.line), "{case}: expected line {:?}, got {problem}", expected.lines);
            // The offset is where that line starts in the tampered file.
            let starts: Vec<usize> =
                std::iter::once(0).chain(bytes.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i + 1)).collect();
            assert_eq!(Some(&(problem.offset as usize)), starts.get(problem.line as usize - 1).or(starts.last()), "{case}: {problem}");
        }
        (found, kind) => panic!("{case}: expected {kind:?} at {:?}, got {found:?}", expected.lines),
    }
}

#[test]
fn verify_names_the_first_bad_record_of_every_kind_of_tampering() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent_trace.jsonl");
    let mut rng = Rng(0x5eed_1ed6_e500);
    let kinds = [
        Tamper::EditByte,
        Tamper::DeleteLine,
        Tamper::DeleteAndRechain,
        Tamper::InsertCopy,
        Tamper::InsertForged,
        Tamper::Swap,
        Tamper::TruncateTail,
        Tamper::TruncateAndRewrite,
    ];
    let mut checked: BTreeMap<String, usize> = BTreeMap::new();
    for ledger in 0..160 {
        let n = match ledger % 10 {
            0 => 1 + (rng.next() % 3) as usize,
            9 => 60 + (rng.next() % 60) as usize,
            _ => 2 + (rng.next() % 30) as usize,
        };
        let lines = chain(&mut rng, n);
        let head = Head { count: n as u64, hash: line_hash(&lines[n - 1]), updated_at_ms: 0 };

        // Untampered, it verifies, with and without its head.
        let intact = bytes_of(&lines);
        std::fs::write(&path, &intact).unwrap();
        for h in [Some(&head), None] {
            let v = verify(&path, h).unwrap();
            assert!(v.is_intact(), "ledger {ledger}: {:?}", v.problem);
            assert_eq!((v.records, v.head_hash.as_str(), v.bytes), (n as u64, head.hash.as_str(), intact.len() as u64));
        }

        for kind in kinds {
            for round in 0..2 {
                let Some((bytes, with_head, without)) = tamper(&mut rng, &lines, kind) else { continue };
                std::fs::write(&path, &bytes).unwrap();
                let case = format!("ledger {ledger} ({n} records), {kind:?} #{round}");
                check(&case, &verify(&path, Some(&head)).unwrap(), &with_head, &bytes);
                if let Some(without) = without {
                    check(&format!("{case} without the head"), &verify(&path, None).unwrap(), &without, &bytes);
                }
                *checked.entry(format!("{kind:?}")).or_default() += 1;
            }
        }
    }
    assert!(checked.values().all(|&count| count >= 280), "{checked:?}");
}

#[test]
fn verify_reports_a_torn_tail_and_a_rewritten_head() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent_trace.jsonl");
    let lines = chain(&mut Rng(77), 10);
    let mut bytes = bytes_of(&lines);
    let intact_len = bytes.len();
    bytes.extend_from_slice(b"{\"v\":1,\"se");
    std::fs::write(&path, &bytes).unwrap();
    let v = verify(&path, None).unwrap();
    let problem = v.problem.unwrap();
    assert_eq!((problem.kind, problem.line, problem.offset), (ProblemKind::TornTail, 11, intact_len as u64));
    assert_eq!((v.records, v.torn_tail_bytes, v.head_hash), (10, 10, line_hash(&lines[9])));
    // The head pins record 10: the torn tail is what a crash leaves, and the chain holds.
    let head = Head { count: 10, hash: line_hash(&lines[9]), updated_at_ms: 0 };
    assert_eq!(verify(&path, Some(&head)).unwrap().problem.unwrap().kind, ProblemKind::TornTail);
    // A head that lags (a crash after the sync, before the head) is fine.
    std::fs::write(&path, &bytes[..intact_len]).unwrap();
    let lagging = Head { count: 7, hash: line_hash(&lines[6]), updated_at_ms: 0 };
    assert!(verify(&path, Some(&lagging)).unwrap().is_intact());
    let wrong = Head { count: 7, hash: line_hash(&lines[5]), updated_at_ms: 0 };
    let problem = verify(&path, Some(&wrong)).unwrap().problem.unwrap();
    assert_eq!((problem.kind, problem.line), (ProblemKind::Truncated, 7));
    assert!(problem.detail.contains("record 7 hashes to"), "{problem}");
}

// ---- other processes ----------------------------------------------------------------------------

fn spawn_child(what: &str, sidecar: &Sidecar, env: &[(&str, String)]) -> std::process::Child {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command.args(["--exact", "child", "--nocapture", "--test-threads=1"]);
    command.env(CHILD_ENV, what).env(DIR_ENV, sidecar.workspace_root());
    for (key, value) in env {
        command.env(key, value);
    }
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    command.spawn().unwrap()
}

/// The seqs a child reported as acknowledged (`ACK <seq>` lines), read until its stdout closes.
fn acks(stdout: std::process::ChildStdout) -> std::thread::JoinHandle<Vec<u64>> {
    std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .filter_map(|line| {
                // The test harness's own "test child ... " may precede the first line on the same line.
                line.rfind("ACK ").map(|at| line[at + 4..].trim().parse().unwrap())
            })
            .collect()
    })
}

/// Records of the ledger from byte `from` on: (seq, agent) of each complete line.
fn agents_from(path: &Path, from: u64) -> Vec<(u64, String)> {
    let bytes = std::fs::read(path).unwrap();
    let text = std::str::from_utf8(&bytes[from as usize..]).unwrap();
    text.lines()
        .map(|line| {
            let r = Record::from_line(line).unwrap();
            (r.seq, r.agent.unwrap_or_default())
        })
        .collect()
}

#[test]
#[cfg_attr(
    qemu,
    ignore = "kills each child 30 to 150 ms after starting it, before a child emulated by qemu-user has appended anything (it acknowledged 0); the ledger's code is not Arm's own, and is tested natively in the cargo layer"
)]
fn acknowledged_appends_survive_sigkill_and_torn_tails_are_recovered() {
    let (_dir, sidecar) = workspace();
    let path = chain_path(&sidecar);
    let mut rng = Rng(0xc4a5);
    let started = Instant::now();
    // Who wrote each seq, and how far the file has been checked: the chain is followed incrementally
    // each round (the whole file is verified every few rounds and at the end, which in an unoptimised
    // build costs about a second per 10 MB).
    let mut owner = BTreeMap::<u64, String>::new();
    let (mut checked, mut last_seq, mut last_hash) = (0usize, 0u64, GENESIS.to_owned());
    let (mut torn_rounds, mut acked_total, mut rounds) = (0, 0, 0);
    while rounds < 40 && started.elapsed() < Duration::from_secs(22) {
        let tag = format!("crash-{rounds}");
        let mut child = spawn_child("crash", &sidecar, &[(TAG_ENV, tag.clone())]);
        let acked = acks(child.stdout.take().unwrap());
        // Kill it at a random moment, mostly once it is appending; every other round, the moment the
        // file is seen growing, which is often in the middle of a write (a write of many pages grows
        // the file page by page, and SIGKILL stops it between two).
        std::thread::sleep(Duration::from_millis(30 + rng.next() % 120));
        if rounds % 2 == 1 {
            let grown = |from: u64| std::fs::metadata(&path).map_or(from, |m| m.len()) != from;
            let (from, until) = (std::fs::metadata(&path).map_or(0, |m| m.len()), Instant::now() + Duration::from_millis(200));
            while !grown(from) && Instant::now() < until {}
        }
        child.kill().unwrap();
        child.wait().unwrap();
        let acked = acked.join().unwrap();

        let before = std::fs::read(&path).unwrap_or_default();
        let torn = before.len() - before.iter().rposition(|&b| b == b'\n').map_or(0, |at| at + 1);
        let (ledger, recovery) = Ledger::open(&sidecar).unwrap();
        drop(ledger);
        if torn > 0 {
            torn_rounds += 1;
            let recovery = recovery.unwrap_or_else(|| panic!("round {rounds}: a torn tail of {torn} bytes was not reported"));
            assert_eq!(recovery.moved_bytes, torn as u64, "round {rounds}: {recovery}");
            assert_eq!(std::fs::read(&recovery.to).unwrap(), &before[before.len() - torn..]);
        } else {
            assert!(recovery.is_none(), "round {rounds}: {recovery:?}");
        }
        // The new lines continue the chain, and every acknowledged record is there, as this child's.
        let after = std::fs::read(&path).unwrap();
        assert_eq!(after[..], before[..before.len() - torn], "round {rounds}: only the torn tail was cut");
        for line in std::str::from_utf8(&after[checked..]).unwrap().lines() {
            let record = Record::from_line(line).unwrap();
            assert_eq!((record.seq, &record.prev), (last_seq + 1, &last_hash), "round {rounds}: the chain breaks");
            (last_seq, last_hash) = (record.seq, line_hash(line));
            owner.insert(record.seq, record.agent.unwrap_or_default());
        }
        checked = after.len();
        for seq in &acked {
            assert_eq!(owner.get(seq), Some(&tag), "round {rounds}: acknowledged seq {seq} is not in the ledger as this child's");
        }
        if rounds % 5 == 4 {
            let verification = verified(&sidecar);
            assert!(verification.is_intact(), "round {rounds}: {:?}", verification.problem);
        }
        acked_total += acked.len();
        rounds += 1;
    }
    let verification = verified(&sidecar);
    assert!(verification.is_intact(), "{:?}", verification.problem);
    assert_eq!(verification.records, last_seq);
    assert!(rounds >= 20, "only {rounds} rounds ran");
    // Under Wine a child starts too slowly to append much before each kill: every check above still
    // holds there, only this count of how hard the test pressed does not.
    if cfg!(not(wine)) {
        assert!(acked_total > rounds * 10, "the children acknowledged only {acked_total} appends");
    }
    eprintln!("{rounds} rounds, {acked_total} acknowledged appends, {torn_rounds} torn tails recovered");
}

#[test]
fn processes_appending_at_once_share_one_chain() {
    let (_dir, sidecar) = workspace();
    const PROCESSES: usize = 4;
    const EACH: usize = 120;
    let mut children: Vec<_> =
        (0..PROCESSES).map(|i| spawn_child("append", &sidecar, &[(TAG_ENV, format!("p{i}")), (COUNT_ENV, EACH.to_string())])).collect();
    let readers: Vec<_> = children.iter_mut().map(|c| acks(c.stdout.take().unwrap())).collect();
    // This process appends at the same time.
    let (ledger, _) = Ledger::open(&sidecar).unwrap();
    let mut rng = Rng(21);
    let mut mine: Vec<u64> = (0..EACH).map(|_| ledger.append(sample(&mut rng, "parent", false)).unwrap().seq).collect();
    let mut all = BTreeSet::new();
    for (child, reader) in children.iter_mut().zip(readers) {
        let status = child.wait().unwrap();
        let mut stderr = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
        assert!(status.success(), "a child failed: {stderr}");
        let seqs = reader.join().unwrap();
        assert_eq!(seqs.len(), EACH);
        for seq in seqs {
            assert!(all.insert(seq), "seq {seq} acknowledged twice");
        }
    }
    for seq in mine.drain(..) {
        assert!(all.insert(seq), "seq {seq} acknowledged twice");
    }
    let total = ((PROCESSES + 1) * EACH) as u64;
    assert_eq!(all, (1..=total).collect());
    // One more append from this process continues the chain the others extended.
    assert_eq!(ledger.append(sample(&mut rng, "parent", false)).unwrap().seq, total + 1);
    drop(ledger);
    let verification = verified(&sidecar);
    assert!(verification.is_intact(), "{:?}", verification.problem);
    assert_eq!(verification.records, total + 1);
    let mut per_agent = BTreeMap::<String, usize>::new();
    for (_, agent) in agents_from(&chain_path(&sidecar), 0) {
        *per_agent.entry(agent).or_default() += 1;
    }
    assert_eq!(per_agent.len(), PROCESSES + 1);
    assert!(per_agent.iter().all(|(agent, &count)| count == EACH + usize::from(agent == "parent")), "{per_agent:?}");
}

/// What another process does, when this binary is run as one (see the module comment).
#[test]
fn child() {
    let Ok(what) = std::env::var(CHILD_ENV) else { return };
    let sidecar = Sidecar::new(PathBuf::from(std::env::var(DIR_ENV).unwrap()));
    let tag = std::env::var(TAG_ENV).unwrap();
    match what.as_str() {
        "crash" => crash_child(&sidecar, &tag),
        "append" => append_child(&sidecar, &tag, std::env::var(COUNT_ENV).unwrap().parse().unwrap()),
        other => panic!("unknown child task {other}"),
    }
}

fn ack(seq: u64) {
    // After the acknowledgement, one line per seq, so the parent sees it even if killed right after.
    let mut out = std::io::stdout().lock();
    out.write_all(format!("ACK {seq}\n").as_bytes()).and_then(|()| out.flush()).unwrap();
}

/// Appends as fast as it can, from blocking producers and a pipelined one, with some records large
/// (many pages per batch), until it is killed.
fn crash_child(sidecar: &Sidecar, tag: &str) {
    let (ledger, _) = Ledger::open(sidecar).unwrap();
    let ledger = Arc::new(ledger);
    let seed = sha256_hex(tag.as_bytes()).bytes().fold(1u64, |a, b| a.wrapping_mul(31).wrapping_add(u64::from(b)));
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let (ledger, tag) = (Arc::clone(&ledger), tag.to_owned());
            std::thread::spawn(move || {
                let mut rng = Rng(seed ^ (t + 1));
                let deadline = Instant::now() + Duration::from_secs(30);
                while Instant::now() < deadline {
                    if t == 0 {
                        let tickets: Vec<_> = (0..32).map(|_| ledger.enqueue(sample(&mut rng, &tag, true))).collect();
                        for ticket in tickets {
                            ack(ticket.wait().unwrap().seq);
                        }
                    } else {
                        ack(ledger.append(sample(&mut rng, &tag, true)).unwrap().seq);
                    }
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
}

fn append_child(sidecar: &Sidecar, tag: &str, count: usize) {
    let (ledger, _) = Ledger::open(sidecar).unwrap();
    let ledger = Arc::new(ledger);
    let threads: Vec<_> = (0..2u64)
        .map(|t| {
            let (ledger, tag) = (Arc::clone(&ledger), tag.to_owned());
            std::thread::spawn(move || {
                let mut rng = Rng(t + 1 + tag.len() as u64 * 1000 + u64::from(tag.as_bytes()[1]));
                for _ in 0..count / 2 {
                    ack(ledger.append(sample(&mut rng, &tag, false)).unwrap().seq);
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
}
