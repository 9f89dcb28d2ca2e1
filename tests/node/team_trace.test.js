// The team's trace through the binding, against a real PostgreSQL server: the extension's engine copies
// its records to the team's database in the background (woken by the ledger, not on a timer), and
// `traceTeam` lists them with the machine and worktree that wrote them; without a team database it
// throws, saying how to configure one, and `teamCopyStatus` is null.
'use strict';
const { test } = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const os = require('os');
const path = require('path');

const ROOT = path.resolve(__dirname, '../..');
const binding = require(path.join(ROOT, 'native/node'));
const postgres = require('../support/postgres');

function workspace(hooks) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chokepoint-team-trace-'));
  fs.mkdirSync(path.join(dir, '.orchestration'));
  fs.writeFileSync(path.join(dir, '.orchestration/hooks.yaml'), hooks);
  return dir;
}

async function until(what, check, ms = 4000) {
  const began = Date.now();
  for (;;) {
    if (await check()) return;
    if (Date.now() - began > ms) assert.fail(`${what} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test("the extension's engine copies its records to the team's database, and traceTeam lists them with machine and worktree", async () => {
  const server = await postgres.start();
  Object.assign(process.env, server.env(), { CHOKEPOINT_MACHINE: 'node-test' });
  try {
    const dir = workspace('version: 1\ncoordination:\n  repository: example.com/acme/web\n');
    const engine = binding.Engine.open(dir);
    const status = engine.teamCopyStatus();
    assert.ok(status, 'a team database is configured');
    assert.strictEqual(status.machine, 'node-test');
    assert.ok(status.database.includes(`127.0.0.1:${server.port}`), status.database);
    const read = await engine.evaluateAsync({ event: 'PreToolUse', tool: 'read_file', input: { path: 'a.txt' }, paths: ['a.txt'], sessionId: 'S' });
    assert.strictEqual(read.decision, 'allow');
    engine.flushTrace();
    // Nobody asked for the team's trace: the live engine's copier did it, woken by the durable batch.
    await until(
      'the record copied in the background',
      async () => (await server.psql('select count(*) from chokepoint.ledger_records').catch(() => '0')) === '1',
    );
    assert.strictEqual(engine.teamCopyStatus().waiting, 0);
    const trace = engine.traceTeam({ limit: 10 });
    assert.strictEqual(trace.copyError, undefined);
    assert.deepStrictEqual(
      trace.entries.map((e) => [e.machine, e.worktree, e.record.event, e.record.tool, e.record.decision, e.record.session]),
      [['node-test', path.basename(dir), 'PreToolUse', 'read_file', 'allow', 'S']],
    );
  } finally {
    delete process.env.CHOKEPOINT_COORDINATION_URL;
    delete process.env.CHOKEPOINT_MACHINE;
    await server.stop({ remove: true });
  }
});

test('without a team database, traceTeam throws saying how to configure one', () => {
  const engine = binding.Engine.open(workspace('version: 1\n'));
  assert.strictEqual(engine.teamCopyStatus(), null);
  // The binding throws napi's Errors, which carry a code (a validator's argument is typed unknown).
  assert.throws(
    () => engine.traceTeam(),
    (/** @type {Error & { code?: string }} */ e) => e.code === 'EINVAL' && /coordination\.url/.test(e.message),
  );
});
