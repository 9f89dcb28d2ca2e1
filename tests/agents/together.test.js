// Issue 27, item 1: two agents and a person on one checkout at once, with the real clients. Agent A
// (Claude Code) holds INT-001 (`src/auth/**`) and runs, through its Bash tool (which Chokepoint's hook
// rewrites to `chokepoint exec`), a command that waits until the test lets it go; meanwhile agent B
// (Codex; CHOKEPOINT_AGENT_B=gemini or claude runs that client instead) holds INT-002
// (`src/billing/**`) and writes `src/billing/pay.ts` through its write tool, and the person (the test
// itself) creates `docs/person.md` and edits `src/auth/keep.ts`, inside A's scope but not touched by
// A's command. A contained command may only ever apply its own changes inside its scope: everyone
// else's writes stay as they made them, and what A wrote outside its scope never lands and is named
// to A's model in the Bash tool's result.
//
//   1. A's command writes `src/auth/a.ts` (lands), overwrites `README.md` and `src/billing/pay.ts`
//      (both outside its scope: never land, and the model is told both paths).
//   2. A's command only waits (it writes nothing): B's and the person's work stays, and A's tool
//      result carries no complaint from Chokepoint.
//   3. B also runs a command through its shell tool (contained too) while A's runs: two isolated
//      commands on one checkout at once. B's write inside its scope lands at once, its write inside
//      A's scope never does; A's write lands when its command ends, with no complaint.
//   4. The person makes a folder inside A's scope, with a file, and A's command makes the same folder
//      (`mkdir -p`) with a file of its own: both files stay, and A's model is told of no conflict.
//
// The ledger's containment record of each command holds its own changes only, isolated (a machine
// where commands run observed instead fails that check: it would not test the isolation).
//
// Timing: A's command is known to be running when it has written its start marker into a folder
// outside the workspace (`gatekeeper.writable`) in case 1, and when its shell is in the process table
// in case 2 (it writes nothing there); it then waits for the `go` file, which the test creates once B
// and the person are done (and in any case before it waits for A), and gives up by itself after about
// a minute. Every wait here is bounded.
'use strict';
const assert = require('node:assert/strict');
const { describe, it, before, after } = require('node:test');
const { spawnSync } = require('child_process');
const fs = require('fs');
const { ledgerRecords } = require('../support/ledger');
const os = require('os');
const path = require('path');
const { ensureAgents } = require('../../scripts/agents');
const { TWO_INTENTS: INTENTS, chokepoint, read, waitFor, shellRunning } = require('./support/together');
const { CLIENTS, runAgent, makeWorkspace, PROGRAM } = require('./support/clients');

const A = 'claude';
const B = process.env.CHOKEPOINT_AGENT_B || 'codex';

const README = '# The project\n';
const KEEP = 'export const keep = 1;\n';
const KEEP_EDITED = 'export const keep = 2; // edited by the person\n';
const PERSON = 'Written by the person while the agents worked.\n';
const PAY = "export const pay = 'B';\n";
const A_FILE = 'export const a = 1;\n';

function ledger(ws) {
  return ledgerRecords(ws);
}

/** The same file write as each client's model sends it. */
function writeOf(name, ws, rel, content) {
  return CLIENTS[name].tools.write(ws, rel, content);
}

/**
 * One scenario: a governed workspace set up for both clients; A's session runs `aCommand(scratch)`
 * through its shell tool; once `started(scratch, command)` says it runs, B's session writes PAY and
 * the person writes; then the `go` file lets A's command go on. Returns everything the checks read.
 * The defaults take fewer arguments than scenario gives: B's steps are given the workspace and B's
 * tools, the person the workspace.
 * @param {string} label
 * @param {(scratch: string) => string} aCommand
 * @param {(scratch: string, command: string) => boolean} started
 * @param {(ws: string, tools: any) => object[]} [bSteps]
 * @param {(ws: string) => void} [person]
 */
