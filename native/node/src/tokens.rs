//! Token counts and compaction plans for the runtime's prompt: `countTokens` (and its async twin),
//! `tokenizerInfo`, `planCompaction`, with their object shapes.

use crate::errors::{Result, invalid};
use chokepoint_core as core;
use napi::bindgen_prelude::*;
use napi_derive::napi;

/// A whole number of tokens (or a turn number) from JavaScript, where a number can be negative,
/// fractional, NaN or huge: an under-count must not slip through as a silent 0.
fn whole(value: f64, what: &str) -> Result<u32> {
    if value.fract() == 0.0 && value >= 0.0 && value <= f64::from(u32::MAX) {
        Ok(value as u32)
    } else {
        Err(invalid(format!("`{value}` is not a valid {what} (a whole number from 0)")))
    }
}

/// What `tokenizerInfo` says about a model's counts.
#[napi(object, js_name = "TokenizerInfo")]
pub struct JsTokenizerInfo {
    #[napi(ts_type = "TokenFamilyName")]
    pub family: String,
    /// Whether counts come from the model's own tokenizer; otherwise they are an estimate that errs high.
    pub exact: bool,
    /// The tokens `countTokens` adds to each text for its message framing.
    pub message_overhead: u32,
}

impl From<core::budget::tokens::TokenCounter> for JsTokenizerInfo {
    fn from(counter: core::budget::tokens::TokenCounter) -> Self {
        JsTokenizerInfo {
            family: counter.family().as_str().to_owned(),
            exact: counter.is_exact(),
            message_overhead: counter.message_overhead(),
        }
    }
}

/// One piece of the prompt, for `planCompaction`.
#[napi(object, js_name = "CompactionItem")]
pub struct JsCompactionItem {
    /// The system prompt, the intent context, the shared brain and pinned items are never
    /// sacrificed; turns go first (oldest first), then constraints, then acceptance criteria.
    #[napi(ts_type = "PromptItemKindName")]
    pub kind: String,
    /// Its tokens as `countTokens` gave them (message framing included).
    pub tokens: f64,
    /// For `turn` items, the turn's number (larger is newer). Items with the same number are one
    /// turn: the user's message, the assistant's with its tool calls, the tool results.
    pub turn: Option<f64>,
    /// Never sacrificed (for a turn: the whole turn).
    pub pinned: Option<bool>,
}

impl JsCompactionItem {
    pub fn try_into_core(self) -> Result<core::budget::compaction::Item> {
        let turn = self.turn.map(|turn| whole(turn, "turn number")).transpose()?;
        let kind = core::budget::compaction::ItemKind::parse(&self.kind, turn).map_err(invalid)?;
        Ok(core::budget::compaction::Item { kind, tokens: whole(self.tokens, "token count")?, pinned: self.pinned.unwrap_or(false) })
    }
}

/// How `planCompaction` plans; every field is optional (the defaults in parentheses).
#[napi(object, js_name = "CompactionPolicy")]
pub struct JsCompactionPolicy {
    /// The newest turns kept if at all possible, before any constraint or criterion goes (4).
    pub keep_recent_turns: Option<f64>,
    /// The most the summary may cost, in tokens (2048).
    pub summary_max_tokens: Option<f64>,
    /// The summary is estimated at 1/ratio of what it covers, up to the maximum (10).
    pub summary_ratio: Option<f64>,
    /// The most tokens of turns one summariser call reads (32000).
    pub summary_group_tokens: Option<f64>,
}

impl JsCompactionPolicy {
    pub fn into_core(policy: Option<JsCompactionPolicy>) -> Result<core::budget::compaction::Policy> {
        let default = core::budget::compaction::Policy::default();
        let Some(p) = policy else { return Ok(default) };
        let or = |value: Option<f64>, what: &str, default: u32| value.map_or(Ok(default), |v| whole(v, what));
        Ok(core::budget::compaction::Policy {
            keep_recent_turns: or(p.keep_recent_turns, "keepRecentTurns", default.keep_recent_turns)?,
            summary_max_tokens: or(p.summary_max_tokens, "summaryMaxTokens", default.summary_max_tokens)?,
            summary_ratio: or(p.summary_ratio, "summaryRatio", default.summary_ratio)?,
            summary_group_tokens: or(p.summary_group_tokens, "summaryGroupTokens", default.summary_group_tokens)?,
        })
    }
}

/// A run of summarised turns that one summariser call reads.
#[napi(object, js_name = "SummaryGroup")]
pub struct JsSummaryGroup {
    /// The group is the `summarize` items whose turn is in `firstTurn..=lastTurn`.
    pub first_turn: u32,
    pub last_turn: u32,
    pub tokens: f64,
}

/// The summary that replaces the summarised turns, placed before the oldest kept turn.
#[napi(object, js_name = "CompactionSummary")]
pub struct JsCompactionSummary {
    /// Its estimated cost, counted in `after`: ask the summariser for at most this many tokens.
    pub tokens: u32,
    /// Oldest first.
    pub groups: Vec<JsSummaryGroup>,
}

/// The pieces never sacrificed exceed the budget on their own.
#[napi(object, js_name = "CompactionOverBudget")]
pub struct JsCompactionOverBudget {
    pub budget: u32,
    /// What the system prompt, the intent context and the pinned items take.
    pub required: f64,
    pub over: f64,
    /// For the transcript: "the system prompt, intent context and pinned items take ...".
    pub message: String,
}

