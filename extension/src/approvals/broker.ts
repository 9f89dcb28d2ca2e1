// The approvals broker: every `ask` of the runtime becomes a Pending in the core (`openAsk`, which
// builds it from the ask), the broker carries out the route the core chose for it, and the core settles
// it (`settlePending`: the decision made durable, an expansion granted, what runs next). Two crossings
// of the binding per ask. The core decides the route (caller, a registered handler, the configured
// default); the broker only carries it out:
//   caller          the caller asked to review it itself: the Pending is handed back to it
//   human           the sidebar's card (from `onPendingChange`); the human channel may notify too
//   reviewer        a configured model answers through the Pending's tools (reviewer.ts), and may
//                   escalate to the human
//   auto-approve    approved (a submit is overridden) in the configuration's name
//   auto-deny       rejected in the configuration's name
//   handler:<name>  a handler registered through the extension API runs, inside the recursion guard
//   guard           opened while a handler of the same session ran: auto-approved
// Whatever the route, a Pending nobody decides is rejected after its timeout (`approvals.timeout_seconds`,
// kept by the core), never left hanging; a handler that returns without deciding leaves a warning in the log.
//
// Invariant: an ask nobody answers is a no. Every route ends in a decision or the timeout, which rejects; a Pending that cannot be
// opened rejects; there is no path on which an ask defaults to yes. A handler runs between `enterApprovalHandler` and
// `exitApprovalHandler`, and one that returns undecided is reported through `noteUnresolved`. A compaction's `retry` is
// regenerated through the runtime and written back with `edit_summary`.
//
// Imports no `vscode` (like runtime/): the extension wires it (host/approvals.ts, agent/agent.ts)
// and the unit tests drive it in Node against the real binding.
import { refusal, type Ask, type Settlement, type ModelProvider } from '../runtime/types';
import { review } from './reviewer';
import type { ApprovalsEngine, DecisionEffect, OpenedPending, PendingContext, PendingDict, PendingKind, PendingRoute } from './types';

/** Where a Pending for the human is announced (the sidebar shows every open one regardless). */
export interface HumanChannel {
  arrived(pending: PendingDict): void;
}

export interface BrokerLog {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** A programmatic handler for a kind (or `*`): decides through the context; returning without a
 *  decision leaves the Pending to its timeout. */
export type ApprovalHandler = (pending: PendingDict, context: PendingContext) => void | Promise<void>;

export interface BrokerOptions {
  engine: ApprovalsEngine;
  human: HumanChannel;
  log: BrokerLog;
  /** The reviewer's model, by the runtime's model id (`scripted:<file>`, `openai:<model>`, ...). */
  providerFor?: (modelId: string) => Promise<ModelProvider>;
}

export interface AskOptions {
  /** Review it yourself (the `caller` route): called with the Pending, which it decides through the
   *  context (at once, or later: the broker waits until the timeout). */
  review?: (pending: PendingDict, context: PendingContext) => void | Promise<void>;
}

export class ApprovalBroker {
  private readonly handlers = new Map<string, { kind: string; handler: ApprovalHandler }>();
  /** The runtime's asks by Pending id, while they wait (a compaction's `retry` regenerates through it). */
  private readonly requests = new Map<string, Ask>();
  private readonly listeners = new Set<(pending: PendingDict) => void>();

  constructor(private readonly options: BrokerOptions) {
    // One subscription per engine; the broker fans it out (the sidebar, the badge, tests).
    if (typeof options.engine.onPendingChange === 'function') {
      options.engine.onPendingChange((p) => {
        for (const l of this.listeners) {
          try {
            l(p);
          } catch (e) {
            options.log.error(`a listener of the approvals failed: ${(e as Error).message}`);
          }
        }
      });
    }
  }

  private get engine(): ApprovalsEngine {
    return this.options.engine;
  }

  /** Every open, edited or decided Pending, as the core reports it. */
  onChange(listener: (pending: PendingDict) => void): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  /** The open Pendings, oldest first. */
  list(): PendingDict[] {
    return this.engine.listPending();
  }

