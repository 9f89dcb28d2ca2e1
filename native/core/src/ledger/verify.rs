//! The whole-chain check: reads one chain's file once, front to back, and names the first bad record
//! and what is wrong with it (`audit.rs` checks every chain of a worktree with it).
//!
//! An intact ledger's line `n` is a record with `seq` `n` whose `prev` is the SHA-256 of line `n - 1`
//! ([`super::GENESIS`] for line 1), and, given the head from the state database, record number `head.count`
//! exists and hashes to `head.hash`. The first line that breaks this is where tampering (or damage)
//! begins; what the lines around it look like says which kind:
//!
//! - [`ProblemKind::Edited`]: a line that is not a record; a record whose `seq` is wrong although it
//!   chains, while the next one is numbered from the right place (its `seq` was changed); a record whose `prev` does not match its predecessor while its
//!   successor chains to it (its `prev` was changed) or does not (the predecessor's bytes changed).
//! - [`ProblemKind::Deleted`]: a `seq` gap, after which the chain continues from the record found (or
//!   a gap over which the chain was forged anew: only the numbering shows it).
//! - [`ProblemKind::Inserted`]: a record that does not belong where it is, with the record that does
//!   belong right after it, or a repeated `seq` where the chain skips over the line before (or a
//!   repeat over which the chain was forged anew).
//! - [`ProblemKind::Reordered`]: a record from later in the chain found early, out of `seq` order.
//! - [`ProblemKind::Truncated`]: fewer records than the head counts, or record `head.count` not
//!   hashing to the head's hash (the end was cut off and written anew, or its last record edited).
//! - [`ProblemKind::TornTail`]: bytes after the last newline (a write cut short; the writer moves them
//!   aside when it next opens the ledger).
//!
//! Every line is hashed once; a line is parsed once, and after the first problem is found only hashed
//! (to report the count and the head hash), so a damaged ledger costs no more than an intact one.
//! Parsing is most of the cost, and building a [`Record`] is mostly allocating its strings, so a line
//! is first read into a borrowed mirror of the record (`RecordView`) that checks every field's
//! presence and type as `Record` does but keeps only `seq` and `prev`; a line the mirror refuses is
//! judged by `Record::from_line` itself, so the mirror can only speed up lines `Record` accepts.

use std::collections::VecDeque;
use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use sha2::{Digest, Sha256};

use super::error::LedgerError;
use super::record::Head;
use super::record::{BEFORE_SHA256_SINCE, LINE_DIGESTS_SINCE, READABLE_VERSIONS, Record, RecordKind};

/// What is wrong with the first bad record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProblemKind {
    Edited,
    Deleted,
    Inserted,
    Reordered,
    Truncated,
    TornTail,
}

impl fmt::Display for ProblemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ProblemKind::Edited => "edited",
            ProblemKind::Deleted => "deleted",
            ProblemKind::Inserted => "inserted",
            ProblemKind::Reordered => "reordered",
            ProblemKind::Truncated => "truncated",
            ProblemKind::TornTail => "torn tail",
        })
    }
}

/// The first bad record of a ledger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub kind: ProblemKind,
    /// The 1-based line of the first bad record, which in an intact ledger is also its `seq`. For
    /// `Deleted`, the line where the missing record belongs (the first after the gap); for `Truncated`,
    /// the first missing record's line, or the head's record when it hashes differently (the end was
    /// rewritten from that record or before it); for `TornTail`, the line after the last complete one.
    pub line: u64,
    /// The byte offset where that line starts (or would start).
    pub offset: u64,
    /// What was found, lower-case.
    pub detail: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at line {} (offset {}): {}", self.kind, self.line, self.offset, self.detail)
    }
}

/// The outcome of [`verify`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verification {
    /// Complete lines in the file (records, if it is intact).
    pub records: u64,
    /// SHA-256 (hex) of the last complete line: the head to compare with; [`super::GENESIS`] when empty.
    pub head_hash: String,
    /// The file's length.
    pub bytes: u64,
    /// Bytes after the last newline.
    pub torn_tail_bytes: u64,
    /// The first bad record; `None` when the ledger is intact.
    pub problem: Option<Problem>,
}

