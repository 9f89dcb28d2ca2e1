// Approvals (issue 7) in Node, against the real binding: the broker executing the core's routes
// (caller, a registered handler, the configured default, the recursion guard), the reviewer over the
// scripted model's real HTTP, escalation to the human, the timeout of an unanswered Pending, and what
// the agent receives: a rejection's reason, a modification's note, in the model's next request.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'fs';
import * as path from 'path';
import * as support from '../support/workspace';
import { ApprovalBroker, type AskOptions } from '../../extension/src/approvals/broker';
import type { PendingDict } from '../../extension/src/approvals/types';
import { AgentRuntime } from '../../extension/src/runtime/loop';
import { ScriptedProvider, type Script } from '../../extension/src/runtime/providers/scripted';
import type { Ask, RuntimeEvent } from '../../extension/src/runtime/types';

const ROOT = path.resolve(__dirname, '../../..');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const binding = require(path.join(ROOT, 'native/node')) as typeof import('../../native/node/index');
const providers: ScriptedProvider[] = [];
after(async () => {
  for (const p of providers) await p.close();
});

const workspace = (hooksYaml: string): string => support.sampleWorkspace(ROOT, { prefix: 'chokepoint-approvals-test-', hooksYaml });

/** A broker on a fresh engine; `human` answers what reaches the human route (or leaves it open). */
function setup(hooksYaml: string, human: (p: PendingDict, broker: ApprovalBroker) => void = () => {}, scripts: Record<string, Script> = {}) {
  const root = workspace(hooksYaml);
  const engine = binding.Engine.open(root);
  const warnings: string[] = [];
  const arrived: PendingDict[] = [];
  const changes: PendingDict[] = [];
  const broker: ApprovalBroker = new ApprovalBroker({
    engine,
    log: { info: () => {}, warn: (m) => warnings.push(m), error: (m) => warnings.push(`error: ${m}`) },
    human: {
      arrived: (p) => {
        arrived.push(p);
        human(p, broker);
      },
    },
    providerFor: async (id) => {
      const script = scripts[id];
      if (!script) throw new Error(`no script for ${id}`);
      const provider = await ScriptedProvider.start(script);
      providers.push(provider);
      return provider;
    },
  });
  broker.onChange((p) => changes.push(p));
  return { root, engine, broker, warnings, arrived, changes };
}

const askWrite = (sessionId = 's-1'): Ask => ({
  event: 'PreToolUse',
  sessionId,
  taskId: 't-1',
  tool: 'write_to_file',
  input: { path: 'src/auth/login.js', content: 'x' },
  paths: ['src/auth/login.js'],
  asks: [{ hook: 'review-writes', reason: 'writes are reviewed' }],
});

// ---- routing, as the broker executes it ------------------------------------------------------

test('caller: a caller that asked for review gets the Pending and decides it; its reason is the answer', async () => {
  const { broker, arrived } = setup('hooks: {}\n');
  let seen: PendingDict | undefined;
  const options: AskOptions = {
    review: (p, context) => {
      seen = p;
      context.decide({ action: 'reject', reason: 'the caller wants a smaller write' });
    },
  };
  const answer = await broker.ask(askWrite(), options);
  assert.equal(seen?.route, 'caller');
  assert.deepEqual(seen?.actions, ['approve', 'reject', 'modify']);
  assert.deepEqual([answer.next, answer.by, answer.reason], ['refuse', 'caller', 'the caller wants a smaller write']);
  assert.deepEqual(
    seen?.subject,
    { tool: 'write_to_file', input: { path: 'src/auth/login.js', content: 'x' }, paths: ['src/auth/login.js'], reason: 'writes are reviewed' },
    'the core built the subject',
  );
  assert.equal(seen?.triggered_by, 'review-writes');
  assert.equal(arrived.length, 0, 'the human never saw it');
});

test('handler: the registered handler decides its kind, and work it does for the session is approved by the guard', async () => {
  const { broker, arrived } = setup('hooks: {}\n');
  let inner: Awaited<ReturnType<ApprovalBroker['ask']>> | undefined;
  let route = '';
  broker.registerHandler('tool_call', 'size-policy', async (p, context) => {
    route = p.route;
    // A Pending opened by the handler's own work for the same session does not come back here.
    inner = await broker.ask({
      ...askWrite(),
      tool: 'scope_expansion_request',
      input: { intent_id: 'INT-001', paths: ['docs/**'], justification: 'notes' },
      paths: undefined,
    });
    context.decide({ action: 'modify', input: { path: 'src/auth/login.js', content: 'y' }, note: 'smaller' });
  });
  const answer = await broker.ask(askWrite());
  assert.equal(route, 'handler:size-policy');
  assert.equal(answer.next, 'run_modified');
  assert.deepEqual(answer.input, { path: 'src/auth/login.js', content: 'y' });
  assert.equal(answer.note, 'smaller');
  assert.equal(inner?.next, 'granted');
  assert.equal(inner?.by, 'guard');
  assert.equal(arrived.length, 0);
});

