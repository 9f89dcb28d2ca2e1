// The intent gatekeeper through the binding, as the extension drives it: the handshake on the
// synchronous entry, the lock shared with another process (the `chokepoint` CLI), the session's
// release, and an approved scope expansion.
'use strict';
const { test } = require('node:test');
const assert = require('node:assert');
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const ROOT = path.resolve(__dirname, '../..');
const binding = require(path.join(ROOT, 'native/node'));
const CLI = path.join(ROOT, 'target/release/chokepoint');
const support = require('../support/workspace');
const sampleWorkspace = () => support.sampleWorkspace(ROOT, { prefix: 'chokepoint-gate-test-' });

const ctx = (sessionId) => ({ sessionId });
const select = (engine, sessionId, intent) => engine.evaluate('PreToolUse', 'select_active_intent', null, { intent_id: intent }, ctx(sessionId));
const write = (engine, sessionId, p) => engine.evaluate('PreToolUse', 'write_to_file', [p], { path: p, content: 'x' }, ctx(sessionId));

test('a write before the handshake is refused; after it, the scope decides', () => {
  const engine = binding.Engine.open(sampleWorkspace());
  const before = write(engine, 'S', 'src/auth/login.js');
  assert.strictEqual(before.decision, 'deny');
  assert.match(before.reason, /call `select_active_intent` first; available intents: INT-001/);
  const handshake = select(engine, 'S', 'INT-001');
  assert.strictEqual(handshake.decision, 'allow');
  assert.match(handshake.additionalContext[0], /^<intent_context>\nid: INT-001\n/);
  assert.strictEqual(engine.selectedIntent('S'), 'INT-001');
  assert.strictEqual(write(engine, 'S', 'src/auth/login.js').decision, 'allow');
  const outside = write(engine, 'S', 'src/billing/invoice.js');
  assert.deepStrictEqual([outside.decision, outside.suggestedTool], ['deny', 'scope_expansion_request']);
  assert.match(write(engine, 'S', '.orchestration/hooks.yaml').reason, /governance file/);
});

test('the lock is shared with another process, and released when the session says so', () => {
  const dir = sampleWorkspace();
  const engine = binding.Engine.open(dir);
  assert.strictEqual(select(engine, 'ext-session', 'INT-002').decision, 'allow');
  // The CLI is another process on the same workspace.
  let err;
  try {
    execFileSync(CLI, ['intent', 'select', '--workspace', dir, '--session', 'cli-session', 'INT-002'], { stdio: 'pipe' });
  } catch (e) {
    err = e;
  }
  assert.strictEqual(err?.status, 1);
  assert.match(err.stderr.toString(), /intent `INT-002` is locked by session `ext-session`/);
  assert.deepStrictEqual(
    engine.intentHolders().map((h) => [h.intentId, h.sessionId]),
    [['INT-002', 'ext-session']],
  );
  assert.strictEqual(engine.releaseIntent('ext-session'), 1);
  execFileSync(CLI, ['intent', 'select', '--workspace', dir, '--session', 'cli-session', 'INT-002'], { stdio: 'pipe' });
  assert.strictEqual(select(engine, 'ext-session', 'INT-002').decision, 'deny');
});

test('an approved scope expansion opens the paths for that session; a bad one throws with the reason', () => {
  const engine = binding.Engine.open(sampleWorkspace());
  select(engine, 'S', 'INT-001');
  const ask = engine.evaluate(
    'PreToolUse',
    'scope_expansion_request',
    null,
    { intent_id: 'INT-001', paths: ['lib/auth/**'], justification: 'shared helper' },
    ctx('S'),
  );
  assert.strictEqual(ask.decision, 'ask');
  assert.strictEqual(write(engine, 'S', 'lib/auth/token.js').decision, 'deny');
  engine.approveScopeExpansion({ sessionId: 'S', intentId: 'INT-001', paths: ['lib/auth/**'], justification: 'shared helper', approvedBy: 'human' });
  assert.strictEqual(write(engine, 'S', 'lib/auth/token.js').decision, 'allow');
  assert.throws(
    () => engine.approveScopeExpansion({ sessionId: 'S', intentId: 'INT-001', paths: ['.orchestration/**'], justification: 'x', approvedBy: 'human' }),
    /governance/,
  );
});