impl Verification {
    pub fn is_intact(&self) -> bool {
        self.problem.is_none()
    }
}

/// Reads the ledger at `path` (a missing file is an empty ledger) and checks its chain, and, given the
/// head from the state database (`head::read`), that nothing was cut off its end. `Err` only when the
/// file cannot be read.
///
/// Verification takes no lock, so as not to stall appends for the length of a read: on a ledger that
/// is being appended to, a batch being written as the end is read may show as a torn tail.
pub fn verify(path: &Path, head: Option<&Head>) -> Result<Verification, LedgerError> {
    let io_error = |op| move |source| LedgerError::Io { path: path.to_owned(), op, source: Arc::new(source) };
    let file = match File::open(path) {
        Ok(file) => Some(file),
        Err(error) if error.kind() == io::ErrorKind::NotFound => None,
        Err(source) => return Err(io_error("open")(source)),
    };
    let mut check = Check::new(head);
    check.missing = file.is_none();
    if let Some(file) = file {
        // A large buffer: the file is read in few system calls, and lines are sliced out of it.
        let mut reader = BufReader::with_capacity(1 << 20, file);
        let mut line = Vec::with_capacity(4096);
        loop {
            line.clear();
            let read = reader.read_until(b'\n', &mut line).map_err(io_error("read"))?;
            if read == 0 {
                break;
            }
            if line.last() != Some(&b'\n') {
                check.torn = read as u64;
                break;
            }
            check.line(&line[..line.len() - 1]);
        }
    }
    Ok(check.finish())
}

/// What is known of one line.
struct Info {
    line: u64,
    offset: u64,
    hash: [u8; 32],
    /// `None` when the line is not a record, or after the first problem (no longer parsed).
    seq: Option<u64>,
    /// `None` when not a record or its `prev` is not a SHA-256 in lower-case hex.
    prev: Option<[u8; 32]>,
}

/// The streaming state of one verification.
struct Check<'h> {
    head: Option<&'h Head>,
    /// Complete lines so far, and where the next one starts.
    lines: u64,
    offset: u64,
    torn: u64,
    /// The last few lines, for the look-behind and look-ahead that tell the kinds of problem apart.
    window: VecDeque<Info>,
    /// The line where the chain first broke, waiting for two more lines to be classified.
    pending: Option<u64>,
    problem: Option<Problem>,
    /// The hash and offset of line `head.count`, once read.
    head_record: Option<([u8; 32], u64)>,
    last_hash: [u8; 32],
    /// The file does not exist: with a head, the ledger was removed.
    missing: bool,
}

const WINDOW: usize = 5;

