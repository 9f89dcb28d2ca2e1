// Waiting on an agent's run from a test: a condition polled with a bound, and whether a contained
// command is running (a command that waits keeps its agent's session, and its lease, alive while the
// test does something else). Used by together.test.js and worktrees.test.js.
'use strict';
const fs = require('fs');
const path = require('path');

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

module.exports = { waitFor, shellRunning };
