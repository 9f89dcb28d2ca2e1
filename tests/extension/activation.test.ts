// The extension in the real VS Code extension host: activation, the engine it loaded, the commands.
import * as assert from 'assert';
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';
import type { ChokepointApi } from '../../extension/src/extension';
import { loadNative, nativeFile } from '../../extension/src/engine/native';
import { pointerFile } from '../../extension/src/engine/findable';

const EXTENSION_ID = 'chokepoint.chokepoint';
const root = () => vscode.workspace.workspaceFolders![0].uri.fsPath;
const cargoVersion = () => /^version = "([^"]+)"/m.exec(fs.readFileSync(path.join(__dirname, '../../../Cargo.toml'), 'utf8'))![1];

async function api(): Promise<ChokepointApi> {
  const ext = vscode.extensions.getExtension<ChokepointApi>(EXTENSION_ID);
  assert.ok(ext, `extension ${EXTENSION_ID} is not installed in this host`);
  return ext.activate();
}

async function until<T>(what: string, probe: () => T | undefined, ms = 5000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const hooksYaml = () => path.join(root(), '.orchestration', 'hooks.yaml');

/** For a suite that edits hooks.yaml: puts the sample back, and the engine on it, when the suite
 *  ends. Returns the sample's text as it was before the suite. */
function restoreHooksYamlAfterwards(): () => string {
  let original = '';
  before(() => (original = fs.readFileSync(hooksYaml(), 'utf8')));
  after(async () => {
    fs.writeFileSync(hooksYaml(), original);
    (await api()).reload();
  });
  return () => original;
}

describe('activation', () => {
  it('activates on a workspace with .orchestration/ without being asked', async () => {
    const ext = vscode.extensions.getExtension(EXTENSION_ID)!;
    await until('activation', () => (ext.isActive ? true : undefined), 10000);
  });

  it('loads the native engine and reports its version, which is the Rust crate version', async () => {
    const state = (await api()).engineState;
    assert.strictEqual(state.status, 'ready', JSON.stringify(state));
    if (state.status !== 'ready') return;
    assert.strictEqual(state.version, cargoVersion());
    assert.strictEqual(state.workspaceRoot, root());
  });

  it('reads the sample configuration: hooks, task types and intents', async () => {
    const state = (await api()).engineState;
    assert.ok(state.status === 'ready');
    assert.deepStrictEqual(
      { hooks: state.hooks.status, count: state.hooks.hookCount, events: state.hooks.events, taskTypes: state.hooks.taskTypes, intents: state.intents.ids },
      { hooks: 'loaded', count: 3, events: ['PostToolUse', 'BeforeSubmit'], taskTypes: ['bugfix'], intents: ['INT-001', 'INT-002', 'INT-003'] },
    );
  });

  it('shows the engine version in the status bar', async () => {
    assert.strictEqual((await api()).statusBarText, `$(shield) Chokepoint ${cargoVersion()}`);
  });

  it('Show Engine Info reports the version and the loaded configuration', async () => {
    const state = await vscode.commands.executeCommand<ReturnType<ChokepointApi['reload']>>('chokepoint.showEngineInfo');
    assert.ok(state && state.status === 'ready');
    assert.strictEqual(state.version, cargoVersion());
    assert.strictEqual(state.intents.ids.length, 3);
  });
});

describe('configuration reload', () => {
  const original = restoreHooksYamlAfterwards();

  it('keeps the last good configuration and reports file, line and column when the YAML breaks', async () => {
    const chokepoint = await api();
    fs.writeFileSync(hooksYaml(), 'version: 1\nhooks:\n  PreToolUse:\n    - name: "unclosed\n');
    const state = chokepoint.reload();
    assert.ok(state.status === 'ready');
    assert.strictEqual(state.hooks.status, 'invalid');
    assert.strictEqual(state.hooks.hookCount, 3, 'the last good hooks keep running');
    assert.strictEqual(state.diagnostics.length, 1);
    const d = state.diagnostics[0];
    assert.deepStrictEqual([d.file, d.line, d.column], [hooksYaml(), 5, 1]);
    // The problem reaches the Problems panel at that position.
    const problems = await until(
      'problems',
      () => {
        const p = vscode.languages.getDiagnostics(vscode.Uri.file(hooksYaml()));
        return p.length ? p : undefined;
      },
      10000,
    );
    assert.strictEqual(problems[0].range.start.line, 4);
    assert.match(chokepoint.statusBarText, /config error/);
  });

  it('picks up an edit while running, without a command', async () => {
    const chokepoint = await api();
    fs.writeFileSync(hooksYaml(), original().replace('hooks:\n', 'hooks:\n  TurnEnd:\n    - name: added-while-running\n      command: [/bin/true]\n'));
    await until(
      'the watcher to reload',
      () => {
        const s = chokepoint.engineState;
        return s.status === 'ready' && s.hooks.hookCount === 4 ? s : undefined;
      },
      20000,
    ); // the file watcher lives in the server process; under load its first event can be slow
  });
});

describe('the live engine', () => {
  restoreHooksYamlAfterwards();
  const program = () => path.join(__dirname, '../../../target/release/chokepoint');
  /** `chokepoint hook --agent claude` on this workspace, as Claude Code runs it, with this host's
   *  environment (so the same runtime folder); returns what it printed. */
  const sessionStart = (...extra: string[]) => {
    const input = JSON.stringify({ session_id: 'ext-live', transcript_path: '/tmp/t.jsonl', cwd: root(), hook_event_name: 'SessionStart', source: 'startup' });
    const run = spawnSync(program(), ['hook', '--agent', 'claude', '--workspace', root(), ...extra], { input, encoding: 'utf8' });
    assert.strictEqual(run.status, 0, run.stderr);
    return run.stdout;
  };

  it("answers other agents' hooks from the engine this window loaded", async () => {
    const chokepoint = await api();
    assert.ok(fs.existsSync(program()), `build the CLI first: ${program()}`);
    // A bad edit: this window's engine keeps the last good configuration; a hook alone has none.
    fs.writeFileSync(hooksYaml(), 'version: 1\nhooks: [\n');
    await until(
      'the watcher to see the bad edit',
      () => {
        const s = chokepoint.engineState;
        return s.status === 'ready' && s.diagnostics.length > 0 ? s : undefined;
      },
      20000,
    );
    const served = sessionStart();
    assert.match(served, /the last good configuration keeps running/, served);
    assert.match(served, /hooks\.yaml:2:/, served);
    const alone = sessionStart('--local');
    assert.match(alone, /no write is allowed until it is fixed/, alone);
  });
});

describe('native loader', () => {
  it('names the file it looked for when the addon is missing, and does not throw', () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'chokepoint-no-native-'));
    const load = loadNative(empty);
    assert.strictEqual(load.ok, false);
    if (load.ok) return;
    assert.strictEqual(load.lookedFor, nativeFile(empty));
    assert.ok(load.error.includes(nativeFile(empty)), load.error);
  });

  it('refuses a .node file that is not the Chokepoint engine', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chokepoint-bad-native-'));
    fs.mkdirSync(path.join(dir, 'native', 'node'), { recursive: true });
    fs.writeFileSync(nativeFile(dir), 'not a shared library');
    const load = loadNative(dir);
    assert.strictEqual(load.ok, false);
    if (!load.ok) assert.match(load.error, /cannot load the native engine from/);
  });
});

