//! The lessons of the shared brain, kept in the coordination database (`Sidecar::coordination_db`:
//! shared by every worktree of a git repository, so what one worktree's agents learnt reaches the
//! others; else the workspace's state database): what the workspace learnt from a gate that kept
//! saying no, each linked to the ledger record that taught it (in the ledger of the worktree where
//! it was learnt).
//!
//! Two things make a lesson:
//! - **a denial that repeats**: the same hook, the same reason and the same intent [`REPEATS`] times
//!   within a day (counted per key in `brain_denials_v1`, across processes); the lesson is made
//!   once, when the count reaches [`REPEATS`], however often it repeats after;
//! - **a completion that failed and then passed**: a task's `BeforeSubmit` denied (kept in
//!   `brain_submits_v1`, by task, else session), then allowed in a later round.
//!
//! A lesson's key says what it is about (the hook, the reason, the intent), so the same lesson is
//! never written twice (`INSERT OR IGNORE`), and it keeps the `seq` and line hash of the record that
//! taught it. At most [`KEPT`] lessons are kept, the newest; the
//! denial counters are bounded the same way ([`COUNTERS_KEPT`]).
//!
//! Why a table rather than the generated section itself: every process on the workspace appends
//! lessons, and a `BEGIN IMMEDIATE` transaction in the state database serialises their
//! read-modify-writes (the count, the dedup, the bound) as it does the leases'; the section is then a
//! rendering of the table, which nothing can lose: a person who damages the section, or a contained
//! command whose change to the file is refused, costs the file a rewrite, not a lesson.

use crate::base::sqlite::StateDb;
use rusqlite::{OptionalExtension, TransactionBehavior, params};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// How many times the same denial (hook, reason, intent) makes a lesson.
pub const REPEATS: u32 = 3;

/// How many lessons are kept: the newest.
pub const KEPT: usize = 20;

/// How many denial counters are kept: the most recently seen.
const COUNTERS_KEPT: usize = 256;

/// A denial counted longer ago than this starts again from one: three refusals a month apart are
/// not a pattern.
const COUNT_WINDOW_MS: u64 = 24 * 60 * 60 * 1000;

/// The most of a reason a lesson quotes: a lesson is a line, not a log.
const REASON_CHARS: usize = 240;

const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS brain_lessons_v1 (
        key      TEXT PRIMARY KEY,   -- what makes two lessons the same
        added    INTEGER NOT NULL,   -- the order they were learnt in
        text     TEXT NOT NULL,
        intent   TEXT,
        seq      INTEGER NOT NULL,   -- the ledger record that taught it
        hash     TEXT NOT NULL,      -- and its line hash
        time_ms  INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS brain_denials_v1 (
        key      TEXT PRIMARY KEY,
        count    INTEGER NOT NULL,
        seq      INTEGER NOT NULL,
        time_ms  INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS brain_submits_v1 (
        task     TEXT PRIMARY KEY,   -- the task, else the session
        failed   TEXT NOT NULL,      -- what failed: the deciding hooks and the reason
        fix      TEXT,               -- the failing hook's remediation, when it gave one
        intent   TEXT,
        seq      INTEGER NOT NULL,
        hash     TEXT NOT NULL
    );
";

/// A gate's answer as the brain sees it, once its record is durable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Noticed {
    /// The record's `seq` and line hash: the lesson's link into the ledger.
    pub seq: u64,
    pub hash: String,
    pub time_ms: u64,
    pub event: String,
    pub tool: Option<String>,
    pub intent: Option<String>,
    /// The task, else the session: what a completion's rounds belong to.
    pub task: Option<String>,
    /// Whether the chain denied.
    pub denied: bool,
    /// The hooks that denied (or failed closed), in chain order.
    pub hooks: Vec<String>,
    pub reason: Option<String>,
    pub remediation: Option<String>,
}

/// One lesson, as the section renders it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lesson {
    pub text: String,
    pub intent: Option<String>,
    pub seq: u64,
    pub hash: String,
    pub time_ms: u64,
}

crate::base::error::domain_error! {
    /// The lessons could not be read or written: the state database failed.
    LessonError
}

