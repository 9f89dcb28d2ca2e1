// The rooms of extension/src stay as extension/src/extension.ts draws them: layers in the order of `ROOMS`, each
// importing only the rooms before it (an `import type` upwards is a dependency too), runtime/ and
// approvals/ know nothing of VS Code (they run under plain Node), only engine/ loads the native binding
// (everyone else may import its generated declarations as types: index.d.ts is the contract), and no
// two files import each other, directly or round a circle. Read with TypeScript's own parser, so an
// import in a string or a comment is not one.
import assert from 'node:assert/strict';
import * as fs from 'fs';
import * as path from 'path';
import { test } from 'node:test';
import type * as TS from 'typescript';

const ROOT = path.resolve(__dirname, '../../..');
const SRC = path.join(ROOT, 'extension/src');
const BINDING = path.join(ROOT, 'native/node');
// A computed path: the bundler leaves this require to run at runtime (the compiler is not bundled).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const ts = require(path.join(ROOT, 'node_modules/typescript')) as typeof TS;

/** One module reference of a source file: what it names, where, and whether it is erased at compile
 *  time (`import type`, `export type`, `typeof import(...)`). */
interface Reference {
  file: string;
  line: number;
  specifier: string | undefined;
  typeOnly: boolean;
  /** `require(...)` or `import(...)`: loads at runtime whatever the specifier is. */
  call: boolean;
}

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sourceFiles(p) : e.name.endsWith('.ts') ? [p] : [];
  });
}

function referencesOf(file: string): Reference[] {
  const source = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const refs: Reference[] = [];
  const add = (node: TS.Node, specifier: TS.Expression | undefined, typeOnly: boolean, call = false) =>
    refs.push({
      file: path.relative(ROOT, file),
      line: source.getLineAndCharacterOfPosition(node.getStart()).line + 1,
      specifier: specifier && ts.isStringLiteralLike(specifier) ? specifier.text : undefined,
      typeOnly,
      call,
    });
  const visit = (node: TS.Node): void => {
    if (ts.isImportDeclaration(node)) add(node, node.moduleSpecifier, node.importClause?.isTypeOnly ?? false);
    else if (ts.isExportDeclaration(node) && node.moduleSpecifier) add(node, node.moduleSpecifier, node.isTypeOnly);
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference))
      add(node, node.moduleReference.expression, node.isTypeOnly);
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) add(node, node.argument.literal as TS.Expression, true);
    else if (
      ts.isCallExpression(node) &&
      (node.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(node.expression) && node.expression.text === 'require'))
    ) {
      add(node, node.arguments[0], false, true);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return refs;
}

/** The rooms, lowest first: a room imports only the rooms before it. */
const ROOMS = ['runtime', 'approvals', 'engine', 'host', 'agent', 'ui', 'extension.ts'];

/** The room of a file under extension/src: its first folder, or the file itself at the root. */
const roomOf = (file: string): string => path.relative(SRC, file).split(path.sep)[0];

/** The file a relative specifier names (without extension), or undefined for a package. */
function target(ref: Reference): string | undefined {
  return ref.specifier?.startsWith('.') ? path.resolve(ROOT, path.dirname(ref.file), ref.specifier) : undefined;
}

function isBinding(ref: Reference): boolean {
  const t = target(ref);
  return (t !== undefined && (t === BINDING || t.startsWith(BINDING + path.sep))) || (ref.specifier?.endsWith('.node') ?? false);
}

