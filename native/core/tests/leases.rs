//! Intent leases against a real SQLite file, from threads and from other processes.
//!
//! The tests that need a second process spawn this test binary again, running only the test `child`
//! with `CHOKEPOINT_LEASES_CHILD` saying what to do; without that variable `child` returns at once,
//! so it passes in an ordinary run.
//!
//! Timing: a "held" check always uses a long time to live, and expiry is made certain by renewing to
//! a few milliseconds and sleeping well past them, so a slow machine can only make a test slower.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use chokepoint_core::Sidecar;
use chokepoint_core::base::clock::format_utc;
use chokepoint_core::scope::leases::{AcquireError, Checkout, Holder, LeaseError, Leases, SCHEMA_VERSION};

const LONG: Duration = Duration::from_secs(60);
const CHILD_ENV: &str = "CHOKEPOINT_LEASES_CHILD";
const DB_ENV: &str = "CHOKEPOINT_LEASES_DB";

/// A workspace with its sidecar folder, and the path of its lock database.
fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let sidecar = Sidecar::new(dir.path());
    fs::create_dir(sidecar.dir()).unwrap();
    (dir, sidecar.state_db())
}

fn holder(session: &str) -> Holder {
    Holder::new(session, Some("claude-code"))
}

/// Makes the session's lease on `intent` expire for certain: renewed to 1 ms, then slept past.
fn expire(leases: &Leases, intent: &str, session: &str) {
    leases.renew(intent, session, Duration::from_millis(1)).unwrap();
    thread::sleep(Duration::from_millis(20));
}

#[test]
fn acquire_renew_release() {
    let (_dir, db) = workspace();
    let leases = Leases::open(&db).unwrap();
    assert!(db.is_file());

    let lease = leases.acquire("INT-001", &holder("s-1"), LONG).unwrap();
    assert_eq!((lease.intent.as_str(), lease.session.as_str()), ("INT-001", "s-1"));
    assert_eq!(lease.agent.as_deref(), Some("claude-code"));
    assert_eq!(lease.version, 1);
    assert_eq!(lease.renewed_at_ms, lease.acquired_at_ms);
    assert_eq!(lease.expires_at_ms, lease.acquired_at_ms + 60_000);
    assert_eq!(leases.get("INT-001").unwrap(), Some(lease.clone()));
    assert_eq!(leases.held_by("s-1").unwrap(), Some(lease.clone()));
    assert_eq!(leases.list().unwrap(), vec![lease.clone()]);
    assert_eq!(leases.get("INT-002").unwrap(), None);
    assert_eq!(leases.held_by("s-2").unwrap(), None);

    // Acquiring what one holds renews it: same tenure, same version, same start.
    thread::sleep(Duration::from_millis(5));
    let again = leases.acquire("INT-001", &holder("s-1"), LONG).unwrap();
    assert_eq!((again.version, again.acquired_at_ms), (1, lease.acquired_at_ms));
    assert!(again.renewed_at_ms > lease.renewed_at_ms && again.expires_at_ms > lease.expires_at_ms);

    let renewed = leases.renew("INT-001", "s-1", Duration::from_secs(120)).unwrap();
    assert_eq!((renewed.version, renewed.acquired_at_ms), (1, lease.acquired_at_ms));
    assert_eq!(renewed.expires_at_ms, renewed.renewed_at_ms + 120_000);
    assert_eq!(leases.get("INT-001").unwrap(), Some(renewed));

    assert!(!leases.release("INT-001", "s-2").unwrap(), "only the holder releases");
    assert!(leases.get("INT-001").unwrap().is_some());
    assert!(leases.release("INT-001", "s-1").unwrap());
    assert!(!leases.release("INT-001", "s-1").unwrap(), "a second release is a no-op");
    assert_eq!(leases.get("INT-001").unwrap(), None);
    assert_eq!(leases.held_by("s-1").unwrap(), None);
    assert_eq!(leases.list().unwrap(), vec![]);
    let error = leases.renew("INT-001", "s-1", LONG).unwrap_err();
    assert!(matches!(error, AcquireError::NotHeld { .. }), "{error:?}");
    assert!(error.to_string().contains("select the intent again"), "{error}");

    // The version survives the release (and reopening), so a tenure's version is never reused.
    assert_eq!(leases.acquire("INT-001", &holder("s-2"), LONG).unwrap().version, 2);
    assert_eq!(leases.release_session("s-2").unwrap(), 1);
    drop(leases);
    let leases = Leases::open(&db).unwrap();
    assert_eq!(leases.acquire("INT-001", &holder("s-1"), LONG).unwrap().version, 3);
}

