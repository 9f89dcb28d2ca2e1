//! Intent leases and revocations on a team's PostgreSQL database (`base::team`), for agents on
//! several machines: the same semantics as the SQLite table of `scope::leases` (read its module
//! doc: versions as fencing tokens, expiry, a lease yielded at a turn's end, a session's tenure read
//! by `Tenure::of` from the same rows, a revocation kept until the session selects again), one
//! holder per (repository, intent) across every machine that shares the database.
//!
//! - **Why an advisory lock per intent.** A take reads the intent's row, decides, and writes; two
//!   machines must never both read "free". `SELECT … FOR UPDATE` locks a row that exists, but the
//!   first take of an intent finds no row to lock, and would need a second path (`INSERT … ON
//!   CONFLICT`, then read again). `pg_advisory_xact_lock` on the (namespace, intent) pair serialises
//!   every read-decide-write of that intent, the first included, in one path that mirrors SQLite's
//!   `BEGIN IMMEDIATE`; it is released by the commit or rollback, so a connection that dies frees it.
//!   The compare-and-swap on the version stays, as SQLite's does: the fencing token of one tenure.
//! - **Why the database's clock.** Expiry compared with the clock of whichever machine asks could
//!   hand one intent to two holders whose clocks disagree: "now" is [`NOW_MS`], read inside the
//!   transaction once the lock is held.
//! - **Why every operation may run twice.** `TeamDb::run` runs an operation again after a cached
//!   connection broke, and a commit whose answer was lost may have happened. A take or renewal run
//!   again finds the session holding the intent and renews the same tenure; a release finds nothing
//!   to release; a revocation carries an operation id, so its second run finds the revocation it made.
//! - **One statement per round trip.** Every statement is sent with its parameters' types
//!   (`query_typed`), so none is prepared first: a prepare is a round trip of its own. A take, a
//!   release and a session's check, which a live engine runs over and over, are prepared at their
//!   second run on a connection (`Session::query_hot`): the server then neither parses nor plans them.
//! - **A take is one round trip.** Selecting an intent (lock, read, decide, write, release the
//!   session's other lease, forget its revocation) is one call of a function the schema defines,
//!   `chokepoint.lease_take` (schema 2), committed on its own: as a client-side transaction it was
//!   seven round trips and 40× SQLite's take on loopback. Its decision is `Leases::acquire`'s, in
//!   SQL; a renewal (once per half lease) and a revocation stay client-side transactions.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use postgres::GenericClient;
use postgres::types::{ToSql, Type};

use crate::base::team::{NOW_MS, Session, TeamDb};
use crate::scope::leases::{
    AcquireError, Checkout, Holder, Lease, LeaseError, LeaseStore, REVOCATION_KEPT, Revocation, Row, Tenure, check_id, expiry, int, ttl_ms,
    uint,
};

/// This store's name in `chokepoint.schema_versions`.
const COMPONENT: &str = "leases";

/// The schema, one step per version. Every row is keyed by the repository's namespace.
const STEPS: &[&str] = &[
    "
    CREATE TABLE chokepoint.leases (
        namespace     text NOT NULL,
        intent        text NOT NULL,
        holder        text,             -- the session; NULL once released (the row keeps the version)
        agent         text,
        machine       text,
        version       bigint NOT NULL,  -- grows by one per new holder, never reused
        acquired_at   bigint NOT NULL,  -- unix milliseconds, the database's clock
        renewed_at    bigint NOT NULL,
        expires_at    bigint NOT NULL,
        taken_from    text,
        worktree      text,
        worktree_root text,
        branch        text,
        PRIMARY KEY (namespace, intent)
    );
    CREATE INDEX leases_by_holder ON chokepoint.leases (namespace, holder);
    CREATE TABLE chokepoint.lease_revocations (
        namespace   text NOT NULL,
        session     text NOT NULL,
        intent      text NOT NULL,
        agent       text,
        version     bigint NOT NULL,
        revoked_by  text NOT NULL,
        reason      text,
        revoked_at  bigint NOT NULL,
        op          text NOT NULL,      -- the revoking call's id: its second run finds its own row
        PRIMARY KEY (namespace, session)
    );
",
    TAKE,
];

