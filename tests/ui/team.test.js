// Issue 29: an ask raised on one machine, answered in VS Code on another. A PostgreSQL server started
// by the test is the team's database, named by the repository's committed hooks.yaml (no password).
// VS Code (code-server with the packed .vsix, Debian's Chromium on its workbench) works on machine
// `beta`, in a repository whose origin machine `alpha` cloned; each machine has its name and the
// password in its environment. The real Claude Code on `alpha`, with no VS Code or live engine there,
// writes a file a hook escalates with `ask`: its hook shares the Pending through the database and
// waits; the card appears in beta's Approvals naming machine alpha, the person approves it there,
// and the write runs on alpha, whose ledger records the decision and beta as where it was made. Then
// the Trace section's team scope lists alpha's record (copied by `trace show --team` there) beside
// beta's own (copied by VS Code's engine in the background), each labelled `machine · worktree`, and
// beta's Sessions view lists a session of alpha's holding an intent with its machine; with
// the database killed it says why instead of listing, and lists again once it is back.
'use strict';
const { before, after, test } = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawnSync } = require('child_process');
const { ROOT } = require('../../scripts/lib');
const { ledgerRecords } = require('../support/ledger');
const postgres = require('../support/postgres');
const { startVsCode } = require('./harness');
const { ensureAgents } = require('../../scripts/agents');
const { CLIENTS, runAgent } = require('../agents/support/clients');

const CLI = path.join(ROOT, 'target/release/chokepoint');
const version = require(path.join(ROOT, 'package.json')).version;
delete process.env.NODE_TEST_CONTEXT;

function git(cwd, ...args) {
  const r = spawnSync('git', ['-c', 'user.name=Test', '-c', 'user.email=test@example.com', '-c', 'init.defaultBranch=main', ...args], {
    cwd,
    encoding: 'utf8',
  });
  assert.strictEqual(r.status, 0, `git ${args.join(' ')} in ${cwd}: ${r.stdout}${r.stderr}`);
}

function chokepoint(args, env = {}) {
  const r = spawnSync(CLI, args, { encoding: 'utf8', env: { ...process.env, ...env } });
  assert.strictEqual(r.status, 0, `chokepoint ${args.join(' ')}: ${r.stdout}${r.stderr}`);
  return r.stdout;
}

let pg, vsc, page, sidebar, scratch, alpha;
const approvals = () => sidebar().getByTestId('approvals');

before(async () => {
  pg = await postgres.start();
  await ensureAgents({ only: ['claude'] });
  vsc = await startVsCode({ env: { CHOKEPOINT_MACHINE: 'beta', PGPASSWORD: pg.password } });
  ({ page, sidebar } = vsc);
  await page.locator('.statusbar').getByText(`Chokepoint ${version}`).waitFor({ timeout: 90000 });
  const beta = vsc.workspace;
  scratch = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'chokepoint-ui-team-')));
  const origin = path.join(scratch, 'origin.git');
  git(scratch, 'init', '-q', '--bare', origin);
  // VS Code opened the folder before it was a repository, so the engine cannot name the team's rows
  // by the origin's URL: hooks.yaml names the repository (`coordination.repository`), for every clone.
  git(beta, 'init', '-q');
  git(beta, 'remote', 'add', 'origin', origin);
  // The team's repository, as beta's person commits it: the governance, Claude Code's hooks, and the
  // team's database in hooks.yaml (the URL only; each machine has the password).
  fs.writeFileSync(
    path.join(beta, '.orchestration/hooks.yaml'),
    `version: 1
hooks:
  PreToolUse:
    - name: confirm-claude-writes
      tool: Write
      ask: "a person confirms what Claude Code writes"
coordination:
  url: ${pg.url}
  repository: acme/web
`,
  );
  chokepoint(['init', '--agent', 'claude', '--workspace', beta]);
  git(beta, 'add', '-A');
  git(beta, 'commit', '-q', '-m', 'Governed by Chokepoint, coordinated on the team database');
  git(beta, 'push', '-q', 'origin', 'HEAD:main');
  git(scratch, 'clone', '-q', origin, 'alpha');
  alpha = path.join(scratch, 'alpha');
  // alpha names the program in Claude Code's local settings, as a person with chokepoint off PATH would.
  chokepoint(['init', '--agent', 'claude', '--workspace', alpha, '--local', '--program', CLI]);
  await vsc.openSidebar();
  await approvals().waitFor({ timeout: 30000 });
  // The engine picked the new hooks.yaml up, and with it the team's database.
  await page
    .locator('.statusbar')
    .getByText(/Chokepoint .* · team: 127\.0\.0\.1:\d+\/chokepoint/)
    .first()
    .waitFor({ timeout: 30000 });
});