impl<'h> Check<'h> {
    fn new(head: Option<&'h Head>) -> Check<'h> {
        Check {
            head,
            lines: 0,
            offset: 0,
            torn: 0,
            window: VecDeque::with_capacity(WINDOW + 1),
            pending: None,
            problem: None,
            head_record: None,
            last_hash: [0; 32],
            missing: false,
        }
    }

    fn line(&mut self, bytes: &[u8]) {
        self.lines += 1;
        let n = self.lines;
        let hash: [u8; 32] = Sha256::digest(bytes).into();
        let mut info = Info { line: n, offset: self.offset, hash, seq: None, prev: None };
        self.offset += bytes.len() as u64 + 1;
        if self.head.is_some_and(|head| head.count == n) {
            self.head_record = Some((hash, info.offset));
        }
        let before = self.last_hash;
        self.last_hash = hash;
        if self.problem.is_some() {
            return;
        }
        let parsed = parse(bytes);
        if let Ok((seq, prev)) = parsed {
            info.seq = Some(seq);
            info.prev = prev;
        }
        if self.window.len() == WINDOW {
            self.window.pop_front();
        }
        let offset = info.offset;
        let intact = info.seq == Some(n) && info.prev == Some(before);
        self.window.push_back(info);
        match self.pending {
            Some(p) if n == p + 2 => self.problem = Some(self.classify(p)),
            Some(_) => {}
            None => match parsed {
                Err(why) => self.problem = Some(problem(ProblemKind::Edited, n, offset, why)),
                Ok(_) if intact => {}
                Ok(_) => self.pending = Some(n),
            },
        }
    }

    fn finish(mut self) -> Verification {
        if let Some(p) = self.pending.take() {
            self.problem = Some(self.classify(p));
        }
        let (records, end) = (self.lines, self.offset);
        if self.problem.is_none()
            && let Some(head) = self.head
            && head.count > 0
        {
            if records < head.count {
                let detail = if self.missing {
                    format!("the ledger was removed: its head says {} records were written", head.count)
                } else {
                    format!("the ledger was shortened: it has {records} records but its head says {} were written", head.count)
                };
                self.problem = Some(problem(ProblemKind::Truncated, records + 1, end, detail));
            } else if let Some((hash, offset)) = self.head_record
                && hex(&hash) != head.hash
            {
                self.problem = Some(problem(
                    ProblemKind::Truncated,
                    head.count,
                    offset,
                    format!(
                        "record {} hashes to {}, not to {} as the head says: the end of the ledger was cut off and \
                         written anew (from this record or before it), or this record was edited",
                        head.count,
                        hex(&hash),
                        head.hash
                    ),
                ));
            }
        }
        if self.problem.is_none() && self.torn > 0 {
            self.problem = Some(problem(
                ProblemKind::TornTail,
                records + 1,
                end,
                format!("{} bytes after the last newline: a write cut short", self.torn),
            ));
        }
        Verification { records, head_hash: hex(&self.last_hash), bytes: end + self.torn, torn_tail_bytes: self.torn, problem: self.problem }
    }

    fn at(&self, line: u64) -> Option<&Info> {
        self.window.iter().find(|info| info.line == line)
    }

    /// The hash line `line` must carry as `prev` in its successor: [`super::GENESIS`] before line 1.
    fn hash_of(&self, line: u64) -> Option<[u8; 32]> {
        match line {
            0 => Some([0; 32]),
            _ => self.at(line).map(|info| info.hash),
        }
    }

    /// Names the problem that begins around line `p`, the first record that does not continue the
    /// chain (a record, in the right version, but with the wrong `seq` or `prev`); every line before
    /// it was intact, so line `p - 1` has `seq` `p - 1`. Looks at up to two lines on each side.
    fn classify(&self, p: u64) -> Problem {
        let cur = self.at(p).expect("the pending line is in the window");
        let seq = cur.seq.expect("the pending line is a record");
        let (h1, h2) = (self.hash_of(p - 1), p.checked_sub(2).and_then(|l| self.hash_of(l)));
        let chains = cur.prev.is_some() && cur.prev == h1;
        let next = self.at(p + 1);
        let next2 = self.at(p + 2);
        let here = |kind, detail: String| problem(kind, p, cur.offset, detail);
        if seq != p && chains {
            // The chain holds but the numbering does not. If the records after this one go on from its
            // seq (or none follow), the numbering jumped where the chain was forged over it: records
            // removed (a gap) or added (a repeat). If they go on from p, this record's seq was edited.
            let renumbered = match next {
                Some(next) => next.seq == Some(seq + 1) && next.prev == Some(cur.hash),
                None => seq > p,
            };
            if renumbered && seq > p {
                return here(
                    ProblemKind::Deleted,
                    format!("seq {seq} follows seq {}, yet the chain holds: records were removed and the chain forged over the gap", p - 1),
                );
            }
            if renumbered {
                return here(
                    ProblemKind::Inserted,
                    format!("seq {seq} follows seq {}, yet the chain holds: records were added and the chain forged over them", p - 1),
                );
            }
            return here(ProblemKind::Edited, format!("seq {seq} where {p} belongs, in a record that chains: its seq was changed"));
        }
        if seq == p {
            // The chain breaks between p - 1 and p: either p's `prev` changed (then p's successor does not
            // chain to p either) or p - 1's bytes changed (then it does). Line 1 has no predecessor.
            let successor_chains = match next {
                Some(next) => next.prev == Some(cur.hash),
                // At the end, the head tells: if it vouches for line p, line p is as written.
                None => !self.head.is_some_and(|head| head.count == p && head.hash != hex(&cur.hash)),
            };
            if p > 1 && successor_chains {
                let before = self.at(p - 1).expect("the line before is in the window");
                return problem(
                    ProblemKind::Edited,
                    p - 1,
                    before.offset,
                    "the next record's prev does not match this line's hash: this line was changed".into(),
                );
            }
            return here(ProblemKind::Edited, "its prev does not match the hash of the line before: its prev was changed".into());
        }
        let belongs_next = next.is_some_and(|next| next.seq == Some(p) && next.prev.is_some() && next.prev == h1);
        if seq > p {
            let continues = next.is_none_or(|next| next.seq == Some(seq + 1) && next.prev == Some(cur.hash));
            if continues {
                return here(
                    ProblemKind::Deleted,
                    match seq - p {
                        1 => format!("record {p} is missing: seq {seq} follows seq {}", p - 1),
                        _ => format!("records {p} to {} are missing: seq {seq} follows seq {}", seq - 1, p - 1),
                    },
                );
            }
            if belongs_next {
                // Record p follows this one. A swap of neighbours leaves p + 2 chaining to this line; an
                // inserted line leaves it chaining to p's record.
                let swapped = match next2 {
                    Some(next2) => next2.seq == Some(seq + 1) && next2.prev == Some(cur.hash),
                    None => seq == p + 1,
                };
                if !swapped {
                    return here(ProblemKind::Inserted, format!("a record with seq {seq} stands before record {p}, which chains past it"));
                }
            }
            return here(ProblemKind::Reordered, format!("seq {seq} comes where {p} belongs: records are out of order"));
        }
        // A seq seen already.
        if seq + 1 == p && cur.prev.is_some() && cur.prev == h2 {
            // Two lines claim seq p - 1 and both follow line p - 2: one of them was inserted. A copy of
            // its neighbour is the second; otherwise the one the next record chains to is genuine.
            let before = self.at(p - 1).expect("the line before is in the window");
            let second = before.hash == cur.hash || next.is_some_and(|next| next.prev.is_some() && next.prev == h1);
            let (line, offset) = if second { (p, cur.offset) } else { (p - 1, before.offset) };
            return problem(
                ProblemKind::Inserted,
                line,
                offset,
                format!("a second record with seq {seq}, chaining to the same record as the first"),
            );
        }
        if next.is_none() || belongs_next {
            return here(ProblemKind::Inserted, format!("a record with seq {seq} stands where record {p} belongs"));
        }
        here(ProblemKind::Reordered, format!("seq {seq} comes after seq {}: records are out of order", p - 1))
    }
}

fn problem(kind: ProblemKind, line: u64, offset: u64, detail: String) -> Problem {
    Problem { kind, line, offset, detail }
}

/// The `seq` and `prev` of the record a line holds, or why it is not one.
fn parse(bytes: &[u8]) -> Result<(u64, Option<[u8; 32]>), String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "not a record: the line is not utf-8".to_owned())?;
    if let Ok(view) = serde_json::from_str::<RecordView>(text)
        && view.readable()
    {
        return Ok((view.seq, view.prev.0));
    }
    // The verdict, and its message, are `Record`'s.
    Record::from_line(text).map(|record| (record.seq, decode_hash(&record.prev))).map_err(String::from)
}