/// Schema 2: a take in one round trip and one commit (see the module doc), with the decision of
/// `scope::leases::Leases::acquire`: free, released or expired → a new tenure (version + 1, and
/// `taken_from` the expired holder); the session's own → the same tenure renewed; another live
/// holder → `held`, with its row. The session's other leases are released and its revocation
/// forgotten in the same transaction.
const TAKE: &str = "
    CREATE OR REPLACE FUNCTION chokepoint.lease_take(
        p_ns text, p_intent text, p_session text, p_agent text, p_machine text,
        p_worktree text, p_root text, p_branch text, p_ttl bigint)
    RETURNS TABLE (o_outcome text, o_now bigint, o_holder text, o_agent text, o_version bigint,
        o_acquired_at bigint, o_renewed_at bigint, o_expires_at bigint, o_taken_from text,
        o_worktree text, o_worktree_root text, o_branch text, o_machine text)
    LANGUAGE plpgsql AS $fn$
    DECLARE
        v_now bigint;
        r chokepoint.leases%ROWTYPE;
    BEGIN
        PERFORM pg_advisory_xact_lock(hashtext(p_ns), hashtext(p_intent));
        -- Read once the lock is held: each statement of a function sees what committed before it.
        v_now := (floor(extract(epoch from clock_timestamp()) * 1000))::bigint;
        SELECT * INTO r FROM chokepoint.leases l WHERE l.namespace = p_ns AND l.intent = p_intent;
        IF FOUND AND r.holder IS NOT NULL AND r.holder <> p_session AND r.expires_at > v_now THEN
            -- The holder as read under the lock: a release (which takes no lock) may come before a
            -- second read, which would name nobody.
            RETURN QUERY SELECT 'held'::text, v_now, r.holder, r.agent, r.version, r.acquired_at, r.renewed_at, r.expires_at,
                r.taken_from, r.worktree, r.worktree_root, r.branch, r.machine;
            RETURN;
        ELSIF NOT FOUND THEN
            INSERT INTO chokepoint.leases (namespace, intent, holder, agent, machine, version, acquired_at, renewed_at,
                expires_at, worktree, worktree_root, branch)
            VALUES (p_ns, p_intent, p_session, p_agent, p_machine, 1, v_now, v_now, v_now + p_ttl, p_worktree, p_root, p_branch);
        ELSIF r.holder = p_session THEN
            UPDATE chokepoint.leases l SET agent = p_agent, machine = p_machine, renewed_at = v_now, expires_at = v_now + p_ttl,
                worktree = p_worktree, worktree_root = p_root, branch = p_branch
            WHERE l.namespace = p_ns AND l.intent = p_intent AND l.version = r.version;
        ELSE
            UPDATE chokepoint.leases l SET holder = p_session, agent = p_agent, machine = p_machine, version = r.version + 1,
                acquired_at = v_now, renewed_at = v_now, expires_at = v_now + p_ttl, taken_from = r.holder,
                worktree = p_worktree, worktree_root = p_root, branch = p_branch
            WHERE l.namespace = p_ns AND l.intent = p_intent AND l.version = r.version;
        END IF;
        UPDATE chokepoint.leases l SET holder = NULL, agent = NULL, taken_from = NULL, expires_at = LEAST(l.expires_at, v_now)
        WHERE l.namespace = p_ns AND l.holder = p_session AND l.intent <> p_intent;
        DELETE FROM chokepoint.lease_revocations v WHERE v.namespace = p_ns AND v.session = p_session;
        RETURN QUERY SELECT 'taken'::text, v_now, l.holder, l.agent, l.version, l.acquired_at, l.renewed_at, l.expires_at,
            l.taken_from, l.worktree, l.worktree_root, l.branch, l.machine
            FROM chokepoint.leases l WHERE l.namespace = p_ns AND l.intent = p_intent;
    END
    $fn$;
";

/// The lease columns, in the order [`read_row`] reads them: the SQLite table's, named alike.
const COLUMNS: &str = Row::COLUMNS;
const REVOCATION_COLUMNS: &str = "session, intent, agent, version, revoked_by, reason, revoked_at";

/// The lease table of one repository on the team's database.
#[derive(Debug)]
pub struct TeamLeases {
    db: Arc<TeamDb>,
}

/// A row of `chokepoint.leases` ([`COLUMNS`], starting at column `first`), in the shape
/// `scope::leases` reads its own table into.
fn read_row(row: &postgres::Row, first: usize) -> Row {
    Row {
        holder: row.get(first),
        agent: row.get(first + 1),
        version: uint(row.get(first + 2)),
        acquired_at: uint(row.get(first + 3)),
        renewed_at: uint(row.get(first + 4)),
        expires_at: uint(row.get(first + 5)),
        taken_from: row.get(first + 6),
        checkout: match (row.get::<_, Option<String>>(first + 7), row.get::<_, Option<String>>(first + 8)) {
            (Some(worktree), Some(root)) => Some(Checkout { worktree, root, branch: row.get(first + 9) }),
            _ => None,
        },
        machine: row.get(first + 10),
    }
}

