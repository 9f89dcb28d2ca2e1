//! The trace index, blame and the Agent Trace export against real files and a real SQLite database.
//!
//! The ledgers here are written line by line with `Record::to_line` and chained with `line_hash`, as
//! the writer does, so these tests do not depend on the writer; the workspace's files are written
//! for real and each write recorded with `ranges::file_change` of the content before and after.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::time::Instant;

use chokepoint_core::Sidecar;
use chokepoint_core::base::clock::format_utc;
use chokepoint_core::ledger::blame::{BlameLine, blame};
use chokepoint_core::ledger::chains::LEGACY;
use chokepoint_core::ledger::export::{agent_trace, check_trace_record};
use chokepoint_core::ledger::head;
use chokepoint_core::ledger::index::{Filter, Index, IndexReport, IndexedRecord, reindex};
use chokepoint_core::ledger::ranges::{MAX_DIGESTED_LINES, file_change};
use chokepoint_core::ledger::record::{line_hash, sha256_hex};
use chokepoint_core::ledger::verify::verify;
use chokepoint_core::ledger::writer::Ledger;
use chokepoint_core::ledger::{GENESIS, Record, RecordKind, RecordedDecision};

/// 2026-11-22T00:00:00Z: the first record's time; each record is a second after the previous one.
const T0: u64 = 1_795_305_600_000;

/// A workspace with a sidecar and a ledger written the way the writer writes it.
struct Workspace {
    _dir: tempfile::TempDir,
    sidecar: Sidecar,
    seq: u64,
    prev: String,
    offset: u64,
}

/// Where one appended record went.
struct Appended {
    record: Record,
    hash: String,
    offset: u64,
}

impl Workspace {
    fn new() -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        let sidecar = Sidecar::new(dir.path());
        fs::create_dir(sidecar.dir()).unwrap();
        Workspace { _dir: dir, sidecar, seq: 0, prev: GENESIS.into(), offset: 0 }
    }

    fn root(&self) -> &Path {
        self.sidecar.workspace_root()
    }

    /// Appends `record` as the next line of the chain.
    fn append(&mut self, mut record: Record) -> Appended {
        self.seq += 1;
        record.seq = self.seq;
        record.time = format_utc(T0 + self.seq * 1000);
        record.prev = std::mem::take(&mut self.prev);
        let line = record.to_line();
        let hash = line_hash(&line);
        let mut file = OpenOptions::new().create(true).append(true).open(self.sidecar.trace_ledger()).unwrap();
        file.write_all(format!("{line}\n").as_bytes()).unwrap();
        let offset = self.offset;
        self.offset += line.len() as u64 + 1;
        self.prev = hash.clone();
        Appended { record, hash, offset }
    }

    /// Writes `content` to `path` as an agent would through the chokepoint, and records the write.
    fn agent_writes(&mut self, path: &str, content: &str, session: &str, intent: &str, model: &str) -> Appended {
        let file = self.root().join(path);
        let before = fs::read_to_string(&file).ok();
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        fs::write(&file, content).unwrap();
        let mut record = tool_call(session, intent);
        record.model = Some(model.into());
        record.files = vec![file_change(path, before.as_deref(), Some(content))];
        self.append(record)
    }

    /// [`Workspace::agent_writes`] as an engine of record version `v` (1 or 2) recorded it: no
    /// before-hash, and in version 1 no line digests.
    fn agent_writes_old(&mut self, v: u32, path: &str, content: &str, session: &str) -> Appended {
        let file = self.root().join(path);
        let before = fs::read_to_string(&file).ok();
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        fs::write(&file, content).unwrap();
        let mut record = tool_call(session, "INT-OLD");
        record.v = v;
        let mut change = file_change(path, before.as_deref(), Some(content));
        for range in change.ranges.iter_mut().filter(|_| v < 2) {
            range.line_digests = None;
        }
        record.files = vec![change];
        self.append(record)
    }

    /// Edits a file without the chokepoint knowing (a human in an editor).
    fn human_writes(&self, path: &str, content: &str) {
        fs::write(self.root().join(path), content).unwrap();
    }

    /// Creates a file (and its folders) without the chokepoint knowing.
    fn human_writes_new(&self, path: &str, content: &str) {
        let file = self.root().join(path);
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        fs::write(file, content).unwrap();
    }

    fn read(&self, path: &str) -> String {
        fs::read_to_string(self.root().join(path)).unwrap()
    }
}

fn tool_call(session: &str, intent: &str) -> Record {
    let mut record = Record::new(RecordKind::ToolCall);
    record.event = Some("PreToolUse".into());
    record.session = Some(session.into());
    record.agent = Some("claude-code".into());
    record.intent = Some(intent.into());
    record.tool = Some("write_to_file".into());
    record.decision = Some(RecordedDecision { decision: "allow".into(), reason: None, hooks: vec![] });
    record
}

fn seqs(found: &[IndexedRecord]) -> Vec<u64> {
    found.iter().map(|r| r.seq).collect()
}

fn filter() -> Filter {
    Filter::default()
}

/// The filters both indexes must answer alike.
fn probe_filters() -> Vec<Filter> {
    let since = format_utc(T0 + 50_000);
    vec![
        filter(),
        Filter { newest_first: true, limit: Some(17), ..filter() },
        Filter { intent: Some("INT-1".into()), ..filter() },
        Filter { session: Some("s-2".into()), newest_first: true, ..filter() },
        Filter { file: Some("src/a.rs".into()), ..filter() },
        Filter { file: Some("src/*.rs".into()), ..filter() },
        Filter { file: Some("src/**".into()), limit: Some(5), ..filter() },
        Filter { since: Some(since), ..filter() },
        Filter { since: Some((T0 + 90_000).to_string()), kind: Some(RecordKind::Lifecycle), ..filter() },
        Filter { kind: Some(RecordKind::External), session: Some("s-0".into()), ..filter() },
        Filter { intent: Some("INT-2".into()), file: Some("docs/d.md".into()), newest_first: true, ..filter() },
    ]
}

