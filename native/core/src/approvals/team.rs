//! Pendings shared with a team's coordination database (`base::team`): the table
//! `chokepoint.pendings`, one row per Pending a person is to answer, keyed by the repository's
//! namespace, and the notifications on channel [`CHANNEL`] that tell every engine of the team when
//! one is opened or decided.
//!
//! - **The asking engine owns the Pending.** Its row is a copy for the other machines' cards; the
//!   decision travels back as the action and arguments a person gave (`{ "action": …, … }`), which
//!   the asker applies through the kind's own table, as it applies a local decision.
//! - **The first answer wins.** A decision is a compare-and-set on `decision IS NULL` (and a
//!   deadline not passed, by the database's clock): a second decider finds the row decided and is
//!   told by whom and on which machine. The asker's own people decide through the same CAS, so two
//!   machines can never both decide.
//! - **Every operation is safe to repeat** (`TeamDb::run` repeats one after a broken connection): an
//!   insert does nothing for a row that exists, and a claim that finds the row decided as it would
//!   have decided it counts as won.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::ApprovalError;
use super::kind::PendingKind;
use super::pending::{PendingDict, Status};
use crate::base::team::{NOW_MS, TeamDb, TeamError};

/// The channel every engine of a team listens on.
pub const CHANNEL: &str = "chokepoint_pendings";

/// The table's versions; each step is one transaction.
const STEPS: &[&str] = &["CREATE TABLE IF NOT EXISTS chokepoint.pendings (
        namespace text NOT NULL,
        id text NOT NULL,
        machine text NOT NULL,
        worktree text NOT NULL,
        branch text,
        session text,
        agent text,
        kind text NOT NULL,
        triggered_by text NOT NULL,
        created_at text NOT NULL,
        subject jsonb NOT NULL,
        opened_at_ms bigint NOT NULL,
        deadline_ms bigint NOT NULL,
        status text,
        decision jsonb,
        decided_by text,
        decided_machine text,
        decided_at_ms bigint,
        PRIMARY KEY (namespace, id));
     CREATE INDEX IF NOT EXISTS pendings_open ON chokepoint.pendings (namespace, opened_at_ms) WHERE decision IS NULL;"];

/// How long decided rows stay (for `approvals show` on another machine) before a later insert
/// removes them.
const KEEP_DECIDED_MS: i64 = 24 * 60 * 60 * 1000;

const COLUMNS: &str = "id, machine, worktree, branch, session, agent, kind, triggered_by, created_at, subject, \
     opened_at_ms, deadline_ms, status, decision, decided_by, decided_machine, decided_at_ms";

/// Where this engine's Pendings come from: the machine, worktree and branch the other machines'
/// cards name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub worktree: String,
    pub branch: Option<String>,
}

/// One engine's side of the team's Pendings: its database and where its own asks come from.
#[derive(Debug)]
pub struct TeamPendings {
    db: Arc<TeamDb>,
    origin: Origin,
}

/// A row of `chokepoint.pendings`.
#[derive(Debug, Clone, PartialEq)]
pub struct TeamRow {
    pub id: String,
    pub machine: String,
    pub worktree: String,
    pub branch: Option<String>,
    pub session: Option<String>,
    pub agent: Option<String>,
    pub kind: String,
    pub triggered_by: String,
    pub created_at: String,
    pub subject: Value,
    pub opened_at_ms: i64,
    pub deadline_ms: i64,
    /// The status its decision gave (`approved`, `rejected`, `modified`, `timed_out`…); none while open.
    pub status: Option<String>,
    /// The decision as the decider gave it: `{ "action": …, …its arguments }`.
    pub decision: Option<Value>,
    pub decided_by: Option<String>,
    pub decided_machine: Option<String>,
    pub decided_at_ms: Option<i64>,
}

/// What a compare-and-set of a decision found.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// This decision is the Pending's.
    Won,
    /// Someone decided first: the row as they left it.
    Lost(Box<TeamRow>),
    /// Its deadline passed before anyone decided.
    Expired,
    /// No such row (never published, or removed).
    Missing,
}

/// What a notification on [`CHANNEL`] says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Notice {
    pub namespace: String,
    pub event: NoticeEvent,
    pub id: String,
    /// The machine that opened or decided it.
    pub machine: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoticeEvent {
    Opened,
    Decided,
}

impl Notice {
    pub fn parse(payload: &str) -> Option<Notice> {
        serde_json::from_str(payload).ok()
    }
}

impl TeamPendings {
    pub fn new(db: Arc<TeamDb>, origin: Origin) -> TeamPendings {
        TeamPendings { db, origin }
    }

    pub fn db(&self) -> &Arc<TeamDb> {
        &self.db
    }

    pub fn machine(&self) -> &str {
        self.db.machine()
    }

    pub fn namespace(&self) -> &str {
        self.db.namespace()
    }

    /// Whether `other` is the same database from the same place (a reload that changed nothing).
    pub fn same(&self, other: &TeamPendings) -> bool {
        Arc::ptr_eq(&self.db, &other.db) && self.origin == other.origin
    }

