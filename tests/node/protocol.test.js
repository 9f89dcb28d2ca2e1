// The webview message catalogue (protocol/messages.ts): what each side accepts from the other.
'use strict';
const { test } = require('node:test');
const assert = require('node:assert');
const path = require('path');
const esbuild = require('esbuild');

// The catalogue is TypeScript; bundle it for this process the way the extension and webview bundles do.
const { outputFiles } = esbuild.buildSync({ entryPoints: [path.join(__dirname, '../../protocol/messages.ts')], bundle: true, platform: 'node', format: 'cjs', write: false });
const m = { exports: {} };
new Function('module', 'exports', 'require', outputFiles[0].text)(m, m.exports, require);
const { WebviewMessage, HostMessage, PROTOCOL_VERSION, parseMessage } = m.exports;

const accepts = (schema, msg) => parseMessage(schema, msg).ok;

test('the host accepts the webview commands of the catalogue', () => {
  for (const msg of [
    { type: 'ready', protocol: PROTOCOL_VERSION },
    { type: 'request', id: 1, method: 'reloadConfiguration' },
    { type: 'command', command: 'showEngineInfo' },
    { type: 'openConfig', file: 'hooks', line: 5, column: 1 },
    { type: 'setTraceFilter', intent: 'INT-001' },
    { type: 'setTraceFilter', intent: null },
  ]) assert.ok(accepts(WebviewMessage, msg), JSON.stringify(msg));
});

test('the host refuses anything else from the webview, with a reason', () => {
  for (const msg of [
    null,
    'ready',
    { type: 'exec', command: 'rm -rf /' },
    { type: 'request', id: 1, method: 'deleteEverything' },
    { type: 'request', id: -1, method: 'reloadConfiguration' },
    { type: 'command', command: 'workbench.action.terminal.new' },
    // The page may only open the two governance files, never a path of its choosing.
    { type: 'openConfig', file: '/etc/passwd', line: 1, column: 1 },
    { type: 'openConfig', file: 'hooks', line: 1.5, column: 1 },
    { type: 'setTraceFilter' },
    { type: 'setTraceFilter', intent: '' },
    { type: 'setTraceFilter', intent: 7 },
  ]) {
    const r = parseMessage(WebviewMessage, msg);
    assert.strictEqual(r.ok, false, JSON.stringify(msg));
    assert.ok(r.error.length > 0);
  }
});

test('the webview accepts engine state and responses, and refuses malformed ones', () => {
  const ready = {
    status: 'ready', version: '0.1.0', workspaceRoot: '/w',
    hooks: { path: '/w/.orchestration/hooks.yaml', status: 'loaded', hookCount: 1, events: ['PreToolUse'], taskTypes: [] },
    intents: { path: '/w/.orchestration/active_intents.yaml', status: 'missing', ids: [] },
    diagnostics: [],
  };
  assert.ok(accepts(HostMessage, { type: 'state', state: ready }));
  assert.ok(accepts(HostMessage, { type: 'state', state: { status: 'failed', error: 'x', lookedFor: '/x.node' } }));
  assert.ok(accepts(HostMessage, { type: 'response', id: 3, outcome: { ok: true, result: { diagnostics: 0, reloadedAt: 'now' } } }));
  assert.ok(accepts(HostMessage, { type: 'response', id: 3, outcome: { ok: false, error: 'boom' } }));
  assert.ok(!accepts(HostMessage, { type: 'state', state: { ...ready, hooks: { ...ready.hooks, status: 'fine' } } }));
  assert.ok(!accepts(HostMessage, { type: 'response', id: 3, outcome: { ok: true } }));
  assert.ok(!accepts(HostMessage, { type: 'html', html: '<img onerror=alert(1)>' }));
});

test('the webview accepts trace notifications and refuses malformed ones', () => {
  const entry = {
    seq: 3, time: '2026-11-22T05:00:00.000Z', kind: 'tool_call', event: 'PostToolUse', tool: 'write_to_file', session: 'S',
    intent: 'INT-001', decision: 'allow', files: [{ path: 'src/a.js', ranges: [{ start: 1, end: 3 }] }],
  };
  assert.ok(accepts(HostMessage, { type: 'trace', intent: null, outcome: { ok: true, entries: [entry] } }));
  assert.ok(accepts(HostMessage, { type: 'trace', intent: 'INT-001', outcome: { ok: true, entries: [] } }));
  assert.ok(accepts(HostMessage, { type: 'trace', intent: null, outcome: { ok: false, error: 'the index is locked' } }));
  assert.ok(!accepts(HostMessage, { type: 'trace', outcome: { ok: true, entries: [] } }), 'the filter it applies is always said');
  assert.ok(!accepts(HostMessage, { type: 'trace', intent: null, outcome: { ok: true, entries: [{ ...entry, seq: 0 }] } }));
  assert.ok(!accepts(HostMessage, { type: 'trace', intent: null, outcome: { ok: true, entries: [{ ...entry, files: [{ path: 'a' }] }] } }));
  assert.ok(!accepts(HostMessage, { type: 'trace', intent: null, outcome: { ok: true } }));
});
