// The model provider for any OpenAI-compatible Chat Completions endpoint: local servers (Ollama,
// llama.cpp, vLLM, LM Studio) and hosted ones. HTTP and failure reporting live here; the wire shapes in
// wire.ts, the SSE framing in sse.ts, the joining of streamed fragments in assembler.ts.
//
// Every failure is a ModelError whose message names the endpoint and what happened, because it is
// shown as is in the task's transcript. A tool call is yielded only once the answer is known to be
// whole (a finish_reason or `[DONE]` arrived): the runtime must never run half a call.
import { z } from 'zod';
import { ChatChunk, ChatRequest, ModelChoice, ModelError, ModelProvider } from '../types';
import { CompletionAssembler, ProtocolProblem } from './assembler';
import { readSse } from './sse';
import { errorMessageOf, toWireMessage, toWireTool, WireChatRequest } from './wire';

export interface OpenAiProviderOptions {
  /** Up to and including the version segment, e.g. `http://127.0.0.1:11434/v1`. */
  baseUrl: string;
  model: string;
  apiKey?: string;
  /** The model's context window; the server cannot be asked for it portably. */
  contextTokens?: number;
  headers?: Record<string, string>;
  /** How long the server may stay silent (before answering, or between two chunks) before we give up. */
  timeoutMs?: number;
}

/** Small on purpose: a wrong guess that is too small compacts early; one too large fails the request. */
export const DEFAULT_CONTEXT_TOKENS = 8192;
/** Measured from the last byte, not the start: a long answer that keeps streaming is not stuck, while a
 *  local server loading a model from disk can be silent for a minute before its first token. */
export const DEFAULT_TIMEOUT_MS = 120_000;

export class OpenAiProvider implements ModelProvider {
  readonly kind: string = 'openai';
  readonly model: string;
  readonly contextTokens: number;
  readonly baseUrl: string;
  private readonly apiKey?: string;
  private readonly headers: Record<string, string>;
  private readonly timeoutMs: number;

