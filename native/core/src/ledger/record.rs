//! One line of a chain of the trace ledger (`.orchestration/trace/<chain>.jsonl`): the record of one
//! action or lifecycle event.
//!
//! The line is the unit of integrity: `prev` is the SHA-256 of the previous line's bytes (without its
//! newline), so editing, inserting, deleting or reordering any line breaks the chain at the next one.
//! The first record's `prev` is [`GENESIS`]. Fields are written in a fixed order (struct order) and
//! absent optional fields are omitted, so a record serialises to the same bytes every time.
//!
//! Spatial independence: a write records, for each changed range, its line numbers *and* the SHA-256
//! of the range's content, so the range can be found again after lines above it moved; and, since
//! version 2, a short digest of each of its lines, so what is left of a range after some of its lines
//! were edited can be found again line by line (`ranges.rs` says how they are made, `blame.rs` how
//! they are matched).
//!
//! Versions: 1, the first, has no line digests; 2 adds [`LineRange::line_digests`]; 3 adds
//! [`FileChange::before_sha256`]. Each adds one optional field and changes nothing else. This engine
//! writes version 3 and reads all three, so a ledger begun by an older engine keeps verifying (the
//! chain hashes lines as they are, whatever their version) and its ranges are still blamed, by their
//! range hash alone when they have no line digests. A record that carries a field its version does
//! not have was written by no engine and is refused ([`Record::field_beyond_version`]). The version
//! is bumped for every added field, optional or not, because records are `deny_unknown_fields`: an
//! older engine reading a newer record must say "version 3 is not supported", not "unknown field".
//! **Every record version ever written stays readable**; the version is the record's `v`, described
//! by `.orchestration/schema/agent_trace.schema.json`. A line digest (version 2 on) is 32 bits, for
//! at most `ranges::MAX_DIGESTED_LINES` (2,048) lines per file per write.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The schema version of the records this engine writes. A reader refuses versions it does not know
/// ([`READABLE_VERSIONS`]).
pub const RECORD_VERSION: u32 = 3;

/// The versions this engine reads: every version it ever wrote.
pub const READABLE_VERSIONS: std::ops::RangeInclusive<u32> = 1..=RECORD_VERSION;

/// The version that added [`LineRange::line_digests`].
pub(crate) const LINE_DIGESTS_SINCE: u32 = 2;

/// The version that added [`FileChange::before_sha256`].
pub(crate) const BEFORE_SHA256_SINCE: u32 = 3;

/// The `prev` of the first record.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// What a record is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RecordKind {
    /// A tool call that reached the chokepoint, allowed or not.
    ToolCall,
    /// A lifecycle event (session, plan, task, turn, compaction, submit).
    Lifecycle,
    /// A Pending (an ask) and how it was answered.
    Approval,
    /// A shell command run contained, with what containment did.
    Containment,
    /// An event of someone else's (a CI run, a human commit), through `chokepoint trace record`.
    External,
}

