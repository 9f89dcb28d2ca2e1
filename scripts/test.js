#!/usr/bin/env node
// `npm test`: every layer of the suite, in order, then one summary line `N passed, N failed`.
//
//   cargo      cargo test --workspace (core and CLI), cargo fmt --check, cargo clippy -D warnings,
//              then the canonicaliser's fuzz target for 15 s
//   node       tsc --noEmit (and of tests/extension), tsc -p tsconfig.js.json (the JSDoc types of the
//              JavaScript in scripts/, tests/ and bench/), eslint and prettier --check over every TS
//              and JS file, then node --test tests/node (the built addon from Node) and tests/unit
//   extension  mocha inside the real VS Code extension host (code-server), tests/extension
//   ui         the sidebar driven in Debian's Chromium with playwright-core, against the packed .vsix;
//              npm start's lifetime and password (tests/ui/start.test.js)
//   agents     the real agent CLIs (claude, codex, gemini, copilot; pinned in scripts/agents.js, installed
//              into the cache folder) run headless against scripted model servers: their hooks fire and
//              a deny blocks (tests/agents). A client that cannot be installed fails the layer.
//   platforms  the core's and the CLI's cargo tests built for Windows (x86_64-pc-windows-gnu, run
//              under Wine) and Linux on Arm (aarch64-unknown-linux-gnu, under qemu-user), with every
//              test ignored there listed with its reason (scripts/platforms.js); then all five .vsix
//              packed and each checked for its platform's engine and program (tests/platforms).
//
// `npm test -- cargo node` runs only the named layers. Exit code 0 only if every test passed.
'use strict';
const fs = require('fs');
const path = require('path');
const { ROOT, log, capture } = require('./lib');
const { build, buildNative, bundleExtensionTests } = require('./build');
const { fuzz } = require('./fuzz');
const vscode = require('./vscode');
const { ensureAgents } = require('./agents');
const { platformsLayer } = require('./platforms');

/** The layers, in the order they run; a bare `npm test` runs them all. */
const LAYERS = ['cargo', 'node', 'extension', 'ui', 'agents', 'platforms'];

/** Workbench errors that come from this machine having no network (gallery look-ups, sign-in
 *  providers) and from tearing the window down; anything else is printed. */
const HARMLESS_WORKBENCH_ERRORS = /ENOTFOUND|authentication provider|^Canceled|Canceled: Canceled|open-vsx|marketplace/i;

/** Counts from a TAP stream's trailer (`# pass N`, `# fail N`). */
function tapCounts(text) {
  const n = (k) => Number((new RegExp(`^# ${k} (\\d+)`, 'm').exec(text) || [])[1] || 0);
  return { passed: n('pass'), failed: n('fail') + n('cancelled') };
}

async function cargoLayer() {
  // One cargo test watches the ledger's syncs with strace; without it that test fails and says why.
  // The coordination database's tests start PostgreSQL servers of their own (TLS ones with openssl's
  // certificates); without it they fail saying to install it.
  await vscode.ensureSystemPackages({ need: ['strace', 'postgresql', 'openssl'] }).catch((e) => log('test', e.message));
  const r = await capture('cargo', ['test', '--workspace', '--no-fail-fast', '--color', 'never'], { echo: true });
  let passed = 0;
  let failed = 0;
  for (const m of (r.stdout + r.stderr).matchAll(/test result: \w+\. (\d+) passed; (\d+) failed/g)) {
    passed += Number(m[1]);
    failed += Number(m[2]);
  }
  // A build failure runs no tests at all: count it, or a broken crate would look green.
  if (r.code !== 0 && failed === 0) failed = 1;
  // The habits that keep the code as ARCHITECTURE.md draws it, each one counted as a test.
  for (const [name, args] of [
    ['cargo fmt --check', ['fmt', '--all', '--check']],
    ['cargo clippy -D warnings', ['clippy', '--workspace', '--all-targets', '--color', 'never', '--', '-D', 'warnings']],
  ]) {
    const ok = await check(name, 'cargo', args);
    passed += ok ? 1 : 0;
    failed += ok ? 0 : 1;
  }
  const fuzzed = await fuzz(10); // each fuzz target under libFuzzer, briefly (scripts/fuzz.js)
  return { passed: passed + fuzzed.passed, failed: failed + fuzzed.failed };
}

