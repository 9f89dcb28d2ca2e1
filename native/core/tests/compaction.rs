//! Compaction planning and token counting (`compaction.rs`, `tokens.rs`).
//!
//! Scenarios are written in a small notation and checked by [`check`]: a prompt is a list of items,
//! `sys:100` (system prompt), `ctx:50` (intent context), `brain:40` (the shared brain), `con:20` (constraint), `acc:10` (acceptance
//! criterion), `t3:200` (a message of turn 3), each pinned with a trailing `!`; the expected plan is
//! one letter an item, `K`eep, `S`ummarize or `D`rop. Every plan, scenario or random, is also held to
//! the invariants of [`invariants`].

use chokepoint_core::budget::compaction::{Action, Item, ItemKind, OverBudget, Plan, Policy, plan_compaction, plan_compaction_with};
use chokepoint_core::budget::tokens::{Family, TokenCounter, family_for_model};

fn parse(prompt: &str) -> Vec<Item> {
    prompt
        .split_whitespace()
        .map(|word| {
            let (word, pinned) = word.strip_suffix('!').map_or((word, false), |w| (w, true));
            let (kind, tokens) = word.split_once(':').expect("kind:tokens");
            let kind = match kind {
                "sys" => ItemKind::SystemPrompt,
                "ctx" => ItemKind::IntentContext,
                "brain" => ItemKind::Brain,
                "con" => ItemKind::Constraint,
                "acc" => ItemKind::AcceptanceCriterion,
                turn => ItemKind::Turn(turn.strip_prefix('t').expect("a turn is tN").parse().expect("a turn number")),
            };
            Item { kind, tokens: tokens.parse().expect("tokens"), pinned }
        })
        .collect()
}

fn letters(plan: &Plan) -> String {
    plan.actions
        .iter()
        .map(|action| match action {
            Action::Keep => 'K',
            Action::Summarize => 'S',
            Action::Drop => 'D',
        })
        .collect()
}

/// Plans `prompt` to `budget` under `policy` and compares the actions with `expected` (spaces
/// ignored). Returns the plan for further checks.
fn check_with(prompt: &str, budget: u32, policy: &Policy, expected: &str) -> Plan {
    let items = parse(prompt);
    let plan = plan_compaction_with(&items, budget, policy).unwrap_or_else(|e| panic!("{prompt}: {e}"));
    invariants(&items, budget, policy, &plan);
    let expected: String = expected.split_whitespace().collect();
    assert_eq!(letters(&plan), expected, "plan of `{prompt}` to {budget}");
    plan
}

fn check(prompt: &str, budget: u32, expected: &str) -> Plan {
    check_with(prompt, budget, &Policy::default(), expected)
}

fn kept_forever(item: &Item) -> bool {
    item.pinned || matches!(item.kind, ItemKind::SystemPrompt | ItemKind::IntentContext | ItemKind::Brain)
}

