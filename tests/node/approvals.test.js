// Approvals through the binding, as the extension drives them: a Pending opened, routed, read,
// offered to a model as tools, decided (or refused with EREFUSED), waited for until a decision or a
// timeout, its changes pushed to a listener, its outcome told to the policy that triggered it, and
// every step in the ledger.
'use strict';
const { test } = require('node:test');
const assert = require('node:assert');
const { ledgerRecords } = require('../support/ledger');
const path = require('path');

const ROOT = path.resolve(__dirname, '../..');
const binding = require(path.join(ROOT, 'native/node'));
const support = require('../support/workspace');
const sampleWorkspace = (approvals = '') => support.sampleWorkspace(ROOT, { prefix: 'chokepoint-approvals-test-', appendHooks: approvals });

const toolCall = { tool: 'delete_file', input: { path: 'src/auth/old.js' }, paths: ['src/auth/old.js'], reason: 'deleting needs a human' };
const scope = { intent_id: 'INT-001', paths: ['src/api/**'], justification: 'the login calls the api' };
const settle = () => new Promise((resolve) => setTimeout(resolve, 50));

function refused(fn) {
  try {
    fn();
  } catch (e) {
    return e;
  }
  assert.fail('expected a refusal');
}

test('a pending makes the round trip: open, read, tools, decide', () => {
  const engine = binding.Engine.open(sampleWorkspace());
  const opened = engine.openPending({ kind: 'tool_call', subject: toolCall, triggeredBy: 'gatekeeper', sessionId: 'S' });
  assert.strictEqual(opened.route, 'human');
  const p = opened.pending;
  assert.match(p.id, /^pnd-[0-9a-f]{16}$/);
  assert.deepStrictEqual(
    [p.kind, p.status, p.route, p.triggered_by, p.session_id, p.task_id, p.decision, p.actions],
    ['tool_call', 'open', 'human', 'gatekeeper', 'S', null, null, ['approve', 'reject', 'modify']],
  );
  assert.deepStrictEqual(p.subject, toolCall);
  assert.match(p.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  assert.deepStrictEqual(engine.getPending(p.id), p);
  assert.deepStrictEqual(
    engine.listPending().map((x) => x.id),
    [p.id],
  );
  assert.strictEqual(engine.getPending('pnd-0000000000000000'), null);

  const tools = engine.pendingTools(p.id);
  assert.deepStrictEqual(
    tools.map((t) => t.name),
    ['approve', 'reject', 'modify'],
  );
  assert.deepStrictEqual(tools[1].parameters.required, ['reason']);
  assert.strictEqual(tools[1].parameters.additionalProperties, false);
  assert.match(engine.describePending(p.id), /^pending tool_call `pnd-/);

  const applied = engine.applyDecision(p.id, { action: 'reject', reason: 'use git rm' }, 'human');
  assert.strictEqual(applied.effect, 'decided');
  // Every field of the core's decision crosses (the binding takes it apart by every field): a local
  // decision names no machine.
  assert.deepStrictEqual(applied.pending.decision, {
    action: 'reject',
    by: 'human',
    reason: 'use git rm',
    note: null,
    input: null,
    save: false,
    machine: null,
  });
  assert.deepStrictEqual(engine.listPending(), []);

  const expansion = engine.openPending({ kind: 'scope_expansion', subject: scope, triggeredBy: 'gatekeeper' }).pending;
  const edited = engine.executePendingTool(expansion.id, 'edit', { paths: ['src/api/login.ts'] }, 'reviewer');
  assert.deepStrictEqual([edited.effect, edited.pending.status, edited.pending.subject.paths], ['edited', 'open', ['src/api/login.ts']]);
  assert.match(edited.text, /still open/);
  const saved = engine.executePendingTool(expansion.id, 'approve_and_save', {}, 'reviewer');
  assert.deepStrictEqual([saved.pending.status, saved.pending.decision.save, saved.pending.decision.by], ['approved', true, 'reviewer']);

  const compaction = engine.openPending({
    kind: 'compaction',
    subject: { summaries: [{ text: 'the login form' }, { text: ' ' }], original_tokens: 900, estimated_tokens: 10, budget: 100 },
    triggeredBy: 'runtime',
  }).pending;
  assert.deepStrictEqual(engine.validatePending(compaction.id), { passed: false, diagnosis: 'summary 1 is empty', index: 1 });
});

test('refusals throw EREFUSED naming what is allowed; misuse throws EINVAL', () => {
  const engine = binding.Engine.open(sampleWorkspace());
  const plan = engine.openPending({ kind: 'plan', subject: { title: null, tasks: [{ prompt: 'write the form' }] }, triggeredBy: 'planner' }).pending;
  let e = refused(() => engine.applyDecision(plan.id, { action: '_execute' }, 'human'));
  assert.strictEqual(e.code, 'EREFUSED');
  assert.strictEqual(e.message, 'action `_execute` is not allowed on a plan pending; the allowed actions are approve, reject, edit');
  e = refused(() => engine.applyDecision(plan.id, { action: 'modify', input: {} }, 'human'));
  assert.strictEqual(e.code, 'EREFUSED');
  e = refused(() => engine.executePendingTool(plan.id, 'reject', {}, 'reviewer'));
  assert.deepStrictEqual([e.code, e.message], ['EREFUSED', 'bad arguments for `reject`: missing field `reason`']);
  engine.applyDecision(plan.id, { action: 'approve' }, 'human');
  e = refused(() => engine.applyDecision(plan.id, { action: 'reject', reason: 'too late' }, 'human'));
  assert.strictEqual(e.code, 'EREFUSED');
  assert.match(e.message, /is already approved; no action can change it$/);

  e = refused(() => engine.openPending({ kind: 'commit', subject: {}, triggeredBy: 'x' }));
  assert.strictEqual(e.code, 'EINVAL');
  assert.match(e.message, /^unknown pending kind `commit`/);
  e = refused(() => engine.openPending({ kind: 'scope_expansion', subject: { paths: ['a'] }, triggeredBy: 'x' }));
  assert.strictEqual(e.message, 'invalid scope_expansion subject: missing field `intent_id`');
  e = refused(() => engine.applyDecision('pnd-nope', { action: 'approve' }, 'human'));
  assert.strictEqual(e.code, 'EINVAL');
});

test('waitPending resolves on a decision made later, and on timeout as a rejection', async () => {
  const engine = binding.Engine.open(sampleWorkspace());
  const { id } = engine.openPending({ kind: 'tool_call', subject: toolCall, triggeredBy: 'gatekeeper' }).pending;
  const waiting = Promise.all([engine.waitPending(id), engine.waitPending(id, 5000)]);
  setTimeout(() => engine.applyDecision(id, { action: 'modify', input: { path: 'src/auth/older.js' }, note: 'the other file' }, 'human'), 50);
  for (const decided of await waiting) {
    assert.strictEqual(decided.status, 'modified');
    assert.deepStrictEqual(decided.decision.input, { path: 'src/auth/older.js' });
  }
  assert.strictEqual((await engine.waitPending(id)).status, 'modified', 'a decided pending resolves at once');

  const late = engine.openPending({ kind: 'plan', subject: { tasks: [{ prompt: 'x' }] }, triggeredBy: 'planner' }).pending;
  const started = Date.now();
  const timedOut = await engine.waitPending(late.id, 100);
  assert.ok(Date.now() - started < 2000);
  assert.strictEqual(timedOut.status, 'timed_out');
  assert.deepStrictEqual([timedOut.decision.by, timedOut.decision.reason], ['timeout', 'no decision within 0.1 s']);
  await assert.rejects(engine.waitPending('pnd-nope'), /no pending `pnd-nope`/);
});

test('onPendingChange hears every open, edit, deadline brought forward and decision; the triggering policy hears the outcome', async () => {
  const engine = binding.Engine.open(sampleWorkspace());
  const changes = [];
  engine.onPendingChange((p) => changes.push(`${p.kind} ${p.status} ${p.subject.paths}`));
  const heard = [];
  engine.registerPolicy('policy:widen', {
    onRejection: (r) => heard.push(['rejection', r.source, r.reason, r.pending.kind]),
    onSuccess: (s) => heard.push(['success', s.pending.status]),
  });
  const a = engine.openPending({ kind: 'scope_expansion', subject: scope, triggeredBy: 'policy:widen' }).pending;
  engine.applyDecision(a.id, { action: 'edit', paths: ['src/api/a.ts'] }, 'human');
  engine.applyDecision(a.id, { action: 'reject', reason: 'not this sprint' }, 'human');
  const b = engine.openPending({ kind: 'scope_expansion', subject: scope, triggeredBy: 'policy:widen' }).pending;
  engine.applyDecision(b.id, { action: 'approve' }, 'reviewer');
  await engine.waitPending(engine.openPending({ kind: 'scope_expansion', subject: scope, triggeredBy: 'policy:widen' }).pending.id, 30);
  await settle();
  assert.deepStrictEqual(changes, [
    'scope_expansion open src/api/**',
    'scope_expansion open src/api/a.ts',
    'scope_expansion rejected src/api/a.ts',
    'scope_expansion open src/api/**',
    'scope_expansion approved src/api/**',
    'scope_expansion open src/api/**',
    // The waiter's 30 ms brought its deadline forward: heard, so a card's countdown shows it.
    'scope_expansion open src/api/**',
    'scope_expansion timed_out src/api/**',
  ]);
  assert.deepStrictEqual(heard, [
    ['rejection', 'human', 'not this sprint', 'scope_expansion'],
    ['success', 'approved'],
    ['rejection', 'timeout', 'no decision within 0.03 s', 'scope_expansion'],
  ]);
});

test('routing follows hooks.yaml and the registered handlers; the guard and warnings; the ledger has it all', () => {
  const dir = sampleWorkspace(
    'approvals:\n  default: human\n  timeout_seconds: 120\n  handlers: { submit: auto-deny }\n  reviewer:\n    model: scripted:reviewer\n',
  );
  const engine = binding.Engine.open(dir);
  assert.deepStrictEqual(engine.approvalsConfig(), {
    default: 'human',
    timeoutSeconds: 120,
    handlers: { submit: 'auto-deny' },
    reviewer: { model: 'scripted:reviewer', escalateOn: ['reject', 'unsure'] },
  });
  const open = (kind, subject, extra = {}) => engine.openPending({ kind, subject, triggeredBy: 'gatekeeper', sessionId: 'S', ...extra });
  const denied = open('submit', { result: 'done', failures: [{ hook: 'tests', reason: '2 failed' }] });
  assert.deepStrictEqual([denied.route, denied.pending.status], ['auto-deny', 'rejected']);
  engine.setApprovalHandler('*', 'sidebar');
  assert.strictEqual(open('tool_call', toolCall).route, 'handler:sidebar');
  assert.strictEqual(open('tool_call', toolCall, { review: true }).route, 'caller');
  assert.strictEqual(engine.approvalsConfig().handlers['*'], 'sidebar');
  engine.enterApprovalHandler('S');
  const guarded = open('tool_call', toolCall);
  assert.deepStrictEqual([guarded.route, guarded.pending.status, guarded.pending.decision.by], ['guard', 'approved', 'guard']);
  engine.exitApprovalHandler('S');
  const unresolved = open('tool_call', toolCall).pending;
  assert.strictEqual(unresolved.route, 'handler:sidebar');
  assert.match(
    engine.noteUnresolved(unresolved.id, 'sidebar'),
    /^approval handler `sidebar` returned without deciding tool_call pending `pnd-\w+`; it times out and counts as rejected when its timeout of 120 s runs out$/,
  );
  engine.setApprovalHandler('*', null);
  assert.strictEqual(open('plan', { tasks: [{ prompt: 'x' }] }).route, 'human');
  assert.throws(() => engine.setApprovalHandler('commit', 'x'), /handlers are registered for a kind/);

  engine.flushTrace();
  const records = ledgerRecords(dir).filter((r) => r.kind === 'approval');
  const phases = records.map((r) => `${r.data.pending_kind} ${r.data.phase} ${r.data.status} ${r.data.route}`);
  assert.deepStrictEqual(phases, [
    'submit open open auto-deny',
    'submit decision rejected auto-deny',
    'tool_call open open handler:sidebar',
    'tool_call open open caller',
    'tool_call open open guard',
    'tool_call decision approved guard',
    'tool_call open open handler:sidebar',
    'tool_call warning open handler:sidebar',
    'plan open open human',
  ]);
  assert.ok(records.every((r) => r.session === 'S' && r.data.triggered_by === 'gatekeeper'));
  // The sidebar's trace shows them with their outcome.
  const recent = engine.traceRecent({ session: 'S' }).filter((r) => r.kind === 'approval' && r.decision);
  assert.deepStrictEqual(
    recent.map((r) => r.decision),
    ['approved', 'rejected'],
  );
});
