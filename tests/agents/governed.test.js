// The real agent CLIs governed by Chokepoint: hooks written by `chokepoint init --agent <a>`, every
// hook answered by `chokepoint hook` (the release build), the handshake through `chokepoint mcp`.
// Per client, one scripted session: a write before the handshake (denied, with the next step), the
// intent selected through the MCP tool, a write in scope (allowed and recorded), a write out of scope
// (denied, the file unchanged, the reason in the model's next request), a shell write out of scope
// (contained and reported), an intent another session holds (refused); where the client has
// sub-agents (Claude Code, Copilot CLI, Gemini CLI) a sub-agent's write (governed under the session's
// intent, recorded as the sub-agent's where the input says it is one); and a second session with a
// hooks.yaml that does not load (every write denied, naming the file, line and column).
'use strict';
const assert = require('node:assert/strict');
const { describe, it, before, after } = require('node:test');
const { spawnSync } = require('child_process');
const fs = require('fs');
const { ledgerRecords } = require('../support/ledger');
const path = require('path');
const { ensureAgents } = require('../../scripts/agents');
const { CLIENTS, runAgent, makeWorkspace, PROGRAM, CHOSEN } = require('./support/clients');

const INTENTS = `version: 1
active_intents:
  - id: INT-SRC
    name: Sources
    status: IN_PROGRESS
    owned_scope: ['src/**']
  - id: INT-DOCS
    name: Documentation
    status: IN_PROGRESS
    owned_scope: ['docs/**']
`;

