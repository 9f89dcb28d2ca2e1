//! Which line ranges a write changed, with the content hash that finds each range again later.
//!
//! A write's record keeps, for every file, the ranges of the file *after* the write that the write
//! inserted or replaced, as 1-based inclusive line numbers plus the SHA-256 of the range's content.
//! Line numbers go stale as soon as someone edits above the range; the hash does not, so `blame` can
//! find the range wherever it moved (spatial independence).
//!
//! The rules, which `blame` and the Agent Trace export rely on:
//!
//! - **A line is its text without its terminator.** Lines are split at `\n`; a `\r` just before the
//!   `\n` belongs to the terminator, not to the line. So a CRLF file and its LF twin have the same
//!   lines and the same range hashes: converting a file's line endings changes no range (the whole-
//!   file `sha256` still shows the change), and a range written with CRLF is still found after an
//!   editor normalised the file to LF. A lone `\r` (classic Mac) is not a terminator; such files
//!   are one long line, which is rare enough not to deserve a third rule.
//! - **A final newline does not make a last, empty line.** `"a\nb\n"` and `"a\nb"` are both the two
//!   lines `a`, `b`, as editors number them. Adding or removing only the final newline therefore
//!   changes no range; again the file hash records it.
//! - **The hash of a range** is SHA-256 of its lines joined with `\n`, with no final newline
//!   ([`range_hash`]), as lower-case hex.
//! - **A pure deletion records no range.** Ranges are positions in the file *after* the write, and
//!   deleted lines have none there; inventing an empty range at the seam would give `blame` nothing
//!   to find (an empty range has no content). The record still names the file with its new hash, so
//!   the deletion is visible; it is the content that is no longer anyone's.
//! - **Adjacent changes merge**: a replaced block directly followed by inserted lines is one range,
//!   so a hunk is found again as a whole.
//! - **A range also carries a digest of each of its lines** (record version 2): the first 32 bits of
//!   the SHA-256 of the line's text ([`line_digest`]), as 8 hex digits, concatenated in line order. The
//!   range hash finds a range that is still whole; the line digests find what is left of it after
//!   some of its lines were edited (`blame`). 32 bits tell a line from the other lines of one file
//!   (a chance collision between a range of 2,000 lines and a file of 10,000 is about 1 in 200), not
//!   from an adversary's; blame is an explanation, and the chain, not the digests, is the integrity.
//! - **The digests are bounded: at most [`MAX_DIGESTED_LINES`] lines per file per write**, 8 bytes
//!   each (16 KiB). Ranges are digested in file order while they fit in what is left of that budget;
//!   a range that does not fit carries its range hash alone, and blame finds it only whole, as it
//!   finds version-1 ranges. So a 10,000-line write records one range hash, not 80 KB of digests,
//!   while every edit of ordinary size is digested.

use sha2::{Digest, Sha256};
use similar::{Algorithm, DiffTag, capture_diff_slices};

use super::record::{FileChange, LineRange, sha256_hex};

/// The lines of `text` without their terminators (`\n` or `\r\n`); a final newline does not start
/// another line, and an empty text has no lines.
pub fn lines(text: &str) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    let body = text.strip_suffix('\n').unwrap_or(text);
    body.split('\n').map(|line| line.strip_suffix('\r').unwrap_or(line)).collect()
}

/// How many lines of one file a write's ranges digest at most (see the module's rules).
pub const MAX_DIGESTED_LINES: usize = 2048;

/// The digest of one line (its text without its terminator): the first 32 bits of its SHA-256, big-
/// endian, so that its 8-digit lower-case hex is a prefix of the line's [`sha256_hex`].
pub fn line_digest(line: &str) -> u32 {
    let digest = Sha256::digest(line.as_bytes());
    u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]])
}

/// The `line_digests` of a range of `lines`: each line's [`line_digest`] as 8 lower-case hex digits,
/// concatenated.
pub fn line_digests<S: AsRef<str>>(lines: &[S]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(8 * lines.len());
    for line in lines {
        write!(out, "{:08x}", line_digest(line.as_ref())).expect("writing to a String");
    }
    out
}

/// The digests a range's `line_digests` spells, when it spells one per line of a range of `len`
/// lines in lower-case hex; `None` otherwise (the field is then ignored, as if absent).
pub fn parse_line_digests(text: &str, len: usize) -> Option<Vec<u32>> {
    if text.len() != len.checked_mul(8)? || !text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    text.as_bytes().chunks_exact(8).map(|chunk| u32::from_str_radix(std::str::from_utf8(chunk).ok()?, 16).ok()).collect()
}

