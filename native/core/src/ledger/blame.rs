//! Who last wrote each line of a file, found by content rather than by line number.
//!
//! Line numbers in the ledger are where a write put its ranges *then*; edits since (by agents or by
//! hand) move them. So blame looks for each recorded range's content in the file as it is *now*:
//!
//! - The file's recorded ranges are taken newest record first. A line belongs to the newest record
//!   whose range is found holding it; lines no range explains are unknown (written by hand, by a tool
//!   outside the chokepoint, or by a write whose lines were all edited since). A line that was edited
//!   after a write is therefore the later write's if that edit was recorded, and nobody's if not.
//! - **First, whole: one window per range, the one nearest to where the write put it.** Blame looks
//!   for a window of the current file with the range's length whose [`range_hash`] is the recorded
//!   one. A short range (`}`, a blank line) can match in many places; claiming all of them would
//!   attribute every closing brace of the file to whoever last wrote one. The nearest match is the
//!   range itself moved by the edits above it, which is what spatial independence promises; copies
//!   of it elsewhere are not its write.
//! - **Then, line by line, what is left of a range that is no longer whole** (record version 2 keeps a
//!   32-bit digest of each line of a range, `ranges::line_digest`; version-1 ranges, and ranges too
//!   long to have been digested, are found whole or not at all). A line of the range is matched to a
//!   line of the file only as part of a run of consecutive lines, in the range's order:
//!   1. *Anchors*: the range's lines that occur exactly once in the range and exactly once in the
//!      file (the unique lines of patience diff). Of those, the longest subsequence that is in the
//!      same order in the file as in the range is kept; a unique line found out of order (moved away
//!      from the rest of its range) anchors nothing and is not attributed.
//!   2. *Runs*: each anchor grows into the run of consecutive lines around it that are equal in the
//!      range and in the file (`}`, blank lines and other repeated lines join a run this way).
//!   3. *Gaps*: between two runs, the lines the range and the file have between them are diffed
//!      (Myers, on the digests), and the lines the diff pairs are matched: a line edited between
//!      two unedited parts leaves the lines around it to the range, even if lines were also
//!      inserted or deleted there.
//!   4. *Ends*: before the first run and after the last, a line is matched where the nearest run puts
//!      it (at the same offset from the run as in the range): lines edited one for one do not hide
//!      the unedited lines beyond them.
//!
//!   **A lone `}`** (any line the file has more than once: a closing brace, a blank line, `return
//!   Ok(());`) is never an anchor. It is attributed to a range only within that range's anchored
//!   stretch: as part of a run with an anchor, paired by the diff of a gap between two runs, or at its
//!   own offset from the first or last run; never because an equal line exists somewhere in the
//!   file. A range that has no anchor left (every surviving line repeated elsewhere in the file) is
//!   not found line by line at all.
//! - Denied writes are left out: they changed nothing.
//!
//! Speed: each range is first checked where it was written (the common case: nothing moved). Only a
//! range that is not there makes blame hash every window of that range's length, once per length (all
//! ranges of one length share the windows), so a file of a few thousand lines with hundreds of
//! recorded ranges costs one pass per distinct length of a moved or overwritten range. The line-by-
//! line search digests the file's lines once, the first time a range needs it, and then costs each
//! partly edited range about its own length (a gap's diff is bounded by [`MAX_GAP_DIFF`] lines).

use std::collections::HashMap;

use sha2::{Digest, Sha256};
use similar::{Algorithm, DiffOp, capture_diff_slices};

use super::index::{Index, RecordedRange};
use super::ranges::{line_digest, lines, parse_line_digests};
use crate::base::sidecar::Sidecar;

/// The most lines (of the range and of the file together) between two runs that blame diffs; a gap
/// larger than that (thousands of lines inserted inside one range) keeps only the lines its runs
/// reach, so the diff's quadratic worst case stays a few milliseconds.
pub const MAX_GAP_DIFF: usize = 4096;

/// One line of the file as it is now, and the write that explains it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlameLine {
    /// 1-based.
    pub line: u32,
    /// The line's text, without its terminator.
    pub text: String,
    /// `None`: no recorded write explains this line.
    pub origin: Option<Origin>,
}

