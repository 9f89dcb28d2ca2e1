// ARCHITECTURE.md's code map stays true: every folder of the source tree is named in it, and every
// folder it names exists. A folder added, renamed or removed without the map fails here, naming it.
'use strict';
const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');
const { ROOT } = require('../../scripts/lib');

const MAP = fs.readFileSync(path.join(ROOT, 'ARCHITECTURE.md'), 'utf8');

/** Folders that are built, installed or generated, never source: not in the map. */
const NOT_SOURCE = new Set(['node_modules', 'target', 'dist', 'out', 'bin']);

/** The folders of the source tree the map must name: the top level, each crate's and the extension's
 *  and the webview's source folders, and the test layers. */
function sourceFolders() {
  const dirs = (rel) =>
    fs
      .readdirSync(path.join(ROOT, rel), { withFileTypes: true })
      .filter((e) => e.isDirectory() && !e.name.startsWith('.') && !NOT_SOURCE.has(e.name))
      .map((e) => (rel === '.' ? e.name : `${rel}/${e.name}`));
  return [
    ...dirs('.'),
    ...dirs('native'),
    ...dirs('native/core/src'),
    ...dirs('native/cli/src'),
    ...dirs('extension/src'),
    ...dirs('webview/src'),
    ...dirs('tests'),
  ];
}

/** Whether the map names `folder`: by its path from the root (or a path under it: `native/core`
 *  names `native`), by its name within its parent's section (`engine/`), or as a core layer in the
 *  layer table (`` | `engine` | ``). */
function named(folder) {
  const name = path.basename(folder);
  return MAP.includes(`\`${folder}/`) || MAP.includes(`\`${folder}\``) || MAP.includes(`\`${name}/\``) || MAP.includes(`| \`${name}\` |`);
}

test('every folder of the source tree is named in ARCHITECTURE.md', () => {
  const folders = sourceFolders();
  assert.ok(folders.includes('native/core/src/engine') && folders.includes('extension/src/host'), `the walk found ${folders.join(', ')}`);
  assert.deepEqual(
    folders.filter((f) => !named(f)),
    [],
    'say in a line of ARCHITECTURE.md what each of these folders holds',
  );
});

test('every folder ARCHITECTURE.md names by its path from the root exists', () => {
  const roots = ['native/', 'extension/', 'webview/', 'tests/', 'scripts/', 'bench/', 'docs/', 'templates/', 'media/', 'protocol/', 'fuzz/'];
  const paths = [...MAP.matchAll(/`([a-z_][a-z0-9_./-]*\/)`/g)].map((m) => m[1]).filter((p) => roots.some((r) => p.startsWith(r)));
  assert.ok(paths.length > 10, `the map names ${paths.length} folders by path`);
  assert.deepEqual(
    [...new Set(paths)].filter((p) => !fs.existsSync(path.join(ROOT, p))),
    [],
    'ARCHITECTURE.md names folders that are gone: take them out, or say where their content went',
  );
});

test('the check sees a folder the map leaves out', () => {
  assert.equal(named('native/core/src/no_such_layer'), false);
  assert.equal(named('extension/src/host'), true);
});