/// The lessons of one workspace (of every worktree of its repository), in the coordination database.
#[derive(Debug)]
pub(crate) struct Lessons {
    state: Arc<StateDb>,
    /// Whether this process has made the tables: once, not in every transaction (parsing the schema
    /// cost more than counting a denial). Cleared when a transaction fails, in case the database was
    /// replaced under the process.
    schema_made: AtomicBool,
}

impl Lessons {
    pub(crate) fn on(state: Arc<StateDb>) -> Lessons {
        Lessons { state, schema_made: AtomicBool::new(false) }
    }

    /// Counts what `noticed` says and learns from it; `true` when a lesson was added.
    #[cfg(test)]
    pub(crate) fn notice(&self, noticed: &Noticed) -> Result<bool, LessonError> {
        self.notice_all(std::slice::from_ref(noticed))
    }

    /// Counts every notice, in order, in one transaction (the brain's worker takes what queued while
    /// it was busy: a burst of denials is one commit, not one each); `true` when a lesson was added.
    pub(crate) fn notice_all(&self, notices: &[Noticed]) -> Result<bool, LessonError> {
        if !notices.iter().any(|n| n.denied || n.event == "BeforeSubmit") {
            return Ok(false);
        }
        self.transaction("learn from a gate", |tx| {
            let mut learnt = false;
            for noticed in notices {
                learnt |= if noticed.event == "BeforeSubmit" {
                    submitted(tx, noticed)?
                } else if noticed.denied {
                    denied(tx, noticed)?
                } else {
                    false
                };
            }
            Ok(learnt)
        })
    }

    /// Every lesson kept, oldest first.
    pub fn list(&self) -> Result<Vec<Lesson>, LessonError> {
        // Reading creates nothing: a workspace that never learnt anything has no state to open.
        if !self.state.path().exists() {
            return Ok(Vec::new());
        }
        self.transaction("read the lessons", |tx| {
            let mut statement = tx.prepare_cached("SELECT text, intent, seq, hash, time_ms FROM brain_lessons_v1 ORDER BY added")?;
            let rows = statement.query_map([], |row| {
                Ok(Lesson { text: row.get(0)?, intent: row.get(1)?, seq: uint(row.get(2)?), hash: row.get(3)?, time_ms: uint(row.get(4)?) })
            })?;
            rows.collect()
        })
    }

    /// Runs `body` in one `BEGIN IMMEDIATE` transaction (the schema made first, once per process):
    /// another process's count, dedup or bound is never interleaved with this one's. The
    /// connection's busy handler waits for another process's transaction (`base::sqlite::BUSY_TIMEOUT`).
    fn transaction<T>(&self, op: &str, body: impl FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<T>) -> Result<T, LessonError> {
        let fail = |e: rusqlite::Error| {
            self.schema_made.store(false, Ordering::Relaxed);
            LessonError::from(format!("cannot {op} in {}: {e}", self.state.path().display()))
        };
        let mut conn = self.state.lock().map_err(fail)?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(fail)?;
        if !self.schema_made.load(Ordering::Relaxed) {
            tx.execute_batch(SCHEMA).map_err(fail)?;
        }
        let value = body(&tx).map_err(fail)?;
        tx.commit().map_err(fail)?;
        self.schema_made.store(true, Ordering::Relaxed);
        Ok(value)
    }
}