#[test]
fn release_session_frees_what_the_session_holds() {
    let (_dir, db) = workspace();
    let leases = Leases::open(&db).unwrap();
    leases.acquire("INT-001", &holder("s-1"), LONG).unwrap();
    leases.acquire("INT-002", &holder("s-2"), LONG).unwrap();
    assert_eq!(leases.release_session("s-1").unwrap(), 1);
    assert_eq!(leases.release_session("s-1").unwrap(), 0);
    assert_eq!(leases.release_session("nobody").unwrap(), 0);
    let live: Vec<_> = leases.list().unwrap().into_iter().map(|l| (l.intent, l.session)).collect();
    assert_eq!(live, vec![("INT-002".to_owned(), "s-2".to_owned())]);
}

#[test]
fn a_session_holds_one_intent_at_a_time() {
    let (_dir, db) = workspace();
    let leases = Leases::open(&db).unwrap();
    leases.acquire("INT-001", &holder("s-1"), LONG).unwrap();
    let second = leases.acquire("INT-002", &holder("s-1"), LONG).unwrap();
    assert_eq!(leases.get("INT-001").unwrap(), None, "taking INT-002 released INT-001");
    assert_eq!(leases.held_by("s-1").unwrap(), Some(second));
    assert_eq!(leases.list().unwrap().len(), 1);

    // A refused acquisition changes nothing: s-2 keeps INT-001 when INT-002 turns out to be held.
    leases.acquire("INT-001", &holder("s-2"), LONG).unwrap();
    let error = leases.acquire("INT-002", &holder("s-2"), LONG).unwrap_err();
    assert!(matches!(&error, AcquireError::Held(l) if l.session == "s-1"), "{error:?}");
    assert_eq!(leases.held_by("s-2").unwrap().unwrap().intent, "INT-001");
}

#[test]
fn a_second_session_is_told_who_holds_the_intent_and_since_when() {
    let (_dir, db) = workspace();
    let leases = Leases::open(&db).unwrap();
    let first = leases.acquire("INT-001", &holder("s-1"), LONG).unwrap();

    let error = leases.acquire("INT-001", &Holder::new("s-2", Some("codex")), LONG).unwrap_err();
    let AcquireError::Held(held) = &error else { panic!("expected held, got {error:?}") };
    assert_eq!(**held, first, "the error carries the other holder's lease");
    let message = error.to_string();
    let expected = format!(
        "intent `INT-001` is locked by session `s-1` (agent `claude-code`) since {}; select another intent or \
         wait until it is released (the lease expires at {} unless renewed)",
        format_utc(first.acquired_at_ms),
        format_utc(first.expires_at_ms)
    );
    assert_eq!(message, expected);

    // Without an agent the message just names the session.
    leases.acquire("INT-009", &Holder::new("s-3", None), LONG).unwrap();
    let message = leases.acquire("INT-009", &holder("s-2"), LONG).unwrap_err().to_string();
    assert!(message.starts_with("intent `INT-009` is locked by session `s-3` since "), "{message}");

    // Renewing what another live session holds is the same answer.
    let error = leases.renew("INT-001", "s-2", LONG).unwrap_err();
    assert!(matches!(&error, AcquireError::Held(l) if l.session == "s-1"), "{error:?}");
}