// A mirror of `Record` and the types inside it, field for field, with the same serde attributes that
// decide what is accepted (`deny_unknown_fields`, which fields may be missing) and each field's type
// replaced by one that checks the same JSON without keeping it. `record_view_mirrors_record` builds
// every type of `record.rs` with an exhaustive struct literal, so a field added there fails to compile
// until it is added here; `the_mirror_accepts_what_record_accepts` compares the two on edited lines.
// Fields other than `v`, `seq` and `prev` are read only by the deserializer, except that the mirror
// notes the first version that has every field the record carries (`line_digests` since 2,
// `before_sha256` since 3), since `Record::from_line` refuses a record older than its fields.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct RecordView {
    v: u32,
    seq: u64,
    time: AnyStr,
    prev: Hash,
    kind: RecordKind,
    event: Option<AnyStr>,
    session: Option<AnyStr>,
    agent: Option<AnyStr>,
    task: Option<AnyStr>,
    plan: Option<AnyStr>,
    turn: Option<AnyStr>,
    intent: Option<AnyStr>,
    tool: Option<AnyStr>,
    input_sha256: Option<AnyStr>,
    decision: Option<DecisionView>,
    #[serde(default)]
    files: Many<FileView>,
    model: Option<AnyStr>,
    // Rare, and `Value` is the exact check (numbers in range, no lone surrogates in strings).
    data: Option<serde_json::Value>,
}

