// Every platform's .vsix, packed by scripts/package.js (as `npm run package -- --all` does) and read back
// (scripts/vsix.js): its manifest targets its platform, and it carries exactly one engine and one
// program, named as the extension looks for them there and of that platform's machine code, and on
// Windows importing no DLL a Windows machine lacks (tests/platforms/pe.test.js holds that check). Run by
// the platforms layer (`npm test -- platforms`) after the suites. The Linux x64 .vsix is also
// installed into a real VS Code and driven by the UI layer (tests/ui), which this does not repeat.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('path');
const { packageVsix } = require('../../scripts/package');
const { problems, inspect, expectedCode } = require('../../scripts/vsix');
const { PLATFORMS } = require('../../scripts/toolchains');
const { chosenPlatforms } = require('../../scripts/platforms');

/** All five, or those `CHOKEPOINT_PLATFORMS` names (scripts/platforms.js). */
const CHOSEN = PLATFORMS.filter((p) => chosenPlatforms().includes(p.name));

/**
 * The cargo profile of the other platforms' engines and programs: Cargo.toml's `platforms` (optimised
 * at level 1, no LTO), unless CHOKEPOINT_PACKAGE_PROFILE names another (`release`, what people get).
 * What this file checks does not depend on optimisation, and the release builds of the four other
 * platforms take longer than CI's budget for the whole layer (scripts/package.js).
 */
const PROFILE = process.env.CHOKEPOINT_PACKAGE_PROFILE || 'platforms';

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
