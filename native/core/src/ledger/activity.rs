//! What each session did lately, counted in the ledger's index: the sessions seen since a time, most
//! recently active first, with their judged tool calls counted (allowed, denied) and their last
//! denial. The Sessions view reads this on every change of the trace, so it is one aggregate query
//! over the index's `time_ms` range, not a read of the ledger; the records themselves (the last
//! actions) are read back by the caller through [`Index::query`], per session, bounded. Also the
//! tools each agent called (`tools_called`), for `chokepoint doctor`'s list of tools it does not know.

use super::error::ReadError;
use super::index::{Index, int, uint};
use rusqlite::params;

/// One session's activity in the window.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionActivity {
    pub session: String,
    /// Records of the session in the window, of every kind.
    pub records: u64,
    /// Its tool calls the chain allowed (`PreToolUse` records deciding `allow`).
    pub allowed: u64,
    /// Its tool calls the chain denied (`PreToolUse` records deciding `deny`).
    pub denied: u64,
    /// The newest record of the session.
    pub last_seq: u64,
    /// When it was written (unix milliseconds), if its time parses.
    pub last_ms: Option<u64>,
    /// The newest of its records that decided `deny` (a tool call, or a gate such as a completion).
    pub last_denial: Option<u64>,
}

/// How often an agent called a tool, by the ledger's `PreToolUse` records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCalls {
    pub agent: Option<String>,
    pub tool: String,
    pub calls: u64,
    pub denied: u64,
    /// The newest of those records.
    pub last_seq: u64,
}

impl Index {
    /// Every tool called, per agent, from the `PreToolUse` records indexed (one aggregate query;
    /// `chokepoint doctor` reads it once). Call [`Index::catch_up`] first.
    pub fn tools_called(&self) -> Result<Vec<ToolCalls>, ReadError> {
        let sql = "SELECT agent, tool, COUNT(*), SUM(decision = 'deny'), MAX(seq)
                   FROM records
                   WHERE event = 'PreToolUse' AND tool IS NOT NULL
                   GROUP BY agent, tool
                   ORDER BY COUNT(*) DESC, tool";
        let conn = self.lock()?;
        (|| {
            let mut statement = conn.prepare_cached(sql)?;
            let rows = statement.query_map([], |row| {
                Ok(ToolCalls {
                    agent: row.get(0)?,
                    tool: row.get(1)?,
                    calls: uint(row.get(2)?),
                    denied: uint(row.get::<_, Option<i64>>(3)?.unwrap_or(0)),
                    last_seq: uint(row.get(4)?),
                })
            })?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        })()
        .map_err(|e| ReadError::from(self.failed("count the tools called", e)))
    }

    /// The sessions with a record at or after `since_ms` (unix milliseconds), most recently active
    /// first, at most `limit` of them. Reads only what is indexed: call [`Index::catch_up`] first.
    pub fn session_activity(&self, since_ms: u64, limit: usize) -> Result<Vec<SessionActivity>, ReadError> {
        // The `time_ms` index bounds the scan to the window; a day of a busy workspace is some
        // thousands of rows, counted in a few milliseconds.
        let sql = "SELECT session,
                          COUNT(*),
                          SUM(kind = 'tool_call' AND event = 'PreToolUse' AND decision = 'allow'),
                          SUM(kind = 'tool_call' AND event = 'PreToolUse' AND decision = 'deny'),
                          MAX(seq),
                          MAX(time_ms),
                          MAX(CASE WHEN decision = 'deny' THEN seq END)
                   FROM records
                   WHERE time_ms >= ?1 AND session IS NOT NULL
                   GROUP BY session
                   ORDER BY MAX(seq) DESC
                   LIMIT ?2";
        let conn = self.lock()?;
        (|| {
            let mut statement = conn.prepare_cached(sql)?;
            let rows = statement.query_map(params![int(since_ms), int(u64::try_from(limit).unwrap_or(u64::MAX))], |row| {
                Ok(SessionActivity {
                    session: row.get(0)?,
                    records: uint(row.get(1)?),
                    allowed: uint(row.get::<_, Option<i64>>(2)?.unwrap_or(0)),
                    denied: uint(row.get::<_, Option<i64>>(3)?.unwrap_or(0)),
                    last_seq: uint(row.get(4)?),
                    last_ms: row.get::<_, Option<i64>>(5)?.map(uint),
                    last_denial: row.get::<_, Option<i64>>(6)?.map(uint),
                })
            })?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        })()
        .map_err(|e| ReadError::from(self.failed("count the sessions' records", e)))
    }
}
