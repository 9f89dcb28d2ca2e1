// Issue 27, item 8: Chokepoint's reason and next step reach the person and the model. Each client,
// governed by `chokepoint init`, selects INT-SRC (`src/**`) through the MCP tool, then its scripted
// model writes outside the scope (denied) and runs a shell command that writes outside it (contained).
// Asserted where each client shows it: the model's tool result carries the reason and the next step
// (the suggested tool, where to find it); the person's view (Claude Code's stream-json
// `system`/`informational` line, from the hook's `systemMessage`; Gemini CLI's "Hook system message"
// on stderr) carries the reason too; and a contained shell write the kernel refused is explained to
// the model by Chokepoint, not left at the shell's bare "Permission denied".
'use strict';
const assert = require('node:assert/strict');
const { describe, it, before, after } = require('node:test');
const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');
const { ensureAgents } = require('../../scripts/agents');
const { CLIENTS, runAgent, makeWorkspace, PROGRAM, CHOSEN } = require('./support/clients');

const INTENTS = `version: 1
active_intents:
  - id: INT-SRC
    name: Sources
    status: IN_PROGRESS
    owned_scope: ['src/**']
`;
const REASON = '`docs/no.txt` is outside the scope of intent `INT-SRC`';
const NEXT_STEP = 'Next step: call the MCP tool `scope_expansion_request` of server `chokepoint`';

/** What the person is shown of the session, per client. */
const SHOWN = {
  // A hook's `systemMessage` is a `system` line of subtype `informational`: "<hook> says: <text>".
  claude: (r) =>
    r.events
      .filter((e) => e.type === 'system' && e.subtype === 'informational')
      .map((e) => e.content)
      .join('\n'),
  // Headless, a hook's `systemMessage` goes to stderr as "Hook system message: <text>".
  gemini: (r) =>
    r.stderr
      .split('\n')
      .filter((l) => l.includes('Hook system message'))
      .join('\n'),
  // Copilot CLI's deny has one reason, for both: the tool's completion event in its JSON output.
  copilot: (r) => JSON.stringify(r.events.filter((e) => e.type === 'tool.execution_complete')),
  // Codex's `exec --json` prints no hook message (its TUI shows `systemMessage` as a warning): not
  // checked here.
};

function chokepoint(args) {
  const r = spawnSync(PROGRAM, args, { encoding: 'utf8' });
  assert.equal(r.status, 0, `chokepoint ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

function told(results, needle) {
  const hit = results.find((t) => t.content.includes(needle));
  assert.ok(
    hit,
    `no tool result mentions ${JSON.stringify(needle)}; the model was told: ${JSON.stringify(
      results.map((t) => t.content.slice(0, 600)),
      null,
      1,
    )}`,
  );
  return hit;
}

before(async () => {
  assert.ok(fs.existsSync(PROGRAM), `${PROGRAM} is missing: build it (npm run build, or cargo build -p chokepoint-cli and CHOKEPOINT_PROGRAM)`);
  await ensureAgents({ only: CHOSEN });
});

for (const name of CHOSEN) {
  describe(`${name}: reasons reach the person and the model`, () => {
    let ws;
    let r;
    let results;
    before(async () => {
      ws = makeWorkspace(name);
      fs.mkdirSync(path.join(ws, '.orchestration'));
      fs.mkdirSync(path.join(ws, 'src'));
      fs.mkdirSync(path.join(ws, 'docs'));
      fs.writeFileSync(path.join(ws, '.orchestration/active_intents.yaml'), INTENTS);
      fs.writeFileSync(path.join(ws, '.orchestration/hooks.yaml'), 'version: 1\n');
      chokepoint(['init', '--agent', name, '--workspace', ws]);
      const client = CLIENTS[name];
      const t = client.tools;
      const server = await client.startServer({
        script: [
          ...t.mcp('select_active_intent', { intent_id: 'INT-SRC' }),
          { tools: [t.write(ws, 'docs/no.txt', 'out of scope\n')] },
          { tools: [t.shell('echo contained > docs/shell.txt')] },
          { text: 'Done.' },
        ],
      });
      try {
        r = await runAgent(name, { workspace: ws, prompt: 'Do as scripted.', serverUrl: server.url, timeoutMs: 120000 });
        results = server.toolResults();
      } finally {
        await server.close();
      }
    });
    after(() => ws && fs.rmSync(ws, { recursive: true, force: true }));

    it('ends the session', () => {
      assert.equal(r.timedOut, false, `timed out; stderr: ${r.stderr.slice(-800)}`);
      assert.equal(r.code, 0, `exit code ${r.code}; stderr: ${r.stderr.slice(-800)}`);
    });

    it('tells the model why a write was denied, and the next step', () => {
      assert.equal(fs.existsSync(path.join(ws, 'docs/no.txt')), false);
      const result = told(results, REASON);
      assert.ok(result.content.includes(NEXT_STEP), result.content);
    });

    (SHOWN[name] ? it : it.skip)('shows the person the same reason and next step', () => {
      const shown = SHOWN[name](r);
      assert.ok(shown.includes(REASON) && shown.includes(NEXT_STEP), `the person was shown: ${JSON.stringify(shown)}`);
    });

    it("explains a contained shell command's refused write to the model", () => {
      assert.equal(fs.existsSync(path.join(ws, 'docs/shell.txt')), false, 'the shell write outside the scope stayed');
      const result = results.find((x) => x.content.includes('docs/shell.txt'));
      assert.ok(
        result,
        `no tool result mentions docs/shell.txt: ${JSON.stringify(
          results.map((x) => x.content.slice(0, 600)),
          null,
          1,
        )}`,
      );
      // Chokepoint's own words, with the scope and the way to ask for more; not only the shell's.
      assert.match(result.content, /chokepoint: [^\n]*scope of intent `INT-SRC`/, result.content);
      assert.ok(result.content.includes('scope_expansion_request'), result.content);
    });
  });
}
