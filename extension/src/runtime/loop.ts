// The agent runtime's task loop: session → plan → task → turn, every step through the chokepoint.
//
// Session → plan → task → turn (design note 001): a task fires TaskStart, then turns until the model
// completes, fails or runs out of turns; each turn fires TurnStart, TurnPrepare (the last mutable
// point before inference), inference, then for each tool call its path (toolCall.ts: PreToolUse →
// execute unless denied → PostToolUse) → the result goes back to the model, then TurnEnd.
// TaskComplete fires once per task with its terminal status, PlanComplete when a plan's tasks are all
// terminal, AllTasksComplete when the queue empties (a hook may enqueue more), SessionEnd at the end.
//
// Invariants:
// - Nothing the model asks for runs before the engine allowed it; an engine that cannot answer is a
//   deny (judge below, through RuntimeEngine), never an allow.
// - The prompt is re-assembled from the conversation every turn (prompt.ts); nothing is carried in
//   a provider's state.
// - A refusal is a structured tool result the model can act on, never an exception of the loop.
//
// This file is the task loop. It calls down, never is called back: every event is built, judged and
// reported by the session's Gate (gate.ts); one tool call's path (validate, PreToolUse, an ask,
// execute, PostToolUse) is toolCall.ts, whose outcome carries what the call changes in the task (an
// intent's context, a plan's tasks) as data the loop applies; what the runtime needs of its host
// (RuntimeEngine, the asks, the limits) is types.ts. Imports no `vscode`: the extension wires it
// (agent/agent.ts) and unit tests drive it in Node.
//
// Completion: BeforeSubmit is retried with the hooks' guidance, and after `maxSubmitRetries` rounds a `submit` Pending asks:
// `retry` gives one more round with the guidance, `override` accepts, `reject` ends the task `rejected`. Every event goes through
// `evaluateAsync`: the core says which events wait for a sync. The shared brain (`Engine.brainContext()`) is read every turn.
import { randomUUID } from 'crypto';
import { FileTools } from './fileTools';
import { Gate, RuntimeEvents } from './gate';
import { assemblePrompt, type Compactor } from './prompt';
import { toolError, ToolCalls, type PlanInput, type ToolEffect, type ToolOutcome } from './toolCall';
import { toolDefinitions } from './tools';
import type { TurnMessage } from '../../../native/node/index';
import { ModelError } from './types';
import type { Ask, Settlement, ChatMessage, ModelProvider, RuntimeEngine, RuntimeEvent, RuntimeLimits, Task, TaskSpec, TaskStatus, ToolCall } from './types';

export const DEFAULT_LIMITS: RuntimeLimits = { maxTurns: 25, toolTimeoutMs: 120_000, maxSubmitRetries: 2, maxRecoveryTurns: 1 };

export interface RuntimeOptions {
  root: string;
  engine: RuntimeEngine;
  provider: ModelProvider;
  /** Recorded with every event (`chokepoint` for this runtime). */
  agentId?: string;
  limits?: Partial<RuntimeLimits>;
  /** Opens an ask's Pending and resolves with what follows its decision (the approvals broker). */
  ask: (request: Ask) => Promise<Settlement>;
  compactor?: Compactor;
  /** Skips the engine entirely (benchmark baseline only: `runtime.tool_call.bypass`). */
  bypassEngine?: boolean;
  /** The `chokepoint` program, which runs a shell command isolated (only its own changes inside the
   *  scope are applied); without it, commands run observed (compared, never undone). */
  program?: string;
}

interface Plan {
  id: string;
  title?: string;
  open: Set<string>;
}

export class AgentRuntime {
  readonly sessionId = randomUUID();
  private readonly agentId: string;
  private readonly limits: RuntimeLimits;
  /** Every event of this session is built, judged and reported here (gate.ts). */
  private readonly gate: Gate;
  private readonly events = new RuntimeEvents();
  /** One tool call's path (toolCall.ts). */
  private readonly tools: ToolCalls;
  private readonly queue: Task[] = [];
  private readonly plans = new Map<string, Plan>();
  private sessionStarted = false;
  private sessionEnded = false;
  private running: Promise<void> | undefined;
  private abort: AbortController | undefined;
  /** The `<intent_context>` of the intent this session selected, kept in every prompt. */
  private intentContext: string | undefined;

