// Owns the native engine of the open workspace: opens it, reloads it when its configuration changes,
// and publishes its state (to the status bar, the sidebar and the Problems panel).
//
// The engine watches its own configuration (`Engine.watch`); the host republishes state to listeners and diagnostics to the
// Problems panel. While the window is open it serves that engine to other agents' hooks (`Engine.serve`, setting
// `chokepoint.serveHooks`; a second window on the workspace logs that another engine serves). It reports through an `EngineLog`
// (what it calls of the output channel), not the UI's `Log`.
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import type { EngineState } from '../../../protocol/messages';
import type { Coordination, EngineInfo, NativeEngine, NativeLoad } from './native';

/** How often the coordination state (a team's database answering or not) is looked at again: the
 *  gatekeeper updates it on every operation, and the status bar should not lag far behind. */
const COORDINATION_POLL_MS = 5000;

/** What the host reports to: the output channel (host/log.ts) in the extension. Declared here, by what
 *  the host calls, so that the engine's room imports nothing from the UI's. */
export interface EngineLog {
  info(message: string): void;
  warn(message: string): void;
}

export class EngineHost implements vscode.Disposable {
  private engine: NativeEngine | undefined;
  private current: EngineState;
  private readonly changed = new vscode.EventEmitter<EngineState>();
  readonly onDidChange = this.changed.event;
  private readonly problems = vscode.languages.createDiagnosticCollection('chokepoint');
  private readonly disposables: vscode.Disposable[] = [this.changed, this.problems];

  constructor(
    readonly native: NativeLoad,
    private readonly log: EngineLog,
    /** The `chokepoint` program: an HTTP hook's shell commands run contained through it, and it
     *  isolates our own agent's commands (`runContained`'s `program`). */
    readonly program?: string,
  ) {
    this.current = this.open();
    this.publish();
  }

  get state(): EngineState {
    return this.current;
  }

  /** The root folder the engine governs: the first one with `.orchestration/`, else the first one. */
  static pickRoot(folders: readonly vscode.WorkspaceFolder[] | undefined): string | undefined {
    const roots = (folders ?? []).filter((f) => f.uri.scheme === 'file').map((f) => f.uri.fsPath);
    return roots.find((r) => fs.existsSync(path.join(r, '.orchestration'))) ?? roots[0];
  }

  private open(): EngineState {
    if (!this.native.ok) return { status: 'failed', error: this.native.error, lookedFor: this.native.lookedFor };
    const root = EngineHost.pickRoot(vscode.workspace.workspaceFolders);
    if (!root) return { status: 'noWorkspace' };
    try {
      this.engine = this.native.binding.Engine.open(root);
    } catch (e) {
      return { status: 'failed', error: (e as Error).message, lookedFor: root };
    }
    const engine = this.engine;
    this.disposables.push({ dispose: () => engine.close() });
    // The engine watches its own configuration (debounced, last good kept); we only republish.
    try {
      const watch = this.engine.watch((problems) => {
        this.log.info(`configuration changed on disk: ${problems === 0 ? 'no problems' : `${problems} problem(s), last good configuration kept`}`);
        this.refresh();
      });
      this.disposables.push({ dispose: () => watch.close() });
    } catch (e) {
      this.log.warn(`configuration changes will not be picked up automatically: ${(e as Error).message}`);
    }
    this.serveHooks(engine);
    const info = this.engine.info();
    this.log.info(`engine ${info.version} opened on ${root} (${this.native.file})`);
    // A team's database that stops (or starts) answering changes no file: look again now and then.
    const poll = setInterval(() => {
      if (this.current.status !== 'ready') return;
      const now = engine.coordination();
      if (JSON.stringify(now) !== JSON.stringify(this.current.coordination)) this.refresh();
    }, COORDINATION_POLL_MS);
    this.disposables.push({ dispose: () => clearInterval(poll) });
    return toState(info, engine.coordination());
  }

  /** Other agents' hooks on this workspace are answered by this engine while the window is open
   *  (`chokepoint.serveHooks`); without it each hook judges alone, which is as safe and slower. */
  private serveHooks(engine: NativeEngine): void {
    if (!vscode.workspace.getConfiguration('chokepoint').get<boolean>('serveHooks', true)) return;
    try {
      const server = engine.serve(this.program);
      this.disposables.push({ dispose: () => server.close() });
      this.log.info(`answering other agents' hooks at ${server.socket}, and HTTP hooks at ${server.httpUrl}/hook/claude (token in .orchestration/serve.json)`);
    } catch (e) {
      this.log.warn(`other agents' hooks judge alone: ${(e as Error).message}`);
    }
  }

  /** Re-reads the configuration now; returns the new state (unchanged when no engine is loaded). */
  reload(): EngineState {
    if (!this.engine) return this.current;
    const count = this.engine.reload();
    this.log.info(`configuration reloaded: ${count === 0 ? 'no problems' : `${count} problem(s), last good configuration kept`}`);
    return this.refresh();
  }

  /** Publishes what the engine runs now, after a reload done here or by the engine's own watcher. */
  private refresh(): EngineState {
    if (!this.engine) return this.current;
    this.current = toState(this.engine.info(), this.engine.coordination());
    this.publish();
    return this.current;
  }

  /** The loaded engine, for the chokepoint call site. Undefined when it could not load. */
  get nativeEngine(): NativeEngine | undefined {
    return this.engine;
  }

  private publish(): void {
    this.problems.clear();
    if (this.current.status === 'ready') {
      const byFile = new Map<string, vscode.Diagnostic[]>();
      for (const d of this.current.diagnostics) {
        this.log.warn(`${d.file}:${d.line}:${d.column}: ${d.message} [${d.code}]`);
        const at = new vscode.Position(Math.max(d.line - 1, 0), Math.max(d.column - 1, 0));
        const diagnostic = new vscode.Diagnostic(new vscode.Range(at, at.translate(0, 1)), d.message, vscode.DiagnosticSeverity.Error);
        diagnostic.source = 'chokepoint';
        diagnostic.code = d.code;
        byFile.set(d.file, [...(byFile.get(d.file) ?? []), diagnostic]);
      }
      for (const [file, list] of byFile) this.problems.set(vscode.Uri.file(file), list);
    }
    this.changed.fire(this.current);
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}

export function toState(info: EngineInfo, coordination?: Coordination): EngineState {
  return {
    status: 'ready',
    version: info.version,
    workspaceRoot: info.workspaceRoot,
    hooks: { path: info.hooks.path, status: info.hooks.status, hookCount: info.hookCount, events: info.events, taskTypes: info.taskTypes },
    intents: { path: info.intents.path, status: info.intents.status, ids: info.intentIds },
    diagnostics: info.diagnostics.map((d) => ({ ...d })),
    coordination: coordination && { ...coordination },
  };
}

/** One line that says what the engine runs, for notifications and the status bar tooltip. */
export function describe(state: EngineState): string {
  switch (state.status) {
    case 'failed':
      return `Chokepoint engine failed to load: ${state.error}`;
    case 'noWorkspace':
      return 'Chokepoint: no workspace folder is open';
    case 'ready': {
      const hooks = `hooks.yaml ${state.hooks.status} (${state.hooks.hookCount} hooks)`;
      const intents = `active_intents.yaml ${state.intents.status} (${state.intents.ids.length} intents)`;
      const problems = state.diagnostics.length ? `, ${state.diagnostics.length} configuration problem(s)` : '';
      return `Chokepoint engine ${state.version}: ${hooks}, ${intents}${problems}`;
    }
  }
}
