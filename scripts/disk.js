// The disk a test run needs: the free space of the checkout's file system, and room made for a big
// build by removing the build folders this run no longer needs, when (and only when) the disk is short.
//
// Why: a bare `npm test` builds the workspace again and again (this machine's tests, 10.6 GB; the
// Arm and Windows suites, about 4 GB each; four cross-built .vsix, half a gigabyte each), more than a
// CI machine's disk may hold (CI ran out of it in the platforms layer, stop 38). Each build is needed
// only by its own step, so on a short disk the ones before are removed first; on a roomy one every
// build stays, and a second run starts warm. `npm run package` makes room the same way.
'use strict';
const fs = require('fs');
const path = require('path');
const { ROOT, log } = require('./lib');
const { PLATFORMS, hostPlatform } = require('./toolchains');

const GB = 1024 ** 3;

/** Free space a step keeps beyond its build's own size, for what its tests write meanwhile (temporary
 *  workspaces, ledgers, logs) and the estimate's error. */
const HEADROOM = 1 * GB;

/** Bytes free for this user on the file system that holds `dir` (the checkout's, by default). */
function freeBytes(dir = ROOT) {
  const s = fs.statfsSync(dir);
  return s.bavail * s.bsize;
}

/** `12.3 GB`. */
function formatBytes(bytes) {
  return `${(bytes / GB).toFixed(1)} GB`;
}

/**
 * A build folder that a run may remove when the disk is short: what it holds, in words, for the log.
 * @typedef {object} Removable
 * @property {string} dir relative to the checkout
 * @property {string} what
 */

/**
 * Makes `need` bytes free for `why`, if they are not: removes `removable` folders, in their order,
 * until they are, each named in the log with what it held and its size. Returns the bytes free after.
 * A disk still short after every removal is said, with what is missing; the step then runs anyway,
 * and fails with the file system's own error if it does run out.
 * @param {number} need
 * @param {string} why
 * @param {Removable[]} removable
 * @param {{ root?: string, free?: () => number }} [at] the checkout and how its free bytes are read
 *   (tests give a smaller disk than the real one)
 */
function makeRoom(need, why, removable, { root = ROOT, free = () => freeBytes(root) } = {}) {
  let left = free();
  if (left >= need) return left;
  log('disk', `${formatBytes(left)} free, and ${why} needs about ${formatBytes(need)}: removing build folders this run no longer needs`);
  for (const r of removable) {
    const dir = path.join(root, r.dir);
    if (!fs.existsSync(dir)) continue;
    const before = left;
    fs.rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    left = free();
    log('disk', `removed ${r.dir} (${r.what}, ${formatBytes(left - before)}); ${formatBytes(left)} free`);
    if (left >= need) return left;
  }
  log(
    'disk',
    `only ${formatBytes(left)} free for ${why}, which needs about ${formatBytes(need)}: free ${formatBytes(need - left)} more, or it may fail for want of space (ENOSPC)`,
  );
  return left;
}

/**
 * The build folders a step building for `triple` may remove for room: every other platform's builds
 * under target/<triple>/ (its test suites and its .vsix's engine and program; each rebuilt by its own
 * step when it runs again), then `cargo test`'s (the cargo layer's, which has run by then). Never
 * this machine's own release build, which the .vsix of this machine and the agents layer use.
 * @param {string} triple
 * @returns {Removable[]}
 */
function otherBuilds(triple) {
  return [
    ...PLATFORMS.filter((p) => p.triple !== triple && p !== hostPlatform()).map((p) => ({ dir: `target/${p.triple}`, what: `${p.name}'s builds` })),
    { dir: 'target/debug', what: "`cargo test`'s build, made again by the next `cargo test`" },
  ];
}

module.exports = { GB, HEADROOM, makeRoom, otherBuilds };