/// The record whose range holds a line now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub seq: u64,
    pub time: String,
    pub intent: Option<String>,
    pub session: Option<String>,
    pub agent: Option<String>,
    pub model: Option<String>,
    pub tool: Option<String>,
    /// Where the write put the range (1-based, inclusive), in the file as it was then.
    pub recorded: (u32, u32),
    /// Where the range is now: the window it fills when `whole`; otherwise the first and the last
    /// line of the file matched to it line by line (lines between them may be others').
    pub found: (u32, u32),
    /// The range is in the file whole (its range hash matched); `false` when it was partly edited
    /// since and this line was matched by its own digest.
    pub whole: bool,
}

/// Blames `path` (workspace-relative, `/`-separated, as the ledger records it) as it is now in
/// `sidecar`'s workspace: every line, or only `line` (1-based). Uses what `index` holds: call
/// [`Index::catch_up`] first to include the latest writes. `Err` for a file that cannot be read or a
/// line past its end.
pub fn blame(index: &Index, sidecar: &Sidecar, path: &str, line: Option<u32>) -> Result<Vec<BlameLine>, super::error::ReadError> {
    if path.is_empty() || path.starts_with('/') || path.split(['/', '\\']).any(|part| part == "..") {
        return Err(format!("`{path}` is not a workspace-relative path").into());
    }
    let file = sidecar.workspace_root().join(path);
    let bytes = std::fs::read(&file).map_err(|e| format!("reading {} failed: {e}", file.display()))?;
    // Ranges were hashed from text; a file that is not UTF-8 will simply match nothing where it is
    // not, rather than fail the whole blame.
    let text = String::from_utf8_lossy(&bytes);
    let current = lines(&text);
    if let Some(asked) = line
        && (asked == 0 || asked as usize > current.len())
    {
        return Err(format!("{path} has {} lines; there is no line {asked}", current.len()).into());
    }
    let recorded = index.ranges_of(path)?;
    let owners = attribute(&current, &recorded);
    let blame_line = |i: usize| BlameLine {
        line: u32::try_from(i + 1).unwrap_or(u32::MAX),
        text: current[i].to_owned(),
        origin: owners[i].map(|Claim { range: r, found, whole }| {
            let range = &recorded[r];
            Origin {
                seq: range.seq,
                time: range.time.clone(),
                intent: range.intent.clone(),
                session: range.session.clone(),
                agent: range.agent.clone(),
                model: range.model.clone(),
                tool: range.tool.clone(),
                recorded: (range.start, range.end),
                found,
                whole,
            }
        }),
    };
    Ok(match line {
        Some(asked) => vec![blame_line(asked as usize - 1)],
        None => (0..current.len()).map(blame_line).collect(),
    })
}

/// Which range explains a line, and how it was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Claim {
    /// The index in `recorded`.
    range: usize,
    /// Where that range is now (1-based, inclusive; see [`Origin::found`]).
    found: (u32, u32),
    whole: bool,
}

/// For each line of `current`, the range of `recorded` (newest first) that explains it.
fn attribute(current: &[&str], recorded: &[RecordedRange]) -> Vec<Option<Claim>> {
    let n = current.len();
    let mut owners: Vec<Option<Claim>> = vec![None; n];
    // Window hash -> starts (ascending), per window length; computed the first time a length needs it.
    let mut windows: HashMap<usize, HashMap<[u8; 32], Vec<usize>>> = HashMap::new();
    // The file's line digests, computed the first time a range is searched for line by line.
    let mut file: Option<FileDigests> = None;
    for (r, range) in recorded.iter().enumerate() {
        if range.start == 0 || range.end < range.start {
            continue;
        }
        let len = (range.end - range.start) as usize + 1;
        if let Some(start) = find_whole(current, range, len, &mut windows) {
            let found = (to_line(start + 1), to_line(start + len));
            claim(&mut owners, start..start + len, Claim { range: r, found, whole: true });
            continue;
        }
        // A range of one line that is not whole is not there at all.
        if len < 2 {
            continue;
        }
        let Some(digests) = range.line_digests.as_deref().and_then(|text| parse_line_digests(text, len)) else {
            continue;
        };
        let file = file.get_or_insert_with(|| FileDigests::new(current));
        let pairs = align(&digests, file);
        if let (Some(first), Some(last)) = (pairs.first(), pairs.last()) {
            let found = (to_line(first.1 + 1), to_line(last.1 + 1));
            claim(&mut owners, pairs.iter().map(|&(_, j)| j), Claim { range: r, found, whole: false });
        }
    }
    owners
}

