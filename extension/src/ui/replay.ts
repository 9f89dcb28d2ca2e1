// Policy replay from the editor: on `.orchestration/hooks.yaml` with unsaved changes, or changes not
// yet committed, "Replay the Trace Against This hooks.yaml" (the editor title and a CodeLens) judges
// the recorded tool calls again against the editor's text (`Engine.traceReplay`, the core's replay)
// and shows the decisions that would change as a Markdown preview. The editor's text and the current
// active_intents.yaml are written to a temporary folder, removed after; nothing is recorded.
//
// The command is `chokepoint.replayTrace`, shown while the context key `chokepoint.hooksYamlChanged` holds (the active editor is
// the workspace's hooks.yaml and is dirty or differs from `git show HEAD:`). It runs under a progress notification; a draft that
// does not load is an error naming the editor's file:line:column.
import { execFile } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';
import type { EngineHost } from '../engine/engineHost';
import type { NativeEngine } from '../engine/native';
import type { Log } from '../host/log';

export type ReplayResult = Awaited<ReturnType<NativeEngine['traceReplay']>>;
export type ReplayReport = NonNullable<ReplayResult['report']>;

export const REPLAY_COMMAND = 'chokepoint.replayTrace';
/** Set while the active editor is the workspace's hooks.yaml and its text differs from git HEAD's. */
const CHANGED_KEY = 'chokepoint.hooksYamlChanged';
const HOOKS = '.orchestration/hooks.yaml';
const INTENTS = '.orchestration/active_intents.yaml';

/** Registers the command, its CodeLens and the context key of the editor title's button. */
export function registerReplay(engine: EngineHost, log: Log): vscode.Disposable {
  const lenses = new ReplayLenses(engine);
  const update = () => void updateChangedKey(engine);
  update();
  return vscode.Disposable.from(
    lenses,
    vscode.languages.registerCodeLensProvider({ pattern: `**/${HOOKS}` }, lenses),
    vscode.commands.registerCommand(REPLAY_COMMAND, (uri?: unknown) => replayCommand(engine, log, uri instanceof vscode.Uri ? uri : undefined)),
    vscode.window.onDidChangeActiveTextEditor(update),
    vscode.workspace.onDidChangeTextDocument((e) => {
      if (isHooksYaml(engine, e.document.uri)) {
        update();
        lenses.refresh();
      }
    }),
    vscode.workspace.onDidSaveTextDocument(update),
  );
}

function isHooksYaml(engine: EngineHost, uri: vscode.Uri): boolean {
  const state = engine.state;
  return state.status === 'ready' && uri.scheme === 'file' && path.resolve(uri.fsPath) === path.join(state.workspaceRoot, HOOKS);
}

/** hooks.yaml as git HEAD has it; undefined when the workspace is not a git repository or HEAD has none.
 *  `./` makes the path relative to the workspace, which may be a folder inside the repository. */
function committedText(root: string): Promise<string | undefined> {
  return new Promise((resolve) =>
    execFile('git', ['show', `HEAD:./${HOOKS}`], { cwd: root, maxBuffer: 16 * 1024 * 1024 }, (error, stdout) => resolve(error ? undefined : stdout)),
  );
}

/** Whether the document has changes to replay: unsaved ones, or a text that is not HEAD's. */
async function hasChanges(engine: EngineHost, document: vscode.TextDocument): Promise<boolean> {
  if (document.isDirty) return true;
  const state = engine.state;
  if (state.status !== 'ready') return false;
  const committed = await committedText(state.workspaceRoot);
  return committed === undefined || committed !== document.getText();
}

async function updateChangedKey(engine: EngineHost): Promise<void> {
  const document = vscode.window.activeTextEditor?.document;
  const changed = document !== undefined && isHooksYaml(engine, document.uri) && (await hasChanges(engine, document));
  await vscode.commands.executeCommand('setContext', CHANGED_KEY, changed);
}

class ReplayLenses implements vscode.CodeLensProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.changed.event;

  constructor(private readonly engine: EngineHost) {}

  refresh(): void {
    this.changed.fire();
  }

  async provideCodeLenses(document: vscode.TextDocument): Promise<vscode.CodeLens[]> {
    if (!isHooksYaml(this.engine, document.uri) || !(await hasChanges(this.engine, document))) return [];
    return [
      new vscode.CodeLens(new vscode.Range(0, 0, 0, 0), {
        command: REPLAY_COMMAND,
        title: 'Replay the trace against this hooks.yaml',
        tooltip: 'Judge the recorded tool calls again with this text and list the decisions that would change',
        arguments: [document.uri],
      }),
    ];
  }

  dispose(): void {
    this.changed.dispose();
  }
}