/** `git status --porcelain` of the checkout (with the content hash of each changed file, so a file
 *  already changed before the run and changed again counts), or null outside a git work tree. */
function workTree() {
  const { spawnSync } = require('child_process');
  const r = spawnSync('git', ['status', '--porcelain', '--untracked-files=all'], { cwd: ROOT, encoding: 'utf8' });
  if (r.status !== 0) return null;
  return r.stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const file = path.join(ROOT, line.slice(3));
      const hash =
        fs.existsSync(file) && fs.statSync(file).isFile()
          ? require('crypto').createHash('sha256').update(fs.readFileSync(file)).digest('hex').slice(0, 12)
          : '-';
      return `${line} ${hash}`;
    });
}

/** Runs one whole-tree check (a formatter, a linter, the type checker): its output is shown only when
 *  it fails, with the command that reproduces it. */
async function check(name, cmd, args) {
  const r = await capture(cmd, args);
  if (r.code === 0) {
    console.log(`ok: ${name}`);
    return true;
  }
  process.stdout.write(r.stdout);
  process.stderr.write(r.stderr);
  console.log(`FAILED: ${name} (run \`${[cmd, ...args].join(' ')}\` to see it again)`);
  return false;
}

/** node --test over folders, spec to the terminal and TAP to a file we count from. */
async function nodeTestLayer(dirs, env = {}) {
  dirs = [].concat(dirs);
  const tap = path.join(ROOT, 'target', `${path.basename(dirs[0])}-tests.tap`);
  fs.mkdirSync(path.dirname(tap), { recursive: true });
  const files = dirs.flatMap((dir) =>
    fs
      .readdirSync(path.join(ROOT, dir))
      .filter((f) => f.endsWith('.test.js'))
      .map((f) => path.join(dir, f)),
  );
  const r = await capture(
    process.execPath,
    [
      '--test',
      '--test-concurrency=1',
      '--test-reporter=spec',
      '--test-reporter-destination=stdout',
      '--test-reporter=tap',
      `--test-reporter-destination=${tap}`,
      ...files,
    ],
    { echo: true, env: { ...process.env, ...env } },
  );
  const counts = tapCounts(fs.existsSync(tap) ? fs.readFileSync(tap, 'utf8') : '');
  if (r.code !== 0 && counts.failed === 0) counts.failed = 1;
  return counts;
}

/** The TypeScript unit tests (tests/unit/*.test.ts: extension modules that do not import `vscode`),
 *  bundled for `node --test`; they run in the node layer. Returns the folder of the bundles. */
async function bundleUnitTests() {
  const esbuild = require('esbuild');
  const dir = path.join(ROOT, 'tests/unit');
  const outdir = path.join(ROOT, 'out/tests/unit');
  fs.rmSync(outdir, { recursive: true, force: true });
  fs.mkdirSync(outdir, { recursive: true });
  const entryPoints = fs.existsSync(dir)
    ? fs
        .readdirSync(dir)
        .filter((f) => f.endsWith('.test.ts'))
        .map((f) => path.join(dir, f))
    : [];
  if (entryPoints.length) {
    await esbuild.build({ entryPoints, outdir, bundle: true, platform: 'node', format: 'cjs', target: 'node20', sourcemap: 'inline', logLevel: 'warning' });
  }
  return path.relative(ROOT, outdir);
}

/** The node layer: the TypeScript type check of the extension, the webview and the tests, and of the
 *  JavaScript's JSDoc types, then node --test over tests/node and the bundled tests/unit. */