#[test]
fn an_expired_lease_is_taken_over_and_its_old_holder_is_told_it_was_lost() {
    let (_dir, db) = workspace();
    let leases = Leases::open(&db).unwrap();
    let first = leases.acquire("INT-001", &holder("s-1"), LONG).unwrap();
    expire(&leases, "INT-001", "s-1");
    assert_eq!(leases.get("INT-001").unwrap(), None, "an expired lease has no live holder");
    assert_eq!(leases.held_by("s-1").unwrap(), None);
    assert_eq!(leases.list().unwrap(), vec![]);

    let taken = leases.acquire("INT-001", &Holder::new("s-2", Some("codex")), LONG).unwrap();
    assert_eq!(taken.version, first.version + 1, "a takeover is a new tenure");
    assert!(taken.acquired_at_ms >= first.acquired_at_ms);

    // The old holder's renewal fails, saying it was lost and to whom.
    let error = leases.renew("INT-001", "s-1", LONG).unwrap_err();
    let AcquireError::Lost { session, by } = &error else { panic!("expected lost, got {error:?}") };
    assert_eq!((session.as_str(), &**by), ("s-1", &taken));
    let message = error.to_string();
    assert!(message.starts_with("session `s-1` lost its lock on intent `INT-001`"), "{message}");
    assert!(message.contains("session `s-2` (agent `codex`) took the intent over at"), "{message}");
    assert!(message.contains(&format_utc(taken.acquired_at_ms)), "{message}");
    assert!(message.contains("stop writing under `INT-001`"), "{message}");

    // Nor can the old holder release, or take back, what is now someone else's.
    assert!(!leases.release("INT-001", "s-1").unwrap());
    assert_eq!(leases.release_session("s-1").unwrap(), 0);
    assert!(matches!(leases.acquire("INT-001", &holder("s-1"), LONG), Err(AcquireError::Held(_))));
    assert_eq!(leases.get("INT-001").unwrap(), Some(taken));
}

#[test]
fn an_expired_lease_nobody_took_is_still_its_holders() {
    let (_dir, db) = workspace();
    let leases = Leases::open(&db).unwrap();
    let first = leases.acquire("INT-001", &holder("s-1"), LONG).unwrap();
    expire(&leases, "INT-001", "s-1");
    let renewed = leases.renew("INT-001", "s-1", LONG).unwrap();
    assert_eq!((renewed.version, renewed.acquired_at_ms), (first.version, first.acquired_at_ms));
    assert_eq!(leases.get("INT-001").unwrap(), Some(renewed));
}

