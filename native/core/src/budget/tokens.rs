//! Token counts for the prompt the runtime assembles: exact where the model family's tokenizer ships
//! with us (OpenAI's `o200k_base` and `cl100k_base`, through `tiktoken-rs`), a documented estimate
//! that errs high everywhere else.
//!
//! Counting is the runtime's job once per message: a message is counted when it enters the history and
//! its count is kept with it (see `compaction.rs`), because exact BPE runs at a few megabytes a second
//! and a long history is several megabytes of text. Planning a compaction then reads cached numbers.

use tiktoken_rs::CoreBPE;
use tiktoken_rs::tokenizer::Tokenizer;

/// The family of tokenizers a model belongs to: what decides how its text is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// OpenAI's `o200k_base`: gpt-4o, gpt-4.1, gpt-4.5, gpt-5, the o-series, gpt-oss. Exact.
    O200k,
    /// OpenAI's `cl100k_base`: gpt-4, gpt-3.5-turbo, the text-embedding-3 models. Exact.
    Cl100k,
    /// Anthropic's Claude models. Estimated: Anthropic publishes no local tokenizer for Claude 3 and
    /// later (counting is an API call).
    Claude,
    /// Google's Gemini and Gemma models. Estimated (SentencePiece, not shipped).
    Gemini,
    /// Meta's Llama models. Estimated.
    Llama,
    /// Any other model, including OpenAI's pre-gpt-3.5 encodings and the scripted test provider.
    /// Estimated.
    Unknown,
}

crate::base::names::names!(Family {
    Self::O200k => "o200k",
    Self::Cl100k => "cl100k",
    Self::Claude => "claude",
    Self::Gemini => "gemini",
    Self::Llama => "llama",
    Self::Unknown => "unknown",
});

impl Family {
    /// Whether this family's counts come from its real tokenizer (otherwise they are estimates).
    pub fn is_exact(self) -> bool {
        matches!(self, Family::O200k | Family::Cl100k)
    }
}

/// The tokenizer family of a model id, as the runtime names models: a bare id (`gpt-4o`,
/// `claude-sonnet-4-5`), a provider-qualified one (`openai:gpt-4.1-mini`), or a vendor path
/// (`vscode-lm:copilot/gpt-4o`, `meta-llama/Llama-3.1-8B`). Case does not matter. OpenAI ids are
/// resolved by `tiktoken-rs`'s own table (exact ids and dated prefixes, `ft:` fine-tunes); the other
/// families by name.
pub fn family_for_model(model_id: &str) -> Family {
    let id = model_id.trim().to_ascii_lowercase();
    // `openai:gpt-4o` names its provider; `ft:gpt-4o-mini:org::id` is a fine-tune, whose colons stay.
    let unqualified = match id.split_once(':') {
        Some((provider, model)) if provider != "ft" => model,
        _ => id.as_str(),
    };
    let base = unqualified.rsplit_once('/').map_or(unqualified, |(_, model)| model);
    for candidate in [id.as_str(), unqualified, base] {
        match tiktoken_rs::tokenizer::get_tokenizer(candidate) {
            Some(Tokenizer::O200kBase | Tokenizer::O200kHarmony) => return Family::O200k,
            Some(Tokenizer::Cl100kBase) => return Family::Cl100k,
            // The GPT-3 era encodings are not worth shipping: estimated like any unknown model.
            Some(_) => return Family::Unknown,
            None => {}
        }
    }
    // Other vendors' ids vary more (`anthropic.claude-3-5-sonnet-20240620-v1:0` on Bedrock,
    // `models/gemini-2.5-pro`), so the family is recognised anywhere in the id.
    if id.contains("claude") {
        Family::Claude
    } else if id.contains("gemini") || id.contains("gemma") {
        Family::Gemini
    } else if id.contains("llama") {
        Family::Llama
    } else {
        Family::Unknown
    }
}

/// Counts tokens of one model family. Cheap to create and to copy: the exact tokenizers behind it
/// are `tiktoken-rs`'s process-wide singletons, each built on first use (parsing its rank file takes
/// a few hundred milliseconds) and shared by every counter afterwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenCounter {
    family: Family,
}

impl TokenCounter {
    pub fn new(family: Family) -> TokenCounter {
        TokenCounter { family }
    }

    /// The counter for a model id (see [`family_for_model`]).
    pub fn for_model(model_id: &str) -> TokenCounter {
        TokenCounter::new(family_for_model(model_id))
    }

    pub fn family(&self) -> Family {
        self.family
    }

    /// Whether [`TokenCounter::count`] is exact for this family.
    pub fn is_exact(&self) -> bool {
        self.family.is_exact()
    }