#[test]
fn an_index_built_record_by_record_answers_as_a_rebuild() {
    let mut ws = Workspace::new();
    let index = Index::open(&ws.sidecar).unwrap();
    for i in 0..300 {
        varied_ledger_step(&mut ws, i);
    }
    // A third through add, a third through add_many, the rest through catch_up.
    let lines = read_ledger(&ws);
    let third = lines.len() / 3;
    for (record, hash, offset) in &lines[..third] {
        assert!(index.add(LEGACY, record, hash, *offset).unwrap());
        // Idempotent on seq.
        assert!(!index.add(LEGACY, record, hash, *offset).unwrap());
    }
    let many: Vec<(&Record, &str, u64)> = lines[third..2 * third].iter().map(|(r, h, o)| (r, h.as_str(), *o)).collect();
    assert_eq!(index.add_many(LEGACY, many.clone()).unwrap(), many.len() as u64);
    assert_eq!(index.add_many(LEGACY, many).unwrap(), 0);
    let caught = index.catch_up().unwrap();
    assert_eq!(caught.records, (lines.len() - 2 * third) as u64);
    assert!(!caught.rebuilt && caught.skipped == 0, "{caught:?}");

    let incremental: Vec<Vec<IndexedRecord>> = probe_filters().iter().map(|f| index.query(f).unwrap()).collect();
    assert_eq!(incremental[0].len(), lines.len());
    for (found, f) in incremental.iter().zip(probe_filters()) {
        assert!(!found.is_empty(), "{f:?} finds something in this ledger");
    }

    let report = reindex(&ws.sidecar).unwrap();
    assert_eq!(report.records, lines.len() as u64);
    assert!(report.rebuilt && report.skipped == 0 && !report.unterminated_tail, "{report:?}");
    assert_eq!(report.bytes, fs::metadata(ws.sidecar.trace_ledger()).unwrap().len());
    let rebuilt: Vec<Vec<IndexedRecord>> = probe_filters().iter().map(|f| index.query(f).unwrap()).collect();
    for ((a, b), f) in incremental.iter().zip(&rebuilt).zip(probe_filters()) {
        assert_eq!(a, b, "{f:?}");
    }
    // Every record read back is the ledger's, exactly.
    for (found, (record, hash, offset)) in rebuilt[0].iter().zip(&lines) {
        assert_eq!((&found.record, &found.line_hash, found.offset), (record, hash, *offset));
    }
}

/// The `i`th step of a varied ledger: every kind, four sessions, three intents, writes to several
/// files (some of them deletions), some denials.
fn varied_ledger_step(ws: &mut Workspace, i: usize) {
    let kinds = [RecordKind::ToolCall, RecordKind::Lifecycle, RecordKind::Approval, RecordKind::Containment, RecordKind::External];
    let session = format!("s-{}", i % 4);
    let intent = format!("INT-{}", i % 3);
    let kind = kinds[i % kinds.len()];
    if kind == RecordKind::ToolCall {
        let path = ["src/a.rs", "src/b.rs", "src/deep/c.rs", "docs/d.md"][i % 7 % 4];
        let content: String = (0..(i % 11 + 1)).map(|l| format!("line {l} of write {i}\n")).collect();
        ws.agent_writes(path, &content, &session, &intent, "model-x");
        if i.is_multiple_of(13) {
            // A deletion: the record names the file with no hash and no range.
            fs::remove_file(ws.root().join(path)).unwrap();
            let mut record = tool_call(&session, &intent);
            record.files = vec![file_change(path, Some(&content), None)];
            ws.append(record);
        }
    } else {
        let mut record = Record::new(kind);
        record.session = Some(session);
        record.intent = (i % 5 != 1).then_some(intent);
        if i.is_multiple_of(17) {
            record.decision = Some(RecordedDecision { decision: "deny".into(), reason: Some("no".into()), hooks: vec![] });
        }
        ws.append(record);
    }
}

/// Every line of the ledger: its record, hash and offset.
fn read_ledger(ws: &Workspace) -> Vec<(Record, String, u64)> {
    let text = fs::read_to_string(ws.sidecar.trace_ledger()).unwrap();
    let mut offset = 0;
    let mut out = Vec::new();
    for line in text.split_terminator('\n') {
        out.push((Record::from_line(line).unwrap(), line_hash(line), offset));
        offset += line.len() as u64 + 1;
    }
    out
}

#[test]
fn queries_by_intent_file_session_time_and_kind() {
    let mut ws = Workspace::new();
    ws.agent_writes("src/a.rs", "a\n", "s-1", "INT-A", "m"); // 1
    ws.agent_writes("src/deep/b.rs", "b\n", "s-1", "INT-A", "m"); // 2
    let mut lifecycle = Record::new(RecordKind::Lifecycle);
    lifecycle.session = Some("s-2".into());
    ws.append(lifecycle); // 3
    ws.agent_writes("src/a.rs", "a\nmore\n", "s-2", "INT-B", "m"); // 4
    ws.agent_writes("README.md", "hi\n", "s-2", "INT-B", "m"); // 5
    let index = Index::open(&ws.sidecar).unwrap();
    assert_eq!(index.catch_up().unwrap().records, 5);
    let q = |f: Filter| seqs(&index.query(&f).unwrap());

    assert_eq!(q(Filter { intent: Some("INT-A".into()), ..filter() }), [1, 2]);
    assert_eq!(q(Filter { intent: Some("INT-B".into()), newest_first: true, ..filter() }), [5, 4]);
    assert_eq!(q(Filter { session: Some("s-2".into()), ..filter() }), [3, 4, 5]);
    assert_eq!(q(Filter { file: Some("src/a.rs".into()), ..filter() }), [1, 4]);
    assert_eq!(q(Filter { file: Some("src/*.rs".into()), ..filter() }), [1, 4]);
    assert_eq!(q(Filter { file: Some("src/**/*.rs".into()), ..filter() }), [1, 2, 4]);
    assert_eq!(q(Filter { file: Some("*.md".into()), ..filter() }), [5]);
    assert_eq!(q(Filter { file: Some("nowhere.rs".into()), ..filter() }), Vec::<u64>::new());
    assert_eq!(q(Filter { kind: Some(RecordKind::Lifecycle), ..filter() }), [3]);
    // Record n is at T0 + n seconds.
    assert_eq!(q(Filter { since: Some(format_utc(T0 + 4000)), ..filter() }), [4, 5]);
    assert_eq!(q(Filter { since: Some("2026-11-22T01:00:04+01:00".into()), ..filter() }), [4, 5]);
    assert_eq!(q(Filter { since: Some((T0 + 3500).to_string()), ..filter() }), [4, 5]);
    assert_eq!(q(Filter { since: Some("2026-11-22".into()), ..filter() }), [1, 2, 3, 4, 5]);
    assert_eq!(q(Filter { since: Some("2026-11-23".into()), ..filter() }), Vec::<u64>::new());
    assert_eq!(q(Filter { newest_first: true, limit: Some(2), ..filter() }), [5, 4]);
    assert_eq!(q(Filter { session: Some("s-1".into()), file: Some("src/a.rs".into()), ..filter() }), [1]);
    assert!(index.query(&Filter { since: Some("last tuesday".into()), ..filter() }).unwrap_err().message().contains("is not a time"));
    assert!(index.query(&Filter { file: Some("src/[".into()), ..filter() }).unwrap_err().message().contains("not a glob"));

    let shown = index.get(4).unwrap().unwrap();
    assert_eq!(shown.record.files[0].path, "src/a.rs");
    assert_eq!(shown.record.intent.as_deref(), Some("INT-B"));
    assert_eq!(index.get(6).unwrap(), None);
    assert_eq!(index.last_seq().unwrap(), Some(5));
}