fn text(value: &Option<String>) -> (&(dyn ToSql + Sync), Type) {
    (value, Type::TEXT)
}

/// Takes the (namespace, intent) lock for the rest of the transaction, then reads "now" on the
/// database's clock and the intent's row, in that order: a read made before the lock was held
/// could be stale by the time it is.
fn lock_and_read(tx: &mut postgres::Transaction<'_>, ns: &str, intent: &str) -> Result<(u64, Option<Row>), postgres::Error> {
    tx.execute_typed("SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))", &[(&ns, Type::TEXT), (&intent, Type::TEXT)])?;
    let row = tx.query_typed_one(
        &format!(
            "SELECT {NOW_MS}, l.* FROM (SELECT 1) AS one LEFT JOIN (SELECT true AS found, {COLUMNS} FROM chokepoint.leases
             WHERE namespace = $1 AND intent = $2) AS l ON true"
        ),
        &[(&ns, Type::TEXT), (&intent, Type::TEXT)],
    )?;
    let now = uint(row.get(0));
    let found = row.get::<_, Option<bool>>(1).unwrap_or(false);
    Ok((now, found.then(|| read_row(&row, 2))))
}

/// Writes `lease` over its intent's row if the row still has version `expected`.
fn cas(tx: &mut impl GenericClient, ns: &str, expected: u64, lease: &Lease, taken_from: Option<&str>) -> Result<bool, postgres::Error> {
    let checkout = lease.checkout.as_ref();
    let (worktree, root, branch) =
        (checkout.map(|c| c.worktree.clone()), checkout.map(|c| c.root.clone()), checkout.and_then(|c| c.branch.clone()));
    let taken_from = taken_from.map(str::to_owned);
    let changed = tx.execute_typed(
        "UPDATE chokepoint.leases SET holder = $4, agent = $5, version = $6, acquired_at = $7, renewed_at = $8, expires_at = $9,
         taken_from = $10, worktree = $11, worktree_root = $12, branch = $13, machine = $14
         WHERE namespace = $1 AND intent = $2 AND version = $3",
        &[
            (&ns, Type::TEXT),
            (&lease.intent, Type::TEXT),
            (&int(expected), Type::INT8),
            (&lease.session, Type::TEXT),
            text(&lease.agent),
            (&int(lease.version), Type::INT8),
            (&int(lease.acquired_at_ms), Type::INT8),
            (&int(lease.renewed_at_ms), Type::INT8),
            (&int(lease.expires_at_ms), Type::INT8),
            text(&taken_from),
            text(&worktree),
            text(&root),
            text(&branch),
            text(&lease.machine),
        ],
    )?;
    Ok(changed == 1)
}

fn read_revocation(row: &postgres::Row) -> Revocation {
    Revocation {
        session: row.get(0),
        intent: row.get(1),
        agent: row.get(2),
        version: uint(row.get(3)),
        by: row.get(4),
        reason: row.get(5),
        at_ms: uint(row.get(6)),
    }
}

/// An id for one call of a write that is not idempotent by itself, unique across machines and
/// processes: its second run (`TeamDb::run` after a broken connection) recognises its own row.
fn operation_id(machine: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    format!("{machine}/{}/{}/{}", std::process::id(), crate::base::clock::now_ms(), COUNTER.fetch_add(1, Ordering::Relaxed))
}

impl TeamLeases {
    /// The lease table on `db`; its tables are made or migrated on first use.
    pub fn new(db: Arc<TeamDb>) -> TeamLeases {
        TeamLeases { db }
    }

    fn ready(&self) -> Result<String, LeaseError> {
        self.db.migrate(COMPONENT, STEPS).map_err(LeaseError::Team)?;
        Ok(self.db.namespace().to_owned())
    }

    /// Runs `body` in a transaction on the team's database (committed when it returns `Ok`).
    fn transaction<T: Send + 'static>(
        &self,
        op: &'static str,
        mut body: impl FnMut(&mut postgres::Transaction<'_>, &str) -> Result<T, postgres::Error> + Send + 'static,
    ) -> Result<T, LeaseError> {
        let ns = self.ready()?;
        self.db
            .run(op, move |client| {
                let mut tx = client.transaction()?;
                let value = body(&mut tx, &ns)?;
                tx.commit()?;
                Ok(value)
            })
            .map_err(LeaseError::Team)
    }

