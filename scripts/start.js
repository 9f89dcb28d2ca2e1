#!/usr/bin/env node
// `npm start`: builds what is stale, then serves a real VS Code (code-server) on 127.0.0.1 with the
// extension loaded from this checkout and the sample workspace open, and prints the URL to open.
//
//   CHOKEPOINT_PORT   the port (default 8557)
//   CHOKEPOINT_CACHE  where VS Code, its profile and the sample workspace live (default ~/.cache/chokepoint)
//   --reset           start from a fresh copy of the sample workspace
//
// Ctrl-C stops every process this started (code-server runs in its own process group). Nothing is
// written outside the cache folder but the build outputs of this checkout.
'use strict';
const fs = require('fs');
const path = require('path');
const { ROOT, log } = require('./lib');
const { build } = require('./build');
const vscode = require('./vscode');

const DEFAULT_PORT = 8557;

async function main() {
  const port = process.env.CHOKEPOINT_PORT ? Number(process.env.CHOKEPOINT_PORT) : DEFAULT_PORT;
  if (!Number.isInteger(port) || port <= 0 || port > 65535) throw new Error(`CHOKEPOINT_PORT must be a port number, not \`${process.env.CHOKEPOINT_PORT}\``);
  if (!(await vscode.portIsFree(port))) throw new Error(`port ${port} on 127.0.0.1 is in use; pick another with CHOKEPOINT_PORT=<port> npm start`);

  await build();
  await vscode.ensureVsCode();

  const runDir = path.join(vscode.CACHE, 'start');
  const workspace = path.join(runDir, 'workspace');
  if (process.argv.includes('--reset') || !fs.existsSync(workspace)) {
    log('start', `creating the sample workspace in ${workspace}`);
    vscode.makeSampleWorkspace(workspace);
  }
  // The extension is this checkout itself, linked into the extensions folder: rebuild, then run
  // "Developer: Reload Window" in VS Code to pick up a change without restarting.
  const extensionsDir = path.join(runDir, 'extensions');
  fs.rmSync(extensionsDir, { recursive: true, force: true });
  fs.mkdirSync(extensionsDir, { recursive: true });
  const { publisher, name, version } = require(path.join(ROOT, 'package.json'));
  fs.symlinkSync(ROOT, path.join(extensionsDir, `${publisher}.${name}-${version}`), 'dir');

  const server = await vscode.startCodeServer({ runDir, port, extensionsDir });
  let stopping = false;
  const stop = (code) => {
    if (stopping) return;
    stopping = true;
    server.stop();
    process.exit(code);
  };
  process.on('SIGINT', () => stop(0));
  process.on('SIGTERM', () => stop(0));
  process.on('exit', () => server.stop());
  server.child.on('exit', (code, signal) => {
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
  console.log(`  Workspace: ${workspace}`);
  console.log(`  VS Code log: ${server.logFile}`);
  console.log('  Press Ctrl-C to stop.');
}

main().catch((e) => {
  console.error(`error: ${e.message}`);
  process.exit(1);
});
