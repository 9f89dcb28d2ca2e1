// The trace ledger read back through the binding, as the sidebar and the provenance command do:
// recent records under a filter, and blame of a line found by content after lines moved above it.
'use strict';
const { test } = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const { ledgerRecords } = require('../support/ledger');
const os = require('os');
const path = require('path');

const ROOT = path.resolve(__dirname, '../..');
const binding = require(path.join(ROOT, 'native/node'));
const support = require('../support/workspace');
const sampleWorkspace = () => support.sampleWorkspace(ROOT, { prefix: 'chokepoint-trace-test-' });

const FILE = 'src/auth/session.js';
const WRITTEN = 'export function open() {\n  return 1;\n}\n';

/** A workspace where session S selected INT-001 and wrote FILE (allowed, done, reported), and session
 *  B selected INT-002 and was denied a write outside its scope, through the asynchronous entry (the
 *  sample's PostToolUse runs a command hook). Returns the engine and the folder. */
async function judged() {
  const dir = sampleWorkspace();
  const engine = binding.Engine.open(dir);
  const select = (sessionId, intent) => engine.evaluateAsync({ event: 'PreToolUse', tool: 'select_active_intent', input: { intent_id: intent }, sessionId });
  const write = (event, sessionId, p) =>
    engine.evaluateAsync({ event, tool: 'write_to_file', input: { path: p, content: WRITTEN }, paths: [p], sessionId, agentId: 'claude-code' });
  await select('S', 'INT-001');
  assert.strictEqual((await write('PreToolUse', 'S', FILE)).decision, 'allow');
  fs.writeFileSync(path.join(dir, FILE), WRITTEN); // the tool runs
  await write('PostToolUse', 'S', FILE);
  await select('B', 'INT-002');
  assert.strictEqual((await write('PreToolUse', 'B', 'src/auth/x.js')).decision, 'deny');
  return { dir, engine };
}

const brief = (entries) => entries.map((e) => `${e.seq} ${e.event} ${e.tool ?? '-'} ${e.decision} ${e.intent ?? '-'} ${e.session}`);

