// The Trace view: a native tree under the Chokepoint activity-bar container that answers "what did
// the agents do". One node per session (agent, short id, intents, counts; the full id on hover),
// newest first; under it, its actions (a call's before and after records as one, approvals,
// contained commands) with their outcome as icon and word, and its lifecycle events folded into one
// node. Above them, how many records are listed of how many, and the filters in effect; below, a
// node that lists more. A click opens the action's records whole (`chokepoint-record:` documents).
// An action that wrote files has them as children: a click on one (or its "Open Changes") opens VS
// Code's diff editor on its text before and after the write (`traceImages.ts`).
//
// Filters: intent, session and file are the binding's (the ledger's index answers them); outcome and
// agent narrow the listed page here. Scope: this worktree's ledger, or every machine's records in
// the team's database while the engine has one (read again every 5 s while the view is visible:
// other machines' records arrive without a local event; 30 s after a failure). The team scope (`chokepoint.trace.showTeam`) is
// offered while `teamCopyStatus()` is not null, and its nodes say `machine · worktree`. "Show N more" raises the page
// (`chokepoint.trace.limit`); "Show in Trace" sets the intent filter.
//
// A record's document holds the outcome, reason, files and lines, each record's JSON (`traceRecord`) and its place in the ledger,
// and for each file whether its diff is kept. The diff (`chokepoint.trace.openDiff`, also inline and in the file's context menu)
// is `vscode.diff` between read-only `chokepoint-image:` documents, titled `path (before ↔ after, #seq)`. A contained command's
// record names its files without hashes, so they offer no diff (its before-images are in the snapshot store,
// `containment::snapshot`, not handed to the image store yet). Pinned by tests/ui/sidebar.test.js (the diff editor's two sides)
// and tests/unit/traceModel.test.ts (`writtenFiles`).
import * as vscode from 'vscode';
import type { EngineHost } from '../engine/engineHost';
import type { Trace, TraceQuery } from './trace';
import { TraceImages, missingImage } from './traceImages';
import {
  type Action,
  type Entry,
  type SessionGroup,
  type ViewFilter,
  type WrittenFile,
  applyFilter,
  containedCommandLines,
  countLine,
  groupBySession,
  shortSession,
  writtenFiles,
} from './traceModel';

export const TRACE_VIEW_ID = 'chokepoint.trace';
/** The scheme of the read-only documents that show an action's records. */
export const RECORD_SCHEME = 'chokepoint-record';

const TEAM_REFRESH_MS = 5_000;
const TEAM_RETRY_MS = 30_000;

type Node =
  | { type: 'info'; label: string; detail?: string; icon: string; color?: string }
  | { type: 'session'; group: SessionGroup; index: number }
  | { type: 'action'; action: Action; group: SessionGroup }
  | { type: 'lifecycle'; group: SessionGroup }
  | { type: 'record'; entry: Entry }
  | { type: 'file'; file: WrittenFile }
  | { type: 'more'; shown: number; total: number };

const OUTCOME_ICON: Record<Action['outcome'], [string, string]> = {
  denied: ['error', 'errorForeground'],
  asked: ['question', 'editorWarning.foreground'],
  allowed: ['pass', 'testing.iconPassed'],
  approved: ['pass-filled', 'testing.iconPassed'],
  rejected: ['circle-slash', 'errorForeground'],
  recorded: ['circle-outline', 'descriptionForeground'],
};

