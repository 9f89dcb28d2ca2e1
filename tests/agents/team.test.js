// Issue 29: a team's agents on two machines, with the real Claude Code on each. A PostgreSQL server
// started by the test in a temporary folder is the team's database; the repository's committed
// hooks.yaml names it (`coordination.url`, no password), and each "machine" is a clone of one origin
// with its own `.orchestration` state, its name (CHOKEPOINT_MACHINE) and the password (PGPASSWORD) in
// its environment, as a team sets it up. Claude Code on `alpha` selects INT-001, writes in its scope
// and then runs a command that waits, so its session (and lease) lasts; meanwhile Claude Code on
// `beta` asks for INT-001 and is refused, told which session holds it and where (machine, worktree,
// branch), its write into that scope is denied, and it takes INT-002 instead and writes there;
// `intent list` on either machine shows alpha's lease with its machine.
'use strict';
const assert = require('node:assert/strict');
const { describe, it, before, after } = require('node:test');
const { spawnSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { ensureAgents } = require('../../scripts/agents');
const postgres = require('../support/postgres');
const { TWO_INTENTS: INTENTS, read, waitFor, shellRunning } = require('./support/together');
const { CLIENTS, runAgent, PROGRAM } = require('./support/clients');

const AGENT = 'claude';

function run(cmd, args, cwd, env = process.env) {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', env });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

function git(cwd, ...args) {
  const r = run('git', ['-c', 'user.name=Test', '-c', 'user.email=test@example.com', '-c', 'init.defaultBranch=main', ...args], cwd);
  assert.equal(r.code, 0, `git ${args.join(' ')} in ${cwd}: ${r.out}`);
  return r.out;
}

const told = (results) =>
  JSON.stringify(
    results.map((t) => `${t.name}: ${t.content.slice(0, 600)}`),
    null,
    1,
  );

describe(`${AGENT} on two machines sharing one PostgreSQL database`, () => {
  let server;
  let top;
  let scratch;
  const machines = {};
  let a;
  let b;
  let lists;

  /** `chokepoint ARGS` as a person on `machine` runs it (its name and the password in the environment). */
  function chokepointOn(machine, args) {
    /** @type {NodeJS.ProcessEnv} an environment, from which one variable is deleted below */
    const env = { ...process.env, CHOKEPOINT_MACHINE: machine, PGPASSWORD: server.password };
    delete env.CHOKEPOINT_COORDINATION_URL;
    const r = run(PROGRAM, args, undefined, env);
    assert.equal(r.code, 0, `chokepoint ${args.join(' ')} on ${machine}: ${r.out}`);
    return r.out;
  }

  before(async () => {
    assert.ok(fs.existsSync(PROGRAM), `${PROGRAM} is missing: the agents layer builds it (npm run build)`);
    await ensureAgents({ only: [AGENT] });
    server = await postgres.start();
    top = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'chokepoint-team-')));
    // The team's repository: created once, committed with its governance and the database's URL
    // (never its password), pushed to an origin every machine clones.
    const seed = path.join(top, 'seed');
    for (const dir of ['.orchestration', 'src/auth', 'src/billing']) fs.mkdirSync(path.join(seed, dir), { recursive: true });
    fs.writeFileSync(path.join(seed, '.orchestration/active_intents.yaml'), INTENTS);
    fs.writeFileSync(path.join(seed, 'README.md'), '# The project\n');
    git(seed, 'init', '-q');
    const init = run(PROGRAM, ['init', '--agent', AGENT, '--workspace', seed]);
    assert.equal(init.code, 0, init.out);
    const hooks = path.join(seed, '.orchestration/hooks.yaml');
    const existing = fs.existsSync(hooks) ? fs.readFileSync(hooks, 'utf8') : 'version: 1\n';
    fs.writeFileSync(hooks, `${existing.trimEnd()}\ncoordination:\n  url: ${server.url}\n`);
    git(seed, 'add', '-A');
    git(seed, 'commit', '-q', '-m', 'Governed by Chokepoint, coordinated on the team database');
    const origin = path.join(top, 'origin.git');
    git(top, 'clone', '-q', '--bare', seed, origin);
    for (const name of ['alpha', 'beta']) {
      fs.mkdirSync(path.join(top, name));
      git(path.join(top, name), 'clone', '-q', origin, 'repo');
      machines[name] = path.join(top, name, 'repo');
    }
    const envOf = (name) => ({ CHOKEPOINT_MACHINE: name, PGPASSWORD: server.password });

    // alpha holds INT-001 for as long as its session lasts: its last step is a command that waits
    // for the `go` file (outside the workspace, read only), written once beta is done and the leases
    // were listed on both machines.
    scratch = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'chokepoint-team-scratch-')));
    const command = `i=0; while [ ! -e ${scratch}/go ] && [ $i -lt 900 ]; do sleep 0.1; i=$((i+1)); done; echo alpha-waited`;
    const t = CLIENTS[AGENT].tools;
    const shell = t.shell(command);
    shell.input.timeout = 180000;
    const serverA = await CLIENTS[AGENT].startServer({
      script: [
        ...t.mcp('select_active_intent', { intent_id: 'INT-001' }),
        { tools: [t.write(machines.alpha, 'src/auth/a.ts', 'export const a = 1;\n')] },
        { tools: [shell] },
        { text: 'Done.' },
      ],
    });
    const serverB = await CLIENTS[AGENT].startServer({
      script: [
        ...t.mcp('select_active_intent', { intent_id: 'INT-001' }),
        { tools: [t.write(machines.beta, 'src/auth/b.ts', 'export const b = 1;\n')] },
        ...t.mcp('select_active_intent', { intent_id: 'INT-002' }),
        { tools: [t.write(machines.beta, 'src/billing/pay.ts', 'export const pay = 1;\n')] },
        { text: 'Done.' },
      ],
    });
    try {
      let aDone = false;
      const aRun = runAgent(AGENT, {
        workspace: machines.alpha,
        prompt: 'Do as scripted.',
        serverUrl: serverA.url,
        timeoutMs: 240000,
        env: envOf('alpha'),
      }).finally(() => (aDone = true));
      try {
        await waitFor(
          () => shellRunning(command),
          90000,
          "alpha's waiting command did not start",
          () => aDone,
        );
        b = await runAgent(AGENT, { workspace: machines.beta, prompt: 'Do as scripted.', serverUrl: serverB.url, timeoutMs: 120000, env: envOf('beta') });
        lists = ['alpha', 'beta'].map((m) => chokepointOn(m, ['intent', 'list', '--workspace', machines[m]]));
      } finally {
        fs.writeFileSync(path.join(scratch, 'go'), 'go\n');
      }
      a = await aRun;
    } finally {
      await serverA.close();
      await serverB.close();
    }
    a.results = serverA.toolResults();
    b.results = serverB.toolResults();
    if (process.env.CHOKEPOINT_AGENTS_DEBUG)
      console.error(JSON.stringify({ a: a.results, b: b.results }, null, 1), a.stderr.slice(-2000), b.stderr.slice(-2000));
  });
  after(async () => {
    for (const dir of [top, scratch]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
    if (server) await server.stop({ remove: true });
  });

  it('lets alpha take INT-001 and write in its scope', () => {
    assert.equal(a.code, 0, `alpha exited ${a.code}: ${a.stderr.slice(-800)}`);
    const waited = a.results.find((r) => r.name === 'Bash');
    assert.ok(waited && waited.content.includes('alpha-waited'), `alpha's waiting command: ${told(a.results)}`);
    assert.equal(read(machines.alpha, 'src/auth/a.ts'), 'export const a = 1;\n', `alpha's write: ${told(a.results)}`);
  });

  it('refuses INT-001 to beta, naming the holder and the machine, worktree and branch it works in', () => {
    assert.equal(b.code, 0, `beta exited ${b.code}: ${b.stderr.slice(-800)}`);
    const refusal = b.results.find((r) => /INT-001/.test(r.content) && /held|locked/i.test(r.content));
    assert.ok(refusal, `beta was not told INT-001 is held: ${told(b.results)}`);
    assert.match(refusal.content, /claude:/, `the refusal does not name alpha's session: ${refusal.content}`);
    assert.match(refusal.content, /machine `alpha`|"machine":"alpha"/, `the refusal does not name alpha's machine: ${refusal.content}`);
    assert.match(refusal.content, /worktree `repo`|"worktree":"repo"/, `the refusal does not name alpha's worktree: ${refusal.content}`);
    assert.match(refusal.content, /branch `main`|"branch":"main"/, `the refusal does not name alpha's branch: ${refusal.content}`);
    assert.equal(read(machines.beta, 'src/auth/b.ts'), null, `beta wrote into INT-001's scope: ${told(b.results)}`);
    assert.equal(read(machines.beta, 'src/billing/pay.ts'), 'export const pay = 1;\n', `beta's write under INT-002: ${told(b.results)}`);
  });

  it("lists alpha's lease with its machine on either machine, from the database", () => {
    for (const [i, list] of lists.entries()) {
      const line = list.split('\n').find((l) => l.includes('INT-001'));
      assert.ok(line && /claude:/.test(line) && /alpha/.test(line), `intent list on ${['alpha', 'beta'][i]}:\n${list}`);
    }
  });
});
