#!/usr/bin/env node
// `npm run package`: production bundles plus the release addon, packed by @vscode/vsce into
// chokepoint-<version>.vsix at the repository root. Prints the .vsix path last. The release `chokepoint` program is copied to
// bin/chokepoint, which the .vsix ships (ui/setUpAgent.ts runs it; engine/findable.ts makes it findable).
'use strict';
const fs = require('fs');
const path = require('path');
const { ROOT, log, run } = require('./lib');
const { build } = require('./build');

async function packageVsix() {
  await build({ production: true });
  // The program other agents' hooks run (`chokepoint init`, from the command palette, writes its path).
  fs.mkdirSync(path.join(ROOT, 'bin'), { recursive: true });
  fs.copyFileSync(path.join(ROOT, 'target/release/chokepoint'), path.join(ROOT, 'bin/chokepoint'));
  fs.chmodSync(path.join(ROOT, 'bin/chokepoint'), 0o755);
  const { version } = require(path.join(ROOT, 'package.json'));
  const out = path.join(ROOT, `chokepoint-${version}.vsix`);
  log('package', `packing ${path.basename(out)}`);
  // --no-dependencies: everything the extension needs is bundled into dist/ or is the .node file.
  await run(path.join(ROOT, 'node_modules/.bin/vsce'), ['package', '--no-dependencies', '--skip-license', '--out', out], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  return out;
}

module.exports = { packageVsix };

if (require.main === module) {
  packageVsix()
    .then((out) => console.log(out))
    .catch((e) => {
      console.error(`error: ${e.message}`);
      process.exit(1);
    });
}
