//! Compaction planning: when the prompt exceeds the model's budget, which of its pieces are kept,
//! summarised or dropped before `PreCompact` fires.
//!
//! The runtime describes the prompt as [`Item`]s with their token counts (counted once, when each
//! piece entered the history: see `tokens.rs`) and gets a [`Plan`] back; it writes the summary and
//! assembles the prompt itself. Planning reads numbers only: a history of a million tokens in 2,000
//! turns plans in about a tenth of a millisecond (`benches/compaction.rs`).
//!
//! **The order of sacrifice**, pinned by `tests/compaction.rs`:
//! 1. The oldest turns: summarised, oldest first, into one summary slot whose cost is estimated
//!    ([`Policy::summary_tokens`]), or dropped when even the slot does not fit. The newest
//!    [`Policy::keep_recent_turns`] turns are kept if at all possible: they outrank everything below.
//! 2. Constraints that are not pinned, the last listed first.
//! 3. Acceptance criteria that are not pinned, the last listed first: the last to go.
//!
//! The system prompt, the intent context (`<intent_context>`), the shared brain and pinned items are
//! never sacrificed;
//! when they alone exceed the budget the answer is [`OverBudget`]. A turn is one unit: every item
//! with the same turn number (the user's message, the assistant's message with its tool calls, the
//! tool results) gets the same action, so a tool call is never separated from its result; a turn with
//! a pinned item is pinned whole. Kept turns are always the newest ones, contiguous, so the kept
//! conversation reads as it happened after the summary.
//!
//! Deterministic (ties broken by position) and O(n log n): one sort of the turns, then linear passes.

use std::fmt;

/// What a piece of the prompt is; decides when it may be sacrificed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ItemKind {
    /// The system prompt (with the tool definitions). Never sacrificed.
    SystemPrompt,
    /// The active intent's `<intent_context>` block, without the constraints and acceptance criteria
    /// given as their own items. Never sacrificed.
    IntentContext,
    /// The shared brain (`.orchestration/CLAUDE.md`): what people wrote for every agent, the hooks in
    /// force, the intents and their holders, the lessons. Never sacrificed: a lesson compacted away
    /// is a mistake made twice.
    Brain,
    /// One of the intent's constraints; trimmed before acceptance criteria.
    Constraint,
    /// One of the intent's acceptance criteria; the last to go.
    AcceptanceCriterion,
    /// A message of conversation turn `n` (larger is newer). Items sharing a number are one turn.
    Turn(u32),
}

crate::base::names::names!(ItemKind {
    Self::SystemPrompt => "systemPrompt",
    Self::IntentContext => "intentContext",
    Self::Brain => "brain",
    Self::Constraint => "constraint",
    Self::AcceptanceCriterion => "acceptanceCriterion",
    Self::Turn(_) => "turn",
});

impl ItemKind {
    /// The kinds without data, each of which its name alone stands for.
    const PLAIN: [ItemKind; 5] = [Self::SystemPrompt, Self::IntentContext, Self::Brain, Self::Constraint, Self::AcceptanceCriterion];

    /// The kind `name` stands for, read back at an edge: a `turn` needs its number, which the others
    /// do not take. The error lists the names.
    pub fn parse(name: &str, turn: Option<u32>) -> Result<ItemKind, String> {
        if name == Self::Turn(0).as_str() {
            return turn.map(Self::Turn).ok_or_else(|| "a `turn` item needs its `turn` number".to_owned());
        }
        Self::PLAIN
            .into_iter()
            .find(|k| k.as_str() == name)
            .ok_or_else(|| crate::base::names::UnknownName { what: "item kind", name: name.to_owned(), names: Self::NAMES }.to_string())
    }
}

/// One piece of the prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Item {
    pub kind: ItemKind,
    /// Its tokens, message framing included (`TokenCounter::count_message`).
    pub tokens: u32,
    /// Never sacrificed (nor, for a turn, anything of the same turn).
    pub pinned: bool,
}

impl Item {
    pub fn new(kind: ItemKind, tokens: u32) -> Item {
        Item { kind, tokens, pinned: false }
    }

    pub fn system_prompt(tokens: u32) -> Item {
        Item::new(ItemKind::SystemPrompt, tokens)
    }