test('default: without a handler the configured default decides (auto-deny), a kind\u2019s handler beats `*`', async () => {
  const { broker } = setup('hooks: {}\napprovals:\n  default: auto-deny\n');
  const denied = await broker.ask(askWrite());
  assert.equal(denied.next, 'refuse');
  assert.equal(denied.by, 'auto-deny');
  broker.registerHandler('*', 'everything', (_p, c) => void c.decide({ action: 'reject', reason: 'by the fallback' }));
  broker.registerHandler('tool_call', 'writes', (_p, c) => void c.decide({ action: 'approve', note: 'by the kind\u2019s own' }));
  const byKind = await broker.ask(askWrite());
  assert.deepEqual([byKind.next, byKind.note], ['run', 'by the kind\u2019s own']);
  const byFallback = await broker.ask({ ...askWrite(), event: 'PlanSubmit', tool: 'submit_plan', input: { tasks: [{ prompt: 'one' }] } });
  assert.deepEqual([byFallback.next, byFallback.reason], ['refuse', 'by the fallback']);
});

test('the human route: the Pending is announced, listed while open, and the human\u2019s decision is the answer', async () => {
  let listed = -1;
  const { broker, arrived, changes } = setup('hooks: {}\n', (p, b) => {
    listed = b.list().length;
    setTimeout(() => b.decide(p.id, { action: 'approve', note: 'looks right' }, 'human'), 20);
  });
  const answer = await broker.ask(askWrite());
  assert.deepEqual([answer.next, answer.by, answer.note], ['run', 'human', 'looks right']);
  assert.equal(arrived[0].route, 'human');
  assert.equal(listed, 1, 'listed while open');
  assert.deepEqual([...new Set(changes.map((c) => c.status))], ['open', 'approved'], 'onPendingChange saw it open and decided');
  assert.equal(broker.list().length, 0);
});

test('timeout: a Pending nobody answers is rejected after approvals.timeout_seconds, and a handler that left it undecided is warned about', async () => {
  const { broker, warnings } = setup('hooks: {}\napprovals:\n  timeout_seconds: 1\n');
  broker.registerHandler('tool_call', 'forgetful', () => {});
  const started = Date.now();
  const answer = await broker.ask(askWrite());
  const took = Date.now() - started;
  assert.equal(answer.next, 'refuse');
  assert.match(answer.reason ?? '', /no decision within 1 s/);
  assert.ok(took >= 900 && took < 5000, `timed out after ${took} ms`);
  assert.ok(
    warnings.some((w) => /forgetful/.test(w)),
    `the unresolved handler is named: ${JSON.stringify(warnings)}`,
  );
});

// ---- the reviewer ----------------------------------------------------------------------------

const reviewerConfig = (escalate: string) =>
  `hooks: {}\napprovals:\n  default: reviewer\n  timeout_seconds: 20\n  reviewer:\n    model: scripted:reviewer\n    escalate_on: [${escalate}]\n`;

test('reviewer: the configured model answers through the Pending\u2019s tools; its reasoning is the decision\u2019s note', async () => {
  const script: Script = {
    model: 'reviewer-model',
    steps: [{ text: 'The write stays inside the intent\u2019s scope and is small.', toolCalls: [{ name: 'approve', arguments: {} }] }],
  };
  const { broker, arrived } = setup(reviewerConfig('unsure'), undefined, { 'scripted:reviewer': script });
  const answer = await broker.ask(askWrite());
  assert.equal(answer.next, 'run');
  assert.equal(answer.by, 'reviewer');
  assert.equal(answer.note, 'The write stays inside the intent\u2019s scope and is small.');
  assert.equal(arrived.length, 0, 'decided without the human');
  const request = providers.at(-1)!.server.requests[0] as unknown as {
    tools: Array<{ function: { name: string; parameters: { type: string } } }>;
    messages: Array<{ content: string }>;
  };
  assert.deepEqual(
    request.tools.map((t) => t.function.name),
    ['approve', 'reject', 'modify'],
    'offered exactly the kind\u2019s actions',
  );
  assert.ok(request.tools.every((t) => t.function.parameters.type === 'object'));
  assert.match(request.messages[1].content, /write_to_file/, 'the reviewer read what is pending');
});