/// A denial other than a completion's: counted by (hook, reason, intent); the [`REPEATS`]th makes
/// the lesson.
fn denied(tx: &rusqlite::Transaction<'_>, noticed: &Noticed) -> rusqlite::Result<bool> {
    let hook = noticed.hooks.first().map(String::as_str).unwrap_or("the chain");
    let reason = noticed.reason.as_deref().unwrap_or("no reason given");
    let key = format!("denied\u{1f}{hook}\u{1f}{reason}\u{1f}{}", noticed.intent.as_deref().unwrap_or_default());
    let seen: Option<(i64, i64)> = tx
        .prepare_cached("SELECT count, time_ms FROM brain_denials_v1 WHERE key = ?1")?
        .query_row([&key], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?;
    let count = match seen {
        Some((count, time)) if noticed.time_ms.saturating_sub(uint(time)) <= COUNT_WINDOW_MS => uint(count) + 1,
        _ => 1,
    };
    tx.prepare_cached(
        "INSERT INTO brain_denials_v1 (key, count, seq, time_ms) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (key) DO UPDATE SET count = excluded.count, seq = excluded.seq, time_ms = excluded.time_ms",
    )?
    .execute(params![key, int(count), int(noticed.seq), int(noticed.time_ms)])?;
    // Only a new counter can take the table past its bound.
    if seen.is_none() {
        tx.prepare_cached(
            "DELETE FROM brain_denials_v1 WHERE key NOT IN (SELECT key FROM brain_denials_v1 ORDER BY time_ms DESC, seq DESC LIMIT ?1)",
        )?
        .execute([COUNTERS_KEPT as i64])?;
    }
    if count != u64::from(REPEATS) {
        return Ok(false);
    }
    let tool = noticed.tool.as_deref().map(|t| format!(" `{t}`")).unwrap_or_default();
    let mut text = format!("`{hook}` refused{tool} {REPEATS} times ({}): {}.", noticed.event, clip(reason));
    match &noticed.remediation {
        Some(fix) => text.push_str(&format!(" What fixes it: {}", clip(fix))),
        None => text.push_str(" What fixes it: not trying it again; read the reason."),
    }
    learn(tx, &key, &text, noticed)
}

/// A completion's round: a denial is kept for its task; an allow after one makes the lesson.
fn submitted(tx: &rusqlite::Transaction<'_>, noticed: &Noticed) -> rusqlite::Result<bool> {
    let Some(task) = noticed.task.as_deref() else { return Ok(false) };
    if noticed.denied {
        let hooks = if noticed.hooks.is_empty() { "the chain".to_owned() } else { noticed.hooks.join("`, `") };
        let failed = format!("`{hooks}`: {}", clip(noticed.reason.as_deref().unwrap_or("no reason given")));
        tx.execute(
            "INSERT INTO brain_submits_v1 (task, failed, fix, intent, seq, hash) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (task) DO UPDATE SET failed = excluded.failed, fix = excluded.fix, intent = excluded.intent,
                 seq = excluded.seq, hash = excluded.hash",
            params![task, failed, noticed.remediation.as_deref().map(clip), noticed.intent, int(noticed.seq), noticed.hash],
        )?;
        return Ok(false);
    }
    let failure: Option<(String, Option<String>, i64, String)> = tx
        .query_row("SELECT failed, fix, seq, hash FROM brain_submits_v1 WHERE task = ?1", [task], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
        })
        .optional()?;
    let Some((failed, fix, failed_seq, failed_hash)) = failure else { return Ok(false) };
    tx.execute("DELETE FROM brain_submits_v1 WHERE task = ?1", [task])?;
    let key = format!("submit\u{1f}{failed}\u{1f}{}", noticed.intent.as_deref().unwrap_or_default());
    let fix = fix.map(|f| format!(" ({f})")).unwrap_or_default();
    let text = format!(
        "`BeforeSubmit` failed on {failed} (ledger #{failed_seq} `{}`). What fixed it: a later round that met it{fix}, which passed.",
        short(&failed_hash)
    );
    learn(tx, &key, &text, noticed)
}

/// Adds the lesson `key` unless it is already known, and keeps the newest [`KEPT`].
fn learn(tx: &rusqlite::Transaction<'_>, key: &str, text: &str, noticed: &Noticed) -> rusqlite::Result<bool> {
    let added = tx.execute(
        "INSERT OR IGNORE INTO brain_lessons_v1 (key, added, text, intent, seq, hash, time_ms)
         VALUES (?1, (SELECT COALESCE(MAX(added), 0) + 1 FROM brain_lessons_v1), ?2, ?3, ?4, ?5, ?6)",
        params![key, text, noticed.intent, int(noticed.seq), noticed.hash, int(noticed.time_ms)],
    )? == 1;
    if added {
        tx.execute(
            "DELETE FROM brain_lessons_v1 WHERE key NOT IN (SELECT key FROM brain_lessons_v1 ORDER BY added DESC LIMIT ?1)",
            [KEPT as i64],
        )?;
    }
    Ok(added)
}

