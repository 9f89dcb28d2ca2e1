// Policy replay through the binding, as the editor's "Replay the Trace Against This hooks.yaml" calls
// it: calls judged (and recorded) by this engine, a draft hooks.yaml with one rule changed, and
// `traceReplay` names exactly the decisions it flips, leaving the ledger's bytes as they were; a
// draft that does not load comes back as diagnostics with line and column, not a report.
'use strict';
const { test } = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const { ledgerLines } = require('../support/ledger');
const path = require('path');

const ROOT = path.resolve(__dirname, '../..');
const binding = require(path.join(ROOT, 'native/node'));
const support = require('../support/workspace');

const guard = (paths) => `hooks:\n  PreToolUse:\n    - name: guard\n      paths: ['${paths}']\n      deny:\n        reason: not by agents\n`;

function recorded() {
  const dir = support.sampleWorkspace(ROOT, { prefix: 'chokepoint-replay-test-', hooksYaml: guard('src/auth/secret/**') });
  const engine = binding.Engine.open(dir);
  const ids = { sessionId: 'S1', agentId: 'chokepoint' };
  const call = (tool, paths, input) => engine.evaluate('PreToolUse', tool, paths, input, ids).decision;
  assert.deepStrictEqual(
    [
      call('select_active_intent', [], { intent_id: 'INT-001' }),
      call('write_to_file', ['src/auth/login.js'], { path: 'src/auth/login.js', content: 'x' }),
      call('write_to_file', ['src/auth/secret/key.js'], { path: 'src/auth/secret/key.js', content: 'x' }),
      call('write_to_file', ['src/billing/invoice.js'], { path: 'src/billing/invoice.js', content: 'x' }),
    ],
    ['allow', 'allow', 'deny', 'deny'],
  );
  engine.flushTrace();
  // The session is over; the replay judges its writes with the intent each record holds.
  engine.releaseIntent('S1');
  return { dir, engine };
}

function draft(dir, text) {
  const folder = fs.mkdtempSync(path.join(dir, 'draft-'));
  fs.writeFileSync(path.join(folder, 'hooks.yaml'), text);
  return folder;
}

test('traceReplay names the decisions a changed rule flips, and appends nothing', async () => {
  const { dir, engine } = recorded();
  const ledger = ledgerLines(dir);
  const result = await engine.traceReplay({ config: draft(dir, `version: 1\n${guard('src/auth/login.js')}`) });
  assert.deepStrictEqual(result.diagnostics, []);
  const report = result.report;
  assert.deepStrictEqual(
    report.changes.map((c) => [c.paths, c.from, c.to, c.hook, c.intent, c.tool]),
    [
      [['src/auth/login.js'], 'allow', 'deny', 'guard', 'INT-001', 'write_to_file'],
      [['src/auth/secret/key.js'], 'deny', 'allow', 'guard', 'INT-001', 'write_to_file'],
    ],
  );
  assert.deepStrictEqual([report.replayed, report.unchanged], [4, 2]);
  assert.deepStrictEqual(
    report.groups.map((g) => [g.hook, g.intent, g.from, g.to, g.count]),
    [
      ['guard', 'INT-001', 'allow', 'deny', 1],
      ['guard', 'INT-001', 'deny', 'allow', 1],
    ],
  );
  assert.ok(report.changes[0].seq > 1 && typeof report.changes[0].time === 'string');
  assert.deepStrictEqual(ledgerLines(dir), ledger);
  assert.deepStrictEqual(engine.intentHolders(), [], 'the replay took no lease');
  engine.close();
});

test('a draft that does not load is its diagnostics, with line and column, and no report', async () => {
  const { dir, engine } = recorded();
  const folder = draft(dir, 'version: 1\nhooks:\n  PreToolUse:\n    - name: guard\n      priority: urgent\n');
  const result = await engine.traceReplay({ config: folder });
  assert.strictEqual(result.report, undefined);
  assert.deepStrictEqual(
    result.diagnostics.map((d) => [path.basename(d.file), d.line, d.column]),
    [['hooks.yaml', 5, 17]],
  );
  // A rejection's reason is typed unknown; the binding rejects with an Error.
  await assert.rejects(engine.traceReplay({ config: path.join(dir, 'nowhere') }), (/** @type {Error} */ e) => /is not a folder/.test(e.message));
  engine.close();
});
