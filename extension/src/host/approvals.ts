// Approvals in VS Code: owns the broker (approvals/broker.ts) of the open workspace's engine, announces
// a Pending that waits for the human (a notification with an Open action while the sidebar is
// hidden, `chokepoint.approvals.notify`), gives the sidebar the open Pendings with their write
// previews, applies the human's decisions, and keeps the handlers registered through the extension
// API across engines. The sidebar (ui/sidebar.ts) renders; this decides nothing itself. In host/, below
// agent/ and ui/, because both use it: the runtime's asks (through agent/) and the cards (ui/).
//
// A broker is made anew per engine, and the API's handlers are registered again on it. A Pending's view names, for an ask relayed
// from another worktree's hook, the worktree and branch it waits in (`PendingView.from`). The human's decisions are `by: human`.
//
// Decided: an ask is answered on our card, not in the agent's own confirmation. A PreToolUse `ask` answered to VS Code's Chat or
// Claude Code's prompt never comes back to the hook: nobody would know who decided, a reason could not reach the model, nothing
// could be modified, counted down, recorded or shared with a team. The agent's confirmation is the fallback a person may choose
// (`approvals.fallback: agent`, which the card's countdown says), and a notification names the waiting agent when the sidebar is
// hidden.
import * as vscode from 'vscode';
import { z } from 'zod';
import type { PendingView } from '../../../protocol/messages';
import { ApprovalBroker, type ApprovalHandler } from '../approvals/broker';
import { previewOf } from '../approvals/preview';
import type { DecisionEffect, PendingDict, PendingKind } from '../approvals/types';
import type { EngineHost } from '../engine/engineHost';
import type { Log } from './log';
import { refusal, type Ask, type Settlement, type ModelProvider } from '../runtime/types';

export class ApprovalsHost implements vscode.Disposable {
  private broker: ApprovalBroker | undefined;
  private brokerEngine: unknown;
  private readonly changed = new vscode.EventEmitter<void>();
  /** Fires when a Pending opens, is edited or is decided. */
  readonly onDidChange = this.changed.event;
  /** The API's handlers, registered again on a new engine. */
  private readonly handlers = new Map<string, { kind: PendingKind | '*'; handler: ApprovalHandler; registration?: { dispose(): void } }>();
  /** Other agents' Pendings already announced. */
  private readonly announced = new Set<string>();
  /** Whether the human sees the Approvals section now (the sidebar answers). */
  isVisible: () => boolean = () => false;

  constructor(
    private readonly engine: EngineHost,
    private readonly log: Log,
    private readonly providerFor: (modelId: string) => Promise<ModelProvider>,
  ) {}

  /** The engine loaded, so it keeps Pendings. */
  get available(): boolean {
    return this.current() !== undefined;
  }

  private current(): ApprovalBroker | undefined {
    const engine = this.engine.nativeEngine;
    if (!engine) return undefined;
    if (this.brokerEngine !== engine) {
      this.brokerEngine = engine;
      this.broker = new ApprovalBroker({ engine, log: this.log, human: { arrived: (p) => this.arrived(p) }, providerFor: this.providerFor });
      this.broker.onChange((p) => {
        this.changed.fire();
        this.announceAgentAsk(p);
      });
      for (const [name, h] of this.handlers) h.registration = this.broker.registerHandler(h.kind, name, h.handler);
    }
    return this.broker;
  }

  /** The runtime's ask, through a Pending. Without Pendings nothing may be approved: the ask is refused. */
  ask(request: Ask): Promise<Settlement> {
    const broker = this.current();
    if (!broker) return Promise.resolve(refusal('approvals are not available: the engine did not load'));
    return broker.ask(request);
  }

  list(): PendingDict[] {
    try {
      return this.current()?.list() ?? [];
    } catch (e) {
      this.log.error(`the open approvals could not be listed: ${(e as Error).message}`);
      return [];
    }
  }

  /** The open Pendings as the sidebar shows them. */
  views(): PendingView[] {
    const root = this.engine.state.status === 'ready' ? this.engine.state.workspaceRoot : undefined;
    const binding = this.engine.native.ok ? this.engine.native.binding : undefined;
    return this.list().map((p) => ({
      id: p.id,
      kind: p.kind,
      createdAt: p.created_at,
      triggeredBy: p.triggered_by,
      // Another agent's call (its hook judged by the live engine): which agent, which session, the
      // intent it holds (the core's `asker`; an older peer's Pending names its agent in the subject).
      agent: agentOf(p, binding),
      sessionId: p.asker?.session ?? p.session_id,
      intent: p.asker?.intent ?? null,
      deadlineMs: p.deadline_ms,
      onTimeout: p.on_timeout,
      // An ask relayed from another worktree's hook (the core's `serve::relay`), or another machine's
      // shown through the team's database (`approvals::team`): where it waits.
      from:
        typeof p.subject?.worktree === 'string'
          ? `${typeof p.subject.machine === 'string' ? `machine ${p.subject.machine}, ` : ''}worktree ${p.subject.worktree}${typeof p.subject.branch === 'string' ? ` on branch ${p.subject.branch}` : ''}`
          : null,
      route: p.route,
      subject: p.subject ?? {},
      actions: p.actions,
      preview: root ? previewOf(root, p, (id) => this.engine.nativeEngine?.previewPending(id) ?? null) : null,
    }));
  }

