// The tool loop's rules, each against the real engine with a hooks.yaml of the test's own and the
// scripted model over real HTTP: what the model is told, how a task ends, which events fire.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'fs';
import * as path from 'path';
import * as support from '../support/workspace';
import { AgentRuntime } from '../../extension/src/runtime/loop';
import { ScriptedProvider, type Script } from '../../extension/src/runtime/providers/scripted';
import { refusal, type RuntimeEvent, type RuntimeLimits } from '../../extension/src/runtime/types';

const ROOT = path.resolve(__dirname, '../../..');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const binding = require(path.join(ROOT, 'native/node')) as typeof import('../../native/node/index');
const workspace = (hooksYaml: string): string => support.sampleWorkspace(ROOT, { prefix: 'chokepoint-loop-test-', hooksYaml });

async function run(hooksYaml: string, script: Script, limits: Partial<RuntimeLimits> = {}, prompt = 'do it') {
  const root = workspace(hooksYaml);
  const engine = binding.Engine.open(root);
  const provider = await ScriptedProvider.start(script);
  const events: RuntimeEvent[] = [];
  const runtime = new AgentRuntime({ root, engine, provider, limits, ask: async () => refusal('no') });
  runtime.onEvent((e) => events.push(e));
  try {
    await runtime.run({ prompt });
    await runtime.end();
  } finally {
    await provider.close();
  }
  const ended = events.filter((e) => e.type === 'taskEnded') as Extract<RuntimeEvent, { type: 'taskEnded' }>[];
  const requests = provider.server.requests as Array<{ messages: Array<{ role: string; content?: string }> }>;
  return { root, engine, events, ended, requests, lifecycle: events.flatMap((e) => (e.type === 'lifecycle' ? [e.event] : [])) };
}

const select = { toolCalls: [{ name: 'select_active_intent', arguments: { intent_id: 'INT-001' } }] };
const complete = { toolCalls: [{ name: 'attempt_completion', arguments: { result: 'done' } }] };

test('a bad argument is a tool error the model can correct, and the chain never sees the bad call', async () => {
  const r = await run('hooks: {}\n', {
    model: 'm',
    steps: [
      { toolCalls: [{ name: 'read_file', arguments: '{"path": 3}' }] },
      {
        toolCalls: [{ name: 'read_file', arguments: { path: 'src/auth/login.js' } }],
        expect: { lastMessageIncludes: 'invalid arguments for read_file: path' },
      },
      { ...complete, expect: { lastMessageIncludes: '3 | function login' } },
    ],
  });
  assert.equal(r.ended[0].status, 'success');
  const records = r.engine.traceRecent({}).filter((x) => x.event === 'PreToolUse' && x.tool === 'read_file');
  assert.equal(records.length, 1, 'only the valid call reached the chain (and the trace)');
});

test('a model that never completes ends as max_turns', async () => {
  const r = await run(
    'hooks: {}\n',
    { model: 'm', steps: [{ text: 'thinking' }, { text: 'still thinking', expect: { lastMessageIncludes: 'No tool was called' } }, { text: 'never' }] },
    { maxTurns: 2 },
  );
  assert.equal(r.ended[0].status, 'max_turns');
  assert.equal(r.requests.length, 2);
});

test('a completion refused by BeforeSubmit gets a bounded number of retries, then the task is rejected', async () => {
  const hooks = 'hooks:\n  BeforeSubmit:\n    - name: never-done\n      deny: { reason: "the reviewers are away" }\n';
  const r = await run(
    hooks,
    { model: 'm', steps: [complete, { ...complete, expect: { lastMessageIncludes: 'the reviewers are away' } }, complete] },
    { maxSubmitRetries: 2 },
  );
  assert.equal(r.ended[0].status, 'rejected');
  assert.match(r.ended[0].summary ?? '', /refused 3 times/);
  assert.equal(r.lifecycle.filter((e) => e === 'BeforeSubmit').length, 3);
  assert.equal(r.lifecycle.includes('AfterSubmit'), false);
});

test('a TurnStart hook that denies stops the task before inference', async () => {
  const hooks = 'hooks:\n  TurnStart:\n    - name: quota\n      deny: { reason: "the token quota is spent" }\n';
  const r = await run(hooks, { model: 'm', steps: [complete] });
  assert.equal(r.ended[0].status, 'rejected');
  assert.match(r.ended[0].summary ?? '', /token quota/);
  assert.equal(r.requests.length, 0, 'no inference ran');
  assert.deepEqual(r.lifecycle, ['TaskStart', 'TurnStart', 'TaskComplete']);
});

