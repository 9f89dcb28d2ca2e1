#!/usr/bin/env node
// `npm start`: builds what is stale, then serves a real VS Code (code-server) on 127.0.0.1 with the
// extension loaded from this checkout and the sample workspace open, and prints the URL to open and
// the password it asks for.
//
//   CHOKEPOINT_PORT   the port (default 8557)
//   CHOKEPOINT_CACHE  where VS Code, its profile and the sample workspace live (default ~/.cache/chokepoint)
//   --reset           start from a fresh copy of the sample workspace
//
// A VS Code server is a shell for whoever reaches its port, so it must never outlive `npm start` and
// never be open to other local users:
// - it asks for a password: a random one kept in <cache>/start/password (mode 0600), printed below;
// - Ctrl-C, SIGTERM and SIGHUP (the terminal closing) stop every process this started, and so does
//   the end of the process that started this one (`kill <pid of npm>`, whose `sh -c` passes no
//   signal on); if this process dies without a chance to (SIGKILL), the server's supervisor sees its
//   pipe from us close and stops it (scripts/supervise.js);
// - <cache>/start/server.pid names the running server; a later `npm start` ends a server an earlier
//   run left behind, and says so.
// Nothing is written outside the cache folder but the build outputs of this checkout.
'use strict';
const fs = require('fs');
const path = require('path');
const { ROOT, log, steps, formatSeconds } = require('./lib');
const { build } = require('./build');
const vscode = require('./vscode');
const { serverProcesses, endServer, startTime } = require('./processes');

const DEFAULT_PORT = 8557;
const RUN_DIR = path.join(vscode.CACHE, 'start');
const PID_FILE = path.join(RUN_DIR, 'server.pid');
const PASSWORD_FILE = path.join(RUN_DIR, 'password');

let server = null;

async function main() {
  // When the terminal closes, writing to it fails (EIO): stopping must not depend on being heard.
  for (const s of [process.stdout, process.stderr]) s.on('error', () => {});
  stopWhenOrphaned();
  const port = process.env.CHOKEPOINT_PORT ? Number(process.env.CHOKEPOINT_PORT) : DEFAULT_PORT;
  if (!Number.isInteger(port) || port <= 0 || port > 65535) throw new Error(`CHOKEPOINT_PORT must be a port number, not \`${process.env.CHOKEPOINT_PORT}\``);
  fs.mkdirSync(RUN_DIR, { recursive: true, mode: 0o700 });
  fs.chmodSync(RUN_DIR, 0o700);
  await endLeftoverServer();
  if (!(await vscode.portIsFree(port))) throw new Error(`port ${port} on 127.0.0.1 is in use; pick another with CHOKEPOINT_PORT=<port> npm start`);

  // The build compiles (CPU) while the first run's code-server install mostly downloads (network and
  // disk): side by side, a first start costs about the longer of the two instead of their sum.
  const started = Date.now();
  await Promise.all([build(), vscode.ensureVsCode()]);
  if (steps.length > 1) {
    const costs = steps.map((s) => `${s.what.split(' (')[0].replace(/^installing /, '')} ${formatSeconds(s.seconds)}`).join(', ');
    log('start', `ready to serve after ${formatSeconds((Date.now() - started) / 1000)} (${costs}; the build and the install run side by side)`);
  }

  const workspace = path.join(RUN_DIR, 'workspace');
  if (process.argv.includes('--reset') || !fs.existsSync(workspace)) {
    log('start', `creating the sample workspace in ${workspace}`);
    vscode.makeSampleWorkspace(workspace);
  }
  // The extension is this checkout itself, linked into the extensions folder: rebuild, then run
  // "Developer: Reload Window" in VS Code to pick up a change without restarting.
  const extensionsDir = path.join(RUN_DIR, 'extensions');
  fs.rmSync(extensionsDir, { recursive: true, force: true });
  fs.mkdirSync(extensionsDir, { recursive: true });
  const { publisher, name, version } = require(path.join(ROOT, 'package.json'));
  fs.symlinkSync(ROOT, path.join(extensionsDir, `${publisher}.${name}-${version}`), 'dir');

  const password = sessionPassword();
  server = await vscode.startCodeServer({ runDir: RUN_DIR, port, extensionsDir, password });
  writePidFile(server);
  let stopping = false;
  const stop = async (code) => {
    if (stopping) return;
    stopping = true;
    await stopServer();
    process.exit(code);
  };
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, () => stop(0));
  server.exit.then(({ code, signal }) => {
    if (!stopping) {
      console.error(`error: VS Code stopped (${signal || `exit code ${code}`}); its log: ${server.logFile}`);
      stop(1);
    }
  });

  console.log('');
  console.log(`  Chokepoint is running in VS Code. Open:`);
  console.log('');
  console.log(`    ${server.url(workspace)}`);
  console.log('');
  console.log(`  Password: ${password}   (kept in ${PASSWORD_FILE})`);
  console.log(`  Workspace: ${workspace}`);
  console.log(`  VS Code log: ${server.logFile}`);
  console.log('  Press Ctrl-C to stop.');
}

