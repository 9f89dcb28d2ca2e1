// Governed copies of the sample workspace for the node and unit tests: the fixture project
// (tests/fixtures/sample-workspace) with the repository's sample `.orchestration/`, in a temporary
// folder that is removed when the test file ends. One helper for every test file (the JS tests
// require it, the bundled TS tests import it), so the sample is set up the same way everywhere.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { after } = require('node:test');

const made = [];
// Registered when a test file first loads this module, at its top level: an `after` registered from
// inside a test would run when that test ends, and remove the folders of engines still in use.
// The engines of a test file are never closed: their background workers (the ledger's writer, the
// shared brain's worker counting a denial's lesson in state.db) may still create a file in the folder
// while it is removed, which rmSync reports as ENOTEMPTY and retries; given time for that to end.
after(() => made.splice(0).forEach((d) => fs.rmSync(d, { recursive: true, force: true, maxRetries: 20, retryDelay: 100 })));

/**
 * A new governed sample workspace; returns its folder.
 * `root`: the repository (bundled tests cannot find it from this file's place).
 * `hooksYaml`: replaces the sample hooks.yaml (a `version: 1` line is put first); `appendHooks`:
 * added to the end of the sample's.
 * @param {string} root
 * @param {{ prefix?: string, hooksYaml?: string, appendHooks?: string }} [options]
 */
function sampleWorkspace(root, { prefix = 'chokepoint-test-', hooksYaml, appendHooks } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  made.push(dir);
  fs.cpSync(path.join(root, 'tests/fixtures/sample-workspace'), dir, { recursive: true });
  const sidecar = path.join(dir, '.orchestration');
  fs.mkdirSync(sidecar);
  for (const f of ['hooks.yaml', 'active_intents.yaml']) fs.copyFileSync(path.join(root, '.orchestration', f), path.join(sidecar, f));
  if (hooksYaml !== undefined) fs.writeFileSync(path.join(sidecar, 'hooks.yaml'), `version: 1\n${hooksYaml}`);
  if (appendHooks) fs.appendFileSync(path.join(sidecar, 'hooks.yaml'), appendHooks);
  return dir;
}

module.exports = { sampleWorkspace };