  constructor(private readonly options: RuntimeOptions) {
    this.agentId = options.agentId ?? 'chokepoint';
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    const bypassEngine = options.bypassEngine ?? false;
    this.gate = new Gate({
      sessionId: this.sessionId,
      agentId: this.agentId,
      engine: options.engine,
      bypassEngine,
      events: this.events,
      model: options.provider.model,
    });
    this.tools = new ToolCalls({
      gate: this.gate,
      events: this.events,
      engine: options.engine,
      bypassEngine,
      files: new FileTools(options.root),
      program: options.program,
      limits: this.limits,
      ask: (request) => options.ask(request),
    });
  }

  onEvent(listener: (e: RuntimeEvent) => void): { dispose(): void } {
    return this.events.on(listener);
  }

  private emit(e: RuntimeEvent): void {
    this.events.emit(e);
  }

  get busy(): boolean {
    return this.running !== undefined;
  }

  /** Queues a task and runs the queue if it is idle; resolves when the queue is empty again. */
  run(spec: TaskSpec): Promise<void> {
    this.queue.push({ ...spec, id: randomUUID() });
    this.running ??= this.drain().finally(() => (this.running = undefined));
    return this.running;
  }

  /** Stops the running task at once: inference is aborted, a running command's process group killed. */
  cancel(): void {
    this.abort?.abort();
    if (!this.options.bypassEngine) this.options.engine.cancelContained(this.sessionId);
  }

  /** Ends the session (SessionEnd); the runtime takes no more tasks. */
  async end(): Promise<void> {
    this.cancel();
    await this.running?.catch(() => {});
    if (this.sessionStarted && !this.sessionEnded) {
      this.sessionEnded = true;
      await this.gate.lifecycle('SessionEnd', undefined, { agent: this.agentId });
    }
  }

  private async drain(): Promise<void> {
    if (!this.sessionStarted) {
      this.sessionStarted = true;
      await this.gate.lifecycle('SessionStart', undefined, { agent: this.agentId, model: this.options.provider.model });
    }
    for (;;) {
      const task = this.queue.shift();
      if (task) {
        await this.runTask(task);
        continue;
      }
      // The queue is empty: a hook may enqueue more work by rewriting the subject's `tasks`.
      const evaluation = await this.gate.lifecycle('AllTasksComplete', undefined, { tasks: [] });
      // Only entries with a prompt count: a rewrite with none ends the run (before, a list of only
      // malformed entries judged the event again, forever if the hook kept answering so).
      const more = evaluation.rewrite?.queue ?? [];
      if (more.length === 0) return;
      for (const t of more) this.queue.push({ prompt: t.prompt, title: t.title ?? undefined, id: randomUUID() });
    }
  }

  // ---- a task ---------------------------------------------------------------------------------

  private async runTask(task: Task): Promise<void> {
    this.abort = new AbortController();
    this.emit({ type: 'taskStarted', taskId: task.id, sessionId: this.sessionId, prompt: task.prompt, model: this.options.provider.model });
    let status: TaskStatus;
    let summary: string | undefined;
    try {
      ({ status, summary } = await this.turns(task));
    } catch (e) {
      status = this.abort.signal.aborted ? 'cancelled' : 'error';
      summary = (e as Error).message;
      if (status === 'error') this.emit({ type: 'error', taskId: task.id, message: summary });
    }
    await this.gate.lifecycle('TaskComplete', task, { status, summary });
    this.emit({ type: 'taskEnded', taskId: task.id, status, summary });
    if (task.planId) {
      const plan = this.plans.get(task.planId);
      plan?.open.delete(task.id);
      if (plan && plan.open.size === 0) {
        this.plans.delete(plan.id);
        await this.gate.lifecycle('PlanComplete', task, { plan_id: plan.id, title: plan.title });
      }
    }
    this.abort = undefined;
  }