after(async () => {
  if (vsc) await vsc.stop();
  if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
  if (pg) await pg.stop({ remove: true });
});

test("Claude Code's ask on machine alpha waits on a card in VS Code on machine beta, and its write runs once approved there", async () => {
  const CONTENT = "'use strict';\n// written by Claude Code on alpha, approved in VS Code on beta\n";
  const t = CLIENTS.claude.tools;
  const script = [...t.mcp('select_active_intent', { intent_id: 'INT-001' }), { tools: [t.write(alpha, 'src/auth/claude.js', CONTENT)] }, { text: 'Done.' }];
  const model = await CLIENTS.claude.startServer({ script });
  const env = { CHOKEPOINT_MACHINE: 'alpha', PGPASSWORD: pg.password };
  let r;
  const run = runAgent('claude', { workspace: alpha, prompt: 'Do as scripted.', serverUrl: model.url, timeoutMs: 150000, env });
  try {
    const card = approvals().getByTestId('pending').filter({ hasText: 'Claude Code' });
    await card.waitFor({ timeout: 90000 });
    const text = await card.textContent();
    assert.match(text, /alpha/, `the card does not name the machine that asks: ${text}`);
    assert.match(text, /a person confirms what Claude Code writes/);
    await card.getByTestId('action-approve').click();
    await card.waitFor({ state: 'detached', timeout: 15000 });
  } finally {
    r = await run;
    await model.close();
  }
  assert.strictEqual(r.timedOut, false, `claude timed out; stderr: ${r.stderr.slice(-800)}`);
  assert.strictEqual(r.code, 0, `claude exited ${r.code}; stderr: ${r.stderr.slice(-800)}`);
  assert.strictEqual(fs.readFileSync(path.join(alpha, 'src/auth/claude.js'), 'utf8'), CONTENT, 'the approved write ran on alpha');
  assert.ok(!fs.existsSync(path.join(vsc.workspace, 'src/auth/claude.js')), 'nothing was written on beta');

  // alpha's ledger has the person's decision, made on beta.
  const decided = ledgerRecords(alpha).filter((x) => x.kind === 'approval' && x.data.phase === 'decision' && /^claude:/.test(x.session ?? ''));
  assert.strictEqual(decided.length, 1, JSON.stringify(decided));
  assert.strictEqual(decided[0].data.status, 'approved');
  assert.strictEqual(decided[0].data.decided_machine, 'beta', JSON.stringify(decided[0].data));

  // A session on alpha holding an intent (Claude Code's ended with its run, and its lease with it):
  // beta's Sessions view lists it from the team's leases, with the machine and the worktree and
  // branch it works in (another clone: nothing of it is in beta's own trace, so the view is read
  // again by its Refresh).
  chokepoint(['intent', 'select', '--workspace', alpha, '--session', 'claude:on-alpha', '--agent', 'claude', 'INT-002'], env);
  await vsc.openSidebar();
  const tree = await vsc.sessionsView();
  await vsc.runCommand('Chokepoint: Refresh Sessions');
  const fromAlpha = tree.locator('.monaco-list-row').filter({ hasText: /^Claude Code · claude:on-alpha · alpha · alpha · main/ });
  await fromAlpha.waitFor({ timeout: 30000 });
  assert.match(await fromAlpha.locator('.label-description').textContent(), /^INT-002 held until /);
  chokepoint(['intent', 'release', '--workspace', alpha, '--session', 'claude:on-alpha'], env);
});

