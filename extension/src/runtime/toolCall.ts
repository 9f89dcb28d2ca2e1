// One tool call's path through the chokepoint, top to bottom: the model's arguments are validated
// (tools.ts), the call is judged (PreToolUse, through the session's Gate; the record is durable before
// anything runs), an `ask` is settled (a Pending: approved, rejected, or modified and then judged
// again), the tool runs (the file tools, a contained command, a plan, a completion), the result is
// judged (PostToolUse, which may rewrite it), and only then is it reported and handed back to the
// task loop (loop.ts), which gives it to the model. A refusal anywhere on the way is a structured tool
// result (toolError), never an exception. What a call changes in its task (the intent selected, a
// plan's tasks to queue) comes back as data in the outcome (`effect`), for the loop to apply: this
// file calls only down (gate.ts, the engine, the files), never back into the loop. Imports no `vscode`.
//
// An ask settles to the core's `Settlement`, which says what runs: `run`, `run_modified` (its input validated and judged again
// first), `granted` (the core applied the expansion as decided), `refuse`. A plan is `PlanSubmit` with a `plan` Pending; a
// completion is `BeforeSubmit`. A refusal carries `error`, `remediation`, `suggested_tool`.
//
// Invariant: the reason reaches the agent. A rejection's reason, an approval's or a modification's note, a retry's guidance are in
// the tool result the model receives in its next request (peers lose them: copilot-cli #2647); tests/unit/approvals.test.ts reads
// them in the scripted server's requests.
import type { Evaluation, PlanTask } from '../../../native/node/index';
import { FileTools, ToolError } from './fileTools';
import type { Gate, RuntimeEvents } from './gate';
import { validateToolArgs, validateToolCall, type ToolInput } from './tools';
import { durableMs, hookView, type Ask, type Settlement, type RuntimeEngine, type RuntimeLimits, type Task, type ToolCall } from './types';

/** A plan's tasks as submit_plan carries them. */
export interface PlanInput {
  title?: string;
  tasks: { title?: string; prompt: string }[];
}

/** What an allowed call changes in its task, for the loop to apply. */
export type ToolEffect =
  /** select_active_intent: the intent's `<intent_context>`, kept in every prompt from now on. */
  | { type: 'intentSelected'; context: string }
  /** submit_plan, approved: its tasks are queued after the current one. */
  | { type: 'planAccepted'; plan: PlanInput };

/** The result of one tool call as the model will see it. */
export interface ToolOutcome {
  content: string;
  ok: boolean;
  /** What the call changes in its task. */
  effect?: ToolEffect;
  /** attempt_completion accepted: the task is done. */
  completed?: boolean;
  /** BeforeSubmit refused the completion. */
  submitRejected?: boolean;
  /** What BeforeSubmit refused: the completion's result and the hooks that failed it. */
  submit?: { result: string; failures: Array<{ hook: string; reason: string; output: string | null }> };
}

/** What a tool call runs on: the session's gate, engine, approver, files and limits. */
export interface ToolCallContext {
  readonly gate: Gate;
  readonly events: RuntimeEvents;
  readonly engine: RuntimeEngine;
  /** Skips the engine (benchmark baseline only). */
  readonly bypassEngine: boolean;
  readonly files: FileTools;
  /** The `chokepoint` program that isolates a shell command, when there is one. */
  readonly program?: string;
  readonly limits: RuntimeLimits;
  /** Opens the ask's Pending and resolves with what follows its decision (the approvals broker). */
  ask(request: Ask): Promise<Settlement>;
}

/** The tool calls of one runtime session. */
export class ToolCalls {
  constructor(private readonly ctx: ToolCallContext) {}