test('traceRecent lists every judged event newest first, with its decision, intent, session and ranges', async () => {
  const { engine } = await judged();
  const all = engine.traceRecent();
  assert.deepStrictEqual(brief(all), [
    '5 PreToolUse write_to_file deny INT-002 B',
    '4 PreToolUse select_active_intent allow INT-002 B',
    '3 PostToolUse write_to_file allow INT-001 S',
    '2 PreToolUse write_to_file allow INT-001 S',
    '1 PreToolUse select_active_intent allow INT-001 S',
  ]);
  assert.match(all[0].reason, /`src\/auth\/x\.js` is outside the scope of intent `INT-002`/);
  assert.strictEqual(all[0].kind, 'tool_call');
  assert.match(all[0].time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  // The write's record holds the lines it put there.
  assert.deepStrictEqual(
    all[2].files.map(({ path, ranges }) => ({ path, ranges })),
    [{ path: FILE, ranges: [{ start: 1, end: 3 }] }],
  );
  assert.deepStrictEqual(all[3].files, [], 'the PreToolUse records no ranges; its PostToolUse does');
});

test("a write's result names its before and after images by hash, and traceImage gives their texts back", async () => {
  const dir = sampleWorkspace();
  const engine = binding.Engine.open(dir);
  const write = (event, p, content) =>
    engine.evaluateAsync({ event, tool: 'write_to_file', input: { path: p, content }, paths: [p], sessionId: 'S', agentId: 'claude-code' });
  await engine.evaluateAsync({ event: 'PreToolUse', tool: 'select_active_intent', input: { intent_id: 'INT-001' }, sessionId: 'S' });
  const BEFORE = 'export function open() {\n  return 0;\n}\n';
  fs.writeFileSync(path.join(dir, FILE), BEFORE);
  assert.strictEqual((await write('PreToolUse', FILE, WRITTEN)).decision, 'allow');
  fs.writeFileSync(path.join(dir, FILE), WRITTEN); // the tool runs
  await write('PostToolUse', FILE, WRITTEN);
  engine.flushTrace(); // a result's record is not waited for by the call
  const [file] = engine.traceRecent({ limit: 1 })[0].files;
  const sha = (text) => require('crypto').createHash('sha256').update(text).digest('hex');
  assert.deepStrictEqual([file.path, file.beforeSha256, file.sha256], [FILE, sha(BEFORE), sha(WRITTEN)]);
  assert.strictEqual(engine.traceImage(file.beforeSha256), BEFORE);
  assert.strictEqual(engine.traceImage(file.sha256), WRITTEN);
  // A hash never kept (a record from before images were kept, or one pruned since) has none.
  assert.strictEqual(engine.traceImage(sha('never written')), null);
  // A created file: its before-image is the empty text.
  const created = 'src/auth/created.js';
  assert.strictEqual((await write('PreToolUse', created, 'new\n')).decision, 'allow');
  fs.writeFileSync(path.join(dir, created), 'new\n');
  await write('PostToolUse', created, 'new\n');
  engine.flushTrace();
  const [made] = engine.traceRecent({ limit: 1 })[0].files;
  assert.deepStrictEqual([made.path, engine.traceImage(made.beforeSha256), engine.traceImage(made.sha256)], [created, '', 'new\n']);
  // The texts are in a runtime file that git ignores, never in the ledger.
  assert.ok(fs.existsSync(path.join(dir, '.orchestration/images.db')));
  assert.ok(!ledgerRecords(dir).some((r) => JSON.stringify(r).includes('return 0')));
});

test('traceRecent filters by intent, session, file, time and limit', async () => {
  const { engine } = await judged();
  const seqs = (filter) => engine.traceRecent(filter).map((e) => e.seq);
  assert.deepStrictEqual(seqs({ intent: 'INT-001' }), [3, 2, 1]);
  assert.deepStrictEqual(seqs({ intent: 'INT-002' }), [5, 4]);
  assert.deepStrictEqual(seqs({ intent: 'INT-003' }), []);
  assert.deepStrictEqual(seqs({ session: 'B' }), [5, 4]);
  assert.deepStrictEqual(seqs({ file: FILE }), [3]);
  assert.deepStrictEqual(seqs({ file: 'src/**/*.js' }), [3]);
  assert.deepStrictEqual(seqs({ intent: 'INT-001', limit: 2 }), [3, 2]);
  assert.deepStrictEqual(seqs({ since: '2000-01-01' }), [5, 4, 3, 2, 1]);
  assert.deepStrictEqual(seqs({ since: '2999-01-01' }), []);
  assert.throws(() => engine.traceRecent({ since: 'yesterday' }), /is not a time/);
});

test('traceCount counts what a filter matches, its limit aside: the "of M" of the newest N', async () => {
  const { engine } = await judged();
  assert.strictEqual(engine.traceCount(), 5);
  assert.strictEqual(engine.traceCount({ intent: 'INT-001', limit: 1 }), 3, "the limit is the list's, not the count's");
  assert.strictEqual(engine.traceCount({ session: 'B' }), 2);
  assert.strictEqual(engine.traceCount({ file: 'src/**/*.js' }), 1);
  assert.strictEqual(engine.traceCount({ intent: 'INT-003' }), 0);
  assert.throws(() => engine.traceCount({ since: 'yesterday' }), /is not a time/);
});

test("a call's judged and after records share its `call` digest, and `traceRecord` reads one whole by chain and seq", async () => {
  const { dir, engine } = await judged();
  const all = engine.traceRecent();
  const [post, pre] = [all[2], all[3]];
  assert.match(pre.call, /^[0-9a-f]{16}$/);
  assert.strictEqual(post.call, pre.call, 'one call, before and after');
  assert.notStrictEqual(all[0].call, pre.call, 'another input is another call');
  // A judged call names its paths before it ran (its `files`, the lines written, come after).
  assert.deepStrictEqual(all[0].paths, ['src/auth/x.js'], 'the denied write names what it tried');
  assert.deepStrictEqual(all[0].files, []);
  assert.deepStrictEqual(pre.paths, [FILE]);
  assert.ok(pre.chain, 'each record names its chain');
  const found = engine.traceRecord(pre.chain, pre.seq);
  const whole = JSON.parse(found.json);
  assert.strictEqual(whole.seq, pre.seq);
  assert.strictEqual(whole.event, 'PreToolUse');
  assert.strictEqual(whole.input_sha256.slice(0, 16), pre.call);
  // Where it is: the line at that offset of the chain's file is the record, and hashes as said.
  const file = fs.readFileSync(path.join(dir, '.orchestration/trace', `${found.chain}.jsonl`));
  const line = file.subarray(found.offset, file.indexOf(10, found.offset)).toString();
  assert.strictEqual(JSON.parse(line).seq, pre.seq);
  assert.strictEqual(require('crypto').createHash('sha256').update(line).digest('hex'), found.lineHash);
  assert.strictEqual(engine.traceRecord(pre.chain, 99), null);
  assert.strictEqual(engine.traceRecord('no-such-chain', 1), null);
  assert.throws(() => engine.traceRecord(pre.chain, 0), /whole number from 1/);
});

test('traceRecent sees records appended after its first read, by this engine or another one on the workspace', async () => {
  const { dir, engine } = await judged();
  assert.strictEqual(engine.traceRecent().length, 5);
  const other = binding.Engine.open(dir); // another engine on the workspace: its own writer and index
  other.evaluate('TurnStart', null, null, null, { sessionId: 'C' });
  other.flushTrace();
  assert.deepStrictEqual(brief(engine.traceRecent({ limit: 1 })), ['6 TurnStart - allow - C']);
  assert.deepStrictEqual(
    binding.Engine.open(fs.mkdtempSync(path.join(os.tmpdir(), 'chokepoint-ungoverned-'))).traceRecent(),
    [],
    'an ungoverned workspace has no records',
  );
});

test('traceBlame finds the write of a line after lines were inserted above it; typed lines have no origin', async () => {
  const { dir, engine } = await judged();
  const at = (line) => engine.traceBlame(FILE, line);
  assert.deepStrictEqual(at(2), { line: 2, text: '  return 1;', origin: at(2).origin });
  assert.strictEqual(at(2).origin.seq, 3);
  fs.writeFileSync(path.join(dir, FILE), `// typed by hand\n// and another\n${WRITTEN}`);
  const moved = at(4);
  assert.strictEqual(moved.text, '  return 1;');
  const { seq, intent, session, agent, tool, time } = moved.origin;
  assert.deepStrictEqual({ seq, intent, session, agent, tool }, { seq: 3, intent: 'INT-001', session: 'S', agent: 'claude-code', tool: 'write_to_file' });
  assert.strictEqual(time, engine.traceRecent({ limit: 3 })[2].time);
  assert.strictEqual(at(1).origin, undefined, 'a line typed by hand has no record');
  assert.strictEqual(at(1).text, '// typed by hand');
});

test('traceBlame throws a clear error for a bad path or line', async () => {
  const { engine } = await judged();
  assert.throws(() => engine.traceBlame(FILE, 9), /src\/auth\/session\.js has 3 lines; there is no line 9/);
  assert.throws(() => engine.traceBlame(FILE, 0), /`0` is not a line number/);
  assert.throws(() => engine.traceBlame(FILE, 1.5), /`1.5` is not a line number/);
  assert.throws(() => engine.traceBlame('../outside.js', 1), /is not a workspace-relative path/);
  assert.throws(() => engine.traceBlame('/etc/passwd', 1), /is not a workspace-relative path/);
  assert.throws(() => engine.traceBlame('src/auth/missing.js', 1), /reading .*missing\.js failed/);
});

test('a gate settles once its record is in the ledger, and the records before it (a turn, a tool result) are written with it, in order', async () => {
  const dir = sampleWorkspace();
  const engine = binding.Engine.open(dir);
  const lines = () => ledgerRecords(dir);
  // A turn's start gates nothing: it settles at once, its record held back for the next gate.
  const turn = await engine.evaluateAsync({ event: 'TurnStart', sessionId: 'S', turn: 1 });
  assert.strictEqual(turn.decision, 'allow');
  const gate = await engine.evaluateAsync({ event: 'PreToolUse', tool: 'select_active_intent', input: { intent_id: 'INT-001' }, sessionId: 'S' });
  assert.strictEqual(gate.decision, 'allow');
  // No flush: the gate's promise settled after its sync, which covered the turn's record too.
  assert.deepStrictEqual(
    lines().map((r) => `${r.seq} ${r.event}`),
    ['1 TurnStart', '2 PreToolUse'],
  );
  // A tool's result is reported at once; its record is durable before the next action is allowed.
  await engine.evaluateAsync({ event: 'PostToolUse', tool: 'select_active_intent', input: { intent_id: 'INT-001', result: { output: 'ok' } }, sessionId: 'S' });
  const next = await engine.evaluateAsync({ event: 'PreToolUse', tool: 'read_file', input: { path: 'README.md' }, sessionId: 'S' });
  assert.strictEqual(next.decision, 'allow');
  assert.deepStrictEqual(
    lines().map((r) => `${r.seq} ${r.event}`),
    ['1 TurnStart', '2 PreToolUse', '3 PostToolUse', '4 PreToolUse'],
  );
});

test('a PreToolUse that cannot be recorded is denied, on the fast path and on the asynchronous one', async () => {
  const dir = sampleWorkspace();
  // The ledger cannot be opened: its lock file's path is a folder.
  fs.mkdirSync(path.join(dir, '.orchestration/agent_trace.lock'));
  const engine = binding.Engine.open(dir);
  const select = await engine.evaluateAsync({ event: 'PreToolUse', tool: 'select_active_intent', input: { intent_id: 'INT-001' }, sessionId: 'S' });
  assert.strictEqual(select.decision, 'deny');
  assert.match(select.reason, /could not be recorded in the trace ledger/);
  // A host hook sends the chain down the asynchronous path; the answer is the same.
  engine.registerHostHook({ name: 'observer', events: ['PreToolUse'] }, async () => ({ decision: 'allow' }));
  const viaAsync = await engine.evaluateAsync({ event: 'PreToolUse', tool: 'read_file', input: { path: 'README.md' }, sessionId: 'S' });
  engine.close();
  assert.strictEqual(viaAsync.decision, 'deny');
  assert.match(viaAsync.reason, /could not be recorded in the trace ledger/);
});
