// The trace ledger as the extension reads it: the recent records the sidebar lists, the provenance of
// a line for the command, and a debounced watch of the ledger's chains (`.orchestration/trace/*.jsonl`,
// and the legacy `agent_trace.jsonl`) that says when either may have changed. The records are written by the engine (this process's and every other
// process's on the workspace); this module only reads them back through the binding. With a team's
// database (issue 29) it also reads every machine's records from there, and how the copy of this
// worktree's records to it fares. The provenance command is `chokepoint.showProvenance`, in the editor context menu while the
// `chokepoint.governed` context key is set; the watcher also fires when git changes the chains. Reads only; the engine writes the
// ledger.
import * as path from 'path';
import * as vscode from 'vscode';
import type { Entry } from './traceModel';
import type { EngineHost } from '../engine/engineHost';
import type { Log } from '../host/log';
import type { NativeBinding } from '../engine/native';

export type BlameResult = ReturnType<InstanceType<NativeBinding['Engine']>['traceBlame']>;

/**
 * The ledger's files, relative to the workspace root (sidecar.rs and ledger/chains.rs name them in the
 * core): a file per chain in `trace/`, created as a worktree begins one (or as git brings one in), and
 * the legacy single file, read but never appended.
 */
export const LEDGER = '.orchestration/{trace/*.jsonl,agent_trace.jsonl}';

/** Several records land at once (a write and its PostToolUse); one refresh covers them. */
const DEBOUNCE_MS = 250;

export type TraceOutcome = { ok: true; entries: Entry[] } | { ok: false; error: string };

/** The team's database as the Trace view shows it: this machine's name there, and why this
 *  worktree's records are not all copied there yet (it could not be reached); they are kept and
 *  copied when it returns. */
export interface TeamTraceState {
  machine: string;
  copyError?: string;
}

/** What `chokepoint.showProvenance` found for one line, and the sentence it showed. */
export interface ProvenanceReport {
  /** Workspace-relative, `/`-separated; absent when the document is not a file of the workspace. */
  readonly path?: string;
  /** 1-based. */
  readonly line: number;
  readonly text?: string;
  readonly origin?: BlameResult['origin'];
  /** Why there is no answer (not a file of the governed workspace, no engine, a line past the end). */
  readonly error?: string;
  readonly message: string;
}

/** What the index narrows the records to (the Trace view's intent, session and file filters). */
export interface TraceQuery {
  intent?: string;
  session?: string;
  file?: string;
}

