// One extension suite, two harnesses: the mocha files that scripts/test.js runs in code-server's
// extension host are the files @vscode/test-cli runs in desktop VS Code (.vscode-test.mjs). Asked of
// the real `vscode-test --list-configuration`, which resolves the configuration without launching
// (desktop VS Code cannot be downloaded here).
'use strict';
const { test } = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');
const { ROOT } = require('../../scripts/lib');

test('vscode-test lists the extension-host suite of tests/extension, in the governed sample workspace', () => {
  const bin = path.join(ROOT, 'node_modules/@vscode/test-cli/out/bin.mjs');
  const r = spawnSync(process.execPath, [bin, '--list-configuration'], { cwd: ROOT, encoding: 'utf8', timeout: 120000 });
  assert.strictEqual(r.status, 0, r.stderr);
  const [run, ...others] = JSON.parse(r.stdout);
  assert.strictEqual(others.length, 0, 'one configuration');
  assert.deepStrictEqual(run.extensionDevelopmentPath, [ROOT]);

  // Every test file of the suite, and nothing else (index.ts is code-server's entry, not a test).
  const files = JSON.parse(run.env.VSCODE_TEST_OPTIONS)
    .files.map((f) => path.relative(ROOT, f))
    .sort();
  const suite = fs
    .readdirSync(path.join(ROOT, 'tests/extension'))
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => path.join('out/tests/extension', f.replace(/\.ts$/, '.js')))
    .sort();
  assert.ok(suite.length >= 3, 'the suite has its test files');
  assert.deepStrictEqual(files, suite);
  for (const f of files) assert.ok(fs.existsSync(path.join(ROOT, f)), `${f} was bundled`);

  // The host opens a governed workspace, as under code-server, on a VS Code the manifest accepts.
  const workspace = run.config.workspaceFolder;
  assert.ok(fs.existsSync(path.join(workspace, '.orchestration/hooks.yaml')), workspace);
  assert.ok(run.config.launchArgs.includes(workspace));
  const engines = require(path.join(ROOT, 'package.json')).engines.vscode;
  assert.strictEqual(`^${run.config.version}`, engines);
});
