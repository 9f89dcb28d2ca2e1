// `npm start` (scripts/start.js) serves a VS Code that nobody else gets into and that never outlives
// it: however it ends (SIGINT, SIGTERM, SIGHUP to its process group as when its terminal closes,
// SIGKILL, which no handler sees, or npm alone stopped), no process of its server is left and the port
// is free; a server left behind anyway is ended by the next start; a request without the password is
// refused.
//
// Each test runs start.js the way `setsid npm start` does (its own process group) on a free port with
// a cache folder of its own, whose `vscode` folder links to the installed VS Code of the real cache (a
// fresh one would install code-server, 2 minutes).
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const vscode = require('../../scripts/vscode');
const { SERVER_MARKER, listProcesses, serverProcesses, endServer } = require('../../scripts/processes');

const START = path.join(__dirname, '../../scripts/start.js');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A cache folder for one test that shares the installed VS Code. */
function tempCache(t) {
  const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'chokepoint-start-test-'));
  fs.symlinkSync(path.join(vscode.CACHE, 'vscode'), path.join(cache, 'vscode'), 'dir');
  t.after(async () => {
    // Whatever a failed test left running: end it before removing its folder.
    await endServer(path.join(cache, 'start'));
    fs.rmSync(cache, { recursive: true, force: true, maxRetries: 3 });
  });
  return cache;
}

/** Runs start.js in its own process group and resolves once it prints that VS Code is running;
 *  `asNpm`: under `sh -c`, as npm runs a script (a second command keeps sh from exec'ing it, so the
 *  shell stays its parent). */
async function npmStart(t, cache, port, { asNpm = false } = {}) {
  const [program, args] = asNpm ? ['/bin/sh', ['-c', `"${process.execPath}" "${START}"; :`]] : [process.execPath, [START]];
  const child = spawn(program, args, {
    env: { ...process.env, CHOKEPOINT_CACHE: cache, CHOKEPOINT_PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  // A failed test may leave it running: SIGKILL is enough, as its supervisor then ends the server.
  t.after(() => {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {}
  });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const run = { child, exited, output: () => output, runDir: path.join(cache, 'start'), port };
  for (const deadline = Date.now() + 120000; !output.includes('Press Ctrl-C to stop.');) {
    const ended = await Promise.race([exited, sleep(100)]);
    if (ended) throw new Error(`npm start ended before VS Code ran (${JSON.stringify(ended)}):\n${output}`);
    if (Date.now() > deadline) throw new Error(`npm start did not say VS Code runs within 120 s:\n${output}`);
  }
  return run;
}

/** Resolves with the value `probe()` returns once it is truthy, or fails after `ms`. */
async function eventually(what, probe, ms = 15000) {
  for (const deadline = Date.now() + ms; ; await sleep(100)) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > deadline) assert.fail(`${what}: not within ${ms / 1000} s`);
  }
}

async function answers(port) {
  try {
    return (await fetch(`http://127.0.0.1:${port}/healthz`)).ok;
  } catch {
    return false;
  }
}

/** Fails unless no process of the server is left and its port is free. */
async function assertAllGone(run) {
  const left = serverProcesses(run.runDir);
  assert.deepEqual(
    left.map((p) => `${p.pid} ${p.cmdline.join(' ')}`),
    [],
    'processes of the VS Code server are left',
  );
  assert.equal(await vscode.portIsFree(run.port), true, `port ${run.port} is still taken`);
  assert.equal(await answers(run.port), false);
}

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  test(`${signal} to npm start's process group ends its VS Code server and every process under it`, async (t) => {
    const run = await npmStart(t, tempCache(t), await vscode.freePort());
    assert.ok(serverProcesses(run.runDir).length >= 2, 'the supervisor and code-server run');
    assert.ok(fs.existsSync(path.join(run.runDir, 'server.pid')));
    process.kill(-run.child.pid, signal);
    const ended = await Promise.race([run.exited, sleep(20000).then(() => 'still running')]);
    assert.notEqual(ended, 'still running', `npm start did not end within 20 s of ${signal}:\n${run.output()}`);
    // No waiting: npm start ends only after its server has.
    await assertAllGone(run);
    assert.equal(fs.existsSync(path.join(run.runDir, 'server.pid')), false, 'a clean stop removes the pid file');
  });
}