test('a malformed model response fires Error and ends the task as error, with nothing half-written', async () => {
  const r = await run('hooks: {}\n', {
    model: 'm',
    steps: [select, { fault: 'drop', toolCalls: [{ name: 'write_to_file', arguments: { path: 'src/auth/half.js', content: 'x' } }] }],
  });
  assert.equal(r.ended[0].status, 'error');
  assert.ok(
    r.events.some((e) => e.type === 'error'),
    'the transcript says what failed',
  );
  assert.ok(r.lifecycle.includes('Error'));
  assert.equal(fs.existsSync(path.join(r.root, 'src/auth/half.js')), false);
});

test('the intent a call selected is in every later prompt of the session, from the next turn on', async () => {
  const r = await run('hooks: {}\n', { model: 'm', steps: [select, { text: 'looking around' }, complete] });
  assert.equal(r.ended[0].status, 'success');
  const system = r.requests.map((q) => q.messages.find((m) => m.role === 'system')?.content ?? '');
  assert.equal(system[0].includes('<intent_context>'), false, 'not before it was selected');
  assert.ok(
    system.slice(1).every((s) => s.includes('<intent_context>') && s.includes('INT-001')),
    'the selected intent is in each later prompt',
  );
});

test('a plan queues its tasks after the current one; PlanComplete fires when they are all done', async () => {
  const plan = { toolCalls: [{ name: 'submit_plan', arguments: { title: 'two steps', tasks: [{ prompt: 'step one' }, { prompt: 'step two' }] } }] };
  const r = await run('hooks: {}\n', {
    model: 'm',
    steps: [
      plan,
      { ...complete, expect: { lastMessageIncludes: 'plan accepted: 2 tasks queued' } },
      { ...complete, expect: { anyMessageIncludes: 'step one' } },
      { ...complete, expect: { anyMessageIncludes: 'step two' } },
    ],
  });
  assert.deepEqual(
    r.ended.map((e) => e.status),
    ['success', 'success', 'success'],
  );
  assert.equal(r.lifecycle.filter((e) => e === 'PlanSubmit').length, 1);
  assert.equal(r.lifecycle.filter((e) => e === 'PlanComplete').length, 1);
  assert.equal(r.lifecycle[r.lifecycle.length - 1], 'PlanComplete', 'after the plan\u2019s last task');
});

test('a write before the handshake is denied with the handshake as the remedy', async () => {
  const r = await run('hooks: {}\n', {
    model: 'm',
    steps: [
      { toolCalls: [{ name: 'write_to_file', arguments: { path: 'src/auth/a.js', content: 'x' } }] },
      { ...complete, expect: { lastMessageIncludes: 'select_active_intent' } },
    ],
  });
  assert.equal(r.ended[0].status, 'success');
  const denial = JSON.parse(String(r.requests[1].messages.filter((m) => m.role === 'tool')[0].content));
  assert.match(denial.remediation, /select_active_intent/);
  assert.equal(fs.existsSync(path.join(r.root, 'src/auth/a.js')), false);
});

test("a hook's rewrite of a call is held to the tool's schema: a valid one runs, an invalid one is a tool error and nothing runs", async () => {
  const root = workspace('hooks: {}\n');
  const engine = binding.Engine.open(root);
  // A path rewritten to its normal form runs; content rewritten to a number is not a write_to_file.
  engine.registerHostHook({ name: 'rewriter', events: ['PreToolUse'], tool: 'write_to_file' }, async (event) => {
    const input = event.input as { path: string; content: string };
    return input.path === 'src/auth/./a.js'
      ? { decision: 'modify', modified: { ...input, path: 'src/auth/a.js' } }
      : { decision: 'modify', modified: { ...input, content: 5 } };
  });
  const provider = await ScriptedProvider.start({
    model: 'm',
    steps: [
      select,
      { toolCalls: [{ name: 'write_to_file', arguments: { path: 'src/auth/./a.js', content: 'kept\n' } }] },
      { toolCalls: [{ name: 'write_to_file', arguments: { path: 'src/auth/b.js', content: 'never\n' } }] },
      { ...complete, expect: { lastMessageIncludes: 'a hook rewrote the call into an invalid one: invalid arguments for write_to_file: content' } },
    ],
  });
  const runtime = new AgentRuntime({ root, engine, provider, ask: async () => refusal('no') });
  const events: RuntimeEvent[] = [];
  runtime.onEvent((e) => events.push(e));
  try {
    await runtime.run({ prompt: 'write' });
    await runtime.end();
  } finally {
    await provider.close();
    engine.close();
  }
  const results = events.flatMap((e) => (e.type === 'toolResult' && e.tool === 'write_to_file' ? [e] : []));
  assert.deepEqual(
    results.map((e) => e.ok),
    [true, false],
  );
  assert.match(results[1].content, /a hook rewrote the call into an invalid one: invalid arguments for write_to_file: content/);
  assert.equal(fs.readFileSync(path.join(root, 'src/auth/a.js'), 'utf8'), 'kept\n', 'the valid rewrite ran');
  assert.equal(fs.existsSync(path.join(root, 'src/auth/b.js')), false, 'the invalid rewrite did not run');
});