  constructor(options: OpenAiProviderOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.model = options.model;
    this.contextTokens = options.contextTokens ?? DEFAULT_CONTEXT_TOKENS;
    this.apiKey = options.apiKey;
    this.headers = options.headers ?? {};
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  async *chat(request: ChatRequest): AsyncGenerator<ChatChunk> {
    const url = `${this.baseUrl}/chat/completions`;
    const where = `POST ${url}`;
    const body: WireChatRequest = {
      model: request.model || this.model,
      messages: request.messages.map(toWireMessage),
      stream: true,
      // Without it OpenAI sends no usage when streaming; the runtime's compaction wants it.
      stream_options: { include_usage: true },
    };
    // An empty `tools` array is an error on some servers.
    if (request.tools.length) body.tools = request.tools.map(toWireTool);

    const exchange = new Exchange(where, request.signal, this.timeoutMs);
    try {
      let response: Response;
      try {
        response = await fetch(url, {
          method: 'POST',
          headers: this.requestHeaders({ 'content-type': 'application/json', accept: 'text/event-stream' }),
          body: JSON.stringify(body),
          signal: exchange.signal,
        });
      } catch (e) {
        throw exchange.failure(e, 'before');
      }
      if (!response.ok) throw await httpError(where, response, exchange);
      const assembler = new CompletionAssembler();

      // A server may ignore `stream: true` and answer in one piece; that is still a valid answer.
      if ((response.headers.get('content-type') ?? '').includes('application/json')) {
        const text = await readWhole(where, response, exchange, assembler);
        if (text) yield { type: 'text', text };
      } else {
        if (!response.body) throw new ModelError(`${where}: the answer has no body`, 'protocol');
        let complete = false;
        try {
          for await (const event of readSse(response.body, { signal: exchange.signal, onBytes: () => exchange.touch() })) {
            exchange.throwIfCancelled();
            if (event.data === '[DONE]') {
              complete = true;
              break;
            }
            const text = takeChunk(where, event.data, event.line, assembler);
            if (text) {
              // Time spent by the consumer between two chunks is not the server's silence.
              exchange.hold();
              yield { type: 'text', text };
              exchange.touch();
            }
          }
        } catch (e) {
          if (e instanceof ModelError) throw e;
          // After a finish_reason only the usage chunk and `[DONE]` can be missing: the answer is whole.
          if (!assembler.finishReason || exchange.cancelled || exchange.timedOut) throw cutShort(exchange.failure(e, 'during'), assembler);
        }
        exchange.throwIfCancelled();
        if (!complete && !assembler.finishReason) {
          throw cutShort(new ModelError(`${where}: the stream ended before the answer was complete (no finish_reason, no [DONE])`, 'network'), assembler);
        }
      }

      let calls;
      try {
        calls = assembler.toolCalls();
      } catch (e) {
        throw new ModelError(`${where}: ${(e as Error).message}`, 'protocol');
      }
      for (const call of calls) yield { type: 'toolCall', call };
      yield assembler.done();
    } finally {
      exchange.dispose();
    }
  }

  /**
   * The models the server offers, for the model picker. Servers that do not implement `GET /models`
   * (or answer it oddly) get the configured model as the only choice; an unreachable server throws.
   */
  async listModels(signal?: AbortSignal): Promise<ModelChoice[]> {
    const url = `${this.baseUrl}/models`;
    const exchange = new Exchange(`GET ${url}`, signal, this.timeoutMs);
    try {
      let response: Response;
      try {
        response = await fetch(url, { headers: this.requestHeaders({ accept: 'application/json' }), signal: exchange.signal });
      } catch (e) {
        throw exchange.failure(e, 'before');
      }
      const fallback = [this.choice(this.model)];
      if (!response.ok) return fallback;
      let body: unknown;
      try {
        body = await response.json();
      } catch {
        return fallback;
      }
      const list = ModelList.safeParse(body);
      if (!list.success) return fallback;
      // An entry without an id is skipped, not a reason to offer no list.
      const choices = list.data.data.flatMap((m) => {
        const model = ModelEntry.safeParse(m);
        return model.success ? [this.choice(model.data.id, model.data.owned_by)] : [];
      });
      return choices.length ? choices : fallback;
    } finally {
      exchange.dispose();
    }
  }

  private choice(model: string, owner?: string): ModelChoice {
    return { id: `${this.kind}:${model}`, label: model, detail: owner ? `${owner}, ${this.baseUrl}` : this.baseUrl };
  }

  private requestHeaders(base: Record<string, string>): Record<string, string> {
    return { ...base, ...(this.apiKey ? { authorization: `Bearer ${this.apiKey}` } : {}), ...this.headers };
  }
}

/** Says so when the answer broke while a call was arriving, so that nobody wonders whether it ran. */
function cutShort(error: ModelError, assembler: CompletionAssembler): ModelError {
  if (error.kind !== 'network' || !assembler.assemblingToolCall) return error;
  return new ModelError(`${error.message}; the tool call that was arriving was dropped, not run`, error.kind);
}

/** One chunk's JSON text into the assembler; returns its text. */
function takeChunk(where: string, data: string, line: number, assembler: CompletionAssembler): string {
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch {
    throw new ModelError(`${where}: line ${line} of the stream is not JSON: ${snippet(data)}`, 'protocol');
  }
  if (typeof json === 'object' && json !== null && 'error' in json && json.error) {
    throw new ModelError(`${where}: the server reported an error in the stream: ${snippet(errorMessageOf(json) ?? data, 500)}`, 'http');
  }
  try {
    return assembler.push(json);
  } catch (e) {
    if (e instanceof ProtocolProblem) throw new ModelError(`${where}: line ${line} of the stream: ${e.message}`, 'protocol');
    throw e;
  }
}

async function readWhole(where: string, response: Response, exchange: Exchange, assembler: CompletionAssembler): Promise<string> {
  let text: string;
  try {
    text = await response.text();
  } catch (e) {
    throw exchange.failure(e, 'during');
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ModelError(`${where}: the answer is not JSON: ${snippet(text)}`, 'protocol');
  }
  try {
    return assembler.pushCompletion(json);
  } catch (e) {
    if (e instanceof ProtocolProblem) throw new ModelError(`${where}: ${e.message}`, 'protocol');
    throw e;
  }
}

async function httpError(where: string, response: Response, exchange: Exchange): Promise<ModelError> {
  let detail = '';
  try {
    const text = await response.text();
    let message: string | undefined;
    try {
      message = errorMessageOf(JSON.parse(text));
    } catch {
      // Not JSON: an HTML error page or plain text; its start is still the best clue.
    }
    detail = snippet((message ?? text).trim(), 500);
  } catch (e) {
    if (exchange.cancelled) return exchange.failure(e, 'during');
  }
  const status = `${response.status}${response.statusText ? ` ${response.statusText}` : ''}`;
  return new ModelError(`${where} answered ${status}${detail ? `: ${detail}` : ''}`, 'http');
}

/**
 * The request's own AbortController, fired by the caller's signal or by the silence timer, and the
 * knowledge of which of the two fired: that is what tells `aborted` from a timeout.
 */
class Exchange {
  private readonly controller = new AbortController();
  private timer?: NodeJS.Timeout;
  timedOut = false;
  private readonly onAbort = () => this.controller.abort();

