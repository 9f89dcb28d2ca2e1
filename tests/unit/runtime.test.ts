// The agent runtime end to end in Node: the real engine (the built addon) on a copy of the sample
// workspace, the scripted model over real HTTP, real files, real processes (the lint hook, the tests).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'fs';
import * as path from 'path';
import * as support from '../support/workspace';
import { AgentRuntime } from '../../extension/src/runtime/loop';
import { DEMO_FILES, DEMO_PROMPT, DEMO_SCRIPT } from '../../extension/src/runtime/demo';
import { ScriptedProvider } from '../../extension/src/runtime/providers/scripted';
import { ApprovalBroker } from '../../extension/src/approvals/broker';
import { refusal, type Ask, type RuntimeEvent } from '../../extension/src/runtime/types';

const ROOT = path.resolve(__dirname, '../../..');
// The sample's `npm test` is `node --test`, which, seeing this variable that `node --test` set for us,
// would report to our runner instead of failing: the BeforeSubmit gate must see the real exit code.
delete process.env.NODE_TEST_CONTEXT;
// eslint-disable-next-line @typescript-eslint/no-require-imports
const binding = require(path.join(ROOT, 'native/node')) as typeof import('../../native/node/index');
const sampleWorkspace = (): string => support.sampleWorkspace(ROOT, { prefix: 'chokepoint-runtime-test-' });

async function runDemo(approve: boolean) {
  const root = sampleWorkspace();
  const engine = binding.Engine.open(root);
  const provider = await ScriptedProvider.start(DEMO_SCRIPT);
  const asked: Ask[] = [];
  const events: RuntimeEvent[] = [];
  // The real approvals: the core builds and settles the Pending; this test reviews it as the caller.
  const log = { info() {}, warn() {}, error() {} };
  const broker = new ApprovalBroker({ engine, log, human: { arrived() {} } });
  const decision = approve ? { action: 'approve' } : { action: 'reject', reason: 'billing is another team\u2019s' };
  const runtime = new AgentRuntime({
    root,
    engine,
    provider,
    ask: (request) => {
      asked.push(request);
      return broker.ask(request, { review: (_pending, context) => void context.decide(decision) });
    },
  });
  runtime.onEvent((e) => events.push(e));
  try {
    await runtime.run({ prompt: DEMO_PROMPT });
    await runtime.end();
  } finally {
    await provider.close();
  }
  engine.flushTrace();
  return { root, engine, provider, asked, events, runtime };
}

test('the demo task: handshake, allowed write, denied write, expansion asked, piped lint output, completion gated by the tests', async () => {
  const { root, engine, provider, asked, events } = await runDemo(false);
  const ended = events.find((e) => e.type === 'taskEnded');
  assert.deepEqual(
    ended && ended.type === 'taskEnded' && ended.status,
    'success',
    JSON.stringify(events.filter((e) => e.type === 'error' || e.type === 'taskEnded')),
  );

  // The files: the lockout (fixed by the diff), its test; nothing outside the scope.
  assert.match(fs.readFileSync(path.join(root, DEMO_FILES.login), 'utf8'), /const MAX_FAILURES = 5;/);
  assert.ok(fs.existsSync(path.join(root, DEMO_FILES.test)));
  assert.equal(fs.readFileSync(path.join(root, DEMO_FILES.outOfScope), 'utf8').includes('module.exports = {};'), false, 'the denied write did not happen');

  // What the model received: every request the scripted server answered, in order.
  const requests = provider.server.requests as Array<{ messages: Array<{ role: string; content?: string; name?: string }> }>;
  assert.equal(requests.length, DEMO_SCRIPT.steps.length);
  const toolResults = requests[requests.length - 1].messages.filter((m) => m.role === 'tool').map((m) => String(m.content));
  const denial = JSON.parse(toolResults[2]);
  assert.match(denial.error, /src\/billing\/invoice\.js/);
  assert.ok(denial.remediation, 'a denial tells the model what to do');
  assert.match(toolResults[3], /rejected by caller: billing is another team/, 'the rejection reason reaches the model');
  const refusedCompletion = JSON.parse(toolResults[5]);
  assert.match(refusedCompletion.error, /the completion was not accepted/);
  assert.ok(
    requests[5].messages.some((m) => String(m.content).includes('<hook_output hook="lint">')),
    'piped lint output reached a later turn',
  );

  // The ask was the scope expansion, routed to the approver.
  assert.deepEqual(
    asked.map((a) => [a.event, a.tool]),
    [['PreToolUse', 'scope_expansion_request']],
  );

  // The hooks fired in order with their decisions.
  const lifecycle = events.filter((e) => e.type === 'lifecycle').map((e) => (e.type === 'lifecycle' ? e.event : ''));
  assert.deepEqual(lifecycle.slice(0, 3), ['TaskStart', 'TurnStart', 'TurnPrepare']);
  assert.equal(lifecycle.filter((e) => e === 'BeforeSubmit').length, 2);
  assert.equal(lifecycle[lifecycle.length - 1], 'TaskComplete');
  const calls = events.flatMap((e) => (e.type === 'toolCall' ? [[e.tool, e.decision]] : []));
  assert.deepEqual(calls, [
    ['select_active_intent', 'allow'],
    ['write_to_file', 'allow'],
    ['write_to_file', 'deny'],
    ['scope_expansion_request', 'ask'],
    ['write_to_file', 'allow'],
    ['attempt_completion', 'allow'],
    ['apply_diff', 'allow'],
    ['attempt_completion', 'allow'],
  ]);
  const gate = events.find((e) => e.type === 'toolCall' && e.decision === 'deny');
  assert.ok(
    gate && gate.type === 'toolCall' && gate.hooks.some((h) => h.hook === 'gatekeeper' && h.outcome === 'deny'),
    'the transcript says which hook decided',
  );
  assert.ok(gate && gate.type === 'toolCall' && (gate.durableMs ?? 0) > 0, 'the wait for the gate\u2019s record is reported apart from the hooks\u2019 time');

  // The trace: every tool call recorded with the intent and the model, the write with its ranges.
  const records = engine.traceRecent({ limit: 500 });
  const writes = records.filter((r) => r.tool === 'write_to_file' && r.event === 'PostToolUse');
  assert.ok(
    writes.some((r) => r.files.some((f) => f.path === DEMO_FILES.login && f.ranges.length > 0)),
    'the write is recorded with its ranges',
  );
  assert.ok(
    records.filter((r) => r.kind === 'tool_call').every((r) => r.model === 'scripted-demo'),
    'the model id is recorded',
  );
  assert.ok(records.some((r) => r.event === 'PreToolUse' && r.decision === 'deny' && r.intent === 'INT-001'));
  assert.equal(engine.traceBlame(DEMO_FILES.test, 1).origin?.intent, 'INT-001');
});