    fn migrate(&self) -> Result<(), TeamError> {
        self.db.migrate("pendings", STEPS)
    }

    /// Makes the table exist (the listener reads it on every connection).
    pub fn ensure_schema(&self) -> Result<(), TeamError> {
        self.migrate()
    }

    /// Publishes this engine's open Pending `pending`, answerable for `left` more, and tells the team.
    pub fn publish(&self, pending: &PendingDict, left: Duration) -> Result<(), TeamError> {
        self.migrate()?;
        let namespace = self.namespace().to_owned();
        let machine = self.machine().to_owned();
        let origin = self.origin.clone();
        let pending = pending.clone();
        let agent = pending.subject.get("agent").and_then(Value::as_str).map(str::to_owned);
        // The table has no columns for these: the row's subject carries what the other machines'
        // cards show of them (`TeamRow::asker`, `TeamRow::on_timeout`).
        let mut subject = pending.subject.clone();
        if let Some(object) = subject.as_object_mut() {
            object.insert("on_timeout".into(), pending.on_timeout.as_str().into());
            if let Some(intent) = pending.asker.as_ref().and_then(|a| a.intent.clone()) {
                object.insert("intent".into(), intent.into());
            }
        }
        let left_ms = i64::try_from(left.as_millis()).unwrap_or(i64::MAX);
        let notice = notice(&namespace, NoticeEvent::Opened, &pending.id, &machine);
        self.db.run("publish a pending", move |client| {
            let mut tx = client.transaction()?;
            tx.execute(
                &format!(
                    "INSERT INTO chokepoint.pendings (namespace, id, machine, worktree, branch, session, agent, kind, \
                     triggered_by, created_at, subject, opened_at_ms, deadline_ms)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, {NOW_MS}, {NOW_MS} + $12)
                     ON CONFLICT (namespace, id) DO NOTHING"
                ),
                &[
                    &namespace,
                    &pending.id,
                    &machine,
                    &origin.worktree,
                    &origin.branch,
                    &pending.session_id,
                    &agent,
                    &pending.kind.as_str(),
                    &pending.triggered_by,
                    &pending.created_at,
                    &subject,
                    &left_ms,
                ],
            )?;
            tx.execute(
                &format!("DELETE FROM chokepoint.pendings WHERE namespace = $1 AND decision IS NOT NULL AND decided_at_ms < {NOW_MS} - $2"),
                &[&namespace, &KEEP_DECIDED_MS],
            )?;
            tx.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &notice])?;
            tx.commit()
        })
    }

    /// Decides the Pending `id` if nobody did before its deadline: `decision` as the decider gave it,
    /// the `status` it gives, by `by` on this machine. A timeout (`status` `timed_out`) is taken
    /// whatever the deadline says.
    pub fn claim(&self, id: &str, decision: &Value, status: Status, by: &str) -> Result<Claim, TeamError> {
        self.migrate()?;
        let (namespace, machine) = (self.namespace().to_owned(), self.machine().to_owned());
        let (id, decision, by) = (id.to_owned(), decision.clone(), by.to_owned());
        let status = status.as_str();
        let notice = notice(&namespace, NoticeEvent::Decided, &id, &machine);
        let deadline = if status == Status::TimedOut.as_str() { String::new() } else { format!("AND deadline_ms > {NOW_MS}") };
        self.db.run("decide a pending", move |client| {
            let mut tx = client.transaction()?;
            let won = tx.execute(
                &format!(
                    "UPDATE chokepoint.pendings SET status = $3, decision = $4, decided_by = $5, decided_machine = $6, \
                     decided_at_ms = {NOW_MS} WHERE namespace = $1 AND id = $2 AND decision IS NULL {deadline}"
                ),
                &[&namespace, &id, &status, &decision, &by, &machine],
            )?;
            if won == 1 {
                tx.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &notice])?;
                tx.commit()?;
                return Ok(Claim::Won);
            }
            let row = select_row(&mut tx, &namespace, &id)?;
            tx.commit()?;
            Ok(match row {
                None => Claim::Missing,
                // Repeated after a connection broke as its commit went through: found as it decided.
                Some(row)
                    if row.decision.as_ref() == Some(&decision)
                        && row.decided_by.as_deref() == Some(by.as_str())
                        && row.decided_machine.as_deref() == Some(machine.as_str()) =>
                {
                    Claim::Won
                }
                Some(row) if row.decision.is_some() => Claim::Lost(Box::new(row)),
                Some(_) => Claim::Expired,
            })
        })
    }

    /// The team's open Pendings (undecided, deadline not passed), oldest first.
    pub fn open_rows(&self) -> Result<Vec<TeamRow>, TeamError> {
        self.migrate()?;
        let namespace = self.namespace().to_owned();
        self.db.run("read the open pendings", move |client| open_rows(&mut **client, &namespace))
    }

    /// One row, open or decided.
    pub fn row(&self, id: &str) -> Result<Option<TeamRow>, TeamError> {
        self.migrate()?;
        let (namespace, id) = (self.namespace().to_owned(), id.to_owned());
        self.db.run("read a pending", move |client| select_row(&mut **client, &namespace, &id))
    }
}

