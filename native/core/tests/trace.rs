//! What the engine records in the trace ledger as it judges: every event, allowed or not, linked to
//! the session's intent, with the ranges a write changed and their content hashes.

use chokepoint_core::ledger::{GENESIS, Record, RecordKind};
use chokepoint_core::{Decision, Engine, Event, EventKind};
use serde_json::json;
use std::fs;

const INTENTS: &str =
    "version: 1\nactive_intents:\n  - id: INT-001\n    name: Login\n    status: IN_PROGRESS\n    owned_scope: [src/auth/**]\n";

fn governed() -> (tempfile::TempDir, Engine) {
    let ws = tempfile::tempdir().unwrap();
    fs::create_dir_all(ws.path().join(".orchestration")).unwrap();
    fs::create_dir_all(ws.path().join("src/auth")).unwrap();
    fs::write(ws.path().join(".orchestration/active_intents.yaml"), INTENTS).unwrap();
    let engine = Engine::open(ws.path()).unwrap();
    (ws, engine)
}

fn event(kind: EventKind, tool: Option<&str>, input: serde_json::Value) -> Event {
    let mut e = match tool {
        Some(t) => Event::tool(kind, t, input),
        None => Event::new(kind),
    };
    e.ids.session = Some("S".into());
    e.ids.agent = Some("claude-code".into());
    e
}

fn ledger(ws: &tempfile::TempDir) -> Vec<Record> {
    let text = chokepoint_core::ledger::chains::all_lines(&chokepoint_core::Sidecar::new(ws.path())).join("\n");
    text.lines().map(|l| Record::from_line(l).unwrap()).collect()
}

#[test]
fn every_judged_event_is_recorded_with_its_intent_decision_and_the_ranges_it_wrote() {
    let (ws, engine) = governed();
    fs::write(ws.path().join("src/auth/login.js"), "a\nb\nc\n").unwrap();
    let write =
        |content: &str| event(EventKind::PreToolUse, Some("write_to_file"), json!({ "path": "src/auth/login.js", "content": content }));
    engine.evaluate(event(EventKind::SessionStart, None, serde_json::Value::Null)).unwrap();
    assert!(matches!(engine.evaluate(write("x")).unwrap().decision, Decision::Deny(_)), "before the handshake");
    engine.evaluate(event(EventKind::PreToolUse, Some("select_active_intent"), json!({ "intent_id": "INT-001" }))).unwrap();
    assert_eq!(engine.evaluate(write("a\nB\nc\nd\n")).unwrap().decision, Decision::Allow);
    // The synchronous entry does not wait: an allowed write runs once its record is durable.
    engine.tracer().flush().unwrap();
    // The tool runs, then reports.
    fs::write(ws.path().join("src/auth/login.js"), "a\nB\nc\nd\n").unwrap();
    let mut done = write("a\nB\nc\nd\n");
    done.kind = EventKind::PostToolUse;
    engine.evaluate(done).unwrap();
    engine.evaluate(event(EventKind::TaskComplete, None, serde_json::Value::Null)).unwrap();
    engine.tracer().flush().unwrap();

    let records = ledger(&ws);
    let summary: Vec<String> = records
        .iter()
        .map(|r| {
            format!(
                "{} {:?} {} {}",
                r.seq,
                r.kind,
                r.event.as_deref().unwrap_or("-"),
                r.decision.as_ref().map_or("-", |d| d.decision.as_str())
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            "1 Lifecycle SessionStart allow",
            "2 ToolCall PreToolUse deny",
            "3 ToolCall PreToolUse allow",
            "4 ToolCall PreToolUse allow",
            "5 ToolCall PostToolUse allow",
            "6 Lifecycle TaskComplete allow"
        ]
    );
    assert_eq!(records[0].prev, GENESIS);
    let lines: Vec<String> = chokepoint_core::ledger::chains::all_lines(&chokepoint_core::Sidecar::new(ws.path()));
    for i in 1..lines.len() {
        assert_eq!(
            records[i].prev,
            chokepoint_core::ledger::record::line_hash(&lines[i - 1]),
            "record {} chains to its predecessor",
            i + 1
        );
    }
    assert!(records[1].decision.as_ref().unwrap().reason.as_deref().unwrap().contains("select_active_intent"));
    assert_eq!(records[1].decision.as_ref().unwrap().hooks[0].name, "gatekeeper");
    assert_eq!(records[1].intent, None);
    assert_eq!(records[2].intent.as_deref(), Some("INT-001"), "the handshake's record names the intent it selected");
    assert_eq!(records[5].intent.as_deref(), Some("INT-001"), "the end of the task names the intent it released");
    assert_eq!(records[3].agent.as_deref(), Some("claude-code"));
    assert_eq!(
        records[3].input_sha256.as_deref(),
        Some(chokepoint_core::ledger::record::digest_json(&json!({ "path": "src/auth/login.js", "content": "a\nB\nc\nd\n" })).as_str())
    );
    // The write's ranges: line 2 replaced and line 4 added, each with the hash of its content.
    let files = &records[4].files;
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].path, "src/auth/login.js");
    let ranges: Vec<(u32, u32, String)> = files[0].ranges.iter().map(|r| (r.start, r.end, r.sha256.clone())).collect();
    let h = |s: &str| chokepoint_core::ledger::record::sha256_hex(s.as_bytes());
    assert_eq!(ranges, [(2, 2, h("B")), (4, 4, h("d"))]);
    // Record version 3: each range also has a digest of each of its lines (since version 2), and the
    // file the hash of its text before the write (since version 3).
    assert_eq!(records[4].v, 3);
    assert_eq!(files[0].before_sha256.as_deref(), Some(h("a\nb\nc\n").as_str()));
    let digests: Vec<Option<&str>> = files[0].ranges.iter().map(|r| r.line_digests.as_deref()).collect();
    assert_eq!(digests, [Some(&h("B")[..8]), Some(&h("d")[..8])]);
    assert_eq!(files[0].sha256.as_deref(), Some(h("a\nB\nc\nd\n").as_str()));
}