test("a hook call on machine alpha is listed in beta's Trace in the team scope, with its machine; a database gone down shows why", async () => {
  const env = { CHOKEPOINT_MACHINE: 'alpha', PGPASSWORD: pg.password };
  const session = 'team-trace-from-alpha';
  const input = {
    session_id: session,
    cwd: alpha,
    hook_event_name: 'PreToolUse',
    tool_name: 'Read',
    tool_input: { file_path: path.join(alpha, 'README.md') },
    tool_use_id: 'team-trace-1',
  };
  const r = spawnSync(CLI, ['hook', '--agent', 'claude', '--local', '--workspace', alpha], {
    input: JSON.stringify(input),
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });
  assert.strictEqual(r.status, 0, `chokepoint hook on alpha: ${r.stdout}${r.stderr}`);
  // A hook process does not copy (native/core/src/ledger/team_copy.rs: who copies, and when); the team's trace on alpha copies
  // alpha's records before it lists them, as a live engine there would in the background.
  assert.match(chokepoint(['trace', 'show', '--team', '--json', '--workspace', alpha], env), new RegExp(session));
  // A call on beta, judged by VS Code's live engine there (its hook finds it by code-server's runtime
  // folder), which copies its own records to the database in the background.
  const own = 'team-trace-from-beta';
  const betaEnv = { CHOKEPOINT_MACHINE: 'beta', PGPASSWORD: pg.password, XDG_RUNTIME_DIR: path.join(vsc.runDir, 'xdg', 'run') };
  const onBeta = {
    ...input,
    session_id: own,
    cwd: vsc.workspace,
    tool_input: { file_path: path.join(vsc.workspace, 'README.md') },
    tool_use_id: 'team-trace-2',
  };
  const rb = spawnSync(CLI, ['hook', '--agent', 'claude', '--workspace', vsc.workspace], {
    input: JSON.stringify(onBeta),
    encoding: 'utf8',
    env: { ...process.env, ...betaEnv },
  });
  assert.strictEqual(rb.status, 0, `chokepoint hook on beta: ${rb.stdout}${rb.stderr}`);

  await vsc.openSidebar();
  const trace = await vsc.traceView();
  const rows = trace.locator('.monaco-list-row');
  // A session of the team's trace names the machine and worktree that wrote it.
  const fromAlpha = rows.filter({ hasText: 'alpha · alpha' });
  const fromBeta = rows.filter({ hasText: `beta · ${path.basename(vsc.workspace)}` });
  await rows
    .filter({ hasText: /records?, newest first/ })
    .first()
    .waitFor({ timeout: 30000 });
  assert.strictEqual(await fromAlpha.count(), 0, "alpha's record is not in beta's own ledger: this worktree is the scope to begin with");

  await vsc.runCommand("Chokepoint: Show the Team's Trace");
  await fromAlpha.first().waitFor({ timeout: 20000 });
  await rows.filter({ hasText: "every machine's records (this is beta)" }).waitFor();
  // beta's own record, copied by its live engine without anyone asking, is listed beside it.
  await fromBeta.first().waitFor({ timeout: 20000 });
  assert.strictEqual(await rows.filter({ hasText: 'copied when the team' }).count(), 0, 'nothing waits to be copied');

  // The database goes down: the periodic refresh shows why instead of the records, never an empty list.
  await pg.kill();
  try {
    await rows.filter({ hasText: "Cannot read the team's trace" }).waitFor({ timeout: 20000 });
    assert.strictEqual(await fromAlpha.count(), 0);
    const warning = (await rows.filter({ hasText: 'copied when the team' }).first().textContent()) ?? '';
    assert.match(warning, /kept here and copied when the team.s database returns.*cannot be reached/);
  } finally {
    await pg.restart();
  }
  // Back: the next refresh lists the records again.
  await fromAlpha.first().waitFor({ timeout: 60000 });
  await vsc.runCommand("Chokepoint: Show This Worktree's Trace");
  await fromAlpha.first().waitFor({ state: 'detached', timeout: 15000 });
});
