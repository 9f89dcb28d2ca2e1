// The agent runtime: the tool loop whose every step passes the chokepoint.
//
// Session → plan → task → turn (design note 001): a task fires TaskStart, then turns until the model
// completes, fails or runs out of turns; each turn fires TurnStart, TurnPrepare (the last mutable
// point before inference), inference, then for each tool call PreToolUse → execute (unless denied) →
// PostToolUse → the result goes back to the model, then TurnEnd. TaskComplete fires once per task with
// its terminal status, PlanComplete when a plan's tasks are all terminal, AllTasksComplete when the
// queue empties (a hook may enqueue more), SessionEnd at the end.
//
// Invariants:
// - Nothing the model asks for runs before the engine allowed it; an engine that cannot answer is a
//   deny (chokepoint.ts / RuntimeEngine), never an allow.
// - The prompt is re-assembled from the conversation every turn (prompt.ts); nothing is carried in
//   a provider's state.
// - A refusal is a structured tool result the model can act on, never an exception of the loop.
// Imports no `vscode`: the extension wires it (runtime/index.ts) and unit tests drive it in Node.
import { randomUUID } from 'crypto';
import type { ContainedResult, Evaluation, Event as ChainEvent, HookOutcome } from '../../../native/node/index';
import { FileTools, ToolError } from './fileTools';
import { assemblePrompt, type Compactor } from './prompt';
import { toolDefinitions, validateToolCall, type ToolName } from './tools';
import type { ChatMessage, HookOutcomeView, ModelProvider, RuntimeEvent, TaskStatus, ToolCall } from './types';
import { ModelError } from './types';

/** What the runtime needs of the engine: the binding's Engine has all of it. */
export interface RuntimeEngine {
  evaluateAsync(event: ChainEvent, options?: { outcomes?: string } | null): Promise<Evaluation>;
  runContained(command: { sessionId: string; argv: string[]; cwd?: string; timeoutMs?: number }): Promise<ContainedResult>;
  cancelContained(sessionId: string): boolean;
  drainPiped(sessionId: string): Array<{ hook: string; text: string }>;
  selectedIntent(sessionId: string): string | null;
  approveScopeExpansion(expansion: { sessionId: string; intentId: string; paths: string[]; justification: string; approvedBy: string; save?: boolean }): void;
  flushTrace(): void;
}

/** What an `ask` is about: each becomes a Pending of that kind (issue 7, extension/src/approvals/). */
export type AskKind = 'tool_call' | 'scope_expansion' | 'plan' | 'compaction' | 'submit';

/** An `ask` the runtime needs answered before it goes on: a hook's `ask` on a tool call, a scope
 *  expansion, a plan, a compaction under review (a PreCompact `ask`), a completion the BeforeSubmit
 *  hooks still refuse after the bounded retries. The broker turns it into a Pending. */
export interface AskRequest {
  kind: AskKind;
  sessionId: string;
  taskId: string;
  tool: string;
  input: Record<string, unknown>;
  /** Why it was escalated (the asking hooks' reasons, or the failures). */
  reason: string;
  /** The hook (or policy) that asked; `runtime` when the runtime itself asks (submit). */
  triggeredBy?: string;
  /** The Pending's subject, in the shape its kind has (approvals contract). */
  subject?: Record<string, unknown>;
  /** compaction: summary `index` written again with `guidance` (the Pending's `retry`). */
  regenerate?: (index: number, guidance: string) => string;
}

/** The answer the runtime acts on. Only `approved` is required: an approver that just says yes or no
 *  (tests, the extension API's `setApprover`) is answered as before. */
export interface AskAnswer {
  approved: boolean;
  /** A rejection's reason, or an override's: the model is told. */
  reason?: string;
  /** For scope expansions: also write the paths into active_intents.yaml. */
  save?: boolean;
  approvedBy?: string;
  /** What the decider said with an approval or a modification: the model is told. */
  note?: string;
  /** tool_call `modify`: the input that runs instead of the model's (judged again first). */
  input?: Record<string, unknown>;
  /** The subject as decided: a scope expansion's edited paths, a plan's edited tasks, a compaction's
   *  edited summaries. */
  subject?: Record<string, unknown>;
  /** submit `override`: the completion is accepted despite the failures. */
  overridden?: boolean;
  /** submit `retry`: another round, with this guidance for the model. */
  retry?: { guidance?: string };
}