#[tokio::test]
async fn the_asynchronous_entry_answers_once_the_record_is_durable() {
    let (ws, engine) = governed();
    let e = engine.evaluate_async(event(EventKind::PreToolUse, Some("read_file"), json!({ "path": "x" })), None).await;
    assert_eq!(e.decision, Decision::Allow);
    // No flush: the record is already in the file.
    assert_eq!(ledger(&ws).len(), 1);
    // The wait for it is reported apart from the hooks' own time, which never includes it.
    assert!(e.durable_wait_ns > 0, "the gate waited for a sync");
    let hooks: u64 = e.outcomes.iter().map(|o| o.duration_ns).sum();
    assert!(hooks < e.durable_wait_ns, "hooks {hooks} ns, durability {} ns", e.durable_wait_ns);
    // A result is not waited for: it is durable before the next gate answers.
    let result = engine.evaluate_async(event(EventKind::PostToolUse, Some("read_file"), json!({ "path": "x" })), None).await;
    assert_eq!(result.durable_wait_ns, 0);
}

#[test]
fn an_ungoverned_workspace_keeps_no_ledger_and_a_hooks_own_question_is_not_recorded() {
    let ws = tempfile::tempdir().unwrap();
    let engine = Engine::open(ws.path()).unwrap();
    engine.evaluate(event(EventKind::PreToolUse, Some("write_to_file"), json!({ "path": "a" }))).unwrap();
    assert!(!ws.path().join(".orchestration").exists(), "judging creates nothing");

    let (ws, engine) = governed();
    let mut inner = event(EventKind::PreToolUse, Some("read_file"), json!({}));
    inner.depth = 1;
    engine.evaluate(inner).unwrap();
    engine.tracer().flush().unwrap();
    assert!(ledger(&ws).is_empty());
}

#[test]
fn records_of_several_engines_on_one_workspace_form_one_chain() {
    let (ws, engine) = governed();
    let other = Engine::open(ws.path()).unwrap();
    for i in 0..20 {
        let e = event(EventKind::TurnStart, None, serde_json::Value::Null);
        if i % 2 == 0 {
            engine.evaluate(e).unwrap()
        } else {
            other.evaluate(e).unwrap()
        };
        engine.tracer().flush().unwrap();
        other.tracer().flush().unwrap();
    }
    let records = ledger(&ws);
    assert_eq!(records.iter().map(|r| r.seq).collect::<Vec<_>>(), (1..=20).collect::<Vec<u64>>());
    assert!(records.iter().all(|r| r.kind == RecordKind::Lifecycle));
}

