// The prompt, re-assembled from the conversation every turn (stateless prompt): the system prompt, the
// shared brain (`.orchestration/CLAUDE.md`, as the engine shows it: `<shared_brain>`), the selected
// intent's `<intent_context>`, then the conversation — compacted first when it would not fit the
// model's budget.
//
// Compaction works on whole turns (a user message, the assistant's answer and its tool results), so a
// tool call is never separated from its result. Which turns go is the native core's plan
// (`planCompaction`, token counts from `countTokens`): oldest turns first (summarised, or dropped when
// even a summary does not fit), the task's own prompt (its acceptance criterion) last; the system
// prompt, the shared brain (the planner's `brain` kind: a lesson compacted away is a mistake made
// twice), the intent context and the newest turn are never touched. The summary is extractive (which tools ran on which
// paths, what the model said first), so compaction needs no model call and cannot hallucinate.
import { JsonObject } from './json';
import type { ChatMessage, ModelProvider } from './types';

export const SYSTEM_PROMPT = `You are a coding agent working in a workspace governed by Chokepoint.
Every tool call you make is judged before it runs; a refused call comes back as a JSON tool result with
"error", often "remediation" and "suggested_tool": read them and correct course.
Before you write anything, call select_active_intent with the id of the intent from
.orchestration/active_intents.yaml that your task serves; you may then write only inside that intent's
owned scope. If you need a path outside it, call scope_expansion_request with a justification.
When the task is done, call attempt_completion with a summary; checks such as the tests run first.`;

/** Tokens kept free for the model's answer. */
const ANSWER_RESERVE = 4096;

/** One piece of the prompt as the core's planner sees it (the binding's `CompactionItem`). */
export interface CompactionItem {
  kind: 'systemPrompt' | 'intentContext' | 'brain' | 'constraint' | 'acceptanceCriterion' | 'turn';
  tokens: number;
  turn?: number;
  pinned?: boolean;
}

/** What the planner answers (the part of the binding's `CompactionPlan` the assembly reads). */
export interface CompactionPlan {
  actions: Array<'keep' | 'summarize' | 'drop'>;
  before: number;
  after: number;
  overBudget?: { message: string };
}

/** Token counting and compaction planning, from the native core (`countTokens`, `planCompaction`). */
export interface Compactor {
  /** One count per text (a message each, framing included), exact where the core has the tokenizer. */
  count(texts: string[], model: string): number[];
  plan(items: CompactionItem[], budget: number): CompactionPlan;
}

export interface Proposal {
  before_tokens: number;
  after_tokens: number;
  budget: number;
  dropped_turns: number;
  summarized_turns: number;
  summary: string;
}

export interface AssembleInput {
  conversation: ChatMessage[];
  /** The shared brain as `Engine.brainContext()` gives it, read again every turn. */
  brain?: string;
  intentContext?: string;
  provider: ModelProvider;
  compactor?: Compactor;
  /** Fires PreCompact with the proposal; false keeps the conversation as it is; a summary replaces
   *  the proposed one (a reviewer edited it). */
  onCompact(proposal: Proposal): Promise<boolean | { summary: string }>;
  onCompacted(c: { beforeTokens: number; afterTokens: number; dropped: number; summarized: number }): void;
}

export interface Prompt {
  system: string;
  messages: ChatMessage[];
}

/** Splits a conversation into turns: the user messages before an assistant message, the assistant
 *  message, and its tool results. A new turn starts at a user message that follows anything else, and
 *  at an assistant message that follows another's results. */
export function turnsOf(conversation: ChatMessage[]): ChatMessage[][] {
  const turns: ChatMessage[][] = [];
  let current: ChatMessage[] | undefined;
  for (const m of conversation) {
    const starts =
      !current || (m.role === 'user' && current.some((x) => x.role !== 'user')) || (m.role === 'assistant' && current.some((x) => x.role === 'assistant'));
    if (starts) turns.push((current = [m]));
    else current!.push(m);
  }
  return turns;
}

/** Each message's count, by model: a message is counted once, when a turn first sees it (exact
 *  counting runs at 5 to 10 MB/s, too slow to recount a long history every turn). */
const counted = new WeakMap<ChatMessage, { model: string; tokens: number }>();

function countOnce(compactor: Compactor, messages: ChatMessage[], model: string): number[] {
  const missing = messages.filter((m) => counted.get(m)?.model !== model);
  if (missing.length) {
    const counts = compactor.count(missing.map(textOf), model);
    missing.forEach((m, i) => counted.set(m, { model, tokens: counts[i] }));
  }
  return messages.map((m) => counted.get(m)!.tokens);
}