  /** A decision of the human (the sidebar, the API). A refusal is returned, not thrown. */
  decide(
    id: string,
    decision: { action: string } & Record<string, unknown>,
    by = 'human',
  ): { ok: true; effect: DecisionEffect } | { ok: false; error: string } {
    const broker = this.current();
    if (!broker) return { ok: false, error: 'approvals are not available' };
    try {
      return { ok: true, effect: broker.decide(id, decision, by).effect };
    } catch (e) {
      return { ok: false, error: (e as Error).message };
    }
  }

  registerHandler(kind: PendingKind | '*', name: string, handler: ApprovalHandler): vscode.Disposable {
    for (const [n, h] of this.handlers) {
      if (h.kind === kind) {
        h.registration?.dispose();
        this.handlers.delete(n);
      }
    }
    const entry: { kind: PendingKind | '*'; handler: ApprovalHandler; registration?: { dispose(): void } } = { kind, handler };
    this.handlers.set(name, entry);
    entry.registration = this.current()?.registerHandler(kind, name, handler);
    return new vscode.Disposable(() => {
      if (this.handlers.get(name) !== entry) return;
      this.handlers.delete(name);
      entry.registration?.dispose();
    });
  }

  /** Rejects what a stopped task still waits for. */
  cancelSession(sessionId: string, reason: string): void {
    try {
      this.current()?.cancelSession(sessionId, reason);
    } catch (e) {
      this.log.warn(`the approvals of the stopped task could not be withdrawn: ${(e as Error).message}`);
    }
  }

  /** Another agent's ask for a person (a hook the live engine serves): announced once, as our runtime's
   *  asks are by the broker. A person working in VS Code's Chat, with the sidebar hidden, learns of it. */
  private announceAgentAsk(p: PendingDict): void {
    if (p.status !== 'open' || p.route !== 'human' || !p.asker || this.announced.has(p.id)) return;
    this.announced.add(p.id);
    // Ids only grow: the oldest go first, long after their Pendings lapsed.
    if (this.announced.size > 1000) this.announced.delete(this.announced.values().next().value as string);
    this.arrived(p);
  }

  private arrived(p: PendingDict): void {
    this.log.info(`approval ${p.id} (${p.kind}, asked by ${p.triggered_by}) waits for the human: ${describeShort(p)}`);
    if (this.isVisible() || !vscode.workspace.getConfiguration('chokepoint.approvals').get<boolean>('notify', true)) return;
    // Who waits and for how long: a person in the Chat view reads it there, without the sidebar.
    const binding = this.engine.native.ok ? this.engine.native.binding : undefined;
    const who = agentOf(p, binding) ?? 'the agent';
    const left = p.deadline_ms === null ? '' : ` (within ${Math.max(0, Math.round((p.deadline_ms - Date.now()) / 60000))} min)`;
    void vscode.window.showInformationMessage(`Chokepoint: ${who} waits for your approval${left}: ${describeShort(p)}`, 'Open').then((pick) => {
      if (pick === 'Open') void vscode.commands.executeCommand('chokepoint.sidebar.focus');
    });
  }

  dispose(): void {
    this.changed.dispose();
  }
}

/** What of a tool call's input its one line names: the path it writes, else the command it runs. */
const ShortInput = z.object({ path: z.string().optional().catch(undefined), command: z.string().optional().catch(undefined) });

/** One line about a Pending: what the agent wants. */
export function describeShort(p: PendingDict): string {
  const s = p.subject;
  const list = (v: unknown) => (Array.isArray(v) ? v.map(String).join(', ') : '');
  switch (p.kind) {
    case 'tool_call': {
      const input = ShortInput.safeParse(s.input).data;
      return `${String(s.tool)}${input?.path ? ` ${input.path}` : input?.command ? ` \`${input.command}\`` : ''}`;
    }
    case 'scope_expansion':
      return `write ${list(s.paths)} for ${String(s.intent_id)}`;
    case 'plan':
      return `a plan of ${Array.isArray(s.tasks) ? s.tasks.length : 0} task(s)`;
    case 'compaction':
      return 'a compaction of the conversation';
    case 'submit':
      return 'a completion the checks still refuse';
  }
}

/** The agent whose call waits on `p`, for people (`Claude Code`); null for our own runtime's asks. */
function agentOf(p: PendingDict, binding: { agentLabel(agent: string): string } | undefined): string | null {
  const id = p.asker?.agent ?? (typeof p.subject?.agent === 'string' ? p.subject.agent : undefined);
  if (!id) return null;
  return binding ? binding.agentLabel(id) : id;
}
