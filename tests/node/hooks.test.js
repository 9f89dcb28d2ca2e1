// The hook chain through the binding: the Promise entry with command hooks, host hooks written in
// JavaScript, rewrite-then-validate across kinds, and piped output waiting for the next turn.
'use strict';
const { test, after } = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const os = require('os');
const path = require('path');

const binding = require(path.resolve(__dirname, '../../native/node'));
const made = [];
const engines = [];
after(() => {
  // Registered host hooks keep Node running (by design: answers are awaited); release them.
  engines.forEach((e) => e.close());
  made.forEach((d) => fs.rmSync(d, { recursive: true, force: true }));
});

function engineWith(hooksYaml) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chokepoint-hooks-test-'));
  made.push(dir);
  fs.mkdirSync(path.join(dir, '.orchestration'));
  fs.writeFileSync(path.join(dir, '.orchestration/hooks.yaml'), hooksYaml);
  const engine = binding.Engine.open(dir);
  engines.push(engine);
  assert.deepStrictEqual(engine.info().diagnostics, []);
  return { dir, engine };
}

const write = (p, content = 'x') => ({ event: 'PreToolUse', tool: 'write_to_file', input: { path: p, content }, paths: [p], sessionId: 'S' });
const ran = (r) => (r.outcomes ?? []).map((o) => `${o.hook}:${o.outcome}`);

test('evaluateAsync runs command hooks and resolves with the decision', async () => {
  const { engine } = engineWith(
    'version: 1\nhooks:\n  PreToolUse:\n    - name: no-env-files\n      priority: critical\n      paths: ["**/.env"]\n      command: [sh, -c, "echo secrets stay out >&2; exit 2"]\n',
  );
  const denied = await engine.evaluateAsync(write('config/.env'));
  assert.strictEqual(denied.decision, 'deny');
  assert.strictEqual(denied.reason, 'secrets stay out');
  assert.deepStrictEqual(ran(denied), ['no-env-files:deny']);
  const allowed = await engine.evaluateAsync(write('src/a.js'), { outcomes: 'all' });
  // The engine's own gatekeeper runs first in every PreToolUse chain (no intents here: it only guards
  // the governance files), then the configured hook, whose path matcher does not match.
  assert.deepStrictEqual([allowed.decision, ran(allowed)], ['allow', ['gatekeeper:allow']]);
});

test('a host hook written in JavaScript gates, and runs before configured hooks of its priority', async () => {
  const { engine } = engineWith('version: 1\nhooks:\n  PreToolUse:\n    - name: yaml-gate\n      priority: critical\n      command: ["true"]\n');
  engine.registerHostHook({ name: 'js-gate', events: ['PreToolUse'], priority: 'critical', tool: 'write_to_file' }, async (event) =>
    event.paths.includes('secret.txt') ? { decision: 'deny', reason: 'not that file', suggestedTool: 'scope_expansion_request' } : { decision: 'allow' },
  );
  const denied = await engine.evaluateAsync(write('secret.txt'));
  assert.deepStrictEqual([denied.decision, denied.reason, denied.suggestedTool], ['deny', 'not that file', 'scope_expansion_request']);
  assert.deepStrictEqual(ran(denied), ['js-gate:deny']);
  const allowed = await engine.evaluateAsync(write('ok.txt'), { outcomes: 'all' });
  assert.deepStrictEqual(ran(allowed), ['gatekeeper:allow', 'js-gate:allow', 'yaml-gate:allow']);
  // By default only the deciding outcomes cross back: a plain allow has none.
  assert.strictEqual((await engine.evaluateAsync(write('ok.txt'))).outcomes, undefined);
});

test('a host hook that throws fails closed when it is a gate, and never crashes the host', async () => {
  const { engine } = engineWith('version: 1\n');
  engine.registerHostHook({ name: 'buggy', events: ['PreToolUse'], priority: 'critical' }, async () => {
    throw new Error('gate bug');
  });
  const r = await engine.evaluateAsync(write('a.txt'));
  assert.strictEqual(r.decision, 'deny');
  assert.match(r.reason, /hook `buggy` failed: .*gate bug.*; it fails closed/);
});

test("a host hook's spec names its failure mode: a low hook told to fail closed denies, one left to its default does not", async () => {
  const { engine } = engineWith('version: 1\n');
  const fail = async () => {
    throw new Error('bug');
  };
  engine.registerHostHook({ name: 'lenient', events: ['PreToolUse'], priority: 'low' }, fail);
  engine.registerHostHook({ name: 'strict', events: ['PreToolUse'], tool: 'strict_tool', priority: 'low', failure: 'closed' }, fail);
  const ours = (r) => ran(r).filter((o) => /^(lenient|strict):/.test(o));
  const lenient = await engine.evaluateAsync(write('a.txt'), { outcomes: 'all' });
  assert.deepStrictEqual([lenient.decision, ours(lenient)], ['allow', ['lenient:failed_open']]);
  const strict = await engine.evaluateAsync({ ...write('a.txt'), tool: 'strict_tool' }, { outcomes: 'all' });
  assert.deepStrictEqual([strict.decision, ours(strict)], ['deny', ['lenient:failed_open', 'strict:failed_closed']]);
});