test('TurnPrepare may rewrite the system prompt and the model of the inference; PostToolUse may rewrite what the model is told', async () => {
  const root = workspace('hooks: {}\n');
  const engine = binding.Engine.open(root);
  engine.registerHostHook({ name: 'steer', events: ['TurnPrepare'] }, async (event) => {
    const subject = event.input as { system_prompt: string; turn: number };
    return { decision: 'modify', modified: { ...subject, system_prompt: `${subject.system_prompt}\nSTEERED ${subject.turn}`, model: 'bigger-model' } };
  });
  engine.registerHostHook({ name: 'linter', events: ['PostToolUse'], tool: 'read_file' }, async (event) => {
    const subject = event.input as { result: { output: string } };
    return { decision: 'modify', modified: { ...subject, result: { output: `${subject.result.output}\nlinter: 2 warnings`, is_error: false } } };
  });
  const provider = await ScriptedProvider.start({
    model: 'small-model',
    steps: [{ toolCalls: [{ name: 'read_file', arguments: { path: 'README.md' } }] }, { ...complete, expect: { lastMessageIncludes: 'linter: 2 warnings' } }],
  });
  const runtime = new AgentRuntime({ root, engine, provider, ask: async () => refusal('no') });
  try {
    await runtime.run({ prompt: 'read' });
    await runtime.end();
  } finally {
    await provider.close();
    engine.close();
  }
  const requests = provider.server.requests as Array<{ model: string; messages: Array<{ role: string; content?: string }> }>;
  assert.deepEqual(
    requests.map((r) => r.model),
    ['bigger-model', 'bigger-model'],
  );
  assert.ok(String(requests[1].messages[0].content).endsWith('STEERED 1'), 'the rewritten system prompt was sent');
  engine.flushTrace();
  const recorded = engine.traceRecent({}).filter((r) => r.event === 'PreToolUse');
  assert.deepEqual([...new Set(recorded.map((r) => r.model))], ['bigger-model'], 'the trace records the model that acted');
});

test('a history over the model\u2019s budget is compacted through the core before inference, after PreCompact allowed it', async () => {
  const root = workspace('hooks: {}\n');
  fs.writeFileSync(path.join(root, 'docs/big.md'), 'A paragraph of the manual that the agent reads in full. '.repeat(300));
  const engine = binding.Engine.open(root);
  const provider = await ScriptedProvider.start({
    model: 'gpt-4o',
    contextTokens: 4096 + 2048,
    steps: [
      { toolCalls: [{ name: 'read_file', arguments: { path: 'docs/big.md' } }] },
      { toolCalls: [{ name: 'list_files', arguments: { path: 'src' } }] },
      { toolCalls: [{ name: 'read_file', arguments: { path: 'src/auth/login.js' } }], expect: { anyMessageIncludes: '<summary of 1 earlier turn>' } },
      complete,
    ],
  });
  const events: RuntimeEvent[] = [];
  const runtime = new AgentRuntime({
    root,
    engine,
    provider,
    compactor: { count: (t, m) => binding.countTokens(t, m), plan: (items, budget) => binding.planCompaction(items, budget) },
    ask: async () => refusal('no'),
  });
  runtime.onEvent((e) => events.push(e));
  try {
    await runtime.run({ prompt: 'read the manual' });
  } finally {
    await provider.close();
  }
  assert.equal((events.find((e) => e.type === 'taskEnded') as { status: string }).status, 'success');
  const compacted = events.filter((e) => e.type === 'compacted') as Extract<RuntimeEvent, { type: 'compacted' }>[];
  assert.ok(compacted.length >= 1);
  assert.ok(
    compacted.every((c) => c.afterTokens <= 2048 && c.beforeTokens > 2048),
    JSON.stringify(compacted),
  );
  assert.ok(events.some((e) => e.type === 'lifecycle' && e.event === 'PreCompact' && e.decision === 'allow'));
  const requests = provider.server.requests as Array<{ messages: Array<{ role: string; content?: string }> }>;
  const third = requests[2].messages;
  assert.equal(third[1].content, 'read the manual', 'the task itself is kept');
  assert.ok(!third.some((m) => String(m.content).includes('A paragraph of the manual')), 'the big result was summarised away');
});

