// The prompt, re-assembled from the conversation every turn (stateless prompt): the system prompt, the
// selected intent's `<intent_context>`, then the conversation — compacted first when it would not fit
// the model's budget.
//
// Compaction works on whole turns (a user message, the assistant's answer and its tool results), so a
// tool call is never separated from its result. Which turns go is the native core's plan
// (`planCompaction`): oldest turns first (summarised, or dropped when even a summary does not fit),
// then hook-added context (constraints), acceptance criteria last; the system prompt, the intent
// context and the newest turn are never touched. The summary is extractive (which tools ran on which
// paths, what the model said first), so compaction needs no model call and cannot hallucinate.
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

export type ItemKind = 'system' | 'intent' | 'constraint' | 'criterion' | 'turn';

export interface CompactionItem {
  kind: ItemKind;
  tokens: number;
  /** Never dropped or summarised. */
  pinned: boolean;
}

export type ItemAction = 'keep' | 'drop' | 'summarize';

export interface CompactionPlan {
  actions: ItemAction[];
  beforeTokens: number;
  afterTokens: number;
}

/** Token counting and compaction planning, from the native core. */
export interface Compactor {
  /** One count per text, for `model`'s tokenizer (exact where the core has one, else its estimate). */
  count(texts: string[], model: string): number[];
  /** Throws when even the pinned items exceed the budget. */
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
  intentContext?: string;
  provider: ModelProvider;
  compactor?: Compactor;
  /** Fires PreCompact with the proposal; false keeps the conversation as it is. */
  onCompact(proposal: Proposal): Promise<boolean>;
  onCompacted(c: { beforeTokens: number; afterTokens: number; dropped: number; summarized: number }): void;
}

export interface Prompt {
  system: string;
  messages: ChatMessage[];
}

/** Splits a conversation into turns: each starts at a user message. */
export function turnsOf(conversation: ChatMessage[]): ChatMessage[][] {
  const turns: ChatMessage[][] = [];
  for (const m of conversation) {
    if (m.role === 'user' || turns.length === 0) turns.push([m]);
    else turns[turns.length - 1].push(m);
  }
  return turns;
}

function textOf(m: ChatMessage): string {
  if (m.role === 'assistant') return m.content + (m.toolCalls ?? []).map((c) => `${c.name}(${c.arguments})`).join('\n');
  return m.content;
}

/** Hook output and hook context are constraints: trimmed before the task's own words. */
function kindOf(turn: ChatMessage[], index: number): ItemKind {
  const first = turn[0];
  if (index === 0) return 'criterion'; // the task's prompt: what "done" means
  if (first.role === 'user' && first.content.startsWith('<hook_output')) return 'constraint';
  return 'turn';
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
            const a = JSON.parse(c.arguments) as Record<string, unknown>;
            target = String(a.path ?? a.command ?? a.intent_id ?? '').slice(0, 120);
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
  const system = input.intentContext ? `${SYSTEM_PROMPT}\n\n${input.intentContext}` : SYSTEM_PROMPT;
  const prompt = { system, messages: input.conversation };
  const compactor = input.compactor;
  if (!compactor) return prompt;
  const budget = Math.max(input.provider.contextTokens - ANSWER_RESERVE, 1024);
  const turns = turnsOf(input.conversation);
  const [systemTokens, ...turnTokens] = compactor.count([system, ...turns.map((t) => t.map(textOf).join('\n'))], input.provider.model);
  const total = systemTokens + turnTokens.reduce((a, b) => a + b, 0);
  if (total <= budget) return prompt;
  const items: CompactionItem[] = [
    { kind: 'system', tokens: systemTokens, pinned: true },
    // The newest turn is what the model answers: never compacted.
    ...turns.map((t, i) => ({ kind: kindOf(t, i), tokens: turnTokens[i], pinned: i === turns.length - 1 })),
  ];
  let plan: CompactionPlan;
  try {
    plan = compactor.plan(items, budget);
  } catch {
    return prompt; // even the pinned part does not fit: the provider will say so
  }
  const actions = plan.actions.slice(1);
  const summarized = turns.filter((_, i) => actions[i] === 'summarize');
  const dropped = actions.filter((a) => a === 'drop').length;
  const summary = summarized.length ? summarize(summarized) : '';
  const proposal: Proposal = { before_tokens: total, after_tokens: plan.afterTokens, budget, dropped_turns: dropped, summarized_turns: summarized.length, summary };
  if (!(await input.onCompact(proposal))) return prompt;
  const messages: ChatMessage[] = [];
  let summaryPlaced = false;
  turns.forEach((t, i) => {
    if (actions[i] === 'keep') messages.push(...t);
    else if (actions[i] === 'summarize' && !summaryPlaced) {
      messages.push({ role: 'user', content: summary });
      summaryPlaced = true;
    }
  });
  // Compaction changes what the model sees, not the record: the conversation itself is kept whole.
  input.onCompacted({ beforeTokens: total, afterTokens: plan.afterTokens, dropped, summarized: summarized.length });
  return { system, messages };
}