/** How often this process looks whether the one that started it is still there. */
const PARENT_POLL_MS = 1000;

/**
 * Stops this run, as SIGTERM does, once the process that started it has ended. `kill <pid of npm>`
 * ends npm and the `sh -c` it runs this script in, which passes the signal no further: without this,
 * this process, and the VS Code server it serves, would live on with nobody to stop them. Before the
 * server runs, SIGTERM's default ends the build or install in progress with this process.
 */
function stopWhenOrphaned() {
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid === parent) return;
    log('start', `the process that started this one (pid ${parent}) has ended: stopping`);
    process.kill(process.pid, 'SIGTERM');
  }, PARENT_POLL_MS).unref();
}

/** Ends the server this run started and forgets it. */
async function stopServer() {
  if (!server) return;
  await server.stop();
  fs.rmSync(PID_FILE, { force: true });
}

/**
 * The password the server asks for: the one in PASSWORD_FILE, so a browser that logged in once stays
 * logged in across restarts, or a new random one when there is none or when the file could have been
 * read by another user.
 */
function sessionPassword() {
  try {
    const st = fs.statSync(PASSWORD_FILE);
    const saved = fs.readFileSync(PASSWORD_FILE, 'utf8').trim();
    if ((st.mode & 0o077) === 0 && st.uid === process.getuid() && saved.length >= 16) return saved;
    log('start', `${PASSWORD_FILE} is not a password only you can read; making a new one`);
  } catch (e) {
    if (e.code !== 'ENOENT') throw new Error(`cannot read ${PASSWORD_FILE}: ${e.message}; delete it and start again`);
  }
  fs.rmSync(PASSWORD_FILE, { force: true });
  const password = vscode.randomPassword();
  // 'wx': created here with mode 0600, never an existing file (or a link someone put in its place).
  fs.writeFileSync(PASSWORD_FILE, `${password}\n`, { mode: 0o600, flag: 'wx' });
  return password;
}

/** What PID_FILE records: the supervisor (the leader of the server's process group) and this process,
 *  each with its start time, so a pid reused by an unrelated process is never taken for ours. */
function writePidFile(s) {
  const record = {
    supervisor: { pid: s.child.pid, started: startTime(s.child.pid) },
    npmStart: { pid: process.pid, started: startTime(process.pid) },
    port: s.port,
  };
  fs.writeFileSync(PID_FILE, `${JSON.stringify(record)}\n`, { mode: 0o600 });
}

function readPidFile() {
  try {
    return JSON.parse(fs.readFileSync(PID_FILE, 'utf8'));
  } catch {
    return null;
  }
}

const isRunning = (p) => Boolean(p && p.pid && p.started && startTime(p.pid) === p.started);

/**
 * Ends a server that an earlier `npm start` with this cache folder left running (its own end came
 * without a chance to stop it, and its supervisor was killed too). Only processes that carry this
 * cache's server marker in their environment are ended: the marker is inherited from the supervisor
 * and nothing else has it, so a pid in a stale file that now names another process is left alone.
 * Refuses when that earlier `npm start` still runs: two would share one workspace and profile.
 */
async function endLeftoverServer() {
  const record = readPidFile();
  if (record && isRunning(record.npmStart) && record.npmStart.pid !== process.pid) {
    throw new Error(
      `npm start already runs with the cache folder ${vscode.CACHE} (pid ${record.npmStart.pid}, port ${record.port}); ` +
        `stop it first (Ctrl-C in its terminal, or kill ${record.npmStart.pid}), or start this one with another CHOKEPOINT_CACHE`,
    );
  }
  const left = serverProcesses(RUN_DIR);
  if (left.length > 0) {
    const where = record && record.port ? ` on port ${record.port}` : '';
    log(
      'start',
      `a VS Code server that an earlier npm start left running${where} (${left.length} processes: ${left.map((p) => p.pid).join(', ')}) is being ended`,
    );
    await endServer(RUN_DIR);
    log('start', 'the earlier VS Code server has ended');
  }
  fs.rmSync(PID_FILE, { force: true });
}

main().catch(async (e) => {
  console.error(`error: ${e.message}`);
  await stopServer().catch(() => {});
  process.exit(1);
});
