// The vocabulary of the agent runtime, shared by the task loop (loop.ts), a tool call's path
// (toolCall.ts), the model providers (providers/), the tools (tools.ts), the approvals (approvals/)
// and the sidebar's task panel: the conversation and the model, what the runtime reports, and what it
// needs of its host (RuntimeEngine, the asks and what follows them, the limits, a task). Imports only the
// binding's generated declarations, as types (no `vscode`, nothing loaded): the modules that only
// need these types can be unit-tested in plain Node.
//
// `RuntimeEngine` is the binding's `Engine` narrowed with `Pick`; `Ask` is the binding's `AskRequest` (the judged event and who
// asked; no subject: the core builds it); `AskOutcome` is the core's `Settlement`, or a `refusal` made where no Pending could be.
import type {
  AskRequest,
  DecisionName,
  Engine,
  EventName,
  Evaluation,
  HookOutcome,
  LifecycleSubjects,
  OutcomeName,
  Settlement,
} from '../../../native/node/index';

/** One message of the conversation, in the Chat Completions shape (the providers translate it). */
export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls?: ToolCall[] }
  | { role: 'tool'; toolCallId: string; name: string; content: string };

/** A tool call the model made; `arguments` is the raw JSON text the model produced (validated later). */
export interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** A tool as the model is offered it: its parameters are a JSON Schema (generated, see tools.ts). */
export interface ToolDefinition {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** One inference request: the whole prompt, re-assembled every turn (stateless prompt). */
export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  tools: ToolDefinition[];
  /** Aborts the request (the sidebar's Stop, a task's cancellation). */
  signal?: AbortSignal;
}

/** What a provider streams back. Ends with exactly one `done` (or the iterator throws a ModelError). */
export type ChatChunk =
  | { type: 'text'; text: string }
  /** A complete tool call (providers assemble streamed fragments before yielding it). */
  | { type: 'toolCall'; call: ToolCall }
  | { type: 'done'; finishReason: string; usage?: { promptTokens: number; completionTokens: number } };

/** A model endpoint. */
export interface ModelProvider {
  /** Stable id of the provider kind: `openai`, `vscode-lm`, `scripted`. */
  readonly kind: string;
  /** The model id recorded in the trace (`gpt-4o`, `scripted-demo`, ...). */
  readonly model: string;
  /** The model's context window in tokens, for compaction. */
  readonly contextTokens: number;
  chat(request: ChatRequest): AsyncIterable<ChatChunk>;
  /** Frees what the provider holds (the scripted provider's local server), when it holds anything. */
  close?(): Promise<void>;
}

/** A model failure with a message fit for the transcript: which endpoint, what went wrong. */
export class ModelError extends Error {
  constructor(
    message: string,
    /** `http` (a non-2xx answer), `protocol` (a malformed response), `network` (refused, dropped), `aborted`. */
    readonly kind: 'http' | 'protocol' | 'network' | 'aborted',
  ) {
    super(message);
    this.name = 'ModelError';
  }
}

/** A model the sidebar can offer. */
export interface ModelChoice {
  /** `provider:model`, e.g. `scripted:demo`, `openai:gpt-4o`, `vscode-lm:copilot/gpt-4o`. */
  id: string;
  label: string;
  detail?: string;
}

/** The terminal status of a task: `TaskComplete`'s, as the core defines it (`model::subject::TaskStatus`). */
export type TaskStatus = LifecycleSubjects['TaskComplete']['status'];

/** A hook's outcome as the transcript shows it. */
export interface HookOutcomeView {
  hook: string;
  outcome: OutcomeName;
  durationMs: number;
  reason?: string;
}

export const hookView = (o: HookOutcome): HookOutcomeView => ({ hook: o.hook, outcome: o.outcome, durationMs: o.durationNs / 1e6, reason: o.error });

/** The wait for durability of an evaluation, in milliseconds, when there was one. */
export const durableMs = (e: Evaluation): number | undefined => (e.durableWaitNs === undefined ? undefined : e.durableWaitNs / 1e6);

/** What the runtime reports while it works; the task panel renders these, tests assert them. */
export type RuntimeEvent =
  | { type: 'taskStarted'; taskId: string; sessionId: string; prompt: string; model: string }
  /** A lifecycle event passed the chain (TurnStart, PreCompact, ...), with the hooks that decided. */
  | { type: 'lifecycle'; taskId: string; event: EventName; decision: DecisionName; hooks: HookOutcomeView[]; durableMs?: number }
  | { type: 'turnStarted'; taskId: string; turn: number }
  | { type: 'text'; taskId: string; turn: number; text: string }
  | {
      type: 'toolCall';
      taskId: string;
      turn: number;
      callId: string;
      tool: string;
      /** The arguments as the model sent them (JSON text, possibly invalid). */
      arguments: string;
      /** The chain's decision, or `invalid`: arguments refused before the chain. */
      decision: DecisionName | 'invalid';
      reason?: string;
      hooks: HookOutcomeView[];
      /** How long the answer waited, after the hooks, for its record to be durable (apart from the
       *  hooks' own time); absent when nothing waited. */
      durableMs?: number;
    }
  | { type: 'toolResult'; taskId: string; turn: number; callId: string; tool: string; ok: boolean; content: string }
  | { type: 'piped'; taskId: string; hook: string; text: string }
  | { type: 'compacted'; taskId: string; beforeTokens: number; afterTokens: number; dropped: number; summarized: number }
  | { type: 'error'; taskId: string; message: string }
  | { type: 'taskEnded'; taskId: string; status: TaskStatus; summary?: string };

// ---- what the runtime needs of its host ------------------------------------------------------

/** What the runtime calls of the engine: the binding's `Engine`, narrowed to these methods so that a
 *  test sees what the runtime depends on. */
export type RuntimeEngine = Pick<Engine, 'evaluateAsync' | 'runContained' | 'cancelContained' | 'drainPiped' | 'selectedIntent' | 'brainContext'>;

/** An `ask` the runtime needs answered before it goes on, as the chain left it: the event it judged
 *  (`PreToolUse` of a tool call or a scope expansion, `PlanSubmit`, `PreCompact`, a `BeforeSubmit`
 *  still refused after the bounded retries) and who asked. The core makes the Pending of it
 *  (`openAsk`): the runtime builds no subject. */
export type Ask = AskRequest & {
  sessionId: string;
  taskId: string;
  /** compaction: summary `index` written again with `guidance` (the Pending's `retry`). */
  regenerate?: (index: number, guidance: string) => string;
};

/** What follows an ask is the core's `Settlement` (`settlePending`), or, without a Pending behind it
 *  (none could be opened, the task was stopped), a `refusal` made here in the same shape. */
export type { Settlement };

/** An ask refused before (or without) a decision: nothing runs, and the model is told `message`. */
export function refusal(message: string, by = 'chokepoint'): Settlement {
  return { next: 'refuse', by, message };
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

export interface TaskSpec {
  prompt: string;
  title?: string;
  planId?: string;
  taskType?: string;
}

/** A queued task: its spec and the id its events carry. */
export interface Task extends TaskSpec {
  id: string;
}