export interface RuntimeLimits {
  /** Turns per task before it ends as `max_turns`. */
  maxTurns: number;
  /** Per tool call (commands: their process group is killed). */
  toolTimeoutMs: number;
  /** Fix-and-retry rounds after a failed BeforeSubmit before the task ends as `rejected`. */
  maxSubmitRetries: number;
  /** Recovery turns after a model or tool failure before the task ends as `error`. */
  maxRecoveryTurns: number;
}

export const DEFAULT_LIMITS: RuntimeLimits = { maxTurns: 25, toolTimeoutMs: 120_000, maxSubmitRetries: 2, maxRecoveryTurns: 1 };

export interface RuntimeOptions {
  root: string;
  engine: RuntimeEngine;
  provider: ModelProvider;
  /** Recorded with every event (`chokepoint` for this runtime). */
  agentId?: string;
  limits?: Partial<RuntimeLimits>;
  ask: (request: AskRequest) => Promise<AskAnswer>;
  compactor?: Compactor;
  /** Skips the engine entirely (benchmark baseline only: `runtime.tool_call.bypass`). */
  bypassEngine?: boolean;
}

export interface TaskSpec {
  prompt: string;
  title?: string;
  planId?: string;
  taskType?: string;
}

interface Task extends TaskSpec {
  id: string;
}

interface Plan {
  id: string;
  title?: string;
  open: Set<string>;
}

/** The result of one tool call as the model will see it. */
interface ToolOutcome {
  content: string;
  ok: boolean;
  /** attempt_completion accepted: the task is done. */
  completed?: boolean;
  /** BeforeSubmit refused the completion. */
  submitRejected?: boolean;
  /** What BeforeSubmit refused: the completion's result and the hooks that failed it. */
  submit?: { result: string; failures: Array<{ hook: string; reason: string; output: string | null }> };
}

const hookView = (o: HookOutcome): HookOutcomeView => ({ hook: o.hook, outcome: o.outcome, durationMs: o.durationNs / 1e6, reason: o.error });

export class AgentRuntime {
  readonly sessionId = randomUUID();
  private readonly agentId: string;
  private readonly limits: RuntimeLimits;
  private readonly files: FileTools;
  private readonly listeners = new Set<(e: RuntimeEvent) => void>();
  private readonly queue: Task[] = [];
  private readonly plans = new Map<string, Plan>();
  private sessionStarted = false;
  private sessionEnded = false;
  private running: Promise<void> | undefined;
  private abort: AbortController | undefined;
  /** The `<intent_context>` of the intent this session selected, kept in every prompt. */
  private intentContext: string | undefined;
  /** The model the current task uses (TurnPrepare may switch it); recorded with every event. */
  private model: string | undefined;

  constructor(private readonly options: RuntimeOptions) {
    this.agentId = options.agentId ?? 'chokepoint';
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.files = new FileTools(options.root);
  }

