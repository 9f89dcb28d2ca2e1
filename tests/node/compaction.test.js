// Token counts and compaction plans through the binding, as the agent runtime asks for them before an
// inference: count each message once, then plan the prompt to the model's budget.
'use strict';
const { test } = require('node:test');
const assert = require('node:assert');
const path = require('path');

const ROOT = path.resolve(__dirname, '../..');
const binding = require(path.join(ROOT, 'native/node'));

test('countTokens counts each text as one message, exactly for the OpenAI families', () => {
  const info = binding.tokenizerInfo('openai:gpt-4o');
  assert.deepStrictEqual(info, { family: 'o200k', exact: true, messageOverhead: 4 });
  const [hello, empty, cookbook] = binding.countTokens(['hello world', '', 'tiktoken is great!'], 'gpt-4');
  assert.strictEqual(hello, 2 + info.messageOverhead);
  assert.strictEqual(empty, info.messageOverhead);
  assert.strictEqual(cookbook, 6 + info.messageOverhead);
  assert.deepStrictEqual(binding.countTokens([], 'gpt-4o'), []);
});

test('countTokens estimates high for families without a tokenizer', () => {
  const info = binding.tokenizerInfo('vscode-lm:copilot/claude-sonnet-4');
  assert.strictEqual(info.family, 'claude');
  assert.strictEqual(info.exact, false);
  const text = 'The runtime compacts the conversation before inference when it exceeds the budget. '.repeat(20);
  const [estimated] = binding.countTokens([text], 'claude-sonnet-4');
  const [exact] = binding.countTokens([text], 'gpt-4');
  assert.ok(estimated - info.messageOverhead > exact - 4, `estimate ${estimated} vs exact ${exact}`);
  assert.strictEqual(binding.tokenizerInfo('scripted:demo').family, 'unknown');
});

test('countTokensAsync answers what countTokens does, off the JavaScript thread', async () => {
  const texts = ['hello world', 'fn main() {\n    println!("hi");\n}\n'.repeat(100)];
  assert.deepStrictEqual(await binding.countTokensAsync(texts, 'gpt-4.1'), binding.countTokens(texts, 'gpt-4.1'));
});

/** A prompt as the runtime describes it: the system prompt, the intent context, two constraints, two
 *  acceptance criteria, and `turns` turns of a user message, a tool call and its result. */
function prompt(turns) {
  const items = [
    { kind: 'systemPrompt', tokens: 1000 },
    { kind: 'intentContext', tokens: 200 },
    { kind: 'constraint', tokens: 50 },
    { kind: 'constraint', tokens: 50 },
    { kind: 'acceptanceCriterion', tokens: 40 },
    { kind: 'acceptanceCriterion', tokens: 40 },
  ];
  for (let turn = 0; turn < turns; turn++) {
    items.push({ kind: 'turn', turn, tokens: 30 }, { kind: 'turn', turn, tokens: 20 }, { kind: 'turn', turn, tokens: 250 });
  }
  return items;
}

test('planCompaction keeps a prompt within budget whole', () => {
  const items = prompt(3);
  const plan = binding.planCompaction(items, 100_000);
  assert.deepStrictEqual(
    plan.actions,
    items.map(() => 'keep'),
  );
  assert.strictEqual(plan.before, plan.after);
  assert.strictEqual(plan.droppedItems + plan.summarizedItems, 0);
  assert.strictEqual(plan.summary, undefined);
});

test('planCompaction summarises the oldest turns whole and keeps what is never sacrificed', () => {
  const items = prompt(40); // 1380 + 40 × 300 = 13380 tokens
  const plan = binding.planCompaction(items, 4000);
  assert.ok(plan.after <= 4000, `after ${plan.after}`);
  assert.strictEqual(plan.before, 13380);
  assert.deepStrictEqual(plan.actions.slice(0, 6), ['keep', 'keep', 'keep', 'keep', 'keep', 'keep']);
  // Each turn's three items share one action: a tool call stays with its result.
  const byTurn = new Map();
  items.forEach((item, i) => {
    if (item.kind !== 'turn') return;
    const seen = byTurn.get(item.turn);
    if (seen) assert.strictEqual(plan.actions[i], seen, `turn ${item.turn} split`);
    else byTurn.set(item.turn, plan.actions[i]);
  });
  const actions = [...byTurn.values()];
  assert.strictEqual(actions.at(-1), 'keep');
  assert.strictEqual(actions[0], 'summarize');
  assert.strictEqual(actions.filter((a) => a === 'keep').length, plan.recentTurnsKept);
  assert.ok(plan.recentTurnsKept >= 4);
  assert.strictEqual(plan.summarizedItems, actions.filter((a) => a === 'summarize').length * 3);
  assert.ok(plan.summary.tokens > 0 && plan.summary.groups[0].firstTurn === 0);
  assert.strictEqual(
    plan.after,
    items.reduce((sum, item, i) => sum + (plan.actions[i] === 'keep' ? item.tokens : 0), plan.summary.tokens),
  );
});

test('planCompaction trims constraints before acceptance criteria, with a policy', () => {
  const items = prompt(6);
  // Room for the system prompt, the intent context and the 4 newest turns (1200 tokens), plus 80.
  const plan = binding.planCompaction(items, 1200 + 1200 + 80, { keepRecentTurns: 4, summaryRatio: 1 });
  assert.deepStrictEqual(plan.actions.slice(0, 6), ['keep', 'keep', 'drop', 'drop', 'keep', 'keep']);
  assert.strictEqual(plan.recentTurnsKept, 4);
});

test('planCompaction reports a budget the pinned pieces exceed, and throws only on misuse', () => {
  const items = [
    { kind: 'systemPrompt', tokens: 5000 },
    { kind: 'turn', turn: 1, tokens: 10, pinned: true },
  ];
  const plan = binding.planCompaction(items, 4000);
  assert.deepStrictEqual(plan.overBudget, {
    budget: 4000,
    required: 5010,
    over: 1010,
    message: 'the system prompt, intent context and pinned items take 5010 tokens, 1010 over the budget of 4000',
  });
  assert.deepStrictEqual(plan.actions, []);
  assert.throws(() => binding.planCompaction([{ kind: 'turn', tokens: 10 }], 100), /needs its `turn` number/);
  assert.throws(() => binding.planCompaction([{ kind: 'chat', tokens: 10 }], 100), /unknown item kind `chat`/);
  assert.throws(() => binding.planCompaction([{ kind: 'constraint', tokens: NaN }], 100), /not a valid token count/);
  assert.throws(() => binding.planCompaction([{ kind: 'constraint', tokens: -1 }], 100), /not a valid token count/);
  assert.throws(() => binding.planCompaction([], 1.5), /not a valid budget/);
});