    pub fn intent_context(tokens: u32) -> Item {
        Item::new(ItemKind::IntentContext, tokens)
    }

    pub fn brain(tokens: u32) -> Item {
        Item::new(ItemKind::Brain, tokens)
    }

    pub fn constraint(tokens: u32) -> Item {
        Item::new(ItemKind::Constraint, tokens)
    }

    pub fn acceptance_criterion(tokens: u32) -> Item {
        Item::new(ItemKind::AcceptanceCriterion, tokens)
    }

    pub fn turn(turn: u32, tokens: u32) -> Item {
        Item::new(ItemKind::Turn(turn), tokens)
    }

    /// The same item, pinned.
    pub fn pin(self) -> Item {
        Item { pinned: true, ..self }
    }

    /// Kept whatever the budget: the system prompt, the intent context, anything pinned.
    fn kept_forever(&self) -> bool {
        self.pinned || matches!(self.kind, ItemKind::SystemPrompt | ItemKind::IntentContext | ItemKind::Brain)
    }
}

/// What happens to an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    Keep,
    /// Replaced, with the other summarised turns, by the summary.
    Summarize,
    Drop,
}

/// The knobs of a plan. [`Policy::default`] is what `plan_compaction` uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// How many of the newest turns are kept if at all possible, before any constraint or acceptance
    /// criterion is given up. Fewer are kept only when they alone exceed the room left by the pieces
    /// kept forever.
    pub keep_recent_turns: u32,
    /// The most a summary may cost: the runtime asks its summariser for at most this many tokens.
    pub summary_max_tokens: u32,
    /// A summary is estimated at one `summary_ratio`-th of what it covers (rounded up), capped at
    /// `summary_max_tokens`: summarising a few small turns must not cost more than keeping them.
    pub summary_ratio: u32,
    /// The most tokens of turns one summariser call reads: the summarised turns come in groups of at
    /// most this much (a larger turn is a group of its own), to be summarised one group at a time.
    pub summary_group_tokens: u32,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy { keep_recent_turns: 4, summary_max_tokens: 2048, summary_ratio: 10, summary_group_tokens: 32_000 }
    }
}

impl Policy {
    /// The estimated cost of a summary of `covered` tokens of turns.
    pub fn summary_tokens(&self, covered: u64) -> u64 {
        covered.div_ceil(u64::from(self.summary_ratio.max(1))).min(u64::from(self.summary_max_tokens))
    }
}

/// A run of summarised turns that one summariser call reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SummaryGroup {
    /// The group is the `Summarize` items whose turn is in `first_turn..=last_turn`.
    pub first_turn: u32,
    pub last_turn: u32,
    /// The tokens the group's turns hold.
    pub tokens: u64,
}

/// The summary slot that replaces the summarised turns, placed before the oldest kept turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Its estimated cost, counted in [`Totals::after`]: the most the summary may take.
    pub tokens: u32,
    /// The summarised turns, oldest first.
    pub groups: Vec<SummaryGroup>,
}

/// Token totals of a plan, and how many items it sacrificed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Totals {
    /// The prompt as given.
    pub before: u64,
    /// The prompt as planned: the kept items and the summary's estimated cost. At most the budget.
    pub after: u64,
    /// The tokens of the dropped items.
    pub dropped: u64,
    /// The tokens of the summarised items (replaced by the summary's).
    pub summarized: u64,
    pub dropped_items: u32,
    pub summarized_items: u32,
}

/// What to do with each item, in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub actions: Vec<Action>,
    /// Present when turns are summarised.
    pub summary: Option<Summary>,
    pub totals: Totals,
    /// How many of the newest turns (pinned ones aside) are kept verbatim.
    pub recent_turns_kept: u32,
}

impl Plan {
    /// Whether the prompt fitted as it was (every item kept, nothing to compact).
    pub fn is_noop(&self) -> bool {
        self.totals.dropped_items == 0 && self.totals.summarized_items == 0
    }
}

/// The pieces kept forever (system prompt, intent context, pinned items) alone exceed the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OverBudget {
    pub budget: u32,
    /// What the pieces kept forever take.
    pub required: u64,
}

