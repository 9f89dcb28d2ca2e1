// The webview message catalogue (protocol/messages.ts): what each side accepts from the other.
'use strict';
const { test } = require('node:test');
const assert = require('node:assert');
const path = require('path');
const esbuild = require('esbuild');

// The catalogue is TypeScript; bundle it for this process the way the extension and webview bundles do.
const { outputFiles } = esbuild.buildSync({
  entryPoints: [path.join(__dirname, '../../protocol/messages.ts')],
  bundle: true,
  platform: 'node',
  format: 'cjs',
  write: false,
});
const m = { exports: {} };
new Function('module', 'exports', 'require', outputFiles[0].text)(m, m.exports, require);
const { WebviewMessage, HostMessage, PROTOCOL_VERSION, MAX_PROMPT_CHARS, MAX_TRANSCRIPT_EVENTS, parseMessage } = m.exports;

const accepts = (schema, msg) => parseMessage(schema, msg).ok;

test('the host accepts the webview commands of the catalogue', () => {
  for (const msg of [
    { type: 'ready', protocol: PROTOCOL_VERSION },
    { type: 'request', id: 1, method: 'reloadConfiguration' },
    { type: 'command', command: 'showEngineInfo' },
    { type: 'openConfig', file: 'hooks', line: 5, column: 1 },
  ])
    assert.ok(accepts(WebviewMessage, msg), JSON.stringify(msg));
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
    // The trace is a tree view of the extension's own (protocol 7): the page neither filters nor
    // scopes it any more, so no message of its may try.
    { type: 'setTraceFilter', intent: 'INT-001' },
    { type: 'setTraceScope', scope: 'team' },
  ]) {
    const r = parseMessage(WebviewMessage, msg);
    assert.strictEqual(r.ok, false, JSON.stringify(msg));
    assert.ok(r.error.length > 0);
  }
});

