// A real Chat Completions server on 127.0.0.1 that replays a script, one step per request. It exists
// so that tests and the demo go through the same HTTP client as a real model (OpenAiProvider): the
// SSE framing, fragmented tool calls, and the failures (a malformed chunk, a dropped socket, a 500).
//
// It is strict about the conversation: a step's `expect` that does not hold, or a request after the
// last step, answers HTTP 400 saying so, so that a script that has gone off the rails fails loudly
// instead of replaying answers to questions nobody asked.
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { OpenAiProvider } from './openai';
import { parseScript, Script, ScriptStep } from './script';
import { wireError, WireChatRequest, WireMessage } from './wire';

export { loadScript, parseScript, ScriptError } from './script';
export type { Script, ScriptStep, ScriptToolCall } from './script';

export class ScriptedModelServer {
  /** Every request body received, parsed, in order (also those answered with an error). */
  readonly requests: WireChatRequest[] = [];
  private next = 0;

  private constructor(
    private readonly server: http.Server,
    readonly script: Script,
    /** `http://127.0.0.1:<port>/v1`. */
    readonly baseUrl: string,
  ) {}

  /** Validates the script (a typed one too: it may have been built by hand) and listens on a free port. */
  static async start(script: Script): Promise<ScriptedModelServer> {
    const valid = parseScript(script, 'script');
    const server = http.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const { port } = server.address() as AddressInfo;
    const scripted = new ScriptedModelServer(server, valid, `http://127.0.0.1:${port}/v1`);
    server.on('request', (req, res) => {
      scripted.handle(req, res).catch((e) => {
        if (!res.headersSent) sendJson(res, 500, wireError(`the scripted server failed: ${(e as Error).message}`, 'server_error'));
        else res.destroy();
      });
    });
    return scripted;
  }

  /** Steps not yet answered. */
  get remaining(): number {
    return Math.max(0, this.script.steps.length - this.next);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname.replace(/\/+$/, '');
    if (req.method === 'GET' && path === '/v1/models') {
      return sendJson(res, 200, { object: 'list', data: [{ id: this.script.model, object: 'model', created: 0, owned_by: 'scripted' }] });
    }
    if (req.method !== 'POST' || path !== '/v1/chat/completions') {
      return sendJson(res, 404, wireError(`the scripted server has no ${req.method} ${path}`, 'invalid_request_error'));
    }
    let body: WireChatRequest;
    try {
      body = JSON.parse(await readBody(req));
    } catch {
      return sendJson(res, 400, wireError('the request body is not JSON', 'invalid_request_error'));
    }
    if (typeof body !== 'object' || body === null || !Array.isArray(body.messages)) {
      return sendJson(res, 400, wireError('the request has no `messages` array', 'invalid_request_error'));
    }
    this.requests.push(body);

    const index = this.next++;
    const step = this.script.steps[index];
    if (!step) {
      return sendJson(
        res,
        400,
        wireError(`the script has no step ${index + 1} left (it has ${this.script.steps.length})`, 'invalid_request_error', 'script_exhausted'),
      );
    }
    const unmet = unmetExpectation(step, index, body.messages);
    if (unmet) return sendJson(res, 400, wireError(unmet, 'invalid_request_error', 'script_expectation_failed'));

    if (step.delayMs && !(await pause(step.delayMs, res))) return;
    if (step.fault === 'http500') {
      return sendJson(res, 500, wireError(`the scripted server failed on purpose at step ${index + 1}`, 'server_error'));
    }
    const answer = new Answer(step, index, this.script.model, body.messages);
    return body.stream ? answer.stream(res) : answer.whole(res);
  }
}

/** The wrapper the runtime can use like any provider; it owns its server. */
export class ScriptedProvider extends OpenAiProvider {
  override readonly kind: string = 'scripted';

  private constructor(readonly server: ScriptedModelServer) {
    super({ baseUrl: server.baseUrl, model: server.script.model, contextTokens: server.script.contextTokens });
  }

  static async start(script: Script): Promise<ScriptedProvider> {
    return new ScriptedProvider(await ScriptedModelServer.start(script));
  }

  close(): Promise<void> {
    return this.server.close();
  }
}

/** One step's answer, in either shape the protocol has. */
class Answer {
  private readonly calls: { id: string; name: string; arguments: string }[];
  private readonly id: string;

