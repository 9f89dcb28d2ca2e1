//! The ledger's copy in a team's PostgreSQL database (`ledger::team_copy`), against a real server:
//! it catches up from the chains after the database was down, copies nothing twice, stops at what
//! is durable, and a live engine's copier is woken by the ledger rather than waiting for its period.

#[path = "support/postgres.rs"]
mod postgres;

use std::sync::Arc;
use std::time::{Duration, Instant};

use chokepoint_core::Sidecar;
use chokepoint_core::base::team::{Settings, TeamDb, Unreachable};
use chokepoint_core::ledger::record::sha256_hex;
use chokepoint_core::ledger::team_copy::{Copier, CopyError, PERIOD, TeamCopy};
use chokepoint_core::ledger::team_query::{TeamFilter, query};
use chokepoint_core::ledger::writer::Ledger;
use chokepoint_core::ledger::{Record, RecordKind};
use postgres::Server;

const NAMESPACE: &str = "example.com/acme/web";

fn team(server: &Server, machine: &str) -> Arc<TeamDb> {
    let settings = Settings {
        url: server.url(),
        namespace: NAMESPACE.to_owned(),
        machine: machine.to_owned(),
        unreachable: Unreachable::Deny,
        source: "test",
    };
    let password = server.password().to_owned();
    Arc::new(TeamDb::new(settings, &|k| (k == "PGPASSWORD").then(|| password.clone())).unwrap())
}

fn workspace() -> (tempfile::TempDir, Sidecar) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".orchestration")).unwrap();
    let sidecar = Sidecar::new(dir.path());
    (dir, sidecar)
}

fn append(ledger: &Ledger, n: usize, tool: &str) {
    for i in 0..n {
        let mut record = Record::new(RecordKind::ToolCall);
        record.event = Some("PreToolUse".into());
        record.session = Some(format!("s{}", i % 3));
        record.tool = Some(tool.into());
        let _ = ledger.enqueue(record); // flushed below
    }
    ledger.flush().unwrap();
}

/// Every record line of the worktree, with its chain, seq and hash.
fn local(sidecar: &Sidecar) -> Vec<(String, i64, String)> {
    let mut all = Vec::new();
    for chain in chokepoint_core::ledger::chains::list(sidecar).unwrap() {
        for line in std::fs::read_to_string(&chain.path).unwrap().lines() {
            let record = Record::from_line(line).unwrap();
            all.push((chain.chain.clone(), record.seq as i64, sha256_hex(line.as_bytes())));
        }
    }
    all.sort();
    all
}

/// The database's rows, as `local` lists them.
fn copied(server: &Server) -> Vec<(String, i64, String)> {
    let text = server.psql("select chain || ' ' || seq || ' ' || record_hash from chokepoint.ledger_records order by chain, seq");
    let mut rows: Vec<(String, i64, String)> = text
        .lines()
        .map(|l| {
            let mut parts = l.split(' ');
            (parts.next().unwrap().to_owned(), parts.next().unwrap().parse().unwrap(), parts.next().unwrap().to_owned())
        })
        .collect();
    rows.sort();
    rows
}