test('escalation: a reviewer that would reject hands the Pending to the human with its reasoning; the human decides', async () => {
  const script: Script = {
    model: 'reviewer-model',
    steps: [{ text: 'This rewrites the whole login module.', toolCalls: [{ name: 'reject', arguments: { reason: 'too broad' } }] }],
  };
  const { broker, arrived } = setup(
    reviewerConfig('reject'),
    (p, b) => b.decide(p.id, { action: 'reject', reason: 'agreed with the reviewer: split it' }, 'human'),
    { 'scripted:reviewer': script },
  );
  const answer = await broker.ask(askWrite());
  assert.equal(arrived.length, 1, 'escalated to the human');
  assert.equal(arrived[0].route, 'human');
  assert.deepEqual([answer.next, answer.by, answer.reason], ['refuse', 'human', 'agreed with the reviewer: split it']);
});

test('escalation: a reviewer that does not decide goes to the human when escalate_on has unsure', async () => {
  const script: Script = { model: 'reviewer-model', steps: [{ text: 'I cannot tell from here.' }] };
  const { broker, arrived } = setup(reviewerConfig('unsure'), (p, b) => b.decide(p.id, { action: 'approve' }, 'human'), { 'scripted:reviewer': script });
  const answer = await broker.ask(askWrite());
  assert.equal(arrived.length, 1);
  assert.deepEqual([answer.next, answer.by], ['run', 'human']);
});

test('escalation: a reviewer whose model fails, or is not there, hands the Pending to the human at once', async () => {
  const failing: Script = { model: 'reviewer-model', steps: [{ fault: 'http500' }] };
  for (const scripts of [{ 'scripted:reviewer': failing }, {}] as Array<Record<string, Script>>) {
    const { broker, arrived } = setup(reviewerConfig('reject'), (p, b) => b.decide(p.id, { action: 'approve' }, 'human'), scripts);
    const started = Date.now();
    const answer = await broker.ask(askWrite());
    assert.equal(arrived.length, 1, 'escalated to the human');
    assert.deepEqual([answer.next, answer.by], ['run', 'human']);
    assert.ok(Date.now() - started < 15000, 'not left to its timeout');
  }
});

// ---- what the agent receives -----------------------------------------------------------------

const ASK_WRITES = 'hooks:\n  PreToolUse:\n    - name: review-writes\n      tool: write_to_file\n      ask: "writes are reviewed"\n';
const select = { toolCalls: [{ name: 'select_active_intent', arguments: { intent_id: 'INT-001' } }] };
const complete = { toolCalls: [{ name: 'attempt_completion', arguments: { result: 'done' } }] };

async function runTask(hooksYaml: string, steps: Script['steps'], human: (p: PendingDict, b: ApprovalBroker) => void, limits = {}) {
  const s = setup(hooksYaml, human);
  const provider = await ScriptedProvider.start({ model: 'agent-model', steps });
  providers.push(provider);
  const events: RuntimeEvent[] = [];
  const runtime = new AgentRuntime({ root: s.root, engine: s.engine, provider, limits, ask: (r) => s.broker.ask(r) });
  runtime.onEvent((e) => events.push(e));
  await runtime.run({ prompt: 'do it' });
  await runtime.end();
  const requests = provider.server.requests as Array<{ messages: Array<{ role: string; content?: string }> }>;
  const toolResults = (i: number) => requests[i].messages.filter((m) => m.role === 'tool').map((m) => String(m.content));
  const ended = events.find((e) => e.type === 'taskEnded') as Extract<RuntimeEvent, { type: 'taskEnded' }>;
  return { ...s, events, requests, toolResults, ended };
}

test('the rejection reason arrives in the model\u2019s next request, as the tool result', async () => {
  const write = { toolCalls: [{ name: 'write_to_file', arguments: { path: 'src/auth/extra.js', content: 'module.exports = 1;\n' } }] };
  const r = await runTask(ASK_WRITES, [select, write, complete], (p, b) => {
    assert.equal(p.kind, 'tool_call');
    assert.equal(p.triggered_by, 'review-writes');
    b.decide(p.id, { action: 'reject', reason: 'put it in login.js instead of a new file' }, 'human');
  });
  assert.equal(r.ended.status, 'success');
  const rejected = JSON.parse(r.toolResults(2)[1]);
  assert.equal(rejected.error, 'rejected by human: put it in login.js instead of a new file');
  assert.equal(fs.existsSync(path.join(r.root, 'src/auth/extra.js')), false, 'the rejected write did not run');
});

