// Issue 27, item 5: a relative path is judged where the real client writes it. Each client is started
// in the workspace's `docs/` folder (its hooks and MCP server those of the workspace, as `chokepoint
// init` wrote them), selects INT-SRC (`src/**`, `docs/guide/**`), then its scripted model writes two
// relative paths: `src/auth/new.ts`, which the client writes to `docs/src/auth/new.ts`, outside the
// scope (denied, and nothing written anywhere; judged from the root it was allowed), and
// `guide/ok.md`, which lands in `docs/guide/ok.md`, inside it (allowed, and written there; judged from
// the root it was refused). The file the client really wrote and the decision must agree. Every
// folder exists beforehand: Copilot CLI creates no parent folder, and would write nothing either way.
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
    owned_scope: ['src/**', 'docs/guide/**']
`;

/** A relative write in each client's own tool, as its model would send it. */
const RELATIVE_WRITE = {
  claude: (rel, content) => ({ name: 'Write', input: { file_path: rel, content } }),
  codex: (rel, content) => CLIENTS.codex.tools.write('', rel, content),
  gemini: (rel, content) => ({ name: 'write_file', input: { file_path: rel, content } }),
  copilot: (rel, content) => ({ name: 'create', input: { path: rel, file_text: content } }),
};

function chokepoint(args) {
  const r = spawnSync(PROGRAM, args, { encoding: 'utf8' });
  assert.equal(r.status, 0, `chokepoint ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

function ledger(ws) {
  return ledgerRecords(ws);
}

before(async () => {
  assert.ok(fs.existsSync(PROGRAM), `${PROGRAM} is missing: the agents layer builds it (npm run build)`);
  await ensureAgents({ only: CHOSEN });
});

for (const name of CHOSEN) {
  describe(`${name} started in a subfolder`, () => {
    let ws;
    let s;
    before(async () => {
      ws = makeWorkspace(name);
      for (const dir of ['.orchestration', 'src/auth', 'docs/src/auth', 'docs/guide', 'guide']) fs.mkdirSync(path.join(ws, dir), { recursive: true });
      fs.writeFileSync(path.join(ws, '.orchestration/active_intents.yaml'), INTENTS);
      fs.writeFileSync(path.join(ws, '.orchestration/hooks.yaml'), 'version: 1\n');
      // A repository, as a workspace is: the clients find their project files from its root.
      spawnSync('git', ['init', '-q', ws]);
      chokepoint(['init', '--agent', name, '--workspace', ws]);
      const client = CLIENTS[name];
      const write = RELATIVE_WRITE[name];
      const steps = [
        ...client.tools.mcp('select_active_intent', { intent_id: 'INT-SRC' }),
        { tools: [write('src/auth/new.ts', 'outside\n')] },
        { tools: [write('guide/ok.md', 'inside\n')] },
        { text: 'Done.' },
      ];
      // Claude Code and Gemini CLI read their project settings (hooks) from the folder they start
      // in only, not from the workspace above it: the workspace's are copied there (the folder is
      // their project), so that Chokepoint's hooks run at all.
      for (const file of { claude: ['.claude/settings.json'], gemini: ['.gemini/settings.json'] }[name] || []) {
        fs.mkdirSync(path.dirname(path.join(ws, 'docs', file)), { recursive: true });
        fs.copyFileSync(path.join(ws, file), path.join(ws, 'docs', file));
      }
      const server = await client.startServer({ script: steps });
      try {
        const r = await runAgent(name, { workspace: ws, cwd: path.join(ws, 'docs'), prompt: 'Do as scripted.', serverUrl: server.url, timeoutMs: 120000 });
        s = { r, results: server.toolResults() };
        if (process.env.CHOKEPOINT_AGENTS_DEBUG) console.error(name, JSON.stringify(s.results, null, 1), s.r.stderr.slice(-2000));
      } finally {
        await server.close();
      }
    });
    after(() => ws && fs.rmSync(ws, { recursive: true, force: true }));

    it('ends the session with the intent selected', () => {
      assert.equal(s.r.timedOut, false, `timed out; stderr: ${s.r.stderr.slice(-800)}`);
      const selected = ledger(ws).find((rec) => rec.tool === 'select_active_intent' && rec.decision && rec.decision.decision === 'allow');
      assert.ok(selected, `the handshake was not made: ${JSON.stringify(s.results.map((t) => t.content.slice(0, 200)))}`);
    });

    it('denies the relative path that lands in docs/, and nothing is written anywhere', () => {
      assert.equal(fs.existsSync(path.join(ws, 'docs/src/auth/new.ts')), false, 'the client wrote docs/src/auth/new.ts');
      assert.equal(fs.existsSync(path.join(ws, 'src/auth/new.ts')), false);
      const told = s.results.find((t) => t.content.includes('`docs/src/auth/new.ts` is outside the scope of intent `INT-SRC`'));
      assert.ok(
        told,
        `the model was told: ${JSON.stringify(
          s.results.map((t) => t.content.slice(0, 240)),
          null,
          1,
        )}`,
      );
    });

    it('allows the relative path that lands in docs/guide/, and the client writes it there', () => {
      const told = JSON.stringify(
        s.results.map((t) => t.content.slice(0, 240)),
        null,
        1,
      );
      assert.equal(fs.existsSync(path.join(ws, 'docs/guide/ok.md')) && fs.readFileSync(path.join(ws, 'docs/guide/ok.md'), 'utf8'), 'inside\n', told);
      assert.equal(fs.existsSync(path.join(ws, 'guide/ok.md')), false);
      const recorded = JSON.stringify(ledger(ws).filter((rec) => rec.event === 'PostToolUse'));
      assert.ok(recorded.includes('docs/guide/ok.md'), `no record of docs/guide/ok.md: ${recorded.slice(0, 2000)}`);
    });
  });
}