#[test]
fn catch_up_indexes_only_what_was_appended_and_only_whole_lines() {
    let mut ws = Workspace::new();
    let index = Index::open(&ws.sidecar).unwrap();
    // No ledger yet: nothing to do.
    assert_eq!(index.catch_up().unwrap().records, 0);
    for i in 0..10 {
        ws.agent_writes("a.txt", &format!("{i}\n"), "s", "I", "m");
    }
    assert_eq!(index.catch_up().unwrap().records, 10);
    assert_eq!(index.catch_up().unwrap().records, 0);
    for i in 10..15 {
        ws.agent_writes("a.txt", &format!("{i}\n"), "s", "I", "m");
    }
    // Another process's index (a second connection) catches up with the same ledger.
    let other = Index::open(&ws.sidecar).unwrap();
    let report = other.catch_up().unwrap();
    assert_eq!((report.records, report.rebuilt), (5, false));
    assert_eq!(index.catch_up().unwrap().records, 0, "the other process did the work");
    assert_eq!(seqs(&index.query(&filter()).unwrap()), (1..=15).collect::<Vec<_>>());

    // An append in progress: half a line without its newline is left for later.
    let mut next = tool_call("s", "I");
    next.seq = 16;
    next.time = format_utc(T0 + 16_000);
    next.prev = ws.prev.clone();
    let line = next.to_line();
    let (head, tail) = line.split_at(line.len() / 2);
    let mut file = OpenOptions::new().append(true).open(ws.sidecar.trace_ledger()).unwrap();
    file.write_all(head.as_bytes()).unwrap();
    let report = index.catch_up().unwrap();
    assert_eq!((report.records, report.unterminated_tail, report.skipped), (0, true, 0));
    file.write_all(format!("{tail}\n").as_bytes()).unwrap();
    let report = index.catch_up().unwrap();
    assert_eq!((report.records, report.unterminated_tail), (1, false));
    assert_eq!(index.last_seq().unwrap(), Some(16));
    (ws.seq, ws.prev, ws.offset) = (16, line_hash(&line), ws.offset + line.len() as u64 + 1);

    // A writer indexing its own append (through `add`) while an earlier record of another process's
    // is not indexed yet: catch-up still reads the earlier one.
    let seventeen = ws.agent_writes("a.txt", "17\n", "s", "I", "m");
    let eighteen = ws.agent_writes("a.txt", "18\n", "s", "I", "m");
    assert!(index.add(LEGACY, &eighteen.record, &eighteen.hash, eighteen.offset).unwrap());
    let report = index.catch_up().unwrap();
    assert_eq!(report.records, 1, "{report:?}");
    assert_eq!(index.get(17).unwrap().map(|r| r.record), Some(seventeen.record));
    assert_eq!(seqs(&index.query(&filter()).unwrap()), (1..=18).collect::<Vec<_>>());
}

#[test]
fn a_rewritten_ledger_is_noticed() {
    let mut ws = Workspace::new();
    for i in 0..6 {
        ws.agent_writes("a.txt", &format!("{i}\n"), "s", "I", "m");
    }
    let index = Index::open(&ws.sidecar).unwrap();
    index.catch_up().unwrap();

    // A line in the middle changed in place (same length): queries that read it say so.
    let ledger = ws.sidecar.trace_ledger();
    let text = fs::read_to_string(&ledger).unwrap();
    let tampered = text.replacen("\"session\":\"s\"", "\"session\":\"t\"", 3);
    fs::write(&ledger, &tampered).unwrap();
    let error = index.query(&filter()).unwrap_err();
    assert!(error.message().contains("no longer holds record 1") && error.message().contains("rebuild the index"), "{error}");
    // The last line is intact, so catch-up sees nothing new; a rebuild indexes what is there now.
    assert_eq!(index.catch_up().unwrap().records, 0);
    assert_eq!(reindex(&ws.sidecar).unwrap().records, 6);
    assert_eq!(index.query(&Filter { session: Some("t".into()), ..filter() }).unwrap().len(), 3);

    // The ledger replaced by a shorter one (the last indexed line is gone): catch-up rebuilds.
    let kept: String = tampered.split_inclusive('\n').take(2).collect();
    fs::write(&ledger, kept).unwrap();
    let report = index.catch_up().unwrap();
    assert!(report.rebuilt, "{report:?}");
    assert_eq!(report.records, 2);
    assert_eq!(seqs(&index.query(&filter()).unwrap()), [1, 2]);

    // The ledger deleted: the index empties.
    fs::remove_file(&ledger).unwrap();
    assert!(index.catch_up().unwrap().rebuilt);
    assert_eq!(index.query(&filter()).unwrap(), vec![]);

    // Adding a seq already indexed with another line is refused.
    let (record, hash, offset) = {
        let mut ws2 = Workspace::new();
        let a = ws2.agent_writes("x", "x\n", "s", "I", "m");
        (a.record, a.hash, a.offset)
    };
    assert!(index.add(LEGACY, &record, &hash, offset).unwrap());
    let mut other = record.clone();
    other.session = Some("someone else".into());
    let error = index.add(LEGACY, &other, &line_hash(&other.to_line()), offset).unwrap_err();
    assert!(error.message().contains("record 1 of chain agent_trace is already indexed"), "{error}");
}