export class Trace implements vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  /** Fires (debounced) when a ledger file is created, appended to or removed, by any process or by git. */
  readonly onDidChange = this.changed.event;
  private watcher: vscode.FileSystemWatcher | undefined;
  private watchedRoot: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly disposables: vscode.Disposable[] = [this.changed];

  constructor(
    private readonly engine: EngineHost,
    private readonly log: Log,
  ) {
    this.watch();
    this.disposables.push(engine.onDidChange(() => this.watch()));
  }

  /** The workspace root the engine governs, when it runs on one. */
  get root(): string | undefined {
    const state = this.engine.state;
    return state.status === 'ready' ? state.workspaceRoot : undefined;
  }

  private watch(): void {
    const root = this.root;
    if (root === this.watchedRoot) return;
    this.watcher?.dispose();
    this.watcher = undefined;
    this.watchedRoot = root;
    if (!root) return;
    const watcher = vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(vscode.Uri.file(root), LEDGER));
    const fire = () => {
      if (this.timer) clearTimeout(this.timer);
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.changed.fire();
      }, DEBOUNCE_MS);
    };
    watcher.onDidCreate(fire);
    watcher.onDidChange(fire);
    watcher.onDidDelete(fire);
    this.watcher = watcher;
  }

  /** The newest `limit` records that match `query`. */
  recent(query: TraceQuery, limit: number): TraceOutcome {
    const engine = this.engine.nativeEngine;
    if (!engine) return { ok: false, error: 'the engine is not running' };
    try {
      return { ok: true, entries: engine.traceRecent({ ...query, limit }) };
    } catch (e) {
      const error = (e as Error).message;
      this.log.warn(`reading the trace failed: ${error}`);
      return { ok: false, error };
    }
  }

  /** How many records match `query`; undefined when that cannot be read (the list says why). */
  count(query: TraceQuery): number | undefined {
    try {
      return this.engine.nativeEngine?.traceCount(query);
    } catch {
      return undefined;
    }
  }

  /**
   * The team's database as the Trace section shows it: null when the engine has none (or is not
   * running). The copy error is the background copier's last one: local records are kept and copied
   * when the database returns.
   */
  teamState(): TeamTraceState | null {
    const status = this.engine.nativeEngine?.teamCopyStatus();
    if (!status) return null;
    return { machine: status.machine, copyError: status.lastError };
  }

  /**
   * The newest `limit` records of every machine and worktree in the team's database, of `intent`
   * only when given, newest first as `recent` lists them, each with where it was written; and why
   * some of this worktree's own records could not be copied there first, when they could not.
   * Synchronous like `recent`: the binding copies, then queries, on this thread, within the core's
   * connect and statement timeouts (3 s and 5 s) when the database does not answer.
   */
  team(intent: string | undefined, limit: number): { outcome: TraceOutcome; copyError?: string } {
    const engine = this.engine.nativeEngine;
    if (!engine) return { outcome: { ok: false, error: 'the engine is not running' } };
    try {
      const trace = engine.traceTeam({ intent, limit });
      // The binding lists them oldest first (as `trace show --team` prints them); the Trace view's
      // list is newest first in both scopes.
      const entries = trace.entries
        .map((e): Entry => ({ ...e.record, from: { machine: e.machine, worktree: e.worktree, branch: e.branch, chain: e.chain } }))
        .reverse();
      return { outcome: { ok: true, entries }, copyError: trace.copyError };
    } catch (e) {
      const error = (e as Error).message;
      this.log.warn(`reading the team's trace failed: ${error}`);
      return { outcome: { ok: false, error }, copyError: error };
    }
  }

  /** Which recorded write explains line `line` (1-based) of `uri` as it is on disk. */
  provenance(uri: vscode.Uri, line: number): ProvenanceReport {
    const root = this.root;
    const engine = this.engine.nativeEngine;
    const fail = (error: string, at?: string): ProvenanceReport => ({ path: at, line, error, message: `Chokepoint cannot explain this line: ${error}` });
    if (!root || !engine) return fail('no governed workspace is open');
    const rel = uri.scheme === 'file' ? relativeTo(root, uri.fsPath) : undefined;
    if (!rel) return fail(`${uri.scheme === 'file' ? uri.fsPath : uri.toString()} is not a file of the governed workspace ${root}`);
    let blame: BlameResult;
    try {
      blame = engine.traceBlame(rel, line);
    } catch (e) {
      return fail((e as Error).message, rel);
    }
    const where = `Line ${line} of ${rel}`;
    const o = blame.origin;
    if (!o) {
      return {
        path: rel,
        line,
        text: blame.text,
        message: `${where}: no record explains it (typed by hand, written outside the chokepoint, or edited since its write).`,
      };
    }
    const who = [
      o.intent ? `intent ${o.intent}` : 'no intent',
      o.session && `session ${o.session}`,
      o.agent && `agent ${o.agent}`,
      o.model && `model ${o.model}`,
      o.tool && `tool ${o.tool}`,
    ].filter(Boolean);
    return { path: rel, line, text: blame.text, origin: o, message: `${where} was last written under ${who.join(', ')} (record #${o.seq}, ${o.time}).` };
  }

  dispose(): void {
    if (this.timer) clearTimeout(this.timer);
    this.watcher?.dispose();
    for (const d of this.disposables) d.dispose();
  }
}

/**
 * `chokepoint.showProvenance`: the provenance of the cursor's line in the active editor (or of `line`
 * of `uri`, for scripts and tests), shown as a notification; "Show in Trace" filters the sidebar by
 * the intent. Returns what it found without waiting for the notification to be dismissed.
 */
export function showProvenance(trace: Trace, showInTrace: (intent: string) => void, uri?: vscode.Uri, line?: number): ProvenanceReport | undefined {
  const editor = vscode.window.activeTextEditor;
  const target = uri ?? editor?.document.uri;
  if (!target) {
    void vscode.window.showWarningMessage('Chokepoint: open a file of the governed workspace to see who wrote a line.');
    return undefined;
  }
  // From the editor's context menu the command receives the document's URI: the line is the cursor's.
  const sameDocument = editor && editor.document.uri.toString() === target.toString();
  const at = line ?? (sameDocument ? editor.selection.active.line + 1 : 1);
  const report = trace.provenance(target, at);
  if (report.error) {
    void vscode.window.showWarningMessage(report.message);
    return report;
  }
  const dirty = vscode.workspace.textDocuments.find((d) => d.uri.toString() === target.toString())?.isDirty;
  const message = dirty ? `${report.message} (This is the file as saved: the editor has unsaved changes.)` : report.message;
  const intent = report.origin?.intent;
  const actions = intent ? ['Show in Trace'] : [];
  void vscode.window.showInformationMessage(message, ...actions).then((pick) => {
    if (pick && intent) showInTrace(intent);
  });
  return { ...report, message };
}

/** `file` relative to `root`, `/`-separated, or undefined when it is not inside it. */
export function relativeTo(root: string, file: string): string | undefined {
  const rel = path.relative(root, file);
  if (!rel || rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) return undefined;
  return rel.split(path.sep).join('/');
}
