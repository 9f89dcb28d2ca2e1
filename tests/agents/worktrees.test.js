// Issue 28: two agents in two git worktrees of one repository, with the real clients. Claude Code
// works in the main checkout (branch `main`), Codex (CHOKEPOINT_AGENT_B=gemini or claude runs that
// client instead) in a worktree added with `git worktree add ../<repo>-wt2 -b feature`, the way
// every agent runs in parallel. The two share one coordination: A selects INT-001 and writes in its
// scope, then runs a command that waits, so its session (and lease) lasts; meanwhile B asks for
// INT-001 and is refused, told which session holds it, in which worktree and on which branch, its
// write into that scope is denied, and it takes INT-002 instead and writes there; `intent list` in
// either worktree shows A's lease with its worktree and branch. Both branches are committed with everything `git add -A` takes, and merged: no conflict in
// any file, and the merged ledger verifies and shows both agents' records.
'use strict';
const assert = require('node:assert/strict');
const { describe, it, before, after } = require('node:test');
const { spawnSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { ensureAgents } = require('../../scripts/agents');
const { TWO_INTENTS: INTENTS, chokepoint, read, waitFor, shellRunning } = require('./support/together');
const { CLIENTS, runAgent, PROGRAM } = require('./support/clients');

const A = 'claude';
const B = process.env.CHOKEPOINT_AGENT_B || 'codex';

function run(cmd, args, cwd) {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8' });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

function git(cwd, ...args) {
  const r = run('git', ['-c', 'user.name=Test', '-c', 'user.email=test@example.com', '-c', 'init.defaultBranch=main', ...args], cwd);
  assert.equal(r.code, 0, `git ${args.join(' ')} in ${cwd}: ${r.out}`);
  return r.out;
}

/** Every record of the workspace's ledger, oldest first, as `trace show --json` lists them. */
function records(ws) {
  return chokepoint(['trace', 'show', '--workspace', ws, '--json', '--limit', '10000'])
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l))
    .reverse();
}

const told = (results) =>
  JSON.stringify(
    results.map((t) => `${t.name}: ${t.content.slice(0, 600)}`),
    null,
    1,
  );

