// The tools that build for other platforms than this one, each installed by the project itself on
// first use, from the registries this machine reaches: rust's standard library per target (rustup),
// zig and cargo-zigbuild (PyPI, pinned, into the cache folder; they link macOS and Linux on Arm),
// Debian's MinGW (the Windows linker). Used by `npm run package -- --all` (scripts/package.js) and
// by the platforms layer of `npm test` (scripts/platforms.js).
'use strict';
const fs = require('fs');
const path = require('path');
const { log, run, capture } = require('./lib');
const vscode = require('./vscode');

/** Pinned: a new zig can change what links. */
const ZIG = 'ziglang==0.17.1';
const ZIGBUILD = 'cargo-zigbuild==0.24.1';
const ZIG_DIR = path.join(vscode.CACHE, 'tools', 'zig-0.17.1');

/** The rust targets of `triples` that rustup has not installed yet, added. */
async function ensureRustTargets(triples) {
  const installed = (await capture('rustup', ['target', 'list', '--installed'])).stdout.split('\n');
  const missing = [...new Set(triples)].filter((t) => !installed.includes(t));
  if (missing.length === 0) return;
  log('setup', `adding rust targets: ${missing.join(', ')}`);
  const r = await capture('rustup', ['target', 'add', ...missing], { echo: true });
  if (r.code !== 0) throw new Error(`rustup target add ${missing.join(' ')} failed`);
}

/** zig and cargo-zigbuild in the cache folder (pip, into a folder of their own, never the system's). */
async function ensureZig() {
  if (fs.existsSync(path.join(ZIG_DIR, 'bin', 'cargo-zigbuild'))) return;
  log('setup', `installing ${ZIG} and ${ZIGBUILD} from PyPI into ${ZIG_DIR}`);
  const partial = `${ZIG_DIR}.partial`;
  fs.rmSync(partial, { recursive: true, force: true });
  await run('python3', ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--target', partial, ZIG, ZIGBUILD]);
  fs.rmSync(ZIG_DIR, { recursive: true, force: true });
  fs.mkdirSync(path.dirname(ZIG_DIR), { recursive: true });
  fs.renameSync(partial, ZIG_DIR);
}

/** The environment in which `cargo zigbuild` (and napi's `--cross-compile`, which runs it) finds
 *  itself and zig, which it runs as `python3 -m ziglang`. */
function zigEnv(env = process.env) {
  return {
    PATH: `${path.join(ZIG_DIR, 'bin')}${path.delimiter}${env.PATH}`,
    PYTHONPATH: env.PYTHONPATH ? `${ZIG_DIR}${path.delimiter}${env.PYTHONPATH}` : ZIG_DIR,
  };
}

/** What building for `platforms` needs (each with `triple` and `zig`). */
async function ensureCrossTools(platforms) {
  if (platforms.some((p) => p.triple.endsWith('-windows-gnu'))) await vscode.ensureSystemPackages({ need: ['gcc-mingw-w64-x86-64'] });
  await ensureRustTargets(platforms.map((p) => p.triple));
  if (platforms.some((p) => p.zig)) await ensureZig();
}

module.exports = { ensureRustTargets, ensureZig, zigEnv, ensureCrossTools, ZIG_DIR };