#[test]
fn lines_that_are_not_records_are_skipped_and_counted() {
    let mut ws = Workspace::new();
    ws.agent_writes("a.txt", "1\n", "s", "I", "m");
    let ledger = ws.sidecar.trace_ledger();
    let mut file = OpenOptions::new().append(true).open(&ledger).unwrap();
    file.write_all(b"not json\n\n").unwrap();
    ws.offset += 10;
    ws.agent_writes("a.txt", "2\n", "s", "I", "m");
    let report = reindex(&ws.sidecar).unwrap();
    assert_eq!((report.records, report.skipped), (2, 2), "{report:?}");
    let why = report.first_skipped.unwrap();
    assert!(why.contains("not a record"), "{why}");
    let index = Index::open(&ws.sidecar).unwrap();
    assert_eq!(seqs(&index.query(&filter()).unwrap()), [1, 2]);
}

#[test]
fn an_index_of_an_older_schema_is_rebuilt_and_a_newer_one_refused() {
    let mut ws = Workspace::new();
    ws.agent_writes("a.txt", "1\n", "s", "I", "m");
    let index = Index::open(&ws.sidecar).unwrap();
    index.catch_up().unwrap();
    drop(index);
    set_user_version(&ws, 0);
    let index = Index::open(&ws.sidecar).unwrap();
    assert_eq!(index.last_seq().unwrap(), None, "an old layout is dropped");
    assert_eq!(index.catch_up().unwrap().records, 1);
    drop(index);
    set_user_version(&ws, 99);
    let error = Index::open(&ws.sidecar).unwrap_err();
    assert!(error.message().contains("schema version 99"), "{error}");
}

/// Sets the index's `user_version` through the index's own file, without a SQLite dependency in the
/// tests: the header field lives at byte 60 of the database file (big-endian u32), and a closed WAL
/// database has been checkpointed into the file.
fn set_user_version(ws: &Workspace, version: u32) {
    let db = ws.sidecar.trace_index();
    let mut bytes = fs::read(&db).unwrap();
    bytes[60..64].copy_from_slice(&version.to_be_bytes());
    fs::write(&db, bytes).unwrap();
}

fn origin_seqs(lines: &[BlameLine]) -> Vec<Option<u64>> {
    lines.iter().map(|l| l.origin.as_ref().map(|o| o.seq)).collect()
}

#[test]
fn blame_finds_lines_by_content_after_they_moved() {
    let mut ws = Workspace::new();
    let path = "src/lib.rs";
    let body = "fn one() {\n    1\n}\n\nfn two() {\n";
    ws.agent_writes(path, body, "s-1", "INT-A", "model-1"); // 1: lines 1-5
    let grown = format!("{body}    2\n}}\n");
    ws.agent_writes(path, &grown, "s-2", "INT-B", "model-2"); // 2: lines 6-7
    let index = Index::open(&ws.sidecar).unwrap();
    index.catch_up().unwrap();

    let lines = blame(&index, &ws.sidecar, path, None).unwrap();
    assert_eq!(origin_seqs(&lines), [Some(1), Some(1), Some(1), Some(1), Some(1), Some(2), Some(2)]);
    let first = lines[0].origin.as_ref().unwrap();
    assert_eq!((first.intent.as_deref(), first.session.as_deref(), first.model.as_deref()), (Some("INT-A"), Some("s-1"), Some("model-1")));
    assert_eq!((first.agent.as_deref(), first.time.as_str()), (Some("claude-code"), format_utc(T0 + 1000).as_str()));

    // A human adds a header: every recorded line moved down three, and is still found.
    ws.human_writes(path, &format!("// header\n// more\n\n{grown}"));
    let lines = blame(&index, &ws.sidecar, path, None).unwrap();
    assert_eq!(origin_seqs(&lines), [None, None, None, Some(1), Some(1), Some(1), Some(1), Some(1), Some(2), Some(2)]);
    assert_eq!(lines[3].text, "fn one() {");
    let moved = lines[8].origin.as_ref().unwrap();
    assert_eq!((moved.recorded, moved.found), ((6, 7), (9, 10)));
    assert_eq!((moved.intent.as_deref(), moved.model.as_deref()), (Some("INT-B"), Some("model-2")));

    // The human edits a line of record 2's range: that line is no longer record 2's, and neither is
    // the rest of that range, a `}` the file has twice, with no line of its range left to anchor it;
    // record 1's lines are untouched.
    let edited = ws.read(path).replace("    2\n", "    2 + 0\n");
    ws.human_writes(path, &edited);
    let lines = blame(&index, &ws.sidecar, path, None).unwrap();
    assert_eq!(lines[8].text, "    2 + 0");
    assert_eq!((lines[8].origin.as_ref(), lines[9].origin.as_ref()), (None, None));
    assert_eq!(origin_seqs(&lines)[3..8], [Some(1); 5]);

    // An agent fixes it through the chokepoint: the line is that write's.
    let fixed = ws.read(path).replace("    2 + 0\n", "    22\n");
    ws.agent_writes(path, &fixed, "s-3", "INT-C", "model-3"); // 3
    index.catch_up().unwrap();
    let one = blame(&index, &ws.sidecar, path, Some(9)).unwrap();
    assert_eq!(one.len(), 1);
    assert_eq!((one[0].line, one[0].text.as_str()), (9, "    22"));
    assert_eq!(one[0].origin.as_ref().map(|o| (o.seq, o.intent.as_deref())), Some((3, Some("INT-C"))));

    assert!(blame(&index, &ws.sidecar, path, Some(11)).unwrap_err().message().contains("there is no line 11"));
    assert!(blame(&index, &ws.sidecar, path, Some(0)).is_err());
    assert!(blame(&index, &ws.sidecar, "../outside", None).unwrap_err().message().contains("not a workspace-relative path"));
    assert!(blame(&index, &ws.sidecar, "missing.rs", None).unwrap_err().message().contains("failed"));
}