crate::base::names::names!(RecordKind {
    Self::ToolCall => "tool_call",
    Self::Lifecycle => "lifecycle",
    Self::Approval => "approval",
    Self::Containment => "containment",
    Self::External => "external",
});

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// The version of this schema the record follows: 1 (no line digests), 2 (line digests, no
    /// before-hashes) or 3 ([`RECORD_VERSION`]).
    #[schemars(range(min = 1, max = RECORD_VERSION))]
    pub v: u32,
    /// 1 for the first record, then +1 per line: a gap or a repeat is tampering.
    pub seq: u64,
    /// RFC 3339 UTC with milliseconds (`clock::format_utc`).
    pub time: String,
    /// SHA-256 (hex) of the previous line's bytes; [`GENESIS`] for the first record.
    pub prev: String,
    pub kind: RecordKind,
    /// The canonical event name (`PreToolUse`, `SessionStart`, ...) when the record is about one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<String>,
    /// The intent the session held when it acted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// SHA-256 (hex) of the tool input as canonical JSON ([`digest_json`]): what was asked, without
    /// keeping file contents in the ledger.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_sha256: Option<String>,
    /// The chain's decision and every hook's outcome, when the record is about a judged event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<RecordedDecision>,
    /// For writes: each file written and the ranges that changed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileChange>,
    /// The model that produced the action, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Anything else the producer attaches (an external event's payload, a containment report; a
    /// `PreToolUse` record's `call`: what a policy replay needs to judge it again, its task type,
    /// named paths, resolved writes and, for the handshake's tools, its input).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordedDecision {
    /// `allow`, `deny` or `ask`; in an `approval` record, the Pending's status (`approved`,
    /// `rejected`, `timed_out`...).
    pub decision: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Every hook that ran, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<RecordedHook>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordedHook {
    pub name: String,
    /// `allow`, `deny`, `ask`, `modify`, `failed_open`, `failed_closed`.
    pub outcome: String,
    pub duration_ns: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileChange {
    /// Workspace-relative, `/`-separated (canonical).
    pub path: String,
    /// SHA-256 (hex) of the whole file after the write; absent when the file was deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Since version 3: SHA-256 (hex) of the whole file before the write, when the engine read it
    /// before the write ran: with `sha256`, what names the two texts a diff of the write shows
    /// (`ledger::images` may keep them; the ledger never depends on it). A file the write created has
    /// the hash of the empty text. Absent when the before-image was not read (a write reported by
    /// another process, a file too large or not text), and in versions 1 and 2, whose records
    /// therefore serialise to the same bytes as ever.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranges: Vec<LineRange>,
}

/// Lines `start..=end` (1-based) of the file after the write, and the SHA-256 of their content
/// (the lines joined with `\n`, without a final newline).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LineRange {
    pub start: u32,
    pub end: u32,
    pub sha256: String,
    /// Since version 2: one digest per line of the range, in order, each the first 8 hex digits (32
    /// bits) of the SHA-256 of the line's text without its terminator, concatenated without separators
    /// (`8 * (end - start + 1)` characters). Absent in version 1, and when the range was too long to
    /// digest within the file's budget (`ranges::MAX_DIGESTED_LINES`): such a range is found by
    /// `sha256` alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(r"^([0-9a-f]{8})*$"))]
    pub line_digests: Option<String>,
}

impl Record {
    /// For a contained command's record (`engine::trace::containment_record`): the paths whose writes
    /// containment refused (outside the scope) or did not apply (undone, with why), as its `data`
    /// lists them; empty for any other record. A command with any is one a gate stopped, in part.
    pub fn refused_writes(&self) -> Vec<String> {
        if self.kind != RecordKind::Containment {
            return Vec::new();
        }
        let Some(data) = &self.data else { return Vec::new() };
        ["refused", "not_applied"]
            .iter()
            .filter_map(|key| data.get(key)?.as_array())
            .flatten()
            .filter_map(|change| change.get("path")?.as_str().map(str::to_owned))
            .collect()
    }

    /// A record of `kind` with every optional field empty; `seq`, `time` and `prev` are set by the
    /// writer when it appends.
    pub fn new(kind: RecordKind) -> Record {
        Record {
            v: RECORD_VERSION,
            seq: 0,
            time: String::new(),
            prev: String::new(),
            kind,
            event: None,
            session: None,
            agent: None,
            task: None,
            plan: None,
            turn: None,
            intent: None,
            tool: None,
            input_sha256: None,
            decision: None,
            files: Vec::new(),
            model: None,
            data: None,
        }
    }

