// The Sessions view: a native tree under the Chokepoint activity-bar container that answers "who is
// working here, on what". One node per session (every agent's, in this worktree and the repository's
// others), most recently active first: the agent, its short id (the whole one on hover), where it
// works when not here, the intent it holds and the lease's state, its counts; under it, the lease,
// its last denial and its last actions, as the core lists them (sessions.ts). A session with a lease
// has Revoke Lease… (inline and in its menu): a reason asked in an input box, the core's revocation
// confirmed in a modal dialog; every session has Show in Trace, which filters the Trace view by it.
// The pane's header counts the sessions holding an intent. Empty, the view's welcome content
// (package.json `viewsWelcome`) says what lands here and how to connect an agent.
//
// The view is `chokepoint.sessions`, between the webview and the Trace view, shown in a governed folder like it. Nodes show the
// worktree and branch when not this one and the lease's machine in a team; Revoke Lease… is offered on `contextValue`
// `session.<state>` for a lease held or idle, and a notification says what came of it. It reads the sessions on every engine
// change and every change of the trace (the Trace view's debounced ledger watcher), and just after the first held lease expires
// (nothing is recorded then; an idle lease schedules nothing). The count of sessions holding an intent is the view's
// `description`, not its `badge`: VS Code adds up the number badges of a container's views on the activity-bar icon, which
// counts the approvals waiting for a person.
import * as path from 'path';
import * as vscode from 'vscode';
import type { SessionAction, SessionView } from '../../../native/node/index';
import type { EngineHost } from '../engine/engineHost';
import type { Log } from '../host/log';
import { Sessions } from './sessions';
import {
  type Here,
  type LeaseState,
  actionDescription,
  actionLabel,
  countsText,
  holdingCount,
  leaseDetail,
  leaseState,
  leaseText,
  nextLook,
  sessionDescription,
  sessionLabel,
  sessionTooltip,
} from './sessionsModel';
import type { Trace } from './trace';
import type { TraceView } from './traceView';

export const SESSIONS_VIEW_ID = 'chokepoint.sessions';
/** The longest reason a person may give for a revocation (told to the session's agent). */
export const MAX_REVOKE_REASON = 1_000;

type Node =
  | { type: 'error'; error: string }
  | { type: 'session'; session: SessionView; index: number }
  | { type: 'lease'; session: SessionView }
  | { type: 'about'; session: SessionView }
  | { type: 'denial'; action: SessionAction }
  | { type: 'action'; action: SessionAction };

const STATE_ICON: Record<LeaseState, [string, string | undefined]> = {
  held: ['lock', 'testing.iconPassed'],
  idle: ['unlock', 'descriptionForeground'],
  revoked: ['circle-slash', 'errorForeground'],
  none: ['account', undefined],
};

const DECISION_ICON: Record<string, [string, string]> = {
  allow: ['pass', 'testing.iconPassed'],
  approved: ['pass-filled', 'testing.iconPassed'],
  deny: ['error', 'errorForeground'],
  rejected: ['circle-slash', 'errorForeground'],
  revoked: ['circle-slash', 'errorForeground'],
  ask: ['question', 'editorWarning.foreground'],
};

function icon([id, color]: [string, string | undefined]): vscode.ThemeIcon {
  return new vscode.ThemeIcon(id, color ? new vscode.ThemeColor(color) : undefined);
}

