// Chokepoint's models in VS Code's own Chat: a language model chat provider (vendor `chokepoint`)
// that offers the scripted models (the demo for VS Code's agent, and the script files of the setting
// `chokepoint.chat.scripts`) and the OpenAI-compatible endpoint of the settings. VS Code's agent then
// runs on them with no sign-in, so the demo runs in VS Code's Chat too, and the tests drive VS Code's
// agent with a script, as they drive ours.
//
// Thin on purpose: a request is translated into our conversation (runtime/types.ts) and sent through
// the same providers our agent uses (the scripted server is a real Chat Completions server on
// loopback), and what streams back is translated into VS Code's response parts. A scripted model starts its script over when a
// request carries no answer of its yet (a new chat).
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { parseScript, type Script } from '../runtime/providers/script';
import { ScriptedProvider } from '../runtime/providers/scripted';
import { JsonObject } from '../runtime/json';
import type { ChatMessage, ModelProvider, ToolDefinition } from '../runtime/types';
import type { Log } from '../host/log';
import { inputOf } from './vscodeLm';
import { vscodeDemoScript } from './chatDemo';

/** The vendor VS Code knows our models by (package.json `languageModelChatProviders`). */
export const VENDOR = 'chokepoint';

/** Where a model's answers come from. */
type Source = { kind: 'script'; file?: string } | { kind: 'openai'; model: string };

interface ChatModel extends vscode.LanguageModelChatInformation {
  readonly source: Source;
}

/** A scripted model's server and how far its conversation went. */
interface Running {
  provider: ModelProvider & { close?: () => Promise<void> };
  /** The assistant turns of the conversation it serves (a new conversation starts the script over). */
  answered: number;
}

export class ChatModels implements vscode.LanguageModelChatProvider<ChatModel>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeLanguageModelChatInformation = this.changed.event;
  private readonly running = new Map<string, Running>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly log: Log,
    /** The OpenAI-compatible endpoint's provider, built from the settings and the stored key (agent.ts). */
    private readonly openai: (model: string) => Promise<ModelProvider>,
    /** The core's token counter (the binding's `countTokensAsync`), when the native engine loaded. */
    private readonly count?: (texts: string[], model: string) => Promise<number[]>,
  ) {
    this.disposables.push(
      this.changed,
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('chokepoint.chat') || e.affectsConfiguration('chokepoint.openai')) {
          void this.restartAll();
          this.changed.fire();
        }
      }),
    );
  }

  /** Registers the provider; VS Code asks for the models once told they changed. */
  register(): vscode.Disposable {
    const registration = vscode.lm.registerLanguageModelChatProvider(VENDOR, this);
    // Without this event after registering, the model picker never asks for the models.
    setTimeout(() => this.changed.fire(), 0);
    return registration;
  }

  provideLanguageModelChatInformation(): ChatModel[] {
    const models: ChatModel[] = [
      model('demo', 'Chokepoint demo (scripted)', 'replays the demo for VS Code\u2019s agent from a loopback server', { kind: 'script' }),
    ];
    const root = workspaceRoot();
    for (const file of vscode.workspace.getConfiguration('chokepoint.chat').get<string[]>('scripts', [])) {
      const absolute = root && !path.isAbsolute(file) ? path.join(root, file) : file;
      models.push(model(`script:${absolute}`, `Scripted: ${path.basename(file)}`, absolute, { kind: 'script', file: absolute }));
    }
    const openai = vscode.workspace.getConfiguration('chokepoint.openai');
    const name = openai.get<string>('model', '');
    if (name) {
      models.push(
        model(`openai:${name}`, name, openai.get<string>('baseUrl', ''), { kind: 'openai', model: name }, openai.get<number>('contextTokens', 128_000)),
      );
    }
    return models;
  }

  async provideLanguageModelChatResponse(
    chatModel: ChatModel,
    messages: readonly vscode.LanguageModelChatRequestMessage[],
    options: vscode.ProvideLanguageModelChatResponseOptions,
    progress: vscode.Progress<vscode.LanguageModelResponsePart>,
    token: vscode.CancellationToken,
  ): Promise<void> {
    const conversation = toChatMessages(messages);
    const provider = await this.providerFor(chatModel, conversation);
    const abort = new AbortController();
    const cancel = token.onCancellationRequested(() => abort.abort());
    const tools: ToolDefinition[] = (options.tools ?? []).map((t) => ({
      name: t.name,
      description: t.description,
      parameters: JsonObject.safeParse(t.inputSchema).data ?? { type: 'object', properties: {} },
    }));
    try {
      for await (const chunk of provider.chat({ model: provider.model, messages: conversation, tools, signal: abort.signal })) {
        if (chunk.type === 'text') progress.report(new vscode.LanguageModelTextPart(chunk.text));
        else if (chunk.type === 'toolCall')
          progress.report(new vscode.LanguageModelToolCallPart(chunk.call.id, chunk.call.name, inputOf(chunk.call.arguments)));
      }
    } catch (e) {
      this.log.error(`Chokepoint chat model ${chatModel.id}: ${(e as Error).message}`);
      throw e;
    } finally {
      cancel.dispose();
    }
  }

  async provideTokenCount(model: ChatModel, text: string | vscode.LanguageModelChatRequestMessage): Promise<number> {
    // VS Code fits its prompt to the window with these counts: counted by the core's tokenizer for
    // the model's family (the endpoint's model; a scripted model counts as the core's default).
    const flat =
      typeof text === 'string'
        ? text
        : text.content.map((part) => (part instanceof vscode.LanguageModelTextPart ? part.value : JSON.stringify(part))).join('\n');
    if (this.count) {
      try {
        const [tokens] = await this.count([flat], model.source.kind === 'openai' ? model.source.model : model.id);
        if (typeof tokens === 'number') return tokens;
      } catch (e) {
        this.log.warn(`counting tokens for ${model.id} failed, estimating instead: ${(e as Error).message}`);
      }
    }
    // Without the engine: an estimate that errs high (three characters a token; code runs shorter
    // than English's four), which only trims the prompt early.
    return Math.ceil(flat.length / 3);
  }

  /** The model's provider: the endpoint's, or a scripted server started for this conversation. */
  private async providerFor(chatModel: ChatModel, conversation: ChatMessage[]): Promise<ModelProvider> {
    const source = chatModel.source;
    if (source.kind === 'openai') return this.openai(source.model);
    // A script replays one conversation: a request that carries no answer of ours yet is a new one.
    const answered = conversation.filter((m) => m.role === 'assistant').length;
    const current = this.running.get(chatModel.id);
    if (current && answered > 0 && answered >= current.answered) {
      current.answered = answered + 1;
      return current.provider;
    }
    if (current) {
      this.running.delete(chatModel.id);
      await current.provider.close?.();
    }
    const provider = await ScriptedProvider.start(await loadChatScript(source.file));
    this.running.set(chatModel.id, { provider, answered: answered + 1 });
    this.log.info(`Chokepoint chat model ${chatModel.name}: a new conversation, the script starts over`);
    return provider;
  }

  private async restartAll(): Promise<void> {
    const all = [...this.running.values()];
    this.running.clear();
    await Promise.all(all.map((r) => r.provider.close?.()));
  }

  dispose(): void {
    void this.restartAll();
    for (const d of this.disposables) d.dispose();
  }
}