fn notice(namespace: &str, event: NoticeEvent, id: &str, machine: &str) -> String {
    let notice = Notice { namespace: namespace.to_owned(), event, id: id.to_owned(), machine: machine.to_owned() };
    serde_json::to_string(&notice).expect("a notice always serialises")
}

/// The open rows of `namespace`, oldest first (for a client of its own: the listener's).
pub fn open_rows(client: &mut impl postgres::GenericClient, namespace: &str) -> Result<Vec<TeamRow>, postgres::Error> {
    let rows = client.query(
        &format!(
            "SELECT {COLUMNS} FROM chokepoint.pendings WHERE namespace = $1 AND decision IS NULL AND deadline_ms > {NOW_MS} \
             ORDER BY opened_at_ms"
        ),
        &[&namespace],
    )?;
    Ok(rows.iter().map(TeamRow::of).collect())
}

/// The row `id` of `namespace`, if any, with how long it has left by the database's clock.
pub fn select_row(client: &mut impl postgres::GenericClient, namespace: &str, id: &str) -> Result<Option<TeamRow>, postgres::Error> {
    let row =
        client.query_opt(&format!("SELECT {COLUMNS} FROM chokepoint.pendings WHERE namespace = $1 AND id = $2"), &[&namespace, &id])?;
    Ok(row.as_ref().map(TeamRow::of))
}

/// Milliseconds until `deadline_ms` by the database's clock, for rows read on `client`.
pub fn left_ms(client: &mut impl postgres::GenericClient, deadline_ms: i64) -> Result<i64, postgres::Error> {
    let row = client.query_one(&format!("SELECT $1::bigint - {NOW_MS}"), &[&deadline_ms])?;
    Ok(row.get(0))
}

impl TeamRow {
    fn of(row: &postgres::Row) -> TeamRow {
        TeamRow {
            id: row.get("id"),
            machine: row.get("machine"),
            worktree: row.get("worktree"),
            branch: row.get("branch"),
            session: row.get("session"),
            agent: row.get("agent"),
            kind: row.get("kind"),
            triggered_by: row.get("triggered_by"),
            created_at: row.get("created_at"),
            subject: row.get("subject"),
            opened_at_ms: row.get("opened_at_ms"),
            deadline_ms: row.get("deadline_ms"),
            status: row.get("status"),
            decision: row.get("decision"),
            decided_by: row.get("decided_by"),
            decided_machine: row.get("decided_machine"),
            decided_at_ms: row.get("decided_at_ms"),
        }
    }

    pub fn kind(&self) -> Result<PendingKind, ApprovalError> {
        PendingKind::parse(&self.kind)
    }

    /// Who waits on the row's Pending: its agent and session on its machine and worktree (`None`
    /// for our own runtime's asks, which name no agent).
    pub fn asker(&self) -> Option<super::pending::Asker> {
        Some(super::pending::Asker {
            agent: self.agent.clone()?,
            session: self.session.clone(),
            intent: self.subject.get("intent").and_then(Value::as_str).map(str::to_owned),
            worktree: Some(self.worktree.clone()),
            machine: Some(self.machine.clone()),
        })
    }

    /// What the asker's Pending becomes when nobody decides it (as its machine published it).
    pub fn on_timeout(&self) -> super::pending::Lapse {
        use super::pending::Lapse;
        match self.subject.get("on_timeout").and_then(Value::as_str) {
            Some("deny") => Lapse::Deny,
            Some("agent_prompt") => Lapse::AgentPrompt,
            _ => Lapse::Reject,
        }
    }

    /// The subject as another machine's card shows it: the asker's, with the machine, worktree and
    /// branch it comes from (`machine`, `worktree`, `branch`), as a relayed ask's names its worktree.
    pub fn placed_subject(&self) -> Value {
        let mut subject = self.subject.clone();
        if let Some(object) = subject.as_object_mut() {
            object.insert("machine".into(), self.machine.clone().into());
            object.entry("worktree").or_insert_with(|| self.worktree.clone().into());
            object.entry("branch").or_insert_with(|| self.branch.clone().into());
        }
        subject
    }

    /// The row as `chokepoint approvals` prints a Pending (`PendingDict`'s fields, with its machine).
    pub fn to_json(&self) -> Value {
        let status = self.status.clone().unwrap_or_else(|| "open".to_owned());
        let actions = self.kind().map(|k| k.action_names()).unwrap_or_default();
        let decision = self.decision.as_ref().map(|d| {
            let mut d = d.clone();
            if let Some(object) = d.as_object_mut() {
                object.insert("by".into(), self.decided_by.clone().into());
                object.insert("machine".into(), self.decided_machine.clone().into());
            }
            d
        });
        serde_json::json!({
            "id": self.id,
            "kind": self.kind,
            "created_at": self.created_at,
            "triggered_by": self.triggered_by,
            "session_id": self.session,
            "task_id": null,
            "status": status,
            "route": "human",
            "subject": self.placed_subject(),
            "actions": actions,
            "decision": decision,
            "machine": self.machine,
        })
    }
}