/// What every plan must satisfy, whatever the prompt.
fn invariants(items: &[Item], budget: u32, policy: &Policy, plan: &Plan) {
    let tokens = |action: Action| -> u64 {
        items.iter().zip(&plan.actions).filter(|(_, a)| **a == action).map(|(item, _)| u64::from(item.tokens)).sum()
    };
    let summary = plan.summary.as_ref().map_or(0, |s| u64::from(s.tokens));
    let t = plan.totals;
    assert_eq!(plan.actions.len(), items.len());
    // The budget is respected, and the totals say what the actions do.
    assert!(t.after <= u64::from(budget) || plan.is_noop(), "after {} over budget {budget}", t.after);
    assert_eq!(t.before, items.iter().map(|i| u64::from(i.tokens)).sum::<u64>());
    assert_eq!(t.after, tokens(Action::Keep) + summary);
    assert_eq!(t.dropped, tokens(Action::Drop));
    assert_eq!(t.summarized, tokens(Action::Summarize));
    assert_eq!(t.dropped_items as usize, plan.actions.iter().filter(|a| **a == Action::Drop).count());
    assert_eq!(t.summarized_items as usize, plan.actions.iter().filter(|a| **a == Action::Summarize).count());
    assert_eq!(plan.summary.is_some(), t.summarized_items > 0);
    // The system prompt, the intent context and pinned items are kept; only turns are summarised.
    for (item, action) in items.iter().zip(&plan.actions) {
        if kept_forever(item) {
            assert_eq!(*action, Action::Keep, "{item:?} is kept forever");
        }
        if *action == Action::Summarize {
            assert!(matches!(item.kind, ItemKind::Turn(_)), "only turns are summarised: {item:?}");
        }
    }
    // A turn is one unit (a tool call is never separated from its result), pinned whole.
    let mut by_turn = std::collections::BTreeMap::<u32, (Action, bool)>::new();
    for (item, action) in items.iter().zip(&plan.actions) {
        if let ItemKind::Turn(n) = item.kind {
            let (first, _) = *by_turn.entry(n).or_insert((*action, false));
            assert_eq!(first, *action, "turn {n} was split");
            by_turn.get_mut(&n).expect("inserted").1 |= item.pinned;
        }
    }
    // The kept turns (pinned ones aside) are the newest, contiguous; the summarised ones precede them.
    let unpinned: Vec<Action> = by_turn.values().filter(|(_, pinned)| !pinned).map(|(a, _)| *a).collect();
    let kept = unpinned.iter().rev().take_while(|a| **a == Action::Keep).count();
    assert_eq!(kept, plan.recent_turns_kept as usize);
    assert!(unpinned[..unpinned.len() - kept].iter().all(|a| *a != Action::Keep), "a kept turn older than a sacrificed one");
    if plan.is_noop() {
        return;
    }
    // Sacrifices were necessary, in order. With `room` what is left beside the pieces kept forever
    // and `recent` the protected newest turns: a constraint goes only if the recent turns do not fit
    // with every constraint and criterion; a criterion only if they do not fit with every criterion.
    let forever: u64 = {
        let pinned_turns: Vec<u32> = by_turn.iter().filter(|(_, (_, p))| *p).map(|(n, _)| *n).collect();
        items
            .iter()
            .filter(|i| kept_forever(i) || matches!(i.kind, ItemKind::Turn(n) if pinned_turns.contains(&n)))
            .map(|i| u64::from(i.tokens))
            .sum()
    };
    let room = u64::from(budget) - forever;
    let mut turn_tokens: Vec<u64> = Vec::new();
    for (n, (_, pinned)) in &by_turn {
        if !pinned {
            turn_tokens.push(items.iter().filter(|i| i.kind == ItemKind::Turn(*n)).map(|i| u64::from(i.tokens)).sum());
        }
    }
    let mut protected = turn_tokens.len().min(policy.keep_recent_turns as usize);
    let newest = |k: usize| turn_tokens.iter().rev().take(k).sum::<u64>();
    while protected > 0 && newest(protected) > room {
        protected -= 1;
    }
    assert!(kept >= protected, "kept {kept} recent turns, {protected} fit");
    let sacrificable = |kind: ItemKind| -> u64 { items.iter().filter(|i| i.kind == kind && !i.pinned).map(|i| u64::from(i.tokens)).sum() };
    let dropped = |kind: ItemKind| items.iter().zip(&plan.actions).any(|(i, a)| i.kind == kind && *a == Action::Drop);
    let (constraints, criteria) = (sacrificable(ItemKind::Constraint), sacrificable(ItemKind::AcceptanceCriterion));
    if dropped(ItemKind::Constraint) {
        assert!(newest(protected) + constraints + criteria > room, "a constraint was dropped for nothing");
    }
    if dropped(ItemKind::AcceptanceCriterion) {
        assert!(newest(protected) + criteria > room, "an acceptance criterion went before the constraints");
    }
}

#[test]
fn a_prompt_within_budget_is_kept_whole() {
    let plan = check("sys:100 ctx:50 con:20 acc:10 t1:100 t2:100", 380, "KKKKKK");
    assert!(plan.is_noop());
    assert_eq!((plan.totals.before, plan.totals.after), (380, 380));
}

#[test]
fn the_oldest_turns_are_summarised_first() {
    // 8 turns of 100; room for 5 of them beside a summary of the other 3 (30 tokens at one tenth).
    let prompt = "sys:100 ctx:50 con:20 acc:10 t1:100 t2:100 t3:100 t4:100 t5:100 t6:100 t7:100 t8:100";
    let plan = check(prompt, 180 + 530, "KKKK SSS KKKKK");
    let summary = plan.summary.expect("a summary");
    assert_eq!(summary.tokens, 30);
    assert_eq!((plan.totals.summarized, plan.totals.after), (300, 710));
    assert_eq!(plan.recent_turns_kept, 5);
}

#[test]
fn turns_are_dropped_when_even_the_summary_does_not_fit() {
    let policy = Policy { summary_ratio: 1, ..Policy::default() };
    // A summary of the 4 oldest would cost as much as they hold: no room for it beside 4 turns.
    check_with("sys:100 t1:100 t2:100 t3:100 t4:100 t5:100 t6:100 t7:100 t8:100", 550, &policy, "K DDDD KKKK");
}