#[test]
fn a_contained_command_is_recorded_with_what_containment_saw() {
    let (ws, engine) = governed();
    fs::write(ws.path().join(".orchestration/hooks.yaml"), "version: 1\ngatekeeper:\n  landlock: off\n").unwrap();
    engine.reload();
    fs::write(ws.path().join("README.md"), "keep\n").unwrap();
    engine.evaluate(event(EventKind::PreToolUse, Some("select_active_intent"), json!({ "intent_id": "INT-001" }))).unwrap();
    // In sh, or in Windows' cmd (whose `&` is sh's `;`).
    let script = if cfg!(windows) { "echo 1 > src/auth/a.js & echo no > README.md" } else { "echo 1 > src/auth/a.js; echo no > README.md" };
    let shell = chokepoint_core::containment::Shell::script(script, ws.path());
    // Observed (the core alone cannot isolate): the change outside the scope is kept and recorded.
    let report = engine.run_contained("S", shell, None, None).unwrap();
    assert_eq!(report.unattributed.len(), 1);
    let records = ledger(&ws);
    let last = records.last().unwrap();
    assert_eq!(last.kind, RecordKind::Containment);
    assert_eq!(last.intent.as_deref(), Some("INT-001"));
    assert_eq!(last.files.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(), ["src/auth/a.js"]);
    let data = last.data.as_ref().unwrap();
    assert_eq!(data["unattributed"], json!([{ "path": "README.md", "kind": "modified" }]));
    assert!(data["isolation"].as_str().unwrap().starts_with("observed: "), "{}", data["isolation"]);
    let argv: Vec<String> = chokepoint_core::base::shell::script_argv(script).iter().map(|a| a.to_string_lossy().into_owned()).collect();
    assert_eq!(data["argv"], json!(argv));
}

#[test]
fn the_tracer_reads_back_through_its_index_every_durable_record_and_blames_by_content() {
    let (ws, engine) = governed();
    let by_intent =
        |intent: &str| chokepoint_core::ledger::index::Filter { intent: Some(intent.into()), newest_first: true, ..Default::default() };
    assert!(engine.tracer().query(&by_intent("INT-001")).unwrap().is_empty(), "an empty ledger has no records");
    let write =
        |content: &str| event(EventKind::PreToolUse, Some("write_to_file"), json!({ "path": "src/auth/login.js", "content": content }));
    engine.evaluate(event(EventKind::PreToolUse, Some("select_active_intent"), json!({ "intent_id": "INT-001" }))).unwrap();
    engine.evaluate(write("one\ntwo\n")).unwrap();
    engine.tracer().flush().unwrap();
    fs::write(ws.path().join("src/auth/login.js"), "one\ntwo\n").unwrap();
    let mut done = write("one\ntwo\n");
    done.kind = EventKind::PostToolUse;
    engine.evaluate(done).unwrap();
    engine.tracer().flush().unwrap();
    // The index was opened by the first read; the records since are caught up, newest first.
    let seqs: Vec<u64> = engine.tracer().query(&by_intent("INT-001")).unwrap().iter().map(|r| r.seq).collect();
    assert_eq!(seqs, [3, 2, 1]);
    assert!(engine.tracer().query(&by_intent("INT-002")).unwrap().is_empty());
    // Two lines typed above the write: blame still finds it, where it moved.
    fs::write(ws.path().join("src/auth/login.js"), "// a\n// b\none\ntwo\n").unwrap();
    let line = engine.tracer().blame("src/auth/login.js", Some(4)).unwrap().remove(0);
    let origin = line.origin.expect("the write explains line 4");
    assert_eq!((line.text.as_str(), origin.seq, origin.intent.as_deref(), origin.found), ("two", 3, Some("INT-001"), (3, 4)));
    assert_eq!(engine.tracer().blame("src/auth/login.js", Some(1)).unwrap()[0].origin, None, "typed by hand");
    assert!(engine.tracer().blame("src/auth/login.js", Some(9)).unwrap_err().message().contains("there is no line 9"));
    assert!(engine.tracer().blame("../outside.js", Some(1)).unwrap_err().message().contains("not a workspace-relative path"));

    let bare = tempfile::tempdir().unwrap();
    let ungoverned = Engine::open(bare.path()).unwrap();
    assert!(ungoverned.tracer().query(&chokepoint_core::ledger::index::Filter::default()).unwrap().is_empty());
    assert!(ungoverned.tracer().blame("a.js", Some(1)).unwrap_err().message().contains("no .orchestration folder"));
}

