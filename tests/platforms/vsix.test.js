// Every platform's .vsix, packed by scripts/package.js (as `npm run package -- --all` does) and read back
// (scripts/vsix.js): its manifest targets its platform, and it carries exactly one engine and one
// program, named as the extension looks for them there and of that platform's machine code, loading
// at start only what that platform has (Windows: no Node DLL, no MinGW DLL, pe.test.js; macOS: only
// macOS's libraries, and signed on Apple silicon, macho.test.js). Run by the platforms layer
// (`npm test -- platforms`) after the suites. The Linux x64 .vsix is also installed into a real
// VS Code and driven by the UI layer (tests/ui), which this does not repeat.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('path');
const fs = require('fs');
const os = require('os');
const { packageVsix } = require('../../scripts/package');
const { problems, inspect, expectedCode, entries } = require('../../scripts/vsix');
const { PLATFORMS, ensureWindowsNode } = require('../../scripts/toolchains');
const { chosenPlatforms, ensureWinePrefix, TARGETS } = require('../../scripts/platforms');
const { ROOT, capture } = require('../../scripts/lib');

/** All five, or those `CHOKEPOINT_PLATFORMS` names (scripts/platforms.js). */
const CHOSEN = PLATFORMS.filter((p) => chosenPlatforms().includes(p.name));

/**
 * The cargo profile of the other platforms' engines and programs: Cargo.toml's `vsix-test`
 * (unoptimised, no debug information), unless CHOKEPOINT_PACKAGE_PROFILE names another (`release`,
 * what people get). What this file checks does not depend on optimisation. Measured cold on a quiet
 * 2-core machine (package.js logs each), on 28 November 2026: with the `platforms` profile (optimised
 * at level 1, line tables) linux-arm64 took 4.8 min (8.5 min of CPU), darwin-x64 4.9 (8.9),
 * darwin-arm64 4.0 (7.6) and win32-x64 3.9 (6.7), 18.6 min for the four; with `vsix-test`,
 * linux-arm64 1.6 min (2.6), darwin-x64 1.3 (2.1), darwin-arm64 1.3 (2.2) and win32-x64 1.4 (2.2),
 * 5.6 min for the four. Release builds of the four would take some 35 to 45 min: more than CI has.
 * Packing all five again when nothing changed: under 30 s.
 */
const PROFILE = process.env.CHOKEPOINT_PACKAGE_PROFILE || 'vsix-test';

/** The .vsix of each chosen platform, packed once for the whole file (cross-building all five takes minutes). */
let packed;
function vsixOf(platform) {
  packed ??= packageVsix([...CHOSEN.flatMap((p) => ['--target', p.name]), '--profile', PROFILE]);
  return packed.then((outs) => {
    const file = outs.find((o) => path.basename(o).endsWith(`-${platform.name}.vsix`));
    assert.ok(file, `packaging made no .vsix for ${platform.name}: ${outs.map((o) => path.basename(o)).join(', ')}`);
    return file;
  });
}

for (const platform of CHOSEN) {
  test(`the ${platform.name} .vsix carries its platform's engine and program, and nothing else's`, { timeout: 60 * 60 * 1000 }, async () => {
    const file = await vsixOf(platform);
    assert.deepEqual(problems(file, platform), [], `${path.basename(file)}: ${JSON.stringify(inspect(file), (k, v) => (k === 'files' ? undefined : v))}`);
    // Read as any other platform's, it is wrong, and says how: the check tells the platforms apart.
    for (const other of PLATFORMS.filter((p) => p !== platform)) {
      const wrong = problems(file, other);
      assert.ok(wrong.length > 0, `${path.basename(file)} passes as the .vsix of ${other.name} too`);
      assert.ok(
        wrong.some((w) => w.endsWith(`not ${other.name}`)),
        `${path.basename(file)} as ${other.name}: no word of the manifest in ${JSON.stringify(wrong)}`,
      );
      // And by the machine code itself, not only the manifest: the program of the same name on Linux
      // x64 and Arm differs only in it.
      const code = expectedCode(other.name);
      assert.ok(
        wrong.some((w) => w.startsWith('extension/bin/') && w.endsWith(`not ${code.format} ${code.arch}`)),
        `${path.basename(file)} as ${other.name}: its program's machine code is not among ${JSON.stringify(wrong)}`,
      );
    }
  });
}

/** What the probe reports of the engine it loads: its exports, and two calls answered by the core. */
const PROBE = `
const fs = require('fs');
let out;
try {
  const engine = require(process.argv[2]);
  out = { host: process.execPath, exports: Object.keys(engine).sort(), version: engine.version(), tokens: engine.countTokens(['hello world, from Windows'], 'gpt-4o') };
} catch (e) {
  out = { host: process.execPath, error: String((e && e.stack) || e) };
}
fs.writeFileSync(process.argv[3], JSON.stringify(out));
`;

// The Windows engine as packed, loaded by Node's own node.exe (from the npm registry) under Wine, with
// that node.exe renamed Code.exe as VS Code's is: Node-API is found in whatever process loads the
// engine, not in a file named node.exe (native/node/Cargo.toml). It exports what this machine's
// engine exports, and the core answers through it as here.
if (CHOSEN.some((p) => p.name === 'win32-x64')) {
  test('the win32-x64 engine loads in a host named Code.exe (Node for Windows, under Wine) and the core answers', { timeout: 60 * 60 * 1000 }, async () => {
    const platform = PLATFORMS.find((p) => p.name === 'win32-x64');
    const file = await vsixOf(/** @type {import('../../scripts/toolchains').Platform} */ (platform));
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chokepoint-win-engine-'));
    try {
      const engineName = `extension/native/node/chokepoint.${platform?.addon}.node`;
      const engine = entries(file).find((e) => e.name === engineName);
      assert.ok(engine, `${path.basename(file)} has no ${engineName}`);
      fs.writeFileSync(path.join(dir, 'chokepoint.node'), engine.read());
      fs.copyFileSync(await ensureWindowsNode(), path.join(dir, 'Code.exe'));
      fs.writeFileSync(path.join(dir, 'probe.js'), PROBE);
      const env = { ...process.env, ...TARGETS.find((t) => t.name === 'win32-x64')?.env, NODE_SKIP_PLATFORM_CHECK: '1' };
      await ensureWinePrefix(env);
      // Wine's node.exe cannot write to a pipe as its stdout: the probe writes its answer to a file.
      const win = (name) => `Z:${path.join(dir, name).replaceAll('/', '\\')}`;
      const r = await capture('wine', [path.join(dir, 'Code.exe'), win('probe.js'), win('chokepoint.node'), win('answer.json')], { env });
      const answerFile = path.join(dir, 'answer.json');
      assert.ok(fs.existsSync(answerFile), `Code.exe under Wine wrote no answer (exit ${r.code}): ${r.stderr.slice(-2000)}`);
      const answer = JSON.parse(fs.readFileSync(answerFile, 'utf8'));
      assert.equal(answer.error, undefined, `the engine did not load in ${answer.host}`);
      assert.match(answer.host, /Code\.exe$/);
      const here = require(path.join(ROOT, 'native/node', `chokepoint.${PLATFORMS.find((p) => p.name === `${process.platform}-${process.arch}`)?.addon}.node`));
      assert.deepEqual(answer.exports, Object.keys(here).sort());
      assert.equal(answer.version, here.version());
      assert.deepEqual(answer.tokens, here.countTokens(['hello world, from Windows'], 'gpt-4o'));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
}
