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
    /// The newest record of the session (by time, chain, seq): its number in its chain.
    pub last_seq: u64,
    /// When it was written (unix milliseconds), if its time parses.
    pub last_ms: Option<u64>,
    /// The newest of its records that decided `deny` (a tool call, or a gate such as a completion):
    /// its number in its chain, and the chain (`Index::get_in`).
    pub last_denial: Option<u64>,
    pub last_denial_chain: Option<String>,
}

/// How often an agent called a tool, by the ledger's `PreToolUse` records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCalls {
    pub agent: Option<String>,
    pub tool: String,
    pub calls: u64,
    pub denied: u64,
    /// The newest of those records: its number in its chain.
    pub last_seq: u64,
}

impl Index {
    /// Every tool called, per agent, from the `PreToolUse` records indexed (one aggregate query;
    /// `chokepoint doctor` reads it once). Call [`Index::catch_up`] first.
    pub fn tools_called(&self) -> Result<Vec<ToolCalls>, ReadError> {
        let sql = "SELECT agent, tool, COUNT(*), SUM(decision = 'deny'),
                          (SELECT n.seq FROM records n
                           WHERE n.event = 'PreToolUse' AND n.tool = r.tool AND n.agent IS r.agent
                           ORDER BY n.time_ms DESC, n.chain DESC, n.seq DESC LIMIT 1)
                   FROM records r
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
        // Records of several chains (merged branches) interleave: the newest is the newest by time,
        // then chain and seq, as every query of the index orders them. The last denial is one of the
        // denied tool calls counted beside it (a person reads "denied 1" and the denial as one).
        let sql = "SELECT r.session,
                          COUNT(*),
                          SUM(r.kind = 'tool_call' AND r.event = 'PreToolUse' AND r.decision = 'allow'),
                          SUM(r.kind = 'tool_call' AND r.event = 'PreToolUse' AND r.decision = 'deny'),
                          (SELECT n.seq FROM records n WHERE n.session = r.session AND n.time_ms >= ?1
                           ORDER BY n.time_ms DESC, n.chain DESC, n.seq DESC LIMIT 1),
                          MAX(r.time_ms),
                          d.seq,
                          d.chain
                   FROM records r
                   LEFT JOIN records d ON d.id = (SELECT n.id FROM records n
                                                  WHERE n.session = r.session AND n.time_ms >= ?1 AND n.kind = 'tool_call'
                                                  AND n.event = 'PreToolUse' AND n.decision = 'deny'
                                                  ORDER BY n.time_ms DESC, n.chain DESC, n.seq DESC LIMIT 1)
                   WHERE r.time_ms >= ?1 AND r.session IS NOT NULL
                   GROUP BY r.session
                   ORDER BY MAX(r.time_ms) DESC, MAX(r.id) DESC
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
                    last_denial_chain: row.get(7)?,
                })
            })?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        })()
        .map_err(|e| ReadError::from(self.failed("count the sessions' records", e)))
    }
}