async function nodeLayer() {
  const tsc = path.join(ROOT, 'node_modules/typescript/bin/tsc');
  const typed = await check('tsc --noEmit', process.execPath, [tsc, '-p', 'tsconfig.json', '--noEmit']);
  // The extension-host suite is bundled by esbuild, which does not type-check: checked here.
  const suite = await check('tsc --noEmit (tests/extension)', process.execPath, [tsc, '-p', 'tests/extension/tsconfig.json', '--noEmit']);
  // The JavaScript of scripts/, tests/ and bench/ (checkJs; tsconfig.js.json emits nothing): its JSDoc
  // must say how each function is called, or the types drift from the callers unseen.
  const js = await check('tsc -p tsconfig.js.json', process.execPath, [tsc, '-p', 'tsconfig.js.json']);
  // Every TypeScript and JavaScript file of the repository (eslint.config.mjs says which are not).
  const linted = await check('eslint', process.execPath, [path.join(ROOT, 'node_modules/eslint/bin/eslint.js'), '--max-warnings', '0', '.']);
  // Formatted as Prettier writes it (`npm run format`; .prettierignore says what is not).
  const formatted = await check('prettier --check', process.execPath, [
    path.join(ROOT, 'node_modules/prettier/bin/prettier.cjs'),
    '--check',
    '--log-level',
    'warn',
    '.',
  ]);
  const counts = await nodeTestLayer(['tests/node', await bundleUnitTests()]);
  const checks = [typed, suite, js, linted, formatted];
  return { passed: counts.passed + checks.filter(Boolean).length, failed: counts.failed + checks.filter((c) => !c).length };
}

/** Runs the mocha suite inside a real VS Code extension host and returns its counts. */
async function extensionLayer() {
  const entry = path.join(await bundleExtensionTests(), 'index.js');
  const runDir = fs.mkdtempSync(path.join(vscode.CACHE, 'run-extension-tests-'));
  const report = path.join(runDir, 'report.txt');
  const workspace = vscode.makeSampleWorkspace(path.join(runDir, 'workspace'));
  const server = await vscode.startCodeServer({ runDir, env: { CHOKEPOINT_TEST_REPORT: report } });
  let browser;
  try {
    browser = await vscode.launchBrowser({ runDir });
    const page = await browser.newPage();
    await server.login(page.context());
    let done;
    const exited = new Promise((r) => (done = r));
    await page.exposeFunction('codeAutomationLog', (type, args) => {
      const text = (args || []).map((a) => String(a).slice(0, 300)).join(' ');
      if (type === 'error' && !HARMLESS_WORKBENCH_ERRORS.test(text)) console.error('[vscode]', text);
    });
    await page.exposeFunction('codeAutomationExit', (code) => done(code));
    const payload = [
      ['extensionDevelopmentPath', `vscode-remote://remote${ROOT}`],
      ['extensionTestsPath', `vscode-remote://remote${entry.replace(/\.js$/, '')}`],
      ['skipWelcome', 'true'],
    ];
    await page.goto(server.url(workspace, payload));
    const limit = Number(process.env.CHOKEPOINT_E2E_TIMEOUT_MS || 240000);
    const timer = setTimeout(() => done('timeout'), limit);
    const code = await exited;
    clearTimeout(timer);
    const text = fs.existsSync(report) ? fs.readFileSync(report, 'utf8') : '';
    process.stdout.write(text.replace(/^CHOKEPOINT_SUMMARY .*\n?/m, ''));
    const m = /^CHOKEPOINT_SUMMARY (.*)$/m.exec(text);
    const counts = m ? JSON.parse(m[1]) : { passed: 0, failed: 0 };
    if (code === 'timeout') console.error(`the extension host did not finish within ${limit / 1000} s; server log: ${server.logFile}`);
    if (code !== 0 && counts.failed === 0) counts.failed = 1;
    return counts;
  } finally {
    if (browser) await browser.close().catch(() => {});
    await server.stop();
    fs.rmSync(runDir, { recursive: true, force: true, maxRetries: 3 });
  }
}

