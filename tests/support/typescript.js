// A TypeScript module of this repository loaded into a plain Node test: bundled in memory by
// esbuild the way the extension and webview bundles are, then evaluated as CommonJS. For the
// modules the JS tests read but that are written in TypeScript (protocol/messages.ts).
'use strict';
const path = require('path');
const esbuild = require('esbuild');

const ROOT = path.resolve(__dirname, '../..');

/**
 * The exports of the TypeScript module `rel` (a path from the repository's root).
 * @param {string} rel
 * @returns {any}
 */
function loadTypeScript(rel) {
  const { outputFiles } = esbuild.buildSync({
    entryPoints: [path.join(ROOT, rel)],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    write: false,
  });
  const m = { exports: {} };
  new Function('module', 'exports', 'require', outputFiles[0].text)(m, m.exports, require);
  return m.exports;
}

module.exports = { loadTypeScript };