  /** Registers the handler for `kind` (one per kind; `*` is the fallback) under `name`; its route is
   *  `handler:<name>`. Programmatic registrations override hooks.yaml's. */
  registerHandler(kind: PendingKind | '*', name: string, handler: ApprovalHandler): { dispose(): void } {
    if (!/^[\w.-]+$/.test(name)) throw new Error(`a handler name is letters, digits, \`_\`, \`.\` and \`-\`, not \`${name}\``);
    for (const [n, h] of this.handlers) if (h.kind === kind && n !== name) this.handlers.delete(n);
    this.handlers.set(name, { kind, handler });
    this.engine.setApprovalHandler(kind, `handler:${name}`);
    return {
      dispose: () => {
        if (this.handlers.get(name)?.handler !== handler) return;
        this.handlers.delete(name);
        this.engine.setApprovalHandler(kind, null);
      },
    };
  }

  /** Applies a decision from anyone (the sidebar, a handler, the reviewer). A compaction's `retry`
   *  regenerates the summary through the runtime and writes it back (`edit_summary`). */
  decide(id: string, decision: { action: string } & Record<string, unknown>, by: string): { pending: PendingDict; effect: DecisionEffect } {
    const r = this.engine.applyDecision(id, decision, by);
    return { pending: this.afterEffect(id, r.pending, r.effect, decision, by), effect: r.effect };
  }

  /** `execute_tool` for a model's loop, with the same follow-up as `decide`. */
  execute(id: string, name: string, args: Record<string, unknown>, by: string): { pending: PendingDict; effect: DecisionEffect; text: string } {
    const r = this.engine.executePendingTool(id, name, args, by);
    return { pending: this.afterEffect(id, r.pending, r.effect, { action: name, ...args }, by), effect: r.effect, text: r.text };
  }

  private afterEffect(id: string, pending: PendingDict, effect: DecisionEffect, decision: Record<string, unknown>, by: string): PendingDict {
    if (effect !== 'retry_requested') return pending;
    const request = this.requests.get(id);
    const index = Number(decision.index ?? 0);
    if (!request?.regenerate) {
      this.options.log.warn(`pending ${id}: a retry was asked, but nothing can write summary ${index} again`);
      return pending;
    }
    const text = request.regenerate(index, String(decision.guidance ?? ''));
    return this.engine.applyDecision(id, { action: 'edit_summary', index, text }, by).pending;
  }

  /** Rejects what a session still waits for (the task was stopped). */
  cancelSession(sessionId: string, reason: string): void {
    for (const p of this.list()) {
      if (p.session_id !== sessionId) continue;
      try {
        this.engine.applyDecision(p.id, rejection(p.kind, reason), 'stop');
      } catch {
        // decided meanwhile
      }
    }
  }

  /** The runtime's `ask`: its Pending opened by the core, its route carried out, and what follows its
   *  decision (the core's settlement). An ask nobody can answer is a no, never a yes. */
  async ask(request: Ask, options: AskOptions = {}): Promise<Settlement> {
    let opened: OpenedPending;
    try {
      const { regenerate: _regenerate, ...ask } = request;
      opened = this.engine.openAsk({ ...ask, review: options.review !== undefined });
    } catch (e) {
      this.options.log.error(`the approval could not be opened: ${(e as Error).message}`);
      return refusal(`the approval could not be opened: ${(e as Error).message}`);
    }
    const { pending, route } = opened;
    this.requests.set(pending.id, request);
    try {
      const settled = this.engine.settlePending(pending.id);
      if (pending.status === 'open') this.carryOut(route, pending, request, options);
      return await settled;
    } catch (e) {
      // settlePending never rejects by design; a rejection is the binding failing (a panic).
      this.options.log.error(`pending ${pending.id} could not be settled: ${(e as Error).message}`);
      return refusal(`the approval could not be settled: ${(e as Error).message}`);
    } finally {
      this.requests.delete(pending.id);
    }
  }

