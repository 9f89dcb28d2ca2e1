//! Every machine's records read back from the ledger's copy in the team's database
//! (`team_copy.rs`): what `trace show --team` and the sidebar's team trace list, newest last, each
//! with the machine, worktree and branch that wrote it.
//!
//! Only this repository's rows are read (the database's namespace, `base::team`). The filters are
//! the index's that the copied columns answer (intent, session, time, a limit); a file's history
//! stays the local index's, which holds each write's ranges.

use crate::base::team::{TeamDb, TeamError};

use super::record::Record;

/// Which of the team's records to list; every field set must match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TeamFilter {
    pub intent: Option<String>,
    pub session: Option<String>,
    /// Records at or after this time, unix milliseconds.
    pub since_ms: Option<u64>,
    /// At most this many, the newest; all when `None`.
    pub limit: Option<usize>,
}

/// One record of the team's trace and where it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct TeamRecord {
    pub machine: String,
    pub worktree: String,
    /// The branch its worktree had checked out when it was copied.
    pub branch: Option<String>,
    pub chain: String,
    /// SHA-256 (hex) of the record's line in its chain.
    pub record_hash: String,
    pub record: Record,
}

/// Why the team's trace could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryError {
    Team(TeamError),
    /// A row whose record this Chokepoint cannot read (a newer version's, say).
    Unreadable {
        chain: String,
        seq: i64,
        cause: String,
    },
}

impl std::fmt::Display for QueryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QueryError::Team(e) => e.fmt(f),
            QueryError::Unreadable { chain, seq, cause } => {
                write!(f, "the team's copy of record {seq} of chain {chain} cannot be read ({cause}): upgrade Chokepoint on this machine")
            }
        }
    }
}

impl std::error::Error for QueryError {}

impl From<TeamError> for QueryError {
    fn from(e: TeamError) -> Self {
        QueryError::Team(e)
    }
}

/// The records of this repository in `db` that match `filter`, oldest first (the newest `limit`).
pub fn query(db: &TeamDb, filter: &TeamFilter) -> Result<Vec<TeamRecord>, QueryError> {
    db.migrate(super::team_copy::COMPONENT, super::team_copy::STEPS)?;
    let namespace = db.namespace().to_owned();
    let filter = filter.clone();
    let rows = db.run("read the team's trace", move |client| {
        let since = filter.since_ms.map(|ms| ms.min(i64::MAX as u64) as i64);
        let limit = filter.limit.map(|n| n.min(i64::MAX as usize) as i64);
        // The newest `limit` first (an index scan backwards), turned oldest first below.
        let rows = client.query(
            "SELECT machine, worktree, branch, chain, seq, record_hash, record::text FROM chokepoint.ledger_records
             WHERE namespace = $1
               AND ($2::text IS NULL OR intent = $2)
               AND ($3::text IS NULL OR session = $3)
               AND ($4::bigint IS NULL OR at_ms >= $4)
             ORDER BY at_ms DESC, chain DESC, seq DESC
             LIMIT $5",
            &[&namespace, &filter.intent, &filter.session, &since, &limit],
        )?;
        Ok(rows
            .into_iter()
            .map(|row| {
                let fields: (String, String, Option<String>, String, i64, String, String) =
                    (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4), row.get(5), row.get(6));
                fields
            })
            .collect::<Vec<_>>())
    })?;
    let mut records = Vec::with_capacity(rows.len());
    for (machine, worktree, branch, chain, seq, record_hash, json) in rows.into_iter().rev() {
        // jsonb keeps no key order: read as a value, then as a record (its own order again).
        let record: Record =
            serde_json::from_str(&json).map_err(|e| QueryError::Unreadable { chain: chain.clone(), seq, cause: e.to_string() })?;
        records.push(TeamRecord { machine, worktree, branch, chain, record_hash, record });
    }
    Ok(records)
}
