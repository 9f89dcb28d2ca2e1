//! What planning a compaction costs the runtime before an inference, on a history of a million tokens.
//!
//! - `compact.1m_tokens`: one call as the runtime makes it. The history (about 2,000 turns and 5,500
//!   messages: the user's, the assistant's with their tool calls, tool results from a dozen tokens to
//!   whole files of ten thousand; 1,000,000 `o200k_base` tokens, 4 MB, in all) was counted message by
//!   message as it grew, and those counts are cached; a call counts the newest turn's messages
//!   exactly (each sample takes a different turn as the newest, so its size varies as tool results
//!   do), then plans the whole prompt (system prompt, intent context, constraints, acceptance
//!   criteria, every turn) to a budget of 128,000 tokens. Nanoseconds per call.
//!
//! Counting the whole history again on every call is not the design: stderr shows what that would
//! cost with each tokenizer (several hundred milliseconds for 4 MB of text), beside the two halves of
//! the figure (counting the newest turn, planning).
//!
//! The text is the repository's own (sources for file reads, documents for prose), sliced
//! deterministically. Samples go to `target/bench-samples/compact.1m_tokens.json`, which
//! `scripts/bench.js` reads. Command-line arguments (cargo passes `--bench`) are ignored.

/// The allocator the edges ship with (the workspace Cargo.toml says why).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod samples;

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use chokepoint_core::budget::compaction::{Item, plan_compaction};
use chokepoint_core::budget::tokens::{Family, TokenCounter};

const TARGET_TOKENS: u64 = 1_000_000;
const BUDGET: u32 = 128_000;
const WARMUP: usize = 20;
const SAMPLES: usize = 400;
const FULL_COUNTS: usize = 3;

/// One message of the history: its text and its count, cached when it entered the history.
struct Message {
    turn: u32,
    text: String,
    tokens: u32,
}

fn main() {
    let counter = TokenCounter::new(Family::O200k);
    let loaded = Instant::now();
    counter.count("load the ranks");
    let load = loaded.elapsed();

    let texts = Texts::read();
    let history = history(&texts, &counter);
    let turns = history.last().map_or(0, |m| m.turn + 1);
    let total: u64 = history.iter().map(|m| u64::from(m.tokens)).sum();
    let bytes: usize = history.iter().map(|m| m.text.len()).sum();

    // The prompt around the conversation, counted once per task.
    let mut fixed = vec![
        Item::system_prompt(counter.count_message(&texts.prose(0, 12_000))),
        Item::intent_context(counter.count_message(&texts.prose(1, 1_500))),
    ];
    fixed.extend((0..6).map(|i| Item::constraint(counter.count(&texts.prose(10 + i, 300)))));
    fixed.extend((0..5).map(|i| Item::acceptance_criterion(counter.count(&texts.prose(20 + i, 250)))));
    let cached: Vec<Item> = fixed.iter().copied().chain(history.iter().map(|m| Item::turn(m.turn, m.tokens))).collect();

    // Each sample takes a different turn as the newest: its messages are counted now, the rest
    // come from the cache.
    let (mut calls, mut counting, mut planning) = (Vec::new(), Vec::new(), Vec::new());
    let mut summarized = 0;
    for i in 0..WARMUP + SAMPLES {
        let newest = (i as u32 * 7919) % turns;
        let started = Instant::now();
        let mut items = cached.clone();
        let mut counted = 0;
        for (m, item) in history.iter().zip(&mut items[fixed.len()..]) {
            if m.turn == newest {
                item.tokens = counter.count_message(black_box(&m.text));
                counted += 1;
            }
        }
        let after_count = Instant::now();
        let plan = plan_compaction(black_box(&items), BUDGET).expect("the fixed prompt fits the budget");
        let ended = Instant::now();
        assert!(counted > 0 && plan.totals.after <= u64::from(BUDGET) && plan.summary.is_some());
        summarized = plan.totals.summarized_items;
        if i >= WARMUP {
            calls.push(nanos(ended - started));
            counting.push(nanos(after_count - started));
            planning.push(nanos(ended - after_count));
        }
    }
    samples::write("compact.1m_tokens", None, &calls);

    eprintln!(
        "compaction: history of {turns} turns, {} messages, {total} tokens, {:.1} MB; {summarized} messages summarised to fit {BUDGET}",
        history.len(),
        bytes as f64 / 1e6
    );
    eprintln!("compaction: compact.1m_tokens {}", summary(&calls));
    eprintln!("compaction:   counting the newest turn {}", summary(&counting));
    eprintln!("compaction:   planning {} items {}", cached.len(), summary(&planning));
    eprintln!("compaction: loading o200k_base {:.0} ms (once a process)", load.as_secs_f64() * 1e3);
    for (name, counter) in [
        ("o200k_base", counter),
        ("cl100k_base", TokenCounter::new(Family::Cl100k)),
        ("estimate (claude)", TokenCounter::new(Family::Claude)),
    ] {
        counter.count("load");
        let mut runs = Vec::new();
        for _ in 0..FULL_COUNTS {
            let started = Instant::now();
            let n: u64 = history.iter().map(|m| u64::from(counter.count_message(black_box(&m.text)))).sum();
            runs.push(nanos(started.elapsed()));
            black_box(n);
        }
        let ms = percentile(&runs, 50) / 1e6;
        eprintln!("compaction: counting the whole history again with {name}: {ms:.0} ms ({:.1} MB/s)", bytes as f64 / 1e6 / (ms / 1e3));
    }
}

