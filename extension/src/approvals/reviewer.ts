// The reviewer: a configured model (any provider the runtime has) answers a Pending through the
// Pending's own tools, the ones the core generates from its kind's actions (`pendingTools`), so a
// model can do nothing a human could not. Its text is its reasoning, kept as the decision's note (or
// as a rejection's reason when it gives none). When its answer would be a rejection, or it does not
// decide, and `escalate_on` says so, the Pending goes to the human instead, the reasoning with it.
// Its tool calls are carried out by the broker (`executePendingTool`; an escalation is the broker's `escalatePending`). Imports
// no `vscode`.
import { JsonObject, ToolParameters } from '../runtime/json';
import type { ChatMessage, ModelProvider, ToolCall } from '../runtime/types';
import type { PendingContext, PendingDict } from './types';

export const REVIEWER_PROMPT = `You review an action an AI coding agent asked to take in a governed workspace.
Read what is pending, then decide by calling exactly one of the tools you are offered. Say in one or two
sentences why before you call it: your words are recorded with the decision and shown to the agent.
Reject with a concrete reason when the action is unsafe, outside what the task needs, or unclear.`;

/** Rounds of tool calls before the reviewer counts as undecided (an edit takes one, a decision one). */
const MAX_ROUNDS = 4;

export interface ReviewInput {
  provider: ModelProvider;
  pending: PendingDict;
  context: PendingContext;
  /** `reject`, `unsure`: what goes to the human instead. */
  escalateOn: string[];
  signal?: AbortSignal;
}

export interface ReviewOutcome {
  decided: boolean;
  /** Set when the Pending should go to the human: the reviewer's reasoning. */
  escalate?: string;
  reasoning: string;
}

export async function review(input: ReviewInput): Promise<ReviewOutcome> {
  const { provider, context } = input;
  const tools = context.tools();
  const messages: ChatMessage[] = [
    { role: 'system', content: REVIEWER_PROMPT },
    { role: 'user', content: context.describe() },
  ];
  let reasoning = '';
  const unsure = (why: string): ReviewOutcome =>
    input.escalateOn.includes('unsure') ? { decided: false, escalate: reasoning.trim() || why, reasoning } : { decided: false, reasoning };
  for (let round = 0; round < MAX_ROUNDS; round++) {
    let text = '';
    const calls: ToolCall[] = [];
    for await (const chunk of provider.chat({ model: provider.model, messages, tools, signal: input.signal })) {
      if (chunk.type === 'text') text += chunk.text;
      else if (chunk.type === 'toolCall') calls.push(chunk.call);
    }
    if (text.trim()) reasoning = reasoning ? `${reasoning}\n${text.trim()}` : text.trim();
    if (calls.length === 0) return unsure('the reviewer did not decide');
    messages.push({ role: 'assistant', content: text, toolCalls: calls });
    for (const call of calls) {
      let args: Record<string, unknown>;
      try {
        args = JsonObject.safeParse(JSON.parse(call.arguments || '{}')).data ?? {};
      } catch {
        messages.push({ role: 'tool', toolCallId: call.id, name: call.name, content: 'the arguments are not a JSON object' });
        continue;
      }
      if (call.name === 'reject' && input.escalateOn.includes('reject')) {
        const why = typeof args.reason === 'string' && args.reason ? args.reason : '';
        return { decided: false, escalate: [reasoning, why && `would reject: ${why}`].filter(Boolean).join('\n') || 'the reviewer would reject it', reasoning };
      }
      // The reasoning travels with the decision, in the field the action's schema has for it.
      const props = ToolParameters.safeParse(tools.find((t) => t.name === call.name)?.parameters).data?.properties ?? {};
      if (reasoning && 'note' in props && args.note === undefined) args.note = reasoning;
      if (reasoning && 'reason' in props && (args.reason === undefined || args.reason === '')) args.reason = reasoning;
      let result: string;
      try {
        const r = context.execute(call.name, args);
        if (r.effect === 'decided') return { decided: true, reasoning };
        result = r.text;
      } catch (e) {
        // A refusal (an action the kind does not have, a missing argument) is told to the model.
        result = `refused: ${(e as Error).message}`;
      }
      messages.push({ role: 'tool', toolCallId: call.id, name: call.name, content: result });
    }
  }
  return unsure(`the reviewer did not decide within ${MAX_ROUNDS} rounds`);
}
