//! Pendings shared through a team's PostgreSQL database (`approvals::team`), in process against a
//! real server: the compare-and-set that lets exactly one of two machines decide, raced 50 times on
//! two connections, and two registries (two machines) of which one opens a Pending a person is to
//! answer and the other shows it (LISTEN/NOTIFY), decides it, and the first settles it with the
//! decider's machine.

#[path = "support/postgres.rs"]
mod postgres;

use chokepoint_core::approvals::team::{Claim, Origin, TeamPendings};
use chokepoint_core::approvals::{Approvals, OpenRequest, PendingKind, Status};
use chokepoint_core::base::team::{Settings, TeamDb, Unreachable};
use serde_json::json;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

fn team_of(server: &postgres::Server, machine: &str) -> Arc<TeamPendings> {
    let settings = Settings {
        url: server.url(),
        namespace: "example.com/acme/web".into(),
        machine: machine.into(),
        unreachable: Unreachable::Deny,
        source: "test",
    };
    let password = server.password().to_owned();
    let db = TeamDb::new(settings, &|k| (k == "PGPASSWORD").then(|| password.clone())).unwrap();
    Arc::new(TeamPendings::new(Arc::new(db), Origin { worktree: machine.into(), branch: Some("main".into()) }))
}

fn ask() -> OpenRequest {
    OpenRequest::new(PendingKind::ToolCall, json!({ "tool": "Write", "input": { "file_path": "src/a.ts" }, "agent": "claude" }), "confirm")
}

#[test]
#[cfg_attr(windows, ignore = "starts a PostgreSQL server from Debian's Unix binaries, which a Windows test cannot run")]
fn two_machines_claiming_one_pending_at_once_exactly_one_wins_every_time() {
    let server = postgres::Server::start();
    let (a, b, c) = (team_of(&server, "a"), team_of(&server, "b"), team_of(&server, "c"));
    let asker = Approvals::default();
    for round in 0..50 {
        let opened = asker.open(ask()).unwrap();
        a.publish(&opened.pending, Duration::from_secs(30)).unwrap();
        let barrier = Arc::new(Barrier::new(2));
        let racers: Vec<_> = [(Arc::clone(&b), "approve", Status::Approved), (Arc::clone(&c), "reject", Status::Rejected)]
            .into_iter()
            .map(|(team, action, status)| {
                let (barrier, id) = (Arc::clone(&barrier), opened.pending.id.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    team.claim(&id, &json!({ "action": action, "reason": "r" }), status, &format!("cli:{action}")).unwrap()
                })
            })
            .collect();
        let claims: Vec<Claim> = racers.into_iter().map(|r| r.join().unwrap()).collect();
        let won = claims.iter().filter(|c| **c == Claim::Won).count();
        assert_eq!(won, 1, "round {round}: exactly one decision wins: {claims:?}");
        let lost = claims.iter().find_map(|c| match c {
            Claim::Lost(row) => Some(row),
            _ => None,
        });
        let row = lost.unwrap_or_else(|| panic!("round {round}: the other is told who won: {claims:?}"));
        assert!(row.decided_machine.as_deref() == Some("b") || row.decided_machine.as_deref() == Some("c"), "{row:?}");
    }
}

#[test]
#[cfg_attr(windows, ignore = "starts a PostgreSQL server from Debian's Unix binaries, which a Windows test cannot run")]
fn another_machines_registry_shows_the_pending_and_its_decision_settles_the_asker() {
    let server = postgres::Server::start();
    let (machine_a, machine_b) = (Approvals::default(), Approvals::default());
    machine_a.share(Some(team_of(&server, "a")));
    machine_b.share(Some(team_of(&server, "b")));
    machine_b.listen(true);
    // Let B's listener connect before A opens (a missed notification would be caught up anyway).
    std::thread::sleep(Duration::from_millis(500));
    let opened = machine_a.open(ask()).unwrap();
    assert!(machine_a.publish(&opened.pending.id).unwrap(), "a person is to answer it: shared");
    let id = opened.pending.id.clone();

    let until = Instant::now() + Duration::from_secs(10);
    let shown = loop {
        if let Some(p) = machine_b.list().into_iter().find(|p| p.id == id) {
            break p;
        }
        assert!(Instant::now() < until, "B shows A's Pending");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(shown.subject["machine"], "a", "{shown:?}");
    assert_eq!(shown.subject["branch"], "main", "{shown:?}");

    // B's person approves; A's waiter hears it, with who and where.
    let applied = machine_b.apply_decision(&id, &json!({ "action": "approve", "note": "ok from b" }), "human").unwrap();
    assert_eq!(applied.pending.status, Status::Approved);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let settled = runtime.block_on(machine_a.wait(&id, Some(Duration::from_secs(10)))).unwrap();
    assert_eq!(settled.status, Status::Approved, "{settled:?}");
    let decision = settled.decision.unwrap();
    assert_eq!((decision.by.as_str(), decision.machine.as_deref(), decision.note.as_deref()), ("human", Some("b"), Some("ok from b")));
    assert!(machine_b.list().is_empty(), "the card is gone on B");

    // A's own person is now too late: the first answer counts.
    // Told who decided, and where, as a lost claim is, though A already holds B's decision.
    let late = machine_a.apply_decision(&id, &json!({ "action": "reject", "reason": "no" }), "human");
    let why = late.map(|a| a.pending.status).unwrap_err().to_string();
    assert!(why.contains("decided first by human on b"), "{why}");
}
