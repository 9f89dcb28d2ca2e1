// An external agent's ask decided by a person outside VS Code: the real Claude Code CLI (driven by the
// scripted Anthropic server) writes a file that hooks.yaml asks about; `chokepoint serve` is up, so the
// hook opens a Pending on that live engine and waits; the test decides it with
// `chokepoint approvals approve`, as a person at another terminal would. The write then runs, and the
// ledger records the approval with who gave it.
'use strict';
const assert = require('node:assert/strict');
const { describe, it, before, after } = require('node:test');
const { spawn, spawnSync } = require('child_process');
const fs = require('fs');
const { ledgerRecords } = require('../support/ledger');
const os = require('os');
const path = require('path');
const { ensureAgents } = require('../../scripts/agents');
const { CLIENTS, runAgent, makeWorkspace, PROGRAM } = require('./support/clients');

const INTENTS = `version: 1
active_intents:
  - id: INT-SRC
    name: Sources
    status: IN_PROGRESS
    owned_scope: ['src/**']
`;

const ASK = `version: 1
hooks:
  PreToolUse:
    - name: confirm-writes
      tool: Write
      ask: a person confirms every write
`;

function chokepoint(args, env) {
  return spawnSync(PROGRAM, args, { encoding: 'utf8', env: { ...process.env, ...env } });
}

function ledger(ws) {
  return ledgerRecords(ws);
}

/** Starts `chokepoint serve` and resolves once it says it serves. */
function serve(ws, env) {
  const child = spawn(PROGRAM, ['serve', '--workspace', ws], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let said = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`chokepoint serve did not start: ${said}`)), 20000);
    child.stderr.on('data', (d) => {
      said += d;
      if (said.includes('serving ')) {
        clearTimeout(timer);
        resolve(child);
      }
    });
    child.on('exit', (code) => reject(new Error(`chokepoint serve exited ${code}: ${said}`)));
  });
}

before(async () => {
  assert.ok(fs.existsSync(PROGRAM), `${PROGRAM} is missing: the agents layer builds it (npm run build)`);
  await ensureAgents({ only: ['claude'] });
});

describe('claude: an ask decided with chokepoint approvals', () => {
  let ws;
  let runtime;
  let server;
  let s;
  let seen;
  let approved;
  before(async () => {
    ws = makeWorkspace('claude-approvals');
    fs.mkdirSync(path.join(ws, '.orchestration'), { recursive: true });
    fs.mkdirSync(path.join(ws, 'src'));
    fs.writeFileSync(path.join(ws, '.orchestration/active_intents.yaml'), INTENTS);
    fs.writeFileSync(path.join(ws, '.orchestration/hooks.yaml'), ASK);
    const init = chokepoint(['init', '--agent', 'claude', '--workspace', ws]);
    assert.equal(init.status, 0, init.stderr);
    // The live engine's socket folder, shared by the server, the agent's hooks and the test.
    runtime = fs.mkdtempSync(path.join(os.tmpdir(), 'chokepoint-run-'));
    fs.chmodSync(runtime, 0o700);
    const env = { XDG_RUNTIME_DIR: runtime };
    server = await serve(ws, env);

    const t = CLIENTS.claude.tools;
    const script = [
      ...t.mcp('select_active_intent', { intent_id: 'INT-SRC' }),
      { tools: [t.write(ws, 'src/asked.txt', 'approved content\n')] },
      { text: 'Done.' },
    ];
    const model = await CLIENTS.claude.startServer({ script });
    // The person: looks at the open Pendings until the write's shows up, then approves it.
    let deciding = true;
    const person = (async () => {
      while (deciding) {
        const list = chokepoint(['approvals', 'list', '--json', '--workspace', ws], env);
        const open = list.status === 0 ? JSON.parse(list.stdout) : [];
        if (open.length) {
          seen = open[0];
          approved = chokepoint(['approvals', 'approve', seen.id, '--note', 'checked by the test', '--workspace', ws], env);
          return;
        }
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    try {
      const r = await runAgent('claude', { workspace: ws, prompt: 'Do as scripted.', serverUrl: model.url, timeoutMs: 120000, env });
      s = { r, results: model.toolResults() };
    } finally {
      deciding = false;
      await person;
      await model.close();
    }
  });
  after(() => {
    if (server) server.kill('SIGTERM');
    for (const dir of [ws, runtime]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('ends the session', () => {
    assert.equal(s.r.timedOut, false, `timed out; stderr: ${s.r.stderr.slice(-800)}`);
    assert.equal(s.r.code, 0, `exit code ${s.r.code}; stderr: ${s.r.stderr.slice(-800)}`);
  });

  it('opens a Pending on the live engine that names the agent, the session and the write', () => {
    assert.ok(seen, 'no Pending was opened while the hook waited');
    assert.equal(seen.kind, 'tool_call');
    assert.equal(seen.subject.agent, 'claude');
    assert.ok(seen.session_id.startsWith('claude:'), seen.session_id);
    assert.equal(seen.subject.tool, 'Write');
    assert.equal(seen.subject.input.content, 'approved content\n');
    assert.deepEqual(seen.subject.paths, ['src/asked.txt']);
    assert.equal(approved.status, 0, approved.stderr);
  });

  it('runs the write once approved', () => {
    assert.equal(fs.readFileSync(path.join(ws, 'src/asked.txt'), 'utf8'), 'approved content\n');
  });

  it('records the approval in the ledger with who gave it', () => {
    const decided = ledger(ws).filter((r) => r.kind === 'approval' && r.data.phase === 'decision');
    assert.equal(decided.length, 1, JSON.stringify(decided));
    assert.equal(decided[0].data.pending_id, seen.id);
    assert.equal(decided[0].data.status, 'approved');
    assert.match(decided[0].data.decided_by, /^cli:/);
    assert.equal(decided[0].session, seen.session_id);
    const verified = chokepoint(['trace', 'verify', '--workspace', ws]);
    assert.equal(verified.status, 0, verified.stderr);
  });
});