impl RecordView {
    /// Whether `Record::from_line` accepts what the mirror read: a version it reads, and no field
    /// newer than that version.
    fn readable(&self) -> bool {
        READABLE_VERSIONS.contains(&self.v) && self.v >= self.files.since
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct DecisionView {
    decision: AnyStr,
    reason: Option<AnyStr>,
    #[serde(default)]
    hooks: Many<HookView>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct HookView {
    name: AnyStr,
    outcome: AnyStr,
    duration_ns: u64,
    failure: Option<AnyStr>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct FileView {
    path: AnyStr,
    sha256: Option<AnyStr>,
    before_sha256: Option<AnyStr>,
    #[serde(default)]
    ranges: Many<RangeView>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct RangeView {
    start: u32,
    end: u32,
    sha256: AnyStr,
    line_digests: Option<AnyStr>,
}

/// What [`Many`] notes about the elements it checks: the first record version that has every field
/// an element carries.
trait Noted {
    fn since(&self) -> u32;
}

impl Noted for HookView {
    fn since(&self) -> u32 {
        1
    }
}

impl Noted for FileView {
    fn since(&self) -> u32 {
        let own = if self.before_sha256.is_some() { BEFORE_SHA256_SINCE } else { 1 };
        own.max(self.ranges.since)
    }
}

impl Noted for RangeView {
    fn since(&self) -> u32 {
        if self.line_digests.is_some() { LINE_DIGESTS_SINCE } else { 1 }
    }
}

/// A JSON string, checked as a `String` would be (escapes decoded), not kept.
struct AnyStr;

impl<'de> Deserialize<'de> for AnyStr {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Any;
        impl Visitor<'_> for Any {
            type Value = AnyStr;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<AnyStr, E> {
                Ok(AnyStr)
            }
        }
        deserializer.deserialize_str(Any)
    }
}

/// A JSON string, kept only as the SHA-256 it spells in lower-case hex (`None` if it spells none).
struct Hash(Option<[u8; 32]>);

impl<'de> Deserialize<'de> for Hash {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Hex;
        impl Visitor<'_> for Hex {
            type Value = Hash;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, text: &str) -> Result<Hash, E> {
                Ok(Hash(decode_hash(text)))
            }
        }
        deserializer.deserialize_str(Hex)
    }
}

/// A JSON array of `T`, each checked as `Vec<T>` would check it, none kept; `since`: the first
/// record version that has every field they carry ([`Noted`]).
struct Many<T> {
    since: u32,
    _each: std::marker::PhantomData<T>,
}

impl<T> Default for Many<T> {
    fn default() -> Self {
        Many { since: 1, _each: std::marker::PhantomData }
    }
}

impl<'de, T: Deserialize<'de> + Noted> Deserialize<'de> for Many<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Each<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de> + Noted> Visitor<'de> for Each<T> {
            type Value = Many<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a sequence")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Many<T>, A::Error> {
                let mut many = Many::default();
                while let Some(each) = seq.next_element::<T>()? {
                    many.since = many.since.max(each.since());
                }
                Ok(many)
            }
        }
        deserializer.deserialize_seq(Each(std::marker::PhantomData))
    }
}

/// A SHA-256 in lower-case hex (as `record::sha256_hex` writes it) as bytes; `None` otherwise.
fn decode_hash(text: &str) -> Option<[u8; 32]> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let bytes = text.as_bytes();
    if bytes.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in bytes.chunks_exact(2).enumerate() {
        out[i] = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
}