  constructor(
    private readonly where: string,
    private readonly outer: AbortSignal | undefined,
    private readonly timeoutMs: number,
  ) {
    if (outer?.aborted) this.controller.abort();
    else outer?.addEventListener('abort', this.onAbort, { once: true });
    this.touch();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get cancelled(): boolean {
    return this.outer?.aborted ?? false;
  }

  /** Restarts the silence timer: bytes arrived. */
  touch(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timedOut = true;
      this.controller.abort();
    }, this.timeoutMs);
    // A request the consumer abandoned must not keep the process alive on this timer alone.
    this.timer.unref();
  }

  /** Stops the silence timer until the next `touch`. */
  hold(): void {
    clearTimeout(this.timer);
  }

  throwIfCancelled(): void {
    if (this.cancelled) throw new ModelError(`${this.where}: cancelled`, 'aborted');
  }

  failure(e: unknown, phase: 'before' | 'during'): ModelError {
    if (e instanceof ModelError) return e;
    if (this.cancelled) return new ModelError(`${this.where}: cancelled`, 'aborted');
    const seconds = Math.round(this.timeoutMs / 100) / 10;
    if (this.timedOut || isTimeout(e)) {
      return new ModelError(
        phase === 'before' ? `${this.where}: no answer within ${seconds} s (timed out)` : `${this.where}: the answer stalled for ${seconds} s (timed out)`,
        'network',
      );
    }
    const cause = describeNetworkError(e);
    return new ModelError(
      phase === 'before' ? `${this.where}: ${cause}` : `${this.where}: the connection broke in the middle of the answer: ${cause}`,
      'network',
    );
  }

  /** Also aborts the request, which frees the connection when the consumer stopped reading early. */
  dispose(): void {
    clearTimeout(this.timer);
    this.outer?.removeEventListener('abort', this.onAbort);
    this.controller.abort();
  }
}

/** `GET /models`: `{ data: [{ id, owned_by }] }`. */
const ModelList = z.object({ data: z.array(z.unknown()) });
const ModelEntry = z.object({ id: z.string().min(1), owned_by: z.string().optional().catch(undefined) });

/** A Node (undici) error's code, on it or on its cause. */
const Coded = z.object({ code: z.string() });

function errorCode(e: unknown): string | undefined {
  const cause = e instanceof Error ? Coded.safeParse(e.cause) : undefined;
  if (cause?.success) return cause.data.code;
  const own = Coded.safeParse(e);
  return own.success ? own.data.code : undefined;
}

function isTimeout(e: unknown): boolean {
  const code = errorCode(e);
  return code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'ETIMEDOUT';
}

/** Node's fetch says only "fetch failed"; the reason is in `cause`. */
function describeNetworkError(e: unknown): string {
  switch (errorCode(e)) {
    case 'ECONNREFUSED':
      return 'connection refused (is the server running?)';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'host not found';
    case 'ECONNRESET':
      return 'connection reset by the server';
    case 'UND_ERR_SOCKET':
      return 'the server closed the connection';
    case 'UND_ERR_CONNECT_TIMEOUT':
      return 'could not connect (timed out)';
  }
  const cause = e instanceof Error ? e.cause : undefined;
  const message = cause instanceof Error ? cause.message : e instanceof Error ? e.message : String(e);
  return message.charAt(0).toLowerCase() + message.slice(1);
}

function snippet(text: string, max = 120): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