function textOf(m: ChatMessage): string {
  if (m.role === 'assistant') return m.content + (m.toolCalls ?? []).map((c) => `${c.name}(${c.arguments})`).join('\n');
  return m.content;
}

/** A few lines that say what the summarised turns did. */
export function summarize(turns: ChatMessage[][]): string {
  const lines: string[] = [];
  for (const turn of turns) {
    for (const m of turn) {
      if (m.role === 'assistant') {
        if (m.content.trim()) lines.push(`- said: ${m.content.trim().split('\n')[0].slice(0, 160)}`);
        for (const c of m.toolCalls ?? []) {
          let target = '';
          try {
            const a = JsonObject.safeParse(JSON.parse(c.arguments)).data;
            target = String(a?.path ?? a?.command ?? a?.intent_id ?? '').slice(0, 120);
          } catch {
            // a malformed call was answered with a tool error; its name is enough
          }
          lines.push(`- called ${c.name}${target ? ` on ${target}` : ''}`);
        }
      } else if (m.role === 'tool' && m.content.startsWith('{"error"')) {
        lines.push(`  (${m.name} was refused)`);
      }
    }
  }
  return `<summary of ${turns.length} earlier turn${turns.length === 1 ? '' : 's'}>\n${lines.join('\n')}\n</summary>`;
}

export async function assemblePrompt(input: AssembleInput): Promise<Prompt> {
  const system = [SYSTEM_PROMPT, input.brain, input.intentContext].filter(Boolean).join('\n\n');
  const prompt = { system, messages: input.conversation };
  const compactor = input.compactor;
  if (!compactor) return prompt;
  const budget = Math.max(input.provider.contextTokens - ANSWER_RESERVE, 1024);
  // The task's prompt is what "done" means: an acceptance criterion, last to go. The rest of the
  // conversation is turns; the newest one is what the model answers and is pinned.
  const [task, ...rest] = input.conversation;
  const turns = turnsOf(rest);
  const model = input.provider.model;
  const [systemTokens, brainTokens, intentTokens] = compactor.count([SYSTEM_PROMPT, input.brain ?? '', input.intentContext ?? ''], model);
  const brain = input.brain ? brainTokens : 0;
  const taskTokens = task ? countOnce(compactor, [task], model)[0] : 0;
  const turnTokens = turns.map((t) => countOnce(compactor, t, model).reduce((a, b) => a + b, 0));
  const total = systemTokens + brain + (input.intentContext ? intentTokens : 0) + taskTokens + turnTokens.reduce((a, b) => a + b, 0);
  if (total <= budget) return prompt;
  const items: CompactionItem[] = [
    { kind: 'systemPrompt', tokens: systemTokens, pinned: true },
    { kind: 'brain', tokens: brain, pinned: true },
    { kind: 'intentContext', tokens: input.intentContext ? intentTokens : 0, pinned: true },
    { kind: 'acceptanceCriterion', tokens: taskTokens },
    ...turns.map((_, i) => ({ kind: 'turn' as const, tokens: turnTokens[i], turn: i, pinned: i === turns.length - 1 })),
  ];
  const plan = compactor.plan(items, budget);
  if (plan.overBudget) return prompt; // even the pinned part does not fit: the provider will say so
  const taskKept = plan.actions[3] === 'keep';
  const actions = plan.actions.slice(4);
  const summarized = turns.filter((_, i) => actions[i] === 'summarize');
  const dropped = actions.filter((a) => a === 'drop').length + (taskKept ? 0 : 1);
  const summary = summarized.length ? summarize(summarized) : '';
  const proposal: Proposal = { before_tokens: total, after_tokens: plan.after, budget, dropped_turns: dropped, summarized_turns: summarized.length, summary };
  const verdict = await input.onCompact(proposal);
  if (!verdict) return prompt;
  const messages: ChatMessage[] = taskKept && task ? [task] : [];
  const shown = typeof verdict === 'object' ? verdict.summary : summary;
  if (shown) messages.push({ role: 'user', content: shown });
  turns.forEach((t, i) => {
    if (actions[i] === 'keep') messages.push(...t);
  });
  // Compaction changes what the model sees, not the record: the conversation itself is kept whole.
  input.onCompacted({ beforeTokens: total, afterTokens: plan.after, dropped, summarized: summarized.length });
  return { system, messages };
}
