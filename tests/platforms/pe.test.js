// The Windows half of scripts/vsix.js's check, on DLLs made here with the MinGW that builds the Windows
// engine: what a PE file imports is read right (peLinks), and the links that fail on a real Windows are
// named (peProblems). An addon that imports Node-API from `node.exe` (what linking against an import
// library of Node's exports makes, native/node/build.rs) is refused; one that looks Node-API up in the
// host process, as napi's `dyn-symbols` does, passes; so do the program's links, and MinGW's runtime
// DLL is refused. Run by the platforms layer with the .vsix test; needs only MinGW (installed by
// scripts/toolchains.js), no build of ours.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { capture } = require('../../scripts/lib');
const { ensureCrossTools, platformNamed } = require('../../scripts/toolchains');
const { peLinks, peProblems } = require('../../scripts/vsix');

const CC = 'x86_64-w64-mingw32-gcc';
const DLLTOOL = 'x86_64-w64-mingw32-dlltool';

/** What an addon's entry point does with Node-API, reduced to one call. */
const ENTRY = `
typedef void *napi_env;
typedef void *napi_value;
__declspec(dllexport) napi_value napi_register_module_v1(napi_env env, napi_value exports) {
  napi_value object;
  CREATE(env, &object);
  return exports;
}
`;

/** The C sources of the fixtures, each a DLL: name → [source, extra link arguments].
 *  @type {Record<string, [string, string[]]>} */
const FIXTURES = {
  // napi's dyn-symbols: Node-API found in whatever process loaded the DLL (Code.exe, node.exe).
  'host-lookup': [
    `#include <windows.h>
typedef int (*create_fn)(void *, void **);
#define CREATE(env, out) ((create_fn)GetProcAddress(GetModuleHandleW(NULL), "napi_create_object"))(env, out)
${ENTRY}`,
    [],
  ],
  // Linked against an import library of node.exe's exports: Windows looks for node.exe at load time.
  'node-exe-import': [`int napi_create_object(void *, void **);\n#define CREATE(env, out) napi_create_object(env, out)\n${ENTRY}`, ['node.a']],
  // A DLL with no addon entry point, linked to MinGW's thread library as a DLL, not statically.
  'mingw-runtime': ['#include <pthread.h>\n__declspec(dllexport) int run(void) { return (int)(pthread_self() != 0); }\n', ['-lwinpthread']],
};

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chokepoint-pe-'));
test.after(() => fs.rmSync(dir, { recursive: true, force: true }));

let built;
/** The fixtures, compiled once into `dir`; returns their paths by name. */
function fixtures() {
  built ??= (async () => {
    await ensureCrossTools([platformNamed('win32-x64')]);
    fs.writeFileSync(path.join(dir, 'node.def'), 'LIBRARY node.exe\nEXPORTS\nnapi_create_object\n');
    const lib = await capture(DLLTOOL, ['-d', 'node.def', '-l', 'node.a'], { cwd: dir });
    assert.equal(lib.code, 0, lib.stderr);
    const out = {};
    for (const [name, [source, link]] of Object.entries(FIXTURES)) {
      fs.writeFileSync(path.join(dir, `${name}.c`), source);
      const r = await capture(CC, ['-shared', '-o', `${name}.dll`, `${name}.c`, ...link], { cwd: dir });
      assert.equal(r.code, 0, `${name}: ${r.stderr}`);
      out[name] = path.join(dir, `${name}.dll`);
    }
    return out;
  })();
  return built;
}

const linksOf = (file) => {
  const links = peLinks(fs.readFileSync(file));
  assert.ok(links, `${file} is not read as PE32+`);
  return links;
};

test('an addon that looks Node-API up in its host process imports no Node and passes', async () => {
  const links = linksOf((await fixtures())['host-lookup']);
  assert.ok(links.exports.includes('napi_register_module_v1'), JSON.stringify(links));
  assert.ok(
    links.imports.some((d) => d.toLowerCase() === 'kernel32.dll'),
    `GetModuleHandleW's DLL is read from the import table: ${links.imports}`,
  );
  assert.deepEqual(peProblems(links, 'engine'), []);
});

test('an addon that imports Node-API from node.exe is refused, naming node.exe', async () => {
  const links = linksOf((await fixtures())['node-exe-import']);
  assert.ok(links.imports.includes('node.exe'), `the import table names node.exe: ${links.imports}`);
  const problems = peProblems(links, 'engine');
  assert.equal(problems.length, 1, JSON.stringify(problems));
  assert.match(problems[0], /^imports node\.exe: .*Code\.exe/);
});

test("MinGW's runtime as a DLL is refused; a DLL that is no addon is refused as the engine only", async () => {
  const links = linksOf((await fixtures())['mingw-runtime']);
  assert.ok(links.exports.includes('run') && !links.exports.includes('napi_register_module_v1'), JSON.stringify(links));
  const dll = links.imports.find((d) => /^libwinpthread/i.test(d));
  assert.ok(dll, `the import table names MinGW's thread library: ${links.imports}`);
  assert.deepEqual(peProblems(links, 'program'), [`imports ${dll}, which Windows does not have (MinGW's runtime is linked statically)`]);
  assert.ok(
    peProblems(links, 'engine').includes('exports no napi_register_module_v1, which Node calls to load an addon'),
    JSON.stringify(peProblems(links, 'engine')),
  );
});

test('what is not PE32+ has no PE links', () => {
  assert.equal(peLinks(Buffer.from('\x7fELF not a DLL at all, padded to sixty-four bytes for the header check', 'latin1')), null);
});
