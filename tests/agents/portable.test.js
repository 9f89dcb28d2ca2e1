// Issue 28, item 3: settings a team can commit. The real Claude Code, governed by `chokepoint init`
// (whose files name no path of this machine), on a machine where no `chokepoint` can be found: its
// write is BLOCKED, not let through, and the session says how to fix it. Then the same machine with
// a person's own program in Claude Code's local settings (`chokepoint init --local --program`): the
// hooks and the MCP server find it there, and a write in scope goes through.
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
/** A PATH with the system's programs and no `chokepoint`. */
const NO_CHOKEPOINT = '/usr/local/bin:/usr/bin:/bin';

function chokepoint(args) {
  const r = spawnSync(PROGRAM, args, { encoding: 'utf8' });
  assert.equal(r.status, 0, `chokepoint ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** A governed workspace set up for Claude Code by `chokepoint init`, with `src/` in scope. */
function governed() {
  const ws = makeWorkspace('portable');
  fs.mkdirSync(path.join(ws, '.orchestration'));
  fs.mkdirSync(path.join(ws, 'src'));
  fs.writeFileSync(path.join(ws, '.orchestration/active_intents.yaml'), INTENTS);
  fs.writeFileSync(path.join(ws, '.orchestration/hooks.yaml'), 'version: 1\n');
  chokepoint(['init', '--agent', 'claude', '--workspace', ws]);
  return ws;
}

/** Claude Code selects INT-SRC through the MCP tool, then writes src/a.txt; with PATH `PATH`. */
async function selectsAndWrites(ws, PATH) {
  const client = CLIENTS.claude;
  const t = client.tools;
  const server = await client.startServer({
    script: [...t.mcp('select_active_intent', { intent_id: 'INT-SRC' }), { tools: [t.write(ws, 'src/a.txt', 'written\n')] }, { text: 'Done.' }],
  });
  try {
    const r = await runAgent('claude', { workspace: ws, prompt: 'Do as scripted.', serverUrl: server.url, timeoutMs: 120000, env: { PATH } });
    return { r, results: server.toolResults() };
  } finally {
    await server.close();
  }
}

const skip = !CHOSEN.includes('claude') && 'Claude Code is not among CHOKEPOINT_AGENTS';

describe('Claude Code with settings committed on another machine', { skip }, () => {
  before(async () => {
    assert.ok(fs.existsSync(PROGRAM), `${PROGRAM} is missing: build it (npm run build, or cargo build -p chokepoint-cli and CHOKEPOINT_PROGRAM)`);
    await ensureAgents({ only: ['claude'] });
  });

  describe('where no chokepoint can be found', () => {
    let ws;
    let run;
    before(async () => {
      ws = governed();
      for (const file of ['.claude/settings.json', '.mcp.json']) {
        const text = fs.readFileSync(path.join(ws, file), 'utf8');
        assert.ok(!text.includes(path.dirname(PROGRAM)) && !text.includes(ws), `${file} names a path of this machine: ${text}`);
      }
      run = await selectsAndWrites(ws, NO_CHOKEPOINT);
    });
    after(() => ws && fs.rmSync(ws, { recursive: true, force: true }));

    it('blocks the write rather than letting it through', () => {
      assert.equal(run.r.timedOut, false, `timed out; stderr: ${run.r.stderr.slice(-800)}`);
      assert.equal(fs.existsSync(path.join(ws, 'src/a.txt')), false, 'the write went through unjudged');
    });

    // Claude Code runs the UserPromptSubmit hook first, and its exit 2 blocks the prompt itself: the
    // model is never asked, so no tool of its runs, and the session's result says why and how to fix
    // it. (Were the prompt let through, the PreToolUse hook's exit 2 would hand the model the same
    // words as the write's tool result: `chokepoint hook` fails closed the same way.)
    it('tells how to fix it, and the model never acts', () => {
      const result = run.r.events.find((e) => e.type === 'result');
      assert.ok(result, `no result event; stdout: ${run.r.stdout.slice(-800)}`);
      assert.match(result.result, /blocked by hook/, result.result);
      assert.ok(result.result.includes('no chokepoint program was found') && result.result.includes('chokepoint init --local --program'), result.result);
      assert.deepEqual(run.results, [], 'no tool ran');
    });
  });

  describe("with a person's own program in Claude Code's local settings", () => {
    let ws;
    let run;
    before(async () => {
      ws = governed();
      chokepoint(['init', '--agent', 'claude', '--workspace', ws, '--local', '--program', PROGRAM]);
      run = await selectsAndWrites(ws, NO_CHOKEPOINT);
    });
    after(() => ws && fs.rmSync(ws, { recursive: true, force: true }));

    it('finds it there for the hooks and the MCP server: the write in scope goes through', () => {
      assert.equal(run.r.code, 0, `exit code ${run.r.code}; stderr: ${run.r.stderr.slice(-800)}`);
      assert.equal(
        fs.readFileSync(path.join(ws, 'src/a.txt'), 'utf8'),
        'written\n',
        `the model was told: ${JSON.stringify(
          run.results.map((x) => x.content.slice(0, 600)),
          null,
          1,
        )}`,
      );
    });
  });
});