  private async turns(task: Task): Promise<{ status: TaskStatus; summary?: string }> {
    const start = await this.gate.lifecycle('TaskStart', task, { prompt: task.prompt, title: task.title });
    if (start.decision !== 'allow') return { status: 'rejected', summary: start.reason ?? 'TaskStart was refused' };
    const conversation: ChatMessage[] = [{ role: 'user', content: task.prompt }];
    let submitRetries = 0;
    let recoveries = 0;
    // TurnPrepare may switch the model for the rest of the task (same endpoint).
    let model = (this.gate.model = this.options.provider.model);
    for (let turn = 0; turn < this.limits.maxTurns; turn++) {
      const signal = this.abort!.signal;
      if (signal.aborted) return { status: 'cancelled' };
      this.emit({ type: 'turnStarted', taskId: task.id, turn });
      const started = await this.gate.lifecycle('TurnStart', task, { turn }, turn);
      if (started.decision !== 'allow') return { status: 'rejected', summary: started.reason ?? 'TurnStart was refused' };
      // Output that command hooks piped for this session goes in front of the next turn.
      for (const p of this.options.bypassEngine ? [] : this.options.engine.drainPiped(this.sessionId)) {
        this.emit({ type: 'piped', taskId: task.id, hook: p.hook, text: p.text });
        conversation.push({ role: 'user', content: `<hook_output hook="${p.hook}">\n${p.text}\n</hook_output>` });
      }
      const prompt = await assemblePrompt({
        conversation,
        // Read every turn: a lesson another agent taught a moment ago is in the next request.
        brain: this.options.bypassEngine ? undefined : (this.options.engine.brainContext() ?? undefined),
        intentContext: this.intentContext,
        provider: this.options.provider,
        compactor: this.options.compactor,
        onCompact: async (proposal) => {
          const verdict = await this.gate.lifecycle('PreCompact', task, proposal, turn);
          if (verdict.decision !== 'ask') return verdict.decision === 'allow';
          // A compaction under review: a Pending whose summaries the decider may edit or have
          // written again with guidance (extractive summaries take the guidance as a line of their own).
          const settled = await this.options.ask({
            event: 'PreCompact',
            input: proposal,
            asks: verdict.asks,
            sessionId: this.sessionId,
            taskId: task.id,
            regenerate: (_index, guidance) => `${proposal.summary}\n<guidance>${guidance}</guidance>`,
          });
          if (settled.next !== 'run') return false;
          const text = settled.pending?.summaries?.[0]?.text;
          return text !== undefined ? { summary: text } : true;
        },
        onCompacted: (c) => this.emit({ type: 'compacted', taskId: task.id, ...c }),
      });
      // The last mutable point before inference: a hook may rewrite the system prompt, the messages
      // (for this inference only: the conversation is kept) or the model. The messages are not in
      // the subject (it would cost every turn the whole history's conversion and digest); a hook
      // that rewrites them gets their count and the turn, and sends the messages it wants.
      const prepared = await this.gate.lifecycle(
        'TurnPrepare',
        task,
        { turn, system_prompt: prompt.system, model, message_count: prompt.messages.length },
        turn,
      );
      if (prepared.decision === 'deny') return { status: 'rejected', summary: prepared.reason ?? 'TurnPrepare was refused' };
      const rewritten = prepared.rewrite?.turn;
      const system = rewritten?.systemPrompt ?? prompt.system;
      if (rewritten?.model) model = this.gate.model = rewritten.model;
      const messages = rewritten?.messages?.map(chatMessage) ?? prompt.messages;

      let text = '';
      const calls: ToolCall[] = [];
      try {
        for await (const chunk of this.options.provider.chat({
          model,
          messages: [{ role: 'system', content: system }, ...messages],
          tools: toolDefinitions(),
          signal,
        })) {
          if (chunk.type === 'text') {
            text += chunk.text;
            this.emit({ type: 'text', taskId: task.id, turn, text: chunk.text });
          } else if (chunk.type === 'toolCall') calls.push(chunk.call);
        }
      } catch (e) {
        if (signal.aborted || (e instanceof ModelError && e.kind === 'aborted')) return { status: 'cancelled' };
        const message = e instanceof Error ? e.message : String(e);
        const verdict = await this.gate.lifecycle('Error', task, { stage: 'inference', message }, turn);
        this.emit({ type: 'error', taskId: task.id, message });
        if (recoveries++ < this.limits.maxRecoveryTurns && (verdict.piped?.length ?? 0) > 0) {
          // A hook answered the failure with guidance: one recovery turn with it.
          conversation.push({ role: 'user', content: verdict.piped!.map((p) => p.text).join('\n') });
          continue;
        }
        return { status: 'error', summary: message };
      }
      conversation.push({ role: 'assistant', content: text, toolCalls: calls.length ? calls : undefined });
      if (calls.length === 0) {
        conversation.push({ role: 'user', content: 'No tool was called. Continue with a tool, or call attempt_completion when the task is done.' });
      }
      let done: { status: TaskStatus; summary?: string } | undefined;
      for (const call of calls) {
        if (signal.aborted) return { status: 'cancelled' };
        let outcome: ToolOutcome = done ? { ok: false, content: 'not run: the task already ended in this turn' } : await this.tools.run(task, turn, call);
        if (outcome.effect) this.apply(task, outcome.effect);
        if (outcome.submitRejected && ++submitRetries > this.limits.maxSubmitRetries) {
          // The bounded rounds are spent: whoever answers approvals decides (a submit Pending).
          const settled = await this.settleSubmit(task, turn, call, outcome, submitRetries);
          outcome = settled.outcome;
          if (settled.done) done = settled.done;
          else submitRetries = this.limits.maxSubmitRetries; // one more round, then ask again
        }
        conversation.push({ role: 'tool', toolCallId: call.id, name: call.name, content: outcome.content });
        if (outcome.completed) done = { status: 'success', summary: outcome.content };
      }
      await this.gate.lifecycle('TurnEnd', task, { turn, tool_calls: calls.length }, turn);
      if (signal.aborted) return { status: 'cancelled' };
      if (done) return done;
    }
    return { status: 'max_turns', summary: `no completion within ${this.limits.maxTurns} turns` };
  }