/// The compare-and-swap under contention: many connections race to take over one expired lease.
/// Exactly one wins (with the next version); every other one is told the winner holds it.
#[test]
fn racing_takeovers_have_exactly_one_winner() {
    let (_dir, db) = workspace();
    let leases = Leases::open(&db).unwrap();
    leases.acquire("INT-001", &holder("s-old"), LONG).unwrap();
    expire(&leases, "INT-001", "s-old");

    let racers = 8;
    let barrier = Arc::new(Barrier::new(racers));
    let outcomes: Vec<_> = (0..racers)
        .map(|i| {
            let (db, barrier) = (db.clone(), barrier.clone());
            thread::spawn(move || {
                let leases = Leases::open(&db).unwrap();
                barrier.wait();
                leases.acquire("INT-001", &holder(&format!("s-{i}")), LONG)
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();

    let winners: Vec<_> = outcomes.iter().filter_map(|o| o.as_ref().ok()).collect();
    assert_eq!(winners.len(), 1, "{outcomes:?}");
    let winner = winners[0];
    assert_eq!(winner.version, 2);
    for outcome in &outcomes {
        match outcome {
            Ok(_) => {}
            Err(AcquireError::Held(lease)) => assert_eq!(&**lease, winner),
            Err(other) => panic!("a loser must see the lock held, not {other:?}"),
        }
    }
    assert_eq!(leases.get("INT-001").unwrap().as_ref(), Some(winner));
}

#[test]
fn one_leases_is_shared_by_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Leases>();

    let (_dir, db) = workspace();
    let leases = Arc::new(Leases::open(&db).unwrap());
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let leases = leases.clone();
            thread::spawn(move || {
                for n in 0..25 {
                    let (intent, session) = (format!("INT-{i}-{n}"), format!("s-{i}"));
                    leases.acquire(&intent, &holder(&session), LONG).unwrap();
                    assert_eq!(leases.held_by(&session).unwrap().unwrap().intent, intent);
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    assert_eq!(leases.list().unwrap().len(), 4, "each session kept only its last intent");
}

#[test]
fn misuse_is_refused() {
    let (_dir, db) = workspace();
    let leases = Leases::open(&db).unwrap();
    let store = |r: Result<_, AcquireError>| match r {
        Err(AcquireError::Store(LeaseError::Invalid(why))) => why,
        other => panic!("expected invalid, got {other:?}"),
    };
    assert_eq!(store(leases.acquire("", &holder("s-1"), LONG)), "the intent id is empty");
    assert_eq!(store(leases.acquire("INT-001", &holder(""), LONG)), "the session id is empty");
    assert_eq!(
        store(leases.acquire("INT-001", &holder("s-1"), Duration::from_micros(999))),
        "the lease time to live is under a millisecond"
    );
    // A time to live too long to store means "until released", not an error.
    let forever = leases.acquire("INT-001", &holder("s-1"), Duration::MAX).unwrap();
    assert_eq!(forever.expires_at_ms, i64::MAX as u64);
    assert_eq!(leases.get("INT-001").unwrap(), Some(forever));
}

#[test]
fn a_newer_schema_is_refused() {
    let (_dir, db) = workspace();
    drop(Leases::open(&db).unwrap());
    let conn = rusqlite::Connection::open(&db).unwrap();
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
    conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1).unwrap();
    drop(conn);

    let error = Leases::open(&db).unwrap_err();
    assert!(matches!(error, LeaseError::NewerSchema { found, .. } if found == SCHEMA_VERSION + 1), "{error:?}");
    let message = error.to_string();
    assert!(message.contains(&format!("newer than the {SCHEMA_VERSION} this chokepoint understands")), "{message}");
}

/// A lock database of schema 1 (before leases said where their holder works) is migrated in place:
/// its live lease is kept (saying nowhere), and a lease taken now records the holder's worktree and
/// branch, which a refusal names.
#[test]
fn a_schema_1_database_is_migrated_and_a_refusal_names_the_holders_worktree() {
    let (_dir, db) = workspace();
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "CREATE TABLE leases (intent TEXT PRIMARY KEY NOT NULL, holder TEXT, agent TEXT, version INTEGER NOT NULL,
             acquired_at INTEGER NOT NULL, renewed_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, taken_from TEXT) STRICT;
         INSERT INTO leases VALUES ('INT-OLD', 's-old', NULL, 4, 1, 1, 9223372036854775807, NULL);
         PRAGMA user_version = 1;",
    )
    .unwrap();
    drop(conn);

    let leases = Leases::open(&db).unwrap();
    let old = leases.get("INT-OLD").unwrap().expect("the old lease is kept");
    assert_eq!((old.session.as_str(), old.version, old.checkout), ("s-old", 4, None));

    let checkout = Checkout { worktree: "wt2".into(), root: "/src/wt2".into(), branch: Some("feature-x".into()) };
    let taken = leases.acquire("INT-001", &holder("s-1").at(Some(checkout.clone())), LONG).unwrap();
    assert_eq!(taken.checkout.as_ref(), Some(&checkout));
    assert_eq!(leases.get("INT-001").unwrap().unwrap().checkout, Some(checkout));
    let refusal = leases.acquire("INT-001", &holder("s-2"), LONG).unwrap_err().to_string();
    assert!(refusal.contains("session `s-1` (agent `claude-code`) in worktree `wt2` on branch `feature-x`"), "{refusal}");
    let version: i64 = rusqlite::Connection::open(&db).unwrap().query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(version, SCHEMA_VERSION);
}

/// A lock database of schema 2 (before leases said their machine) is migrated in place to 3: its
/// lease is kept, saying no machine, and a lease taken now says the holder's, which a refusal names.
#[test]
fn a_schema_2_database_is_migrated_and_a_refusal_names_the_holders_machine() {
    let (_dir, db) = workspace();
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "CREATE TABLE leases (intent TEXT PRIMARY KEY NOT NULL, holder TEXT, agent TEXT, version INTEGER NOT NULL,
             acquired_at INTEGER NOT NULL, renewed_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, taken_from TEXT,
             worktree TEXT, worktree_root TEXT, branch TEXT) STRICT;
         INSERT INTO leases VALUES ('INT-OLD', 's-old', NULL, 4, 1, 1, 9223372036854775807, NULL, 'wt', '/src/wt', 'main');
         PRAGMA user_version = 2;",
    )
    .unwrap();
    drop(conn);

    let leases = Leases::open(&db).unwrap();
    let old = leases.get("INT-OLD").unwrap().expect("the old lease is kept");
    assert_eq!((old.session.as_str(), old.version, old.machine), ("s-old", 4, None));
    let checkout = Checkout { worktree: "wt2".into(), root: "/src/wt2".into(), branch: Some("main".into()) };
    leases.acquire("INT-001", &holder("s-1").at(Some(checkout)).on(Some("alpha".into())), LONG).unwrap();
    assert_eq!(leases.get("INT-001").unwrap().unwrap().machine.as_deref(), Some("alpha"));
    let refusal = leases.acquire("INT-001", &holder("s-2"), LONG).unwrap_err().to_string();
    assert!(refusal.contains("(agent `claude-code`) on machine `alpha` in worktree `wt2` on branch `main`"), "{refusal}");
    let version: i64 = rusqlite::Connection::open(&db).unwrap().query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(version, 3);
}

#[test]
fn a_missing_folder_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let error = Leases::open(&dir.path().join("nowhere/state.db")).unwrap_err();
    assert!(matches!(error, LeaseError::Sqlite { op: "open", .. }), "{error:?}");
}

