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