/// A write a hook asked about and a person approved runs like an allowed one: its result records
/// the lines it wrote, so "Show Provenance of Line" explains them (it once said "no record explains
/// it" because an ask kept no before-image).
#[test]
fn an_asked_write_that_ran_records_its_lines_and_blame_finds_them() {
    let (ws, engine) = governed();
    fs::write(
        ws.path().join(".orchestration/hooks.yaml"),
        "version: 1\nhooks:\n  PreToolUse:\n    - name: review\n      tool: write_to_file\n      ask: a person reviews writes\n",
    )
    .unwrap();
    assert!(engine.reload().is_empty());
    fs::write(ws.path().join("src/auth/login.js"), "one\ntwo\n").unwrap();
    engine.evaluate(event(EventKind::PreToolUse, Some("select_active_intent"), json!({ "intent_id": "INT-001" }))).unwrap();
    let write =
        || event(EventKind::PreToolUse, Some("write_to_file"), json!({ "path": "src/auth/login.js", "content": "one\nnew\ntwo\n" }));
    assert!(matches!(engine.evaluate(write()).unwrap().decision, Decision::Ask { .. }));
    engine.tracer().flush().unwrap();
    // Approved: the agent writes, and its hook reports the result.
    fs::write(ws.path().join("src/auth/login.js"), "one\nnew\ntwo\n").unwrap();
    let mut done = write();
    done.kind = EventKind::PostToolUse;
    engine.evaluate(done).unwrap();
    engine.tracer().flush().unwrap();
    let after = ledger(&ws).into_iter().rev().find(|r| r.event.as_deref() == Some("PostToolUse")).unwrap();
    assert_eq!(after.files.len(), 1);
    assert_eq!((after.files[0].ranges.len(), after.files[0].ranges[0].start, after.files[0].ranges[0].end), (1, 2, 2), "{after:?}");
    let line = engine.tracer().blame("src/auth/login.js", Some(2)).unwrap().remove(0);
    assert_eq!(line.origin.map(|o| o.seq), Some(after.seq), "the approved write explains its line");
}

/// The record of an allowed write is built off the judging thread (its before-image read there too),
/// but always before the asynchronous entry answers: a tool that runs on the answer cannot change the
/// file before its before-image is taken.
#[test]
fn the_asynchronous_entry_answers_a_write_only_once_its_before_image_is_taken() {
    let (ws, engine) = governed();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    fs::write(ws.path().join("src/auth/login.js"), "a\nb\nc\n").unwrap();
    let write =
        |content: &str| event(EventKind::PreToolUse, Some("write_to_file"), json!({ "path": "src/auth/login.js", "content": content }));
    rt.block_on(engine.evaluate_async(event(EventKind::PreToolUse, Some("select_active_intent"), json!({ "intent_id": "INT-001" })), None));
    for round in 0..20 {
        let before = fs::read_to_string(ws.path().join("src/auth/login.js")).unwrap();
        let after = format!("{before}line {round}\n");
        assert_eq!(rt.block_on(engine.evaluate_async(write(&after), None)).decision, Decision::Allow);
        // The tool runs at once on the answer, with no flush of its own.
        fs::write(ws.path().join("src/auth/login.js"), &after).unwrap();
        let mut done = write(&after);
        done.kind = EventKind::PostToolUse;
        rt.block_on(engine.evaluate_async(done, None));
    }
    engine.tracer().flush().unwrap();
    let results: Vec<Record> = ledger(&ws).into_iter().filter(|r| r.event.as_deref() == Some("PostToolUse")).collect();
    assert_eq!(results.len(), 20);
    for (round, record) in results.iter().enumerate() {
        let ranges: Vec<(u32, u32)> = record.files[0].ranges.iter().map(|r| (r.start, r.end)).collect();
        let line = 4 + round as u32;
        assert_eq!(ranges, [(line, line)], "round {round}: only the appended line is the write's");
    }
}