describe('the chokepoint', () => {
  restoreHooksYamlAfterwards();

  it('judges an agent action through the chain in the extension host: a declared rule and a command hook', async () => {
    const chokepoint = await api();
    fs.writeFileSync(
      hooksYaml(),
      [
        'version: 1',
        'hooks:',
        '  PreToolUse:',
        '    - name: no-env',
        '      priority: critical',
        '      paths: ["**/.env", ".env"]',
        '      deny: { reason: "secrets stay out", suggested_tool: scope_expansion_request }',
        '    - name: size-check',
        '      tool: write_to_file',
        "      command: [node, -e, \"let s='';process.stdin.on('data',d=>s+=d).on('end',()=>{const i=JSON.parse(s).tool_input;if(i.content.length>10){console.error('too big: '+i.path);process.exit(2)}})\"]",
        '',
      ].join('\n'),
    );
    chokepoint.reload();
    const write = (p: string, content: string) => ({
      event: 'PreToolUse' as const,
      tool: 'write_to_file',
      input: { path: p, content },
      paths: [p],
      sessionId: 'ext-test',
    });
    // The gatekeeper comes first: no write before the session selects an intent.
    const early = await chokepoint.evaluate(write('src/auth/a.js', 'small'));
    assert.strictEqual(early.decision, 'deny');
    assert.match(early.reason ?? '', /call `select_active_intent` first/);
    const handshake = await chokepoint.evaluate({ event: 'PreToolUse', tool: 'select_active_intent', input: { intent_id: 'INT-001' }, sessionId: 'ext-test' });
    assert.strictEqual(handshake.decision, 'allow');
    const env = await chokepoint.evaluate(write('src/auth/.env', 'x'));
    assert.deepStrictEqual([env.decision, env.reason, env.suggestedTool], ['deny', 'secrets stay out', 'scope_expansion_request']);
    const big = await chokepoint.evaluate(write('src/auth/a.js', 'x'.repeat(50)));
    assert.deepStrictEqual([big.decision, big.reason], ['deny', 'too big: src/auth/a.js']);
    const ok = await chokepoint.evaluate(write('src/auth/a.js', 'small'));
    assert.strictEqual(ok.decision, 'allow');
    const outside = await chokepoint.evaluate(write('src/billing/a.js', 'small'));
    assert.deepStrictEqual([outside.decision, outside.suggestedTool], ['deny', 'scope_expansion_request']);
    // The end of the task frees the intent.
    await chokepoint.evaluate({ event: 'TaskComplete', sessionId: 'ext-test' });
    assert.strictEqual((await chokepoint.evaluate(write('src/auth/a.js', 'small'))).decision, 'deny');
  });
});