    /// The tokens of `text` alone, without any message framing.
    pub fn count(&self, text: &str) -> u32 {
        let n = match self.family {
            Family::O200k => exact(tiktoken_rs::o200k_base_singleton(), text),
            Family::Cl100k => exact(tiktoken_rs::cl100k_base_singleton(), text),
            _ => estimate(text),
        };
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// What one chat message adds around its content: the role and the start and end markers.
    /// OpenAI's chat format spends 3 tokens a message plus 1 for the role; the estimated families
    /// get twice that, since their framing is not known.
    pub fn message_overhead(&self) -> u32 {
        if self.is_exact() { EXACT_MESSAGE_OVERHEAD } else { ESTIMATED_MESSAGE_OVERHEAD }
    }

    /// The tokens of a chat message whose content is `text`: [`TokenCounter::count`] plus
    /// [`TokenCounter::message_overhead`].
    pub fn count_message(&self, text: &str) -> u32 {
        self.count(text).saturating_add(self.message_overhead())
    }
}

const EXACT_MESSAGE_OVERHEAD: u32 = 4;
const ESTIMATED_MESSAGE_OVERHEAD: u32 = 8;

/// The longest piece handed to the BPE at once. The tokenizer's pre-split regex (fancy-regex,
/// backtracking) overflows on a very long run of one character class, and its merge loop is
/// quadratic in a piece's length, so long texts are counted in chunks cut where the pre-split would
/// cut anyway (see [`chunks`]).
const CHUNK: usize = 16 * 1024;

fn exact(bpe: &CoreBPE, text: &str) -> usize {
    chunks(text, CHUNK).map(|chunk| bpe.encode_ordinary(chunk).len()).sum()
}

/// Splits `text` into pieces of about `max` bytes, cut only where both OpenAI pre-split patterns end a
/// piece anyway, so that no cut changes the count (`tests/compaction.rs` checks it on the repository's
/// text): after a newline followed by spaces or tabs and then a printable ASCII character other than
/// `/` (no piece runs from a newline into what follows, except `o200k_base`'s punctuation that
/// swallows a `/`), or before a space between two ASCII letters (a word piece takes at most one
/// leading space). Text with no such place within `2 * max` bytes (a megabyte of one character, a
/// base64 blob) is cut at a character boundary, which can change the count by a token at each cut.
fn chunks(text: &str, max: usize) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        if rest.len() <= max {
            return Some(std::mem::take(&mut rest));
        }
        let bytes = rest.as_bytes();
        let window = &bytes[..(2 * max).min(bytes.len())];
        let clean = |i: usize| match window[i - 1] {
            b'\n' => {
                let next = window[i..].iter().find(|b| !matches!(b, b' ' | b'\t'));
                window[i] != b'/' && next.is_some_and(u8::is_ascii_graphic)
            }
            b if b.is_ascii_alphabetic() => window[i] == b' ' && window.get(i + 1).is_some_and(u8::is_ascii_alphabetic),
            _ => false,
        };
        // The first clean cut at or after `max`, else the last one before it, else a hard cut.
        let cut = (max..window.len())
            .find(|&i| clean(i))
            .or_else(|| (1..max).rev().find(|&i| clean(i)))
            .unwrap_or_else(|| (max..=rest.len()).find(|&i| rest.is_char_boundary(i)).unwrap_or(rest.len()));
        let (chunk, tail) = rest.split_at(cut);
        rest = tail;
        Some(chunk)
    })
}

/// The estimate for the families without a tokenizer here: `cl100k_base`'s exact count, times 7/5,
/// rounded up.
///
/// It errs high on purpose: an under-count sends a prompt the model refuses (a hard failure), an
/// over-count only compacts a little early. A count of the text's own BPE pieces is the closest proxy
/// at hand: Llama 3's vocabulary extends `cl100k_base`, and published comparisons put Claude's
/// tokenizer at about 16% more tokens than GPT-4o's on English prose and 30% more on code, which the
/// 40% margin covers (Gemini's larger vocabulary should spend fewer). Estimates from the length
/// alone do not err high: measured on 5,500 samples (this repository's sources, documents and lock
/// files and a sample of its `node_modules`, whole and in 1 KiB pieces), bytes/4 came under the
/// larger of the two exact counts for 44% of them and even bytes/3 for one in ten, since hashes,
/// base64, numbers and non-Latin text spend one to three bytes a token. The runtime can tighten the
/// estimate against the `usage.promptTokens` a provider reports.
fn estimate(text: &str) -> usize {
    exact(tiktoken_rs::cl100k_base_singleton(), text).saturating_mul(ESTIMATE_NUMERATOR).div_ceil(ESTIMATE_DENOMINATOR)
}

const ESTIMATE_NUMERATOR: usize = 7;
const ESTIMATE_DENOMINATOR: usize = 5;
