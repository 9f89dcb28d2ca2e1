//! One audit trail for a team: two "machines" (two clones of one origin repository, each with its own
//! `.orchestration` state and `CHOKEPOINT_MACHINE`) record hook calls through the shipped `chokepoint`
//! program, and `trace show --team` on either lists both machines' records from one real PostgreSQL
//! database, with machine and worktree. The database killed mid-run loses nothing: the local ledger
//! keeps every record and the copy catches up, once each, when it returns.

#[path = "../../core/tests/support/postgres.rs"]
mod postgres;

mod common;

use common::{git, stderr, stdout};
use postgres::Server;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// An origin repository with the sidecar committed, and two clones of it.
struct Team {
    _dir: tempfile::TempDir,
    laptop: PathBuf,
    ci: PathBuf,
}

fn team() -> Team {
    let dir = tempfile::tempdir().unwrap();
    let origin = dir.path().join("origin");
    common::governed_repo(&origin, "version: 1\n", None);
    for clone in ["laptop-web", "ci-web"] {
        git(dir.path(), &["clone", "-q", origin.to_str().unwrap(), clone]);
    }
    Team { laptop: dir.path().join("laptop-web"), ci: dir.path().join("ci-web"), _dir: dir }
}

/// `chokepoint ARGS --workspace WS` on `machine`, pointed at `server`.
fn on(machine: &str, server: &Server, ws: &Path, args: &[&str]) -> Output {
    Command::new(common::program())
        .args(args)
        .args(["--workspace", ws.to_str().unwrap()])
        .envs(server.env())
        .env("CHOKEPOINT_MACHINE", machine)
        .env_remove("CHOKEPOINT_HOOK_DEPTH")
        .output()
        .unwrap()
}