/// Gives `lines` of the file to `claim`, except those a newer record already explains.
fn claim(owners: &mut [Option<Claim>], lines: impl IntoIterator<Item = usize>, claim: Claim) {
    for line in lines {
        owners[line].get_or_insert(claim);
    }
}

/// Where `range` (of `len` lines) is whole in `current`: where it was written if it is still there,
/// else the nearest window with its hash.
fn find_whole(
    current: &[&str],
    range: &RecordedRange,
    len: usize,
    windows: &mut HashMap<usize, HashMap<[u8; 32], Vec<usize>>>,
) -> Option<usize> {
    let want = parse_hex(&range.sha256)?;
    let n = current.len();
    if len > n {
        return None;
    }
    // Where the write put it, pulled inside the file if the file has shrunk since.
    let written = (range.start as usize - 1).min(n - len);
    if window_hash(&current[written..written + len]) == want {
        return Some(written);
    }
    let by_hash = windows.entry(len).or_insert_with(|| all_windows(current, len));
    by_hash.get(&want).and_then(|starts| nearest(starts, written))
}

/// The file's lines as digests, and where each digest occurs.
struct FileDigests {
    digests: Vec<u32>,
    /// Digest -> (its first line, how many lines have it).
    occurs: HashMap<u32, (usize, usize)>,
}

impl FileDigests {
    fn new(current: &[&str]) -> FileDigests {
        let digests: Vec<u32> = current.iter().map(|line| line_digest(line)).collect();
        let mut occurs: HashMap<u32, (usize, usize)> = HashMap::with_capacity(digests.len());
        for (j, &d) in digests.iter().enumerate() {
            occurs.entry(d).or_insert((j, 0)).1 += 1;
        }
        FileDigests { digests, occurs }
    }

    /// The one line with digest `d`, if exactly one has it.
    fn unique(&self, d: u32) -> Option<usize> {
        match self.occurs.get(&d) {
            Some(&(j, 1)) => Some(j),
            _ => None,
        }
    }
}

/// The lines of a range (its line digests `d`) still in the file, as (index in the range, index in
/// the file) pairs, both ascending: anchors, runs, gaps and ends as the module describes.
fn align(d: &[u32], file: &FileDigests) -> Vec<(usize, usize)> {
    let c = &file.digests;
    let (m, n) = (d.len(), c.len());
    // 1. Anchors: unique in the range and in the file, the longest in-order subsequence of them.
    let mut in_range: HashMap<u32, usize> = HashMap::with_capacity(m);
    for &digest in d {
        *in_range.entry(digest).or_default() += 1;
    }
    let seeds: Vec<(usize, usize)> = d
        .iter()
        .enumerate()
        .filter(|&(_, digest)| in_range[digest] == 1)
        .filter_map(|(i, &digest)| Some((i, file.unique(digest)?)))
        .collect();
    let anchors = longest_in_order(&seeds);
    // 2. Runs: each anchor grown along its diagonal, backwards no further than the previous run.
    let mut runs: Vec<(usize, usize, usize)> = Vec::new(); // (i, j, len)
    for &(i, j) in &anchors {
        if let Some(&(ri, rj, len)) = runs.last()
            && i < ri + len
        {
            // A unique line that is in the range once and in the file once, on the previous run's
            // diagonal and inside it: already part of it.
            debug_assert_eq!(j + ri, i + rj);
            continue;
        }
        let (floor_i, floor_j) = runs.last().map_or((0, 0), |&(ri, rj, len)| (ri + len, rj + len));
        let (mut i0, mut j0) = (i, j);
        while i0 > floor_i && j0 > floor_j && d[i0 - 1] == c[j0 - 1] {
            i0 -= 1;
            j0 -= 1;
        }
        let mut len = i + 1 - i0;
        while i0 + len < m && j0 + len < n && d[i0 + len] == c[j0 + len] {
            len += 1;
        }
        runs.push((i0, j0, len));
    }
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    let (Some(&first), Some(&last)) = (runs.first(), runs.last()) else {
        return pairs;
    };
    // 4. The start: at the first run's offset, before it.
    let (i0, j0, _) = first;
    for (i, digest) in d[..i0].iter().enumerate() {
        if let Some(j) = (j0 + i).checked_sub(i0)
            && c[j] == *digest
        {
            pairs.push((i, j));
        }
    }
    for (k, &(i, j, len)) in runs.iter().enumerate() {
        pairs.extend((0..len).map(|o| (i + o, j + o)));
        // 3. The gap to the next run, diffed.
        if let Some(&(next_i, next_j, _)) = runs.get(k + 1) {
            let (gap_i, gap_j) = (i + len..next_i, j + len..next_j);
            if !gap_i.is_empty() && !gap_j.is_empty() && gap_i.len() + gap_j.len() <= MAX_GAP_DIFF {
                for op in capture_diff_slices(Algorithm::Myers, &d[gap_i.clone()], &c[gap_j.clone()]) {
                    if let DiffOp::Equal { old_index, new_index, len } = op {
                        pairs.extend((0..len).map(|o| (gap_i.start + old_index + o, gap_j.start + new_index + o)));
                    }
                }
            }
        }
    }
    // 4. The end: at the last run's offset, after it.
    let (i1, j1, len) = last;
    for (i, digest) in d.iter().enumerate().skip(i1 + len) {
        let j = j1 + (i - i1);
        if c.get(j) == Some(digest) {
            pairs.push((i, j));
        }
    }
    pairs
}