test('the webview accepts engine state and responses, and refuses malformed ones', () => {
  const ready = {
    status: 'ready',
    version: '0.1.0',
    workspaceRoot: '/w',
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

test('the page is sent no trace: the Trace view is a tree of the extension', () => {
  const entry = { seq: 3, time: '2026-11-22T05:00:00.000Z', kind: 'tool_call', files: [] };
  assert.ok(!accepts(HostMessage, { type: 'trace', intent: null, scope: 'worktree', team: null, outcome: { ok: true, entries: [entry] } }));
});

test('the host accepts the task panel commands, and refuses malformed ones', () => {
  for (const msg of [
    { type: 'startTask', prompt: 'Harden the login flow', model: 'scripted:demo' },
    { type: 'startTask', prompt: 'x'.repeat(MAX_PROMPT_CHARS), model: 'openai:qwen2.5-coder:7b' },
    { type: 'runDemo' },
    { type: 'stopTask' },
  ])
    assert.ok(accepts(WebviewMessage, msg), JSON.stringify(msg).slice(0, 200));
  for (const msg of [
    { type: 'startTask', prompt: '', model: 'scripted:demo' },
    { type: 'startTask', prompt: '   \n ', model: 'scripted:demo' },
    { type: 'startTask', prompt: 'x'.repeat(MAX_PROMPT_CHARS + 1), model: 'scripted:demo' },
    { type: 'startTask', prompt: 'go', model: '' },
    { type: 'startTask', prompt: 'go' },
    { type: 'startTask', prompt: 42, model: 'scripted:demo' },
    { type: 'startTask', prompt: 'go', model: 'm'.repeat(301) },
  ])
    assert.strictEqual(parseMessage(WebviewMessage, msg).ok, false, JSON.stringify(msg).slice(0, 200));
  assert.strictEqual(MAX_PROMPT_CHARS, 20000);
});

// One event of each kind, as the runtime reports them (extension/src/runtime/types.ts).
const T = 'task-1';
const hook = (name, outcome, durationMs = 0.2) => ({ hook: name, outcome, durationMs });
const events = [
  { type: 'taskStarted', taskId: T, sessionId: 'S', prompt: 'Harden the login flow', model: 'scripted-demo' },
  { type: 'lifecycle', taskId: T, event: 'BeforeSubmit', decision: 'deny', hooks: [hook('tests', 'deny', 2393.2)] },
  { type: 'turnStarted', taskId: T, turn: 0 },
  { type: 'text', taskId: T, turn: 0, text: 'I will ' },
  {
    type: 'toolCall',
    taskId: T,
    turn: 2,
    callId: 'call_3_0',
    tool: 'write_to_file',
    arguments: '{"path":"src/billing/invoice.js"}',
    decision: 'deny',
    reason: 'outside the scope of INT-001',
    hooks: [hook('gatekeeper', 'deny')],
  },
  { type: 'toolCall', taskId: T, turn: 2, callId: 'c', tool: 'write_to_file', arguments: '{oops', decision: 'invalid', reason: 'not JSON', hooks: [] },
  { type: 'toolResult', taskId: T, turn: 2, callId: 'call_3_0', tool: 'write_to_file', ok: false, content: '{"error":"outside"}' },
  { type: 'piped', taskId: T, hook: 'lint', text: 'lint: src/auth/login.js: parses' },
  { type: 'compacted', taskId: T, beforeTokens: 30000, afterTokens: 12000, dropped: 4, summarized: 2 },
  { type: 'error', taskId: T, message: 'the endpoint answered 500' },
  { type: 'taskEnded', taskId: T, status: 'success', summary: 'done' },
  { type: 'taskEnded', taskId: T, status: 'cancelled' },
];

test('the webview accepts the task panel notifications: models, the transcript, each runtime event, the task state', () => {
  const choices = [
    { id: 'scripted:demo', label: 'Scripted demo model', detail: 'replays the demo script' },
    { id: 'openai:gpt-4o', label: 'gpt-4o' },
  ];
  assert.ok(accepts(HostMessage, { type: 'models', choices, selected: 'scripted:demo' }));
  assert.ok(accepts(HostMessage, { type: 'models', choices: [], selected: 'scripted:demo' }));
  for (const event of events) assert.ok(accepts(HostMessage, { type: 'runtime', event }), JSON.stringify(event));
  assert.ok(accepts(HostMessage, { type: 'transcript', events }));
  assert.ok(accepts(HostMessage, { type: 'transcript', events: [] }));
  assert.ok(accepts(HostMessage, { type: 'taskState', running: true }));
  assert.ok(accepts(HostMessage, { type: 'taskState', running: false, error: 'the engine is not running (failed); no task may run ungoverned' }));
});

test('the webview refuses malformed task panel notifications', () => {
  const [started, , , text, call, , result, , compacted, , ended] = events;
  for (const msg of [
    { type: 'models', choices: [{ id: 'scripted:demo' }], selected: 'scripted:demo' },
    { type: 'models', choices: [], selected: '' },
    { type: 'models', choices: [] },
    { type: 'runtime' },
    { type: 'runtime', event: { type: 'thought', taskId: T, text: 'hmm' } },
    { type: 'runtime', event: { ...started, sessionId: undefined } },
    { type: 'runtime', event: { ...text, turn: -1 } },
    { type: 'runtime', event: { ...text, turn: 0.5 } },
    { type: 'runtime', event: { ...call, decision: 'maybe' } },
    { type: 'runtime', event: { ...call, hooks: [{ hook: 'gatekeeper', outcome: 'deny' }] } },
    { type: 'runtime', event: { ...call, hooks: [hook('gatekeeper', 'deny', -1)] } },
    { type: 'runtime', event: { ...result, ok: 'no' } },
    { type: 'runtime', event: { ...compacted, afterTokens: '12k' } },
    { type: 'runtime', event: { ...ended, status: 'done' } },
    { type: 'transcript', events: [text, { type: 'html', html: '<img onerror=alert(1)>' }] },
    { type: 'transcript', events: Array.from({ length: MAX_TRANSCRIPT_EVENTS + 1 }, () => text) },
    { type: 'transcript' },
    { type: 'taskState' },
    { type: 'taskState', running: 'yes' },
    { type: 'taskState', running: false, error: 7 },
  ]) {
    const r = parseMessage(HostMessage, msg);
    assert.strictEqual(r.ok, false, JSON.stringify(msg).slice(0, 200));
    assert.ok(r.error.length > 0);
  }
});

test('the page neither lists sessions nor revokes a lease: the Sessions view is a tree of the extension', () => {
  // Protocol 9: a revocation is asked and confirmed in VS Code's own UI (the tree's Revoke Lease…),
  // so no message of the page may ask for one, and the host sends the page no sessions.
  for (const msg of [
    { type: 'revokeLease', session: 'claude:S1' },
    { type: 'revokeLease', session: 'claude:S1', reason: 'hands off' },
    { type: 'runCommand', command: 'chokepoint.connectVsCodeAgent' },
    { type: 'runCommand', command: 'chokepoint.setUpAgent' },
  ]) {
    assert.ok(!accepts(WebviewMessage, msg), JSON.stringify(msg));
  }
  const session = { sessionId: 'claude:S1', label: 'Claude Code', subagents: [], leaseIdle: false, actions: [], records: 0, allowed: 0, denied: 0 };
  for (const msg of [
    { type: 'sessions', outcome: { ok: true, sessions: [session] } },
    { type: 'sessions', outcome: { ok: false, error: 'the index is locked' } },
    { type: 'revokeResult', session: 'claude:S1', ok: true, revoked: true, message: 'revoked' },
  ]) {
    assert.ok(!accepts(HostMessage, msg), JSON.stringify(msg));
  }
});
