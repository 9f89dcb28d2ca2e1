//! The ledger's writes as Agent Trace v0.1 (the open spec for attributing code to agents): one trace
//! record per ledger record that wrote files, so other tools can read who wrote which lines.
//!
//! How our fields map onto the spec's:
//!
//! - `version`: `"0.1"`. `id`: a UUID derived from the record's line hash (the first 128 bits, with
//!   the version nibble set to 8, "custom", and the RFC 9562 variant bits), so exporting the same
//!   ledger twice gives the same ids and a consumer can deduplicate. `timestamp`: the record's time
//!   (RFC 3339).
//! - `files[].path`: the workspace-relative path. One conversation per file: the record is one tool
//!   call, by one contributor. `contributor.type` is `ai` for our records and `human` for an
//!   `external` one (a commit or an edit reported through `chokepoint trace record`);
//!   `contributor.model_id` is the record's model when known.
//! - `ranges[]`: `start_line`, `end_line` as recorded (1-based, inclusive, in the file as the write
//!   left it) and `content_hash` spelt `sha256:<hex>`: SHA-256 of the range's lines joined with `\n`,
//!   without their terminators and without a final newline (`ranges::range_hash`).
//! - `tool.name`: the spec's tool is the one that produced the code (the coding agent), so it is the
//!   record's `agent`; the tool *call* (`write_to_file`) goes in the metadata. No `tool` when the
//!   agent is unknown.
//! - `metadata.chokepoint`: our intent, session, task, seq, tool call and line hash, the links back
//!   into the ledger the spec has no field for.
//! - No `vcs`: the ledger does not know which revision a write landed on.
//!
//! Left out: records that wrote no file, denied writes (they changed nothing), and files a write left
//! with no range (deleted, or lines only removed): the spec attributes lines that exist, and those
//! have none.

use serde::Serialize;

use super::record::{Record, RecordKind, line_hash};

