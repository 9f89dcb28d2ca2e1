// ARCHITECTURE.md stays true: every folder of the source tree is named in its code map, every folder it
// names exists, and every test its invariants say holds them exists, by file and by name. A folder or a
// test added, renamed or removed without the map fails here, naming it.
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

/** The text of every test source: the crates' `tests/` and `src/` (unit tests), and the JS and TS tests. */
function testSources() {
  const out = [];
  const walk = (rel) => {
    const abs = path.join(ROOT, rel);
    if (!fs.existsSync(abs)) return;
    for (const e of fs.readdirSync(abs, { withFileTypes: true })) {
      const child = `${rel}/${e.name}`;
      if (e.isDirectory()) walk(child);
      else if (/\.(rs|js|ts)$/.test(e.name)) out.push(fs.readFileSync(path.join(ROOT, child), 'utf8'));
    }
  };
  for (const dir of ['native/core/tests', 'native/core/src', 'native/cli/tests', 'native/cli/src', 'native/node/src', 'tests']) walk(dir);
  return out.join('\n');
}

/** The test functions the invariants name: snake_case names of four words or more, where a trailing
 *  `*` or `…` stands for the rest of a long name. */
function namedTests(section) {
  return [...section.matchAll(/`(?:[a-z_/]+\.rs::)?([a-z][a-z0-9]*(?:_[a-z0-9]+){3,}_?)([*…]?)`/g)].map((m) => ({ name: m[1], prefix: m[2] !== '' }));
}

test("every test ARCHITECTURE.md's invariants name exists", () => {
  const section = MAP.slice(MAP.indexOf('## Invariants'));
  const sources = testSources();
  const named = [...namedTests(section), ...namedTests(MAP.slice(0, MAP.indexOf('## Invariants'))).filter((t) => t.name.length > 24)];
  assert.ok(named.length > 20, `the invariants name ${named.length} tests`);
  const missing = named.filter(({ name, prefix }) => !new RegExp(`fn ${name}${prefix ? '' : '\\b'}`).test(sources));
  assert.deepEqual(missing, [], 'ARCHITECTURE.md names tests that do not exist: rename them there, or say which test holds the rule now');
});

test('the invariants name each test file by a path that exists', () => {
  const section = MAP.slice(MAP.indexOf('## Invariants'));
  const files = [...section.matchAll(/`((?:native\/[a-z]+\/)?tests\/[a-z_/]+\.(?:rs|test\.js|test\.ts))(?:::[a-z_]+)?`/g)].map((m) => m[1]);
  assert.ok(files.length > 10, `the invariants name ${files.length} test files`);
  // A short `tests/x.rs` is the core's or the CLI's, as the sentence says; either must have it.
  const exists = (f) =>
    f.startsWith('tests/') && f.endsWith('.rs')
      ? ['native/core/', 'native/cli/'].some((c) => fs.existsSync(path.join(ROOT, c + f)))
      : fs.existsSync(path.join(ROOT, f));
  assert.deepEqual(
    [...new Set(files)].filter((f) => !exists(f)),
    [],
  );
});

test('the test-name check sees a name that is not a test', () => {
  assert.deepEqual(namedTests('`a_test_that_is_not_there` and `tests/x.rs::the_rest_of_a_*`'), [
    { name: 'a_test_that_is_not_there', prefix: false },
    { name: 'the_rest_of_a_', prefix: true },
  ]);
});

/** Casts that assert the shape of data from outside instead of checking it, per file. */
function shapeCasts(text) {
  return (text.match(/\bas (\{|Record<|never\b)/g) || []).length;
}

test('nothing from outside is cast to a shape: no `as {…}`, `as Record<…>` or `as never` in the extension, the webview or the protocol', () => {
  const found = [];
  const walk = (rel) => {
    for (const e of fs.readdirSync(path.join(ROOT, rel), { withFileTypes: true })) {
      const child = `${rel}/${e.name}`;
      if (e.isDirectory()) walk(child);
      else if (/\.ts$/.test(e.name) && shapeCasts(fs.readFileSync(path.join(ROOT, child), 'utf8'))) found.push(child);
    }
  };
  for (const dir of ['extension/src', 'webview/src', 'protocol']) walk(dir);
  assert.deepEqual(
    found,
    [],
    'read the value with a zod schema (runtime/json.ts, protocol/messages.ts; what a hook rewrote comes typed from the core: `Evaluation.rewrite`) instead of casting it',
  );
});

test('the cast check sees each kind of cast', () => {
  assert.equal(shapeCasts('const a = b as { c: 1 }; const d = e as Record<string, unknown>; f as never; g as Error; asX'), 3);
});

/** Names in the binding's generated types that no TypeScript type answers: a Rust struct's own name
 *  (`JsAsker`), which napi writes when the field's object type was declared after its use. */
function unansweredNames(dts) {
  const declared = new Set([...dts.matchAll(/^export (?:declare )?(?:interface|type|class|const enum|enum) (\w+)/gm)].map((m) => m[1]));
  const used = [...dts.matchAll(/\b(Js[A-Z]\w*)\b/g)].map((m) => m[1]);
  return [...new Set(used.filter((n) => !declared.has(n)))];
}

test("the binding's generated types name only types they declare (no Rust name leaks into index.d.ts)", () => {
  const dts = fs.readFileSync(path.join(ROOT, 'native/node/index.d.ts'), 'utf8');
  assert.deepEqual(unansweredNames(dts), [], 'declare the napi object type before the struct that uses it (see native/node/src/rewrite.rs)');
});

test('the generated-types check sees a leaked name', () => {
  assert.deepEqual(unansweredNames('export interface Asked {\n  a: JsAsker | null\n  b: Asked\n}\n'), ['JsAsker']);
});