  onEvent(listener: (e: RuntimeEvent) => void): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  private emit(e: RuntimeEvent): void {
    for (const l of this.listeners) l(e);
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
      await this.lifecycle('SessionEnd', undefined, { agent: this.agentId });
    }
  }

  private async drain(): Promise<void> {
    if (!this.sessionStarted) {
      this.sessionStarted = true;
      await this.lifecycle('SessionStart', undefined, { agent: this.agentId, model: this.options.provider.model });
    }
    for (;;) {
      const task = this.queue.shift();
      if (task) {
        await this.runTask(task);
        continue;
      }
      // The queue is empty: a hook may enqueue more work by rewriting the subject's `tasks`.
      const evaluation = await this.lifecycle('AllTasksComplete', undefined, { tasks: [] });
      const more = (evaluation?.modified as { tasks?: TaskSpec[] } | undefined)?.tasks;
      if (!Array.isArray(more) || more.length === 0) return;
      for (const t of more) if (t && typeof t.prompt === 'string') this.queue.push({ prompt: t.prompt, title: t.title, id: randomUUID() });
    }
  }

  // ---- the chokepoint -------------------------------------------------------------------------

  private event(name: string, task: Task | undefined, extra: Partial<ChainEvent> = {}): ChainEvent {
    return {
      event: name,
      sessionId: this.sessionId,
      agentId: this.agentId,
      model: this.model ?? this.options.provider.model,
      taskId: task?.id,
      planId: task?.planId,
      taskType: task?.taskType,
      ...extra,
    };
  }

  private async judge(event: ChainEvent): Promise<Evaluation> {
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

  private async lifecycle(name: string, task: Task | undefined, subject: unknown, turn?: number): Promise<Evaluation | undefined> {
    const evaluation = await this.judge(this.event(name, task, { input: subject, turn }));
    if (task) {
      this.emit({ type: 'lifecycle', taskId: task.id, event: name, decision: evaluation.decision, hooks: (evaluation.outcomes ?? []).map(hookView) });
    }
    return evaluation;
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
    await this.lifecycle('TaskComplete', task, { status, summary });
    this.emit({ type: 'taskEnded', taskId: task.id, status, summary });
    if (task.planId) {
      const plan = this.plans.get(task.planId);
      plan?.open.delete(task.id);
      if (plan && plan.open.size === 0) {
        this.plans.delete(plan.id);
        await this.lifecycle('PlanComplete', task, { plan_id: plan.id, title: plan.title });
      }
    }
    this.abort = undefined;
  }

  private async turns(task: Task): Promise<{ status: TaskStatus; summary?: string }> {
    const start = await this.lifecycle('TaskStart', task, { prompt: task.prompt, title: task.title });
    if (start && start.decision !== 'allow') return { status: 'rejected', summary: start.reason ?? 'TaskStart was refused' };
    const conversation: ChatMessage[] = [{ role: 'user', content: task.prompt }];
    let submitRetries = 0;
    let recoveries = 0;
    // TurnPrepare may switch the model for the rest of the task (same endpoint).
    let model = (this.model = this.options.provider.model);
    for (let turn = 0; turn < this.limits.maxTurns; turn++) {
      const signal = this.abort!.signal;
      if (signal.aborted) return { status: 'cancelled' };
      this.emit({ type: 'turnStarted', taskId: task.id, turn });
      const started = await this.lifecycle('TurnStart', task, { turn }, turn);
      if (started && started.decision !== 'allow') return { status: 'rejected', summary: started.reason ?? 'TurnStart was refused' };
      // Output that command hooks piped for this session goes in front of the next turn.
      for (const p of this.options.bypassEngine ? [] : this.options.engine.drainPiped(this.sessionId)) {
        this.emit({ type: 'piped', taskId: task.id, hook: p.hook, text: p.text });
        conversation.push({ role: 'user', content: `<hook_output hook="${p.hook}">\n${p.text}\n</hook_output>` });
      }
      const prompt = await assemblePrompt({
        conversation,
        intentContext: this.intentContext,
        provider: this.options.provider,
        compactor: this.options.compactor,
        onCompact: async (proposal) => {
          const verdict = await this.lifecycle('PreCompact', task, proposal, turn);
          if (verdict?.decision !== 'ask') return verdict?.decision === 'allow';
          // A compaction under review: a Pending whose summaries the decider may edit or have
          // written again with guidance (extractive summaries take the guidance as a line of their own).
          const answer = await this.options.ask({
            kind: 'compaction',
            sessionId: this.sessionId,
            taskId: task.id,
            tool: 'PreCompact',
            input: proposal as unknown as Record<string, unknown>,
            reason: verdict.reason ?? '',
            triggeredBy: asker(verdict),
            subject: {
              summaries: proposal.summary ? [{ text: proposal.summary, source: `${proposal.summarized_turns} earlier turn(s)` }] : [],
              guidance: null,
              original_tokens: proposal.before_tokens,
              estimated_tokens: proposal.after_tokens,
              budget: proposal.budget,
            },
            regenerate: (_index, guidance) => `${proposal.summary}\n<guidance>${guidance}</guidance>`,
          });
          if (!answer.approved) return false;
          const summaries = answer.subject?.summaries;
          const text = Array.isArray(summaries) && summaries.length ? (summaries[0] as { text?: unknown }).text : undefined;
          return typeof text === 'string' ? { summary: text } : true;
        },
        onCompacted: (c) => this.emit({ type: 'compacted', taskId: task.id, ...c }),
      });
      // The last mutable point before inference: a hook may rewrite the system prompt, the messages
      // (for this inference only: the conversation is kept) or the model. The messages are not in
      // the subject (it would cost every turn the whole history's conversion and digest); a hook
      // that rewrites them gets their count and the turn, and sends the messages it wants.
      const prepared = await this.lifecycle('TurnPrepare', task, { turn, system_prompt: prompt.system, model, message_count: prompt.messages.length }, turn);
      if (prepared && prepared.decision === 'deny') return { status: 'rejected', summary: prepared.reason ?? 'TurnPrepare was refused' };
      const rewritten = (prepared?.modified ?? {}) as { system_prompt?: unknown; model?: unknown; messages?: unknown };
      const system = typeof rewritten.system_prompt === 'string' ? rewritten.system_prompt : prompt.system;
      if (typeof rewritten.model === 'string' && rewritten.model) model = this.model = rewritten.model;
      const messages = chatMessages(rewritten.messages) ?? prompt.messages;

      let text = '';
      const calls: ToolCall[] = [];
      try {
        for await (const chunk of this.options.provider.chat({ model, messages: [{ role: 'system', content: system }, ...messages], tools: toolDefinitions(), signal })) {
          if (chunk.type === 'text') {
            text += chunk.text;
            this.emit({ type: 'text', taskId: task.id, turn, text: chunk.text });
          } else if (chunk.type === 'toolCall') calls.push(chunk.call);
        }
      } catch (e) {
        if (signal.aborted || (e instanceof ModelError && e.kind === 'aborted')) return { status: 'cancelled' };
        const message = e instanceof Error ? e.message : String(e);
        const verdict = await this.lifecycle('Error', task, { stage: 'inference', message }, turn);
        this.emit({ type: 'error', taskId: task.id, message });
        if (recoveries++ < this.limits.maxRecoveryTurns && (verdict?.piped?.length ?? 0) > 0) {
          // A hook answered the failure with guidance: one recovery turn with it.
          conversation.push({ role: 'user', content: verdict!.piped!.map((p) => p.text).join('\n') });
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
        let outcome = done ? { ok: false, content: 'not run: the task already ended in this turn' } : await this.toolCall(task, turn, call);
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
      await this.lifecycle('TurnEnd', task, { turn, tool_calls: calls.length }, turn);
      if (signal.aborted) return { status: 'cancelled' };
      if (done) return done;
    }
    return { status: 'max_turns', summary: `no completion within ${this.limits.maxTurns} turns` };
  }

  // ---- a tool call ----------------------------------------------------------------------------

  private async toolCall(task: Task, turn: number, call: ToolCall): Promise<ToolOutcome> {
    const base = { taskId: task.id, turn, callId: call.id, tool: call.name, arguments: call.arguments };
    const valid = validateToolCall(call.name, call.arguments);
    if (!valid.ok) {
      this.emit({ ...base, type: 'toolCall', decision: 'invalid', reason: valid.error, hooks: [] });
      return this.result(task, turn, call, { ok: false, content: toolError(valid.error, 'Fix the arguments and call the tool again.') });
    }
    let paths = writePaths(valid.name, valid.args);
    const pre = await this.judge(this.event('PreToolUse', task, { tool: call.name, input: valid.args, paths, turn }));
    const decision = pre.decision as 'allow' | 'deny' | 'ask';
    this.emit({ ...base, type: 'toolCall', decision, reason: pre.reason, hooks: (pre.outcomes ?? []).map(hookView) });
    let input = (pre.modified as Record<string, unknown> | undefined) ?? valid.args;
    if (pre.decision === 'deny') {
      return this.result(task, turn, call, { ok: false, content: toolError(pre.reason ?? 'denied', pre.remediation, pre.suggestedTool) });
    }
    let extra: string[] = pre.additionalContext ?? [];
    if (pre.decision === 'ask') {
      // A Pending (issue 7): whatever answers it, its reason or note is what the model is told.
      const expansion = valid.name === 'scope_expansion_request';
      const a = input as { intent_id?: string; paths?: string[]; justification?: string };
      const answer = await this.options.ask({
        kind: expansion ? 'scope_expansion' : 'tool_call',
        sessionId: this.sessionId,
        taskId: task.id,
        tool: call.name,
        input,
        reason: pre.reason ?? '',
        triggeredBy: asker(pre),
        subject: expansion
          ? { intent_id: a.intent_id, paths: a.paths, justification: a.justification }
          : { tool: call.name, input, paths: paths ?? null, reason: pre.reason ?? '' },
      });
      const by = answer.approvedBy ?? 'the reviewer';
      if (!answer.approved) {
        return this.result(task, turn, call, { ok: false, content: toolError(`rejected by ${by}${answer.reason ? `: ${answer.reason}` : ''}`, 'Take the rejection into account and choose another way.') });
      }
      // Write-ahead, as for the gate itself: who approved is durable before what they approved runs.
      try {
        this.options.engine.flushTrace();
      } catch (e) {
        return this.result(task, turn, call, { ok: false, content: toolError(`the approval could not be recorded in the trace ledger: ${(e as Error).message}`) });
      }
      if (expansion) {
        // The paths as approved: the decider may have edited them.
        const edited = answer.subject?.paths;
        const granted = Array.isArray(edited) && edited.every((p) => typeof p === 'string') ? (edited as string[]) : a.paths ?? [];
        try {
          this.options.engine.approveScopeExpansion({ sessionId: this.sessionId, intentId: String(a.intent_id), paths: granted, justification: String(a.justification ?? ''), approvedBy: answer.approvedBy ?? 'human', save: answer.save });
        } catch (e) {
          return this.result(task, turn, call, { ok: false, content: toolError(`the expansion could not be granted: ${(e as Error).message}`) });
        }
        const note = answer.note ? `\nnote from ${by}: ${answer.note}` : '';
        return this.result(task, turn, call, { ok: true, content: `approved by ${answer.approvedBy ?? 'human'}: ${granted.join(', ')} added to the scope of ${a.intent_id}${answer.save ? ' and saved to active_intents.yaml' : ''}${note}` });
      }
      if (answer.input) {
        // `modify`: the decider's input runs instead, but only after the chain allowed it too.
        const changed = await this.judgeModified(task, turn, call, answer.input, asker(pre));
        if (typeof changed === 'string') return this.result(task, turn, call, { ok: false, content: changed });
        input = changed;
        paths = writePaths(valid.name, changed);
        extra = [...extra, `modified by ${by} before it ran; what ran: ${JSON.stringify(changed)}${answer.note ? `\nnote from ${by}: ${answer.note}` : ''}`];
      } else {
        extra = [...extra, `approved by ${answer.approvedBy ?? 'human'}${answer.note ? `: ${answer.note}` : ''}`];
      }
    }
    let outcome: ToolOutcome;
    try {
      outcome = await this.execute(task, turn, valid.name, input, pre);
    } catch (e) {
      if (!(e instanceof ToolError)) {
        await this.lifecycle('Error', task, { stage: 'tool', tool: call.name, message: (e as Error).message }, turn);
      }
      outcome = { ok: false, content: toolError((e as Error).message) };
    }
    // PostToolUse may rewrite what the model is told (e.g. append linter errors).
    const post = await this.judge(this.event('PostToolUse', task, { tool: call.name, input: { ...input, result: { output: outcome.content, is_error: !outcome.ok } }, paths, turn }));
    const rewritten = post.modified as { result?: { output?: unknown; is_error?: unknown } } | undefined;
    if (typeof rewritten?.result?.output === 'string') outcome = { ...outcome, content: rewritten.result.output, ok: rewritten.result.is_error !== true };
    const context = [...extra, ...(post.additionalContext ?? [])];
    if (context.length) outcome = { ...outcome, content: `${outcome.content}\n\n${context.join('\n')}` };
    return this.result(task, turn, call, outcome);
  }

  /** A `modify`'s input, validated and judged like the model's own (PreToolUse): the decider may not
   *  run what the chain would refuse. Returns the input to run, or the tool error to answer. */
  private async judgeModified(task: Task, turn: number, call: ToolCall, modified: Record<string, unknown>, askedBy: string): Promise<Record<string, unknown> | string> {
    const valid = validateToolCall(call.name, JSON.stringify(modified));
    if (!valid.ok) return toolError(`the modified call is invalid: ${valid.error}`);
    const paths = writePaths(valid.name, valid.args);
    const again = await this.judge(this.event('PreToolUse', task, { tool: call.name, input: valid.args, paths, turn }));
    if (again.decision === 'deny') return toolError(`the modified call was denied: ${again.reason ?? 'denied'}`, again.remediation, again.suggestedTool);
    const input = (again.modified as Record<string, unknown> | undefined) ?? valid.args;
    // The same hook asking again was answered by the decider who wrote this input; another hook's
    // question about it is a question nobody answered yet: its own Pending, never a yes by default.
    if (again.decision === 'ask' && asker(again) !== askedBy) {
      const answer = await this.options.ask({
        kind: 'tool_call',
        sessionId: this.sessionId,
        taskId: task.id,
        tool: call.name,
        input,
        reason: again.reason ?? '',
        triggeredBy: asker(again),
        subject: { tool: call.name, input, paths: paths ?? null, reason: again.reason ?? '' },
      });
      if (!answer.approved) return toolError(`the modified call was rejected by ${answer.approvedBy ?? 'the reviewer'}${answer.reason ? `: ${answer.reason}` : ''}`);
    }
    return input;
  }

  /** A completion still refused after the bounded rounds: a `submit` Pending decides. `override`
   *  accepts it, `retry` gives the model another round with the guidance, `reject` ends the task. */
  private async settleSubmit(task: Task, turn: number, call: ToolCall, refused: ToolOutcome, rounds: number): Promise<{ outcome: ToolOutcome; done?: { status: TaskStatus; summary?: string } }> {
    const submit = refused.submit ?? { result: '', failures: [] };
    const answer = await this.options.ask({
      kind: 'submit',
      sessionId: this.sessionId,
      taskId: task.id,
      tool: call.name,
      input: { result: submit.result },
      reason: submit.failures.map((f) => `${f.hook}: ${f.reason}`).join('; '),
      triggeredBy: submit.failures[0]?.hook ?? 'BeforeSubmit',
      subject: { result: submit.result, failures: submit.failures },
    });
    const by = answer.approvedBy ?? 'the reviewer';
    if (answer.approved && answer.overridden) {
      await this.lifecycle('AfterSubmit', task, { result: submit.result }, turn);
      const content = `${submit.result}\n\naccepted by ${by} despite the failed checks${answer.reason ? `: ${answer.reason}` : ''}`;
      return { outcome: this.result(task, turn, call, { ok: true, completed: true, content }) };
    }
    if (answer.retry) {
      const guidance = answer.retry.guidance ? `: ${answer.retry.guidance}` : '';
      const content = toolError(`the completion was not accepted; ${by} gives you another round${guidance}`, 'Fix what failed, then call attempt_completion again.');
      return { outcome: this.result(task, turn, call, { ok: false, content }) };
    }
    const content = toolError(`the completion was rejected by ${by}${answer.reason ? `: ${answer.reason}` : ''}`);
    this.result(task, turn, call, { ok: false, content });
    return {
      outcome: { ok: false, content },
      done: { status: 'rejected', summary: `the completion was refused ${rounds} times: ${refused.content}; rejected by ${by}${answer.reason ? `: ${answer.reason}` : ''}` },
    };
  }

  private result(task: Task, turn: number, call: ToolCall, outcome: ToolOutcome): ToolOutcome {
    this.emit({ type: 'toolResult', taskId: task.id, turn, callId: call.id, tool: call.name, ok: outcome.ok, content: outcome.content });
    return outcome;
  }

  private async execute(task: Task, turn: number, name: ToolName, input: Record<string, unknown>, pre: Evaluation): Promise<ToolOutcome> {
    const ok = (content: string): ToolOutcome => ({ ok: true, content });
    switch (name) {
      case 'read_file':
        return ok(this.files.readFile(input as never));
      case 'list_files':
        return ok(this.files.listFiles(input as never));
      case 'search_files':
        return ok(this.files.searchFiles(input as never));
      case 'write_to_file':
        return ok(this.files.writeFile(input as never));
      case 'apply_diff':
        return ok(this.files.applyDiff(input as never));
      case 'execute_command':
        return this.command(input as { command: string; cwd?: string; timeout_seconds?: number });
      case 'select_active_intent': {
        // The gatekeeper took the lease and answered with the intent's context.
        const context = (pre.additionalContext ?? []).find((c) => c.includes('<intent_context>'));
        if (context) this.intentContext = context;
        return ok(context ?? `intent ${String(input.intent_id)} selected`);
      }
      case 'scope_expansion_request':
        // Allowed without an ask (a policy let it through): nothing to grant here.
        return ok(`scope expansion for ${String(input.intent_id)} allowed`);
      case 'submit_plan':
        return this.submitPlan(task, turn, input as { title?: string; tasks: { title?: string; prompt: string }[] });
      case 'attempt_completion':
        return this.complete(task, turn, input as { result: string });
    }
  }

  private async command(input: { command: string; cwd?: string; timeout_seconds?: number }): Promise<ToolOutcome> {
    if (this.options.bypassEngine) throw new ToolError('commands need the engine (containment)');
    const timeoutMs = Math.min((input.timeout_seconds ?? Infinity) * 1000, this.limits.toolTimeoutMs);
    const cwd = input.cwd ? this.files.resolve(input.cwd) : undefined;
    const r = await this.options.engine.runContained({ sessionId: this.sessionId, argv: ['sh', '-c', input.command], cwd, timeoutMs });
    const parts = [
      r.cancelled ? 'cancelled: the command was stopped' : r.timedOut ? `timed out after ${Math.round(timeoutMs / 1000)} s: the command was stopped` : `exit code ${r.exitCode}`,
      r.stdout && `stdout:\n${r.stdout}`,
      r.stderr && `stderr:\n${r.stderr}`,
      r.toolError,
      r.notes.length ? `notes: ${r.notes.join('; ')}` : '',
    ].filter(Boolean);
    return { ok: r.exitCode === 0 && !r.toolError, content: parts.join('\n') };
  }

  private async submitPlan(task: Task, turn: number, input: { title?: string; tasks: { title?: string; prompt: string }[] }): Promise<ToolOutcome> {
    const verdict = await this.lifecycle('PlanSubmit', task, input, turn);
    if (!verdict || verdict.decision === 'deny') return { ok: false, content: toolError(verdict?.reason ?? 'the plan was refused', verdict?.remediation) };
    let plan = (verdict.modified as typeof input | undefined) ?? input;
    let note = '';
    if (verdict.decision === 'ask') {
      const answer = await this.options.ask({
        kind: 'plan',
        sessionId: this.sessionId,
        taskId: task.id,
        tool: 'submit_plan',
        input: plan,
        reason: verdict.reason ?? '',
        triggeredBy: asker(verdict),
        subject: { title: plan.title ?? null, tasks: (plan.tasks ?? []).map((t) => ({ prompt: t.prompt, title: t.title ?? null })) },
      });
      const by = answer.approvedBy ?? 'the reviewer';
      if (!answer.approved) return { ok: false, content: toolError(`the plan was rejected by ${by}${answer.reason ? `: ${answer.reason}` : ''}`, 'Take the rejection into account: submit another plan, or do the work without one.') };
      // The tasks as approved: the decider may have edited them.
      const edited = answer.subject?.tasks;
      if (Array.isArray(edited) && edited.length && edited.every((t) => t && typeof (t as { prompt?: unknown }).prompt === 'string')) {
        plan = { ...plan, tasks: (edited as Array<{ prompt: string; title?: string | null }>).map((t) => ({ prompt: t.prompt, title: t.title ?? undefined })) };
        note += `\nthe tasks were edited by ${by}: ${plan.tasks.map((t) => t.prompt).join(' | ')}`;
      }
      if (answer.note) note += `\nnote from ${by}: ${answer.note}`;
    }
    if (!Array.isArray(plan.tasks)) plan = input;
    const id = randomUUID();
    const queued = plan.tasks.map((t) => ({ prompt: t.prompt, title: t.title, planId: id, taskType: task.taskType, id: randomUUID() }));
    this.plans.set(id, { id, title: plan.title, open: new Set(queued.map((t) => t.id)) });
    this.queue.push(...queued);
    return { ok: true, content: `plan accepted: ${queued.length} task${queued.length === 1 ? '' : 's'} queued after this one${note}` };
  }

  private async complete(task: Task, turn: number, input: { result: string }): Promise<ToolOutcome> {
    const verdict = await this.lifecycle('BeforeSubmit', task, input, turn);
    if (verdict && verdict.decision !== 'allow') {
      const failing = (verdict.outcomes ?? []).filter((o) => o.outcome !== 'allow' && o.outcome !== 'modify');
      const failures = (failing.length ? failing : [{ hook: 'BeforeSubmit', error: undefined }]).map((o) => ({ hook: o.hook, reason: o.error ?? verdict.reason ?? verdict.decision, output: null }));
      return {
        ok: false,
        submitRejected: true,
        submit: { result: input.result, failures },
        content: toolError(`the completion was not accepted: ${verdict.reason ?? verdict.decision}`, verdict.remediation ?? 'Fix what failed, then call attempt_completion again.'),
      };
    }
    await this.lifecycle('AfterSubmit', task, input, turn);
    return { ok: true, completed: true, content: input.result };
  }
}

/** The hook whose `ask` escalated an evaluation (the Pending's `triggered_by`). */
function asker(evaluation: Evaluation): string {
  return (evaluation.outcomes ?? []).find((o) => o.outcome === 'ask')?.hook ?? 'chain';
}

/** The structured error a refused or failed tool call returns to the model. */
export function toolError(reason: string, remediation?: string | null, suggestedTool?: string | null): string {
  return JSON.stringify({ error: reason, ...(remediation ? { remediation } : {}), ...(suggestedTool ? { suggested_tool: suggestedTool } : {}) });
}

/** A TurnPrepare rewrite of the messages, if it is a well-formed list; otherwise undefined. */
function chatMessages(value: unknown): ChatMessage[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const roles = new Set(['user', 'assistant', 'tool']);
  const ok = value.every((m) => m && typeof m === 'object' && roles.has((m as ChatMessage).role) && typeof (m as ChatMessage).content === 'string');
  return ok ? (value as ChatMessage[]) : undefined;
}

function writePaths(name: ToolName, args: Record<string, unknown>): string[] | undefined {
  return (name === 'write_to_file' || name === 'apply_diff') && typeof args.path === 'string' ? [args.path] : undefined;
}
