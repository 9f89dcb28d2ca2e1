#!/usr/bin/env node
// `npm run build`: builds what is stale — the release native addon, the release CLI, and the
// esbuild bundles of the extension and the webview. Cheap to call when nothing changed. Deliberately no `postinstall` build:
// `npm install` only installs; `npm start` and `npm test` build what is stale.
'use strict';
const fs = require('fs');
const path = require('path');
const { ROOT, step, run, isStale } = require('./lib');

const RUST_INPUTS = ['Cargo.toml', 'Cargo.lock', 'native/core', 'native/node/src', 'native/node/Cargo.toml', 'native/node/build.rs'];
const CLI_INPUTS = [...RUST_INPUTS, 'native/cli'];
const BIN = path.join(ROOT, 'node_modules', '.bin');

async function buildNative({ force = false } = {}) {
  // Any platform's addon in native/node counts: napi names it by triple (extension/src/engine/native.ts).
  const addons = fs.readdirSync(path.join(ROOT, 'native/node')).filter((f) => /^chokepoint\..+\.node$/.test(f));
  if (force || addons.length === 0 || addons.some((f) => isStale(path.join('native/node', f), RUST_INPUTS))) {
    // The addon and the CLI share every dependency they have in common, compiled once: both depend on
    // native/hack, which asks the union of their features (its Cargo.toml says why).
    await step('build', 'native addon (release)', () => run(path.join(BIN, 'napi'), ['build', '--platform', '--release', '--cwd', 'native/node']));
  }
  const cli = path.join(ROOT, 'target', 'release', 'chokepoint');
  const linkStatic = canLinkStatically();
  if (force || isStale(cli, CLI_INPUTS) || (linkStatic && !isStaticallyLinked(cli))) {
    // Statically linked where glibc's static libraries are installed: `chokepoint hook` is a whole
    // process per tool call of another agent, and a static program starts without the dynamic loader
    // (measured: a served hook 2.14 → 1.66 ms, /bin/true 0.9 ms). Only the program's own crate gets
    // the flags (`cargo rustc`), so no dependency is built twice; a target-wide crt-static would also
    // refuse the napi addon (a shared library) and the proc-macros.
    const flags = linkStatic ? ['--', '-C', 'target-feature=+crt-static', '-C', 'relocation-model=static'] : [];
    // For the host named as a target, as napi names it for the addon: its dependencies are then the
    // addon's, compiled once (target/<host>/release), where without `--target` they would be compiled
    // again into target/release. The program is copied to target/release/chokepoint, where everything
    // else looks for it.
    const host = hostTriple();
    await step('build', `chokepoint CLI (release${linkStatic ? ', linked statically' : ''})`, () =>
      run('cargo', ['rustc', '--release', '--target', host, '-p', 'chokepoint-cli', '--bin', 'chokepoint', ...flags]),
    );
    // Renamed over the old one, which may be running (a live `chokepoint serve`): writing into it would fail.
    fs.copyFileSync(path.join(ROOT, 'target', host, 'release', 'chokepoint'), `${cli}.new`);
    fs.chmodSync(`${cli}.new`, 0o755);
    fs.renameSync(`${cli}.new`, cli);
  }
  // The extension runs bin/chokepoint before target/release/chokepoint (the .vsix ships the first);
  // in a checkout, bin/ is the copy the last `npm run package` made, so it follows every build.
  const shipped = path.join(ROOT, 'bin', 'chokepoint');
  if (fs.existsSync(shipped) && fs.statSync(shipped).mtimeMs < fs.statSync(cli).mtimeMs) {
    fs.copyFileSync(cli, shipped);
    fs.chmodSync(shipped, 0o755);
  }
}

/** The triple rustc builds for by default here (`x86_64-unknown-linux-gnu`), asked of `rustc -vV`
 *  once per process: the toolchain does not change under a running script. */
/** @type {string | undefined} */
let host;
function hostTriple() {
  if (host) return host;
  const r = require('child_process').spawnSync('rustc', ['-vV'], { encoding: 'utf8' });
  host = /^host: (\S+)$/m.exec(r.stdout || '')?.[1];
  if (!host) throw new Error(`cannot tell this machine's rust target from \`rustc -vV\`: ${r.stderr || r.error?.message}`);
  return host;
}

/** Linux with glibc's static archives (libc6-dev has them; Fedora's glibc-static is separate). */
function canLinkStatically() {
  if (process.platform !== 'linux') return false;
  const r = require('child_process').spawnSync('cc', ['-print-file-name=libc.a'], { encoding: 'utf8' });
  return r.status === 0 && path.isAbsolute(r.stdout.trim());
}

/** Whether `program` has no ELF interpreter: `cargo build` and `cargo bench` link it dynamically into
 *  the same place, and such a build is redone the shipped way. */
function isStaticallyLinked(program) {
  try {
    const head = Buffer.alloc(4096);
    const fd = fs.openSync(program, 'r');
    try {
      fs.readSync(fd, head, 0, head.length, 0);
    } finally {
      fs.closeSync(fd);
    }
    return !head.includes('/ld-linux');
  } catch {
    return false;
  }
}

async function buildBundles({ production = false } = {}) {
  const esbuild = require('esbuild');
  // Typed as esbuild's options, so that 'none' stays one of legalComments' literals when spread below.
  /** @type {import('esbuild').BuildOptions} */
  const common = { bundle: true, logLevel: 'warning', sourcemap: !production, minify: production, legalComments: 'none' };
  await Promise.all([
    esbuild.build({
      ...common,
      entryPoints: [path.join(ROOT, 'extension/src/extension.ts')],
      outfile: path.join(ROOT, 'dist/extension.js'),
      platform: 'node',
      format: 'cjs',
      target: 'node20',
      external: ['vscode'],
    }),
    esbuild.build({
      ...common,
      entryPoints: { webview: path.join(ROOT, 'webview/src/main.ts') }, // its CSS import becomes dist/webview.css
      outdir: path.join(ROOT, 'dist'),
      entryNames: '[name]',
      platform: 'browser',
      format: 'iife',
      target: 'chrome120',
    }),
  ]);
}

/** The extension-host suite (tests/extension/*.ts) bundled into out/tests/extension: one bundle per
 *  test file, plus index.js, the entry code-server's host runs. `vscode` and `mocha` stay external:
 *  the host provides the first, each harness its own mocha. Both harnesses run these same files
 *  (scripts/test.js in code-server, .vscode-test.mjs in desktop VS Code). Returns the folder. */
async function bundleExtensionTests() {
  const esbuild = require('esbuild');
  const dir = path.join(ROOT, 'tests/extension');
  const entryPoints = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.ts'))
    .map((f) => path.join(dir, f));
  const outdir = path.join(ROOT, 'out/tests/extension');
  fs.rmSync(outdir, { recursive: true, force: true });
  await esbuild.build({
    entryPoints,
    outdir,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    sourcemap: 'inline',
    external: ['vscode', 'mocha'],
    logLevel: 'warning',
  });
  return outdir;
}

async function build(opts = {}) {
  await buildNative(opts);
  await step('build', 'the extension and webview bundles', () => buildBundles(opts));
}

module.exports = { build, buildNative, buildBundles, bundleExtensionTests };

if (require.main === module) {
  build({ production: process.argv.includes('--production') }).catch((e) => {
    console.error(`error: ${e.message}`);
    process.exit(1);
  });
}