test('an approved scope expansion opens the path for the rest of the task', async () => {
  const { root, engine, provider, runtime } = await runDemo(true);
  const requests = provider.server.requests as Array<{ messages: Array<{ role: string; content?: string }> }>;
  const results = requests[requests.length - 1].messages.filter((m) => m.role === 'tool').map((m) => String(m.content));
  assert.match(results[3], /approved by caller: src\/billing\/\*\* added to the scope of INT-001/);
  // The grant is the engine's, for this session's intent: selected again, the same write is allowed
  // for this session and not for another.
  const write = (sessionId: string) => ({
    event: 'PreToolUse' as const,
    tool: 'write_to_file',
    input: { path: DEMO_FILES.outOfScope, content: 'x' },
    sessionId,
  });
  await engine.evaluateAsync({ event: 'PreToolUse', tool: 'select_active_intent', input: { intent_id: 'INT-001' }, sessionId: runtime.sessionId });
  assert.equal((await engine.evaluateAsync(write(runtime.sessionId))).decision, 'allow');
  await engine.evaluateAsync({ event: 'TaskComplete', sessionId: runtime.sessionId });
  await engine.evaluateAsync({ event: 'PreToolUse', tool: 'select_active_intent', input: { intent_id: 'INT-001' }, sessionId: 'another' });
  assert.equal((await engine.evaluateAsync(write('another'))).decision, 'deny');
  assert.ok(fs.existsSync(path.join(root, DEMO_FILES.login)));
});

test('Stop during a command kills its process group, undoes nothing inside the scope, and ends the task as cancelled', async () => {
  const root = sampleWorkspace();
  const engine = binding.Engine.open(root);
  const marker = `chokepoint-cancel-${process.pid}-${Date.now()}`;
  const provider = await ScriptedProvider.start({
    model: 'scripted-cancel',
    steps: [
      { toolCalls: [{ name: 'select_active_intent', arguments: { intent_id: 'INT-001' } }] },
      {
        toolCalls: [
          { name: 'execute_command', arguments: { command: `echo started > src/auth/started.txt; sleep 30 # ${marker}\necho after > src/auth/after.txt` } },
        ],
      },
      { text: 'never reached' },
    ],
  });
  const events: RuntimeEvent[] = [];
  const runtime = new AgentRuntime({ root, engine, provider, ask: async () => refusal('no') });
  runtime.onEvent((e) => {
    events.push(e);
    // Stop once the command is running (it has written its first file).
    if (e.type === 'toolCall' && e.tool === 'execute_command') {
      const poll = setInterval(() => {
        if (fs.existsSync(path.join(root, 'src/auth/started.txt'))) {
          clearInterval(poll);
          runtime.cancel();
        }
      }, 20);
    }
  });
  const started = Date.now();
  try {
    await runtime.run({ prompt: 'run the slow command' });
  } finally {
    await provider.close();
  }
  const ended = events.find((e) => e.type === 'taskEnded');
  assert.equal(ended && ended.type === 'taskEnded' && ended.status, 'cancelled');
  assert.ok(Date.now() - started < 15_000, 'stopped at once, not after the sleep');
  const { execFileSync } = await import('child_process');
  const left = execFileSync('ps', ['-eo', 'args'])
    .toString()
    .split('\n')
    .filter((l) => l.includes(marker) && !l.includes('ps -eo'));
  assert.deepEqual(left, [], 'nothing of the command is left running');
  assert.ok(!fs.existsSync(path.join(root, 'src/auth/after.txt')), 'the command did not go on after Stop');
  assert.equal(provider.server.requests.length, 2, 'no inference after Stop');
  const result = events.find((e) => e.type === 'toolResult' && e.tool === 'execute_command');
  assert.match(result && result.type === 'toolResult' ? result.content : '', /cancelled/);
});