test('SIGHUP to npm start ends what runs in a terminal of its VS Code, even a process that left the terminal (setsid nohup)', async (t) => {
  const cache = tempCache(t);
  const run = await npmStart(t, cache, await vscode.freePort());
  const browserDir = path.join(cache, 'browser');
  fs.mkdirSync(browserDir);
  const browser = await vscode.launchBrowser({ runDir: browserDir });
  t.after(() => browser.close().catch(() => {}));
  const page = await browser.newPage();
  const url = /http:\/\/127\.0\.0\.1:\d+\/\?folder=\S+/.exec(run.output())[0];
  // Logging in as a person would: the URL npm start printed leads to the password form.
  await page.goto(url);
  await page.locator('input[type=password]').fill(fs.readFileSync(path.join(run.runDir, 'password'), 'utf8').trim());
  await page.keyboard.press('Enter');
  await page.locator('.monaco-workbench').waitFor({ timeout: 60000 });
  // Chokepoint activates and, this being the profile's first run, opens its walkthrough: once that
  // has taken the focus, the terminal keeps it.
  await page
    .locator('.statusbar')
    .getByText(/Chokepoint \d/)
    .first()
    .waitFor({ timeout: 90000 });
  await page
    .locator('.gettingStartedContainer, .getting-started-step')
    .first()
    .waitFor({ timeout: 15000 })
    .catch(() => {});
  await sleep(1500);
  // A process that neither the server's process group nor the terminal's hangup reaches.
  const escaped = () => serverProcesses(run.runDir).filter((p) => p.cmdline.join(' ') === 'sleep 987');
  await eventually(
    'a terminal runs `setsid nohup sleep 987`',
    async () => {
      await page.keyboard.press('F1');
      await page.keyboard.type('Terminal: Create New Terminal');
      await page.keyboard.press('Enter');
      const terminal = page.locator('.terminal-wrapper.active');
      await terminal.waitFor({ timeout: 10000 }).catch(() => {});
      await sleep(1500);
      // The walkthrough's page loads its step after it opened and may take the focus back: the
      // terminal is clicked, as a person would, before typing in it.
      await terminal.click({ timeout: 5000 }).catch(() => {});
      await page.keyboard.type('setsid nohup sleep 987 >/dev/null 2>&1 &');
      await page.keyboard.press('Enter');
      await sleep(1000);
      return escaped().length > 0;
    },
    60000,
  );
  const pids = new Set(escaped().map((p) => p.pid));

  process.kill(-run.child.pid, 'SIGHUP');
  await run.exited;
  await assertAllGone(run);
  assert.deepEqual(
    listProcesses().filter((p) => pids.has(p.pid)),
    [],
    'the process started in the terminal still runs',
  );
});

test('when npm start is SIGKILLed, its VS Code server ends too (the supervisor sees its pipe close)', async (t) => {
  const run = await npmStart(t, tempCache(t), await vscode.freePort());
  process.kill(run.child.pid, 'SIGKILL');
  await run.exited;
  await eventually('the server ends', async () => serverProcesses(run.runDir).length === 0 && !(await answers(run.port)));
  await assertAllGone(run);
});

test('when npm alone is stopped (`kill <its pid>`, passed on to its `sh -c` only), npm start sees its parent gone and ends its server', async (t) => {
  const run = await npmStart(t, tempCache(t), await vscode.freePort(), { asNpm: true });
  const started = JSON.parse(fs.readFileSync(path.join(run.runDir, 'server.pid'), 'utf8')).npmStart.pid;
  assert.notEqual(started, run.child.pid, 'start.js runs under the shell');
  process.kill(run.child.pid, 'SIGTERM');
  await run.exited;
  await eventually('npm start ends', () => !listProcesses().some((p) => p.pid === started));
  await assertAllGone(run);
  assert.match(run.output(), /the process that started this one \(pid \d+\) has ended: stopping/);
});

test('when VS Code fails under npm start, npm start says so, exits non-zero and leaves none of its processes', async (t) => {
  const run = await npmStart(t, tempCache(t), await vscode.freePort());
  const { supervisor } = JSON.parse(fs.readFileSync(path.join(run.runDir, 'server.pid'), 'utf8'));
  const codeServer = serverProcesses(run.runDir).find((p) => p.pid !== supervisor.pid && p.cmdline.some((a) => a.endsWith('entry.js')));
  process.kill(codeServer.pid, 'SIGKILL');
  const ended = await Promise.race([run.exited, sleep(20000).then(() => 'still running')]);
  assert.deepEqual(ended, { code: 1, signal: null }, run.output());
  assert.match(run.output(), /error: VS Code stopped \(exit code \d+\); its log: /);
  await assertAllGone(run);
});