    /// The line this record is written as (no newline). Deterministic: struct field order, no
    /// whitespace.
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).expect("a record always serialises")
    }

    /// The line without its chain fields: what follows `{"v":3,"seq":…,"time":"…","prev":"…",`.
    /// Clears the chain fields (the writer sets them). Producers serialise this on their own thread, so
    /// that the writer, which alone can fill in the chain and must do so one record after another,
    /// only splices and hashes ([`chained_line`]).
    pub(crate) fn take_body(&mut self) -> String {
        self.v = RECORD_VERSION;
        self.seq = 0;
        self.time.clear();
        self.prev.clear();
        let mut line = self.to_line();
        assert!(line.starts_with(BLANK_PREFIX), "the chain fields lead a record's line: {line}");
        line.drain(..BLANK_PREFIX.len());
        line
    }

    /// Reads one line; `Err` says what is wrong with it (for `verify` and recovery).
    pub fn from_line(line: &str) -> Result<Record, ReadError> {
        let record: Record = serde_json::from_str(line).map_err(|e| format!("not a record: {e}"))?;
        if !READABLE_VERSIONS.contains(&record.v) {
            return Err(format!(
                "record version {} is not supported; this engine reads versions {} to {}",
                record.v,
                READABLE_VERSIONS.start(),
                READABLE_VERSIONS.end()
            )
            .into());
        }
        if let Some(field) = record.field_beyond_version() {
            return Err(format!("not a record: a version {} record has no {field}", record.v).into());
        }
        Ok(record)
    }

    /// A field this record carries that its version does not have (no engine writes one), if any.
    /// `verify.rs`'s mirror makes the same check (`RecordView::readable`); a field added in a new
    /// version is added to both.
    fn field_beyond_version(&self) -> Option<&'static str> {
        if self.v < BEFORE_SHA256_SINCE && self.files.iter().any(|f| f.before_sha256.is_some()) {
            return Some("before_sha256");
        }
        if self.v < LINE_DIGESTS_SINCE && self.files.iter().flat_map(|f| &f.ranges).any(|r| r.line_digests.is_some()) {
            return Some("line_digests");
        }
        None
    }
}

/// How a record with blank chain fields begins; [`Record::take_body`] cuts it off.
const BLANK_PREFIX: &str = r#"{"v":3,"seq":0,"time":"","prev":"","#;

/// Appends to `out` the line of the record whose body is `body` and whose chain fields are `seq`,
/// `time` and `prev`: the same bytes as [`Record::to_line`] of that record (pinned by a test). `time`
/// and `prev` are the writer's own (a UTC time and a hex digest) and need no escaping.
pub(crate) fn chained_line(out: &mut Vec<u8>, seq: u64, time: &str, prev: &str, body: &str) {
    use std::io::Write;
    debug_assert!(!time.contains(['"', '\\']) && !prev.contains(['"', '\\']));
    write!(out, r#"{{"v":{RECORD_VERSION},"seq":{seq},"time":"{time}","prev":"{prev}","#).expect("writing to a Vec");
    out.extend_from_slice(body.as_bytes());
}

/// SHA-256 of bytes, as lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lower-case hex of a digest.
fn hex(digest: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(digest.len() * 2);
    for &b in digest {
        // Not `format!` per byte: this runs for every ledger line and every range.
        out.push(HEX[(b >> 4) as usize] as char);
        out.push(HEX[(b & 0xf) as usize] as char);
    }
    out
}

/// The hash a line is chained by: SHA-256 of its bytes without the newline.
pub fn line_hash(line: &str) -> String {
    sha256_hex(line.as_bytes())
}

/// SHA-256 of a JSON value in canonical form (object keys sorted, no whitespace), so the same input
/// digests the same whoever serialised it. The canonical text is streamed into the hash, never built:
/// this runs for every judged event's input, on the ledger's writer thread.
pub fn digest_json(value: &serde_json::Value) -> String {
    /// The hash as an `io::Write`, for serde_json to serialise into.
    struct Hashing(Sha256);
    impl std::io::Write for Hashing {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.update(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    /// A scalar or a key, as serde_json writes it (`to_string`), into the hash.
    fn write<T: serde::Serialize + ?Sized>(out: &mut Hashing, v: &T) {
        serde_json::to_writer(out, v).expect("a JSON value serialises into a hash");
    }
    fn canonical(v: &serde_json::Value, out: &mut Hashing) {
        match v {
            serde_json::Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.0.update(b"{");
                for (i, k) in keys.iter().enumerate() {
                    if i > 0 {
                        out.0.update(b",");
                    }
                    write(out, *k);
                    out.0.update(b":");
                    canonical(&map[*k], out);
                }
                out.0.update(b"}");
            }
            serde_json::Value::Array(items) => {
                out.0.update(b"[");
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.0.update(b",");
                    }
                    canonical(item, out);
                }
                out.0.update(b"]");
            }
            other => write(out, other),
        }
    }
    let mut hashing = Hashing(Sha256::new());
    canonical(value, &mut hashing);
    let digest = hashing.0.finalize();
    hex(&digest)
}