describe(`${A} in the main checkout and ${B} in a second worktree`, () => {
  let top;
  let main;
  let wt2;
  let scratch;
  let a;
  let b;
  let lists;
  before(async () => {
    assert.ok(fs.existsSync(PROGRAM), `${PROGRAM} is missing: the agents layer builds it (npm run build)`);
    assert.ok(CLIENTS[B] && B !== A, `CHOKEPOINT_AGENT_B is ${B}: codex or gemini`);
    await ensureAgents({ only: [A, B] });
    top = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'chokepoint-worktrees-')));
    main = path.join(top, 'repo');
    wt2 = path.join(top, 'repo-wt2');
    for (const dir of ['.orchestration', 'src/auth', 'src/billing']) fs.mkdirSync(path.join(main, dir), { recursive: true });
    fs.writeFileSync(path.join(main, '.orchestration/active_intents.yaml'), INTENTS);
    fs.writeFileSync(path.join(main, 'README.md'), '# The project\n');
    git(main, 'init', '-q');
    for (const name of [A, B]) chokepoint(['init', '--agent', name, '--workspace', main]);
    // What a team commits: everything `git add -A` takes (the runtime files are ignored by the
    // sidecar's own .gitignore).
    git(main, 'add', '-A');
    git(main, 'commit', '-q', '-m', 'Governed by Chokepoint');
    git(main, 'worktree', 'add', '-q', '-b', 'feature', wt2);

    // A holds INT-001 for as long as its session lasts: its last step is a command that waits for
    // the `go` file (outside the workspace, read only), which the test writes once B is done and the
    // leases were listed from both worktrees.
    scratch = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'chokepoint-worktrees-scratch-')));
    const command = `i=0; while [ ! -e ${scratch}/go ] && [ $i -lt 900 ]; do sleep 0.1; i=$((i+1)); done; echo A-waited`;
    const ta = CLIENTS[A].tools;
    const tb = CLIENTS[B].tools;
    const shell = ta.shell(command);
    shell.input.timeout = 180000;
    const serverA = await CLIENTS[A].startServer({
      script: [
        ...ta.mcp('select_active_intent', { intent_id: 'INT-001' }),
        { tools: [ta.write(main, 'src/auth/a.ts', 'export const a = 1;\n')] },
        { tools: [shell] },
        { text: 'Done.' },
      ],
    });
    const serverB = await CLIENTS[B].startServer({
      script: [
        ...tb.mcp('select_active_intent', { intent_id: 'INT-001' }),
        { tools: [tb.write(wt2, 'src/auth/b.ts', 'export const b = 1;\n')] },
        ...tb.mcp('select_active_intent', { intent_id: 'INT-002' }),
        { tools: [tb.write(wt2, 'src/billing/pay.ts', 'export const pay = 1;\n')] },
        { text: 'Done.' },
      ],
    });
    try {
      let aDone = false;
      const aRun = runAgent(A, { workspace: main, prompt: 'Do as scripted.', serverUrl: serverA.url, timeoutMs: 240000 }).finally(() => (aDone = true));
      try {
        await waitFor(
          () => shellRunning(command),
          90000,
          "A's waiting command did not start",
          () => aDone,
        );
        b = await runAgent(B, { workspace: wt2, prompt: 'Do as scripted.', serverUrl: serverB.url, timeoutMs: 120000 });
        lists = [main, wt2].map((ws) => chokepoint(['intent', 'list', '--workspace', ws]));
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
  after(() => {
    for (const dir of [top, scratch]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('lets A take INT-001 and write in its scope', () => {
    assert.equal(a.code, 0, `A exited ${a.code}: ${a.stderr.slice(-800)}`);
    const waited = a.results.find((t) => t.name === 'Bash');
    assert.ok(waited && waited.content.includes('A-waited'), `A's waiting command: ${told(a.results)}`);
    assert.equal(read(main, 'src/auth/a.ts'), 'export const a = 1;\n', `A's write: ${told(a.results)}`);
  });

  it('refuses INT-001 to B in the other worktree, naming the holder, its worktree and its branch', () => {
    assert.equal(b.code, 0, `B exited ${b.code}: ${b.stderr.slice(-800)}`);
    const refusal = b.results.find((t) => /INT-001/.test(t.content) && /held|locked/i.test(t.content));
    assert.ok(refusal, `B was not told INT-001 is held: ${told(b.results)}`);
    assert.match(refusal.content, /claude:/, `the refusal does not name A's session: ${refusal.content}`);
    assert.match(refusal.content, /worktree `repo`|"worktree":"repo"/, `the refusal does not name A's worktree: ${refusal.content}`);
    assert.match(refusal.content, /branch `main`|"branch":"main"/, `the refusal does not name A's branch: ${refusal.content}`);
    assert.equal(read(wt2, 'src/auth/b.ts'), null, `B wrote into INT-001's scope: ${told(b.results)}`);
    assert.equal(read(wt2, 'src/billing/pay.ts'), 'export const pay = 1;\n', `B's write under INT-002: ${told(b.results)}`);
  });

  it("lists A's lease with its worktree and branch from either worktree", () => {
    for (const [i, list] of lists.entries()) {
      const ws = [main, wt2][i];
      const line = list.split('\n').find((l) => l.includes('INT-001'));
      assert.ok(
        line && /claude:/.test(line) && /worktree `?repo\b(?!-)/.test(line) && /branch `?main\b/.test(line),
        `intent list in ${path.basename(ws)}:\n${list}`,
      );
    }
  });

  it('merges the two branches with no conflict, and the merged ledger verifies and holds both agents', () => {
    git(main, 'add', '-A');
    git(main, 'commit', '-q', '-m', 'A worked');
    git(wt2, 'add', '-A');
    git(wt2, 'commit', '-q', '-m', 'B worked');
    const merge = run('git', ['-c', 'user.name=Test', '-c', 'user.email=test@example.com', 'merge', '--no-edit', 'feature'], main);
    assert.equal(merge.code, 0, `git merge conflicted: ${merge.out}\n${run('git', ['status', '--short'], main).out}`);
    chokepoint(['trace', 'verify', '--workspace', main]);
    const agents = new Set(
      records(main)
        .filter((r) => r.event === 'PreToolUse')
        .map((r) => r.agent),
    );
    assert.ok(agents.has(A) && agents.has(B), `the merged ledger's agents: ${[...agents]}`);
  });
});