/// One Claude Code `PreToolUse` of a Read, answered by `chokepoint hook` on `machine`.
fn read_call(machine: &str, server: &Server, ws: &Path, session: &str) {
    let input = json!({
        "session_id": session,
        "cwd": ws,
        "hook_event_name": "PreToolUse",
        "tool_name": "Read",
        "tool_input": { "file_path": ws.join("src/lib.ts") },
        "tool_use_id": "t1",
    });
    let mut child = common::as_agent()
        .args(["hook", "--agent", "claude", "--local", "--workspace", ws.to_str().unwrap()])
        .envs(server.env())
        .env("CHOKEPOINT_MACHINE", machine)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

fn team_records(machine: &str, server: &Server, ws: &Path) -> Vec<Value> {
    let out = on(machine, server, ws, &["trace", "show", "--team", "--json", "--limit", "1000"]);
    assert!(out.status.success(), "trace show --team: {}", stderr(&out));
    stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// Every record line of a worktree's ledger, as (chain, seq, hash).
fn local(ws: &Path) -> BTreeSet<(String, i64, String)> {
    let sidecar = chokepoint_core::Sidecar::new(ws);
    let mut all = BTreeSet::new();
    for chain in chokepoint_core::ledger::chains::list(&sidecar).unwrap() {
        for line in fs::read_to_string(&chain.path).unwrap().lines() {
            let seq = serde_json::from_str::<Value>(line).unwrap()["seq"].as_i64().unwrap();
            all.insert((chain.chain.clone(), seq, chokepoint_core::ledger::record::sha256_hex(line.as_bytes())));
        }
    }
    all
}

/// The rows of `machine` in the database, as `local` lists them; panics on a duplicate.
fn copied(server: &Server, machine: &str) -> BTreeSet<(String, i64, String)> {
    let text = server
        .psql(&format!("select chain || ' ' || seq || ' ' || record_hash from chokepoint.ledger_records where machine = '{machine}'"));
    let rows: Vec<(String, i64, String)> = text
        .lines()
        .map(|l| {
            let parts: Vec<&str> = l.split(' ').collect();
            (parts[0].to_owned(), parts[1].parse().unwrap(), parts[2].to_owned())
        })
        .collect();
    let set: BTreeSet<_> = rows.iter().cloned().collect();
    assert_eq!(set.len(), rows.len(), "no record is copied twice");
    set
}

#[test]
#[cfg_attr(windows, ignore = "starts a PostgreSQL server from Debian's Unix binaries, which a Windows test cannot run")]
fn trace_show_team_lists_both_machines_records_with_machine_and_worktree() {
    let server = Server::start();
    let team = team();
    for session in ["a1", "a2", "a3"] {
        read_call("laptop", &server, &team.laptop, session);
    }
    for session in ["b1", "b2"] {
        read_call("ci-runner", &server, &team.ci, session);
    }
    // Hook processes do not copy: each machine's `trace show --team` copies its own pending records.
    let from_ci = team_records("ci-runner", &server, &team.ci);
    assert!(from_ci.iter().all(|r| r["machine"] == "ci-runner"), "{from_ci:?}");
    let from_laptop = team_records("laptop", &server, &team.laptop);
    let from_ci = team_records("ci-runner", &server, &team.ci);
    assert_eq!(from_laptop, from_ci, "both machines list the same trail");
    let calls: BTreeSet<(String, String, String)> = from_laptop
        .iter()
        .filter(|r| r["record"]["event"] == "PreToolUse")
        .map(|r| {
            (
                r["machine"].as_str().unwrap().to_owned(),
                r["worktree"].as_str().unwrap().to_owned(),
                r["record"]["session"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected: BTreeSet<(String, String, String)> = [
        ("laptop", "laptop-web", "a1"),
        ("laptop", "laptop-web", "a2"),
        ("laptop", "laptop-web", "a3"),
        ("ci-runner", "ci-web", "b1"),
        ("ci-runner", "ci-web", "b2"),
    ]
    .into_iter()
    .map(|(m, w, s)| (m.to_owned(), w.to_owned(), format!("claude:{s}")))
    .collect();
    assert_eq!(calls, expected);
    assert!(from_laptop.iter().all(|r| r["branch"] == "main"), "{from_laptop:?}");
    // Newest last.
    let times: Vec<&str> = from_laptop.iter().map(|r| r["record"]["time"].as_str().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    assert_eq!(copied(&server, "laptop"), local(&team.laptop));
    assert_eq!(copied(&server, "ci-runner"), local(&team.ci));

    // The text listing names the machine and the worktree; the filters apply.
    let out = on("laptop", &server, &team.laptop, &["trace", "show", "--team", "--session", "claude:b2"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("ci-runner") && text.contains("ci-web") && text.contains("Read allow"), "{text}");
    assert!(!text.contains("laptop-web"), "{text}");
    let out = on("laptop", &server, &team.laptop, &["trace", "show", "--team", "--file", "src/lib.ts"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
#[cfg_attr(windows, ignore = "starts a PostgreSQL server from Debian's Unix binaries, which a Windows test cannot run")]
fn the_database_killed_mid_run_loses_nothing_and_the_copy_catches_up_once() {
    let server = Server::start();
    let team = team();
    read_call("laptop", &server, &team.laptop, "s1");
    read_call("laptop", &server, &team.laptop, "s2");
    assert!(!team_records("laptop", &server, &team.laptop).is_empty());

    server.kill();
    for session in ["s3", "s4", "s5"] {
        read_call("laptop", &server, &team.laptop, session);
    }
    // The local ledger has every record, intact.
    common::verify(&team.laptop);
    let calls = local(&team.laptop);
    assert!(calls.len() >= 5, "{calls:?}");
    // Listing the team's trace needs the database, and says which one.
    let out = on("laptop", &server, &team.laptop, &["trace", "show", "--team"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains(&server.url()) && stderr(&out).contains("cannot be reached"), "{}", stderr(&out));

    server.restart();
    let listed = team_records("laptop", &server, &team.laptop);
    assert_eq!(listed.len(), calls.len(), "{listed:?}");
    assert_eq!(copied(&server, "laptop"), local(&team.laptop), "every local record once, hashes matching");
    // A second copy inserts nothing.
    let rows = server.psql("select count(*) from chokepoint.ledger_records");
    team_records("laptop", &server, &team.laptop);
    assert_eq!(server.psql("select count(*) from chokepoint.ledger_records"), rows);
    assert_eq!(rows, calls.len().to_string());
}

#[test]
#[cfg_attr(windows, ignore = "starts a PostgreSQL server from Debian's Unix binaries, which a Windows test cannot run")]
fn without_a_team_database_trace_show_team_says_how_to_configure_one() {
    let team = team();
    let out = Command::new(common::program())
        .args(["trace", "show", "--team", "--workspace", team.laptop.to_str().unwrap()])
        .env_remove("CHOKEPOINT_COORDINATION_URL")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("coordination.url") && stderr(&out).contains("PGPASSWORD"), "{}", stderr(&out));
}