function model(id: string, name: string, detail: string, source: Source, maxInputTokens = 128_000): ChatModel {
  return {
    id,
    name,
    family: source.kind === 'openai' ? 'openai-compatible' : 'chokepoint-scripted',
    version: '1',
    detail,
    tooltip: detail,
    maxInputTokens,
    maxOutputTokens: 16_000,
    capabilities: { toolCalling: true, imageInput: false },
    source,
  };
}

function workspaceRoot(): string | undefined {
  return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
}

/**
 * A script for VS Code's agent: the demo, or a file. Its text may say `${workspaceFolder}`: VS Code's
 * tools take absolute paths, which a script written once cannot know.
 */
async function loadChatScript(file: string | undefined): Promise<Script> {
  const root = workspaceRoot() ?? '';
  if (!file) return vscodeDemoScript(root);
  let text: string;
  try {
    text = await fs.promises.readFile(file, 'utf8');
  } catch (e) {
    throw new Error(`${file}: cannot read the script: ${(e as Error).message}`);
  }
  return parseScript(text.split('${workspaceFolder}').join(JSON.stringify(root).slice(1, -1)), file);
}

/**
 * VS Code's conversation in ours. Tool results travel in user messages in VS Code's shape; ours has a
 * `tool` message per result, named after its call.
 */
export function toChatMessages(messages: readonly vscode.LanguageModelChatRequestMessage[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  const names = new Map<string, string>();
  for (const m of messages) {
    let text = '';
    const calls: { id: string; name: string; arguments: string }[] = [];
    const results: ChatMessage[] = [];
    for (const part of m.content) {
      if (part instanceof vscode.LanguageModelTextPart) text += part.value;
      else if (part instanceof vscode.LanguageModelToolCallPart) {
        names.set(part.callId, part.name);
        calls.push({ id: part.callId, name: part.name, arguments: JSON.stringify(part.input ?? {}) });
      } else if (part instanceof vscode.LanguageModelToolResultPart) {
        results.push({ role: 'tool', toolCallId: part.callId, name: names.get(part.callId) ?? '', content: resultText(part.content) });
      }
    }
    if (m.role === vscode.LanguageModelChatMessageRole.Assistant) {
      out.push({ role: 'assistant', content: text, ...(calls.length ? { toolCalls: calls } : {}) });
      continue;
    }
    out.push(...results);
    // The System role is newer than the API this extension is built against (VS Code sends the
    // system prompt with it); any other role is the user's.
    if (text) out.push({ role: (m.role as number) === 3 ? 'system' : 'user', content: text });
  }
  return out;
}

function resultText(content: readonly unknown[]): string {
  return content
    .map((c) => (c instanceof vscode.LanguageModelTextPart ? c.value : c instanceof vscode.LanguageModelPromptTsxPart ? JSON.stringify(c.value) : ''))
    .join('');
}