/// SHA-256 (hex) of `lines` joined with `\n`, without a final newline.
pub fn range_hash<S: AsRef<str>>(lines: &[S]) -> String {
    let mut hasher = Sha256::new();
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            hasher.update(b"\n");
        }
        hasher.update(line.as_ref().as_bytes());
    }
    let digest = hasher.finalize();
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// The ranges of `after` that are inserted or replaced relative to `before` (`None`: the file is new,
/// so all of it is one range), merged when adjacent, in file order. An empty `after` has no ranges,
/// and neither has a write that only deleted lines (see the module's rules).
pub fn changed_ranges(before: Option<&str>, after: &str) -> Vec<LineRange> {
    let new = lines(after);
    let old = before.map(lines).unwrap_or_default();
    // Spans of `new` as half-open 0-based index ranges, merged as they come (the diff's ops are in
    // order of both files).
    let mut spans: Vec<(usize, usize)> = Vec::new();
    // Myers with its heuristics bounds the work on pathological inputs (a minified file rewritten)
    // at the price of a diff that may not be minimal; a slightly larger range is still correct.
    for op in capture_diff_slices(Algorithm::Myers, &old, &new) {
        let (tag, _, added) = op.as_tag_tuple();
        if !matches!(tag, DiffTag::Insert | DiffTag::Replace) || added.is_empty() {
            continue;
        }
        match spans.last_mut() {
            Some(last) if last.1 == added.start => last.1 = added.end,
            _ => spans.push((added.start, added.end)),
        }
    }
    let mut budget = MAX_DIGESTED_LINES;
    spans
        .into_iter()
        .map(|(start, end)| {
            let digested = end - start <= budget;
            if digested {
                budget -= end - start;
            }
            LineRange {
                start: line_number(start + 1),
                end: line_number(end),
                sha256: range_hash(&new[start..end]),
                line_digests: digested.then(|| line_digests(&new[start..end])),
            }
        })
        .collect()
}

/// What the ledger records about one file a write touched: its hash after the write (none when the
/// write deleted it) and the ranges it changed (the tracer adds the before-image's hash). `before` is `None` for a file the write created;
/// `after` is `None` for a file it deleted.
pub fn file_change(path: &str, before: Option<&str>, after: Option<&str>) -> FileChange {
    match after {
        Some(after) => FileChange {
            path: path.to_owned(),
            sha256: Some(sha256_hex(after.as_bytes())),
            before_sha256: None,
            ranges: changed_ranges(before, after),
        },
        None => FileChange { path: path.to_owned(), sha256: None, before_sha256: None, ranges: Vec::new() },
    }
}