test('the shared brain is in every prompt, and a compaction never takes it away', async () => {
  const root = workspace('hooks: {}\n');
  fs.writeFileSync(path.join(root, 'docs/big.md'), 'A paragraph of the manual that the agent reads in full. '.repeat(300));
  const note = 'Lesson: login.js is generated; edit login.template instead.';
  fs.writeFileSync(path.join(root, '.orchestration/CLAUDE.md'), `# Shared brain\n\n${note}\n`);
  const engine = binding.Engine.open(root);
  const provider = await ScriptedProvider.start({
    model: 'gpt-4o',
    contextTokens: 4096 + 2048,
    steps: [
      { toolCalls: [{ name: 'read_file', arguments: { path: 'docs/big.md' } }] },
      { toolCalls: [{ name: 'list_files', arguments: { path: 'src' } }] },
      { ...complete, expect: { anyMessageIncludes: '<summary of 1 earlier turn>' } },
    ],
  });
  const runtime = new AgentRuntime({
    root,
    engine,
    provider,
    compactor: { count: (t, m) => binding.countTokens(t, m), plan: (items, budget) => binding.planCompaction(items, budget) },
    ask: async () => refusal('no'),
  });
  try {
    await runtime.run({ prompt: 'read the manual' });
  } finally {
    await provider.close();
    engine.close();
  }
  const requests = provider.server.requests as Array<{ messages: Array<{ role: string; content?: string }> }>;
  assert.equal(requests.length, 3);
  for (const [i, r] of requests.entries()) {
    const system = String(r.messages[0].content);
    assert.equal(r.messages[0].role, 'system');
    assert.ok(system.includes('<shared_brain file=".orchestration/CLAUDE.md">') && system.includes(note), `request ${i} holds the brain: ${system}`);
  }
  assert.ok(
    requests[2].messages.some((m) => String(m.content).includes('<summary of 1 earlier turn>')),
    'the third request was compacted',
  );
});

test('an inference failure fires Error; guidance a hook pipes for it drives one recovery turn', async () => {
  const hooks = 'hooks:\n  Error:\n    - name: advise\n      command: [echo, "the endpoint hiccuped: answer in smaller steps"]\n      pipe_output: true\n';
  const r = await run(hooks, { model: 'm', steps: [{ fault: 'http500' }, { ...complete, expect: { lastMessageIncludes: 'answer in smaller steps' } }] });
  assert.equal(r.ended[0].status, 'success');
  assert.equal(r.lifecycle.filter((e) => e === 'Error').length, 1);
  assert.ok(
    r.events.some((e) => e.type === 'error' && /500/.test(e.message)),
    'the transcript shows the failure',
  );
});

test('AllTasksComplete may enqueue more work; the queue runs until a hook lets it empty', async () => {
  const root = workspace('hooks: {}\n');
  const engine = binding.Engine.open(root);
  let asked = 0;
  engine.registerHostHook({ name: 'follow-up', events: ['AllTasksComplete'] }, async (event) => {
    asked++;
    return asked === 1 ? { decision: 'modify', modified: { ...(event.input as object), tasks: [{ prompt: 'now the follow-up' }] } } : { decision: 'allow' };
  });
  const provider = await ScriptedProvider.start({ model: 'm', steps: [complete, { ...complete, expect: { anyMessageIncludes: 'now the follow-up' } }] });
  const events: RuntimeEvent[] = [];
  const runtime = new AgentRuntime({ root, engine, provider, ask: async () => refusal('no') });
  runtime.onEvent((e) => events.push(e));
  try {
    await runtime.run({ prompt: 'first' });
    await runtime.end();
  } finally {
    await provider.close();
    engine.close();
  }
  assert.deepEqual(
    events.flatMap((e) => (e.type === 'taskStarted' ? [e.prompt] : [])),
    ['first', 'now the follow-up'],
  );
  assert.equal(asked, 2, 'asked again once the follow-up was done');
});
