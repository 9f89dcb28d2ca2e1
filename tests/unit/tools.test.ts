// The runtime's tool catalogue, argument validators, apply_diff and prompt assembly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as path from 'path';
import { applyBlocks, parseBlocks } from '../../extension/src/runtime/applyDiff';
import { SYSTEM_PROMPT, assemblePrompt, summarize, turnsOf, type Compactor } from '../../extension/src/runtime/prompt';
import { TOOL_NAMES, toolDefinitions, validateToolCall } from '../../extension/src/runtime/tools';
import type { ChatMessage, ModelProvider } from '../../extension/src/runtime/types';

test('every tool is offered with an object JSON Schema generated from its validator', () => {
  const defs = toolDefinitions();
  assert.deepEqual(
    defs.map((d) => d.name),
    TOOL_NAMES,
  );
  assert.equal(TOOL_NAMES.length, 10);
  for (const d of defs) {
    assert.equal(d.parameters.type, 'object', d.name);
    assert.equal(d.parameters.additionalProperties, false, `${d.name} refuses unknown fields`);
    assert.ok(d.description.length > 20);
  }
  const write = defs.find((d) => d.name === 'write_to_file')!.parameters as { required: string[] };
  assert.deepEqual(write.required.sort(), ['content', 'path']);
  const list = defs.find((d) => d.name === 'list_files')!.parameters as { required?: string[] };
  assert.ok(!list.required?.includes('path'), 'a field with a default is optional for the model');
});

test('arguments are validated before the chain sees them, with errors that say what to fix', () => {
  assert.deepEqual(validateToolCall('list_files', '{}'), { ok: true, name: 'list_files', args: { path: '.', recursive: false } });
  const cases: Array<[string, string, RegExp]> = [
    ['write_to_file', '{"path": "a.js"}', /content: /],
    ['write_to_file', '{"path": "a.js", "content": "x", "mode": 1}', /unrecognized key.*mode/i],
    ['read_file', '{"path": "a", "start_line": 5, "end_line": 2}', /start_line must not be after end_line/],
    ['read_file', '{"path": ', /not JSON/],
    ['execute_command', '{"command": ""}', /command: /],
    ['scope_expansion_request', '{"intent_id": "I", "paths": [], "justification": "j"}', /paths: /],
    ['rm_rf', '{}', /there is no tool `rm_rf`/],
  ];
  for (const [name, args, why] of cases) {
    const r = validateToolCall(name, args);
    assert.equal(r.ok, false, `${name} ${args}`);
    assert.match((r as { error: string }).error, why);
  }
});

test('apply_diff applies every block or none, and names the block that does not match', () => {
  const file = 'a\nb\nc\nb\n';
  const diff = (search: string, replace: string) => `<<<<<<< SEARCH\n${search}\n=======\n${replace}\n>>>>>>> REPLACE`;
  assert.equal(applyBlocks(file, parseBlocks(diff('a', 'A') + '\n' + diff('c', 'C'))), 'A\nb\nC\nb\n');
  assert.throws(() => applyBlocks(file, parseBlocks(diff('a', 'A') + '\n' + diff('x', 'X'))), /block 2 of 2 does not match/);
  assert.throws(() => applyBlocks(file, parseBlocks(diff('b', 'B'))), /matches 2 places/);
  assert.equal(applyBlocks('a\r\nb\r\n', parseBlocks(diff('a', 'A'))), 'A\r\nb\r\n', 'CRLF files keep their line endings');
  assert.throws(() => parseBlocks('<<<<<<< SEARCH\na\n'), /no "=======" line/);
  assert.throws(() => parseBlocks('just text'), /expected "<<<<<<< SEARCH"/);
});

const provider = (contextTokens: number): ModelProvider => ({ kind: 'test', model: 'gpt-4o', contextTokens, chat: () => (async function* () {})() });

// The core's own token counts and planner, through the built addon.
const ROOT = path.resolve(__dirname, '../../..');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const binding = require(path.join(ROOT, 'native/node')) as typeof import('../../native/node/index');
const nativeCompactor: Compactor = {
  count: (texts, model) => binding.countTokens(texts, model),
  plan: (items, budget) => binding.planCompaction(items, budget),
};