  /** Starts what the route says; the decision arrives through `settlePending`. Never throws. */
  private carryOut(route: PendingRoute, pending: PendingDict, request: Ask, options: AskOptions): void {
    const context = this.context(pending.id, request, route);
    const safely = (what: string, run: () => void | Promise<void>) => {
      Promise.resolve()
        .then(run)
        .catch((e) => this.options.log.error(`${what} failed on pending ${pending.id}: ${(e as Error).message}`));
    };
    switch (route) {
      case 'caller':
        if (options.review) safely('the caller\u2019s review', () => options.review!(pending, context));
        return;
      case 'human':
        safely('announcing it to the human', () => this.options.human.arrived(pending));
        return;
      case 'reviewer':
        safely('the reviewer', () => this.runReviewer(pending, context));
        return;
      case 'auto-approve':
      case 'guard':
        safely(
          route,
          () =>
            void context.decide(
              approval(pending.kind, route === 'guard' ? 'approved inside a handler (recursion guard)' : 'auto-approved by the approvals configuration'),
            ),
        );
        return;
      case 'auto-deny':
        safely(route, () => void context.decide(rejection(pending.kind, 'denied by the approvals configuration (auto-deny)')));
        return;
      default:
        if (route.startsWith('handler:')) {
          safely(`handler ${route}`, () => this.runHandler(route.slice('handler:'.length), pending, context, request));
          return;
        }
        this.options.log.warn(`pending ${pending.id}: unknown route \`${route}\`; it is rejected after its timeout`);
    }
  }

  private context(id: string, request: Ask | undefined, by: string): PendingContext {
    return {
      request,
      decide: (decision) => this.decide(id, decision, by),
      tools: () => this.engine.pendingTools(id),
      describe: () => this.engine.describePending(id),
      execute: (name, args) => this.execute(id, name, args, by),
    };
  }

  private async runHandler(name: string, pending: PendingDict, context: PendingContext, request: Ask): Promise<void> {
    const registered = this.handlers.get(name);
    if (!registered) {
      this.warnUnresolved(pending.id, `handler:${name}`, `no handler \`${name}\` is registered in this window`);
      return;
    }
    // Work a handler does for the session does not come back to the handlers (the core routes it to `guard`).
    const session = request.sessionId;
    this.engine.enterApprovalHandler(session);
    try {
      await registered.handler(pending, context);
    } finally {
      this.engine.exitApprovalHandler(session);
    }
    if (this.engine.getPending(pending.id)?.status === 'open') this.warnUnresolved(pending.id, `handler:${name}`);
  }

  private warnUnresolved(id: string, handler: string, why?: string): void {
    let warning: string;
    try {
      warning = this.engine.noteUnresolved(id, handler);
    } catch (e) {
      warning = `${handler} left pending ${id} undecided (${(e as Error).message})`;
    }
    this.options.log.warn(why ? `${warning} (${why})` : warning);
  }

  private async runReviewer(pending: PendingDict, context: PendingContext): Promise<void> {
    const config = this.engine.approvalsConfig().reviewer;
    const toHuman = (note: string) => {
      const escalated = this.engine.escalatePending(pending.id, 'human', note);
      this.options.human.arrived(escalated);
    };
    if (!config || !this.options.providerFor) {
      toHuman(config ? 'no model provider is available to the reviewer' : 'no reviewer is configured (approvals.reviewer)');
      return;
    }
    // A reviewer that cannot answer (its model unreachable, a broken response) hands the Pending to
    // the human at once rather than leaving it to time out as a rejection nobody chose.
    let provider: ModelProvider;
    try {
      provider = await this.options.providerFor(config.model);
    } catch (e) {
      toHuman(`the reviewer's model \`${config.model}\` is not available: ${(e as Error).message}`);
      return;
    }
    try {
      const outcome = await review({ provider, pending, context, escalateOn: config.escalateOn });
      if (outcome.escalate !== undefined) toHuman(outcome.escalate);
      else if (!outcome.decided) this.warnUnresolved(pending.id, 'reviewer');
    } catch (e) {
      if (this.engine.getPending(pending.id)?.status === 'open') toHuman(`the reviewer failed: ${(e as Error).message}`);
      else throw e;
    } finally {
      await provider.close?.();
    }
  }
}

/** The approving action of a kind: a submit cannot be approved, only overridden. */
function approval(kind: string, why: string): { action: string } & Record<string, unknown> {
  return kind === 'submit' ? { action: 'override', reason: why } : { action: 'approve', note: why };
}

function rejection(kind: string, reason: string): { action: string } & Record<string, unknown> {
  void kind;
  return { action: 'reject', reason };
}