describe('setting another agent up', () => {
  // What init may create here; what was there before stays.
  let created: string[] = [];
  before(() => {
    created = ['.claude', '.mcp.json', path.join('.orchestration', '.gitignore')].filter((f) => !fs.existsSync(path.join(root(), f)));
  });
  after(() => {
    for (const f of created) fs.rmSync(path.join(root(), f), { recursive: true, force: true });
  });

  it("writes Claude Code's hooks through chokepoint init, naming no path, and makes the program it ships findable", async () => {
    await api();
    const result = await vscode.commands.executeCommand<{ ok: boolean; agent?: string; output: string }>('chokepoint.setUpAgent', 'claude');
    assert.ok(result && result.ok, JSON.stringify(result));
    const settings = JSON.parse(fs.readFileSync(path.join(root(), '.claude', 'settings.json'), 'utf8'));
    const pre = settings.hooks.PreToolUse[0].hooks[0];
    assert.match(pre.command, / hook --agent claude /);
    // The committed hook names no path; the extension named its program in the pointer the hook
    // reads, and put its folder first on this host's PATH.
    const program = fs.readFileSync(pointerFile(), 'utf8').trim();
    assert.ok(fs.existsSync(program), `the pointer names ${program}, which is missing`);
    assert.ok(!pre.command.includes(path.dirname(program)), pre.command);
    assert.strictEqual((process.env.PATH ?? '').split(path.delimiter)[0], path.dirname(program));
    assert.deepStrictEqual(Object.keys(JSON.parse(fs.readFileSync(path.join(root(), '.mcp.json'), 'utf8')).mcpServers), ['chokepoint']);
    // Run again: nothing changes.
    const again = await vscode.commands.executeCommand<{ ok: boolean; output: string }>('chokepoint.setUpAgent', 'claude');
    assert.ok(again.ok && /unchanged/.test(again.output), again.output);
  });

  it('refuses an agent it does not know, writing nothing', async () => {
    const result = await vscode.commands.executeCommand<{ ok: boolean; output: string }>('chokepoint.setUpAgent', 'nosuch');
    assert.strictEqual(result.ok, false);
    assert.match(result.output, /unknown agent `nosuch`/);
  });
});

describe("Chokepoint's models in VS Code's language model API", () => {
  it('lists the scripted demo, and VS Code counts its prompt with the core tokenizer', async () => {
    await api();
    const models = await vscode.lm.selectChatModels({ vendor: 'chokepoint' });
    const demo = models.find((m) => m.name === 'Chokepoint demo (scripted)');
    assert.ok(demo, `models of vendor chokepoint: ${models.map((m) => m.name).join(', ')}`);
    const text = 'function lockedOut(failures: number[], now: number) { return failures.filter((t) => now - t < 60_000).length >= 5; }';
    const load = loadNative(vscode.extensions.getExtension(EXTENSION_ID)!.extensionPath);
    assert.ok(load.ok, 'the native engine loads');
    const [expected] = load.binding.countTokens([text], demo.id);
    assert.strictEqual(await demo.countTokens(text), expected);
    assert.notStrictEqual(expected, Math.ceil(text.length / 3), 'the count is not the fallback estimate');
  });
});