/** The agents layer: installs the pinned clients (a failed install throws, failing the layer), then
 *  node --test tests/agents. */
async function agentsLayer() {
  await ensureAgents();
  // The team test (tests/agents/team.test.js) starts a PostgreSQL server for two machines' agents.
  await vscode.ensureSystemPackages({ need: ['postgresql'] }).catch((e) => log('test', e.message));
  return nodeTestLayer('tests/agents');
}

/** The platforms layer: the suites built for the other platforms and run under emulation, then every
 *  platform's .vsix packed and read back (tests/platforms). */
async function platformsTestLayer() {
  const suites = await platformsLayer();
  const packed = await nodeTestLayer('tests/platforms');
  return { passed: suites.passed + packed.passed, failed: suites.failed + packed.failed };
}

async function main() {
  const asked = process.argv.slice(2).filter((a) => !a.startsWith('-'));
  for (const a of asked) if (!LAYERS.includes(a)) throw new Error(`unknown test layer \`${a}\`; the layers are ${LAYERS.join(', ')}`);
  const layers = asked.length ? asked : LAYERS;
  const needsVsCode = layers.includes('extension') || layers.includes('ui');
  // What the VS Code layers and the cargo layer's tests use; the platforms layer installs its own (Wine, qemu, MinGW).
  if (needsVsCode) await vscode.ensureSystemPackages({ need: ['chromium', 'libkrb5-dev', 'strace', 'postgresql', 'openssl'] });
  if (layers.some((l) => !['cargo', 'agents', 'platforms'].includes(l))) await build();
  // The agents layer needs only the release CLI (`chokepoint hook`, `init`, `mcp`): built by buildNative.
  else if (layers.includes('agents')) await buildNative();
  if (needsVsCode) await vscode.ensureVsCode();

  const treeBefore = workTree();
  const results = [];
  for (const layer of layers) {
    log('test', `layer ${layer}`);
    const begun = Date.now();
    let counts;
    try {
      counts =
        layer === 'cargo'
          ? await cargoLayer()
          : layer === 'node'
            ? await nodeLayer()
            : layer === 'extension'
              ? await extensionLayer()
              : layer === 'agents'
                ? await agentsLayer()
                : layer === 'platforms'
                  ? await platformsTestLayer()
                  : await nodeTestLayer('tests/ui');
    } catch (e) {
      console.error(`error: layer ${layer} could not run: ${e.stack || e.message}`);
      counts = { passed: 0, failed: 1 };
    }
    results.push({ layer, ...counts, seconds: Math.round((Date.now() - begun) / 1000) });
  }
  // The suite leaves the work tree as it found it: what a test writes goes to target/, out/, the
  // cache folder or a temporary folder, never into tracked files.
  const treeAfter = workTree();
  if (treeBefore !== null && treeAfter !== null) {
    const changed = treeAfter.filter((l) => !treeBefore.includes(l));
    const ok = changed.length === 0;
    if (!ok) console.log(`FAILED: the tests changed the work tree:\n${changed.map((l) => `  ${l}`).join('\n')}`);
    results.push({ layer: 'work tree', passed: ok ? 1 : 0, failed: ok ? 0 : 1 });
  }
  console.log('');
  // Each layer's time too: CI has a budget for the whole run, and this says where it goes.
  for (const r of results) console.log(`  ${r.layer.padEnd(10)} ${r.passed} passed, ${r.failed} failed${'seconds' in r ? ` (${r.seconds} s)` : ''}`);
  const passed = results.reduce((s, r) => s + r.passed, 0);
  const failed = results.reduce((s, r) => s + r.failed, 0);
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed === 0 && passed > 0 ? 0 : 1);
}

main().catch((e) => {
  console.error(`error: ${e.message}`);
  console.log('0 passed, 1 failed');
  process.exit(1);
});