/// What `planCompaction` answers.
#[napi(object, js_name = "CompactionPlan")]
pub struct JsCompactionPlan {
    /// Per item, in the order given. Empty when `overBudget` is set.
    #[napi(ts_type = "Array<'keep' | 'summarize' | 'drop'>")]
    pub actions: Vec<String>,
    /// Present when turns are summarised.
    pub summary: Option<JsCompactionSummary>,
    /// Tokens: the prompt as given, as planned (kept items and the summary's cost), dropped, summarised.
    pub before: f64,
    pub after: f64,
    pub dropped: f64,
    pub summarized: f64,
    pub dropped_items: u32,
    pub summarized_items: u32,
    /// How many of the newest turns (pinned ones aside) are kept verbatim.
    pub recent_turns_kept: u32,
    /// Present when even the pieces never sacrificed exceed the budget: nothing was planned.
    pub over_budget: Option<JsCompactionOverBudget>,
}

impl JsCompactionPlan {
    pub fn from_core(plan: std::result::Result<core::budget::compaction::Plan, core::budget::compaction::OverBudget>, before: u64) -> Self {
        use core::budget::compaction::Action;
        match plan {
            Ok(plan) => JsCompactionPlan {
                actions: plan
                    .actions
                    .iter()
                    .map(|a| match a {
                        Action::Keep => "keep",
                        Action::Summarize => "summarize",
                        Action::Drop => "drop",
                    })
                    .map(str::to_owned)
                    .collect(),
                summary: plan.summary.map(|s| JsCompactionSummary {
                    tokens: s.tokens,
                    groups: s
                        .groups
                        .into_iter()
                        .map(|g| JsSummaryGroup { first_turn: g.first_turn, last_turn: g.last_turn, tokens: g.tokens as f64 })
                        .collect(),
                }),
                before: plan.totals.before as f64,
                after: plan.totals.after as f64,
                dropped: plan.totals.dropped as f64,
                summarized: plan.totals.summarized as f64,
                dropped_items: plan.totals.dropped_items,
                summarized_items: plan.totals.summarized_items,
                recent_turns_kept: plan.recent_turns_kept,
                over_budget: None,
            },
            Err(over) => JsCompactionPlan {
                actions: Vec::new(),
                summary: None,
                before: before as f64,
                after: before as f64,
                dropped: 0.0,
                summarized: 0.0,
                dropped_items: 0,
                summarized_items: 0,
                recent_turns_kept: 0,
                over_budget: Some(JsCompactionOverBudget {
                    budget: over.budget,
                    required: over.required as f64,
                    over: over.over() as f64,
                    message: over.to_string(),
                }),
            },
        }
    }
}

/// The tokens of each text as one chat message of `model` (its content and the message's framing):
/// exact for OpenAI's o200k and cl100k families, an estimate that errs high for the others (see
/// `tokenizerInfo`). Count each message once, when it enters the history, and keep the count: exact
/// counting runs at about 5 to 10 MB/s, and the first call for a family loads its tokenizer (a few
/// hundred milliseconds). `countTokensAsync` does the same off the JavaScript thread.
#[napi(catch_unwind)]
pub fn count_tokens(texts: Vec<String>, model: String) -> Vec<u32> {
    let counter = core::budget::tokens::TokenCounter::for_model(&model);
    texts.iter().map(|text| counter.count_message(text)).collect()
}

/// `countTokens` on the libuv thread pool, for large texts and the first call (which loads the
/// tokenizer).
#[napi(catch_unwind, ts_return_type = "Promise<number[]>")]
pub fn count_tokens_async(texts: Vec<String>, model: String) -> AsyncTask<CountTokens> {
    AsyncTask::new(CountTokens { counter: core::budget::tokens::TokenCounter::for_model(&model), texts })
}

/// The work of `countTokensAsync`, off the JavaScript thread.
pub struct CountTokens {
    counter: core::budget::tokens::TokenCounter,
    texts: Vec<String>,
}

impl Task for CountTokens {
    type Output = Vec<u32>;
    type JsValue = Vec<u32>;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(self.texts.iter().map(|text| self.counter.count_message(text)).collect())
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<Self::JsValue> {
        Ok(output)
    }
}

/// How `countTokens` counts for `model`: its tokenizer family, whether counts are exact, and the
/// framing each message adds.
#[napi(catch_unwind)]
pub fn tokenizer_info(model: String) -> JsTokenizerInfo {
    core::budget::tokens::TokenCounter::for_model(&model).into()
}

/// Plans a compaction of the prompt's `items` to `budget` tokens: what to keep, summarise or drop,
/// per item, in the order given (see `CompactionItem` for the order of sacrifice). When the pieces
/// never sacrificed exceed the budget on their own, the plan says so in `overBudget` rather than
/// throwing; only malformed items throw.
#[napi(catch_unwind)]
pub fn plan_compaction(items: Vec<JsCompactionItem>, budget: f64, policy: Option<JsCompactionPolicy>) -> Result<JsCompactionPlan> {
    let items = items.into_iter().map(JsCompactionItem::try_into_core).collect::<Result<Vec<_>>>()?;
    let budget = whole(budget, "budget")?;
    let policy = JsCompactionPolicy::into_core(policy)?;
    let before = items.iter().map(|item| u64::from(item.tokens)).sum();
    Ok(JsCompactionPlan::from_core(core::budget::compaction::plan_compaction_with(&items, budget, &policy), before))
}