/** Runs the replay and shows its report; returns the report's Markdown (for the API and the tests),
 *  or undefined when there was nothing to show (no engine, a failure, a draft that does not load). */
async function replayCommand(engine: EngineHost, log: Log, uri: vscode.Uri | undefined): Promise<string | undefined> {
  const native = engine.nativeEngine;
  const state = engine.state;
  if (!native || state.status !== 'ready') {
    void vscode.window.showErrorMessage('Chokepoint: the engine is not loaded; nothing to replay with');
    return undefined;
  }
  const target = uri ?? vscode.window.activeTextEditor?.document.uri ?? vscode.Uri.file(path.join(state.workspaceRoot, HOOKS));
  const document = await vscode.workspace.openTextDocument(target);
  const outcome = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: 'Chokepoint: replaying the trace against this hooks.yaml…' },
    () => replayText(native, state.workspaceRoot, document.getText()),
  );
  if ('error' in outcome) {
    log.error(`replay failed: ${outcome.error}`);
    void vscode.window.showErrorMessage(`Chokepoint: the replay failed: ${outcome.error}`);
    return undefined;
  }
  if (!outcome.result.report) {
    // The draft's problems, pointed back at the editor's file rather than the temporary copy.
    const problems = outcome.result.diagnostics.map((d) => `${document.uri.fsPath}:${d.line}:${d.column}: ${d.message}`);
    problems.forEach((p) => log.error(`replay: ${p}`));
    void vscode.window.showErrorMessage(`Chokepoint: this hooks.yaml does not load, so it cannot be replayed: ${problems.join('; ')}`);
    return undefined;
  }
  log.info(`replay against ${document.uri.fsPath}: ${outcome.result.report.changes.length} decisions would change`);
  const markdown = renderReplay(outcome.result.report, document.uri.fsPath);
  const preview = await vscode.workspace.openTextDocument({ language: 'markdown', content: markdown });
  await vscode.commands.executeCommand('markdown.showPreview', preview.uri);
  return markdown;
}

/** Replays `hooksText` (with the workspace's current active_intents.yaml) through the binding. */
export async function replayText(
  native: Pick<NativeEngine, 'traceReplay'>,
  root: string,
  hooksText: string,
): Promise<{ result: ReplayResult } | { error: string }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chokepoint-replay-'));
  try {
    fs.writeFileSync(path.join(dir, 'hooks.yaml'), hooksText);
    const intents = path.join(root, INTENTS);
    if (fs.existsSync(intents)) fs.copyFileSync(intents, path.join(dir, 'active_intents.yaml'));
    return { result: await native.traceReplay({ config: dir }) };
  } catch (e) {
    return { error: e instanceof Error ? e.message : String(e) };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The report as Markdown: the counts, the changes by hook and intent, then each change with its record. */
export function renderReplay(report: ReplayReport, hooksFile: string): string {
  const code = (s: string | null | undefined) => (s ? `\`${s.replace(/`/g, "'")}\`` : '(none)');
  const lines = [
    `# Replay of the trace against ${code(hooksFile)}`,
    '',
    `${report.replayed} recorded calls judged again: **${report.changes.length} would change**, ${report.unchanged} unchanged.`,
    '',
  ];
  for (const s of report.skipped) lines.push(`- skipped ${s.count}: ${s.reason}`);
  if (report.unverified > 0) {
    lines.push(`- ${report.unverified} calls met a command hook that was neither run nor recorded for them (counted as allow)`);
  }
  if (report.groups.length > 0) {
    lines.push('', '## By hook and intent', '', '| count | change | hook | intent |', '|---:|---|---|---|');
    for (const g of report.groups) lines.push(`| ${g.count} | ${g.from} → ${g.to} | ${code(g.hook)} | ${code(g.intent)} |`);
    lines.push('', '## Changes', '');
    for (const c of report.changes) {
      lines.push(`- **#${c.seq}** ${c.time} ${c.from} → **${c.to}** ${code(c.tool)} ${c.paths.map(code).join(', ')}`);
      lines.push(`  session ${code(c.session)}, intent ${code(c.intent)}, hook ${code(c.hook)}${c.reason ? `: ${c.reason}` : ''}`);
      for (const s of c.standIns) lines.push(`  - ${s}`);
    }
  }
  return `${lines.join('\n')}\n`;
}