// ---- other processes --------------------------------------------------------------------------

/// Runs `child` in a new process of this test binary, with `what` to do and `env` to do it with.
fn spawn_child(what: &str, db: &Path, env: &[(&str, String)]) -> std::process::Child {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command.args(["--exact", "child", "--nocapture", "--test-threads=1"]);
    command.env(CHILD_ENV, what).env(DB_ENV, db);
    for (key, value) in env {
        command.env(key, value);
    }
    command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    command.spawn().unwrap()
}

fn check(output: &Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "child failed ({}):\n{stdout}\n{}", output.status, String::from_utf8_lossy(&output.stderr));
    stdout
}

/// What another process does, when this binary is run as one (see the module comment).
#[test]
fn child() {
    let Ok(what) = std::env::var(CHILD_ENV) else { return };
    let db = PathBuf::from(std::env::var(DB_ENV).unwrap());
    match what.as_str() {
        "probe" => probe(&db),
        "counter" => counter(&db),
        other => panic!("unknown child task {other}"),
    }
}

/// Tries the intent the parent holds, reports what it sees, then takes another one and exits
/// without releasing it.
#[allow(clippy::print_stdout)] // a child reports to its parent on stdout
fn probe(db: &Path) {
    let leases = Leases::open(db).unwrap();
    match leases.acquire("INT-001", &Holder::new("s-child", Some("codex")), LONG) {
        Err(AcquireError::Held(lease)) => println!("PROBE held-by={} since={}", lease.session, lease.acquired_at_ms),
        other => panic!("the parent's lease should be held, got {other:?}"),
    }
    let mine = leases.acquire("INT-002", &Holder::new("s-child", Some("codex")), LONG).unwrap();
    println!("PROBE took={} version={}", mine.intent, mine.version);
}