test('modify runs the modified input, judged again, and its note reaches the model', async () => {
  const write = { toolCalls: [{ name: 'write_to_file', arguments: { path: 'src/auth/extra.js', content: 'module.exports = 1;\n' } }] };
  const r = await runTask(ASK_WRITES, [select, write, complete], (p, b) => {
    b.decide(p.id, { action: 'modify', input: { path: 'src/auth/extra.js', content: 'module.exports = 2;\n' }, note: 'two, not one' }, 'human');
  });
  assert.equal(fs.readFileSync(path.join(r.root, 'src/auth/extra.js'), 'utf8'), 'module.exports = 2;\n');
  assert.match(r.toolResults(2)[1], /modified by human before it ran/);
  assert.match(r.toolResults(2)[1], /note from human: two, not one/);
});

test('a modified input the chain refuses does not run', async () => {
  const write = { toolCalls: [{ name: 'write_to_file', arguments: { path: 'src/auth/extra.js', content: 'x' } }] };
  const r = await runTask(ASK_WRITES, [select, write, complete], (p, b) => {
    b.decide(p.id, { action: 'modify', input: { path: 'src/billing/invoice.js', content: 'x' } }, 'human');
  });
  assert.match(JSON.parse(r.toolResults(2)[1]).error, /the modified call was denied: .*outside the scope/);
  assert.notEqual(fs.readFileSync(path.join(r.root, 'src/billing/invoice.js'), 'utf8'), 'x');
});

test('a scope expansion edited then approved grants the edited paths, not the asked ones', async () => {
  const expand = {
    toolCalls: [{ name: 'scope_expansion_request', arguments: { intent_id: 'INT-001', paths: ['src/**'], justification: 'billing uses the login' } }],
  };
  const write = { toolCalls: [{ name: 'write_to_file', arguments: { path: 'src/billing/invoice.js', content: 'module.exports = {};\n' } }] };
  const r = await runTask('hooks: {}\n', [select, expand, write, complete], (p, b) => {
    assert.equal(p.kind, 'scope_expansion');
    b.decide(p.id, { action: 'edit', paths: ['src/billing/invoice.js'] }, 'human');
    b.decide(p.id, { action: 'approve', note: 'only that file' }, 'human');
  });
  assert.match(r.toolResults(2)[1], /approved by human: src\/billing\/invoice\.js added to the scope of INT-001/);
  assert.match(r.toolResults(2)[1], /note from human: only that file/);
  assert.equal(fs.readFileSync(path.join(r.root, 'src/billing/invoice.js'), 'utf8'), 'module.exports = {};\n', 'the edited path was granted');
});

test('a completion the checks still refuse after the rounds is a submit Pending: override accepts it, reject ends the task', async () => {
  const refuse = 'hooks:\n  BeforeSubmit:\n    - name: never-done\n      deny: { reason: "the reviewers are away" }\n';
  const overridden = await runTask(
    refuse,
    [complete, complete],
    (p, b) => {
      assert.equal(p.kind, 'submit');
      assert.deepEqual(p.actions, ['retry', 'reject', 'override']);
      b.decide(p.id, { action: 'override', reason: 'I reviewed it myself' }, 'human');
    },
    { maxSubmitRetries: 1 },
  );
  assert.equal(overridden.ended.status, 'success');
  const rejected = await runTask(refuse, [complete, complete], (p, b) => b.decide(p.id, { action: 'reject', reason: 'not good enough' }, 'human'), {
    maxSubmitRetries: 1,
  });
  assert.equal(rejected.ended.status, 'rejected');
  assert.match(rejected.ended.summary ?? '', /rejected by human: not good enough/);
});

test('a submit retry gives one more round, with the guidance in the tool result', async () => {
  const refuse = 'hooks:\n  BeforeSubmit:\n    - name: never-done\n      deny: { reason: "the reviewers are away" }\n';
  let asked = 0;
  const r = await runTask(
    refuse,
    [complete, complete, complete],
    (p, b) => {
      asked++;
      b.decide(p.id, asked === 1 ? { action: 'retry', guidance: 'add a test first' } : { action: 'reject', reason: 'still no test' }, 'human');
    },
    { maxSubmitRetries: 1 },
  );
  assert.equal(asked, 2, 'asked again after the extra round');
  assert.match(r.toolResults(2)[1], /another round: add a test first/);
  assert.equal(r.ended.status, 'rejected');
});