  // ---- a plan, a refused completion ----------------------------------------------------------

  /** What an allowed tool call changed in its task (toolCall.ts reports it as data). */
  private apply(task: Task, effect: ToolEffect): void {
    switch (effect.type) {
      case 'intentSelected':
        this.intentContext = effect.context;
        return;
      case 'planAccepted':
        this.queuePlan(task, effect.plan);
        return;
    }
  }

  /** An approved plan's tasks, queued after the current one; PlanComplete fires when they all ended. */
  private queuePlan(task: Task, plan: PlanInput): void {
    const id = randomUUID();
    const queued = plan.tasks.map((t) => ({ prompt: t.prompt, title: t.title, planId: id, taskType: task.taskType, id: randomUUID() }));
    this.plans.set(id, { id, title: plan.title, open: new Set(queued.map((t) => t.id)) });
    this.queue.push(...queued);
  }

  /** A completion still refused after the bounded rounds: a `submit` Pending decides. `override`
   *  accepts it, `retry` gives the model another round with the guidance, `reject` ends the task. */
  private async settleSubmit(
    task: Task,
    turn: number,
    call: ToolCall,
    refused: ToolOutcome,
    rounds: number,
  ): Promise<{ outcome: ToolOutcome; done?: { status: TaskStatus; summary?: string } }> {
    const submit = refused.submit ?? { result: '', failures: [] };
    const settled = await this.options.ask({
      event: 'BeforeSubmit',
      input: { result: submit.result, failures: submit.failures },
      sessionId: this.sessionId,
      taskId: task.id,
    });
    if (settled.next === 'override') {
      await this.gate.lifecycle('AfterSubmit', task, { result: submit.result }, turn);
      return { outcome: this.tools.result(task, turn, call, { ok: true, completed: true, content: `${submit.result}\n\n${settled.message}` }) };
    }
    if (settled.next === 'retry') {
      return {
        outcome: this.tools.result(task, turn, call, {
          ok: false,
          content: toolError(settled.message, 'Fix what failed, then call attempt_completion again.'),
        }),
      };
    }
    const content = toolError(settled.message);
    this.tools.result(task, turn, call, { ok: false, content });
    return {
      outcome: { ok: false, content },
      done: { status: 'rejected', summary: `the completion was refused ${rounds} times: ${refused.content}; ${settled.message}` },
    };
  }
}

/** A message of a TurnPrepare rewrite, as the core read it (`model::rewrite::TurnMessage`: a tool
 *  message always names its call and tool), as the provider takes it. */
function chatMessage(m: TurnMessage): ChatMessage {
  switch (m.role) {
    case 'user':
      return { role: 'user', content: m.content };
    case 'assistant':
      return m.toolCalls.length ? { role: 'assistant', content: m.content, toolCalls: m.toolCalls } : { role: 'assistant', content: m.content };
    case 'tool':
      return { role: 'tool', toolCallId: m.toolCallId ?? '', name: m.name ?? '', content: m.content };
  }
}