test('a server an earlier npm start left behind is found and ended by the next one, which says so', async (t) => {
  const cache = tempCache(t);
  const first = await npmStart(t, cache, await vscode.freePort());
  const { supervisor } = JSON.parse(fs.readFileSync(path.join(first.runDir, 'server.pid'), 'utf8'));
  // Leave a server behind: npm start and the supervisor both die without a chance to stop it (npm
  // start frozen first, so it cannot react to the supervisor's death).
  process.kill(first.child.pid, 'SIGSTOP');
  process.kill(supervisor.pid, 'SIGKILL');
  process.kill(first.child.pid, 'SIGKILL');
  await first.exited;
  await sleep(500);
  const leftover = serverProcesses(first.runDir);
  assert.ok(leftover.length >= 1, 'code-server outlives its supervisor');
  assert.equal(await answers(first.port), true, 'the leftover server still answers');

  // Same cache, same port: the port is only free once the leftover has been ended.
  const second = await npmStart(t, cache, first.port);
  assert.match(second.output(), /a VS Code server that an earlier npm start left running on port \d+ \(\d+ processes/);
  const leftoverPids = new Set(leftover.map((p) => p.pid));
  assert.deepEqual(
    listProcesses().filter((p) => leftoverPids.has(p.pid)),
    [],
    'processes of the leftover server still run',
  );
  assert.equal(await answers(second.port), true);
  process.kill(-second.child.pid, 'SIGTERM');
  await second.exited;
  await assertAllGone(second);
});

test('a second npm start with the same cache folder refuses while the first runs, and leaves it running', async (t) => {
  const cache = tempCache(t);
  const first = await npmStart(t, cache, await vscode.freePort());
  await assert.rejects(npmStart(t, cache, await vscode.freePort()), /npm start already runs with the cache folder/);
  assert.equal(await answers(first.port), true);
  process.kill(-first.child.pid, 'SIGTERM');
  await first.exited;
  await assertAllGone(first);
});

test('the served VS Code refuses a request without the password and lets one with it in', async (t) => {
  const run = await npmStart(t, tempCache(t), await vscode.freePort());
  const base = `http://127.0.0.1:${run.port}`;
  const passwordFile = path.join(run.runDir, 'password');
  const password = fs.readFileSync(passwordFile, 'utf8').trim();
  assert.equal(fs.statSync(passwordFile).mode & 0o777, 0o600, 'the password file is readable by its user only');
  assert.ok(password.length >= 20);
  assert.ok(run.output().includes(`Password: ${password}`), 'npm start prints the password with the URL');
  const url = new URL(/http:\/\/127\.0\.0\.1:\d+\/\?folder=\S+/.exec(run.output())[0]);

  const without = await fetch(url, { redirect: 'manual' });
  assert.equal(without.status, 302);
  assert.match(without.headers.get('location'), /login/);
  const wrong = await fetch(`${base}/login`, { method: 'POST', redirect: 'manual', body: new URLSearchParams({ password: 'not-the-password' }) });
  assert.equal(wrong.headers.get('set-cookie'), null, 'a wrong password gets no session');

  const login = await fetch(`${base}/login`, { method: 'POST', redirect: 'manual', body: new URLSearchParams({ password }) });
  const cookie = /^[^;]+/.exec(login.headers.get('set-cookie') || '')?.[0];
  assert.ok(cookie, `the password gets a session cookie (HTTP ${login.status})`);
  const withCookie = await fetch(url, { redirect: 'manual', headers: { cookie } });
  assert.equal(withCookie.status, 200);
  assert.match(await withCookie.text(), /<html/i);

  process.kill(-run.child.pid, 'SIGTERM');
  await run.exited;
  // The password stays for the next run, so a browser that logged in stays logged in.
  assert.equal(fs.readFileSync(passwordFile, 'utf8').trim(), password);
});

test("ending a server also ends a process under it that left its process group (found by the server's marker)", async (t) => {
  const runDir = fs.mkdtempSync(path.join(os.tmpdir(), 'chokepoint-marker-test-'));
  t.after(() => fs.rmSync(runDir, { recursive: true, force: true }));
  // As a terminal shell under VS Code's pty host: its own session, re-parented once its parent exits.
  const shell = spawn('sleep', ['600'], { env: { ...process.env, [SERVER_MARKER]: runDir }, detached: true, stdio: 'ignore' });
  const other = spawn('sleep', ['600'], { detached: true, stdio: 'ignore' });
  t.after(() => [shell, other].forEach((c) => c.kill('SIGKILL')));
  await eventually('the processes start', () => serverProcesses(runDir).length === 1);
  assert.equal(await endServer(runDir), 1);
  assert.deepEqual(serverProcesses(runDir), []);
  assert.ok(
    listProcesses().some((p) => p.pid === other.pid),
    'a process without the marker is left alone',
  );
});