async function scenario(label, aCommand, started, bSteps = (ws) => [{ tools: [writeOf(B, ws, 'src/billing/pay.ts', PAY)] }], person = () => {}) {
  const ws = makeWorkspace('together');
  // Outside the workspace: A's start marker and the `go` file (granted to the contained command).
  const scratch = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'chokepoint-together-scratch-')));
  for (const dir of ['.orchestration', 'src/auth', 'src/billing', 'docs']) fs.mkdirSync(path.join(ws, dir), { recursive: true });
  fs.writeFileSync(path.join(ws, '.orchestration/active_intents.yaml'), INTENTS);
  fs.writeFileSync(path.join(ws, '.orchestration/hooks.yaml'), `version: 1\ngatekeeper:\n  writable: [${JSON.stringify(scratch)}]\n`);
  fs.writeFileSync(path.join(ws, 'README.md'), README);
  fs.writeFileSync(path.join(ws, 'src/auth/keep.ts'), KEEP);
  spawnSync('git', ['init', '-q', ws]);
  for (const name of new Set([A, B])) chokepoint(['init', '--agent', name, '--workspace', ws]);

  const command = aCommand(scratch);
  const go = path.join(scratch, 'go');
  const ta = CLIENTS[A].tools;
  const tb = CLIENTS[B].tools;
  // Claude Code's Bash tool stops a command after 2 minutes unless told otherwise.
  const shell = ta.shell(command);
  shell.input.timeout = 180000;
  const serverA = await CLIENTS[A].startServer({
    script: [...ta.mcp('select_active_intent', { intent_id: 'INT-001' }), { tools: [shell] }, { text: 'Done.' }],
  });
  const serverB = await CLIENTS[B].startServer({ script: [...tb.mcp('select_active_intent', { intent_id: 'INT-002' }), ...bSteps(ws, tb), { text: 'Done.' }] });
  const out = { ws, scratch, command, during: {} };
  try {
    let aDone = false;
    const aRun = runAgent(A, { workspace: ws, prompt: 'Do as scripted.', serverUrl: serverA.url, timeoutMs: 240000 }).finally(() => (aDone = true));
    try {
      await waitFor(
        () => started(scratch, command),
        90000,
        `${label}: A's command did not start`,
        () => aDone,
      );
      out.startedAfterMs = Date.now();
      // B and the person work while A's command runs.
      const bRun = runAgent(B, { workspace: ws, prompt: 'Do as scripted.', serverUrl: serverB.url, timeoutMs: 120000 });
      fs.writeFileSync(path.join(ws, 'docs/person.md'), PERSON);
      fs.writeFileSync(path.join(ws, 'src/auth/keep.ts'), KEEP_EDITED);
      person(ws);
      out.b = await bRun;
      // What the workspace holds before A's command goes on: B's write landed, A's has not.
      out.during = {
        pay: read(ws, 'src/billing/pay.ts'),
        b: read(ws, 'src/billing/b.ts'),
        a: read(ws, 'src/auth/a.ts'),
        aStillRunning: !aDone && started(scratch, command),
      };
    } finally {
      fs.writeFileSync(go, 'go\n');
    }
    out.a = await aRun;
  } finally {
    await serverA.close();
    await serverB.close();
  }
  out.aResults = serverA.toolResults();
  out.bResults = serverB.toolResults();
  out.shellResult = out.aResults.find((t) => t.name === 'Bash');
  if (process.env.CHOKEPOINT_AGENTS_DEBUG) {
    console.error(label, JSON.stringify({ a: out.aResults, b: out.bResults, during: out.during, ledger: ledger(ws) }, null, 1));
    console.error(label, 'A stderr', out.a.stderr.slice(-2000), 'B stderr', out.b && out.b.stderr.slice(-2000));
  }
  return out;
}

/** The ledger's record of the command that the session holding `intent` ran contained (by intent:
 *  A and B may be the same client). */
function containmentOf(s, intent) {
  const recs = ledger(s.ws).filter((r) => r.kind === 'containment' && r.tool === 'execute_command' && r.intent === intent);
  assert.equal(recs.length, 1, `containment records under ${intent}: ${JSON.stringify(recs)}`);
  return recs[0];
}

