// The model provider over VS Code's Language Model API (Copilot and any extension contributing chat
// models). Thin on purpose: it imports `vscode`, so it cannot be unit-tested in plain Node; what it
// does is translate our messages into the API's parts and its errors into ModelError.
import * as vscode from 'vscode';
import { ChatChunk, ChatMessage, ChatRequest, ModelChoice, ModelError, ModelProvider, ToolCall } from '../runtime/types';

export class VsCodeLmProvider implements ModelProvider {
  readonly kind = 'vscode-lm';
  /** `vendor/id`, the form ModelChoice ids carry after `vscode-lm:`. */
  readonly model: string;
  readonly contextTokens: number;

  constructor(private readonly chatModel: vscode.LanguageModelChat) {
    this.model = `${chatModel.vendor}/${chatModel.id}`;
    this.contextTokens = chatModel.maxInputTokens;
  }

  /** The model named `vendor/id` (a ModelChoice id without its `vscode-lm:`), or undefined if it is gone. */
  static async select(model: string): Promise<VsCodeLmProvider | undefined> {
    const slash = model.indexOf('/');
    const selector = slash < 0 ? { id: model } : { vendor: model.slice(0, slash), id: model.slice(slash + 1) };
    const [found] = await vscode.lm.selectChatModels(selector);
    return found ? new VsCodeLmProvider(found) : undefined;
  }

  async *chat(request: ChatRequest): AsyncGenerator<ChatChunk> {
    const where = `VS Code language model ${this.model}`;
    const signal = request.signal;
    const cancellation = new vscode.CancellationTokenSource();
    const cancel = () => cancellation.cancel();
    signal?.addEventListener('abort', cancel, { once: true });
    const cancelled = () => new ModelError(`${where}: cancelled`, 'aborted');
    try {
      if (signal?.aborted) throw cancelled();
      const options: vscode.LanguageModelChatRequestOptions = {
        justification: 'Chokepoint runs an agent task you started.',
        ...(request.tools.length ? { tools: request.tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.parameters })) } : {}),
      };
      const calls: ToolCall[] = [];
      try {
        const response = await this.chatModel.sendRequest(toLmMessages(request.messages), options, cancellation.token);
        for await (const part of response.stream) {
          if (signal?.aborted) throw cancelled();
          if (part instanceof vscode.LanguageModelTextPart) {
            if (part.value) yield { type: 'text', text: part.value };
          } else if (part instanceof vscode.LanguageModelToolCallPart) {
            // The API hands over whole calls; they are held back until the stream ends, as the other
            // providers do, so that a stream that fails afterwards runs none of them.
            calls.push({ id: part.callId, name: part.name, arguments: JSON.stringify(part.input ?? {}) });
          }
        }
      } catch (e) {
        if (e instanceof ModelError) throw e;
        if (signal?.aborted) throw cancelled();
        if (e instanceof vscode.LanguageModelError) {
          // NoPermissions, Blocked, NotFound: the endpoint refused, which is what `http` means to the runtime.
          const known = ['NoPermissions', 'Blocked', 'NotFound'].includes(e.code);
          throw new ModelError(`${where}: ${e.code}: ${e.message}`, known ? 'http' : 'network');
        }
        throw new ModelError(`${where}: ${e instanceof Error ? e.message : String(e)}`, 'network');
      }
      if (signal?.aborted) throw cancelled();
      for (const call of calls) yield { type: 'toolCall', call };
      yield { type: 'done', finishReason: calls.length ? 'tool_calls' : 'stop' };
    } finally {
      signal?.removeEventListener('abort', cancel);
      cancellation.dispose();
    }
  }
}

/** The chat models VS Code offers, for the model picker, but those of `exceptVendor`. */
export async function listVsCodeModels(exceptVendor?: string): Promise<ModelChoice[]> {
  const models = (await vscode.lm.selectChatModels()).filter((m) => m.vendor !== exceptVendor);
  return models.map((m) => ({
    id: `vscode-lm:${m.vendor}/${m.id}`,
    label: m.name,
    detail: `${m.vendor} · ${m.family} · ${m.maxInputTokens} tokens`,
  }));
}

/**
 * Our conversation in the API's terms. The API has no system role, so the system prompt travels as the
 * first user message; consecutive tool results travel together in one user message, the shape the API
 * documents for answering an assistant message's calls.
 */
function toLmMessages(messages: ChatMessage[]): vscode.LanguageModelChatMessage[] {
  const out: vscode.LanguageModelChatMessage[] = [];
  let results: vscode.LanguageModelToolResultPart[] = [];
  const flush = () => {
    if (results.length) out.push(vscode.LanguageModelChatMessage.User(results));
    results = [];
  };
  for (const m of messages) {
    if (m.role === 'tool') {
      results.push(new vscode.LanguageModelToolResultPart(m.toolCallId, [new vscode.LanguageModelTextPart(m.content)]));
      continue;
    }
    flush();
    if (m.role === 'system' || m.role === 'user') {
      out.push(vscode.LanguageModelChatMessage.User(m.content));
    } else {
      const parts: (vscode.LanguageModelTextPart | vscode.LanguageModelToolCallPart)[] = [];
      if (m.content) parts.push(new vscode.LanguageModelTextPart(m.content));
      for (const c of m.toolCalls ?? []) parts.push(new vscode.LanguageModelToolCallPart(c.id, c.name, inputOf(c.arguments)));
      out.push(vscode.LanguageModelChatMessage.Assistant(parts.length ? parts : ''));
    }
  }
  flush();
  return out;
}

/**
 * A past call's arguments as the object the API wants. Arguments the model wrote as invalid JSON were
 * answered with a tool error, which the next message carries; `{}` keeps the call paired with it.
 * Also what chatModels.ts hands VS Code for a call our providers streamed (a script may send invalid
 * JSON on purpose).
 */
export function inputOf(args: string): object {
  try {
    const value: unknown = JSON.parse(args);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : {};
  } catch {
    return {};
  }
}
