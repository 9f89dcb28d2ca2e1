//! The trace ledger as the sidebar reads it: recent records through the index, blame of a line, and
//! `flushTrace` for a caller that must know everything queued is durable; with a team's database,
//! every machine's records (`traceTeam`) and how the copy there fares (`teamCopyStatus`). The
//! exports: `traceRecent`, `traceCount`, `traceRecord`, `traceImage` (a file's text by its SHA-256,
//! from `ledger::images`; `null` when not kept), `traceBlame`, `flushTrace`.

use crate::Engine;
use crate::errors::{Code, Result, as_error, error, invalid};
use chokepoint_core as core;
use napi_derive::napi;

/// Which trace records `Engine.traceRecent` returns; every field set must match.
#[napi(object, js_name = "TraceFilter")]
pub struct JsTraceFilter {
    pub intent: Option<String>,
    /// A workspace-relative path, or a glob (`src/**/*.ts`): the records that wrote a matching file.
    pub file: Option<String>,
    pub session: Option<String>,
    /// Records at or after this time: RFC 3339, a date, or unix milliseconds as a string.
    pub since: Option<String>,
    /// At most this many, the newest; all when absent.
    pub limit: Option<u32>,
}

impl JsTraceFilter {
    /// The core filter, newest first (as a log is read).
    fn into_core(filter: Option<JsTraceFilter>) -> core::ledger::index::Filter {
        let f = filter.unwrap_or(JsTraceFilter { intent: None, file: None, session: None, since: None, limit: None });
        core::ledger::index::Filter {
            intent: f.intent,
            file: f.file,
            session: f.session,
            since: f.since,
            kind: None,
            limit: f.limit.map(|l| l as usize),
            newest_first: true,
        }
    }
}

/// Lines `start..=end` (1-based) a write put in a file.
#[napi(object, js_name = "TraceRange")]
pub struct JsTraceRange {
    pub start: u32,
    pub end: u32,
}

#[napi(object, js_name = "TraceFile")]
pub struct JsTraceFile {
    /// Workspace-relative, `/`-separated.
    pub path: String,
    /// Empty when the write's ranges are unknown or it deleted lines only.
    pub ranges: Vec<JsTraceRange>,
    /// SHA-256 (hex) of the file after the write; absent when the write deleted it.
    pub sha256: Option<String>,
    /// SHA-256 (hex) of the file before the write (of the empty text for a file it created); absent
    /// when it was not read, and in records written before it was kept. With `sha256`, what
    /// `traceImage` shows a diff of.
    pub before_sha256: Option<String>,
}

/// One record of the trace ledger, as the sidebar lists it.
#[napi(object, js_name = "TraceEntry")]
pub struct JsTraceEntry {
    pub seq: f64,
    /// RFC 3339 UTC with milliseconds.
    pub time: String,
    #[napi(ts_type = "RecordKindName")]
    pub kind: String,
    pub event: Option<String>,
    pub tool: Option<String>,
    pub session: Option<String>,
    pub agent: Option<String>,
    pub model: Option<String>,
    pub intent: Option<String>,
    /// A judged event's decision (`allow`, `deny`, `ask`), or an approval's outcome (its status).
    pub decision: Option<String>,
    pub reason: Option<String>,
    pub files: Vec<JsTraceFile>,
    /// The chain holding it: with `seq`, what names it (`traceRecord`). Absent in the team's
    /// entries, which carry their chain beside them.
    pub chain: Option<String>,
    /// What names the tool call it is about, alike in its `PreToolUse` and `PostToolUse` records
    /// (the first 16 hex digits of its input's SHA-256), so a list can show the two as one call.
    pub call: Option<String>,
    /// A contained command's writes that containment refused or undid (their paths): a command
    /// with any was stopped, in part, by the gate. Empty for every other record.
    pub refused: Vec<String>,
    /// The paths a judged call named (`PreToolUse`: workspace-relative where they resolved, as
    /// given where they did not), which its `files` (written lines) do not hold before it ran.
    pub paths: Vec<String>,
}

