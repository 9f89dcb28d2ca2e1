// Helpers shared by the npm scripts (build, start, test, bench, package). Node built-ins only.
// The scripts of this folder use Node built-ins only, plus esbuild and playwright-core. The JavaScript of scripts/, tests/ and
// bench/ is type-checked from its JSDoc by TypeScript (tsconfig.js.json, `checkJs`; `npm run typecheck:js`) in the node layer
// of `npm test`.
'use strict';
const { spawn } = require('child_process');
const fs = require('fs');
const path = require('path');

const ROOT = path.resolve(__dirname, '..');
const t0 = Date.now();

function log(scope, ...args) {
  console.log(`[${scope} ${((Date.now() - t0) / 1000).toFixed(1)}s]`, ...args);
}

/** What each long step of this process cost, in the order they ended: `npm start` prints them. */
const steps = [];

/**
 * Runs `work` as one named step: says that it starts and, when it ends, what it cost, and keeps the
 * cost in `steps`. Steps may run at once (the build beside the code-server install).
 * @template T
 * @param {string} scope
 * @param {string} what
 * @param {() => Promise<T>} work
 * @returns {Promise<T>}
 */
async function step(scope, what, work) {
  const started = Date.now();
  log(scope, `${what}…`);
  const result = await work();
  const seconds = (Date.now() - started) / 1000;
  steps.push({ what, seconds });
  log(scope, `${what}: done in ${formatSeconds(seconds)}`);
  return result;
}

/** `42 s` or `3.9 min`. */
function formatSeconds(seconds) {
  return seconds < 90 ? `${seconds.toFixed(0)} s` : `${(seconds / 60).toFixed(1)} min`;
}

/** Runs a command to completion with inherited output; rejects with a readable error on failure. */
function run(cmd, args, opts = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: ROOT, stdio: 'inherit', ...opts });
    child.on('error', (e) => reject(new Error(`cannot run ${cmd}: ${e.message}`)));
    child.on('exit', (code, signal) => {
      if (code === 0) resolve();
      else reject(new Error(`${cmd} ${args.join(' ')} failed (${signal ? `signal ${signal}` : `exit code ${code}`})`));
    });
  });
}

/** Runs a command and captures its output; never rejects on a non-zero exit (the caller decides). */
function capture(cmd, args, opts = {}) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], ...opts });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
      if (opts.echo) process.stdout.write(d);
    });
    child.stderr.on('data', (d) => {
      stderr += d;
      if (opts.echo) process.stderr.write(d);
    });
    child.on('error', (e) => resolve({ code: 127, stdout, stderr: stderr + e.message }));
    child.on('exit', (code, signal) => resolve({ code: code ?? 128, signal, stdout, stderr }));
  });
}

/** The newest modification time under the given files or folders (recursively), skipping `skip`. */
function newestMtime(paths, skip = /(^|\/)(node_modules|target|\.git)(\/|$)/) {
  let newest = 0;
  const visit = (p) => {
    if (skip.test(path.relative(ROOT, p))) return;
    let st;
    try {
      st = fs.statSync(p);
    } catch {
      return;
    }
    if (st.isDirectory()) for (const e of fs.readdirSync(p)) visit(path.join(p, e));
    else newest = Math.max(newest, st.mtimeMs);
  };
  for (const p of paths) visit(path.resolve(ROOT, p));
  return newest;
}

/** True when `output` is missing or older than anything in `inputs`. */
function isStale(output, inputs) {
  try {
    return fs.statSync(path.resolve(ROOT, output)).mtimeMs < newestMtime(inputs);
  } catch {
    return true;
  }
}

/** The environment without an outer `npm run`'s npm_* variables (they leak Node 20's user agent). */
function envWithoutNpm(extra = {}) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));
  return { ...env, ...extra };
}

module.exports = { ROOT, log, step, steps, formatSeconds, run, capture, newestMtime, isStale, envWithoutNpm };