/// The files of `.orchestration/state.db` this process has open (Linux: `/proc/self/fd`).
#[cfg(target_os = "linux")]
fn open_state_dbs(ws: &tempfile::TempDir) -> usize {
    let db = fs::canonicalize(ws.path().join(".orchestration")).unwrap().join("state.db");
    fs::read_dir("/proc/self/fd").unwrap().filter_map(|fd| fs::read_link(fd.ok()?.path()).ok()).filter(|target| *target == db).count()
}

/// A `chokepoint hook` judging alone opens the engine for one call: one connection to state.db for
/// the gatekeeper's lease, the expansions and the ledger's head (each connection reads the whole
/// schema first), and the write-ahead log left for the next process, kept short, instead of a
/// checkpoint and its syncs at every close.
#[cfg(target_os = "linux")]
#[test]
fn an_engine_opens_the_state_database_once_and_leaves_a_short_log_behind() {
    let (ws, _) = governed();
    let wal = ws.path().join(".orchestration/state.db-wal");
    let write = event(EventKind::PreToolUse, Some("write_to_file"), json!({ "path": "src/auth/a.js", "content": "a" }));
    let select = event(EventKind::PreToolUse, Some("select_active_intent"), json!({ "intent_id": "INT-001" }));
    for round in 0..60 {
        let engine = Engine::open(ws.path()).unwrap();
        if round == 0 {
            engine.evaluate(select.clone()).unwrap();
        }
        assert_eq!(engine.evaluate(write.clone()).unwrap().decision, Decision::Allow);
        engine.tracer().flush().unwrap();
        if round == 0 {
            // Leases and expansions (the gate), the head (the ledger's writer and syncer).
            assert_eq!(open_state_dbs(&ws), 1, "one connection to state.db per engine");
        }
        drop(engine);
        let pages = fs::metadata(&wal).map(|m| m.len()).unwrap_or(0) / 4096;
        if round == 0 {
            assert!(pages > 0, "the log stays when the last connection closes");
        }
        // Checkpointed and truncated from 32 pages on; a commit here writes a few pages.
        assert!(pages <= 40, "round {round}: the log is checkpointed before it grows long ({pages} pages)");
    }
    assert_eq!(ledger(&ws).len(), 61);
}

