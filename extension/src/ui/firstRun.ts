// The first run: the walkthrough "Get Started with Chokepoint" (package.json `walkthroughs`), opened
// once on the first activation with a folder open and by "Chokepoint: Get Started"; the facts its
// steps complete on, kept as context keys (`chokepoint.agentConnected`, `chokepoint.chatReady`,
// `chokepoint.traceHasRecords`; `chokepoint.governed` is extension.ts's); "Govern This Folder", which
// writes a starter `.orchestration/`; and VS Code's Chat sign-in wall, explained when an agent is
// connected to the Chat, with the command that takes it away.
//
// The sign-in wall, as seen in code-server 4.139 (VS Code 1.139): a fresh profile disables the
// built-in chat extension (GitHub Copilot Chat) until chat set-up is completed, and while it is
// disabled the Chat view's first prompt goes to the set-up flow, which asks for a GitHub sign-in.
// Enabled (Extensions: Enable All Extensions, no reload), the Chat runs the models this extension
// contributes without one. A disabled extension is absent from `vscode.extensions`, which is how it
// is detected here; VS Code has no command that enables one extension by id. "Turn On VS Code's Chat" runs
// `workbench.extensions.action.enableAll`, then waits for the extension.
//
// The walkthrough (id `gettingStarted`, its pages in media/walkthrough/) opens by itself once (globalState), not in the
// extension-host suite, nor when `workbench.welcomePage.walkthroughs.openOnInstall` is off. `chokepoint.agentConnected`: an
// agent's hook settings run `chokepoint hook`; `chokepoint.chatReady`: VS Code's chat extension runs. "Govern This Folder" copies
// templates/orchestration/ and the schemas of .orchestration/schema/ (both packed) without replacing a file. The walkthrough's
// buttons are `command:` links; tests/node/walkthrough.test.js holds each to a contributed command, each page to a packed file
// and each `onContext:` to a key set here.
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import type { EngineHost } from '../engine/engineHost';
import type { Log } from '../host/log';
import type { Trace } from './trace';

/** The walkthrough's id in package.json; VS Code knows it as `<extension id>#<this>`. */
export const WALKTHROUGH = 'gettingStarted';
/** Set in globalState once the walkthrough was opened on an activation: it opens by itself once. */
const OPENED_KEY = 'chokepoint.walkthroughOpened';
/** The built-in extension VS Code's Chat runs through. */
export const CHAT_EXTENSION = 'GitHub.copilot-chat';
const ENABLE_ALL = 'workbench.extensions.action.enableAll';

/** Each agent `chokepoint init` sets up, by the file whose hooks run `chokepoint hook --agent`. */
const AGENT_FILES = ['.claude/settings.json', '.codex/hooks.json', '.gemini/settings.json', '.github/hooks/chokepoint.json', '.cursor/hooks.json'];

export function openWalkthrough(context: vscode.ExtensionContext): Thenable<unknown> {
  return vscode.commands.executeCommand('workbench.action.openWalkthrough', `${context.extension.id}#${WALKTHROUGH}`, false);
}

/**
 * Opens the walkthrough on the first activation with a folder open, once (remembered in globalState,
 * so once per profile, whichever workspace came first). Not in the extension-host test suite, and not
 * when VS Code's own "open walkthroughs on install" setting or `chokepoint.walkthrough.openOnFirstActivation`
 * is off.
 */
export async function openOnFirstActivation(context: vscode.ExtensionContext, log: Log): Promise<void> {
  if (context.extensionMode === vscode.ExtensionMode.Test) return;
  if (!vscode.workspace.workspaceFolders?.length || context.globalState.get<boolean>(OPENED_KEY)) return;
  if (vscode.workspace.getConfiguration('workbench').get<boolean>('welcomePage.walkthroughs.openOnInstall', true) === false) return;
  if (vscode.workspace.getConfiguration('chokepoint').get<boolean>('walkthrough.openOnFirstActivation', true) === false) return;
  await context.globalState.update(OPENED_KEY, true);
  log.info('first activation: opening the walkthrough (Chokepoint: Get Started opens it again)');
  await openWalkthrough(context);
}