#[test]
fn another_process_sees_the_lock_held() {
    let (_dir, db) = workspace();
    let leases = Leases::open(&db).unwrap();
    let mine = leases.acquire("INT-001", &holder("s-parent"), LONG).unwrap();

    let stdout = check(&spawn_child("probe", &db, &[]).wait_with_output().unwrap());
    let expected = format!("PROBE held-by=s-parent since={}", mine.acquired_at_ms);
    assert!(stdout.lines().any(|l| l.ends_with(&expected)), "{stdout}");
    assert!(stdout.lines().any(|l| l.ends_with("PROBE took=INT-002 version=1")), "{stdout}");

    // The child's lease outlives the child (until it expires): a dead process does not free it.
    let theirs = leases.get("INT-002").unwrap().expect("the child's lease is still live");
    assert_eq!((theirs.session.as_str(), theirs.agent.as_deref()), ("s-child", Some("codex")));
    assert!(matches!(leases.acquire("INT-002", &holder("s-parent"), LONG), Err(AcquireError::Held(_))));
}

const COUNTER_ENV: &str = "CHOKEPOINT_LEASES_COUNTER";
const SESSION_ENV: &str = "CHOKEPOINT_LEASES_SESSION";
const ROUNDS_ENV: &str = "CHOKEPOINT_LEASES_ROUNDS";

/// `rounds` times: take INT-001 (retrying while another process holds it), increment a counter file
/// in a deliberately racy way (read, sleep, write), release. A second process inside at the same time
/// would lose an increment, and is caught at once by the `inside` marker file.
#[allow(clippy::print_stdout)] // a child reports to its parent on stdout
fn counter(db: &Path) {
    let counter = PathBuf::from(std::env::var(COUNTER_ENV).unwrap());
    let inside = counter.with_extension("inside");
    let session = std::env::var(SESSION_ENV).unwrap();
    let rounds: u32 = std::env::var(ROUNDS_ENV).unwrap().parse().unwrap();
    let leases = Leases::open(db).unwrap();
    let me = Holder::new(session.as_str(), Some("counter"));
    let mut waits = 0u32;
    for _ in 0..rounds {
        loop {
            match leases.acquire("INT-001", &me, LONG) {
                Ok(_) => break,
                Err(AcquireError::Held(_)) => {
                    waits += 1;
                    thread::sleep(Duration::from_micros(200 + u64::from(waits % 7) * 100));
                }
                Err(other) => panic!("{session}: acquire failed with something other than held: {other:?}"),
            }
        }
        if let Err(e) = fs::OpenOptions::new().write(true).create_new(true).open(&inside) {
            panic!("{session}: another process is inside the critical section ({e})");
        }
        let value: u64 = fs::read_to_string(&counter).unwrap().trim().parse().unwrap();
        thread::sleep(Duration::from_micros(300));
        fs::write(&counter, (value + 1).to_string()).unwrap();
        fs::remove_file(&inside).unwrap();
        assert!(leases.release("INT-001", &session).unwrap(), "{session}: the lease was not ours to release");
    }
    println!("COUNTER {session} rounds={rounds} waits={waits}");
}