/// A human's lines around the agent's: a function before and one after, with the braces and blank
/// lines every file repeats.
const PREAMBLE: &str = "use std::fmt;\n\nfn helper() {\n    if true {\n        fmt();\n    }\n}\n\n// ---\n";
const EPILOGUE: &str = "\nfn other() {\n    if false {\n    }\n}\n";

/// Lines 10 to 24 once the agent's function is in place between them.
const FUNCTION: &str = "/// Reads a configuration.
pub fn parse(input: &str) -> Result<Config, Error> {
    let mut config = Config::default();
    for line in input.lines() {
        let line = line.trim();
        let (key, value) = split(line)?;
        config.set(key, value);
    }

    if config.name.is_empty() {
        return Err(Error::NoName);
    }
    Ok(config)
}

";

#[test]
fn blame_keeps_the_untouched_lines_of_a_partly_edited_range() {
    let mut ws = Workspace::new();
    let path = "src/config.rs";
    ws.human_writes_new(path, &format!("{PREAMBLE}{EPILOGUE}"));
    let first = ws.agent_writes(path, &format!("{PREAMBLE}{FUNCTION}{EPILOGUE}"), "s-1", "INT-A", "model-1"); // 1
    let range = &first.record.files[0].ranges;
    assert_eq!((range.len(), range[0].start, range[0].end), (1, 10, 24), "the agent wrote lines 10-24");
    // A second write changes line 15 only.
    let edited = ws.read(path).replace("split(line)?;", "split(line).map_err(Error::Syntax)?;");
    ws.agent_writes(path, &edited, "s-2", "INT-B", "model-2"); // 2
    let index = Index::open(&ws.sidecar).unwrap();
    index.catch_up().unwrap();

    let mut expected = vec![None; 29];
    expected[9..24].fill(Some(1));
    expected[14] = Some(2);
    let lines = blame(&index, &ws.sidecar, path, None).unwrap();
    assert_eq!(origin_seqs(&lines), expected);
    let kept = lines[9].origin.as_ref().unwrap();
    assert_eq!((kept.intent.as_deref(), kept.recorded, kept.found, kept.whole), (Some("INT-A"), (10, 24), (10, 24), false));
    let edit = lines[14].origin.as_ref().unwrap();
    assert_eq!((edit.intent.as_deref(), edit.found, edit.whole), (Some("INT-B"), (15, 15), true));
    // The repeated lines of the range (`    }`, the blank line, `}`) are the first write's, as part of
    // its runs, and the equal lines of the human's functions around it are nobody's.
    assert_eq!((lines[16].text.as_str(), lines[17].text.as_str(), lines[22].text.as_str()), ("    }", "", "}"));
    assert_eq!((lines[5].text.as_str(), lines[6].text.as_str(), lines[27].text.as_str()), ("    }", "}", "    }"));

    // Three lines typed above: every line moved down three and keeps its origin.
    ws.human_writes(path, &format!("// one\n// two\n// three\n{}", ws.read(path)));
    let lines = blame(&index, &ws.sidecar, path, None).unwrap();
    let mut moved = vec![None; 3];
    moved.extend(&expected);
    assert_eq!(origin_seqs(&lines), moved);
    assert_eq!(lines[12].origin.as_ref().map(|o| (o.recorded, o.found)), Some(((10, 24), (13, 27))));

    // Lines edited by hand (what were lines 20 and 22) are nobody's; the lines around them keep
    // their origin, the repeated `    }`, `}` and blank line after them included.
    let by_hand = ws
        .read(path)
        .replace("return Err(Error::NoName);", "return Err(Error::NoName { line: 0 });")
        .replace("    Ok(config)\n", "    Ok(config.validated())\n");
    ws.human_writes(path, &by_hand);
    let lines = blame(&index, &ws.sidecar, path, None).unwrap();
    moved[22] = None;
    moved[24] = None;
    assert_eq!(origin_seqs(&lines), moved);
    assert_eq!((lines[23].text.as_str(), lines[25].text.as_str(), lines[26].text.as_str()), ("    }", "}", ""));

    // The human rewrites the function's body: the braces and blank lines left, though equal to the
    // first write's, are where no line of its range anchors them, and are nobody's.
    let start = by_hand.find("pub fn parse").unwrap();
    let end = by_hand.find("\nfn other").unwrap();
    let rewritten =
        format!("{}pub fn parse(_: &str) -> Result<Config, Error> {{\n    todo!()\n}}\n\n{}", &by_hand[..start], &by_hand[end..]);
    ws.human_writes(path, &rewritten);
    let lines = blame(&index, &ws.sidecar, path, None).unwrap();
    let known: Vec<(u32, &str)> = lines.iter().filter(|l| l.origin.is_some()).map(|l| (l.line, l.text.as_str())).collect();
    assert_eq!(known, [(13, "/// Reads a configuration.")], "only the doc comment, whole where it was, is still the first write's");
}