fn hex(hash: &[u8; 32]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(64);
    for b in hash {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::record::{FileChange, GENESIS, LineRange, RECORD_VERSION, RecordedDecision, RecordedHook, sha256_hex};

    /// Every type of `record.rs` with every field set, by exhaustive struct literals: a field added
    /// there breaks this until `RecordView` (and this) mirror it.
    fn full_record() -> Record {
        Record {
            v: RECORD_VERSION,
            seq: 42,
            time: "2026-11-22T05:00:00.000Z".into(),
            prev: sha256_hex(b"before"),
            kind: RecordKind::ToolCall,
            event: Some("PreToolUse".into()),
            session: Some("s-1".into()),
            agent: Some("claude-code".into()),
            task: Some("t-1".into()),
            plan: Some("p-1".into()),
            turn: Some("3".into()),
            intent: Some("INT-001".into()),
            tool: Some("write_to_file".into()),
            input_sha256: Some(sha256_hex(b"input")),
            decision: Some(RecordedDecision {
                decision: "deny".into(),
                reason: Some("outside \"scope\" \u{e9}\n".into()),
                hooks: vec![RecordedHook { name: "gatekeeper".into(), outcome: "deny".into(), duration_ns: 7, failure: Some("x".into()) }],
            }),
            files: vec![FileChange {
                path: "src/a.rs".into(),
                sha256: Some(sha256_hex(b"a")),
                before_sha256: Some(sha256_hex(b"")),
                ranges: vec![LineRange { start: 1, end: 2, sha256: sha256_hex(b"a\nb"), line_digests: Some("ca9781123e23e816".into()) }],
            }],
            model: Some("m".into()),
            data: Some(serde_json::json!({ "n": [1, 2.5, -3, null, true], "s": "\u{1F600}" })),
        }
    }

    #[test]
    fn record_view_mirrors_record() {
        let record = full_record();
        let line = record.to_line();
        assert_eq!(parse(line.as_bytes()), Ok((42, decode_hash(&record.prev))));
        let view: RecordView = serde_json::from_str(&line).expect("the mirror reads every field");
        assert_eq!(view.seq, 42);
        // And the minimal record, every optional field absent.
        let mut minimal = Record::new(RecordKind::Lifecycle);
        minimal.prev = GENESIS.into();
        serde_json::from_str::<RecordView>(&minimal.to_line()).expect("the mirror reads a minimal record");
    }

    #[test]
    fn the_mirror_accepts_what_record_accepts() {
        let mut lines = vec![full_record().to_line()];
        // Lines that differ from a record in ways a one-byte edit does not reach.
        for line in [
            r#"{"v":1,"seq":1,"time":"t","prev":"p","kind":"external"}"#,
            r#"{"v":1,"seq":1,"time":"t","prev":"p","kind":"external","files":null}"#,
            r#"{"v":1,"seq":1,"time":"t","prev":"p","kind":"external","files":[]}"#,
            r#"{"v":1,"seq":1,"time":"t","prev":"p","kind":"external","data":null,"event":null}"#,
            r#"{"v":1,"seq":1,"time":"t","prev":"p","kind":"external","data":1e999}"#,
            r#"{"v":1,"seq":1,"time":"t","prev":"p","kind":"external","data":"\ud800"}"#,
            r#"{"v":1,"seq":1,"time":"\ud800","prev":"p","kind":"external"}"#,
            r#"{"v":1,"seq":1,"time":"t","prev":"\u0030","kind":"external"}"#,
            r#"{"v":1,"seq":1,"seq":1,"time":"t","prev":"p","kind":"external"}"#,
            r#"{"v":1,"seq":-1,"time":"t","prev":"p","kind":"external"}"#,
            r#"{"v":1,"seq":1.0,"time":"t","prev":"p","kind":"external"}"#,
            r#"{"v":1,"seq":1,"time":"t","prev":"p","kind":"external","files":[{"path":"a","ranges":[{"start":1,"end":4294967296,"sha256":"x"}]}]}"#,
            r#"{"v":1,"seq":1,"time":"t","prev":"p","kind":"external","decision":{"decision":"allow","hooks":[{"name":"a","outcome":"b","duration_ns":1,"extra":1}]}}"#,
            r#"{"v":1,"seq":1,"time":"t","prev":"p","kind":"external","decision":{"decision":"allow","hooks":null}}"#,
            r#"{"v":1,"seq":1,"time":"t","prev":"p","kind":"external"} "#,
            r#"{"v":1,"seq":1,"time":"t","prev":"p","kind":"external"}x"#,
            r#"{"v":2,"seq":1,"time":"t","prev":"p","kind":"external"}"#,
            r#"{"v":3,"seq":1,"time":"t","prev":"p","kind":"external"}"#,
            r#"{"v":0,"seq":1,"time":"t","prev":"p","kind":"external"}"#,
            r#"{"v":1,"seq":1,"time":"t","prev":"p","kind":"external","files":[{"path":"a","ranges":[{"start":1,"end":1,"sha256":"x","line_digests":"00000000"}]}]}"#,
            r#"{"v":1,"seq":1,"time":"t","prev":"p","kind":"external","files":[{"path":"a","ranges":[{"start":1,"end":1,"sha256":"x"},{"start":1,"end":1,"sha256":"x","line\u005fdigests":"0"}]}]}"#,
            r#"{"v":1,"seq":1,"time":"t","prev":"p","kind":"external","files":[{"path":"a","ranges":[{"start":1,"end":1,"sha256":"x","line_digests":null}]}]}"#,
            r#"{"v":2,"seq":1,"time":"t","prev":"p","kind":"external","files":[{"path":"a","ranges":[{"start":1,"end":1,"sha256":"x","line_digests":7}]}]}"#,
            r#"{"v":2,"seq":1,"time":"t","prev":"p","kind":"external","files":[{"path":"a","before_sha256":"x"}]}"#,
            r#"{"v":1,"seq":1,"time":"t","prev":"p","kind":"external","files":[{"path":"a","before_sha256":"x"}]}"#,
            r#"{"v":3,"seq":1,"time":"t","prev":"p","kind":"external","files":[{"path":"a","before_sha256":"x"}]}"#,
            r#"{"v":2,"seq":1,"time":"t","prev":"p","kind":"external","files":[{"path":"a"},{"path":"b","before_sha256":"x"}]}"#,
            r#"{"v":2,"seq":1,"time":"t","prev":"p","kind":"external","files":[{"path":"a","before_sha256":null}]}"#,
            r#"{"v":4,"seq":1,"time":"t","prev":"p","kind":"external"}"#,
            r#"{"v":1,"seq":1,"time":"t","prev":"p","kind":"Tool_call"}"#,
        ] {
            lines.push(line.to_owned());
        }
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let full = full_record().to_line();
        let alphabet = b" \"0123456789abcdefxyz{}[],:-.\\enul";
        for _ in 0..20_000 {
            let mut bytes = full.clone().into_bytes();
            let at = (next() % bytes.len() as u64) as usize;
            bytes[at] = alphabet[(next() % alphabet.len() as u64) as usize];
            if let Ok(text) = String::from_utf8(bytes) {
                lines.push(text);
            }
        }
        let mut accepted = 0;
        for line in &lines {
            let view = serde_json::from_str::<RecordView>(line).ok().filter(RecordView::readable).map(|v| (v.seq, v.prev.0));
            let record = Record::from_line(line).ok().map(|r| (r.seq, decode_hash(&r.prev)));
            assert_eq!(view, record, "{line}");
            accepted += usize::from(record.is_some());
        }
        assert!(accepted > 1000 && accepted < lines.len() - 1000, "both verdicts are exercised: {accepted}");
    }

    #[test]
    fn hashes_decode_and_encode_as_record_writes_them() {
        let text = sha256_hex(b"line");
        let bytes = decode_hash(&text).unwrap();
        assert_eq!(hex(&bytes), text);
        assert_eq!(decode_hash(GENESIS), Some([0; 32]));
        assert_eq!(decode_hash(&text.to_uppercase()), None);
        assert_eq!(decode_hash(&text[1..]), None);
    }

    #[test]
    fn a_missing_ledger_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let verification = verify(&dir.path().join("none.jsonl"), None).unwrap();
        assert_eq!((verification.records, verification.head_hash.as_str()), (0, GENESIS));
        assert!(verification.is_intact());
        let head = Head { count: 2, hash: GENESIS.into(), updated_at_ms: 0 };
        let verification = verify(&dir.path().join("none.jsonl"), Some(&head)).unwrap();
        assert_eq!(verification.problem.unwrap().kind, ProblemKind::Truncated);
    }
}