impl OverBudget {
    /// How many tokens over the budget.
    pub fn over(&self) -> u64 {
        self.required.saturating_sub(u64::from(self.budget))
    }
}

impl fmt::Display for OverBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the system prompt, intent context and pinned items take {} tokens, {} over the budget of {}",
            self.required,
            self.over(),
            self.budget
        )
    }
}

impl std::error::Error for OverBudget {}

/// Plans a compaction of `items` to `budget` tokens with the default [`Policy`].
pub fn plan_compaction(items: &[Item], budget: u32) -> Result<Plan, OverBudget> {
    plan_compaction_with(items, budget, &Policy::default())
}

/// One conversation turn: every item with its number, as a range of the sorted `(number, index)`
/// pairs.
struct Turn {
    number: u32,
    tokens: u64,
    items: std::ops::Range<usize>,
    pinned: bool,
}

/// Plans a compaction of `items` to `budget` tokens.
pub fn plan_compaction_with(items: &[Item], budget: u32, policy: &Policy) -> Result<Plan, OverBudget> {
    let tokens = |i: usize| u64::from(items[i].tokens);
    let before: u64 = items.iter().map(|item| u64::from(item.tokens)).sum();
    let mut actions = vec![Action::Keep; items.len()];

    // Turns in order, oldest first (`numbered` holds their items); a turn with a pinned item is kept
    // whole, like the other pieces kept forever.
    let (numbered, all) = turns_of(items);
    let (pinned_turns, turns): (Vec<Turn>, Vec<Turn>) = all.into_iter().partition(|turn| turn.pinned);
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    if before <= u64::from(budget) {
        let totals = Totals { before, after: before, ..Totals::default() };
        return Ok(Plan { actions, summary: None, totals, recent_turns_kept: count(turns.len()) });
    }
    let forever: u64 = items
        .iter()
        .filter(|item| item.kept_forever() && !matches!(item.kind, ItemKind::Turn(_)))
        .map(|item| u64::from(item.tokens))
        .sum::<u64>()
        + pinned_turns.iter().map(|turn| turn.tokens).sum::<u64>();
    if forever > u64::from(budget) {
        return Err(OverBudget { budget, required: forever });
    }
    let room = u64::from(budget) - forever;

    // `newest[k]`: the tokens of the k newest turns.
    let mut newest = Vec::with_capacity(turns.len() + 1);
    newest.push(0u64);
    for turn in turns.iter().rev() {
        newest.push(newest[newest.len() - 1] + turn.tokens);
    }
    let all_turns = newest[turns.len()];

    // The recent turns protected over constraints and criteria: as many of the newest
    // `keep_recent_turns` as fit in the room with nothing else that can be sacrificed.
    let mut protected = turns.len().min(policy.keep_recent_turns as usize);
    while protected > 0 && newest[protected] > room {
        protected -= 1;
    }

    // Constraints, then acceptance criteria, each the last listed first, until the protected turns fit.
    let sacrificable = |kind: ItemKind| -> Vec<usize> { (0..items.len()).filter(|&i| items[i].kind == kind && !items[i].pinned).collect() };
    let (constraints, criteria) = (sacrificable(ItemKind::Constraint), sacrificable(ItemKind::AcceptanceCriterion));
    let mut others: u64 = constraints.iter().chain(&criteria).map(|&i| tokens(i)).sum();
    let mut dropped = Vec::new();
    for &i in constraints.iter().rev().chain(criteria.iter().rev()) {
        if newest[protected] + others <= room {
            break;
        }
        dropped.push(i);
        others -= tokens(i);
    }
    // The last one dropped may have freed more than was missing: what was dropped before it and fits
    // in that slack comes back, the most important first (criteria, then constraints; the first
    // listed first).
    for &i in dropped.iter().rev() {
        if newest[protected] + others + tokens(i) <= room {
            others += tokens(i);
        } else {
            actions[i] = Action::Drop;
        }
    }
    let avail = room - others;

    // The room left goes to more of the newest turns, with a summary of the older ones if it fits
    // beside the protected turns (the slot is the older turns' share: it never costs a constraint).
    let summary_cost = |kept: usize| policy.summary_tokens(all_turns - newest[kept]);
    let fits_with_summary = |kept: usize| newest[kept] + summary_cost(kept) <= avail;
    let summarize = fits_with_summary(protected);
    let mut kept = protected;
    if summarize {
        // `newest[k] + summary_cost(k)` never shrinks as k grows (a turn adds its tokens to the first
        // term and takes at most as many from the second), so the last k that fits is found walking up.
        while kept < turns.len() && fits_with_summary(kept + 1) {
            kept += 1;
        }
    } else {
        while kept < turns.len() && newest[kept + 1] <= avail {
            kept += 1;
        }
    }
    let summarize = summarize && kept < turns.len();

    let older = &turns[..turns.len() - kept];
    let action = if summarize { Action::Summarize } else { Action::Drop };
    for turn in older {
        for &(_, i) in &numbered[turn.items.clone()] {
            actions[i] = action;
        }
    }
    let summary = summarize.then(|| Summary {
        tokens: u32::try_from(summary_cost(kept)).unwrap_or(u32::MAX),
        groups: groups(older, policy.summary_group_tokens),
    });

    let mut totals = Totals { before, ..Totals::default() };
    for (i, action) in actions.iter().enumerate() {
        match action {
            Action::Keep => totals.after += tokens(i),
            Action::Summarize => {
                totals.summarized += tokens(i);
                totals.summarized_items += 1;
            }
            Action::Drop => {
                totals.dropped += tokens(i);
                totals.dropped_items += 1;
            }
        }
    }
    totals.after += summary.as_ref().map_or(0, |s| u64::from(s.tokens));
    debug_assert!(totals.after <= u64::from(budget), "a plan over its budget: {totals:?}, budget {budget}");
    Ok(Plan { actions, summary, totals, recent_turns_kept: count(kept) })
}