  constructor(
    private readonly step: ScriptStep,
    index: number,
    private readonly model: string,
    private readonly messages: WireMessage[],
  ) {
    this.id = `chatcmpl-scripted-${index + 1}`;
    this.calls = (step.toolCalls ?? []).map((c, i) => ({
      id: c.id ?? `call_${index + 1}_${i}`,
      name: c.name,
      arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments),
    }));
  }

  async stream(res: http.ServerResponse): Promise<void> {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    const body = this.bodyChunks().map((c) => JSON.stringify(c));
    const send = (data: string) => new Promise<void>((resolve) => res.write(`data: ${data}\n\n`, () => resolve()));
    if (this.step.fault === 'drop') {
      // Cut inside the last tool call's arguments when there is one: the case where a client that
      // yields what it has would run half a call.
      const cut = this.calls.length ? body.length - 1 : Math.ceil(body.length / 2);
      for (const data of body.slice(0, cut)) await send(data);
      res.socket?.destroy();
      return;
    }
    const half = Math.ceil(body.length / 2);
    for (const [i, data] of body.entries()) {
      if (i === half && this.step.fault === 'malformed') await send('{"choices": [{"index": 0, "delta": {"content": "cut');
      await send(data);
    }
    await send(JSON.stringify(this.chunk([{ index: 0, delta: {}, finish_reason: this.finishReason() }])));
    await send(JSON.stringify({ ...this.chunk([]), usage: this.usage() }));
    await send('[DONE]');
    res.end();
  }

  whole(res: http.ServerResponse): void {
    if (this.step.fault === 'drop') {
      res.socket?.destroy();
      return;
    }
    if (this.step.fault === 'malformed') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"choices": [{"index": 0, "message": ');
      return;
    }
    const message = {
      role: 'assistant',
      content: this.step.text ?? null,
      ...(this.calls.length ? { tool_calls: this.calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })) } : {}),
    };
    sendJson(res, 200, {
      id: this.id,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: this.model,
      choices: [{ index: 0, message, finish_reason: this.finishReason() }],
      usage: this.usage(),
    });
  }

  /** Everything before the finish: the role, the text in pieces, each call's head then its arguments in pieces. */
  private bodyChunks(): object[] {
    const chunks: object[] = [this.chunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }])];
    for (const piece of pieces(this.step.text ?? '', 4)) chunks.push(this.chunk([{ index: 0, delta: { content: piece }, finish_reason: null }]));
    this.calls.forEach((c, i) => {
      const head = { index: i, id: c.id, type: 'function', function: { name: c.name, arguments: '' } };
      chunks.push(this.chunk([{ index: 0, delta: { tool_calls: [head] }, finish_reason: null }]));
      for (const piece of pieces(c.arguments, 3)) {
        chunks.push(this.chunk([{ index: 0, delta: { tool_calls: [{ index: i, function: { arguments: piece } }] }, finish_reason: null }]));
      }
    });
    return chunks;
  }

  private chunk(choices: object[]): object {
    return { id: this.id, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: this.model, choices };
  }

  private finishReason(): string {
    return this.calls.length ? 'tool_calls' : 'stop';
  }

  /** Four characters a token, roughly: enough for the runtime's compaction to see the prompt grow. */
  private usage(): { prompt_tokens: number; completion_tokens: number; total_tokens: number } {
    const prompt = Math.ceil(JSON.stringify(this.messages).length / 4);
    const completion = Math.ceil(((this.step.text ?? '').length + this.calls.reduce((n, c) => n + c.name.length + c.arguments.length, 0)) / 4);
    return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  }
}

function unmetExpectation(step: ScriptStep, index: number, messages: WireMessage[]): string | undefined {
  const { lastMessageIncludes, anyMessageIncludes } = step.expect ?? {};
  if (lastMessageIncludes !== undefined) {
    const last = messages.at(-1);
    if (!last || !textOf(last).includes(lastMessageIncludes)) {
      const seen = last ? `the last message (${last.role}) was ${JSON.stringify(clip(textOf(last)))}` : 'there were no messages';
      return `step ${index + 1} expected the last message to include ${JSON.stringify(lastMessageIncludes)}, but ${seen}`;
    }
  }
  if (anyMessageIncludes !== undefined && !messages.some((m) => textOf(m).includes(anyMessageIncludes))) {
    return `step ${index + 1} expected a message to include ${JSON.stringify(anyMessageIncludes)}, but none of the ${messages.length} messages does`;
  }
  return undefined;
}

/** What a script can match in a message: its content and, for an assistant's calls, names and arguments. */
function textOf(m: WireMessage): string {
  const content = typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? '');
  const calls = m.role === 'assistant' && Array.isArray(m.tool_calls) ? m.tool_calls.map((c) => `${c.function?.name} ${c.function?.arguments}`) : [];
  return [content, ...calls].join('\n');
}

/** Splits into at most `n` non-empty pieces, on code points so that no piece ends in half a character. */
function pieces(text: string, n: number): string[] {
  const chars = Array.from(text);
  const size = Math.max(1, Math.ceil(chars.length / n));
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(''));
  return out;
}

function clip(s: string, max = 200): string {
  return s.length > max ? `${s.slice(0, max)}…` : s;
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** Waits, unless the client goes away first; says whether it is still there. */
function pause(ms: number, res: http.ServerResponse): Promise<boolean> {
  return new Promise((resolve) => {
    const onClose = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      res.off('close', onClose);
      resolve(true);
    }, ms);
    res.once('close', onClose);
  });
}

function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