/** Whether VS Code's Chat can run Chokepoint's models without a sign-in: its chat extension is
 *  enabled and AI features are not turned off. */
export function chatReady(): boolean {
  return (
    vscode.extensions.getExtension(CHAT_EXTENSION) !== undefined && vscode.workspace.getConfiguration('chat').get<boolean>('disableAIFeatures', false) !== true
  );
}

/** Agents whose hook settings in `root` run `chokepoint hook` (as `chokepoint init` writes them). */
export function connectedAgentFiles(root: string): string[] {
  return AGENT_FILES.filter((rel) => {
    try {
      return fs.readFileSync(path.join(root, rel), 'utf8').includes('hook --agent');
    } catch {
      return false;
    }
  });
}

/** Keeps the context keys the walkthrough's steps complete on in step with what is true now. */
export class FirstRunState implements vscode.Disposable {
  private readonly disposables: vscode.Disposable[] = [];
  private readonly values = new Map<string, boolean>();

  constructor(
    private readonly engine: EngineHost,
    private readonly trace: Trace,
  ) {
    const agentFiles = vscode.workspace.createFileSystemWatcher(
      '**/{.claude/settings.json,.codex/hooks.json,.gemini/settings.json,.github/hooks/chokepoint.json,.cursor/hooks.json}',
    );
    const agents = () => this.set('chokepoint.agentConnected', this.agentConnected());
    this.disposables.push(
      agentFiles,
      agentFiles.onDidCreate(agents),
      agentFiles.onDidChange(agents),
      agentFiles.onDidDelete(agents),
      engine.onDidChange(() => this.refresh()),
      trace.onDidChange(() => this.set('chokepoint.traceHasRecords', this.traceHasRecords())),
      vscode.extensions.onDidChange(() => this.set('chokepoint.chatReady', chatReady())),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('chat.disableAIFeatures')) this.set('chokepoint.chatReady', chatReady());
      }),
    );
    this.refresh();
  }

  refresh(): void {
    this.set('chokepoint.agentConnected', this.agentConnected());
    this.set('chokepoint.chatReady', chatReady());
    this.set('chokepoint.traceHasRecords', this.traceHasRecords());
  }

  private agentConnected(): boolean {
    const state = this.engine.state;
    return state.status === 'ready' && connectedAgentFiles(state.workspaceRoot).length > 0;
  }

  private traceHasRecords(): boolean {
    const recent = this.trace.recent({}, 1);
    return recent.ok && recent.entries.length > 0;
  }

  private set(key: string, value: boolean): void {
    if (this.values.get(key) === value) return;
    this.values.set(key, value);
    void vscode.commands.executeCommand('setContext', key, value);
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}

/**
 * "Turn On VS Code's Chat": runs Extensions: Enable All Extensions when the Chat's extension is
 * disabled, and waits (up to 15 s) for it to start. Returns whether the Chat is ready.
 */
export async function enableChat(log: Log): Promise<boolean> {
  if (vscode.workspace.getConfiguration('chat').get<boolean>('disableAIFeatures', false) === true) {
    const pick = await vscode.window.showWarningMessage(
      'VS Code\u2019s Chat is hidden: AI features are turned off (the setting chat.disableAIFeatures).',
      'Open Setting',
    );
    if (pick) void vscode.commands.executeCommand('workbench.action.openSettings', 'chat.disableAIFeatures');
    return false;
  }
  if (!chatReady()) {
    log.info(`VS Code's Chat: ${CHAT_EXTENSION} is disabled or missing; running Extensions: Enable All Extensions`);
    const started = new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        listener.dispose();
        resolve();
      };
      const listener = vscode.extensions.onDidChange(() => chatReady() && done());
      const timer = setTimeout(done, 15_000);
    });
    await vscode.commands.executeCommand(ENABLE_ALL);
    if (!chatReady()) await started;
  }
  if (chatReady()) {
    void vscode.window
      .showInformationMessage('VS Code\u2019s Chat is on: open it in Agent mode and pick a Chokepoint model (no sign-in).', 'Open Chat')
      .then((pick) => {
        if (pick) void vscode.commands.executeCommand('workbench.action.chat.open');
      });
    return true;
  }
  log.warn(`VS Code's Chat: ${CHAT_EXTENSION} did not start after Enable All Extensions`);
  const pick = await vscode.window.showWarningMessage(
    'VS Code\u2019s Chat extension (GitHub Copilot Chat) is still not running: it may not be installed in this VS Code. Install or enable it in the Extensions view.',
    'Show Disabled Extensions',
  );
  if (pick) void vscode.commands.executeCommand('workbench.extensions.action.showDisabledExtensions');
  return false;
}

