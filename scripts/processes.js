// Finding and ending every process of one VS Code server. Each server's supervisor (scripts/supervise.js)
// carries an environment variable naming the server (SERVER_MARKER=<its run folder>); every process
// under it inherits that variable, even those that left the process group (the terminal shells VS Code
// starts with setsid) or were re-parented after their parent died. So "the processes of a server" is:
// the processes whose environment holds its marker, plus the members of its process group.
// Node built-ins only: the supervisor loads this too.
'use strict';
const fs = require('fs');

const SERVER_MARKER = 'CHOKEPOINT_VSCODE_SERVER';

/** Every live process we can see: pid, parent, process group, and (when readable) its command line and environment. */
function listProcesses() {
  let names;
  try {
    names = fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n));
  } catch {
    throw new Error('cannot list processes: /proc is not readable (Linux is needed to find the processes of a VS Code server)');
  }
  const out = [];
  for (const n of names) {
    try {
      // The command name in /proc/<pid>/stat is in parentheses and may hold spaces: read after the last one.
      const stat = fs.readFileSync(`/proc/${n}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // A zombie has ended already (it only waits for its parent to read its exit status).
      if (fields[0] === 'Z' || fields[0] === 'X') continue;
      out.push({
        pid: Number(n),
        ppid: Number(fields[1]),
        pgid: Number(fields[2]),
        cmdline: readNulList(`/proc/${n}/cmdline`),
        environ: readNulList(`/proc/${n}/environ`),
      });
    } catch {
      // The process ended while we looked.
    }
  }
  return out;
}

function readNulList(file) {
  try {
    return fs.readFileSync(file, 'utf8').split('\0').filter(Boolean);
  } catch {
    return [];
  }
}

/** The processes of the server whose marker is `marker` (and of process group `pgid`, when given),
 *  never this process itself.
 *  @param {string} marker
 *  @param {{ pgid?: number }} [options] */
function serverProcesses(marker, { pgid } = {}) {
  const tag = `${SERVER_MARKER}=${marker}`;
  return listProcesses().filter((p) => p.pid !== process.pid && (p.environ.includes(tag) || (pgid && p.pgid === pgid)));
}

/** When the process started (clock ticks since boot), or null if it has ended (a zombie has): with the
 *  pid, it names one process even after the pid is reused. */
function startTime(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[0] === 'Z' || fields[0] === 'X' ? null : fields[19];
  } catch {
    return null;
  }
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
}

function signal(pid, sig) {
  try {
    process.kill(pid, sig);
  } catch {
    // Already gone.
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Ends every process of a server: SIGTERM first, so VS Code can close its sockets and files, then
 * SIGKILL whatever still runs after `graceMs`. Looks again after the signals, because a process that is
 * ending may still start one. Resolves with how many processes it found.
 * @param {string} marker
 * @param {{ pgid?: number, graceMs?: number }} [options]
 */
async function endServer(marker, { pgid, graceMs = 4000 } = {}) {
  const seen = new Set();
  const deadline = Date.now() + graceMs;
  for (let round = 0; ; round++) {
    const procs = serverProcesses(marker, { pgid });
    if (procs.length === 0) return seen.size;
    const late = Date.now() >= deadline;
    for (const p of procs) {
      if (!seen.has(p.pid) || late) signal(p.pid, late ? 'SIGKILL' : 'SIGTERM');
      seen.add(p.pid);
    }
    if (late && round > 0 && Date.now() > deadline + 2000) {
      throw new Error(`processes of the VS Code server ${marker} survive SIGKILL: ${procs.map((p) => p.pid).join(', ')}`);
    }
    await sleep(100);
  }
}

module.exports = { SERVER_MARKER, listProcesses, serverProcesses, endServer, startTime, alive };