/// One record whole, as a person opens it from the trace: where it is in the ledger and its JSON.
#[napi(object, js_name = "TraceRecord")]
pub struct JsTraceRecord {
    pub chain: String,
    pub seq: f64,
    /// The byte offset of its line in the chain's file (`.orchestration/trace/<chain>.jsonl`).
    pub offset: f64,
    /// The SHA-256 (hex) of its line: the next record's `prev`.
    pub line_hash: String,
    /// The record as the ledger holds it, indented.
    pub json: String,
}

// A list entry is a view of a record, not a copy: the conversions take the core's structs apart by
// every field, binding what the list does not show to `_` by name, so a field the core adds is a
// compile error here until someone decides whether the sidebar shows it.
impl From<core::ledger::Record> for JsTraceEntry {
    fn from(r: core::ledger::Record) -> Self {
        let refused = r.refused_writes();
        let paths = core::engine::trace::RecordedCall::from_record(&r).map_or_else(Vec::new, |call| match call.writes {
            Some(writes) if !writes.is_empty() => writes.into_iter().map(|w| w.canonical.unwrap_or(w.raw)).collect(),
            _ => call.paths,
        });
        let core::ledger::Record {
            v: _,
            seq,
            time,
            prev: _,
            kind,
            event,
            session,
            agent,
            task: _,
            plan: _,
            turn: _,
            intent,
            tool,
            input_sha256,
            decision,
            files,
            model,
            // What it holds depends on the kind; `traceRecord` shows it whole.
            data: _,
        } = r;
        let (decision, reason) = decision.map_or((None, None), |d| {
            let core::ledger::RecordedDecision { decision, reason, hooks: _ } = d;
            (Some(decision), reason)
        });
        JsTraceEntry {
            chain: None,
            call: input_sha256.as_deref().map(|h| h.chars().take(16).collect()),
            refused,
            paths,
            seq: seq as f64,
            time,
            kind: kind.as_str().to_owned(),
            event,
            tool,
            session,
            agent,
            model,
            intent,
            decision,
            reason,
            files: files.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<core::ledger::FileChange> for JsTraceFile {
    fn from(f: core::ledger::FileChange) -> Self {
        let core::ledger::FileChange { path, sha256, before_sha256, ranges } = f;
        JsTraceFile { path, ranges: ranges.into_iter().map(Into::into).collect(), sha256, before_sha256 }
    }
}

impl From<core::ledger::LineRange> for JsTraceRange {
    fn from(r: core::ledger::LineRange) -> Self {
        // The digests are for finding the lines again (`ledger::ranges`), not for a list.
        let core::ledger::LineRange { start, end, sha256: _, line_digests: _ } = r;
        JsTraceRange { start, end }
    }
}

/// Which of the team's records `Engine.traceTeam` returns; every field set must match.
#[napi(object, js_name = "TeamTraceFilter")]
pub struct JsTeamTraceFilter {
    pub intent: Option<String>,
    pub session: Option<String>,
    /// Records at or after this time: RFC 3339, a date, or unix milliseconds as a string.
    pub since: Option<String>,
    /// At most this many, the newest; all when absent.
    pub limit: Option<u32>,
}

/// One record of the team's trace and where it was written.
#[napi(object, js_name = "TeamTraceEntry")]
pub struct JsTeamTraceEntry {
    /// `CHOKEPOINT_MACHINE`, or the host name, of the machine that wrote it.
    pub machine: String,
    /// The name of the worktree that wrote it (its root folder's).
    pub worktree: String,
    /// The branch that worktree had checked out when the record was copied.
    pub branch: Option<String>,
    pub chain: String,
    pub record: JsTraceEntry,
}

/// The team's records, oldest first, and whether this worktree's own could all be copied first.
#[napi(object, js_name = "TeamTrace")]
pub struct JsTeamTrace {
    pub entries: Vec<JsTeamTraceEntry>,
    /// Why some of this worktree's records are not in the team's database yet (they are listed once
    /// a later copy succeeds).
    pub copy_error: Option<String>,
}

/// How the copy of this worktree's ledger to the team's database fares.
#[napi(object, js_name = "TeamCopyStatus")]
pub struct JsTeamCopyStatus {
    /// The team's database, as messages name it (no password).
    pub database: String,
    /// This machine's name in the team's records.
    pub machine: String,
    /// Records this engine copied since it began.
    pub copied: f64,
    /// Durable records of this worktree the database lacked after the last attempt.
    pub waiting: f64,
    /// The last attempt's failure; absent once an attempt copied everything.
    pub last_error: Option<String>,
    /// When the last attempt ended, unix milliseconds; 0 before the first.
    pub last_attempt_ms: f64,
}

/// The record whose write holds a line now.
#[napi(object, js_name = "BlameOrigin")]
pub struct JsBlameOrigin {
    pub seq: f64,
    pub time: String,
    pub intent: Option<String>,
    pub session: Option<String>,
    pub agent: Option<String>,
    pub model: Option<String>,
    pub tool: Option<String>,
}

/// One line of a file as it is on disk now, and the recorded write that explains it.
#[napi(object, js_name = "BlameResult")]
pub struct JsBlameResult {
    /// 1-based.
    pub line: u32,
    pub text: String,
    /// Absent when no recorded write explains the line (typed by hand, or written outside the
    /// chokepoint, or edited since).
    pub origin: Option<JsBlameOrigin>,
}

impl From<core::ledger::blame::BlameLine> for JsBlameResult {
    fn from(l: core::ledger::blame::BlameLine) -> Self {
        JsBlameResult {
            line: l.line,
            text: l.text,
            origin: l.origin.map(|o| JsBlameOrigin {
                seq: o.seq as f64,
                time: o.time,
                intent: o.intent,
                session: o.session,
                agent: o.agent,
                model: o.model,
                tool: o.tool,
            }),
        }
    }
}

/// A 1-based line number from JavaScript, where a number can be negative, fractional or huge.
fn line_number(line: f64) -> Result<u32> {
    if line.fract() == 0.0 && line >= 1.0 && line <= f64::from(u32::MAX) {
        Ok(line as u32)
    } else {
        Err(invalid(format!("`{line}` is not a line number (they start at 1)")))
    }
}

#[napi]
impl Engine {
    /// The trace ledger's records that match `filter`, newest first, read through its index (brought
    /// up to date with the ledger first, so every durable record is there, whichever process wrote
    /// it). An ungoverned workspace has none. Throws (`ELEDGER`) when the index cannot be read or
    /// `since` is not a time.
    #[napi(catch_unwind)]
    pub fn trace_recent(&self, filter: Option<JsTraceFilter>) -> Result<Vec<JsTraceEntry>> {
        let records = self.inner.tracer().query_indexed(&JsTraceFilter::into_core(filter)).map_err(as_error(Code::Ledger))?;
        Ok(records.into_iter().map(|found| JsTraceEntry { chain: Some(found.chain), ..found.record.into() }).collect())
    }

    /// How many records match `filter` (its `limit` aside): the "of M" of "the newest N of M".
    #[napi(catch_unwind)]
    pub fn trace_count(&self, filter: Option<JsTraceFilter>) -> Result<f64> {
        let count = self.inner.tracer().count(&JsTraceFilter::into_core(filter)).map_err(as_error(Code::Ledger))?;
        Ok(count as f64)
    }

    /// The record `seq` of `chain` whole, or `null` when the ledger has none such.
    #[napi(catch_unwind)]
    pub fn trace_record(&self, chain: String, seq: f64) -> Result<Option<JsTraceRecord>> {
        if !(seq >= 1.0 && seq.fract() == 0.0) {
            return Err(invalid(format!("a record's seq is a whole number from 1, not {seq}")));
        }
        let found = self.inner.tracer().record(&chain, seq as u64).map_err(as_error(Code::Ledger))?;
        found
            .map(|found| {
                let json = serde_json::to_string_pretty(&found.record).map_err(|e| error(Code::Ledger, e.to_string()))?;
                Ok(JsTraceRecord {
                    chain: found.chain,
                    seq: found.seq as f64,
                    offset: found.offset as f64,
                    line_hash: found.line_hash,
                    json,
                })
            })
            .transpose()
    }

    /// The text of a written file whose SHA-256 is `sha256` (a trace file's `sha256` or
    /// `beforeSha256`), as this workspace's image store kept it for diffs; `null` when it was never
    /// kept or was pruned since (the ledger keeps hashes only).
    #[napi(catch_unwind)]
    pub fn trace_image(&self, sha256: String) -> Option<String> {
        self.inner.tracer().image(&sha256)
    }

    /// Every machine's and worktree's records in the team's database (hooks.yaml's
    /// `coordination.url`, or `CHOKEPOINT_COORDINATION_URL`) that match `filter`, oldest first (the
    /// newest `limit`), after this worktree's pending records were copied there. Throws (`EINVAL`)
    /// without a team database or for a `since` that is not a time, (`ELEDGER`) when the database
    /// cannot be reached or read.
    #[napi(catch_unwind)]
    pub fn trace_team(&self, filter: Option<JsTeamTraceFilter>) -> Result<JsTeamTrace> {
        let f = filter.unwrap_or(JsTeamTraceFilter { intent: None, session: None, since: None, limit: None });
        let since_ms = f.since.as_deref().map(core::ledger::index::parse_time).transpose().map_err(|e| invalid(e.to_string()))?;
        let filter =
            core::ledger::team_query::TeamFilter { intent: f.intent, session: f.session, since_ms, limit: f.limit.map(|l| l as usize) };
        let trace = self.inner.tracer().team_trace(&filter).map_err(|e| match e {
            core::engine::trace::TeamTraceError::NotConfigured => invalid(e.to_string()),
            other => error(Code::Ledger, other.to_string()),
        })?;
        Ok(JsTeamTrace {
            entries: trace
                .records
                .into_iter()
                .map(|r| JsTeamTraceEntry {
                    machine: r.machine,
                    worktree: r.worktree,
                    branch: r.branch,
                    chain: r.chain,
                    record: r.record.into(),
                })
                .collect(),
            copy_error: trace.copy.err().map(|e| e.to_string()),
        })
    }

    /// How the copy of this worktree's ledger to the team's database fares; `null` when the engine
    /// has no team database (then the team's trace cannot be listed either).
    #[napi(catch_unwind)]
    pub fn team_copy_status(&self) -> Option<JsTeamCopyStatus> {
        let copy = self.inner.tracer().team_copy()?;
        let status = copy.status();
        Some(JsTeamCopyStatus {
            database: copy.db().shown().to_owned(),
            machine: copy.db().machine().to_owned(),
            copied: status.copied as f64,
            waiting: status.waiting as f64,
            last_error: status.last_error.map(|e| e.to_string()),
            last_attempt_ms: status.last_attempt_ms as f64,
        })
    }

    /// Which recorded write last put line `line` (1-based) of `path` (workspace-relative,
    /// `/`-separated) as it is on disk now, found by content even after lines moved. Throws for a
    /// path outside the workspace, a file that cannot be read, a line past its end, or an ungoverned
    /// workspace.
    #[napi(catch_unwind)]
    pub fn trace_blame(&self, path: String, line: f64) -> Result<JsBlameResult> {
        let line = line_number(line)?;
        let mut lines = self.inner.tracer().blame(&path, Some(line)).map_err(as_error(Code::Ledger))?;
        lines.pop().map(Into::into).ok_or_else(|| error(Code::Ledger, format!("blame of {path}:{line} returned no line")))
    }

    /// Waits until every record queued so far (by the synchronous `evaluate`) is durable in the
    /// ledger. Blocks the calling thread for one sync: the runtime does not call it (its approvals
    /// are made durable by `settlePending`). Throws (`ELEDGER`) when the ledger cannot be written.
    #[napi(catch_unwind)]
    pub fn flush_trace(&self) -> Result<()> {
        self.inner.tracer().flush().map_err(as_error(Code::Ledger))
    }
}