export class SessionsView implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly view: vscode.TreeView<Node>;
  private readonly sessions: Sessions;
  private readonly disposables: vscode.Disposable[] = [this.changed];
  /** What the core listed last: read on every change, so the header's count is right while the
   *  pane is collapsed (VS Code asks for the tree only while it shows). */
  private listed: { ok: true; sessions: SessionView[] } | { ok: false; error: string } = { ok: true, sessions: [] };
  /** Reads the sessions again when the first held lease runs out (nothing is recorded then). */
  private leaseExpiry: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly engine: EngineHost,
    trace: Trace,
    private readonly traceView: TraceView,
    log: Log,
  ) {
    this.sessions = new Sessions(engine, log);
    this.view = vscode.window.createTreeView(SESSIONS_VIEW_ID, { treeDataProvider: this, showCollapseAll: true });
    this.disposables.push(
      this.view,
      engine.onDidChange(() => this.refresh()),
      // Whichever process appended (another agent's hook, the CLI), the sessions changed with the trace.
      trace.onDidChange(() => this.refresh()),
      vscode.commands.registerCommand('chokepoint.sessions.revokeLease', (node?: Node) => this.revoke(node)),
      vscode.commands.registerCommand('chokepoint.sessions.showInTrace', (node?: Node) => {
        if (node?.type === 'session') this.traceView.showSession(node.session.sessionId);
      }),
      vscode.commands.registerCommand('chokepoint.sessions.refresh', () => this.refresh()),
    );
    this.refresh();
  }

  /** Reads the sessions again, counts those holding an intent in the pane's header, and redraws. */
  refresh(): void {
    clearTimeout(this.leaseExpiry);
    this.listed = this.engine.state.status === 'ready' ? this.sessions.list() : { ok: true, sessions: [] };
    const sessions = this.listed.ok ? this.listed.sessions : [];
    // The count goes in the pane's header, not in `TreeView.badge`: VS Code adds up the number badges
    // of a container's views on its activity-bar icon, where the Chokepoint icon counts the approvals
    // waiting for a person; a session holding an intent waits for nobody.
    const holding = holdingCount(sessions);
    this.view.description = holding ? `${holding} holding an intent` : undefined;
    const delay = nextLook(sessions, Date.now());
    if (delay !== undefined) this.leaseExpiry = setTimeout(() => this.refresh(), delay);
    this.changed.fire(undefined);
  }

  // ---- the tree --------------------------------------------------------------------------------

  getChildren(node?: Node): Node[] {
    if (!node) {
      // Nothing listed: the view's welcome content says what lands here.
      if (!this.listed.ok) return [{ type: 'error', error: this.listed.error }];
      return this.listed.sessions.map((session, index): Node => ({ type: 'session', session, index }));
    }
    if (node.type !== 'session') return [];
    const s = node.session;
    const about = s.model || s.subagents.length ? [{ type: 'about', session: s } satisfies Node] : [];
    const lease = s.lease || s.revoked ? [{ type: 'lease', session: s } satisfies Node] : [];
    const denial = s.lastDenial ? [{ type: 'denial', action: s.lastDenial } satisfies Node] : [];
    return [...lease, ...denial, ...s.actions.map((action): Node => ({ type: 'action', action })), ...about];
  }

  getTreeItem(node: Node): vscode.TreeItem {
    switch (node.type) {
      case 'error': {
        const item = new vscode.TreeItem('Cannot read the sessions');
        item.description = node.error;
        item.tooltip = `Cannot read the sessions: ${node.error}`;
        item.iconPath = icon(['error', 'errorForeground']);
        return item;
      }
      case 'session': {
        const s = node.session;
        const state = leaseState(s);
        // The most recent session and those holding an intent open; the others stay folded.
        const open = node.index === 0 || state === 'held';
        const item = new vscode.TreeItem(
          sessionLabel(s, this.here()),
          open ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.Collapsed,
        );
        item.id = `session:${s.sessionId}`;
        item.description = sessionDescription(s);
        item.tooltip = new vscode.MarkdownString(sessionTooltip(s));
        item.iconPath = icon(STATE_ICON[state]);
        // The menus follow the lease's state: Revoke Lease… for a lease held or idle.
        item.contextValue = `session.${state}`;
        item.accessibilityInformation = { label: `${s.label} session ${s.sessionId}, ${leaseText(s)}, ${countsText(s)}` };
        return item;
      }
      case 'lease': {
        const { label, detail } = leaseDetail(node.session);
        const item = new vscode.TreeItem(label);
        item.description = detail;
        item.tooltip = detail ? `${label}: ${detail}` : label;
        item.iconPath = icon(STATE_ICON[leaseState(node.session)]);
        item.contextValue = 'lease';
        return item;
      }
      case 'about': {
        const s = node.session;
        const item = new vscode.TreeItem(
          [s.model && `model ${s.model}`, s.subagents.length ? `sub-agents: ${s.subagents.join(', ')}` : undefined].filter(Boolean).join(' · '),
        );
        item.iconPath = new vscode.ThemeIcon('info');
        return item;
      }
      case 'denial': {
        const a = node.action;
        const item = new vscode.TreeItem(`Last denial: ${actionLabel(a)}`);
        item.description = a.reason ?? actionDescription(a);
        item.tooltip = [`Last denial: ${actionLabel(a)}`, actionDescription(a), a.reason].filter(Boolean).join('\n\n');
        item.iconPath = icon(['error', 'errorForeground']);
        item.contextValue = 'denial';
        return item;
      }
      case 'action': {
        const a = node.action;
        const item = new vscode.TreeItem(actionLabel(a));
        item.description = actionDescription(a);
        item.tooltip = [actionLabel(a), actionDescription(a), a.reason].filter(Boolean).join('\n\n');
        item.iconPath = icon(DECISION_ICON[a.decision ?? ''] ?? ['circle-outline', 'descriptionForeground']);
        item.contextValue = 'action';
        return item;
      }
    }
  }

  private here(): Here {
    const state = this.engine.state;
    if (state.status !== 'ready') return {};
    const mode = state.coordination?.mode;
    return { worktree: path.basename(state.workspaceRoot), team: mode === 'team' || mode === 'local-fallback' };
  }

  // ---- a lease revoked -------------------------------------------------------------------------

  /** Asks why (optional, told to the agent), has the person confirm in a modal dialog (sessions.ts),
   *  says what came of it, and reads the sessions again. */
  private async revoke(node?: Node): Promise<void> {
    if (node?.type !== 'session') return;
    const s = node.session;
    const reason = await vscode.window.showInputBox({
      title: `Revoke the lease of ${s.label} session ${s.sessionId}`,
      prompt: 'Why? Optional: the agent is told, with the revocation. Escape: nothing is revoked.',
      placeHolder: 'Reason (optional, told to the agent)',
      validateInput: (text) => (text.trim().length > MAX_REVOKE_REASON ? `at most ${MAX_REVOKE_REASON} characters` : undefined),
    });
    if (reason === undefined) return;
    const outcome = await this.sessions.revoke(s.sessionId, reason.trim() || undefined);
    if (!outcome.ok) void vscode.window.showErrorMessage(`Not revoked: ${outcome.error}`);
    else if (outcome.revoked) void vscode.window.showInformationMessage(outcome.message);
    this.refresh();
  }

  dispose(): void {
    clearTimeout(this.leaseExpiry);
    for (const d of this.disposables) d.dispose();
  }
}