  /** One tool call, top to bottom: validate → judge (PreToolUse) → settle an `ask` → execute → judge
   *  the result (PostToolUse) → report it. Every refusal on the way is the tool result. */
  async run(task: Task, turn: number, call: ToolCall): Promise<ToolOutcome> {
    const base = { taskId: task.id, turn, callId: call.id, tool: call.name, arguments: call.arguments };
    const valid = validateToolCall(call.name, call.arguments);
    if (!valid.ok) {
      this.ctx.events.emit({ ...base, type: 'toolCall', decision: 'invalid', reason: valid.error, hooks: [] });
      return this.result(task, turn, call, { ok: false, content: toolError(valid.error, 'Fix the arguments and call the tool again.') });
    }
    let paths = writePaths(valid);
    const pre = await this.ctx.gate.judge(this.ctx.gate.event('PreToolUse', task, { tool: call.name, input: valid.args, paths, turn }));
    this.ctx.events.emit({
      ...base,
      type: 'toolCall',
      decision: pre.decision,
      reason: pre.reason,
      hooks: (pre.outcomes ?? []).map(hookView),
      durableMs: durableMs(pre),
    });
    if (pre.decision === 'deny') {
      return this.result(task, turn, call, { ok: false, content: toolError(pre.reason ?? 'denied', pre.remediation, pre.suggestedTool) });
    }
    // A hook's rewrite of the call is held to the tool's schema, as the model's call was.
    const judged = rewrittenInput(valid, pre, 'a hook rewrote the call');
    if (typeof judged === 'string') return this.result(task, turn, call, { ok: false, content: judged });
    let input = judged;
    let extra: string[] = pre.additionalContext ?? [];
    if (pre.decision === 'ask') {
      // A Pending (issue 7): the core builds it from the ask, and once it is decided says what runs
      // next: the approval is durable and an approved expansion granted before this resolves.
      const settled = await this.ctx.ask({
        event: 'PreToolUse',
        tool: call.name,
        input: input.args,
        paths,
        asks: pre.asks,
        sessionId: this.ctx.gate.sessionId,
        taskId: task.id,
      });
      switch (settled.next) {
        case 'granted':
          return this.result(task, turn, call, { ok: true, content: settled.message });
        case 'run':
          extra = [...extra, settled.message];
          break;
        case 'run_modified': {
          // `modify`: the decider's input runs instead, but only after the chain allowed it too.
          const changed = await this.judgeModified(task, turn, call, input, settled.input ?? {}, asker(pre));
          if (typeof changed === 'string') return this.result(task, turn, call, { ok: false, content: changed });
          input = changed;
          paths = writePaths(changed);
          extra = [...extra, settled.message];
          break;
        }
        default:
          return this.result(task, turn, call, { ok: false, content: toolError(settled.message, 'Take the rejection into account and choose another way.') });
      }
    }
    let outcome: ToolOutcome;
    try {
      outcome = await this.execute(task, turn, input, pre);
    } catch (e) {
      if (!(e instanceof ToolError)) {
        await this.ctx.gate.lifecycle('Error', task, { stage: 'tool', tool: call.name, message: (e as Error).message }, turn);
      }
      outcome = { ok: false, content: toolError((e as Error).message) };
    }
    // PostToolUse may rewrite what the model is told (e.g. append linter errors).
    const post = await this.ctx.gate.judge(
      this.ctx.gate.event('PostToolUse', task, {
        tool: call.name,
        input: { ...input.args, result: { output: outcome.content, is_error: !outcome.ok } },
        paths,
        turn,
      }),
    );
    // The core reads the rewrite (`model::rewrite`): the output as text, an error only when it says so.
    const rewritten = post.rewrite?.toolResult;
    if (rewritten) outcome = { ...outcome, content: rewritten.output, ok: !rewritten.isError };
    const context = [...extra, ...(post.additionalContext ?? [])];
    if (context.length) outcome = { ...outcome, content: `${outcome.content}\n\n${context.join('\n')}` };
    return this.result(task, turn, call, outcome);
  }