#[test]
fn version_1_and_2_records_still_verify_and_blame_by_range_hash() {
    let mut ws = Workspace::new();
    // An engine of record version 1 wrote two files, then one of version 2 a third...
    let old = "fn old() {\n    1\n}\n";
    ws.agent_writes_old(1, "old.rs", old, "s-old");
    ws.agent_writes_old(1, "both.rs", "fn a() {\n    a\n}\n", "s-old");
    ws.agent_writes_old(2, "two.rs", "fn two() {}\n", "s-two");
    let old_lines = fs::read_to_string(ws.sidecar.trace_ledger()).unwrap();
    let (v1, v2) = old_lines.split_at(old_lines.match_indices('\n').nth(1).unwrap().0 + 1);
    assert!(v1.lines().all(|l| l.starts_with(r#"{"v":1,"#) && !l.contains("line_digests")), "{v1}");
    assert!(v2.starts_with(r#"{"v":2,"#) && v2.contains("line_digests") && !v2.contains("before_sha256"), "{v2}");
    // ...in the single file of before chains, which this engine reads as the legacy chain and never
    // appends to: its writer begins a chain of its own, in version 3.
    let (ledger, recovery) = Ledger::open(&ws.sidecar).unwrap();
    assert!(recovery.is_none());
    let content = "fn a() {\n    a\n}\n\nfn b() {\n    b\n    bb\n}\n";
    fs::write(ws.root().join("both.rs"), content).unwrap();
    let mut record = tool_call("s-new", "INT-NEW");
    record.files = vec![file_change("both.rs", Some("fn a() {\n    a\n}\n"), Some(content))];
    record.files[0].before_sha256 = Some(sha256_hex(b"fn a() {\n    a\n}\n"));
    let appended = ledger.append(record).unwrap();
    assert_eq!((appended.seq, appended.record.v), (1, 3));
    assert!(appended.record.files[0].ranges[0].line_digests.is_some());
    let chain = ledger.chain().unwrap();
    drop(ledger);
    assert_eq!(fs::read_to_string(ws.sidecar.trace_ledger()).unwrap(), old_lines, "the legacy file is never appended");

    // The mixed ledger is intact, against its heads too, and every line reads back as it was written.
    let head = head::read(&ws.sidecar.state_db(), &chain).unwrap();
    let verification = verify(&chokepoint_core::ledger::chains::path_of(&ws.sidecar, &chain), head.as_ref()).unwrap();
    assert!(verification.is_intact(), "{:?}", verification.problem);
    let audit = chokepoint_core::ledger::audit::verify_ledger(&ws.sidecar).unwrap();
    assert!(audit.is_intact(), "{:?}", audit.first_problem());
    assert_eq!((audit.chains.len(), audit.records()), (2, 4));
    let lines = chokepoint_core::ledger::chains::all_lines(&ws.sidecar);
    let versions: Vec<u32> = lines.iter().map(|l| Record::from_line(l).unwrap().v).collect();
    assert_eq!(versions, [1, 1, 2, 3]);
    for line in &lines {
        assert_eq!(&Record::from_line(line).unwrap().to_line(), line);
    }
    let report = reindex(&ws.sidecar).unwrap();
    assert_eq!((report.records, report.skipped), (4, 0));

    // Version-1 ranges are found whole, where they moved.
    let index = Index::open(&ws.sidecar).unwrap();
    ws.human_writes("old.rs", &format!("// moved\n{old}"));
    let lines = blame(&index, &ws.sidecar, "old.rs", None).unwrap();
    assert_eq!(origin_seqs(&lines), [None, Some(1), Some(1), Some(1)]);
    assert_eq!(lines[1].origin.as_ref().map(|o| (o.found, o.whole)), Some(((2, 4), true)));
    // A version-1 range partly edited is found whole or not at all, as before: it has no line
    // digests. The version-3 range of the same file, partly edited too, keeps its other lines.
    ws.human_writes("both.rs", "fn a() {\n    A\n}\n\nfn b() {\n    B\n    bb\n}\n");
    let lines = blame(&index, &ws.sidecar, "both.rs", None).unwrap();
    assert_eq!(origin_seqs(&lines), [None, None, None, Some(1), Some(1), None, Some(1), Some(1)]);
}

#[test]
fn line_digests_are_capped_and_a_longer_range_is_found_whole_or_not_at_all() {
    let mut ws = Workspace::new();
    let text = |n: usize| (1..=n).map(|i| format!("let v{i} = {i};\n")).collect::<String>();
    // A 10,000-line write: one range with its hash, no digests; the record stays small.
    let big = ws.agent_writes("big.rs", &text(10_000), "s", "I", "m");
    let ranges = &big.record.files[0].ranges;
    assert_eq!((ranges.len(), ranges[0].end, ranges[0].line_digests.as_ref()), (1, 10_000, None));
    let line = fs::read_to_string(ws.sidecar.trace_ledger()).unwrap();
    assert!(line.len() < 1024, "a 10,000-line write is a record of {} bytes", line.len());
    // A write of exactly the cap carries a digest per line: 8 bytes each.
    let capped = ws.agent_writes("capped.rs", &text(MAX_DIGESTED_LINES), "s", "I", "m");
    let digests = capped.record.files[0].ranges[0].line_digests.as_ref().map(String::len);
    assert_eq!(digests, Some(8 * MAX_DIGESTED_LINES));

    // One line of each edited by hand: the digested range keeps every other line; the range beyond
    // the cap falls back to its range hash, which no longer matches.
    let index = Index::open(&ws.sidecar).unwrap();
    index.catch_up().unwrap();
    for (path, lines) in [("big.rs", 10_000), ("capped.rs", MAX_DIGESTED_LINES)] {
        ws.human_writes(path, &text(lines).replace("let v700 = 700;\n", "let v700 = 0;\n"));
        let blamed = blame(&index, &ws.sidecar, path, None).unwrap();
        let known = blamed.iter().filter(|l| l.origin.is_some()).count();
        let expected = if path == "big.rs" { 0 } else { MAX_DIGESTED_LINES - 1 };
        assert_eq!(known, expected, "{path}");
        assert_eq!(blamed[699].origin, None);
    }
}

#[test]
fn blame_ignores_line_endings_and_denied_writes() {
    let mut ws = Workspace::new();
    ws.agent_writes("w.txt", "alpha\nbeta\n", "s", "I", "m");
    // A denied write of the same file recorded with ranges must not claim lines.
    let mut denied = tool_call("s-evil", "I");
    denied.decision = Some(RecordedDecision { decision: "deny".into(), reason: None, hooks: vec![] });
    denied.files = vec![file_change("w.txt", None, Some("alpha\nbeta\n"))];
    ws.append(denied);
    // An editor converts the file to CRLF.
    ws.human_writes("w.txt", "alpha\r\nbeta\r\n");
    let index = Index::open(&ws.sidecar).unwrap();
    index.catch_up().unwrap();
    let lines = blame(&index, &ws.sidecar, "w.txt", None).unwrap();
    assert_eq!(origin_seqs(&lines), [Some(1), Some(1)]);
    assert_eq!(lines[1].text, "beta");
}

#[test]
fn the_agent_trace_export_has_the_specs_fields() {
    let mut ws = Workspace::new();
    ws.agent_writes("src/a.rs", "a\nb\n", "s-1", "INT-A", "claude-opus-4");
    ws.agent_writes("src/a.rs", "a\nB\nc\n", "s-1", "INT-A", "claude-opus-4");
    let mut lifecycle = Record::new(RecordKind::Lifecycle);
    lifecycle.session = Some("s-1".into());
    ws.append(lifecycle);
    let mut external = Record::new(RecordKind::External);
    external.files = vec![file_change("README.md", None, Some("hello\n"))];
    ws.append(external);
    let index = Index::open(&ws.sidecar).unwrap();
    index.catch_up().unwrap();

    let records = index.query(&filter()).unwrap().into_iter().map(|r| r.record);
    let traces = agent_trace(records);
    assert_eq!(traces.len(), 3, "the lifecycle record wrote nothing");
    let value = serde_json::to_value(&traces).unwrap();
    for trace in value.as_array().unwrap() {
        assert_eq!(check_trace_record(trace), Vec::<String>::new(), "{trace:#}");
        for field in ["version", "id", "timestamp", "files", "metadata"] {
            assert!(trace.get(field).is_some(), "{field} in {trace}");
        }
    }
    let second = &value[1];
    assert_eq!(second["metadata"]["chokepoint"]["seq"], 2);
    assert_eq!(second["metadata"]["chokepoint"]["line_hash"], index.get(2).unwrap().unwrap().line_hash);
    let range = &second["files"][0]["conversations"][0]["ranges"][0];
    assert_eq!((range["start_line"].as_u64(), range["end_line"].as_u64()), (Some(2), Some(3)));
    assert!(range["content_hash"].as_str().unwrap().starts_with("sha256:"));
    assert_eq!(value[2]["files"][0]["conversations"][0]["contributor"]["type"], "human");
    // Ids are distinct and stable across exports.
    let again = agent_trace(index.query(&filter()).unwrap().into_iter().map(|r| r.record));
    assert_eq!(again, traces);
    assert_ne!(traces[0].id, traces[1].id);
}

#[test]
fn the_index_reads_what_the_writer_writes() {
    let ws = Workspace::new();
    let (ledger, recovery) = Ledger::open(&ws.sidecar).unwrap();
    assert!(recovery.is_none());
    let index = Index::open(&ws.sidecar).unwrap();
    let mut appended = Vec::new();
    for i in 0..20 {
        let mut record = tool_call(&format!("s-{}", i % 2), "INT-W");
        record.files = vec![file_change("w.rs", None, Some(&format!("{i}\n")))];
        appended.push(ledger.append(record).unwrap());
    }
    // The writer's own answer indexes a record directly...
    let first = &appended[0];
    let chain = ledger.chain().unwrap();
    assert!(index.add(&chain, &first.record, &first.hash, first.offset).unwrap());
    // ...and a catch-up finds the rest, with the writer's offsets and hashes.
    assert_eq!(index.catch_up().unwrap().records, 19);
    let found = index.query(&filter()).unwrap();
    for (found, written) in found.iter().zip(&appended) {
        assert_eq!(
            (found.chain.as_str(), found.seq, &found.line_hash, found.offset, &found.record),
            (chain.as_str(), written.seq, &written.hash, written.offset, &written.record)
        );
    }
    assert_eq!(index.query(&Filter { session: Some("s-1".into()), ..filter() }).unwrap().len(), 10);
}

/// Chains of several worktrees side by side, as a merge leaves them: one index over all of them, in
/// time order; a chain that shrank under it (a checkout of an older version) is read again, one that
/// is gone (a switch to a branch without it) leaves the index with its rows.
#[test]
fn the_index_reads_every_chain_in_time_order_and_follows_what_git_does_to_them() {
    let merged = Workspace::new();
    fs::create_dir_all(merged.sidecar.trace_dir()).unwrap();
    let mut chains = Vec::new();
    for (n, session) in ["s-a", "s-b", "s-a"].into_iter().enumerate() {
        let branch = Workspace::new();
        let (ledger, _) = Ledger::open(&branch.sidecar).unwrap();
        for i in 0..3 {
            let mut record = tool_call(session, "INT-M");
            record.files = vec![file_change(&format!("m{n}.rs"), None, Some(&format!("{i}\n")))];
            ledger.append(record).unwrap();
            // Each record at a time of its own.
            std::thread::sleep(std::time::Duration::from_millis(3));
        }
        let chain = chokepoint_core::ledger::chains::current(&branch.sidecar).unwrap();
        drop(ledger);
        let into = merged.sidecar.trace_dir().join(format!("{}.jsonl", chain.chain));
        fs::copy(&chain.path, &into).unwrap();
        chains.push((chain.chain, into));
    }
    let index = Index::open(&merged.sidecar).unwrap();
    assert_eq!(index.catch_up().unwrap().records, 9);
    let found = index.query(&filter()).unwrap();
    let order: Vec<(String, u64)> = found.iter().map(|r| (r.chain.clone(), r.seq)).collect();
    let mut by_time = order.clone();
    by_time.sort_by_key(|(chain, seq)| found.iter().find(|r| &r.chain == chain && r.seq == *seq).unwrap().record.time.clone());
    assert_eq!(order, by_time, "oldest first, across chains");
    assert_eq!(index.query(&Filter { session: Some("s-a".into()), ..filter() }).unwrap().len(), 6);
    assert_eq!(index.get_in(&chains[1].0, 2).unwrap().unwrap().record.session.as_deref(), Some("s-b"));
    assert_eq!(index.query(&Filter { file: Some("m1.rs".into()), ..filter() }).unwrap().len(), 3);
    assert_eq!(index.catch_up().unwrap(), IndexReport::default(), "nothing changed: nothing to do");

    // An older version of the second chain checked out: read again from its start.
    let text = fs::read_to_string(&chains[1].1).unwrap();
    fs::write(&chains[1].1, text.lines().next().unwrap().to_owned() + "\n").unwrap();
    let report = index.catch_up().unwrap();
    assert!(report.rebuilt && report.records == 1, "{report:?}");
    assert_eq!(index.query(&filter()).unwrap().len(), 7);
    // The third chain gone: its rows go with it.
    fs::remove_file(&chains[2].1).unwrap();
    assert!(index.catch_up().unwrap().rebuilt);
    assert_eq!(index.query(&filter()).unwrap().len(), 4);
    assert_eq!(index.query(&Filter { file: Some("m2.rs".into()), ..filter() }).unwrap().len(), 0);
    // And a rebuild from scratch answers the same.
    reindex(&merged.sidecar).unwrap();
    assert_eq!(index.query(&filter()).unwrap().len(), 4);
}

/// Figures for the report (run with `--release --ignored --nocapture`): a rebuild of 100k records, a
/// catch-up of 1k, and blame of a 3000-line file with hundreds of recorded ranges.
#[test]
#[ignore = "a measurement, not a check"]
fn measure() {
    let mut ws = Workspace::new();
    let started = Instant::now();
    let mut content: Vec<String> = (0..3000).map(|i| format!("    let value_{i} = compute({i}); // original")).collect();
    fs::create_dir_all(ws.root().join("src")).unwrap();
    for n in 0..100_000usize {
        if n % 250 == 0 {
            // Every 250th record edits the big file: a few lines somewhere, sometimes inserted.
            let at = (n * 7919) % 2990;
            let before = content.join("\n") + "\n";
            let len = n % 9 + 1;
            for (k, line) in content[at..at + len].iter_mut().enumerate() {
                *line = format!("    let edited_{n}_{k} = {n};");
            }
            if n % 500 == 0 {
                content.insert(at, format!("    // inserted by {n}"));
            }
            let after = content.join("\n") + "\n";
            fs::write(ws.root().join("src/big.rs"), &after).unwrap();
            let mut record = tool_call(&format!("s-{}", n % 10), &format!("INT-{}", n % 7));
            record.files = vec![file_change("src/big.rs", Some(&before), Some(&after))];
            ws.append(record);
        } else {
            let mut record = tool_call(&format!("s-{}", n % 10), &format!("INT-{}", n % 7));
            record.input_sha256 = Some(line_hash(&n.to_string()));
            record.files = vec![file_change(&format!("src/f{}.rs", n % 50), None, Some(&format!("fn f{n}() {{}}\n")))];
            ws.append(record);
        }
    }
    let bytes = fs::metadata(ws.sidecar.trace_ledger()).unwrap().len();
    eprintln!("wrote 100k records ({} MB) in {:?}", bytes >> 20, started.elapsed());

    let started = Instant::now();
    let report = reindex(&ws.sidecar).unwrap();
    let took = started.elapsed();
    eprintln!(
        "reindex: {} records, {} ranges in {took:?}: {:.0} records/s",
        report.records,
        report.ranges,
        report.records as f64 / took.as_secs_f64()
    );

    let index = Index::open(&ws.sidecar).unwrap();
    for _ in 0..1000 {
        ws.agent_writes("src/tail.rs", "x\n", "s", "I", "m");
    }
    let started = Instant::now();
    let report = index.catch_up().unwrap();
    eprintln!("catch_up of {} records: {:?}", report.records, started.elapsed());

    let started = Instant::now();
    let found = index.query(&Filter { intent: Some("INT-3".into()), newest_first: true, limit: Some(100), ..filter() }).unwrap();
    eprintln!("query by intent, newest 100: {} in {:?}", found.len(), started.elapsed());
    let started = Instant::now();
    let found = index.query(&Filter { file: Some("src/f1*.rs".into()), limit: Some(1000), ..filter() }).unwrap();
    eprintln!("query by glob, first 1000: {} in {:?}", found.len(), started.elapsed());

    let recorded = index.ranges_of("src/big.rs").unwrap().len();
    let started = Instant::now();
    let lines = blame(&index, &ws.sidecar, "src/big.rs", None).unwrap();
    let known = lines.iter().filter(|l| l.origin.is_some()).count();
    eprintln!("blame of {} lines against {recorded} ranges: {known} explained, in {:?}", lines.len(), started.elapsed());
    // Move everything down: every range must be searched for.
    let moved = format!("// a new header\n{}", fs::read_to_string(ws.root().join("src/big.rs")).unwrap());
    fs::write(ws.root().join("src/big.rs"), moved).unwrap();
    let started = Instant::now();
    let lines = blame(&index, &ws.sidecar, "src/big.rs", None).unwrap();
    let known_after = lines.iter().filter(|l| l.origin.is_some()).count();
    eprintln!("blame after a line inserted at the top: {known_after} explained, in {:?}", started.elapsed());
    assert_eq!(known, known_after);
}

/// Issue 27, item 9: another process truncates `trace.db-shm` under the index's mapping (the
/// extension's sidebar keeps an index open as long as the window). The next read fails with the
/// reason instead of a SIGBUS that ends the process, and the one after reads again.
#[test]
#[cfg_attr(
    windows,
    ignore = "SIGBUS from a shared-memory file shortened under its mapping is Unix's; Windows refuses to shorten a file another process maps"
)]
fn a_shared_memory_file_truncated_under_the_index_is_an_error_then_recovers() {
    let mut ws = Workspace::new();
    for i in 0..5 {
        ws.agent_writes("a.txt", &format!("{i}\n"), "s", "I", "m");
    }
    let index = Index::open(&ws.sidecar).unwrap();
    assert_eq!(index.catch_up().unwrap().records, 5);
    let shm = ws.sidecar.dir().join("trace.db-shm");
    assert!(shm.exists());
    assert!(std::process::Command::new("truncate").args(["-s", "0"]).arg(&shm).status().unwrap().success());
    let error = index.query(&filter()).unwrap_err().to_string();
    assert!(error.contains("trace.db-shm was shortened"), "{error}");
    assert_eq!(seqs(&index.query(&filter()).unwrap()), (1..=5).collect::<Vec<_>>());
}