test('the prompt is re-assembled from the conversation: system prompt, intent context, turns', async () => {
  const conversation: ChatMessage[] = [
    { role: 'user', content: 'task' },
    { role: 'assistant', content: '', toolCalls: [{ id: '1', name: 'read_file', arguments: '{"path":"a"}' }] },
    { role: 'tool', toolCallId: '1', name: 'read_file', content: 'a word of the file '.repeat(400) },
    { role: 'user', content: 'next' },
  ];
  assert.deepEqual(
    turnsOf(conversation).map((t) => t.length),
    [3, 1],
    'a tool result stays with its call',
  );
  const none = await assemblePrompt({
    conversation,
    intentContext: '<intent_context>\nid: INT-001\n</intent_context>',
    provider: provider(100_000),
    onCompact: async () => true,
    onCompacted: () => {},
  });
  assert.equal(none.system, `${SYSTEM_PROMPT}\n\n<intent_context>\nid: INT-001\n</intent_context>`);
  assert.equal(none.messages, conversation);

  let proposal: unknown;
  const compacted = await assemblePrompt({
    conversation,
    intentContext: '<intent_context>\nid: INT-001\n</intent_context>',
    provider: provider(4096 + 1024),
    compactor: nativeCompactor,
    onCompact: async (p) => ((proposal = p), true),
    onCompacted: () => {},
  });
  assert.ok(compacted.system.includes('<intent_context>'), 'the intent context is kept');
  assert.equal(compacted.messages[compacted.messages.length - 1].content, 'next', 'the newest turn is kept');
  assert.equal(compacted.messages[0].content, 'task', 'the task (its acceptance criterion) is the last to go');
  assert.match(String(compacted.messages[1].content), /^<summary of 1 earlier turn>\n- called read_file on a/);
  assert.equal(compacted.messages.length, 3);
  const p = proposal as { summarized_turns: number; before_tokens: number; after_tokens: number; budget: number };
  assert.equal(p.summarized_turns, 1);
  assert.ok(p.before_tokens > p.budget && p.after_tokens <= p.budget, JSON.stringify(p));
  const refused = await assemblePrompt({
    conversation,
    provider: provider(4096 + 1024),
    compactor: nativeCompactor,
    onCompact: async () => false,
    onCompacted: () => {},
  });
  assert.equal(refused.messages, conversation, 'a PreCompact that refuses leaves the conversation as it was');
  assert.match(summarize(turnsOf(conversation).slice(0, 1)), /called read_file on a/);
});

test('the file tools stay inside the workspace and say what went wrong', async () => {
  const fs = await import('fs');
  const os = await import('os');
  const path = await import('path');
  const { FileTools, ToolError } = await import('../../extension/src/runtime/fileTools');
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'chokepoint-files-'));
  try {
    fs.mkdirSync(path.join(root, 'src/a'), { recursive: true });
    fs.mkdirSync(path.join(root, 'node_modules/x'), { recursive: true });
    fs.writeFileSync(path.join(root, 'src/a/one.ts'), 'export const one = 1;\n// TODO two\n');
    fs.writeFileSync(path.join(root, 'node_modules/x/index.js'), 'TODO vendored');
    const tools = new FileTools(root);
    assert.throws(
      () => tools.readFile({ path: '../outside' }),
      (e: Error) => e instanceof ToolError && /outside the workspace/.test(e.message),
    );
    assert.throws(() => tools.resolve('/etc/passwd'), /outside the workspace/);
    assert.equal(tools.readFile({ path: 'src/a/one.ts', start_line: 2, end_line: 2 }), '2 | // TODO two');
    assert.throws(() => tools.readFile({ path: 'src/a/missing.ts' }), /does not exist/);
    assert.throws(() => tools.readFile({ path: 'src/a' }), /is a folder; use list_files/);
    assert.equal(
      tools
        .listFiles({ path: '.', recursive: true })
        .split('\n')
        .filter((l) => l.startsWith('node_modules/x')).length,
      0,
      'vendored folders are listed, not descended into',
    );
    assert.equal(tools.searchFiles({ path: '.', regex: 'TODO' }), 'src/a/one.ts:2: // TODO two');
    assert.throws(() => tools.searchFiles({ path: '.', regex: '(' }), /invalid regular expression/);
    assert.match(tools.writeFile({ path: 'src/b/new.ts', content: 'x\ny' }), /created src\/b\/new.ts \(2 lines\)/);
    assert.equal(fs.readdirSync(path.join(root, 'src/b')).join(), 'new.ts', 'no temporary file is left behind');
    assert.throws(
      () => tools.applyDiff({ path: 'src/b/new.ts', diff: '<<<<<<< SEARCH\nz\n=======\nw\n>>>>>>> REPLACE' }),
      /was not changed: block 1 of 1 does not match/,
    );
    assert.equal(fs.readFileSync(path.join(root, 'src/b/new.ts'), 'utf8'), 'x\ny', 'a diff that does not apply changes nothing');
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});
