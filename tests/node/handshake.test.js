// The intent handshake's tools as the extension contributes them to VS Code's agent: package.json's
// `languageModelTools` must declare exactly the core's tools (names, what the model reads, input
// schemas), and the binding answers them from the workspace (read-only: the hook took the lease).
'use strict';
const { test, after } = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const os = require('os');
const path = require('path');

const ROOT = path.resolve(__dirname, '../..');
const binding = require(path.join(ROOT, 'native/node'));
const manifest = require(path.join(ROOT, 'package.json'));

const made = [];
after(() => made.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

function sample() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chokepoint-handshake-test-'));
  made.push(dir);
  fs.mkdirSync(path.join(dir, '.orchestration'));
  for (const f of ['hooks.yaml', 'active_intents.yaml']) fs.copyFileSync(path.join(ROOT, '.orchestration', f), path.join(dir, '.orchestration', f));
  return dir;
}

test("package.json declares the core's handshake tools, word for word", () => {
  const declared = manifest.contributes.languageModelTools.map((t) => ({ name: t.name, description: t.modelDescription, inputSchema: t.inputSchema }));
  const core = binding.handshakeTools().map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema }));
  assert.deepStrictEqual(declared, core, 'regenerate package.json contributes.languageModelTools from handshakeTools()');
  // The bare names: the hooks see the call under this name and take the lease for its session.
  assert.deepStrictEqual(
    core.map((t) => t.name),
    ['list_intents', 'select_active_intent', 'intent_context', 'scope_expansion_request'],
  );
});

test('the tools answer from the workspace: who holds an intent, and what to do when nobody does', () => {
  const ws = sample();
  const engine = binding.Engine.open(ws);
  const connect = 'CONNECT-HINT';
  const free = engine.handshakeTool('select_active_intent', { intent_id: 'INT-001' }, connect);
  assert.strictEqual(free.isError, true);
  assert.match(free.text, /No session holds intent `INT-001`/);
  assert.match(free.text, /CONNECT-HINT/);
  assert.match(free.text, /<intent_context>/);
  assert.strictEqual(engine.selectedIntent('vscode:s1'), null, 'the tool selects nothing itself');

  // What the hook does for the same call: the gatekeeper takes the lease for the chat session.
  const pre = engine.evaluate('PreToolUse', 'select_active_intent', null, { intent_id: 'INT-001' }, { sessionId: 'vscode:s1', agentId: 'vscode' });
  assert.strictEqual(pre.decision, 'allow', JSON.stringify(pre));
  const held = engine.handshakeTool('select_active_intent', { intent_id: 'INT-001' }, connect);
  assert.strictEqual(held.isError, false, held.text);
  assert.match(held.text, /held by session `vscode:s1`/);
  assert.strictEqual(held.structured.holder.session, 'vscode:s1');

  const list = engine.handshakeTool('list_intents', {}, connect);
  assert.deepStrictEqual(
    list.structured.intents.map((i) => i.id),
    ['INT-001', 'INT-002', 'INT-003'],
  );
  assert.match(engine.handshakeTool('intent_context', { intent_id: 'NOPE' }, connect).text, /valid ids are INT-001, INT-002, INT-003/);
  const bad = engine.handshakeTool('scope_expansion_request', { intent_id: 'INT-001' }, connect);
  assert.strictEqual(bad.isError, true);
  assert.match(bad.text, /missing field `paths`/);
  assert.match(engine.handshakeTool('delete_everything', {}, connect).text, /there is no tool `delete_everything`/);
});