/**
 * Said when VS Code's agent was just connected: the Chat's first prompt would otherwise hit the
 * GitHub sign-in of its set-up flow, with nothing telling why. Nothing is said when the Chat is ready.
 */
export async function warnIfChatNeedsSignIn(log: Log): Promise<void> {
  if (chatReady()) return;
  const turnOn = 'Turn On Chat (Enable All Extensions)';
  const pick = await vscode.window.showWarningMessage(
    'VS Code\u2019s Chat will ask you to sign in to GitHub: its chat extension (GitHub Copilot Chat) is disabled in this profile until chat is set up. Turned on, the Chat runs Chokepoint\u2019s models with no sign-in.',
    turnOn,
  );
  if (pick === turnOn) await enableChat(log);
}

/**
 * "Govern This Folder": writes the starter `.orchestration/` (active_intents.yaml, hooks.yaml and the
 * JSON schemas they name) into the first folder, never over a file that exists, then reloads the
 * engine and opens active_intents.yaml to be edited.
 */
export async function governFolder(extensionPath: string, engine: EngineHost, log: Log): Promise<boolean> {
  const folder = vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === 'file');
  if (!folder) {
    void vscode.window.showErrorMessage('Chokepoint: open a folder first; .orchestration/ goes at its root.');
    return false;
  }
  const target = path.join(folder.uri.fsPath, '.orchestration');
  const files: [string, string][] = [
    [path.join(extensionPath, 'templates', 'orchestration', 'active_intents.yaml'), path.join(target, 'active_intents.yaml')],
    [path.join(extensionPath, 'templates', 'orchestration', 'hooks.yaml'), path.join(target, 'hooks.yaml')],
    ...['active_intents', 'hooks', 'agent_trace'].map((s): [string, string] => [
      path.join(extensionPath, '.orchestration', 'schema', `${s}.schema.json`),
      path.join(target, 'schema', `${s}.schema.json`),
    ]),
  ];
  const written: string[] = [];
  try {
    fs.mkdirSync(path.join(target, 'schema'), { recursive: true });
    for (const [from, to] of files) {
      if (fs.existsSync(to)) continue;
      fs.copyFileSync(from, to, fs.constants.COPYFILE_EXCL);
      written.push(path.relative(folder.uri.fsPath, to));
    }
  } catch (e) {
    log.error(`Govern This Folder: ${(e as Error).message}`);
    void vscode.window.showErrorMessage(`Chokepoint could not write .orchestration/: ${(e as Error).message}`);
    return false;
  }
  log.info(written.length ? `Govern This Folder wrote ${written.join(', ')}` : 'Govern This Folder: .orchestration/ was already there; nothing written');
  engine.reload();
  // Beside a page being read (the walkthrough, which ran this), not over it.
  const reading = vscode.window.activeTextEditor === undefined && vscode.window.tabGroups.activeTabGroup.activeTab !== undefined;
  await vscode.window.showTextDocument(vscode.Uri.file(path.join(target, 'active_intents.yaml')), {
    preview: false,
    viewColumn: reading ? vscode.ViewColumn.Beside : undefined,
  });
  void vscode.window.showInformationMessage(
    written.length
      ? 'Chokepoint governs this folder: set the starter intent\u2019s owned_scope to the paths agents may change, then connect an agent.'
      : 'This folder already has .orchestration/: nothing was replaced.',
  );
  return true;
}