  /** A `modify`'s input, validated and judged like the model's own (PreToolUse): the decider may not
   *  run what the chain would refuse. Returns the input to run, or the tool error to answer. */
  private async judgeModified(task: Task, turn: number, call: ToolCall, asked: ToolInput, modified: unknown, askedBy: string): Promise<ToolInput | string> {
    const valid = validateToolArgs(asked.name, modified);
    if (!valid.ok) return toolError(`the modified call is invalid: ${valid.error}`);
    const paths = writePaths(valid);
    const again = await this.ctx.gate.judge(this.ctx.gate.event('PreToolUse', task, { tool: call.name, input: valid.args, paths, turn }));
    if (again.decision === 'deny') return toolError(`the modified call was denied: ${again.reason ?? 'denied'}`, again.remediation, again.suggestedTool);
    const input = rewrittenInput(valid, again, 'a hook rewrote the modified call');
    if (typeof input === 'string') return input;
    // The same hook asking again was answered by the decider who wrote this input; another hook's
    // question about it is a question nobody answered yet: its own Pending, never a yes by default.
    if (again.decision === 'ask' && asker(again) !== askedBy) {
      const settled = await this.ctx.ask({
        event: 'PreToolUse',
        tool: call.name,
        input: input.args,
        paths: writePaths(input),
        asks: again.asks,
        sessionId: this.ctx.gate.sessionId,
        taskId: task.id,
      });
      if (settled.next !== 'run') return toolError(`the modified call was not approved: ${settled.message}`);
    }
    return input;
  }

  /** Reports a tool call's outcome (`toolResult`) and returns it; the task loop reports a settled
   *  submit through it too. */
  result(task: Task, turn: number, call: ToolCall, outcome: ToolOutcome): ToolOutcome {
    this.ctx.events.emit({ type: 'toolResult', taskId: task.id, turn, callId: call.id, tool: call.name, ok: outcome.ok, content: outcome.content });
    return outcome;
  }

  private async execute(task: Task, turn: number, input: ToolInput, pre: Evaluation): Promise<ToolOutcome> {
    const ok = (content: string): ToolOutcome => ({ ok: true, content });
    switch (input.name) {
      case 'read_file':
        return ok(this.ctx.files.readFile(input.args));
      case 'list_files':
        return ok(this.ctx.files.listFiles(input.args));
      case 'search_files':
        return ok(this.ctx.files.searchFiles(input.args));
      case 'write_to_file':
        return ok(this.ctx.files.writeFile(input.args));
      case 'apply_diff':
        return ok(this.ctx.files.applyDiff(input.args));
      case 'execute_command':
        return this.command(input.args);
      case 'select_active_intent': {
        // The gatekeeper took the lease and answered with the intent's context.
        const context = (pre.additionalContext ?? []).find((c) => c.includes('<intent_context>'));
        if (!context) return ok(`intent ${input.args.intent_id} selected`);
        return { ok: true, content: context, effect: { type: 'intentSelected', context } };
      }
      case 'scope_expansion_request':
        // Allowed without an ask (a policy let it through): nothing to grant here.
        return ok(`scope expansion for ${input.args.intent_id} allowed`);
      case 'submit_plan':
        return this.submitPlan(task, turn, input.args);
      case 'attempt_completion':
        return this.complete(task, turn, input.args);
    }
  }

  private async command(input: { command: string; cwd?: string; timeout_seconds?: number }): Promise<ToolOutcome> {
    if (this.ctx.bypassEngine) throw new ToolError('commands need the engine (containment)');
    const timeoutMs = Math.min((input.timeout_seconds ?? Infinity) * 1000, this.ctx.limits.toolTimeoutMs);
    const cwd = input.cwd ? this.ctx.files.resolve(input.cwd) : undefined;
    const r = await this.ctx.engine.runContained({
      sessionId: this.ctx.gate.sessionId,
      argv: ['sh', '-c', input.command],
      cwd,
      timeoutMs,
      program: this.ctx.program,
    });
    const parts = [
      r.cancelled
        ? 'cancelled: the command was stopped'
        : r.timedOut
          ? `timed out after ${Math.round(timeoutMs / 1000)} s: the command was stopped`
          : `exit code ${r.exitCode}`,
      r.stdout && `stdout:\n${r.stdout}`,
      r.stderr && `stderr:\n${r.stderr}`,
      r.toolError,
      r.notes.length ? `notes: ${r.notes.join('; ')}` : '',
    ].filter(Boolean);
    return { ok: r.exitCode === 0 && !r.toolError, content: parts.join('\n') };
  }