    fn read<T: Send + 'static>(
        &self,
        op: &'static str,
        mut body: impl FnMut(&mut Session, &str) -> Result<T, postgres::Error> + Send + 'static,
    ) -> Result<T, LeaseError> {
        let ns = self.ready()?;
        self.db.run(op, move |client| body(client, &ns)).map_err(LeaseError::Team)
    }
}

impl LeaseStore for TeamLeases {
    fn acquire(&self, intent: &str, holder: &Holder, ttl: Duration) -> Result<Lease, AcquireError> {
        check_id(intent, "the intent id is empty")?;
        check_id(&holder.session, "the session id is empty")?;
        let ttl = ttl_ms(ttl)?;
        let (intent, holder) = (intent.to_owned(), holder.clone());
        // Far beyond any lease, and clear of bigint's end when the database adds "now".
        let ttl = int(ttl).min(i64::MAX / 2);
        // Run again after its commit's answer was lost, it finds the session holding the intent and
        // renews the same tenure.
        self.read("take a lease", move |client, ns| {
            let checkout = holder.checkout.as_ref();
            let (worktree, root, branch) =
                (checkout.map(|c| c.worktree.clone()), checkout.map(|c| c.root.clone()), checkout.and_then(|c| c.branch.clone()));
            let rows = client.query_hot(
                "SELECT * FROM chokepoint.lease_take($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                &[
                    (&ns, Type::TEXT),
                    (&intent, Type::TEXT),
                    (&holder.session, Type::TEXT),
                    text(&holder.agent),
                    text(&holder.machine),
                    text(&worktree),
                    text(&root),
                    text(&branch),
                    (&ttl, Type::INT8),
                ],
            )?;
            let Some(row) = rows.into_iter().next() else {
                return Ok(Err(AcquireError::NotHeld { intent: intent.clone(), session: holder.session.clone() }));
            };
            let outcome: String = row.get(0);
            let lease = read_row(&row, 2).lease(&intent);
            Ok(match (outcome.as_str(), lease) {
                ("taken", Some(lease)) if lease.session == holder.session => Ok(lease),
                (_, Some(other)) => Err(AcquireError::Held(Box::new(other))),
                (_, None) => Err(AcquireError::NotHeld { intent: intent.clone(), session: holder.session.clone() }),
            })
        })?
    }

    fn renew(&self, intent: &str, session: &str, ttl: Duration) -> Result<Lease, AcquireError> {
        check_id(intent, "the intent id is empty")?;
        check_id(session, "the session id is empty")?;
        let ttl = ttl_ms(ttl)?;
        let (intent, session) = (intent.to_owned(), session.to_owned());
        self.transaction("renew a lease", move |tx, ns| {
            let not_held = || AcquireError::NotHeld { intent: intent.clone(), session: session.clone() };
            let (now, row) = lock_and_read(tx, ns, &intent)?;
            let row = match row {
                Some(row) if row.holder.as_deref() == Some(session.as_str()) => row,
                Some(row) => {
                    let lost = row.taken_from.as_deref() == Some(session.as_str());
                    let live = row.is_live(now);
                    return Ok(Err(match row.lease(&intent) {
                        Some(by) if lost => AcquireError::Lost { session: session.clone(), by: Box::new(by) },
                        Some(other) if live => AcquireError::Held(Box::new(other)),
                        _ => not_held(),
                    }));
                }
                None => return Ok(Err(not_held())),
            };
            let taken_from = row.taken_from.clone();
            let lease = Lease {
                intent: intent.clone(),
                session: session.clone(),
                agent: row.agent,
                checkout: row.checkout,
                machine: row.machine,
                version: row.version,
                acquired_at_ms: row.acquired_at,
                renewed_at_ms: now,
                expires_at_ms: expiry(now, ttl),
            };
            Ok(match cas(tx, ns, row.version, &lease, taken_from.as_deref())? {
                true => Ok(lease),
                false => Err(not_held()),
            })
        })?
    }

    fn release(&self, intent: &str, session: &str) -> Result<bool, LeaseError> {
        let (intent, session) = (intent.to_owned(), session.to_owned());
        self.read("release a lease", move |client, ns| {
            client.execute_hot(
                &format!(
                    "UPDATE chokepoint.leases SET holder = NULL, agent = NULL, taken_from = NULL, expires_at = LEAST(expires_at, {NOW_MS})
                     WHERE namespace = $1 AND intent = $2 AND holder = $3"
                ),
                &[(&ns, Type::TEXT), (&intent, Type::TEXT), (&session, Type::TEXT)],
            )
        })
        .map(|n| n > 0)
    }

    fn release_session(&self, session: &str) -> Result<usize, LeaseError> {
        let session = session.to_owned();
        self.read("release a session's leases", move |client, ns| {
            client.execute_typed(
                &format!(
                    "UPDATE chokepoint.leases SET holder = NULL, agent = NULL, taken_from = NULL, expires_at = LEAST(expires_at, {NOW_MS})
                     WHERE namespace = $1 AND holder = $2"
                ),
                &[(&ns, Type::TEXT), (&session, Type::TEXT)],
            )
        })
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
    }

    fn revoke(&self, session: &str, by: &str, reason: Option<&str>) -> Result<Option<Revocation>, LeaseError> {
        check_id(session, "the session id is empty")?;
        check_id(by, "who revokes the lease is not said")?;
        let reason = reason.map(str::trim).filter(|r| !r.is_empty()).map(str::to_owned);
        let (session, by, op) = (session.to_owned(), by.to_owned(), operation_id(self.db.machine()));
        self.transaction("revoke a lease", move |tx, ns| {
            let held = tx.query_typed(
                &format!(
                    "SELECT intent, {COLUMNS}, {NOW_MS} FROM chokepoint.leases WHERE namespace = $1 AND holder = $2
                     ORDER BY renewed_at DESC FOR UPDATE"
                ),
                &[(&ns, Type::TEXT), (&session, Type::TEXT)],
            )?;
            let Some(first) = held.first() else {
                // Nothing held: this call may be the second run of one whose commit went through.
                let mine = tx.query_typed_opt(
                    &format!(
                        "SELECT {REVOCATION_COLUMNS} FROM chokepoint.lease_revocations WHERE namespace = $1 AND session = $2 AND op = $3"
                    ),
                    &[(&ns, Type::TEXT), (&session, Type::TEXT), (&op, Type::TEXT)],
                )?;
                return Ok(mine.as_ref().map(read_revocation));
            };
            let intent: String = first.get(0);
            let row = read_row(first, 1);
            let now: i64 = first.get(12);
            tx.execute_typed(
                "UPDATE chokepoint.leases SET holder = NULL, agent = NULL, taken_from = NULL, expires_at = LEAST(expires_at, $3)
                 WHERE namespace = $1 AND holder = $2",
                &[(&ns, Type::TEXT), (&session, Type::TEXT), (&now, Type::INT8)],
            )?;
            let revocation = Revocation {
                session: session.clone(),
                intent,
                agent: row.agent,
                version: row.version,
                by: by.clone(),
                reason: reason.clone(),
                at_ms: uint(now),
            };
            tx.execute_typed(
                "INSERT INTO chokepoint.lease_revocations (namespace, session, intent, agent, version, revoked_by, reason, revoked_at, op)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                 ON CONFLICT (namespace, session) DO UPDATE SET intent = EXCLUDED.intent, agent = EXCLUDED.agent,
                 version = EXCLUDED.version, revoked_by = EXCLUDED.revoked_by, reason = EXCLUDED.reason,
                 revoked_at = EXCLUDED.revoked_at, op = EXCLUDED.op",
                &[
                    (&ns, Type::TEXT),
                    (&revocation.session, Type::TEXT),
                    (&revocation.intent, Type::TEXT),
                    text(&revocation.agent),
                    (&int(revocation.version), Type::INT8),
                    (&revocation.by, Type::TEXT),
                    text(&revocation.reason),
                    (&now, Type::INT8),
                    (&op, Type::TEXT),
                ],
            )?;
            let kept_since = now.saturating_sub(i64::try_from(REVOCATION_KEPT.as_millis()).unwrap_or(i64::MAX));
            tx.execute_typed(
                "DELETE FROM chokepoint.lease_revocations WHERE namespace = $1 AND revoked_at < $2",
                &[(&ns, Type::TEXT), (&kept_since, Type::INT8)],
            )?;
            Ok(Some(revocation))
        })
    }

    fn revocation(&self, session: &str) -> Result<Option<Revocation>, LeaseError> {
        let session = session.to_owned();
        self.read("read a session's revocation", move |client, ns| {
            let row = client.query_typed_opt(
                &format!("SELECT {REVOCATION_COLUMNS} FROM chokepoint.lease_revocations WHERE namespace = $1 AND session = $2"),
                &[(&ns, Type::TEXT), (&session, Type::TEXT)],
            )?;
            Ok(row.as_ref().map(read_revocation))
        })
    }

    fn revocations(&self) -> Result<Vec<Revocation>, LeaseError> {
        self.read("list revocations", move |client, ns| {
            let rows = client.query_typed(
                &format!("SELECT {REVOCATION_COLUMNS} FROM chokepoint.lease_revocations WHERE namespace = $1 ORDER BY revoked_at DESC"),
                &[(&ns, Type::TEXT)],
            )?;
            Ok(rows.iter().map(read_revocation).collect())
        })
    }

    fn held_by(&self, session: &str) -> Result<Option<Lease>, LeaseError> {
        self.held_by_at(session).map(|(lease, _)| lease)
    }

    fn held_by_at(&self, session: &str) -> Result<(Option<Lease>, u64), LeaseError> {
        let (tenure, now) = self.tenure(session)?;
        Ok((tenure.live(), now))
    }

    fn tenure(&self, session: &str) -> Result<(Tenure, u64), LeaseError> {
        let session = session.to_owned();
        self.read("read a session's lease", move |client, ns| {
            // One round trip, with "now" even when the session holds nothing.
            let rows = client.query_hot(
                &format!(
                    "SELECT {NOW_MS}, l.* FROM (SELECT 1) AS one LEFT JOIN (SELECT intent, {COLUMNS} FROM chokepoint.leases
                     WHERE namespace = $1 AND (holder = $2 OR taken_from = $2)) AS l ON true"
                ),
                &[(&ns, Type::TEXT), (&session, Type::TEXT)],
            )?;
            let now = rows.first().map_or(0, |r| uint(r.get(0)));
            let found = rows.iter().filter_map(|r| Some((r.get::<_, Option<String>>(1)?, read_row(r, 2)))).collect();
            Ok((Tenure::of(&session, found, now), now))
        })
    }

    fn yield_session(&self, session: &str) -> Result<usize, LeaseError> {
        check_id(session, "the session id is empty")?;
        let session = session.to_owned();
        self.read("yield a session's lease", move |client, ns| {
            client.execute_typed(
                &format!(
                    "UPDATE chokepoint.leases SET expires_at = {NOW_MS}
                     WHERE namespace = $1 AND holder = $2 AND expires_at > {NOW_MS}"
                ),
                &[(&ns, Type::TEXT), (&session, Type::TEXT)],
            )
        })
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
    }

    fn idle(&self) -> Result<Vec<Lease>, LeaseError> {
        self.read("list idle leases", move |client, ns| {
            let rows = client.query_typed(
                &format!(
                    "SELECT intent, {COLUMNS} FROM chokepoint.leases WHERE namespace = $1 AND holder IS NOT NULL
                     AND expires_at <= {NOW_MS} ORDER BY intent"
                ),
                &[(&ns, Type::TEXT)],
            )?;
            Ok(rows.iter().filter_map(|r| read_row(r, 1).lease(&r.get::<_, String>(0))).collect())
        })
    }

    fn get(&self, intent: &str) -> Result<Option<Lease>, LeaseError> {
        let intent = intent.to_owned();
        self.read("read a lease", move |client, ns| {
            let row = client.query_typed_opt(
                &format!(
                    "SELECT {COLUMNS} FROM chokepoint.leases WHERE namespace = $1 AND intent = $2 AND holder IS NOT NULL
                     AND expires_at > {NOW_MS}"
                ),
                &[(&ns, Type::TEXT), (&intent, Type::TEXT)],
            )?;
            Ok(row.and_then(|r| read_row(&r, 0).lease(&intent)))
        })
    }

    fn list(&self) -> Result<Vec<Lease>, LeaseError> {
        self.read("list leases", move |client, ns| {
            let rows = client.query_typed(
                &format!(
                    "SELECT intent, {COLUMNS} FROM chokepoint.leases WHERE namespace = $1 AND holder IS NOT NULL
                     AND expires_at > {NOW_MS} ORDER BY intent"
                ),
                &[(&ns, Type::TEXT)],
            )?;
            Ok(rows.iter().filter_map(|r| read_row(r, 1).lease(&r.get::<_, String>(0))).collect())
        })
    }
}
