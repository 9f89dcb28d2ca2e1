// The extension-host suite in desktop VS Code, through @vscode/test-cli (`npx vscode-test`, or
// `npm run test:desktop`, which builds first). The same mocha files that scripts/test.js runs in
// code-server (tests/extension, bundled by scripts/build.js's bundleExtensionTests): no second copy
// of any test. Desktop VS Code is downloaded by @vscode/test-electron at the first run, which needs
// network and, on Linux without a display, `xvfb-run -a`. CI here keeps code-server.
import { defineConfig } from '@vscode/test-cli';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
const { bundleExtensionTests } = require('./scripts/build.js');
const { makeSampleWorkspace } = require('./scripts/vscode.js');
const ROOT = path.dirname(new URL(import.meta.url).pathname);

export default (async () => {
  await bundleExtensionTests();
  // A fresh copy of the governed sample workspace each run, as the code-server harness opens.
  const workspaceFolder = makeSampleWorkspace(path.join(ROOT, '.vscode-test', 'workspace'));
  return defineConfig({
    label: 'extension',
    files: 'out/tests/extension/*.test.js',
    extensionDevelopmentPath: ROOT,
    workspaceFolder,
    // The oldest VS Code the manifest accepts (engines.vscode), unless --code-version says otherwise.
    version: require('./package.json').engines.vscode.replace(/^\^/, ''),
    launchArgs: ['--disable-extensions', '--skip-welcome'],
    // The options index.ts gives mocha under code-server.
    mocha: { ui: 'bdd', timeout: 40000 },
  });
})();