/// The longest subsequence of `seeds` (ascending in their first element) whose second elements
/// ascend too (patience sorting, O(k log k)); of several, the one ending in the smallest second.
fn longest_in_order(seeds: &[(usize, usize)]) -> Vec<(usize, usize)> {
    // tails[l]: the seed ending the best subsequence of length l + 1 found so far (smallest j).
    let mut tails: Vec<usize> = Vec::new();
    let mut before: Vec<Option<usize>> = vec![None; seeds.len()];
    for (k, &(_, j)) in seeds.iter().enumerate() {
        let at = tails.partition_point(|&t| seeds[t].1 < j);
        before[k] = at.checked_sub(1).map(|p| tails[p]);
        match tails.get_mut(at) {
            Some(tail) => *tail = k,
            None => tails.push(k),
        }
    }
    let mut out = Vec::with_capacity(tails.len());
    let mut at = tails.last().copied();
    while let Some(k) = at {
        out.push(seeds[k]);
        at = before[k];
    }
    out.reverse();
    out
}

/// Every window of `len` lines, by hash.
fn all_windows(current: &[&str], len: usize) -> HashMap<[u8; 32], Vec<usize>> {
    let mut by_hash: HashMap<[u8; 32], Vec<usize>> = HashMap::with_capacity(current.len() + 1 - len);
    for start in 0..=current.len() - len {
        by_hash.entry(window_hash(&current[start..start + len])).or_default().push(start);
    }
    by_hash
}

/// Of `starts` (ascending), the one closest to `to`; the earlier one on a tie.
fn nearest(starts: &[usize], to: usize) -> Option<usize> {
    let after = starts.partition_point(|&s| s < to);
    let before = after.checked_sub(1).map(|i| starts[i]);
    let after = starts.get(after).copied();
    match (before, after) {
        (Some(b), Some(a)) => Some(if to - b <= a - to { b } else { a }),
        (b, a) => b.or(a),
    }
}

/// The range hash of `lines` (see `ranges::range_hash`), as bytes: hashing without building the
/// joined string or its hex keeps a window's cost at its bytes.
fn window_hash(lines: &[&str]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            hasher.update(b"\n");
        }
        hasher.update(line.as_bytes());
    }
    hasher.finalize().into()
}

fn parse_hex(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.as_bytes();
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in hex.chunks_exact(2).enumerate() {
        let digit = |c: u8| (c as char).to_digit(16);
        out[i] = u8::try_from(digit(pair[0])? * 16 + digit(pair[1])?).ok()?;
    }
    Some(out)
}

