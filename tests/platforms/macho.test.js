// The macOS half of scripts/vsix.js's check, on libraries linked here by the zig that links the macOS
// engine and program: what a Mach-O file loads at start and whether it is signed are read right
// (machoLinks), and what fails on a Mac is named (machoProblems): a library from outside macOS (a
// path of the machine that built it, Homebrew's here) and Apple silicon code without a signature.
// Run by the platforms layer with the .vsix test; needs only zig (scripts/toolchains.js).
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { capture } = require('../../scripts/lib');
const { ensureZig, zigEnv } = require('../../scripts/toolchains');
const { machoLinks, machoProblems } = require('../../scripts/vsix');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chokepoint-macho-'));
test.after(() => fs.rmSync(dir, { recursive: true, force: true }));

/** Links `source` into `out` for `target` with zig, as cargo-zigbuild does for our builds. */
async function link(target, out, source, args = []) {
  fs.writeFileSync(path.join(dir, `${out}.c`), source);
  const r = await capture('python3', ['-m', 'ziglang', 'cc', '-target', target, '-shared', '-o', out, `${out}.c`, ...args], {
    cwd: dir,
    env: { ...process.env, ...zigEnv() },
  });
  assert.equal(r.code, 0, `${out}: ${r.stderr}`);
  return machoLinks(fs.readFileSync(path.join(dir, out)));
}

let built;
/** The libraries, linked once: one from outside macOS, one that loads it, one for Intel Macs. */
function libraries() {
  built ??= (async () => {
    await ensureZig();
    const elsewhere = await link('aarch64-macos', 'libelsewhere.dylib', 'int f(void) { return 1; }\n', [
      '-Wl,-install_name,/opt/homebrew/lib/libelsewhere.dylib',
    ]);
    const loader = await link('aarch64-macos', 'loader.dylib', 'int f(void);\nint g(void) { return f(); }\n', ['-L.', '-lelsewhere']);
    const intel = await link('x86_64-macos', 'intel.dylib', 'int f(void) { return 1; }\n');
    return { elsewhere, loader, intel };
  })();
  return built;
}

test('an Apple silicon library that loads only macOS and is signed passes', async () => {
  const { elsewhere } = await libraries();
  assert.deepEqual(elsewhere, { loads: ['/usr/lib/libSystem.B.dylib'], signed: true });
  assert.deepEqual(machoProblems(elsewhere, 'arm64'), []);
});

test('a library loaded from outside macOS is refused, naming it', async () => {
  const { loader } = await libraries();
  assert.ok(loader.loads.includes('/opt/homebrew/lib/libelsewhere.dylib'), JSON.stringify(loader));
  assert.deepEqual(machoProblems(loader, 'arm64'), ['loads /opt/homebrew/lib/libelsewhere.dylib, which is not part of macOS']);
});

test('code without a signature passes on Intel and is refused on Apple silicon', async () => {
  const { intel } = await libraries();
  assert.equal(intel.signed, false, 'zig signs only arm64 code');
  assert.deepEqual(machoProblems(intel, 'x64'), []);
  assert.deepEqual(machoProblems(intel, 'arm64'), ['has no code signature, without which macOS on Apple silicon does not run it']);
});
