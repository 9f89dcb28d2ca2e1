// The chokepoint as one runtime session passes it: the chain event built with the session's ids, the
// engine's judgement of it (an engine that cannot answer is a deny, never an allow), and the report
// of a lifecycle event to whoever listens. The task loop (loop.ts) and a tool call's path
// (toolCall.ts) both call down into this one object; neither calls back into the other to be judged.
// Imports no `vscode`.
import type { EventName, Evaluation, Event as ChainEvent, LifecycleSubjects } from '../../../native/node/index';
import { durableMs, hookView, type RuntimeEngine, type RuntimeEvent, type Task } from './types';

/** The listeners of one runtime's events (the sidebar's task panel, VS Code's chat, the tests). */
export class RuntimeEvents {
  private readonly listeners = new Set<(e: RuntimeEvent) => void>();

  on(listener: (e: RuntimeEvent) => void): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  emit(e: RuntimeEvent): void {
    for (const l of this.listeners) l(e);
  }
}

export interface GateOptions {
  sessionId: string;
  /** Recorded with every event (`chokepoint` for this runtime). */
  agentId: string;
  engine: RuntimeEngine;
  /** Skips the engine entirely (benchmark baseline only): every event is allowed unrecorded. */
  bypassEngine: boolean;
  events: RuntimeEvents;
  /** The model recorded with events until the task loop sets another (`model`). */
  model: string;
}

export class Gate {
  /** The model the current task uses (TurnPrepare may switch it); recorded with every event. */
  model: string;

  constructor(private readonly options: GateOptions) {
    this.model = options.model;
  }

  get sessionId(): string {
    return this.options.sessionId;
  }

  /** The chain event `name` of this session, for `task` when there is one. */
  event(name: EventName, task: Task | undefined, extra: Partial<ChainEvent> = {}): ChainEvent {
    return {
      event: name,
      sessionId: this.options.sessionId,
      agentId: this.options.agentId,
      model: this.model,
      taskId: task?.id,
      planId: task?.planId,
      taskType: task?.taskType,
      ...extra,
    };
  }

  async judge(event: ChainEvent): Promise<Evaluation> {
    if (this.options.bypassEngine) return { decision: 'allow' };
    // One entry for every event: the engine judges a chain of native hooks at once, on this thread,
    // and settles the promise when the record is as durable as the event needs (a gate's: synced; a
    // turn's start: queued for the next gate's sync), so which events wait is the core's to say.
    try {
      return await this.options.engine.evaluateAsync(event, { outcomes: 'all' });
    } catch (e) {
      // A broken gate denies, never allows.
      return { decision: 'deny', reason: `the engine could not judge ${event.event}: ${(e as Error).message}` };
    }
  }

  /** Judges the lifecycle event `name` with `subject` as its input, and reports it for `task`. The
   *  subject is the core's for that event (`model::subject`, generated as `LifecycleSubjects`). */
  async lifecycle<E extends keyof LifecycleSubjects>(name: E, task: Task | undefined, subject: LifecycleSubjects[E], turn?: number): Promise<Evaluation> {
    const evaluation = await this.judge(this.event(name, task, { input: subject, turn }));
    if (task) {
      this.options.events.emit({
        type: 'lifecycle',
        taskId: task.id,
        event: name,
        decision: evaluation.decision,
        hooks: (evaluation.outcomes ?? []).map(hookView),
        durableMs: durableMs(evaluation),
      });
    }
    return evaluation;
  }
}