/** What A's and B's models were told, for a failure's message. */
function toldBoth(s) {
  const short = (rs) => rs.map((t) => `${t.name}: ${t.content.slice(0, 600)}`);
  return JSON.stringify({ A: short(s.aResults), B: short(s.bResults) }, null, 1);
}

/** The common checks: both sessions ended, each holds its intent, B's write was allowed and is
 *  intact, the person's new file and edit are intact, the ledger verifies. */
function commonChecks(get) {
  it("runs A and B to the end, each under its own intent, B while A's command was running", () => {
    const s = get();
    assert.equal(s.a.timedOut, false, `A timed out; stderr: ${s.a.stderr.slice(-800)}`);
    assert.equal(s.a.code, 0, `A exited ${s.a.code}; stderr: ${s.a.stderr.slice(-800)}`);
    assert.equal(s.b.timedOut, false, `B timed out; stderr: ${s.b.stderr.slice(-800)}`);
    assert.equal(s.b.code, 0, `B exited ${s.b.code}; stderr: ${s.b.stderr.slice(-800)}`);
    assert.ok(s.shellResult, `A's Bash tool never returned: ${toldBoth(s)}`);
    assert.equal(s.during.aStillRunning, true, "A's command had ended before B and the person were done");
    const held = (agent, intent) =>
      ledger(s.ws).find((r) => r.tool === 'select_active_intent' && r.agent === agent && r.intent === intent && r.decision && r.decision.decision === 'allow');
    assert.ok(held(A, 'INT-001'), `A did not take INT-001: ${toldBoth(s)}`);
    assert.ok(held(B, 'INT-002'), `B did not take INT-002: ${toldBoth(s)}`);
  });

  it("keeps B's allowed write, made while A's command ran", () => {
    const s = get();
    assert.equal(s.during.pay, PAY, `B's write did not land while A's command ran: ${toldBoth(s)}`);
    assert.equal(read(s.ws, 'src/billing/pay.ts'), PAY, `B's src/billing/pay.ts after A's command: ${toldBoth(s)}`);
    const allowed = ledger(s.ws).filter(
      (r) => r.event === 'PreToolUse' && r.agent === B && r.intent === 'INT-002' && r.tool !== 'select_active_intent' && r.decision.decision === 'allow',
    );
    assert.ok(
      allowed.length > 0,
      `no allowed write of B recorded: ${JSON.stringify(ledger(s.ws).map((r) => [r.event, r.agent, r.tool, r.decision && r.decision.decision]))}`,
    );
  });

  it("keeps the person's new file and the person's edit inside A's scope", () => {
    const s = get();
    assert.equal(read(s.ws, 'docs/person.md'), PERSON, `docs/person.md: ${toldBoth(s)}`);
    assert.equal(read(s.ws, 'src/auth/keep.ts'), KEEP_EDITED, `src/auth/keep.ts: ${toldBoth(s)}`);
  });

  it("does not tell A's model about anyone else's work", () => {
    const s = get();
    for (const other of ['docs/person.md', 'src/auth/keep.ts'])
      assert.ok(!s.shellResult.content.includes(other), `A's Bash result names ${other}: ${s.shellResult.content}`);
  });

  it('keeps an intact hash chain', () => {
    chokepoint(['trace', 'verify', '--workspace', get().ws]);
  });
}

before(async () => {
  assert.ok(fs.existsSync(PROGRAM), `${PROGRAM} is missing: the agents layer builds it (npm run build)`);
  assert.ok(CLIENTS[B] && B !== 'copilot', `CHOKEPOINT_AGENT_B is ${B}: codex, gemini or claude`);
  await ensureAgents({ only: [...new Set([A, B])] });
});