function chokepoint(args) {
  const r = spawnSync(PROGRAM, args, { encoding: 'utf8' });
  assert.equal(r.status, 0, `chokepoint ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** A governed workspace with `name`'s hooks and MCP server written by `chokepoint init`. */
function governedWorkspace(name) {
  const ws = makeWorkspace(name);
  fs.mkdirSync(path.join(ws, '.orchestration'), { recursive: true });
  fs.mkdirSync(path.join(ws, 'src'));
  fs.mkdirSync(path.join(ws, 'docs'));
  fs.writeFileSync(path.join(ws, '.orchestration/active_intents.yaml'), INTENTS);
  fs.writeFileSync(path.join(ws, '.orchestration/hooks.yaml'), 'version: 1\n');
  chokepoint(['init', '--agent', name, '--workspace', ws]);
  return ws;
}

function ledger(ws) {
  return ledgerRecords(ws);
}

function exists(ws, rel) {
  return fs.existsSync(path.join(ws, rel));
}

async function session(name, ws, steps) {
  const client = CLIENTS[name];
  const server = await client.startServer({ script: steps });
  try {
    const r = await runAgent(name, { workspace: ws, prompt: 'Do as scripted.', serverUrl: server.url, timeoutMs: 120000 });
    return { r, server, results: server.toolResults() };
  } finally {
    await server.close();
  }
}

/** The tool result whose text includes `needle`, or a failure listing what the model was told. */
function told(results, needle) {
  const hit = results.find((t) => t.content.includes(needle));
  assert.ok(
    hit,
    `no tool result mentions ${JSON.stringify(needle)}; the model was told: ${JSON.stringify(
      results.map((t) => t.content.slice(0, 240)),
      null,
      1,
    )}`,
  );
  return hit;
}

before(async () => {
  assert.ok(fs.existsSync(PROGRAM), `${PROGRAM} is missing: the agents layer builds it (npm run build)`);
  await ensureAgents({ only: CHOSEN });
});

for (const name of CHOSEN) {
  describe(`${name} governed`, () => {
    let ws;
    let s;
    before(async () => {
      ws = governedWorkspace(name);
      // Another agent's session holds INT-DOCS throughout.
      chokepoint(['intent', 'select', '--workspace', ws, '--session', 'other:holder', '--agent', 'other', 'INT-DOCS']);
      const t = CLIENTS[name].tools;
      const steps = [
        { tools: [t.write(ws, 'src/early.txt', 'too early\n')] },
        ...t.mcp('select_active_intent', { intent_id: 'INT-DOCS' }),
        ...t.mcp('select_active_intent', { intent_id: 'INT-SRC' }),
        { tools: [t.write(ws, 'src/ok.txt', 'in scope\n')] },
        { tools: [t.write(ws, 'docs/no.txt', 'out of scope\n')] },
        { tools: [t.shell('echo contained > docs/shell.txt; echo fine > src/shell.txt')] },
        ...(t.subagent ? t.subagent([{ tools: [t.write(ws, 'src/sub.txt', 'from the sub-agent\n')] }]) : []),
        { text: 'Done.' },
      ];
      s = await session(name, ws, steps);
    });
    after(() => ws && fs.rmSync(ws, { recursive: true, force: true }));

    it('ends the session', () => {
      assert.equal(s.r.timedOut, false, `timed out; stderr: ${s.r.stderr.slice(-800)}`);
      assert.equal(s.r.code, 0, `exit code ${s.r.code}; stderr: ${s.r.stderr.slice(-800)}`);
    });

    it('denies a write before the handshake and names the next step with this session', () => {
      assert.equal(exists(ws, 'src/early.txt'), false);
      const r = told(s.results, 'no intent is selected');
      assert.match(r.content, new RegExp(`select_active_intent[\\s\\S]*--session '${name}:`));
    });

    it('refuses the intent another session holds, and takes the free one through the MCP tool', () => {
      told(s.results, 'locked by session `other:holder`');
      const selected = ledger(ws).find((rec) => rec.tool === 'select_active_intent' && rec.agent === name && rec.decision && rec.decision.decision === 'allow');
      assert.ok(selected, 'no allowed select_active_intent in the ledger');
      assert.equal(selected.intent, 'INT-SRC');
      assert.equal(selected.agent, name);
      assert.ok(selected.session.startsWith(`${name}:`), selected.session);
    });

    it('allows a write in scope and records it', () => {
      assert.equal(fs.readFileSync(path.join(ws, 'src/ok.txt'), 'utf8'), 'in scope\n');
      const pre = ledger(ws).filter((rec) => rec.event === 'PreToolUse' && rec.agent === name && rec.intent === 'INT-SRC' && rec.decision.decision === 'allow');
      assert.ok(
        pre.some((rec) => rec.tool !== 'select_active_intent'),
        `no allowed write recorded: ${JSON.stringify(ledger(ws).map((r) => [r.event, r.tool, r.decision && r.decision.decision]))}`,
      );
    });

    it('denies a write out of scope, leaves the file alone, and tells the model why', () => {
      assert.equal(exists(ws, 'docs/no.txt'), false);
      told(s.results, '`docs/no.txt` is outside the scope of intent `INT-SRC`');
    });

    it('contains a shell command: the write out of scope does not stay, the one in scope does, and the model hears it', () => {
      assert.equal(exists(ws, 'docs/shell.txt'), false, 'the shell write outside the scope stayed');
      assert.equal(fs.readFileSync(path.join(ws, 'src/shell.txt'), 'utf8'), 'fine\n');
      told(s.results, 'docs/shell.txt');
    });

    if (CLIENTS[name].tools.subagent) {
      it("governs a sub-agent's write under the session's intent and records it as the sub-agent's", () => {
        assert.equal(
          exists(ws, 'src/sub.txt') && fs.readFileSync(path.join(ws, 'src/sub.txt'), 'utf8'),
          'from the sub-agent\n',
          JSON.stringify(
            s.results.map((t) => t.content.slice(0, 240)),
            null,
            1,
          ),
        );
        const writes = ledger(ws).filter(
          (r) => r.event === 'PreToolUse' && r.decision.decision === 'allow' && JSON.stringify(r.data || {}).includes('src/sub.txt'),
        );
        assert.ok(
          writes.length > 0,
          `no allowed write of src/sub.txt: ${JSON.stringify(ledger(ws).map((r) => [r.event, r.tool, r.session, r.decision && r.decision.decision]))}`,
        );
        const selected = ledger(ws).find((r) => r.tool === 'select_active_intent' && r.agent === name && r.decision.decision === 'allow');
        for (const rec of writes) {
          assert.equal(rec.intent, 'INT-SRC');
          assert.equal(rec.session, selected.session, 'the sub-agent works in its parent session');
        }
        // Gemini CLI's input does not say a call is a sub-agent's; the others' do.
        if (name !== 'gemini')
          assert.ok(
            writes.some((r) => r.data.subagent),
            `not recorded as the sub-agent's: ${JSON.stringify(writes)}`,
          );
      });
    }

    it('keeps an intact hash chain', () => {
      chokepoint(['trace', 'verify', '--workspace', ws]);
    });
  });

  describe(`${name} with a broken configuration`, () => {
    let ws;
    let s;
    before(async () => {
      ws = governedWorkspace(name);
      fs.writeFileSync(path.join(ws, '.orchestration/hooks.yaml'), 'version: 1\nhooks:\n  PreToolUse:\n    - name: x\n      priorty: high\n      ask: why\n');
      const t = CLIENTS[name].tools;
      s = await session(name, ws, [{ tools: [t.write(ws, 'src/x.txt', 'x\n')] }, { text: 'Done.' }]);
    });
    after(() => ws && fs.rmSync(ws, { recursive: true, force: true }));

    it('denies the write, naming the file, line and column: it does not fail open', () => {
      assert.equal(s.r.timedOut, false);
      assert.equal(exists(ws, 'src/x.txt'), false, 'a broken configuration let the write through');
      told(s.results, 'hooks.yaml:5:7');
    });
  });
}