#[test]
fn the_system_prompt_the_intent_context_and_pinned_items_are_kept() {
    // Pinned: a constraint, an acceptance criterion and an old turn (with its tool result).
    let prompt = "sys:300 ctx:200 con:50! con:50 acc:40! acc:40 t1:100! t1:100 t2:100 t3:100 t4:100 t5:100 t6:100";
    let plan = check(prompt, 300 + 200 + 50 + 40 + 200 + 400, "KK K D K D KK D KKKK");
    assert!(plan.summary.is_none());
}

#[test]
fn the_shared_brain_is_kept_unpinned_while_everything_else_gives_way() {
    // The runtime marks it pinned, but the planner knows the kind: a caller that forgets the pin
    // still never loses a lesson to a compaction. Everything else goes before it does.
    let plan = check("sys:100 brain:400 con:20 acc:15 t1:100 t2:100 t3:100", 100 + 400 + 100, "K K D D D D K");
    assert!(plan.summary.is_none());
    assert_eq!(plan_compaction(&parse("sys:100 brain:400 t1:10!"), 450).unwrap_err().required, 510);
}

#[test]
fn constraints_are_trimmed_before_acceptance_criteria() {
    // The 4 recent turns need 400; the room beside sys and ctx is 430: 30 of the 80 constraint and
    // criterion tokens can stay. Constraints go first, the last listed first; the criteria stay.
    check("sys:100 ctx:70 con:20 con:20 acc:15 acc:15 t1:100 t2:100 t3:100 t4:100", 600, "KK DD KK KKKK");
    // With 15 tokens less, one criterion must go too: the last listed.
    check("sys:100 ctx:70 con:20 con:20 acc:15 acc:15 t1:100 t2:100 t3:100 t4:100", 585, "KK DD KD KKKK");
    // Only as much as needed: the first constraint stays when dropping the second is enough.
    check("sys:100 ctx:70 con:20 con:20 acc:15 acc:15 t1:100 t2:100 t3:100 t4:100", 620, "KK KD KK KKKK");
}

#[test]
fn acceptance_criteria_are_the_last_to_go() {
    // Every turn beyond the 4 recent, then every constraint, then criteria: the last listed first.
    let prompt = "sys:100 con:30 con:30 acc:30 acc:30 acc:30 t1:500 t2:100 t3:100 t4:100 t5:100";
    check(prompt, 100 + 400 + 60, "K DD KK D D KKKK");
    check(prompt, 100 + 400 + 30, "K DD K DD D KKKK");
    check(prompt, 100 + 400, "K DD DDD D KKKK");
}

#[test]
fn a_large_constraint_dropped_makes_room_for_the_smaller_ones_dropped_before_it() {
    // Dropping the last constraint (5) is not enough, the first (100) is; then the last fits again.
    check("sys:100 con:100 con:5 t1:100 t2:100 t3:100 t4:100", 100 + 400 + 55, "K DK KKKK");
}

#[test]
fn a_tool_call_is_never_separated_from_its_result() {
    // Turn 2: the user's message, the assistant's tool call, a large tool result, given out of order.
    let prompt = "sys:100 t1:50 t2:20 t2:30 t3:50 t2:400 t3:60 t4:50 t5:50 t6:50";
    let tight = Policy { keep_recent_turns: 2, summary_ratio: 1, ..Policy::default() };
    check_with(prompt, 100 + 300, &tight, "K D DD K D K KKK");
    // With room for turn 2's call and not its result, the call goes with the result.
    check_with(prompt, 100 + 370, &tight, "K D DD K D K KKK");
}

#[test]
fn the_most_recent_turns_are_kept_over_constraints_and_criteria() {
    let prompt = "sys:100 ctx:50 con:100 acc:100 t1:100 t2:100 t3:100 t4:100 t5:100";
    // Room for 4 turns only if the constraint and the criterion go: they go, and turn 1.
    check(prompt, 150 + 400, "KK D D D KKKK");
    // With keep_recent_turns = 2 the criterion and the constraint outrank turns 1 to 3.
    let two = Policy { keep_recent_turns: 2, ..Policy::default() };
    check_with(prompt, 150 + 400, &two, "KK K K DDD KK");
    check_with(prompt, 150 + 430, &two, "KK K K SSS KK");
}

#[test]
fn recent_turns_too_large_for_any_room_are_not_kept_at_the_cost_of_the_rest() {
    // The newest turn alone (a huge tool result) exceeds the room even with every constraint gone:
    // keeping it is impossible, so nothing is sacrificed for it. The turns before it cannot be kept
    // without it (kept turns are contiguous), so they go, and the constraint stays.
    let plan = check("sys:100 con:50 t1:100 t2:100 t3:5000", 400, "K K DDD");
    assert_eq!(plan.recent_turns_kept, 0);
}