test('a rewrite by a host hook is what the next command hook sees (rewrite, then validate)', async () => {
  const { dir, engine } = engineWith('version: 1\nhooks:\n  PreToolUse:\n    - name: validator\n      command: [sh, -c, "cat > seen.json"]\n');
  engine.registerHostHook({ name: 'normalise', events: ['PreToolUse'], priority: 'high' }, async (event) => ({
    decision: 'modify',
    modified: { ...event.input, path: event.input.path.replace(/^\.\//, '') },
  }));
  const r = await engine.evaluateAsync(write('./src/a.js'));
  assert.deepStrictEqual(r.modified, { path: 'src/a.js', content: 'x' });
  assert.deepStrictEqual(JSON.parse(fs.readFileSync(path.join(dir, 'seen.json'), 'utf8')).tool_input, { path: 'src/a.js', content: 'x' });
});

test('piped output of a turn waits in the session queue for the next turn', async () => {
  const { engine } = engineWith('version: 1\nhooks:\n  TurnEnd:\n    - name: lint\n      command: [echo, 2 lint errors]\n      pipe_output: true\n');
  const r = await engine.evaluateAsync({ event: 'TurnEnd', sessionId: 'S1' });
  assert.deepStrictEqual(r.piped, [{ hook: 'lint', text: '2 lint errors' }]);
  assert.deepStrictEqual(engine.drainPiped('S1'), [{ hook: 'lint', text: '2 lint errors' }]);
  assert.deepStrictEqual(engine.drainPiped('S1'), []);
});

test("the synchronous entry reads the input once, for the digest the trace records, and not for a hook's own question", () => {
  const { engine } = engineWith(
    'version: 1\nhooks:\n  PreToolUse:\n    - name: env\n      priority: critical\n      paths: ["**/.env"]\n      deny: { reason: "no secrets" }\n',
  );
  let reads = 0;
  const input = {
    get content() {
      reads++;
      return 'x';
    },
  };
  const r = engine.evaluate('PreToolUse', 'write_to_file', ['a/.env'], input);
  assert.deepStrictEqual([r.decision, r.reason, ran(r)], ['deny', 'no secrets', ['env:deny']]);
  assert.ok(r.outcomes[0].durationNs > 0);
  assert.strictEqual(reads, 1, 'a governed workspace records every call with the digest of its input');
  assert.throws(
    () => engine.evaluate('PreToolUse', 'write_to_file', ['a/.env'], input, null, { outcomes: 'sometimes' }),
    /unknown outcomes option `sometimes`; use deciding, all or none/,
  );
  for (const outcomes of ['deciding', 'all', 'none']) {
    assert.strictEqual(engine.evaluate('PreToolUse', 'write_to_file', ['a/.env'], input, null, { outcomes }).decision, 'deny');
  }
  // Context travels too: an event raised at hook depth 1 runs no hooks, is not recorded, and its
  // input is never converted.
  reads = 0;
  assert.strictEqual(engine.evaluate('PreToolUse', 'write_to_file', ['a/.env'], input, { hookDepth: 1 }).reentered, true);
  assert.strictEqual(reads, 0);
});

test('misuse throws: a host hook spec with an unknown priority, failure mode or event', () => {
  const { engine } = engineWith('version: 1\n');
  // The names are the core's (`names!`), read back by the same arms that write them.
  assert.throws(
    () => engine.registerHostHook({ name: 'x', events: ['PreToolUse'], priority: 'urgent' }, async () => ({ decision: 'allow' })),
    /unknown priority `urgent`; use critical, high, normal or low/,
  );
  assert.throws(
    () => engine.registerHostHook({ name: 'x', events: ['PreToolUse'], failure: 'sometimes' }, async () => ({ decision: 'allow' })),
    /unknown failure mode `sometimes`; use closed or open/,
  );
  assert.throws(() => engine.registerHostHook({ name: 'x', events: ['BeforeLunch'] }, async () => ({ decision: 'allow' })), /unknown event `BeforeLunch`/);
});

test('watch() reloads after an edit on disk and reports the problems of that reload', async () => {
  const { dir, engine } = engineWith('version: 1\n');
  const reloads = [];
  let notify;
  const watch = engine.watch((problems) => {
    reloads.push(problems);
    notify?.();
  });
  const next = () =>
    new Promise((resolve, reject) => {
      notify = resolve;
      setTimeout(() => reject(new Error('no reload within 10 s')), 10000).unref();
    });
  try {
    let reloaded = next();
    fs.writeFileSync(path.join(dir, '.orchestration/hooks.yaml'), 'version: 1\nhooks:\n  TurnEnd:\n    - name: added\n      command: ["true"]\n');
    await reloaded;
    assert.deepStrictEqual([reloads.at(-1), engine.info().hookCount], [0, 1]);
    reloaded = next();
    fs.writeFileSync(path.join(dir, '.orchestration/hooks.yaml'), 'version: 1\nhooks: [\n');
    await reloaded;
    assert.deepStrictEqual([reloads.at(-1), engine.info().hookCount, engine.info().hooks.status], [1, 1, 'invalid']);
  } finally {
    watch.close();
  }
});

test('a host hook that asks the engine about the event it was given does not re-enter the hooks', async () => {
  const { engine } = engineWith('version: 1\n');
  let calls = 0;
  let inner;
  engine.registerHostHook({ name: 'curious', events: ['PreToolUse'] }, async (event) => {
    calls++;
    inner = await engine.evaluateAsync(event); // without the guard this would recurse forever
    return { decision: 'allow' };
  });
  const outer = await engine.evaluateAsync(write('a.txt'), { outcomes: 'all' });
  assert.deepStrictEqual([calls, outer.decision, ran(outer)], [1, 'allow', ['gatekeeper:allow', 'curious:allow']]);
  // The hook ran during outer's evaluation (calls is 1), so inner is set.
  assert.strictEqual(/** @type {import('../../native/node').Evaluation} */ (inner).reentered, true);
});