/// The history: turns of a user's message (one turn in four), the assistant's message with a tool
/// call, and one or two tool results, until [`TARGET_TOKENS`].
fn history(texts: &Texts, counter: &TokenCounter) -> Vec<Message> {
    let mut rng = Rng(0x5DEE_CE66_D1CE_F00D);
    let mut history = Vec::new();
    let mut total = 0u64;
    let mut turn = 0;
    while total < TARGET_TOKENS {
        let mut messages = Vec::new();
        let seed = rng.next();
        if turn % 4 == 0 {
            messages.push(texts.prose(seed, 40 + rng.below(400) as usize));
        }
        let path = &texts.files[rng.below(texts.files.len() as u64) as usize].0;
        messages.push(format!("{}\n{{\"tool\":\"read_file\",\"path\":\"{path}\"}}", texts.prose(seed ^ 1, 100 + rng.below(300) as usize)));
        for _ in 0..1 + rng.below(2) {
            // Mostly small results (a command's output, a search), now and then a whole file.
            let size = match rng.below(100) {
                0 => 8_000 + rng.below(32_000),
                1..=10 => 2_000 + rng.below(4_000),
                _ => 50 + rng.below(450),
            } as usize;
            messages.push(texts.code(rng.next(), size));
        }
        for text in messages {
            let tokens = counter.count_message(&text);
            total += u64::from(tokens);
            history.push(Message { turn, text, tokens });
        }
        turn += 1;
    }
    history
}

/// The repository's text to slice: sources and documents.
struct Texts {
    files: Vec<(String, String)>,
    prose: String,
    code: String,
}

impl Texts {
    fn read() -> Texts {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let read_dir = |dir: &str| -> Vec<(String, String)> {
            let mut paths: Vec<_> = std::fs::read_dir(root.join(dir)).expect("a folder").map(|e| e.expect("an entry").path()).collect();
            paths.sort();
            paths
                .into_iter()
                .filter_map(|p| Some((format!("{dir}/{}", p.file_name()?.to_str()?), std::fs::read_to_string(&p).ok()?)))
                .collect()
        };
        let files: Vec<_> =
            ["native/core/src", "native/core/src/ledger", "extension/src", "native/node/src"].into_iter().flat_map(read_dir).collect();
        let prose: String = ["ARCHITECTURE.md", "README.md", "docs/event-mapping.md"]
            .into_iter()
            .map(|f| std::fs::read_to_string(root.join(f)).expect("a document"))
            .collect();
        let code: String = files.iter().map(|(_, text)| text.as_str()).collect();
        Texts { files, prose, code }
    }

    fn prose(&self, seed: u64, len: usize) -> String {
        slice(&self.prose, seed, len)
    }

    fn code(&self, seed: u64, len: usize) -> String {
        slice(&self.code, seed, len)
    }
}

/// About `len` bytes of `text` from a place chosen by `seed`, wrapping around.
fn slice(text: &str, seed: u64, len: usize) -> String {
    let mut start = (seed % text.len() as u64) as usize;
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    text[start..].chars().chain(text.chars().cycle()).take(len).collect()
}

/// A deterministic xorshift: the same history on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn nanos(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

fn percentile(samples: &[u64], p: usize) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    sorted[(sorted.len() * p).div_ceil(100).saturating_sub(1)] as f64
}

/// "median 41.2 µs, p99 80.3 µs".
fn summary(samples: &[u64]) -> String {
    format!("median {:.1} µs, p99 {:.1} µs", percentile(samples, 50) / 1000.0, percentile(samples, 99) / 1000.0)
}
