// Turns the wire chunks of one answer into our ChatChunks: text passes through as it arrives, tool-call
// fragments are joined by index and released only when the answer is known to be whole. A chunk that
// does not have the Chat Completions shape is a `ProtocolProblem`; the provider adds where it was.
import type { ChatChunk, ToolCall } from '../types';
import type { WireCompletion, WireStreamChunk, WireToolCallDelta, WireUsage } from './wire';

export class ProtocolProblem extends Error {}

interface PartialCall {
  id?: string;
  name: string;
  arguments: string;
}

export class CompletionAssembler {
  private readonly calls = new Map<number, PartialCall>();
  finishReason?: string;
  private usage?: { promptTokens: number; completionTokens: number };

  /** Whether a tool call has started arriving (and would be cut if the answer ended now). */
  get assemblingToolCall(): boolean {
    return this.calls.size > 0;
  }

  /** Takes one streamed chunk; returns the text it carries, to be yielded at once. */
  push(chunk: unknown): string {
    if (typeof chunk !== 'object' || chunk === null || Array.isArray(chunk)) throw new ProtocolProblem('the chunk is not a JSON object');
    const { choices, usage } = chunk as WireStreamChunk;
    this.takeUsage(usage);
    if (choices === undefined || choices === null) return '';
    if (!Array.isArray(choices)) throw new ProtocolProblem('`choices` is not an array');
    let text = '';
    // Only the first choice is ours: we never ask for `n` > 1.
    const choice = choices.find((c) => (c?.index ?? 0) === 0);
    if (!choice) return '';
    const delta = choice.delta ?? {};
    if (typeof delta !== 'object') throw new ProtocolProblem('`delta` is not an object');
    if (delta.content !== undefined && delta.content !== null) {
      if (typeof delta.content !== 'string') throw new ProtocolProblem('`delta.content` is not a string');
      text = delta.content;
    }
    if (delta.tool_calls !== undefined && delta.tool_calls !== null) {
      if (!Array.isArray(delta.tool_calls)) throw new ProtocolProblem('`delta.tool_calls` is not an array');
      delta.tool_calls.forEach((d, position) => this.takeToolCallDelta(d, position));
    }
    if (typeof choice.finish_reason === 'string') this.finishReason = choice.finish_reason;
    return text;
  }

  /** Takes a whole answer (a server that did not stream); returns its text. */
  pushCompletion(body: unknown): string {
    if (typeof body !== 'object' || body === null) throw new ProtocolProblem('the answer is not a JSON object');
    const { choices, usage } = body as WireCompletion;
    this.takeUsage(usage);
    if (!Array.isArray(choices) || !choices.length) throw new ProtocolProblem('the answer has no `choices`');
    const message = choices[0]?.message;
    if (typeof message !== 'object' || message === null) throw new ProtocolProblem('the answer has no `message`');
    if (message.content !== undefined && message.content !== null && typeof message.content !== 'string') {
      throw new ProtocolProblem('`message.content` is not a string');
    }
    if (message.tool_calls !== undefined && message.tool_calls !== null) {
      if (!Array.isArray(message.tool_calls)) throw new ProtocolProblem('`message.tool_calls` is not an array');
      message.tool_calls.forEach((c, position) => this.takeToolCallDelta({ ...c, index: position }, position));
    }
    this.finishReason = choices[0].finish_reason ?? 'stop';
    return message.content ?? '';
  }

  /** The assembled calls, in index order. Call only once the answer is whole. */
  toolCalls(): ToolCall[] {
    return [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, c]) => {
        if (!c.name) throw new ProtocolProblem(`tool call ${index} has no function name`);
        // Servers that omit ids exist (some local ones); the runtime needs one to pair the result.
        // An empty argument string is how some servers call a tool without parameters.
        return { id: c.id || `call_${index}`, name: c.name, arguments: c.arguments === '' ? '{}' : c.arguments };
      });
  }

  done(): ChatChunk {
    const finishReason = this.finishReason ?? (this.calls.size ? 'tool_calls' : 'stop');
    return this.usage ? { type: 'done', finishReason, usage: this.usage } : { type: 'done', finishReason };
  }

  private takeToolCallDelta(d: WireToolCallDelta, position: number): void {
    if (typeof d !== 'object' || d === null) throw new ProtocolProblem('a tool call delta is not an object');
    // Servers that send each call whole leave `index` out; its position in the array stands in for it.
    const index = typeof d.index === 'number' ? d.index : position;
    const call = this.calls.get(index) ?? { name: '', arguments: '' };
    if (typeof d.id === 'string' && d.id && !call.id) call.id = d.id;
    const fn = d.function;
    if (fn !== undefined && fn !== null) {
      if (typeof fn !== 'object') throw new ProtocolProblem(`tool call ${index}: \`function\` is not an object`);
      // The name comes whole in the first fragment; some servers repeat it in later ones.
      if (typeof fn.name === 'string' && fn.name && !call.name) call.name = fn.name;
      if (fn.arguments !== undefined && fn.arguments !== null) {
        // A few servers send the arguments as an object rather than as JSON text.
        call.arguments += typeof fn.arguments === 'string' ? fn.arguments : JSON.stringify(fn.arguments);
      }
    }
    this.calls.set(index, call);
  }

  private takeUsage(usage: WireUsage | null | undefined): void {
    if (usage && typeof usage.prompt_tokens === 'number' && typeof usage.completion_tokens === 'number') {
      this.usage = { promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens };
    }
  }
}
