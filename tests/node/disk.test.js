// The platforms layer's room on a short disk (scripts/disk.js): before a big build, the build folders
// the run no longer needs are removed, in their order, only as many as it takes, and only when the
// disk is short; what the run still needs is never among them. CI's disk ran out in that layer.
'use strict';
const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { makeRoom, otherBuilds } = require('../../scripts/disk');
const { PLATFORMS, hostPlatform } = require('../../scripts/toolchains');

/** The bytes of the files under `dir`: what a pretend disk of the test holds. */
function sizeOf(dir) {
  return fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .reduce((sum, e) => sum + fs.statSync(path.join(e.parentPath, e.name)).size, 0);
}

/** A checkout whose target/ holds a build of `mb` megabytes in each of `dirs`. */
function checkout(dirs, mb) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'chokepoint-disk-'));
  for (const d of dirs) {
    fs.mkdirSync(path.join(root, d, 'deps'), { recursive: true });
    fs.writeFileSync(path.join(root, d, 'deps/test-executable'), Buffer.alloc(mb * 1024 * 1024));
  }
  return root;
}

const MB = 1024 * 1024;

test('a short disk loses the other builds in their order, only as many as the step needs', () => {
  const builds = ['target/aarch64-unknown-linux-gnu', 'target/x86_64-pc-windows-gnu', 'target/debug'];
  const root = checkout([...builds, 'target/release'], 4);
  // A disk of 20 MB holding the 16 MB above: 4 MB free. The step needs 10: two builds must go.
  const free = () => 20 * MB - sizeOf(root);
  const removable = builds.map((dir) => ({ dir, what: dir }));
  const left = makeRoom(10 * MB, 'a test build', removable, { root, free });
  assert.equal(left, 12 * MB);
  assert.equal(fs.existsSync(path.join(root, builds[0])), false, 'the first listed went first');
  assert.equal(fs.existsSync(path.join(root, builds[1])), false);
  assert.equal(fs.existsSync(path.join(root, builds[2])), true, 'no more than the step needs');
  assert.equal(fs.existsSync(path.join(root, 'target/release')), true, 'nothing unlisted');
  fs.rmSync(root, { recursive: true });
});

test('a roomy disk keeps every build, and a disk short even when all are gone keeps what is not listed', () => {
  const root = checkout(['target/debug', 'target/release'], 2);
  const removable = [{ dir: 'target/debug', what: 'cargo test' }];
  assert.equal(makeRoom(1 * MB, 'a test build', removable, { root, free: () => 100 * MB - sizeOf(root) }), 96 * MB);
  assert.equal(fs.existsSync(path.join(root, 'target/debug')), true, 'room enough: nothing removed');
  const left = makeRoom(50 * MB, 'a test build', removable, { root, free: () => 10 * MB - sizeOf(root) });
  assert.equal(left, 8 * MB, 'said short, not thrown');
  assert.equal(fs.existsSync(path.join(root, 'target/release')), true);
  fs.rmSync(root, { recursive: true });
});

test("a platform's step may remove every other platform's builds and cargo test's, never its own nor this machine's", () => {
  for (const p of PLATFORMS.filter((q) => q !== hostPlatform())) {
    const dirs = otherBuilds(p.triple).map((r) => r.dir);
    assert.ok(!dirs.includes(`target/${p.triple}`), `${p.name} keeps its own`);
    assert.ok(!dirs.includes(`target/${hostPlatform().triple}`), `${p.name} keeps this machine's`);
    assert.ok(!dirs.includes('target/release'), `${p.name} keeps the release build`);
    assert.equal(dirs.at(-1), 'target/debug', "cargo test's build goes last");
    assert.equal(dirs.length, PLATFORMS.length - 1, `${p.name}: ${dirs.join(', ')}`);
  }
});