export class TraceView implements vscode.TreeDataProvider<Node>, vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly docChanged = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.docChanged.event;
  private readonly view: vscode.TreeView<Node>;
  private readonly disposables: vscode.Disposable[] = [this.changed, this.docChanged];
  private query: TraceQuery = {};
  private filter: ViewFilter = {};
  private scope: 'worktree' | 'team' = 'worktree';
  /** How many records are listed: the `chokepoint.trace.limit` setting, raised by "show more". */
  private extra = 0;
  private refreshTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly opened = new Map<string, string>();
  private readonly images: TraceImages;

  constructor(
    private readonly trace: Trace,
    private readonly engine: EngineHost,
  ) {
    this.view = vscode.window.createTreeView(TRACE_VIEW_ID, { treeDataProvider: this, showCollapseAll: true });
    this.images = new TraceImages(engine);
    this.disposables.push(
      this.view,
      this.images,
      vscode.workspace.registerTextDocumentContentProvider(RECORD_SCHEME, this),
      trace.onDidChange(() => this.refresh()),
      engine.onDidChange(() => this.refresh()),
      this.view.onDidChangeVisibility(() => (this.view.visible ? this.refresh() : clearTimeout(this.refreshTimer))),
      vscode.workspace.onDidChangeConfiguration((e) => e.affectsConfiguration('chokepoint.trace.limit') && this.refresh()),
      vscode.commands.registerCommand('chokepoint.trace.filterOutcome', (outcome?: ViewFilter['outcome'] | 'all') => this.pickOutcome(outcome)),
      vscode.commands.registerCommand('chokepoint.trace.filterIntent', (intent?: string) => this.pickIntent(intent)),
      vscode.commands.registerCommand('chokepoint.trace.filterAgent', (agent?: string) => this.pickAgent(agent)),
      vscode.commands.registerCommand('chokepoint.trace.filterFile', (file?: string) => this.pickFile(file)),
      vscode.commands.registerCommand('chokepoint.trace.filterSession', (node?: Node) => {
        if (node?.type === 'session' && node.group.session) this.setQuery({ ...this.query, session: node.group.session });
      }),
      vscode.commands.registerCommand('chokepoint.trace.clearFilters', () => {
        this.filter = {};
        this.setQuery({});
      }),
      vscode.commands.registerCommand('chokepoint.trace.showMore', () => {
        this.extra += this.pageSize();
        this.refresh();
      }),
      vscode.commands.registerCommand('chokepoint.trace.showTeam', () => this.setScope('team')),
      vscode.commands.registerCommand('chokepoint.trace.showWorktree', () => this.setScope('worktree')),
      vscode.commands.registerCommand('chokepoint.trace.refresh', () => this.refresh()),
      vscode.commands.registerCommand('chokepoint.trace.open', (node?: Node) => this.open(node)),
      vscode.commands.registerCommand('chokepoint.trace.openDiff', (node?: Node) => (node?.type === 'file' ? this.images.openDiff(node.file) : undefined)),
    );
    this.setContext();
  }

  /** "Show in Trace": the records of `intent` (all when null), shown. */
  showIntent(intent: string | null): void {
    this.setQuery({ ...this.query, intent: intent ?? undefined });
    void vscode.commands.executeCommand(`${TRACE_VIEW_ID}.focus`);
  }

  /** "Show in Trace" of the Sessions view: the records of `session` alone (the other filters kept), shown. */
  showSession(session: string): void {
    this.setQuery({ ...this.query, session });
    void vscode.commands.executeCommand(`${TRACE_VIEW_ID}.focus`);
  }

  private pageSize(): number {
    return Math.max(1, Math.floor(vscode.workspace.getConfiguration('chokepoint').get<number>('trace.limit', 50)));
  }

  private setQuery(query: TraceQuery): void {
    this.query = query;
    this.extra = 0;
    this.refresh();
  }

  private setScope(scope: 'worktree' | 'team'): void {
    this.scope = scope;
    this.extra = 0;
    this.refresh();
  }

  private setContext(): void {
    const filtered = !!(this.query.intent || this.query.session || this.query.file || this.filter.outcome || this.filter.agent);
    void vscode.commands.executeCommand('setContext', 'chokepoint.trace.filtered', filtered);
    void vscode.commands.executeCommand('setContext', 'chokepoint.trace.scope', this.scope);
    void vscode.commands.executeCommand('setContext', 'chokepoint.trace.teamAvailable', this.trace.teamState() !== null);
  }

  refresh(): void {
    clearTimeout(this.refreshTimer);
    this.setContext();
    this.changed.fire(undefined);
  }

  // ---- the tree --------------------------------------------------------------------------------

  getChildren(node?: Node): Node[] {
    if (!node) return this.roots();
    switch (node.type) {
      case 'session':
        return [
          ...node.group.actions.map((action): Node => ({ type: 'action', action, group: node.group })),
          ...(node.group.lifecycle.length ? [{ type: 'lifecycle', group: node.group } satisfies Node] : []),
        ];
      case 'lifecycle':
        return node.group.lifecycle.map((entry): Node => ({ type: 'record', entry }));
      case 'action':
        return writtenFiles(node.action).map((file): Node => ({ type: 'file', file }));
      default:
        return [];
    }
  }

  private roots(): Node[] {
    if (this.engine.state.status !== 'ready') return [];
    const limit = this.pageSize() + this.extra;
    const team = this.trace.teamState();
    const scope = team ? this.scope : 'worktree';
    let entries: Entry[];
    let total: number | undefined;
    const notes: Node[] = [];
    if (scope === 'team') {
      const { outcome, copyError } = this.trace.team(this.query.intent, limit);
      if (this.view.visible) this.refreshTimer = setTimeout(() => this.refresh(), outcome.ok ? TEAM_REFRESH_MS : TEAM_RETRY_MS);
      if (copyError)
        notes.push({
          type: 'info',
          label: "This worktree's newest records are kept here and copied when the team's database returns",
          detail: copyError,
          icon: 'warning',
          color: 'editorWarning.foreground',
        });
      if (!outcome.ok)
        return [...notes, { type: 'info', label: "Cannot read the team's trace", detail: outcome.error, icon: 'error', color: 'errorForeground' }];
      entries = outcome.entries;
    } else {
      const outcome = this.trace.recent(this.query, limit);
      if (!outcome.ok) return [{ type: 'info', label: 'Cannot read the trace', detail: outcome.error, icon: 'error', color: 'errorForeground' }];
      entries = outcome.entries;
      total = this.trace.count(this.query);
    }
    const filters = this.describeFilters(scope, team?.machine);
    // Nothing recorded and nothing filtered: the view's welcome content says what to do first.
    if (!entries.length && !filters && scope === 'worktree') return [];
    const groups = applyFilter(groupBySession(entries), this.filter);
    const head: Node = {
      type: 'info',
      label: `${countLine(entries.length, total)}, newest first`,
      detail: filters || undefined,
      icon: filters ? 'filter' : 'list-ordered',
    };
    if (!groups.length) notes.push({ type: 'info', label: `Nothing here${filters ? ` for ${filters}` : ''}`, icon: 'info' });
    const more: Node[] = total !== undefined && total > entries.length ? [{ type: 'more', shown: entries.length, total }] : [];
    return [head, ...notes, ...groups.map((group, index): Node => ({ type: 'session', group, index })), ...more];
  }

  private describeFilters(scope: string, machine?: string): string {
    return [
      scope === 'team' && `every machine's records (this is ${machine})`,
      this.query.intent && `intent ${this.query.intent}`,
      this.query.session && `session ${shortSession(this.query.session)}`,
      this.query.file && `file ${this.query.file}`,
      this.filter.outcome && this.filter.outcome,
      this.filter.agent && `agent ${this.filter.agent}`,
    ]
      .filter(Boolean)
      .join(' · ');
  }

  getTreeItem(node: Node): vscode.TreeItem {
    switch (node.type) {
      case 'info': {
        const item = new vscode.TreeItem(node.label);
        item.description = node.detail;
        item.tooltip = node.detail ? `${node.label}: ${node.detail}` : node.label;
        item.iconPath = new vscode.ThemeIcon(node.icon, node.color ? new vscode.ThemeColor(node.color) : undefined);
        item.contextValue = 'info';
        return item;
      }
      case 'session': {
        const g = node.group;
        const who = g.session ? [g.agent, shortSession(g.session)].filter(Boolean).join(' · ') : 'no session';
        // The three newest sessions open; older ones stay folded.
        const item = new vscode.TreeItem(who, node.index < 3 ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.Collapsed);
        const counts = [
          `${g.counts.actions} action${g.counts.actions === 1 ? '' : 's'}`,
          g.counts.denied && `${g.counts.denied} denied`,
          g.counts.asked && `${g.counts.asked} asked`,
        ];
        item.description = [g.intents.join(', ') || 'no intent', ...counts, g.place].filter(Boolean).join(' · ');
        item.tooltip = new vscode.MarkdownString(
          [
            `**${g.agent ?? 'agent'}**, session \`${g.session ?? '—'}\``,
            g.intents.length ? `intents: ${g.intents.join(', ')}` : 'no intent',
            g.place && `written on ${g.place}`,
            `last record ${g.newest}`,
          ]
            .filter(Boolean)
            .join('\n\n'),
        );
        item.iconPath = new vscode.ThemeIcon('account', g.counts.denied ? new vscode.ThemeColor('errorForeground') : undefined);
        item.contextValue = 'session';
        item.id = `session:${g.place ?? ''}:${g.session ?? ''}`;
        return item;
      }
      case 'action': {
        const a = node.action;
        // Folded: its written files, each opening its diff, are one click away without lengthening the list.
        const item = new vscode.TreeItem(a.label, writtenFiles(a).length ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None);
        const [icon, color] = OUTCOME_ICON[a.outcome];
        item.iconPath = new vscode.ThemeIcon(icon, new vscode.ThemeColor(color));
        item.description = [a.outcome + (a.ran && a.outcome === 'allowed' ? ', ran' : ''), time(a.time), a.reason].filter(Boolean).join(' · ');
        item.tooltip = new vscode.MarkdownString(
          [
            `**${a.label}**: ${a.outcome}`,
            a.reason && `reason: ${a.reason}`,
            a.intent && `intent ${a.intent}`,
            `${a.time}`,
            `records ${a.records.map((r) => `#${r.seq}`).join(', ')} (click to open)`,
          ]
            .filter(Boolean)
            .join('\n\n'),
        );
        item.command = { command: 'chokepoint.trace.open', title: 'Open the record', arguments: [node] };
        item.contextValue = `action.${a.outcome}`;
        item.accessibilityInformation = { label: `${a.label}, ${a.outcome}${a.reason ? `: ${a.reason}` : ''}` };
        return item;
      }
      case 'lifecycle': {
        const n = node.group.lifecycle.length;
        const item = new vscode.TreeItem(`${n} lifecycle event${n === 1 ? '' : 's'}`, vscode.TreeItemCollapsibleState.Collapsed);
        item.description = 'turns, task and session boundaries';
        item.iconPath = new vscode.ThemeIcon('history');
        item.contextValue = 'lifecycle';
        return item;
      }
      case 'record': {
        const e = node.entry;
        const item = new vscode.TreeItem(e.event ?? e.kind);
        item.description = `#${e.seq} · ${time(e.time)}`;
        item.command = { command: 'chokepoint.trace.open', title: 'Open the record', arguments: [node] };
        item.iconPath = new vscode.ThemeIcon('circle-small');
        return item;
      }
      case 'file': {
        const f = node.file;
        const item = new vscode.TreeItem(f.path);
        item.description = [f.before && !f.after ? 'deleted' : f.lines && `lines ${f.lines}`, !f.before && 'no diff kept'].filter(Boolean).join(' · ');
        item.tooltip = f.before
          ? `${f.path}: open its changes (#${f.seq})`
          : `${f.path}: its text before the write was not kept, so its changes cannot be shown`;
        item.iconPath = new vscode.ThemeIcon(f.before ? 'diff' : 'file');
        item.command = { command: 'chokepoint.trace.openDiff', title: 'Open Changes', arguments: [node] };
        item.contextValue = f.before ? 'file.diff' : 'file';
        item.accessibilityInformation = { label: `${f.path}, open changes` };
        return item;
      }
      case 'more': {
        const item = new vscode.TreeItem(`Show ${Math.min(this.pageSize(), node.total - node.shown)} more`);
        item.description = `${node.total - node.shown} older records`;
        item.iconPath = new vscode.ThemeIcon('fold-down');
        item.command = { command: 'chokepoint.trace.showMore', title: 'Show more' };
        return item;
      }
    }
  }

  // ---- filters ---------------------------------------------------------------------------------

  private async pickOutcome(given?: ViewFilter['outcome'] | 'all'): Promise<void> {
    const choice =
      given ??
      (
        await vscode.window.showQuickPick(
          [
            { label: 'All', value: 'all' as const },
            { label: 'Denied', value: 'denied' as const },
            { label: 'Asked', value: 'asked' as const },
            { label: 'Allowed', value: 'allowed' as const },
          ],
          { title: 'Show the actions that were…' },
        )
      )?.value;
    if (!choice) return;
    this.filter = { ...this.filter, outcome: choice === 'all' ? undefined : choice };
    this.refresh();
  }

  private async pickIntent(given?: string): Promise<void> {
    const ids = this.engine.state.status === 'ready' ? this.engine.state.intents.ids : [];
    const choice = given ?? (await vscode.window.showQuickPick(['All intents', ...ids], { title: 'Show the records of intent…' }));
    if (!choice) return;
    this.setQuery({ ...this.query, intent: choice === 'All intents' ? undefined : choice });
  }

  private async pickAgent(given?: string): Promise<void> {
    const outcome = this.trace.recent({}, this.pageSize() + this.extra);
    const agents = outcome.ok ? [...new Set(outcome.entries.map((e) => e.agent).filter((a): a is string => !!a))] : [];
    const choice = given ?? (await vscode.window.showQuickPick(['All agents', ...agents], { title: 'Show the sessions of agent…' }));
    if (!choice) return;
    this.filter = { ...this.filter, agent: choice === 'All agents' ? undefined : choice };
    this.refresh();
  }

  private async pickFile(given?: string): Promise<void> {
    const file =
      given ??
      (await vscode.window.showInputBox({
        title: 'Show the records that wrote…',
        prompt: 'A workspace-relative path or a glob (src/auth/**); empty: every file',
        value: this.query.file ?? '',
      }));
    if (file === undefined) return;
    this.setQuery({ ...this.query, file: file.trim() || undefined });
  }

  // ---- a record opened -------------------------------------------------------------------------

  private async open(node?: Node): Promise<void> {
    const records = node?.type === 'action' ? node.action.records : node?.type === 'record' ? [node.entry] : [];
    const first = records[0];
    if (!first) return;
    const key = `${first.from?.chain ?? first.chain ?? ''}/${first.seq}`;
    this.opened.set(key, this.document(records, node?.type === 'action' ? node.action : undefined));
    const uri = vscode.Uri.from({ scheme: RECORD_SCHEME, path: `/record-${first.seq}.md`, query: key });
    this.docChanged.fire(uri);
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc, { preview: true });
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.opened.get(uri.query) ?? 'This record is no longer open: open it again from the Trace view.';
  }

  /** An action's records as a person reads them: the outcome and reason first, then each record
   *  whole, with where it is in the ledger. */
  private document(records: readonly Entry[], action?: Action): string {
    const native = this.engine.nativeEngine;
    const lines: string[] = [];
    if (action) {
      lines.push(`# ${action.label}: ${action.outcome}`, '');
      if (action.reason) lines.push(`**Reason:** ${action.reason}`, '');
      if (action.intent) lines.push(`**Intent:** ${action.intent}`, '');
      // First, before the records: whether each written file's diff can be opened. The texts are this
      // machine's image store's, never the ledger's.
      const files = writtenFiles(action);
      const elsewhere = action.records.some((r) => r.from);
      for (const f of files) {
        const missing = elsewhere ? 'it was recorded on another machine, whose image store keeps its texts if any' : missingImage(this.engine, f);
        const diff = missing ? `its diff is not kept: ${missing}` : 'its diff is kept: **Open Changes** on the file under this action in the Trace view';
        lines.push(`- ${f.before && !f.after ? 'deleted' : 'wrote'} \`${f.path}\`${f.lines ? `, lines ${f.lines}` : ''}; ${diff}`);
      }
      if (files.length) lines.push('');
    }
    for (const r of records) {
      const chain = r.from?.chain ?? r.chain;
      const place = r.from ? ` on ${r.from.machine} · ${r.from.worktree}` : '';
      lines.push(`## Record #${r.seq}${chain ? ` of chain \`${chain}\`` : ''}${place}`, '');
      lines.push(`${r.event ?? r.kind} · ${r.time} · session \`${r.session ?? '—'}\`${r.agent ? ` · agent ${r.agent}` : ''}`, '');
      for (const f of r.files) {
        lines.push(
          `- ${f.beforeSha256 && !f.sha256 ? 'deleted' : 'wrote'} \`${f.path}\`${f.ranges.length ? `, lines ${f.ranges.map((x) => (x.start === x.end ? `${x.start}` : `${x.start}–${x.end}`)).join(', ')}` : ''}`,
        );
      }
      if (r.files.length) lines.push('');
      let whole: string | undefined;
      let where = '';
      if (native && chain && !r.from) {
        try {
          const found = native.traceRecord(chain, r.seq);
          if (found) {
            whole = found.json;
            where = `In \`.orchestration/trace/${found.chain}.jsonl\` at byte ${found.offset}; its line hashes to \`${found.lineHash.slice(0, 16)}…\` (the next record's \`prev\`).`;
          }
        } catch (e) {
          where = `The record could not be read back: ${(e as Error).message}`;
        }
      }
      if (where) lines.push(where, '');
      if (whole) {
        try {
          lines.push(...containedCommandLines(JSON.parse(whole)));
        } catch {
          // The record as JSON below says what it holds.
        }
      }
      lines.push('```json', whole ?? JSON.stringify(r, null, 2), '```', '');
    }
    return lines.join('\n');
  }

  dispose(): void {
    clearTimeout(this.refreshTimer);
    for (const d of this.disposables) d.dispose();
  }
}

/** `14:03:27` of an RFC 3339 time, in the machine's time zone. */
function time(iso: string): string {
  const t = new Date(iso);
  return Number.isNaN(t.getTime()) ? iso : t.toLocaleTimeString();
}