describe(`${A} runs a contained command while ${B} and a person write`, () => {
  let s;
  before(async () => {
    // Waits for `go` (at most about a minute), then writes inside its scope and outside it.
    const command = (scratch) =>
      `echo started > ${scratch}/a-started; i=0; while [ ! -e ${scratch}/go ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; ` +
      `echo 'export const a = 1;' > src/auth/a.ts; echo 'overwritten by A' > README.md; echo 'A was here' > src/billing/pay.ts; echo A-finished`;
    s = await scenario('writes', command, (scratch) => fs.existsSync(path.join(scratch, 'a-started')));
  });
  after(() => {
    if (!s) return;
    fs.rmSync(s.ws, { recursive: true, force: true });
    fs.rmSync(s.scratch, { recursive: true, force: true });
  });

  commonChecks(() => s);

  it("applies A's write inside its scope", () => {
    assert.equal(s.during.a, null, "A's write was in the workspace before its command ended");
    assert.equal(read(s.ws, 'src/auth/a.ts'), A_FILE, `src/auth/a.ts: ${toldBoth(s)}`);
    assert.ok(s.shellResult.content.includes('A-finished'), `A's command's output is not in its tool result: ${s.shellResult.content}`);
  });

  it("does not apply A's writes outside its scope, and names each to A's model", () => {
    assert.equal(read(s.ws, 'README.md'), README, 'A overwrote README.md, outside its scope');
    const r = s.shellResult.content;
    assert.ok(r.includes('outside the scope of intent `INT-001`'), `A's Bash result: ${r}`);
    for (const p of ['`README.md`', '`src/billing/pay.ts`']) assert.ok(r.includes(p), `A's Bash result does not name ${p}: ${r}`);
  });

  it("records A's command isolated, with its own changes only: nobody else's is put on it", () => {
    const rec = containmentOf(s, 'INT-001');
    assert.ok(rec.session.startsWith(`${A}:`), rec.session);
    assert.equal(
      rec.data.isolation,
      'isolated',
      `A's command was not isolated here, so this test does not test the isolated containment: ${JSON.stringify(rec.data)}`,
    );
    const paths = (list) => (list || []).map((c) => c.path).sort();
    assert.deepEqual(paths(rec.data.changed), ['src/auth/a.ts']);
    assert.deepEqual(paths(rec.data.refused), ['README.md', 'src/billing/pay.ts']);
    assert.deepEqual([paths(rec.data.not_applied), paths(rec.data.unattributed), paths(rec.data.others)], [[], [], []]);
  });
});

describe(`${A} runs a command that only waits while ${B} and a person write`, () => {
  let s;
  before(async () => {
    // Writes nothing at all: it is seen running in the process table.
    const command = (scratch) => `i=0; while [ ! -e ${scratch}/go ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done`;
    s = await scenario('waits', command, (scratch, c) => shellRunning(c));
  });
  after(() => {
    if (!s) return;
    fs.rmSync(s.ws, { recursive: true, force: true });
    fs.rmSync(s.scratch, { recursive: true, force: true });
  });

  commonChecks(() => s);

  it("gives A's model no complaint from Chokepoint", () => {
    const r = s.shellResult;
    assert.equal(r.isError, false, `A's Bash result is an error: ${r.content}`);
    assert.ok(!/chokepoint|scope|not applied|undone|did not land/i.test(r.content), `A's Bash result: ${r.content}`);
    const rec = containmentOf(s, 'INT-001');
    assert.deepEqual(
      [rec.data.changed, rec.data.refused, rec.data.not_applied, rec.data.unattributed, rec.data.others],
      [[], [], [], [], []],
      JSON.stringify(rec.data),
    );
  });
});

