// What the tests of several agents at once share (together.test.js, worktrees.test.js): two intents
// for two agents, the program run as a person runs it, a workspace file read back, and waiting on an
// agent's run (a condition polled with a bound; whether a contained command is running: a command
// that waits keeps its agent's session, and its lease, alive while the test does something else).
'use strict';
const assert = require('node:assert/strict');
const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');
const { PROGRAM } = require('./clients');

/** Two intents, one per agent: authentication (`src/auth/**`) and billing (`src/billing/**`). */
const TWO_INTENTS = `version: 1
active_intents:
  - id: INT-001
    name: Authentication
    status: IN_PROGRESS
    owned_scope: ['src/auth/**']
  - id: INT-002
    name: Billing
    status: IN_PROGRESS
    owned_scope: ['src/billing/**']
`;

/** `chokepoint ARGS`, which must succeed; its stdout. */
function chokepoint(args) {
  const r = spawnSync(PROGRAM, args, { encoding: 'utf8' });
  assert.equal(r.status, 0, `chokepoint ${args.join(' ')}: ${r.stdout}${r.stderr}`);
  return r.stdout;
}

/** A workspace file's text, or null when there is none. */
function read(ws, rel) {
  try {
    return fs.readFileSync(path.join(ws, rel), 'utf8');
  } catch {
    return null;
  }
}

/** Polls `cond` every 50 ms until it is true, `settled()` says the process it waits on ended, or
 *  `ms` passed; fails naming `what`. */
async function waitFor(cond, ms, what, settled = () => false) {
  const end = Date.now() + ms;
  for (;;) {
    if (cond()) return;
    if (settled()) throw new Error(`${what}: the agent ended first`);
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Whether a process runs `bash -c <command>` exactly: a contained shell (the client's own wrapper
 *  and `chokepoint exec` carry more in their command lines). */
function shellRunning(command) {
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    let argv;
    try {
      argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    if (argv[argv.length - 1] === '') argv.pop();
    if (argv.length === 3 && path.basename(argv[0]) === 'bash' && argv[1] === '-c' && argv[2] === command) return true;
  }
  return false;
}

module.exports = { TWO_INTENTS, chokepoint, read, waitFor, shellRunning };