/// The head of the chain as last written: `count` records, the last of which hashes to `hash`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// The number of records (the `seq` of the last one).
    pub count: u64,
    /// `record::line_hash` of record number `count`; [`GENESIS`] when `count` is 0.
    pub hash: String,
    /// When the head was written, unix milliseconds.
    pub updated_at_ms: u64,
}

/// A record as it was written: its place in the chain and where its line starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Appended {
    pub seq: u64,
    /// `record::line_hash` of its line: the next record's `prev`.
    pub hash: String,
    /// The byte offset of its line in the ledger.
    pub offset: u64,
    /// The record with `v`, `seq`, `time` and `prev` as the writer set them.
    pub record: Record,
}

crate::base::error::domain_error! {
    /// Reading the ledger back failed: its index, a record's line, a time in a filter, blame.
    ReadError
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kinds_name_is_the_one_its_json_has() {
        // The index stores a kind by its name (`as_str`), the ledger's lines by serde, and the
        // binding sends the name: one spelling for all three.
        for name in RecordKind::NAMES {
            let kind: RecordKind = serde_json::from_value(serde_json::Value::from(*name)).unwrap();
            assert_eq!(kind.as_str(), *name);
            assert_eq!(serde_json::to_value(kind).unwrap(), *name);
        }
    }

    #[test]
    fn a_contained_commands_refused_and_undone_writes_are_read_from_its_data() {
        let mut record = Record::new(RecordKind::Containment);
        record.data = Some(serde_json::json!({
            "changed": [{ "path": "src/auth/ok.js", "kind": "modified" }],
            "refused": [{ "path": "src/billing/x.js", "kind": "created" }],
            "not_applied": [{ "path": "src/auth/y.js", "kind": "modified", "conflict": true, "kept": "theirs", "reason": "changed meanwhile" }],
        }));
        assert_eq!(record.refused_writes(), ["src/billing/x.js", "src/auth/y.js"]);
        record.data = Some(serde_json::json!({ "refused": [], "not_applied": [] }));
        assert!(record.refused_writes().is_empty());
        let mut call = Record::new(RecordKind::ToolCall);
        call.data = Some(serde_json::json!({ "refused": [{ "path": "a" }] }));
        assert!(call.refused_writes().is_empty(), "only a contained command's record has them");
    }

    #[test]
    fn a_record_serialises_to_the_same_line_and_back() {
        let mut r = Record::new(RecordKind::ToolCall);
        r.seq = 1;
        r.time = "2026-11-22T05:00:00.000Z".into();
        r.prev = GENESIS.into();
        r.tool = Some("write_to_file".into());
        r.files = vec![FileChange {
            path: "src/a.js".into(),
            sha256: None,
            before_sha256: None,
            ranges: vec![LineRange { start: 1, end: 2, sha256: sha256_hex(b"a\nb"), line_digests: Some("ca9781123e23e816".into()) }],
        }];
        let line = r.to_line();
        assert!(line.starts_with(r#"{"v":3,"seq":1,"time":"2026-11-22T05:00:00.000Z","prev":"0000"#), "{line}");
        assert!(!line.contains("session"), "absent fields are omitted: {line}");
        assert_eq!(Record::from_line(&line).unwrap(), r);
        assert_eq!(Record::from_line(&line).unwrap().to_line(), line);
        assert!(Record::from_line(&line.replace("\"v\":3", "\"v\":9")).unwrap_err().message().contains("version 9"));
        assert!(Record::from_line(&line.replace("\"v\":3", "\"v\":0")).unwrap_err().message().contains("version 0"));
        // With a before-hash, the current version's whole record reads back to the same bytes.
        r.files[0].before_sha256 = Some(sha256_hex(b""));
        let line = r.to_line();
        assert!(line.contains(r#""path":"src/a.js","before_sha256":"e3b0"#), "{line}");
        assert_eq!(Record::from_line(&line).unwrap().to_line(), line);
    }

    #[test]
    fn version_2_records_are_read_as_they_were_written() {
        // A line as the version-2 engine wrote it: line digests, no before-hash.
        let old = r#"{"v":2,"seq":3,"time":"2026-11-22T05:00:00.000Z","prev":"0000000000000000000000000000000000000000000000000000000000000000","kind":"tool_call","files":[{"path":"a.rs","sha256":"ab","ranges":[{"start":1,"end":1,"sha256":"cd","line_digests":"0011aabb"}]}]}"#;
        let record = Record::from_line(old).unwrap();
        assert_eq!((record.v, record.files[0].before_sha256.as_ref()), (2, None));
        assert_eq!(record.to_line(), old);
        // A version-2 record never had a before-hash: one that has is refused, saying which field.
        let forged = old.replace(r#""sha256":"ab","#, r#""sha256":"ab","before_sha256":"ef","#);
        let error = Record::from_line(&forged).unwrap_err();
        assert_eq!(error.message(), "not a record: a version 2 record has no before_sha256");
        assert!(Record::from_line(&forged.replace("\"v\":2", "\"v\":1")).unwrap_err().message().contains("version 1 record has no"));
        assert!(Record::from_line(&forged.replace("\"v\":2", "\"v\":3")).is_ok());
    }

    #[test]
    fn version_1_records_are_read_as_they_were_written() {
        // A line as the version-1 engine wrote it: no line digests.
        let old = r#"{"v":1,"seq":3,"time":"2026-11-22T05:00:00.000Z","prev":"0000000000000000000000000000000000000000000000000000000000000000","kind":"tool_call","files":[{"path":"a.rs","ranges":[{"start":1,"end":2,"sha256":"ab"}]}]}"#;
        let record = Record::from_line(old).unwrap();
        assert_eq!((record.v, record.files[0].ranges[0].line_digests.as_ref()), (1, None));
        // Read back to the same bytes: its line hash, which the next record chains to, is unchanged.
        assert_eq!(record.to_line(), old);
        // A version-1 record never had line digests.
        let forged = old.replace(r#""sha256":"ab"}"#, r#""sha256":"ab","line_digests":"0000000011111111"}"#);
        assert!(Record::from_line(&forged).unwrap_err().message().contains("version 1 record has no line_digests"));
        assert!(Record::from_line(&forged.replace("\"v\":1", "\"v\":2")).is_ok());
        assert!(Record::from_line(&forged.replace("\"v\":1", "\"v\":3")).is_ok());
    }

    #[test]
    fn the_blank_prefix_is_the_current_versions() {
        assert!(BLANK_PREFIX.starts_with(&format!("{{\"v\":{RECORD_VERSION},")));
    }

    #[test]
    fn a_body_spliced_with_its_chain_fields_is_the_records_line() {
        let mut r = Record::new(RecordKind::ToolCall);
        r.tool = Some("write_\"quoted\"_tool".into());
        r.data = Some(serde_json::json!({ "seq": 7, "v": "x" }));
        let body = r.clone().take_body();
        r.seq = 41;
        r.time = "2026-11-22T05:00:00.000Z".into();
        r.prev = sha256_hex(b"previous");
        let mut line = Vec::new();
        chained_line(&mut line, r.seq, &r.time, &r.prev, &body);
        assert_eq!(String::from_utf8(line).unwrap(), r.to_line());
    }

    #[test]
    fn json_digests_do_not_depend_on_key_order() {
        let a = serde_json::json!({ "path": "a", "content": "x", "n": [1, { "b": 1, "a": 2 }] });
        let b = serde_json::json!({ "n": [1, { "a": 2, "b": 1 }], "content": "x", "path": "a" });
        assert_eq!(digest_json(&a), digest_json(&b));
        assert_ne!(digest_json(&a), digest_json(&serde_json::json!({ "path": "b" })));
        assert_eq!(sha256_hex(b""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        // The digest is of the canonical text, whatever builds it: keys sorted, no whitespace, strings
        // escaped as serde_json escapes them (old ledgers were digested so).
        let nested = serde_json::json!({ "b": [1, "x\"y\n", { "d": true, "c": 2.5 }], "a": null });
        assert_eq!(digest_json(&nested), sha256_hex(br#"{"a":null,"b":[1,"x\"y\n",{"c":2.5,"d":true}]}"#));
    }
}