/// `text` on one line, at most [`REASON_CHARS`] characters.
fn clip(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(REASON_CHARS) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    }
}

/// The first eight characters of a line hash: enough to find the record, short enough for a line.
pub fn short(hash: &str) -> &str {
    hash.get(..8).unwrap_or(hash)
}

fn int(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn uint(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lessons() -> (tempfile::TempDir, Lessons) {
        let dir = tempfile::tempdir().unwrap();
        let lessons = Lessons::on(Arc::new(StateDb::new(dir.path().join("state.db"))));
        (dir, lessons)
    }

    fn denial(seq: u64, reason: &str) -> Noticed {
        Noticed {
            seq,
            hash: format!("{seq:064}"),
            time_ms: 1_000 + seq,
            event: "PreToolUse".into(),
            tool: Some("Write".into()),
            intent: Some("INT-1".into()),
            task: None,
            denied: true,
            hooks: vec!["gatekeeper".into()],
            reason: Some(reason.into()),
            remediation: Some("stay in scope".into()),
        }
    }

    #[test]
    fn a_denial_repeated_past_the_threshold_makes_one_lesson_linked_to_the_record_that_made_it() {
        let (_dir, lessons) = lessons();
        for seq in 1..=REPEATS as u64 * 3 {
            let learnt = lessons.notice(&denial(seq, "outside the scope")).unwrap();
            assert_eq!(learnt, seq == u64::from(REPEATS), "only the {REPEATS}th denial teaches (denial {seq})");
        }
        let list = lessons.list().unwrap();
        assert_eq!(list.len(), 1, "{list:?}");
        assert_eq!(list[0].seq, u64::from(REPEATS));
        assert!(
            list[0].text.contains("`gatekeeper` refused `Write` 3 times") && list[0].text.contains("stay in scope"),
            "{}",
            list[0].text
        );
    }

    #[test]
    fn a_burst_counted_in_one_transaction_teaches_what_one_at_a_time_would() {
        let (_dir, lessons) = lessons();
        let burst: Vec<Noticed> = (1..=REPEATS as u64 + 2).map(|seq| denial(seq, "outside the scope")).collect();
        assert!(lessons.notice_all(&burst).unwrap(), "the burst reached the threshold");
        let list = lessons.list().unwrap();
        assert_eq!(list.len(), 1, "{list:?}");
        assert_eq!(list[0].seq, u64::from(REPEATS), "linked to the denial that made the count, not the last of the burst");
        assert!(!lessons.notice_all(&burst).unwrap(), "the same lesson is not learnt twice");
        assert!(!lessons.notice_all(&[]).unwrap());
    }

    #[test]
    fn a_completion_that_failed_then_passed_is_one_lesson_and_the_oldest_lessons_go_first() {
        let (_dir, lessons) = lessons();
        let round = |seq: u64, denied: bool| Noticed {
            event: "BeforeSubmit".into(),
            tool: None,
            task: Some("T1".into()),
            denied,
            hooks: vec!["run_tests".into()],
            reason: denied.then(|| "2 tests failed".into()),
            remediation: denied.then(|| "run npm test".into()),
            ..denial(seq, "")
        };
        assert!(!lessons.notice(&round(1, true)).unwrap());
        assert!(!lessons.notice(&round(2, true)).unwrap());
        assert!(lessons.notice(&round(3, false)).unwrap());
        assert!(!lessons.notice(&round(4, false)).unwrap(), "a pass without a failure before it teaches nothing");
        let list = lessons.list().unwrap();
        assert_eq!(list.len(), 1);
        assert!(
            list[0].text.contains("`run_tests`: 2 tests failed (ledger #2") && list[0].text.contains("run npm test"),
            "{}",
            list[0].text
        );

        for n in 0..KEPT as u64 + 5 {
            for r in 0..u64::from(REPEATS) {
                lessons.notice(&denial(100 + n * 10 + r, &format!("reason {n}"))).unwrap();
            }
        }
        let list = lessons.list().unwrap();
        assert_eq!(list.len(), KEPT);
        assert!(list.last().unwrap().text.contains(&format!("reason {}", KEPT + 4)));
        assert!(!list.iter().any(|l| l.text.contains("run_tests")), "the oldest lesson went first");
    }
}