#[test]
fn the_pieces_kept_forever_over_budget_are_an_error_naming_how_much() {
    let items = parse("sys:1000 ctx:300 con:10! t1:50 t2:50");
    let error = plan_compaction(&items, 1200).expect_err("over budget");
    assert_eq!(error, OverBudget { budget: 1200, required: 1310 });
    assert_eq!(error.over(), 110);
    assert_eq!(error.to_string(), "the system prompt, intent context and pinned items take 1310 tokens, 110 over the budget of 1200");
    // Exactly at the budget is not over it.
    assert!(plan_compaction(&items, 1310).is_ok());
}

#[test]
fn summarised_turns_come_in_groups_a_summariser_can_read() {
    let policy = Policy { keep_recent_turns: 1, summary_group_tokens: 250, ..Policy::default() };
    let prompt = "sys:10 t1:100 t2:100 t3:100 t4:400 t5:100 t6:100 t7:100";
    let plan = check_with(prompt, 10 + 100 + 200, &policy, "K SSSSS K K");
    let groups: Vec<(u32, u32, u64)> =
        plan.summary.expect("a summary").groups.iter().map(|g| (g.first_turn, g.last_turn, g.tokens)).collect();
    assert_eq!(groups, vec![(1, 2, 200), (3, 3, 100), (4, 4, 400), (5, 5, 100)]);
}

#[test]
fn the_summary_is_capped() {
    let policy = Policy { keep_recent_turns: 1, summary_max_tokens: 50, ..Policy::default() };
    let plan = check_with("sys:10 t1:1000 t2:1000 t3:100", 10 + 100 + 50, &policy, "K SS K");
    assert_eq!(plan.summary.expect("a summary").tokens, 50);
}

/// A deterministic xorshift, so the random prompts are the same on every run.
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