#[test]
#[cfg_attr(windows, ignore = "starts a PostgreSQL server from Debian's Unix binaries, which a Windows test cannot run")]
fn the_copy_catches_up_after_the_database_was_down_and_copies_nothing_twice() {
    let server = Server::start();
    let (_dir, sidecar) = workspace();
    let (ledger, _) = Ledger::open(&sidecar).unwrap();
    let copy = TeamCopy::new(team(&server, "laptop"), sidecar.clone());

    append(&ledger, 3, "Read");
    assert_eq!(copy.copy_pending().unwrap().inserted, 3);
    assert_eq!(copy.copy_pending().unwrap().inserted, 0, "a second copy inserts nothing");
    assert_eq!(copied(&server), local(&sidecar));

    // More than one batch, through the cursor.
    append(&ledger, 1_203, "Edit");
    let done = copy.copy_pending().unwrap();
    assert_eq!((done.inserted, done.waiting), (1_203, 0));
    assert_eq!(copied(&server), local(&sidecar), "every record once, its hash the local line's");

    // The database goes away; records keep being written here, and wait.
    server.kill();
    append(&ledger, 5, "Write");
    let failed = copy.copy_pending().expect_err("the database is down");
    assert!(matches!(&failed, CopyError::Team(e) if e.is_unreachable()), "{failed}");
    let status = copy.status();
    assert_eq!(status.waiting, 5, "{status:?}");
    assert!(status.last_error.is_some());

    // Back: the next copy catches up, and a copier that never saw the earlier ones (another process:
    // no cursor) finds nothing left.
    server.restart();
    assert_eq!(copy.copy_pending().unwrap().inserted, 5);
    assert_eq!(copy.status().last_error, None);
    let other = TeamCopy::new(team(&server, "laptop"), sidecar.clone());
    assert_eq!(other.copy_pending().unwrap().inserted, 0);
    assert_eq!(copied(&server), local(&sidecar));
    assert_eq!(server.psql("select count(*) from chokepoint.ledger_records"), "1211");
    assert_eq!(server.psql("select count(distinct (machine, worktree)) from chokepoint.ledger_records where machine = 'laptop'"), "1");

    // Read back, newest last, with the filters.
    let db = team(&server, "laptop");
    let last = query(&db, &TeamFilter { limit: Some(2), ..TeamFilter::default() }).unwrap();
    assert_eq!(
        last.iter().map(|r| (r.record.seq, r.record.tool.clone().unwrap())).collect::<Vec<_>>(),
        [(1_210, "Write".to_owned()), (1_211, "Write".to_owned())]
    );
    assert_eq!(last[1].machine, "laptop");
    let s0 = query(&db, &TeamFilter { session: Some("s0".into()), ..TeamFilter::default() }).unwrap();
    assert!(!s0.is_empty() && s0.iter().all(|r| r.record.session.as_deref() == Some("s0")));
}

#[test]
#[cfg_attr(windows, ignore = "starts a PostgreSQL server from Debian's Unix binaries, which a Windows test cannot run")]
fn only_what_is_durable_is_copied_and_a_rewritten_chain_is_not_mixed_in() {
    let server = Server::start();
    let (_dir, sidecar) = workspace();
    let (ledger, _) = Ledger::open(&sidecar).unwrap();
    let copy = TeamCopy::new(team(&server, "laptop"), sidecar.clone());
    append(&ledger, 2, "Read");
    drop(ledger);
    let chain = chokepoint_core::ledger::chains::list(&sidecar).unwrap().pop().unwrap();
    // A line past the chain's head: written, never acknowledged (the head is raised after the sync).
    let text = std::fs::read_to_string(&chain.path).unwrap();
    let last = text.lines().last().unwrap();
    let mut next = Record::from_line(last).unwrap();
    next.seq = 3;
    next.prev = sha256_hex(last.as_bytes());
    std::fs::write(&chain.path, format!("{text}{}\n", next.to_line())).unwrap();
    assert_eq!(copy.copy_pending().unwrap().inserted, 2, "the line past the head waits");
    assert_eq!(server.psql("select max(seq) from chokepoint.ledger_records"), "2");

    // The copied chain is rewritten here (its second record edited), then extended: the copy stops
    // at the record that no longer follows, and says so.
    let (ledger, _) = Ledger::open(&sidecar).unwrap();
    append(&ledger, 1, "Read");
    drop(ledger);
    let rewritten = std::fs::read_to_string(&chain.path).unwrap().replacen("\"tool\":\"Read\"", "\"tool\":\"Grep\"", 2);
    std::fs::write(&chain.path, rewritten).unwrap();
    let fresh = TeamCopy::new(team(&server, "laptop"), sidecar.clone());
    let error = fresh.copy_pending().expect_err("a rewritten chain is not copied further");
    assert!(matches!(error, CopyError::Diverged { seq: 2, .. }), "{error}");
    assert_eq!(server.psql("select max(seq) from chokepoint.ledger_records"), "2");
}

