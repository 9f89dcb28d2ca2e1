// The first run's declarations in step with the code: every command a walkthrough step's button, a
// sidebar welcome button or a view's welcome content runs is one package.json contributes, every file a step shows exists (and
// is packed into the .vsix), every context key a step completes on is set by the extension, and the
// starter configuration that "Govern This Folder" writes loads.
'use strict';
const { test, after } = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { loadTypeScript } = require('../support/typescript');

const ROOT = path.resolve(__dirname, '../..');
const manifest = require(path.join(ROOT, 'package.json'));
const commands = new Set(manifest.contributes.commands.map((c) => c.command));
const [walkthrough] = manifest.contributes.walkthroughs;
const extensionSource = () =>
  // Without an encoding the names are strings (utf8); the overload for { recursive } says string | Buffer.
  /** @type {string[]} */ (fs.readdirSync(path.join(ROOT, 'extension/src'), { recursive: true }))
    .filter((f) => f.endsWith('.ts'))
    .map((f) => fs.readFileSync(path.join(ROOT, 'extension/src', f), 'utf8'))
    .join('\n');

// The catalogue is TypeScript, bundled for this process (tests/support/typescript.js).
const { WelcomeCommand, WebviewMessage, parseMessage } = loadTypeScript('protocol/messages.ts');

/** The commands a step's description links to, with their arguments (`command:id?<encoded JSON>`). */
function links(description) {
  return [...description.matchAll(/\]\(command:([\w.]+)(?:\?([^)]*))?\)/g)].map(([, id, args]) => ({
    id,
    args: args ? JSON.parse(decodeURIComponent(args)) : undefined,
  }));
}

test('the walkthrough is declared with its steps in order', () => {
  assert.strictEqual(walkthrough.id, 'gettingStarted');
  assert.deepStrictEqual(
    walkthrough.steps.map((s) => s.id),
    ['about', 'govern', 'connect', 'chat', 'change', 'trace'],
  );
  // "Chokepoint: Get Started" opens it by this id (ui/firstRun.ts).
  assert.match(extensionSource(), /export const WALKTHROUGH = 'gettingStarted'/);
});

test("every command a walkthrough step's button runs is contributed, with arguments the command takes", () => {
  const agents = ['claude', 'codex', 'gemini', 'copilot', 'cursor'];
  for (const step of walkthrough.steps) {
    const found = links(step.description);
    assert.ok(found.length > 0, `step ${step.id} has a button`);
    for (const { id, args } of found) {
      assert.ok(commands.has(id), `step ${step.id} runs ${id}, which package.json does not contribute`);
      if (args !== undefined) {
        assert.strictEqual(id, 'chokepoint.setUpAgent', `only Set Up Another Agent takes an argument (step ${step.id}, ${id})`);
        assert.ok(Array.isArray(args) && args.length === 1 && agents.includes(args[0]), `${JSON.stringify(args)} names an agent chokepoint init sets up`);
      }
    }
  }
  const connect = links(walkthrough.steps.find((s) => s.id === 'connect').description);
  assert.deepStrictEqual(
    connect.map((l) => (l.args ? l.args[0] : l.id)),
    ['chokepoint.connectVsCodeAgent', ...agents],
    'a button per agent',
  );
});

test("every command the views' welcome content (package.json viewsWelcome) runs is contributed", () => {
  const welcomes = manifest.contributes.viewsWelcome ?? [];
  assert.ok(welcomes.length > 0);
  for (const w of welcomes)
    for (const { id } of links(w.contents)) assert.ok(commands.has(id), `the welcome of ${w.view} runs ${id}, which package.json does not contribute`);
});

test('every file a walkthrough step shows exists and is packed into the .vsix', () => {
  const packed = fs.readFileSync(path.join(ROOT, '.vscodeignore'), 'utf8');
  assert.match(packed, /^!media\/\*\*$/m);
  for (const step of walkthrough.steps) {
    const files = [step.media.markdown, step.media.image, step.media.svg].filter(Boolean);
    assert.ok(files.length > 0, `step ${step.id} shows something`);
    for (const f of files) {
      assert.ok(f.startsWith('media/'), `${f} is under media/`);
      assert.ok(fs.existsSync(path.join(ROOT, f)), `step ${step.id} shows ${f}, which does not exist`);
    }
  }
});