test('runContained isolates a shell command: only its changes inside the scope land, and it says what it did', async () => {
  const dir = sampleWorkspace();
  fs.writeFileSync(path.join(dir, 'README.md'), 'original\n');
  const engine = binding.Engine.open(dir);
  select(engine, 'S', 'INT-001');
  const r = await engine.runContained({ sessionId: 'S', argv: ['sh', '-c', 'echo in > src/auth/new.js; echo out > README.md; echo done'], program: CLI });
  assert.strictEqual(fs.readFileSync(path.join(dir, 'README.md'), 'utf8'), 'original\n');
  assert.strictEqual(fs.readFileSync(path.join(dir, 'src/auth/new.js'), 'utf8'), 'in\n');
  assert.strictEqual(r.stdout, 'done\n');
  assert.strictEqual(r.isolated, true, 'this machine isolates commands (user namespaces and overlayfs)');
  assert.deepStrictEqual(r.allowed, [{ path: 'src/auth/new.js', kind: 'created' }]);
  // Its layer took the write (Landlock, where on, guards only what is outside the workspace): it
  // never landed, and the tool error names it.
  assert.deepStrictEqual(
    r.refused.map((c) => c.path),
    ['README.md'],
  );
  assert.match(r.toolError, /`README.md`: modified; not applied/);
  // Isolated, a program that does not exist is the command's failure, as a shell reports it.
  const missing = await engine.runContained({ sessionId: 'S', argv: ['/no/such/program'], program: CLI });
  assert.strictEqual(missing.exitCode, 127);
  // Without the program the command runs observed, and one that cannot start is an error.
  await assert.rejects(engine.runContained({ sessionId: 'S', argv: ['/no/such/program'] }), /cannot run the command contained/);
});

test("with Landlock off, an isolated command's change outside the scope never lands and is the tool error", async () => {
  const dir = sampleWorkspace();
  fs.appendFileSync(path.join(dir, '.orchestration/hooks.yaml'), 'gatekeeper:\n  landlock: off\n');
  fs.writeFileSync(path.join(dir, 'README.md'), 'original\n');
  const engine = binding.Engine.open(dir);
  select(engine, 'S', 'INT-001');
  const r = await engine.runContained({
    sessionId: 'S',
    argv: ['sh', '-c', "sed -i s/original/edited/ README.md && python3 -c \"open('stray.py','w').write('1')\""],
    program: CLI,
  });
  assert.strictEqual(r.confinement, 'unavailable');
  assert.strictEqual(fs.readFileSync(path.join(dir, 'README.md'), 'utf8'), 'original\n');
  assert.ok(!fs.existsSync(path.join(dir, 'stray.py')));
  assert.deepStrictEqual(r.refused.map((c) => `${c.path}:${c.kind}`).sort(), ['README.md:modified', 'stray.py:created']);
  assert.match(r.toolError, /outside the scope of intent `INT-001`[\s\S]*not applied[\s\S]*scope_expansion_request/);
});

test('observed (no program), a change outside the scope is kept and reported, never undone', async () => {
  const dir = sampleWorkspace();
  fs.appendFileSync(path.join(dir, '.orchestration/hooks.yaml'), 'gatekeeper:\n  landlock: off\n');
  fs.writeFileSync(path.join(dir, 'README.md'), 'original\n');
  const engine = binding.Engine.open(dir);
  select(engine, 'S', 'INT-001');
  const r = await engine.runContained({ sessionId: 'S', argv: ['sh', '-c', 'sed -i s/original/edited/ README.md'] });
  assert.strictEqual(r.isolated, false);
  assert.strictEqual(fs.readFileSync(path.join(dir, 'README.md'), 'utf8'), 'edited\n');
  assert.deepStrictEqual(
    r.unattributed.map((c) => `${c.path}:${c.kind}`),
    ['README.md:modified'],
  );
  assert.match(r.toolError, /cannot tell whether the command or someone else/);
});

test("the coordination state says this repository's own state without a team's database, and holders say their machine", () => {
  const engine = binding.Engine.open(sampleWorkspace());
  assert.deepStrictEqual({ ...engine.coordination() }, { mode: 'off' });
  assert.strictEqual(select(engine, 'M', 'INT-001').decision, 'allow');
  const [held] = engine.intentHolders();
  assert.strictEqual(typeof held.machine, 'string', 'a lease says the machine it was taken on');
  assert.ok(held.machine.length > 0);
});