/// A line number as the record stores it. A file of more than four billion lines cannot be written
/// through a tool call; saturating keeps the function total rather than panicking on one.
fn line_number(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(start: u32, end: u32, lines: &[&str]) -> LineRange {
        LineRange { start, end, sha256: range_hash(lines), line_digests: Some(line_digests(lines)) }
    }

    #[test]
    fn a_line_digest_is_the_prefix_of_the_lines_sha256() {
        for line in ["", "}", "fn main() {", "caf\u{e9}"] {
            assert_eq!(format!("{:08x}", line_digest(line)), sha256_hex(line.as_bytes())[..8]);
        }
        let digests = line_digests(&["a", "b"]);
        assert_eq!(digests, "ca9781123e23e816");
        assert_eq!(parse_line_digests(&digests, 2), Some(vec![0xca97_8112, 0x3e23_e816]));
        // Anything but one lower-case hex digest per line is ignored.
        assert_eq!(parse_line_digests(&digests, 3), None);
        assert_eq!(parse_line_digests(&digests.to_uppercase(), 2), None);
        assert_eq!(parse_line_digests("ca97811+3e23e816", 2), None);
        assert_eq!(parse_line_digests("", 0), Some(vec![]));
    }

    #[test]
    fn digests_stop_at_the_files_budget() {
        // A 10,000-line file written whole: one range, its hash alone.
        let big: String = (0..10_000).map(|i| format!("line {i}\n")).collect();
        let ranges = changed_ranges(None, &big);
        assert_eq!((ranges.len(), ranges[0].end, ranges[0].line_digests.as_ref()), (1, 10_000, None));
        // Exactly the budget is digested.
        let fits: String = (0..MAX_DIGESTED_LINES).map(|i| format!("line {i}\n")).collect();
        assert_eq!(changed_ranges(None, &fits)[0].line_digests.as_ref().map(String::len), Some(8 * MAX_DIGESTED_LINES));
        // Ranges in file order while they fit: a small one, then one too large for what is left
        // (hash alone), then a small one that still fits.
        let before: String = (0..5000).map(|i| format!("{i}\n")).collect();
        let after = before
            .replacen("10\n", "ten\n", 1)
            .replacen("\n100\n", &format!("\n{}", (0..MAX_DIGESTED_LINES).map(|i| format!("new {i}\n")).collect::<String>()), 1)
            .replacen("\n4000\n", "\nfour thousand\n", 1);
        let ranges = changed_ranges(Some(&before), &after);
        let digested: Vec<(u32, bool)> = ranges.iter().map(|r| (r.end - r.start + 1, r.line_digests.is_some())).collect();
        assert_eq!(digested, [(1, true), (MAX_DIGESTED_LINES as u32, false), (1, true)]);
    }

    #[test]
    fn lines_drop_their_terminators() {
        assert_eq!(lines(""), Vec::<&str>::new());
        assert_eq!(lines("\n"), vec![""]);
        assert_eq!(lines("a"), vec!["a"]);
        assert_eq!(lines("a\n"), vec!["a"]);
        assert_eq!(lines("a\nb"), vec!["a", "b"]);
        assert_eq!(lines("a\r\nb\r\n"), vec!["a", "b"]);
        assert_eq!(lines("a\n\nb\n\n"), vec!["a", "", "b", ""]);
        // A lone carriage return is content, not a terminator.
        assert_eq!(lines("a\rb\n"), vec!["a\rb"]);
    }

    #[test]
    fn the_range_hash_is_the_lines_joined_by_newlines() {
        assert_eq!(range_hash(&["a", "b"]), sha256_hex(b"a\nb"));
        assert_eq!(range_hash(&["x"]), sha256_hex(b"x"));
        assert_eq!(range_hash::<&str>(&[]), sha256_hex(b""));
    }

    #[test]
    fn a_new_file_is_one_range() {
        assert_eq!(changed_ranges(None, "a\nb\nc\n"), vec![range(1, 3, &["a", "b", "c"])]);
        assert_eq!(changed_ranges(None, ""), vec![]);
        assert_eq!(changed_ranges(Some("old\n"), ""), vec![]);
    }

    #[test]
    fn inserted_and_replaced_lines_are_ranges_of_the_new_file() {
        let before = "1\n2\n3\n4\n5\n";
        // Line 2 replaced, two lines inserted after 4.
        let after = "1\ntwo\n3\n4\nx\ny\n5\n";
        assert_eq!(changed_ranges(Some(before), after), vec![range(2, 2, &["two"]), range(5, 6, &["x", "y"])]);
        // Inserted at the very top and the very end.
        assert_eq!(changed_ranges(Some("a\nb\n"), "top\na\nb\nend\n"), vec![range(1, 1, &["top"]), range(4, 4, &["end"])]);
        assert_eq!(changed_ranges(Some(before), before), vec![]);
    }

    #[test]
    fn adjacent_changes_merge() {
        // A replacement directly followed by an insertion is one hunk, one range.
        let ranges = changed_ranges(Some("a\nb\nc\n"), "a\nB\nnew\nc\n");
        assert_eq!(ranges, vec![range(2, 3, &["B", "new"])]);
        // Two changes with an unchanged line between them stay apart.
        let ranges = changed_ranges(Some("a\nb\nc\nd\n"), "A\nb\nC\nd\n");
        assert_eq!(ranges, vec![range(1, 1, &["A"]), range(3, 3, &["C"])]);
    }

    #[test]
    fn a_pure_deletion_has_no_range_but_the_file_hash_changes() {
        assert_eq!(changed_ranges(Some("a\nb\nc\n"), "a\nc\n"), vec![]);
        let change = file_change("src/a.rs", Some("a\nb\nc\n"), Some("a\nc\n"));
        assert_eq!(change.sha256.as_deref(), Some(sha256_hex(b"a\nc\n").as_str()));
        assert!(change.ranges.is_empty());
    }

    #[test]
    fn crlf_files_hash_their_lines_without_terminators() {
        // The same content with either ending has the same ranges and hashes...
        let crlf = changed_ranges(None, "a\r\nb\r\n");
        assert_eq!(crlf, changed_ranges(None, "a\nb\n"));
        assert_eq!(crlf, vec![range(1, 2, &["a", "b"])]);
        // ...an edit of a CRLF file is found as in an LF file...
        assert_eq!(changed_ranges(Some("a\r\nb\r\nc\r\n"), "a\r\nB\r\nc\r\n"), vec![range(2, 2, &["B"])]);
        // ...and converting the endings alone changes no range (the file hash does change).
        assert_eq!(changed_ranges(Some("a\r\nb\r\n"), "a\nb\n"), vec![]);
        let change = file_change("w.txt", Some("a\r\nb\r\n"), Some("a\nb\n"));
        assert_eq!(change.sha256, Some(sha256_hex(b"a\nb\n")));
    }

    #[test]
    fn only_the_final_newline_is_not_a_line() {
        assert_eq!(changed_ranges(Some("a\nb"), "a\nb\n"), vec![]);
        // But a blank last line is one.
        assert_eq!(changed_ranges(Some("a\n"), "a\n\n"), vec![range(2, 2, &[""])]);
    }

    #[test]
    fn a_deleted_file_has_no_hash_and_no_ranges() {
        assert_eq!(
            file_change("gone.rs", Some("x\n"), None),
            FileChange { path: "gone.rs".into(), sha256: None, before_sha256: None, ranges: vec![] }
        );
        let created = file_change("new.rs", None, Some("x\ny\n"));
        assert_eq!(created.ranges, vec![range(1, 2, &["x", "y"])]);
        assert_eq!(created.sha256, Some(sha256_hex(b"x\ny\n")));
    }

    #[test]
    fn a_replaced_file_records_only_what_differs() {
        let before: String = (1..=100).map(|i| format!("line {i}\n")).collect();
        let after = before.replace("line 50\n", "line fifty\nline fifty-one\n");
        assert_eq!(changed_ranges(Some(&before), &after), vec![range(50, 51, &["line fifty", "line fifty-one"])]);
    }
}