/// The Agent Trace version this writes.
pub const AGENT_TRACE_VERSION: &str = "0.1";

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TraceRecord {
    pub version: String,
    pub id: String,
    pub timestamp: String,
    pub files: Vec<TraceFile>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<TraceTool>,
    pub metadata: TraceMetadata,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TraceFile {
    pub path: String,
    pub conversations: Vec<Conversation>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Conversation {
    pub contributor: Contributor,
    pub ranges: Vec<TraceRange>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Contributor {
    /// `ai` or `human` (the spec also has `mixed` and `unknown`, which a single write never is).
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TraceRange {
    pub start_line: u32,
    pub end_line: u32,
    /// `sha256:<hex>`.
    pub content_hash: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TraceTool {
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TraceMetadata {
    pub chokepoint: ChokepointMetadata,
}

/// The links back into the ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChokepointMetadata {
    pub seq: u64,
    /// SHA-256 of the ledger line: the record, exactly.
    pub line_hash: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub intent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// The tool call that wrote (`write_to_file`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call: Option<String>,
}

/// The trace records of `records` (in their order), one per record that wrote files.
pub fn agent_trace(records: impl IntoIterator<Item = Record>) -> Vec<TraceRecord> {
    records.into_iter().filter_map(|record| trace_record(&record)).collect()
}

/// The trace record of one ledger record; `None` if it wrote nothing attributable.
pub fn trace_record(record: &Record) -> Option<TraceRecord> {
    if record.decision.as_ref().is_some_and(|d| d.decision == "deny") {
        return None;
    }
    let contributor =
        Contributor { kind: if record.kind == RecordKind::External { "human" } else { "ai" }.to_owned(), model_id: record.model.clone() };
    let files: Vec<TraceFile> = record
        .files
        .iter()
        .filter(|file| !file.ranges.is_empty())
        .map(|file| TraceFile {
            path: file.path.clone(),
            conversations: vec![Conversation {
                contributor: contributor.clone(),
                ranges: file
                    .ranges
                    .iter()
                    .map(|r| TraceRange { start_line: r.start, end_line: r.end, content_hash: format!("sha256:{}", r.sha256) })
                    .collect(),
            }],
        })
        .collect();
    if files.is_empty() {
        return None;
    }
    let hash = line_hash(&record.to_line());
    Some(TraceRecord {
        version: AGENT_TRACE_VERSION.to_owned(),
        id: uuid_from_hash(&hash),
        timestamp: record.time.clone(),
        files,
        tool: record.agent.clone().map(|name| TraceTool { name }),
        metadata: TraceMetadata {
            chokepoint: ChokepointMetadata {
                seq: record.seq,
                line_hash: hash,
                intent: record.intent.clone(),
                session: record.session.clone(),
                task: record.task.clone(),
                tool_call: record.tool.clone(),
            },
        },
    })
}

/// A UUID (version 8, RFC 9562 variant) made of the first 128 bits of a hex SHA-256.
fn uuid_from_hash(hex: &str) -> String {
    let mut digits: Vec<char> = hex.chars().take(32).collect();
    digits.resize(32, '0');
    digits[12] = '8';
    // The variant: the top two bits of this nibble are 10.
    let nibble = digits[16].to_digit(16).unwrap_or(0);
    digits[16] = char::from_digit((nibble & 0x3) | 0x8, 16).unwrap_or('8');
    let s: String = digits.into_iter().collect();
    format!("{}-{}-{}-{}-{}", &s[0..8], &s[8..12], &s[12..16], &s[16..20], &s[20..32])
}

/// Checks `value` against the fields of Agent Trace v0.1's trace record: every problem found, as
/// `path: what is wrong`. Hand-written from the spec's field list rather than a JSON Schema crate
/// (which the core does not otherwise need); used by the tests, and by anyone who wants to check an
/// export (or someone else's trace) before sharing it.
pub fn check_trace_record(value: &serde_json::Value) -> Vec<String> {
    use serde_json::Value;
    let mut problems = Vec::new();
    let mut problem = |at: &str, what: &str| problems.push(format!("{at}: {what}"));
    let Some(top) = value.as_object() else {
        problem("record", "not an object");
        return problems;
    };
    for key in top.keys() {
        if !["version", "id", "timestamp", "files", "vcs", "tool", "metadata"].contains(&key.as_str()) {
            problem(key, "not a field of a trace record");
        }
    }
    match top.get("version").and_then(Value::as_str) {
        Some(v) if is_version(v) => {}
        _ => problem("version", "missing, or not a version such as 0.1"),
    }
    match top.get("id").and_then(Value::as_str) {
        Some(id) if is_uuid(id) => {}
        _ => problem("id", "missing, or not a UUID"),
    }
    match top.get("timestamp").and_then(Value::as_str) {
        Some(t) if super::index::parse_time(t).is_ok() && t.contains(['T', 't']) => {}
        _ => problem("timestamp", "missing, or not an RFC 3339 date-time"),
    }
    if let Some(vcs) = top.get("vcs") {
        let kind = vcs.get("type").and_then(Value::as_str);
        if !matches!(kind, Some("git" | "jj" | "hg" | "svn")) || !vcs.get("revision").is_some_and(Value::is_string) {
            problem("vcs", "needs a type (git, jj, hg, svn) and a revision");
        }
    }
    if let Some(tool) = top.get("tool")
        && !tool.get("name").is_some_and(Value::is_string)
    {
        problem("tool", "needs a name");
    }
    if top.get("metadata").is_some_and(|m| !m.is_object()) {
        problem("metadata", "not an object");
    }
    let Some(files) = top.get("files").and_then(Value::as_array) else {
        problem("files", "missing, or not an array");
        return problems;
    };
    for (f, file) in files.iter().enumerate() {
        let at = format!("files[{f}]");
        if file.get("path").and_then(Value::as_str).is_none_or(str::is_empty) {
            problem(&format!("{at}.path"), "missing or empty");
        }
        let Some(conversations) = file.get("conversations").and_then(Value::as_array) else {
            problem(&format!("{at}.conversations"), "missing, or not an array");
            continue;
        };
        for (c, conversation) in conversations.iter().enumerate() {
            let at = format!("{at}.conversations[{c}]");
            if let Some(contributor) = conversation.get("contributor") {
                let kind = contributor.get("type").and_then(Value::as_str);
                if !matches!(kind, Some("human" | "ai" | "mixed" | "unknown")) {
                    problem(&format!("{at}.contributor.type"), "not one of human, ai, mixed, unknown");
                }
                if contributor.get("model_id").is_some_and(|m| !m.is_string()) {
                    problem(&format!("{at}.contributor.model_id"), "not a string");
                }
            }
            let Some(ranges) = conversation.get("ranges").and_then(Value::as_array) else {
                problem(&format!("{at}.ranges"), "missing, or not an array");
                continue;
            };
            for (r, range) in ranges.iter().enumerate() {
                let at = format!("{at}.ranges[{r}]");
                let start = range.get("start_line").and_then(Value::as_u64);
                let end = range.get("end_line").and_then(Value::as_u64);
                match (start, end) {
                    (Some(start), Some(end)) if start >= 1 && end >= start => {}
                    _ => problem(&at, "needs integer start_line >= 1 and end_line >= start_line"),
                }
                if range.get("content_hash").is_some_and(|h| !h.is_string()) {
                    problem(&format!("{at}.content_hash"), "not a string");
                }
            }
        }
    }
    problems
}

fn is_version(v: &str) -> bool {
    let parts: Vec<&str> = v.split('.').collect();
    (2..=3).contains(&parts.len()) && parts.iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

fn is_uuid(id: &str) -> bool {
    let groups: Vec<&str> = id.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12]) && groups.iter().all(|g| g.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::ranges::file_change;
    use crate::ledger::record::{FileChange, GENESIS, LineRange, RecordedDecision};

    fn write(seq: u64, files: Vec<FileChange>) -> Record {
        let mut r = Record::new(RecordKind::ToolCall);
        r.seq = seq;
        r.time = "2026-11-22T05:00:00.000Z".into();
        r.prev = GENESIS.into();
        r.tool = Some("write_to_file".into());
        r.agent = Some("claude-code".into());
        r.model = Some("claude-opus-4".into());
        r.intent = Some("INT-1".into());
        r.session = Some("s-1".into());
        r.files = files;
        r
    }

    #[test]
    fn a_write_becomes_a_trace_record_with_the_specs_fields() {
        let record = write(3, vec![file_change("src/a.rs", Some("a\nb\n"), Some("a\nB\nc\n"))]);
        let traces = agent_trace([record.clone()]);
        assert_eq!(traces.len(), 1);
        let value = serde_json::to_value(&traces[0]).unwrap();
        assert_eq!(check_trace_record(&value), Vec::<String>::new(), "{value:#}");
        assert_eq!(value["version"], "0.1");
        assert_eq!(value["timestamp"], "2026-11-22T05:00:00.000Z");
        assert_eq!(value["tool"]["name"], "claude-code");
        let conversation = &value["files"][0]["conversations"][0];
        assert_eq!(value["files"][0]["path"], "src/a.rs");
        assert_eq!(conversation["contributor"], serde_json::json!({ "type": "ai", "model_id": "claude-opus-4" }));
        let range = &record.files[0].ranges[0];
        assert_eq!(
            conversation["ranges"],
            serde_json::json!([{ "start_line": 2, "end_line": 3, "content_hash": format!("sha256:{}", range.sha256) }])
        );
        assert_eq!(value["metadata"]["chokepoint"]["intent"], "INT-1");
        assert_eq!(value["metadata"]["chokepoint"]["seq"], 3);
        assert_eq!(value["metadata"]["chokepoint"]["tool_call"], "write_to_file");
        // Stable: the same record, the same id; another record, another id.
        assert_eq!(agent_trace([record.clone()])[0].id, traces[0].id);
        assert_ne!(agent_trace([write(4, record.files.clone())])[0].id, traces[0].id);
        assert_eq!(&traces[0].id[14..15], "8");
        assert!(matches!(&traces[0].id[19..20], "8" | "9" | "a" | "b"));
    }

    #[test]
    fn only_attributable_writes_are_exported() {
        let lifecycle = Record::new(RecordKind::Lifecycle);
        let deletion = write(2, vec![file_change("gone.rs", Some("x\n"), None)]);
        let mut denied = write(3, vec![file_change("a.rs", None, Some("x\n"))]);
        denied.decision = Some(RecordedDecision { decision: "deny".into(), reason: None, hooks: vec![] });
        let mixed = write(4, vec![file_change("gone.rs", Some("x\n"), None), file_change("b.rs", None, Some("y\n"))]);
        let traces = agent_trace([lifecycle, deletion, denied, mixed]);
        assert_eq!(traces.len(), 1);
        assert_eq!(traces[0].metadata.chokepoint.seq, 4);
        assert_eq!(traces[0].files.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(), ["b.rs"]);
    }

    #[test]
    fn external_records_are_human() {
        let mut record = write(
            1,
            vec![FileChange {
                path: "a.rs".into(),
                sha256: None,
                before_sha256: None,
                ranges: vec![LineRange { start: 1, end: 1, sha256: "0".repeat(64), line_digests: None }],
            }],
        );
        record.kind = RecordKind::External;
        record.model = None;
        record.agent = None;
        let value = serde_json::to_value(&agent_trace([record])[0]).unwrap();
        assert_eq!(value["files"][0]["conversations"][0]["contributor"], serde_json::json!({ "type": "human" }));
        assert!(value.get("tool").is_none());
        assert!(check_trace_record(&value).is_empty());
    }

    #[test]
    fn the_checker_names_what_is_wrong() {
        let bad = serde_json::json!({
            "version": "one", "id": "42", "timestamp": "noon", "extra": 1, "tool": {},
            "files": [{ "path": "", "conversations": [{ "contributor": { "type": "robot" }, "ranges": [{ "start_line": 0, "end_line": 1 }] }] }]
        });
        let problems = check_trace_record(&bad);
        for expected in ["version:", "id:", "timestamp:", "extra:", "tool:", "files[0].path:", ".contributor.type:", ".ranges[0]:"] {
            assert!(problems.iter().any(|p| p.starts_with(expected) || p.contains(expected)), "{expected} in {problems:#?}");
        }
        assert!(check_trace_record(&serde_json::json!([])).iter().any(|p| p.contains("not an object")));
    }
}