/// A before-image is read from whatever the written path names. A FIFO there (an agent can make one
/// with its shell) once blocked the ledger's writer thread in `open` until something wrote to the
/// FIFO: every later record, and every gate waiting on one, waited with it.
#[cfg(unix)]
#[test]
fn a_fifo_under_a_written_path_does_not_stall_the_ledger() {
    let (ws, engine) = governed();
    nix::unistd::mkfifo(&ws.path().join("src/auth/pipe"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    engine.evaluate(event(EventKind::PreToolUse, Some("select_active_intent"), json!({ "intent_id": "INT-001" }))).unwrap();
    let write = event(EventKind::PreToolUse, Some("write_to_file"), json!({ "path": "src/auth/pipe", "content": "x" }));
    assert_eq!(engine.evaluate(write).unwrap().decision, Decision::Allow, "a FIFO in scope is not refused");
    let engine = std::sync::Arc::new(engine);
    let (done, flushed) = std::sync::mpsc::channel();
    std::thread::spawn({
        let engine = std::sync::Arc::clone(&engine);
        move || done.send(engine.tracer().flush()).unwrap()
    });
    let flushed = flushed.recv_timeout(std::time::Duration::from_secs(10)).expect("the write's record became durable within 10 s");
    flushed.unwrap();
    let records = ledger(&ws);
    assert_eq!(records.last().unwrap().tool.as_deref(), Some("write_to_file"));
}

/// Writes `content` to `path` as an agent's allowed tool call does (its `PreToolUse`, the write, its
/// `PostToolUse`) and returns the result's record.
fn allowed_write(ws: &tempfile::TempDir, engine: &Engine, path: &str, content: &str) -> Record {
    let write = || event(EventKind::PreToolUse, Some("write_to_file"), json!({ "path": path, "content": content }));
    assert_eq!(engine.evaluate(write()).unwrap().decision, Decision::Allow);
    engine.tracer().flush().unwrap();
    fs::write(ws.path().join(path), content).unwrap();
    let mut done = write();
    done.kind = EventKind::PostToolUse;
    engine.evaluate(done).unwrap();
    engine.tracer().flush().unwrap();
    ledger(ws).into_iter().rev().find(|r| r.event.as_deref() == Some("PostToolUse")).unwrap()
}

fn sha(text: &str) -> String {
    chokepoint_core::ledger::record::sha256_hex(text.as_bytes())
}

#[test]
fn an_allowed_writes_result_keeps_its_before_and_after_images_by_hash() {
    let (ws, engine) = governed();
    fs::write(ws.path().join("src/auth/login.js"), "a\nb\nc\n").unwrap();
    engine.evaluate(event(EventKind::PreToolUse, Some("select_active_intent"), json!({ "intent_id": "INT-001" }))).unwrap();

    let result = allowed_write(&ws, &engine, "src/auth/login.js", "a\nB\nc\nd\n");
    let file = &result.files[0];
    assert_eq!(file.before_sha256, Some(sha("a\nb\nc\n")), "{result:?}");
    assert_eq!(file.sha256, Some(sha("a\nB\nc\nd\n")));
    let tracer = engine.tracer();
    assert_eq!(tracer.image(file.before_sha256.as_ref().unwrap()).as_deref(), Some("a\nb\nc\n"));
    assert_eq!(tracer.image(file.sha256.as_ref().unwrap()).as_deref(), Some("a\nB\nc\nd\n"));
    // In a runtime file of the sidecar, which git ignores; the ledger holds hashes only.
    assert!(ws.path().join(".orchestration/images.db").is_file());
    let ignore = fs::read_to_string(ws.path().join(".orchestration/.gitignore")).unwrap();
    assert!(ignore.lines().any(|l| l == "images.db") && ignore.lines().any(|l| l == "images.db-*"), "{ignore}");
    let ledger_text = chokepoint_core::ledger::chains::all_lines(&chokepoint_core::Sidecar::new(ws.path())).join("\n");
    assert!(!ledger_text.contains("a\\nB\\nc"), "no file content in the ledger");

    // A file the write created: its before-image is the empty text, known without the store.
    let created = allowed_write(&ws, &engine, "src/auth/new.js", "fresh\n");
    let file = &created.files[0];
    assert_eq!(file.before_sha256.as_deref(), Some(chokepoint_core::ledger::images::EMPTY_SHA256));
    assert_eq!(tracer.image(chokepoint_core::ledger::images::EMPTY_SHA256).as_deref(), Some(""));
    assert_eq!(tracer.image(file.sha256.as_ref().unwrap()).as_deref(), Some("fresh\n"));

    // Never kept: an unknown hash has no image.
    assert_eq!(tracer.image(&sha("never written")), None);
}

#[test]
fn a_store_that_cannot_be_written_fails_neither_the_gate_nor_the_ledger() {
    let (ws, engine) = governed();
    fs::create_dir_all(ws.path().join(".orchestration/images.db")).unwrap();
    fs::write(ws.path().join("src/auth/login.js"), "a\n").unwrap();
    engine.evaluate(event(EventKind::PreToolUse, Some("select_active_intent"), json!({ "intent_id": "INT-001" }))).unwrap();
    let result = allowed_write(&ws, &engine, "src/auth/login.js", "b\n");
    // The record names the images all the same; only their diff cannot be shown.
    assert_eq!(result.files[0].before_sha256, Some(sha("a\n")));
    assert_eq!(engine.tracer().image(&sha("a\n")), None);
    let verification = chokepoint_core::ledger::audit::verify_ledger(engine.sidecar()).unwrap();
    assert!(verification.is_intact(), "{:?}", verification.first_problem());
}

#[test]
fn a_file_over_the_image_cap_is_recorded_without_images() {
    let (ws, engine) = governed();
    let big = "x".repeat(8 * 1024 * 1024) + "\n";
    fs::write(ws.path().join("src/auth/big.txt"), &big).unwrap();
    engine.evaluate(event(EventKind::PreToolUse, Some("select_active_intent"), json!({ "intent_id": "INT-001" }))).unwrap();
    let result = allowed_write(&ws, &engine, "src/auth/big.txt", "small now\n");
    let file = &result.files[0];
    assert_eq!(file.before_sha256, None, "a before-image too large to read names no diff");
    assert_eq!(engine.tracer().image(&sha(&big)), None);

    // The store refuses one over its own cap too.
    let dir = tempfile::tempdir().unwrap();
    let caps = chokepoint_core::ledger::images::Caps { image: 10, total: 100 };
    let store = chokepoint_core::ledger::images::ImageStore::with_caps(dir.path().join("images.db"), caps);
    assert!(store.put(&sha("eleven byte"), "eleven byte").unwrap_err().contains("over the cap"));
    store.keep(sha("eleven byte"), "eleven byte".to_owned());
    assert_eq!(store.get(&sha("eleven byte")), None);
    store.keep(sha("ten bytes!"), "ten bytes!".to_owned());
    assert_eq!(store.get(&sha("ten bytes!")).as_deref(), Some("ten bytes!"));
}

#[test]
fn the_store_prunes_the_oldest_images_beyond_its_total() {
    use chokepoint_core::ledger::images::{Caps, ImageStore};
    let dir = tempfile::tempdir().unwrap();
    let store = ImageStore::with_caps(dir.path().join("images.db"), Caps { image: 100, total: 250 });
    let text = |c: char| c.to_string().repeat(100);
    let kept =
        |store: &ImageStore| -> String { ['a', 'b', 'c', 'd'].into_iter().filter(|&c| store.get(&sha(&text(c))).is_some()).collect() };
    for c in ['a', 'b', 'c'] {
        store.keep(sha(&text(c)), text(c));
    }
    assert_eq!(kept(&store), "bc", "the oldest goes once the total passes the cap");
    assert_eq!(store.stored_bytes(), 200);
    // Stored again, `b` is the newest: `c` goes before it.
    store.keep(sha(&text('b')), text('b'));
    store.keep(sha(&text('d')), text('d'));
    assert_eq!(kept(&store), "bd");
    // A store opened again keeps what was stored.
    drop(store);
    let again = ImageStore::with_caps(dir.path().join("images.db"), Caps { image: 100, total: 250 });
    assert_eq!(kept(&again), "bd");
}

/// The ids of the stored texts, oldest first, each with its text (`images.db` read directly: what
/// the store holds, without storing what is queued as `ImageStore::get` would); an error while the
/// store is still being made.
fn stored_texts(ws: &tempfile::TempDir) -> rusqlite::Result<Vec<(i64, String)>> {
    let conn = rusqlite::Connection::open(ws.path().join(".orchestration/images.db"))?;
    let mut rows = conn.prepare("SELECT id, text FROM images ORDER BY id")?;
    rows.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?.collect()
}

#[test]
fn a_file_written_again_names_the_last_writes_after_image_and_it_is_stored_once() {
    let (ws, engine) = governed();
    fs::write(ws.path().join("src/auth/login.js"), "v0\n").unwrap();
    engine.evaluate(event(EventKind::PreToolUse, Some("select_active_intent"), json!({ "intent_id": "INT-001" }))).unwrap();
    let mut previous = sha("v0\n");
    for n in 1..=3 {
        let result = allowed_write(&ws, &engine, "src/auth/login.js", &format!("v{n}\n"));
        assert_eq!(result.files[0].before_sha256.as_ref(), Some(&previous));
        previous = result.files[0].sha256.clone().unwrap();
    }
    engine.tracer().settle_images();
    // Each text once, in the order written: the before-image of writes 2 and 3 was the after-image
    // the write before had stored, and was not stored again (which would have renewed its id).
    let stored: Vec<(i64, String)> = stored_texts(&ws).unwrap();
    assert_eq!(stored, [(1, "v0\n".into()), (2, "v1\n".into()), (3, "v2\n".into()), (4, "v3\n".into())]);
    // A person edits the file between two writes: the next write's before-image is theirs, stored.
    fs::write(ws.path().join("src/auth/login.js"), "by hand\n").unwrap();
    let result = allowed_write(&ws, &engine, "src/auth/login.js", "v4\n");
    assert_eq!(result.files[0].before_sha256, Some(sha("by hand\n")));
    let tracer = engine.tracer();
    assert_eq!(tracer.image(&sha("by hand\n")).as_deref(), Some("by hand\n"));
    for n in 0..=4 {
        assert_eq!(tracer.image(&sha(&format!("v{n}\n"))), Some(format!("v{n}\n")));
    }
}

/// The texts of a batch's writes are stored by the ledger after the batch, with no reader asking.
#[test]
fn the_ledger_stores_a_writes_images_after_its_batch() {
    let (ws, engine) = governed();
    fs::write(ws.path().join("src/auth/login.js"), "before\n").unwrap();
    engine.evaluate(event(EventKind::PreToolUse, Some("select_active_intent"), json!({ "intent_id": "INT-001" }))).unwrap();
    allowed_write(&ws, &engine, "src/auth/login.js", "after\n");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let texts = loop {
        let texts: Vec<String> = stored_texts(&ws).unwrap_or_default().into_iter().map(|(_, text)| text).collect();
        if texts.len() == 2 || std::time::Instant::now() > deadline {
            break texts;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    assert_eq!(texts, ["before\n", "after\n"]);
}

#[test]
fn the_stores_total_is_counted_once_and_kept_by_every_store_that_shares_it() {
    use chokepoint_core::ledger::images::{Caps, ImageStore};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("images.db");
    // A store made before its total was kept: its texts are summed once, when it is next opened.
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(
            "CREATE TABLE images (id INTEGER PRIMARY KEY, sha256 TEXT NOT NULL UNIQUE, bytes INTEGER NOT NULL, text TEXT NOT NULL);
             INSERT INTO images (sha256, bytes, text) VALUES ('a', 3, 'aaa'), ('b', 4, 'bbbb');",
        )
        .unwrap();
    }
    let caps = Caps { image: 100, total: 20 };
    let one = ImageStore::with_caps(db.clone(), caps);
    assert_eq!(one.stored_bytes(), 7);
    // Two stores on one database, as two processes: each keeps the total the other changed.
    let two = ImageStore::with_caps(db.clone(), caps);
    one.keep(sha("ccccc"), "ccccc".into());
    one.settle();
    two.keep(sha("dddddd"), "dddddd".into());
    two.keep(sha("ccccc"), "ccccc".into());
    two.settle();
    assert_eq!((one.stored_bytes(), two.stored_bytes()), (18, 18));
    // Past the cap the oldest go, and the total follows.
    one.keep(sha("eeee"), "eeee".into());
    one.settle();
    let sum: i64 =
        rusqlite::Connection::open(&db).unwrap().query_row("SELECT total(bytes) FROM images", [], |r| r.get::<_, f64>(0)).unwrap() as i64;
    assert_eq!((two.stored_bytes(), sum), (19, 19), "the oldest, a, went: 22 bytes were 2 over the cap");
    assert_eq!((one.get("a"), one.get("b").as_deref()), (None, Some("bbbb")));
    assert_eq!(one.get(&sha("ccccc")).as_deref(), Some("ccccc"));
}

/// `before_sha256` is written only when there is one, so records written before it existed (and any
/// record without it) serialise to the same bytes: their line hashes, and the chain, are unchanged.
/// It came with record version 3: a version-2 record that has one was written by no engine.
#[test]
fn a_record_without_a_before_hash_serialises_as_before() {
    let old = r#"{"v":2,"seq":5,"time":"2026-11-22T05:00:00.000Z","prev":"0000000000000000000000000000000000000000000000000000000000000000","kind":"tool_call","event":"PostToolUse","session":"S","tool":"write_to_file","files":[{"path":"src/a.js","sha256":"ab","ranges":[{"start":1,"end":1,"sha256":"cd","line_digests":"0011aabb"}]}]}"#;
    let record = Record::from_line(old).unwrap();
    assert_eq!(record.files[0].before_sha256, None);
    assert_eq!(record.to_line(), old);
    let mut with = record.clone();
    with.files[0].before_sha256 = Some("ef".into());
    let line = with.to_line();
    assert!(line.contains(r#""sha256":"ab","before_sha256":"ef","ranges""#), "{line}");
    assert!(Record::from_line(&line).unwrap_err().message().contains("version 2 record has no before_sha256"));
    with.v = 3;
    let line = with.to_line();
    assert_eq!(Record::from_line(&line).unwrap(), with);
}