#[test]
fn random_prompts_respect_every_invariant() {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut outcomes = [0usize; 3];
    for _ in 0..3000 {
        let mut items = vec![Item::system_prompt(rng.below(2000) as u32)];
        if rng.below(2) == 0 {
            items.push(Item::intent_context(rng.below(800) as u32));
        }
        for _ in 0..rng.below(6) {
            let item =
                if rng.below(2) == 0 { Item::constraint(rng.below(300) as u32) } else { Item::acceptance_criterion(rng.below(300) as u32) };
            items.push(if rng.below(8) == 0 { item.pin() } else { item });
        }
        for turn in 0..rng.below(60) as u32 {
            for _ in 0..1 + rng.below(3) {
                let tokens = if rng.below(10) == 0 { rng.below(20_000) } else { rng.below(800) } as u32;
                let item = Item::turn(turn, tokens);
                items.push(if rng.below(40) == 0 { item.pin() } else { item });
            }
        }
        // Shuffle, so the order given is not the turn order.
        for i in (1..items.len()).rev() {
            items.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let before: u64 = items.iter().map(|i| u64::from(i.tokens)).sum();
        let forever: u64 = items.iter().filter(|i| kept_forever(i)).map(|i| u64::from(i.tokens)).sum();
        // A quarter of the budgets near what is kept forever, the rest anywhere up to the whole.
        let budget = if rng.below(4) == 0 { rng.below(2 * forever + 1) } else { rng.below(before + 2000) } as u32;
        let policy = Policy {
            keep_recent_turns: rng.below(6) as u32,
            summary_max_tokens: rng.below(3000) as u32,
            summary_ratio: 1 + rng.below(20) as u32,
            summary_group_tokens: 1 + rng.below(50_000) as u32,
        };
        match plan_compaction_with(&items, budget, &policy) {
            Ok(plan) => {
                invariants(&items, budget, &policy, &plan);
                assert_eq!(plan_compaction_with(&items, budget, &policy).as_ref(), Ok(&plan), "deterministic");
                outcomes[usize::from(plan.summary.is_some())] += 1;
            }
            Err(over) => {
                assert!(over.required >= forever && over.required > u64::from(budget) && over.budget == budget);
                outcomes[2] += 1;
            }
        }
    }
    // The random prompts exercise plans without a summary, with one, and over budget.
    assert!(outcomes.iter().all(|&n| n > 100), "{outcomes:?}");
}

#[test]
fn family_of_a_model_id() {
    let cases = [
        ("gpt-4o", Family::O200k),
        ("gpt-4o-mini-2024-07-18", Family::O200k),
        ("openai:gpt-4.1-mini", Family::O200k),
        ("vscode-lm:copilot/gpt-4o", Family::O200k),
        ("o3-mini", Family::O200k),
        ("GPT-5", Family::O200k),
        ("ft:gpt-4o-mini-2024-07-18:acme::abc123", Family::O200k),
        ("gpt-4", Family::Cl100k),
        ("gpt-3.5-turbo-0125", Family::Cl100k),
        ("claude-sonnet-4-5", Family::Claude),
        ("vscode-lm:copilot/claude-3.5-sonnet", Family::Claude),
        ("anthropic.claude-3-5-sonnet-20240620-v1:0", Family::Claude),
        ("models/gemini-2.5-pro", Family::Gemini),
        ("meta-llama/Llama-3.1-8B-Instruct", Family::Llama),
        ("scripted:demo", Family::Unknown),
        ("text-davinci-003", Family::Unknown),
        ("", Family::Unknown),
    ];
    for (model, family) in cases {
        assert_eq!(family_for_model(model), family, "{model}");
    }
}

#[test]
fn exact_counts_of_known_strings() {
    let cl100k = TokenCounter::new(Family::Cl100k);
    let o200k = TokenCounter::new(Family::O200k);
    assert!(cl100k.is_exact() && o200k.is_exact());
    assert_eq!(cl100k.count("hello world"), 2);
    assert_eq!(o200k.count("hello world"), 2);
    // OpenAI's cookbook example: "t", "ik", "token", " is", " great", "!".
    assert_eq!(cl100k.count("tiktoken is great!"), 6);
    assert_eq!(cl100k.count(""), 0);
    // Text that looks like a special token is counted as text, not refused or counted as one.
    assert!(cl100k.count("<|endoftext|>") > 1);
    assert_eq!(cl100k.count_message("hello world"), 2 + 4);
    assert_eq!(TokenCounter::for_model("gpt-4").count("hello world"), 2);
}

const PARAGRAPH: &str = "The runtime must compact the conversation before inference when it exceeds the model's \
budget. Older turns are summarised or dropped, non-essential constraints are trimmed before acceptance criteria, \
and the active intent's context and the system prompt are kept. Token counts come from the native core: an exact \
tokenizer for the model family where one is available, a documented estimate otherwise.";

/// The repository's own text: sources, documents, lock files (hashes), as a corpus.
fn corpus() -> Vec<(String, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut texts = vec![("paragraph".to_owned(), PARAGRAPH.to_owned())];
    for dir in ["native/core/src", "native/core/src/ledger", "extension/src", "docs", "."] {
        let mut paths: Vec<_> = std::fs::read_dir(root.join(dir)).expect("a folder").map(|e| e.expect("an entry").path()).collect();
        paths.sort();
        for path in paths {
            if let Ok(text) = std::fs::read_to_string(&path) {
                texts.push((path.display().to_string(), text));
            }
        }
    }
    texts.push(("non-latin".to_owned(), "Токены считаются заранее. 数えたトークンは保存されます。🎉 Ünïcödé".repeat(20)));
    texts
}

#[test]
fn the_estimate_never_under_counts_against_the_exact_tokenizers() {
    let estimate = TokenCounter::new(Family::Claude);
    assert!(!estimate.is_exact());
    let exact = [TokenCounter::new(Family::O200k), TokenCounter::new(Family::Cl100k)];
    let texts = corpus();
    assert!(texts.len() > 20);
    for (name, text) in &texts {
        let most = exact.iter().map(|c| c.count(text)).max().expect("two counters");
        assert!(estimate.count(text) >= most, "{name}: estimated {} < exact {most}", estimate.count(text));
        assert!(estimate.count_message(text) > estimate.count(text));
    }
}

#[test]
fn long_texts_are_counted_in_chunks_without_changing_the_count() {
    // Longer than the 16 KiB chunks the counter cuts, where no cut changes a token.
    let text: String = corpus().into_iter().map(|(_, t)| t).collect();
    assert!(text.len() > 200_000);
    for (family, bpe) in [(Family::Cl100k, tiktoken_rs::cl100k_base_singleton()), (Family::O200k, tiktoken_rs::o200k_base_singleton())] {
        assert_eq!(TokenCounter::new(family).count(&text) as usize, bpe.encode_ordinary(&text).len(), "{family:?}");
    }
}

#[test]
fn pathological_texts_are_counted_without_overflowing_the_tokenizer() {
    // The tokenizer's backtracking regex overflows its stack on a long run of one character class.
    let counter = TokenCounter::new(Family::O200k);
    for text in [" ".repeat(300_000), "^".repeat(300_000), "a".repeat(300_000), "\n".repeat(300_000)] {
        assert!(counter.count(&text) > 0);
    }
}
