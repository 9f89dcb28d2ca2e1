//! Approved scope expansions on a team's PostgreSQL database (`base::team`): the same facts as the
//! SQLite table of `scope::expansion`, keyed by the repository's namespace, so an expansion approved
//! on one machine is judged on every machine the session's writes reach.
//!
//! An approval is one insert, which is not idempotent by itself: `TeamDb::run` may run it again
//! after a broken connection whose commit went through. Each approval carries an operation id, and
//! its second run finds the row there (`ON CONFLICT DO NOTHING`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use postgres::types::Type;

use crate::base::team::{TeamDb, TeamError};
use crate::scope::error::ScopeError;
use crate::scope::expansion::{Expansion, ExpansionStore};

/// This store's name in `chokepoint.schema_versions`.
const COMPONENT: &str = "expansions";

const STEPS: &[&str] = &["
    CREATE TABLE chokepoint.scope_expansions (
        namespace      text NOT NULL,
        id             bigserial,
        op             text NOT NULL,      -- the approving call's id: its second run changes nothing
        session        text NOT NULL,
        intent         text NOT NULL,
        paths          jsonb NOT NULL,
        justification  text NOT NULL,
        approved_by    text NOT NULL,
        approved_at_ms bigint NOT NULL,
        PRIMARY KEY (namespace, id),
        UNIQUE (namespace, op)
    );
    CREATE INDEX scope_expansions_by_session ON chokepoint.scope_expansions (namespace, session, intent);
"];

/// The approved expansions of one repository on the team's database.
#[derive(Debug)]
pub struct TeamExpansions {
    db: Arc<TeamDb>,
}

fn failed(error: TeamError) -> ScopeError {
    ScopeError::from(error.to_string())
}

impl TeamExpansions {
    pub fn new(db: Arc<TeamDb>) -> TeamExpansions {
        TeamExpansions { db }
    }

    fn ready(&self) -> Result<String, ScopeError> {
        self.db.migrate(COMPONENT, STEPS).map_err(failed)?;
        Ok(self.db.namespace().to_owned())
    }
}

impl ExpansionStore for TeamExpansions {
    fn approve(&self, expansion: &Expansion) -> Result<(), ScopeError> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let ns = self.ready()?;
        let op = format!(
            "{}/{}/{}/{}",
            self.db.machine(),
            std::process::id(),
            crate::base::clock::now_ms(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let e = expansion.clone();
        let paths = serde_json::to_value(&e.paths).expect("strings serialise");
        let at = i64::try_from(e.approved_at_ms).unwrap_or(i64::MAX);
        self.db
            .run("record an approved scope expansion", move |client| {
                client.execute_typed(
                    "INSERT INTO chokepoint.scope_expansions
                     (namespace, op, session, intent, paths, justification, approved_by, approved_at_ms)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (namespace, op) DO NOTHING",
                    &[
                        (&ns, Type::TEXT),
                        (&op, Type::TEXT),
                        (&e.session, Type::TEXT),
                        (&e.intent, Type::TEXT),
                        (&paths, Type::JSONB),
                        (&e.justification, Type::TEXT),
                        (&e.approved_by, Type::TEXT),
                        (&at, Type::INT8),
                    ],
                )
            })
            .map(drop)
            .map_err(failed)
    }

    fn list(&self, session: Option<&str>) -> Result<Vec<Expansion>, ScopeError> {
        let ns = self.ready()?;
        let session = session.map(str::to_owned);
        self.db
            .run("read approved scope expansions", move |client| {
                let rows = client.query_typed(
                    "SELECT session, intent, paths, justification, approved_by, approved_at_ms FROM chokepoint.scope_expansions
                     WHERE namespace = $1 AND ($2::text IS NULL OR session = $2) ORDER BY id",
                    &[(&ns, Type::TEXT), (&session, Type::TEXT)],
                )?;
                Ok(rows
                    .iter()
                    .map(|r| Expansion {
                        session: r.get(0),
                        intent: r.get(1),
                        paths: serde_json::from_value(r.get(2)).unwrap_or_default(),
                        justification: r.get(3),
                        approved_by: r.get(4),
                        approved_at_ms: u64::try_from(r.get::<_, i64>(5)).unwrap_or(0),
                    })
                    .collect())
            })
            .map_err(failed)
    }
}