#[test]
#[cfg_attr(windows, ignore = "starts a PostgreSQL server from Debian's Unix binaries, which a Windows test cannot run")]
fn a_live_engines_copier_is_woken_by_each_durable_batch() {
    let server = Server::start();
    let (_dir, sidecar) = workspace();
    let (ledger, _) = Ledger::open(&sidecar).unwrap();
    let copy = Arc::new(TeamCopy::new(team(&server, "devbox"), sidecar.clone()));
    let copier = Copier::start(Some(copy)).unwrap();
    // The first round (at once) finds nothing; then it sleeps for its period unless woken.
    std::thread::sleep(Duration::from_millis(300));
    ledger.on_durable(copier.waker());
    let began = Instant::now();
    append(&ledger, 4, "Read");
    // (The table is made by the first copy that has something to copy.)
    while server.try_psql("select count(*) from chokepoint.ledger_records").as_deref() != Ok("4") {
        // Well before its period ends: woken, not on its timer.
        assert!(began.elapsed() < PERIOD / 3, "the copier was not woken by the batch");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The database goes away and comes back: the copier retries on its own.
    server.kill();
    append(&ledger, 2, "Read");
    std::thread::sleep(Duration::from_millis(500));
    server.restart();
    let began = Instant::now();
    while server.try_psql("select count(*) from chokepoint.ledger_records").as_deref() != Ok("6") {
        assert!(began.elapsed() < PERIOD * 3, "the copier caught up after the database came back");
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(copier);
    assert_eq!(copied(&server), local(&sidecar));
}

/// What a one-call process would pay to copy its record before exiting: a new connection (with
/// scram authentication), the migration check, how far the copy is, one insert. Printed, for the
/// decision in `team_copy`'s module doc; `cargo test --release -- --ignored --nocapture`.
#[test]
#[ignore]
#[allow(clippy::print_stdout)] // the measurement is what this ignored test is for
fn measure_a_copy_from_a_fresh_process() {
    let server = Server::start();
    let (_dir, sidecar) = workspace();
    let (ledger, _) = Ledger::open(&sidecar).unwrap();
    append(&ledger, 1, "Read");
    TeamCopy::new(team(&server, "laptop"), sidecar.clone()).copy_pending().unwrap();
    let mut took = Vec::new();
    for _ in 0..30 {
        append(&ledger, 1, "Read");
        let began = Instant::now();
        let copy = TeamCopy::new(team(&server, "laptop"), sidecar.clone());
        assert_eq!(copy.copy_pending().unwrap().inserted, 1);
        took.push(began.elapsed());
    }
    took.sort();
    println!("one record copied by a fresh handle: p50 {:?}, p90 {:?}", took[15], took[27]);
}

#[test]
#[cfg_attr(windows, ignore = "starts a PostgreSQL server from Debian's Unix binaries, which a Windows test cannot run")]
fn two_copiers_at_once_insert_each_record_once() {
    let server = Server::start();
    let (_dir, sidecar) = workspace();
    let (ledger, _) = Ledger::open(&sidecar).unwrap();
    append(&ledger, 2_000, "Read");
    // Both ask how far the copy is before either inserts: they insert the same records.
    let copiers: Vec<_> = (0..2).map(|_| TeamCopy::new(team(&server, "laptop"), sidecar.clone())).collect();
    copiers[0].db().migrate("warm", &[]).unwrap();
    copiers[1].db().migrate("warm", &[]).unwrap();
    let done: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = copiers.iter().map(|c| s.spawn(|| c.copy_pending())).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let inserted: u64 = done.into_iter().map(|d| d.expect("both copies succeed").inserted).sum();
    assert_eq!(inserted, 2_000);
    assert_eq!(copied(&server), local(&sidecar));
}