/** Every reference that breaks a rule, as `file:line: what, and why not`. */
function violations(): string[] {
  const found: string[] = [];
  for (const file of sourceFiles(SRC)) {
    const room = roomOf(file);
    for (const ref of referencesOf(file)) {
      const at = `${ref.file}:${ref.line}`;
      if ((room === 'runtime' || room === 'approvals') && ref.specifier === 'vscode') {
        found.push(`${at}: imports 'vscode' (${room}/ knows nothing of VS Code, it runs under plain Node)`);
      }
      if (room !== 'engine' && !ref.typeOnly && isBinding(ref)) {
        found.push(
          `${at}: loads the native binding ('${ref.specifier}') outside engine/ (only engine/ loads it; elsewhere \`import type\` from native/node/index)`,
        );
      }
      if (room !== 'engine' && ref.call && ref.specifier === undefined) {
        found.push(`${at}: a computed require/import outside engine/ (it could load the binding: only engine/ loads it)`);
      }
      const into = target(ref);
      if (into?.startsWith(SRC + path.sep)) {
        const from = ROOMS.indexOf(room);
        const to = ROOMS.indexOf(roomOf(into + '.ts'));
        if (from < 0) found.push(`${at}: ${room} is in no room of ROOMS (add it where it belongs, and to ARCHITECTURE.md)`);
        else if (to > from)
          found.push(
            `${at}: ${room}/ imports '${ref.specifier}' from ${ROOMS[to]}, a room above it (${ROOMS.slice(from + 1).join(', ')} may use ${room}/, never the other way${ref.typeOnly ? '; a type is a dependency too' : ''})`,
          );
      }
    }
  }
  return found;
}

test('extension/src keeps its rooms: no vscode in runtime/ or approvals/, the binding loaded only in engine/, no import upwards', () => {
  // The rooms exist: a rename that empties one would pass the rules vacuously.
  for (const room of ROOMS.filter((r) => !r.endsWith('.ts'))) assert.ok(fs.statSync(path.join(SRC, room)).isDirectory(), `extension/src/${room}/ is missing`);
  assert.deepEqual(violations(), []);
});

/** The circles of `edges` (file → the files it imports), each as its files in order. */
function circles(edges: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (file: string): void => {
    state.set(file, 'open');
    stack.push(file);
    for (const next of edges.get(file) ?? []) {
      if (state.get(next) === 'open') found.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of [...edges.keys()].sort()) if (!state.has(file)) visit(file);
  return found;
}

/** Which files of extension/src each file imports (types included). */
function importGraph(): Map<string, string[]> {
  const edges = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const into = referencesOf(file)
      .map(target)
      .filter((t): t is string => t !== undefined && t.startsWith(SRC + path.sep))
      .map((t) => path.relative(SRC, fs.existsSync(t + '.ts') ? t + '.ts' : t));
    edges.set(path.relative(SRC, file), [...new Set(into)]);
  }
  return edges;
}

test('no two files of extension/src import each other, directly or round a circle (types included)', () => {
  assert.deepEqual(
    circles(importGraph()).map((c) => c.join(' → ')),
    [],
  );
});

test('the circle check sees a circle, and the rooms check an import upwards, however it is written', () => {
  assert.deepEqual(
    circles(
      new Map([
        ['a.ts', ['b.ts']],
        ['b.ts', ['c.ts']],
        ['c.ts', ['a.ts']],
        ['d.ts', ['a.ts']],
      ]),
    ),
    [['a.ts', 'b.ts', 'c.ts', 'a.ts']],
  );
  // The order is what the rule reads: host/ comes after engine/, ui/ after agent/.
  assert.ok(ROOMS.indexOf('host') > ROOMS.indexOf('engine') && ROOMS.indexOf('ui') > ROOMS.indexOf('agent'));
});

test('the rooms check sees what it forbids (engine/native.ts requires the binding, agent/ imports vscode)', () => {
  const native = referencesOf(path.join(SRC, 'engine/native.ts'));
  assert.ok(
    native.some((r) => r.call && r.specifier === undefined),
    'engine/native.ts requires the addon by a computed path',
  );
  assert.ok(
    native.some((r) => r.typeOnly && isBinding(r)),
    'engine/native.ts imports the binding as types',
  );
  assert.ok(referencesOf(path.join(SRC, 'agent/vscodeLm.ts')).some((r) => r.specifier === 'vscode' && !r.typeOnly));
});