test('every completion event of a step is one that happens', () => {
  const source = extensionSource();
  const views = Object.values(manifest.contributes.views)
    .flat()
    .map((v) => v.id);
  for (const step of walkthrough.steps) {
    assert.ok(step.completionEvents?.length, `step ${step.id} completes on something`);
    for (const event of step.completionEvents) {
      const [kind, what] = [event.slice(0, event.indexOf(':')), event.slice(event.indexOf(':') + 1)];
      if (kind === 'onCommand') assert.ok(commands.has(what), `${event}: a contributed command`);
      else if (kind === 'onView') assert.ok(views.includes(what), `${event}: a contributed view`);
      else if (kind === 'onContext') assert.match(source, new RegExp(`'${what.replace(/\./g, '\\.')}'`), `${event}: the extension sets ${what}`);
      else assert.fail(`step ${step.id}: ${event} is not a kind this test knows`);
    }
  }
});

test("every command the sidebar's welcome buttons may run is contributed, and the page may run no other", () => {
  for (const id of WelcomeCommand.options) assert.ok(commands.has(id), `the welcome allow-list names ${id}, which package.json does not contribute`);
  // The page's buttons name only commands of the list (the type checker holds welcome.ts to it; this
  // holds the list to the buttons, so that it does not grow past what the page uses).
  const page = fs
    .readdirSync(path.join(ROOT, 'webview/src'))
    .filter((f) => f.endsWith('.ts'))
    .map((f) => fs.readFileSync(path.join(ROOT, 'webview/src', f), 'utf8'))
    .join('\n');
  const used = new Set([...page.matchAll(/run: '(chokepoint\.[\w.]+)'/g)].map((x) => x[1]));
  assert.deepStrictEqual([...used].sort(), [...WelcomeCommand.options].sort(), 'the allow-list is exactly the commands the welcome buttons run');
  assert.ok(parseMessage(WebviewMessage, { type: 'runCommand', command: 'chokepoint.getStarted' }).ok);
  for (const bad of ['workbench.action.terminal.new', 'chokepoint.revokeLease', '', 'chokepoint.getStarted ']) {
    assert.ok(!parseMessage(WebviewMessage, { type: 'runCommand', command: bad }).ok, `${JSON.stringify(bad)} is refused`);
  }
});

const made = [];
after(() => made.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

test('the starter configuration Govern This Folder writes loads, with its intent, and names schemas that are packed', () => {
  const binding = require(path.join(ROOT, 'native/node'));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chokepoint-starter-'));
  made.push(dir);
  fs.mkdirSync(path.join(dir, '.orchestration'));
  for (const f of ['hooks.yaml', 'active_intents.yaml']) fs.copyFileSync(path.join(ROOT, 'templates/orchestration', f), path.join(dir, '.orchestration', f));
  const engine = binding.Engine.open(dir);
  const info = engine.info();
  assert.deepStrictEqual(info.diagnostics, []);
  assert.strictEqual(info.hooks.status, 'loaded');
  assert.strictEqual(info.intents.status, 'loaded');
  assert.deepStrictEqual(info.intentIds, ['INT-001']);
  engine.close();
  const packed = fs.readFileSync(path.join(ROOT, '.vscodeignore'), 'utf8');
  assert.match(packed, /^!templates\/orchestration\/\*\.yaml$/m);
  assert.match(packed, /^!\.orchestration\/schema\/\*\.json$/m);
  for (const f of ['hooks.yaml', 'active_intents.yaml']) {
    const schema = /\$schema=(\S+)/.exec(fs.readFileSync(path.join(ROOT, 'templates/orchestration', f), 'utf8'))[1];
    assert.ok(fs.existsSync(path.join(ROOT, '.orchestration', schema)), `${f} names ${schema}`);
  }
});