#[test]
fn four_processes_exclude_each_other() {
    let (dir, db) = workspace();
    let counter = dir.path().join("counter");
    fs::write(&counter, "0").unwrap();
    let (processes, rounds) = (4, 100);
    let started = Instant::now();
    // The database does not exist yet: the children also race to create it.
    let children: Vec<_> = (0..processes)
        .map(|i| {
            let env = [(COUNTER_ENV, counter.display().to_string()), (SESSION_ENV, format!("s-{i}")), (ROUNDS_ENV, rounds.to_string())];
            spawn_child("counter", &db, &env)
        })
        .collect();
    // A child that fails leaves its lease behind, and the others would wait out its 60 s: stop them.
    let mut running = children;
    let mut finished = Vec::new();
    while !running.is_empty() {
        let mut index = 0;
        while index < running.len() {
            match running[index].try_wait().unwrap() {
                Some(status) if !status.success() => {
                    for other in &mut running {
                        let _ = other.kill();
                    }
                    check(&running.swap_remove(index).wait_with_output().unwrap());
                }
                Some(_) => finished.push(running.swap_remove(index)),
                None => index += 1,
            }
        }
        if started.elapsed() > Duration::from_secs(60) {
            running.iter_mut().for_each(|child| drop(child.kill()));
            panic!("the children did not finish in 60 s");
        }
        thread::sleep(Duration::from_millis(10));
    }
    let mut sessions = HashSet::new();
    for child in finished {
        let stdout = check(&child.wait_with_output().unwrap());
        // libtest prints "test child ... " before the child's own line.
        let (_, line) = stdout.split_once("COUNTER ").unwrap_or_else(|| panic!("{stdout}"));
        sessions.insert(line.split(' ').next().unwrap().to_owned());
    }
    assert_eq!(sessions.len(), processes);
    let total: u64 = fs::read_to_string(&counter).unwrap().parse().unwrap();
    assert_eq!(total, processes as u64 * rounds, "increments were lost: two processes held the lock at once");
    let leases = Leases::open(&db).unwrap();
    assert_eq!(leases.list().unwrap(), vec![], "every round released its lease");
    // 4 × 100 takeovers of one intent: a new tenure each time.
    assert_eq!(leases.acquire("INT-001", &holder("s-last"), LONG).unwrap().version, processes as u64 * rounds + 1);
    assert!(started.elapsed() < Duration::from_secs(30), "took {:?}", started.elapsed());
}

/// Issue 30: the end of a turn yields the session's lease: free to take at once, its holder's until
/// taken (renewed as the same tenure), and lost when taken (the taker's lease named).
#[test]
fn a_yielded_lease_is_free_to_take_and_its_holders_until_taken() {
    use chokepoint_core::scope::leases::Tenure;
    let (_dir, db) = workspace();
    let leases = Leases::open(&db).unwrap();
    let first = leases.acquire("INT-001", &holder("s-1"), LONG).unwrap();
    assert_eq!(leases.yield_session("s-1").unwrap(), 1);
    assert_eq!(leases.yield_session("s-1").unwrap(), 0, "a yielded lease yields nothing more");
    assert_eq!(leases.get("INT-001").unwrap(), None, "free to take");
    assert_eq!(leases.held_by("s-1").unwrap(), None);
    let Tenure::Idle(idle) = leases.tenure("s-1").unwrap().0 else { panic!("still s-1's") };
    assert_eq!((idle.version, idle.acquired_at_ms), (first.version, first.acquired_at_ms));
    assert_eq!(leases.idle().unwrap(), vec![idle]);

    // Nobody took it: the holder's renewal goes on with the same tenure.
    let renewed = leases.renew("INT-001", "s-1", LONG).unwrap();
    assert_eq!(renewed.version, first.version);
    assert!(matches!(leases.tenure("s-1").unwrap().0, Tenure::Live(_)));
    assert_eq!(leases.idle().unwrap(), vec![]);

    // Yielded again and taken: a new tenure, and the yielder lost it.
    leases.yield_session("s-1").unwrap();
    let taken = leases.acquire("INT-001", &holder("s-2"), LONG).unwrap();
    assert_eq!(taken.version, first.version + 1);
    assert_eq!(leases.tenure("s-1").unwrap().0, Tenure::Lost(taken.clone()));
    assert!(matches!(leases.renew("INT-001", "s-1", LONG), Err(AcquireError::Lost { .. })));
    assert_eq!(leases.tenure("s-2").unwrap().0, Tenure::Live(taken));
    assert_eq!(leases.tenure("s-3").unwrap().0, Tenure::None);
}