  private async submitPlan(task: Task, turn: number, input: PlanInput): Promise<ToolOutcome> {
    const verdict = await this.ctx.gate.lifecycle('PlanSubmit', task, input, turn);
    if (verdict.decision === 'deny') return { ok: false, content: toolError(verdict.reason ?? 'the plan was refused', verdict.remediation) };
    const rewritten = verdict.rewrite?.plan;
    let plan: PlanInput = rewritten ? { title: rewritten.title ?? input.title, tasks: rewritten.tasks.map(planTask) } : input;
    let note = '';
    if (verdict.decision === 'ask') {
      const settled = await this.ctx.ask({
        event: 'PlanSubmit',
        tool: 'submit_plan',
        input: plan,
        asks: verdict.asks,
        sessionId: this.ctx.gate.sessionId,
        taskId: task.id,
      });
      if (settled.next !== 'run')
        return { ok: false, content: toolError(settled.message, 'Take the rejection into account: submit another plan, or do the work without one.') };
      // The tasks as approved (the core's reading of the decided subject): the decider may have edited them.
      const edited = settled.pending?.tasks?.map(planTask);
      const changed = (t: PlanInput['tasks'][number], i: number) => t.prompt !== plan.tasks[i]?.prompt || t.title !== plan.tasks[i]?.title;
      if (edited?.length && (edited.length !== plan.tasks.length || edited.some(changed))) {
        plan = { ...plan, tasks: edited };
        note += `\nthe tasks were edited by ${settled.by}: ${plan.tasks.map((t) => t.prompt).join(' | ')}`;
      }
      if (settled.note) note += `\nnote from ${settled.by}: ${settled.note}`;
    }
    const queued = plan.tasks.length;
    return {
      ok: true,
      content: `plan accepted: ${queued} task${queued === 1 ? '' : 's'} queued after this one${note}`,
      effect: { type: 'planAccepted', plan },
    };
  }

  private async complete(task: Task, turn: number, input: { result: string }): Promise<ToolOutcome> {
    const verdict = await this.ctx.gate.lifecycle('BeforeSubmit', task, input, turn);
    if (verdict.decision !== 'allow') {
      const failing = (verdict.outcomes ?? []).filter((o) => o.outcome !== 'allow' && o.outcome !== 'modify');
      const failures = (failing.length ? failing : [{ hook: 'BeforeSubmit', error: undefined }]).map((o) => ({
        hook: o.hook,
        reason: o.error ?? verdict.reason ?? verdict.decision,
        output: null,
      }));
      return {
        ok: false,
        submitRejected: true,
        submit: { result: input.result, failures },
        content: toolError(
          `the completion was not accepted: ${verdict.reason ?? verdict.decision}`,
          verdict.remediation ?? 'Fix what failed, then call attempt_completion again.',
        ),
      };
    }
    await this.ctx.gate.lifecycle('AfterSubmit', task, input, turn);
    return { ok: true, completed: true, content: input.result };
  }
}

/** The hook whose `ask` escalated an evaluation (the Pending's `triggered_by`). */
export function asker(evaluation: Evaluation): string {
  return evaluation.asks?.[0]?.hook ?? 'chain';
}

/** The structured error a refused or failed tool call returns to the model. */
/** A plan's task as the core read it (a rewrite, a decided Pending), as the queue takes it. */
function planTask(t: PlanTask): PlanInput['tasks'][number] {
  return t.title == null ? { prompt: t.prompt } : { prompt: t.prompt, title: t.title };
}

export function toolError(reason: string, remediation?: string | null, suggestedTool?: string | null): string {
  return JSON.stringify({ error: reason, ...(remediation ? { remediation } : {}), ...(suggestedTool ? { suggested_tool: suggestedTool } : {}) });
}

function writePaths(call: ToolInput): string[] | undefined {
  return call.name === 'write_to_file' || call.name === 'apply_diff' ? [call.args.path] : undefined;
}

/** The call as a hook's `modify` left it, validated against the tool's schema; or the tool error
 *  that says the rewrite was invalid (`who`: whose rewrite). */
function rewrittenInput(call: ToolInput, evaluation: Evaluation, who: string): ToolInput | string {
  if (evaluation.modified === undefined || evaluation.modified === null) return call;
  const again = validateToolArgs(call.name, evaluation.modified);
  return again.ok
    ? again
    : toolError(`${who} into an invalid one: ${again.error}`, "This is a fault of the workspace's hooks, not of your call: tell the person.");
}
