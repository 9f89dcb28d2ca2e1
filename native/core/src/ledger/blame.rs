//! Who last wrote each line of a file, found by content rather than by line number.
//!
//! Line numbers in the ledger are where a write put its ranges *then*; edits since (by agents or by
//! hand) move them. So blame looks for each recorded range's content hash in the file as it is *now*:
//!
//! - The file's recorded ranges are taken newest record first. For each, blame finds a window of the
//!   current file with the range's length whose [`range_hash`] is the recorded one. A line belongs to
//!   the newest record whose range matches a window containing it; lines no range explains are
//!   unknown (written by hand, by a tool outside the chokepoint, or by a write whose range was edited
//!   since).
//! - **One window per range: the one nearest to where the write put it.** A short range (`}`, a blank
//!   line) can match in many places; claiming all of them would attribute every closing brace of the
//!   file to whoever last wrote one. The nearest match is the range itself moved by the edits above
//!   it, which is what spatial independence promises; copies of it elsewhere are not its write.
//! - **A range matches whole or not at all.** The ledger keeps one hash per range, not per line, so a
//!   range in which one line was edited since can no longer be found: its lines are explained by the
//!   later write that edited it (if that was recorded) or are unknown. That is the price of not
//!   keeping file contents in the ledger.
//! - Denied writes are left out: they changed nothing.
//!
//! Speed: each range is first checked where it was written (the common case: nothing moved). Only a
//! range that is not there makes blame hash every window of that range's length, once per length (all
//! ranges of one length share the windows), so a file of a few thousand lines with hundreds of
//! recorded ranges costs one pass per distinct length of a moved or overwritten range.

use std::collections::HashMap;

use sha2::{Digest, Sha256};

use super::index::{Index, RecordedRange};
use super::ranges::lines;
use crate::Sidecar;

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
    /// Where the range is now.
    pub found: (u32, u32),
}

/// Blames `path` (workspace-relative, `/`-separated, as the ledger records it) as it is now in
/// `sidecar`'s workspace: every line, or only `line` (1-based). Uses what `index` holds: call
/// [`Index::catch_up`] first to include the latest writes. `Err` for a file that cannot be read or a
/// line past its end.
pub fn blame(index: &Index, sidecar: &Sidecar, path: &str, line: Option<u32>) -> Result<Vec<BlameLine>, String> {
    if path.is_empty() || path.starts_with('/') || path.split(['/', '\\']).any(|part| part == "..") {
        return Err(format!("`{path}` is not a workspace-relative path"));
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
        return Err(format!("{path} has {} lines; there is no line {asked}", current.len()));
    }
    let recorded = index.ranges_of(path)?;
    let owners = attribute(&current, &recorded);
    let blame_line = |i: usize| BlameLine {
        line: u32::try_from(i + 1).unwrap_or(u32::MAX),
        text: current[i].to_owned(),
        origin: owners[i].map(|(r, found)| {
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
            }
        }),
    };
    Ok(match line {
        Some(asked) => vec![blame_line(asked as usize - 1)],
        None => (0..current.len()).map(blame_line).collect(),
    })
}

/// For each line of `current`, the index in `recorded` (newest first) of the range that explains it
/// and where that range was found (1-based, inclusive).
fn attribute(current: &[&str], recorded: &[RecordedRange]) -> Vec<Option<(usize, (u32, u32))>> {
    let n = current.len();
    let mut owners: Vec<Option<(usize, (u32, u32))>> = vec![None; n];
    // Window hash -> starts (ascending), per window length; computed the first time a length needs it.
    let mut windows: HashMap<usize, HashMap<[u8; 32], Vec<usize>>> = HashMap::new();
    for (r, range) in recorded.iter().enumerate() {
        let Some(want) = parse_hex(&range.sha256) else { continue };
        if range.start == 0 || range.end < range.start {
            continue;
        }
        let len = (range.end - range.start) as usize + 1;
        if len > n {
            continue;
        }
        // Where the write put it, pulled inside the file if the file has shrunk since.
        let written = (range.start as usize - 1).min(n - len);
        let start = if window_hash(&current[written..written + len]) == want {
            written
        } else {
            let by_hash = windows.entry(len).or_insert_with(|| all_windows(current, len));
            match by_hash.get(&want).and_then(|starts| nearest(starts, written)) {
                Some(start) => start,
                None => continue,
            }
        };
        let found = (to_line(start + 1), to_line(start + len));
        for owner in &mut owners[start..start + len] {
            // Newest first: a line already explained keeps its newer writer.
            owner.get_or_insert((r, found));
        }
    }
    owners
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
    use crate::ledger::ranges::range_hash;

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
        }
    }

    fn seqs(current: &[&str], recorded: &[RecordedRange]) -> Vec<Option<u64>> {
        attribute(current, recorded).into_iter().map(|o| o.map(|(r, _)| recorded[r].seq)).collect()
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
        // Record 1's range no longer matches as a whole: `a` and `c` are unknown, `B` is record 2's.
        assert_eq!(seqs(&now, &recorded), vec![None, None, None, Some(2), None]);
        // Had record 2 not edited it, the moved range is record 1's.
        let now = ["x", "y", "a", "b", "c"];
        assert_eq!(seqs(&now, &recorded[1..]), vec![None, None, Some(1), Some(1), Some(1)]);
        let found = attribute(&now, &recorded[1..])[2].unwrap().1;
        assert_eq!(found, (3, 5));
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
}