/// The `(turn number, item index)` pairs of `items`, sorted, and the turns they make, oldest first.
fn turns_of(items: &[Item]) -> (Vec<(u32, usize)>, Vec<Turn>) {
    let mut numbered: Vec<(u32, usize)> = items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| match item.kind {
            ItemKind::Turn(n) => Some((n, i)),
            _ => None,
        })
        .collect();
    numbered.sort_unstable();
    let mut turns: Vec<Turn> = Vec::new();
    for (at, &(number, i)) in numbered.iter().enumerate() {
        let item = &items[i];
        match turns.last_mut() {
            Some(turn) if turn.number == number => {
                turn.tokens += u64::from(item.tokens);
                turn.items.end = at + 1;
                turn.pinned |= item.pinned;
            }
            _ => turns.push(Turn { number, tokens: u64::from(item.tokens), items: at..at + 1, pinned: item.pinned }),
        }
    }
    (numbered, turns)
}

/// The summarised turns cut, in order, into groups of at most `max` tokens (a larger turn alone).
fn groups(turns: &[Turn], max: u32) -> Vec<SummaryGroup> {
    let mut groups: Vec<SummaryGroup> = Vec::new();
    for turn in turns {
        match groups.last_mut() {
            Some(group) if group.tokens + turn.tokens <= u64::from(max) => {
                group.last_turn = turn.number;
                group.tokens += turn.tokens;
            }
            _ => groups.push(SummaryGroup { first_turn: turn.number, last_turn: turn.number, tokens: turn.tokens }),
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::ItemKind;

    #[test]
    fn every_item_kind_reads_back_from_its_name_and_a_turn_needs_its_number() {
        // Every name but `turn` is a plain kind: a plain kind added without a place in PLAIN fails here.
        assert_eq!(ItemKind::PLAIN.len() + 1, ItemKind::NAMES.len());
        for kind in ItemKind::PLAIN {
            assert_eq!(ItemKind::parse(kind.as_str(), None), Ok(kind));
        }
        assert_eq!(ItemKind::parse("turn", Some(3)), Ok(ItemKind::Turn(3)));
        assert_eq!(ItemKind::parse("turn", None), Err("a `turn` item needs its `turn` number".to_owned()));
        let unknown = ItemKind::parse("summary", None).unwrap_err();
        assert_eq!(unknown, "unknown item kind `summary`; use systemPrompt, intentContext, brain, constraint, acceptanceCriterion or turn");
    }
}