describe(`${A} and ${B} run contained commands at once while a person writes`, () => {
  let s;
  const B_SHELL = `echo 'export const b = 2;' > src/billing/b.ts; echo 'B was here' > src/auth/from-b.ts; echo B-finished`;
  before(async () => {
    // A's waits for `go`, then writes inside its scope only.
    const command = (scratch) =>
      `echo started > ${scratch}/a-started; i=0; while [ ! -e ${scratch}/go ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; ` +
      `echo 'export const a = 1;' > src/auth/a.ts; echo A-finished`;
    // B writes with its write tool, then runs a command of its own (contained too) that writes inside
    // its scope and inside A's.
    const bSteps = (ws, tb) => [{ tools: [writeOf(B, ws, 'src/billing/pay.ts', PAY)] }, { tools: [tb.shell(B_SHELL)] }];
    s = await scenario('both', command, (scratch) => fs.existsSync(path.join(scratch, 'a-started')), bSteps);
  });
  after(() => {
    if (!s) return;
    fs.rmSync(s.ws, { recursive: true, force: true });
    fs.rmSync(s.scratch, { recursive: true, force: true });
  });

  commonChecks(() => s);

  it("applies B's command's write inside B's scope while A's command still runs, and not its write inside A's", () => {
    const shellName = CLIENTS[B].tools.shell('true').name;
    const r = s.bResults.find((t) => t.name === shellName);
    assert.ok(r, `B's shell tool never returned: ${toldBoth(s)}`);
    assert.equal(s.during.b, 'export const b = 2;\n', `src/billing/b.ts before A's command went on: ${toldBoth(s)}`);
    assert.equal(read(s.ws, 'src/billing/b.ts'), 'export const b = 2;\n');
    assert.equal(read(s.ws, 'src/auth/from-b.ts'), null, "B's command wrote inside A's scope");
    assert.ok(
      r.content.includes('B-finished') && r.content.includes('`src/auth/from-b.ts`') && r.content.includes('outside the scope of intent `INT-002`'),
      `B's shell result: ${r.content}`,
    );
    const rec = containmentOf(s, 'INT-002');
    assert.equal(rec.data.isolation, 'isolated');
    assert.deepEqual([rec.data.changed.map((c) => c.path), rec.data.refused.map((c) => c.path)], [['src/billing/b.ts'], ['src/auth/from-b.ts']]);
  });

  it("applies A's write, and A's model hears no complaint", () => {
    assert.equal(s.during.a, null, "A's write was in the workspace before its command ended");
    assert.equal(read(s.ws, 'src/auth/a.ts'), A_FILE, `src/auth/a.ts: ${toldBoth(s)}`);
    assert.ok(s.shellResult.content.includes('A-finished'), s.shellResult.content);
    assert.ok(!/chokepoint|scope|not applied|undone|did not land/i.test(s.shellResult.content), `A's Bash result: ${s.shellResult.content}`);
    const rec = containmentOf(s, 'INT-001');
    assert.deepEqual([rec.data.changed.map((c) => c.path), rec.data.refused, rec.data.not_applied], [['src/auth/a.ts'], [], []]);
  });
});

describe(`${A}'s command and the person both create a folder inside A's scope`, () => {
  let s;
  before(async () => {
    const command = (scratch) =>
      `echo started > ${scratch}/a-started; i=0; while [ ! -e ${scratch}/go ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; ` +
      `mkdir -p src/auth/shared && echo 'export const a = 1;' > src/auth/shared/a.ts; echo A-finished`;
    const person = (ws) => {
      fs.mkdirSync(path.join(ws, 'src/auth/shared'));
      fs.writeFileSync(path.join(ws, 'src/auth/shared/person.md'), PERSON);
    };
    s = await scenario('folder', command, (scratch) => fs.existsSync(path.join(scratch, 'a-started')), undefined, person);
  });
  after(() => {
    if (!s) return;
    fs.rmSync(s.ws, { recursive: true, force: true });
    fs.rmSync(s.scratch, { recursive: true, force: true });
  });

  commonChecks(() => s);

  it("keeps the person's file in the folder and applies A's beside it", () => {
    assert.equal(read(s.ws, 'src/auth/shared/person.md'), PERSON);
    assert.equal(read(s.ws, 'src/auth/shared/a.ts'), A_FILE, `src/auth/shared/a.ts: ${toldBoth(s)}`);
  });

  // The folder exists either way and A's file in it landed: nothing was held back.
  it("tells A's model nothing did not land: a folder made by both is no conflict", () => {
    assert.ok(!/chokepoint|did not land|not applied/i.test(s.shellResult.content), `A's Bash result: ${s.shellResult.content}`);
    assert.deepEqual(containmentOf(s, 'INT-001').data.not_applied, []);
  });
});
