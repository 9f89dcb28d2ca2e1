// The built native addon, from Node: what the extension relies on, checked at the binding boundary.
'use strict';
const { test, after } = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const os = require('os');
const path = require('path');

const ROOT = path.resolve(__dirname, '../..');
const binding = require(path.join(ROOT, 'native/node'));
const cargoVersion = /^version = "([^"]+)"/m.exec(fs.readFileSync(path.join(ROOT, 'Cargo.toml'), 'utf8'))[1];

const made = [];
after(() => made.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

function workspace(files = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chokepoint-node-test-'));
  made.push(dir);
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

const sample = () =>
  workspace({
    '.orchestration/hooks.yaml': fs.readFileSync(path.join(ROOT, '.orchestration/hooks.yaml'), 'utf8'),
    '.orchestration/active_intents.yaml': fs.readFileSync(path.join(ROOT, '.orchestration/active_intents.yaml'), 'utf8'),
  });

test('version() is the crate version', () => {
  assert.strictEqual(binding.version(), cargoVersion);
});

test('an engine opened on the sample reports its configuration as plain objects', () => {
  const dir = sample();
  const info = binding.Engine.open(dir).info();
  assert.deepStrictEqual(
    {
      version: info.version,
      root: info.workspaceRoot,
      hooks: info.hooks.status,
      count: info.hookCount,
      events: info.events,
      intents: info.intentIds,
      diagnostics: info.diagnostics,
    },
    {
      version: cargoVersion,
      root: dir,
      hooks: 'loaded',
      count: 3,
      events: ['PostToolUse', 'BeforeSubmit'],
      intents: ['INT-001', 'INT-002', 'INT-003'],
      diagnostics: [],
    },
  );
  assert.strictEqual(info.hooks.path, path.join(dir, '.orchestration/hooks.yaml'));
});

test('a workspace without .orchestration opens with both files missing', () => {
  const info = binding.Engine.open(workspace()).info();
  assert.deepStrictEqual([info.hooks.status, info.intents.status, info.hookCount], ['missing', 'missing', 0]);
});

test('invalid YAML is data (file, line, column), not an exception, and the last good config stays', () => {
  const dir = sample();
  const engine = binding.Engine.open(dir);
  const file = path.join(dir, '.orchestration/active_intents.yaml');
  fs.writeFileSync(file, 'version: 1\nactive_intents:\n  - id: INT-009\n    name: x\n    status: DREAMING\n');
  assert.strictEqual(engine.reload(), 1);
  const info = engine.info();
  assert.strictEqual(info.intents.status, 'invalid');
  assert.deepStrictEqual(info.intentIds, ['INT-001', 'INT-002', 'INT-003']);
  const [d] = info.diagnostics;
  assert.deepStrictEqual([d.file, d.line, d.column, d.code], [file, 5, 13, 'yaml']);
  assert.match(d.message, /unknown variant `DREAMING`/);
});

test('evaluate() answers an event synchronously with a decision as a plain object', () => {
  const engine = binding.Engine.open(sample());
  const r = engine.evaluate('PreToolUse', 'read_file', ['src/a.js'], { path: 'src/a.js' });
  // A plain allow crosses back as one field: every napi value costs, and nothing else happened.
  assert.deepStrictEqual({ ...r }, { decision: 'allow' });
});

test('evaluate() refuses, loudly, a chain whose hooks must run as processes', () => {
  // The sample's PostToolUse hook `lint` is a command: the synchronous path must not skip it.
  const engine = binding.Engine.open(sample());
  assert.throws(() => engine.evaluate('PostToolUse', 'write_to_file', null, {}), /hook `lint` is a command hook and cannot run on the synchronous path/);
});

test('an input that is not JSON-shaped (a cycle, nesting past 128 levels) is refused, not a crash of the host', () => {
  const engine = binding.Engine.open(sample());
  const cyclic = { path: 'src/a.js' };
  cyclic.self = cyclic;
  let deep = {};
  for (let i = 0; i < 10000; i++) deep = { a: deep };
  for (const input of [cyclic, deep]) {
    // The binding throws napi's Errors, which carry a code (a validator's argument is typed unknown).
    assert.throws(
      () => engine.evaluate('PreToolUse', 'write_to_file', ['src/a.js'], input),
      (/** @type {Error & { code?: string }} */ e) => e.code === 'EINVAL' && /the input cannot be judged: .*at most 128 levels deep/.test(e.message),
    );
    // napi converts the event object before our code runs: its own error, with napi's status as code.
    assert.throws(
      () => engine.evaluateAsync({ event: 'PreToolUse', tool: 'write_to_file', paths: ['src/a.js'], input }),
      /Exceeded maximum JSON nesting depth on JsEvent.input/,
    );
  }
  // The engine judges on afterwards.
  assert.strictEqual(engine.evaluate('PreToolUse', 'read_file', ['src/a.js'], { path: 'src/a.js' }).decision, 'allow');
});

test('misuse throws: an unknown event name, a workspace that does not exist', () => {
  const engine = binding.Engine.open(sample());
  assert.throws(() => engine.evaluate('PreToolUze'), /unknown event `PreToolUze`/);
  assert.throws(() => binding.Engine.open(path.join(os.tmpdir(), 'no-such-chokepoint-workspace')), /cannot open workspace/);
});

test('errors carry a code that says which domain refused: EINVAL, ELEDGER, ESCOPE, EENGINE', () => {
  const engine = binding.Engine.open(sample());
  const code = (f) => {
    try {
      f();
    } catch (e) {
      return e.code;
    }
    return 'no error';
  };
  assert.strictEqual(
    code(() => engine.evaluate('PreToolUze')),
    'EINVAL',
  );
  assert.strictEqual(
    code(() => engine.traceRecent({ since: 'yesterday' })),
    'ELEDGER',
  );
  assert.strictEqual(
    code(() => engine.approveScopeExpansion({ sessionId: 'S', intentId: 'INT-001', paths: ['.orchestration/**'], justification: 'x', approvedBy: 'human' })),
    'ESCOPE',
  );
  assert.strictEqual(
    code(() => engine.evaluate('PostToolUse', 'write_to_file', null, {})),
    'EENGINE',
  );
  assert.strictEqual(
    code(() => engine.openAsk({ event: 'SessionStart', input: {} })),
    'EINVAL',
  );
});