fn to_line(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::ranges::{line_digests, range_hash};

    /// A range as a version-1 record has it: the range hash alone.
    fn range(seq: u64, start: u32, lines: &[&str]) -> RecordedRange {
        RecordedRange {
            seq,
            time: String::new(),
            kind: "tool_call".into(),
            session: None,
            agent: None,
            intent: None,
            tool: None,
            model: None,
            start,
            end: start + lines.len() as u32 - 1,
            sha256: range_hash(lines),
            line_digests: None,
        }
    }

    /// A range as a version-2 record has it: with its line digests.
    fn digested(seq: u64, start: u32, lines: &[&str]) -> RecordedRange {
        RecordedRange { line_digests: Some(line_digests(lines)), ..range(seq, start, lines) }
    }

    fn seqs(current: &[&str], recorded: &[RecordedRange]) -> Vec<Option<u64>> {
        attribute(current, recorded).into_iter().map(|o| o.map(|claim| recorded[claim.range].seq)).collect()
    }

    #[test]
    fn the_window_hash_is_the_range_hash() {
        let lines = ["fn a() {", "}", ""];
        assert_eq!(parse_hex(&range_hash(&lines)), Some(window_hash(&lines)));
        assert_eq!(parse_hex("zz"), None);
        assert_eq!(parse_hex(&"g".repeat(64)), None);
    }

    #[test]
    fn ranges_are_found_where_they_moved_and_the_newest_wins() {
        // Record 1 wrote a, b, c at 1-3; record 2 replaced b; then two lines were typed above.
        let now = ["x", "y", "a", "B", "c"];
        let recorded = [range(2, 2, &["B"]), range(1, 1, &["a", "b", "c"])];
        // Without line digests (version 1), record 1's range no longer matches as a whole: `a` and `c`
        // are unknown, `B` is record 2's.
        assert_eq!(seqs(&now, &recorded), vec![None, None, None, Some(2), None]);
        // With them, `a` and `c` are still record 1's.
        let recorded = [digested(2, 2, &["B"]), digested(1, 1, &["a", "b", "c"])];
        assert_eq!(seqs(&now, &recorded), vec![None, None, Some(1), Some(2), Some(1)]);
        let claims = attribute(&now, &recorded);
        assert_eq!(claims[2].map(|c| (c.found, c.whole)), Some(((3, 5), false)));
        assert_eq!(claims[3].map(|c| (c.found, c.whole)), Some(((4, 4), true)));
        // Had record 2 not edited it, the moved range is record 1's, whole.
        let now = ["x", "y", "a", "b", "c"];
        assert_eq!(seqs(&now, &recorded[1..]), vec![None, None, Some(1), Some(1), Some(1)]);
        let found = attribute(&now, &recorded[1..])[2].unwrap();
        assert_eq!((found.found, found.whole), ((3, 5), true));
    }

    #[test]
    fn a_short_range_claims_only_its_nearest_copy() {
        let now = ["}", "a", "}", "b", "}"];
        assert_eq!(seqs(&now, &[range(7, 4, &["}"])]), vec![None, None, Some(7), None, None]);
        // Equidistant: the earlier one.
        assert_eq!(seqs(&now, &[range(7, 2, &["}"])]), vec![Some(7), None, None, None, None]);
        // Written past the end of a file that has shrunk: still found.
        assert_eq!(seqs(&now, &[range(7, 40, &["b", "}"])]), vec![None, None, None, Some(7), Some(7)]);
    }

    #[test]
    fn older_records_explain_what_newer_ones_left() {
        let now = ["a", "b", "c", "d"];
        let recorded = [range(3, 2, &["b", "c"]), range(1, 1, &["a", "b", "c", "d"])];
        assert_eq!(seqs(&now, &recorded), vec![Some(1), Some(3), Some(3), Some(1)]);
    }

    #[test]
    fn nearest_prefers_the_closest_then_the_earlier() {
        assert_eq!(nearest(&[], 3), None);
        assert_eq!(nearest(&[1, 10], 3), Some(1));
        assert_eq!(nearest(&[1, 5], 3), Some(1));
        assert_eq!(nearest(&[1, 4], 3), Some(4));
        assert_eq!(nearest(&[4], 0), Some(4));
        assert_eq!(nearest(&[0, 2], 9), Some(2));
    }

    #[test]
    fn the_longest_in_order_subsequence() {
        assert_eq!(longest_in_order(&[]), vec![]);
        assert_eq!(longest_in_order(&[(0, 5), (1, 1), (2, 2), (3, 9), (4, 3)]), vec![(1, 1), (2, 2), (4, 3)]);
        assert_eq!(longest_in_order(&[(0, 3), (1, 2), (2, 1)]), vec![(2, 1)]);
    }

    /// The file lines each line of `range` is matched to, by `align` (`None`: not matched).
    fn aligned(range: &[&str], now: &[&str]) -> Vec<Option<usize>> {
        let d: Vec<u32> = range.iter().map(|l| line_digest(l)).collect();
        let mut out = vec![None; range.len()];
        for (i, j) in align(&d, &FileDigests::new(now)) {
            assert!(out[i].is_none(), "line {i} matched twice");
            out[i] = Some(j);
        }
        out
    }

    #[test]
    fn lines_are_matched_in_runs_around_unique_anchors() {
        let range = ["fn f() {", "    let a = 1;", "    if a {", "        go();", "    }", "    done(a)", "}"];
        // One line edited, two typed inside, three above: everything else is found where it moved.
        let now = [
            "// x",
            "// y",
            "// z",
            "fn f() {",
            "    let a = 1;",
            "    if a > 0 {",
            "        go();",
            "    }",
            "    log();",
            "",
            "    done(a)",
            "}",
        ];
        assert_eq!(aligned(&range, &now), [Some(3), Some(4), None, Some(6), Some(7), Some(10), Some(11)]);
        // Between two runs, the diff of the gap pairs a repeated line (here `    }`).
        let range = ["a()", "x()", "    }", "y()", "b()"];
        let now = ["a()", "X()", "new()", "    }", "Y()", "b()", "    }"];
        assert_eq!(aligned(&range, &now), [Some(0), None, Some(3), None, Some(5)]);
        // Before the first run and after the last, a line edited one for one leaves the repeated lines
        // beyond it at their offset.
        // (`{`, `}` and the blank line are all repeated in the file: only `a()` and `b()` anchor.)
        let range = ["{", "head()", "a()", "b()", "tail()", "}", ""];
        let now = ["{", "", "}", "{", "HEAD()", "a()", "b()", "TAIL()", "}", "", "}"];
        assert_eq!(aligned(&range, &now), [Some(3), None, Some(5), Some(6), None, Some(8), Some(9)]);
    }

    #[test]
    fn a_lone_repeated_line_is_not_matched_away_from_its_range() {
        // Every other line of the range was edited: its `}` and blank line have no anchor left, and
        // the file's many `}` say nothing about who wrote them.
        let range = ["one()", "}", "", "two()"];
        let now = ["ONE()", "}", "", "TWO()", "}", "", "three()", "}"];
        assert_eq!(aligned(&range, &now), [None; 4]);
        // A repeated line is not an anchor even where it is unique in the range: the anchored run is
        // `a()`, `b()`, and the file's `}` far below it is at the wrong offset.
        let range = ["a()", "b()", "c()", "}"];
        let now = ["a()", "b()", "C()", "D()", "E()", "}", "z()", "}"];
        assert_eq!(aligned(&range, &now), [Some(0), Some(1), None, None]);
        // A unique line moved out of order anchors nothing: `b()` now after `c()` is not the range's
        // (moving it was someone's edit), while `a()` and `c()`, in order, are.
        let range = ["a()", "b()", "c()", "d()"];
        let now = ["a()", "c()", "d()", "b()"];
        assert_eq!(aligned(&range, &now), [Some(0), None, Some(1), Some(2)]);
    }

    #[test]
    fn a_line_repeated_inside_the_range_joins_a_run_but_anchors_nothing() {
        let range = ["x", "x", "y", "x"];
        let now = ["x", "x", "Y", "x"];
        // `x` is in the range three times and `Y` replaced the only unique line: no anchor.
        assert_eq!(aligned(&range, &now), [None; 4]);
        let range = ["start", "x", "x", "y", "x"];
        let now = ["start", "x", "x", "Y", "x"];
        assert_eq!(aligned(&range, &now), [Some(0), Some(1), Some(2), None, Some(4)]);
    }
}
