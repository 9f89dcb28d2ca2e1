// The model providers' HTTP path, against a real ScriptedModelServer on 127.0.0.1: streaming, tool-call
// assembly, the wire shape the server receives, and every failure the runtime must be told apart.
import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { CompletionAssembler } from '../../extension/src/runtime/providers/assembler';
import { OpenAiProvider } from '../../extension/src/runtime/providers/openai';
import { parseScript, Script, ScriptedModelServer, ScriptedProvider } from '../../extension/src/runtime/providers/scripted';
import { ChatChunk, ChatMessage, ChatRequest, ModelError, ToolDefinition } from '../../extension/src/runtime/types';

const READ_FILE: ToolDefinition = {
  name: 'read_file',
  description: 'Reads a file of the workspace.',
  parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
};

function request(messages: ChatMessage[], extra: Partial<ChatRequest> = {}): ChatRequest {
  return { model: 'demo', messages, tools: [READ_FILE], ...extra };
}

const ask = (text: string) => request([{ role: 'user', content: text }]);

/** Runs `body` against a fresh server and closes it whatever happens. */
async function withServer<T>(script: Script, body: (server: ScriptedModelServer, provider: OpenAiProvider) => Promise<T>): Promise<T> {
  const server = await ScriptedModelServer.start(script);
  try {
    return await body(server, new OpenAiProvider({ baseUrl: server.baseUrl, model: script.model }));
  } finally {
    await server.close();
  }
}

async function collect(iterable: AsyncIterable<ChatChunk>): Promise<ChatChunk[]> {
  const chunks: ChatChunk[] = [];
  for await (const c of iterable) chunks.push(c);
  return chunks;
}

/** The ModelError a chat ends with, and what was yielded before it. */
async function failure(iterable: AsyncIterable<ChatChunk>): Promise<{ error: ModelError; chunks: ChatChunk[] }> {
  const chunks: ChatChunk[] = [];
  try {
    for await (const c of iterable) chunks.push(c);
  } catch (error) {
    assert.ok(error instanceof ModelError, `expected a ModelError, got ${String(error)}`);
    return { error, chunks };
  }
  assert.fail(`expected a ModelError; the chat ended with ${JSON.stringify(chunks.at(-1))}`);
}

const texts = (chunks: ChatChunk[]) => chunks.flatMap((c) => (c.type === 'text' ? [c.text] : []));
const calls = (chunks: ChatChunk[]) => chunks.flatMap((c) => (c.type === 'toolCall' ? [c.call] : []));

test('text streams in several chunks, in order, then one done with usage', async () => {
  const text = 'The quick brown fox jumps over the lazy dog.';
  await withServer({ model: 'demo', steps: [{ text }] }, async (_server, provider) => {
    const chunks = await collect(provider.chat(ask('hi')));
    assert.ok(texts(chunks).length >= 2, `expected several text chunks, got ${JSON.stringify(texts(chunks))}`);
    assert.equal(texts(chunks).join(''), text);
    const done = chunks.at(-1);
    assert.equal(done?.type, 'done');
    assert.equal(chunks.filter((c) => c.type === 'done').length, 1);
    if (done?.type !== 'done') return;
    assert.equal(done.finishReason, 'stop');
    assert.ok(done.usage && done.usage.promptTokens > 0 && done.usage.completionTokens > 0, JSON.stringify(done.usage));
  });
});

test('the server streams tool-call arguments in fragments', async () => {
  // The client test below is only meaningful if the arguments really arrive in pieces.
  await withServer({ model: 'demo', steps: [{ toolCalls: [{ name: 'read_file', arguments: { path: 'src/a.ts' } }] }] }, async (server) => {
    const response = await fetch(`${server.baseUrl}/chat/completions`, { method: 'POST', body: JSON.stringify({ model: 'demo', messages: [], stream: true }) });
    assert.match(response.headers.get('content-type') ?? '', /text\/event-stream/);
    const events = (await response.text()).split('\n\n').filter(Boolean);
    const fragments = events.filter((e) => e.includes('"arguments"') && !e.includes('"name"'));
    assert.ok(fragments.length >= 2, `expected fragmented arguments, got:\n${events.join('\n')}`);
    assert.equal(events.at(-1), 'data: [DONE]');
  });
});

test('a tool call whose arguments arrive in fragments is yielded whole, after the text', async () => {
  const script: Script = {
    model: 'demo',
    steps: [
      {
        text: 'Let me look.',
        toolCalls: [
          { name: 'read_file', arguments: { path: 'src/über/a.ts' }, id: 'call_a' },
          { name: 'read_file', arguments: '{"path": "b.ts"' },
        ],
      },
    ],
  };
  await withServer(script, async (_server, provider) => {
    const chunks = await collect(provider.chat(ask('read a.ts and b.ts')));
    assert.deepEqual(
      chunks.map((c) => c.type),
      [...texts(chunks).map(() => 'text'), 'toolCall', 'toolCall', 'done'],
    );
    assert.equal(texts(chunks).join(''), 'Let me look.');
    assert.deepEqual(calls(chunks), [
      { id: 'call_a', name: 'read_file', arguments: '{"path":"src/über/a.ts"}' },
      // A string is sent as is, invalid JSON included: validating it is the runtime's job.
      { id: 'call_1_1', name: 'read_file', arguments: '{"path": "b.ts"' },
    ]);
    const done = chunks.at(-1);
    assert.equal(done?.type === 'done' && done.finishReason, 'tool_calls');
  });
});

test('our message shape reaches the server in the wire shape', async () => {
  const messages: ChatMessage[] = [
    { role: 'system', content: 'You are careful.' },
    { role: 'user', content: 'read a.ts' },
    { role: 'assistant', content: '', toolCalls: [{ id: 'call_1', name: 'read_file', arguments: '{"path":"a.ts"}' }] },
    { role: 'tool', toolCallId: 'call_1', name: 'read_file', content: 'error: a.ts does not exist' },
    { role: 'assistant', content: 'It does not exist.' },
  ];
  await withServer({ model: 'demo', steps: [{ text: 'ok' }] }, async (server, provider) => {
    await collect(provider.chat(request(messages)));
    assert.equal(server.requests.length, 1);
    const sent = server.requests[0];
    assert.equal(sent.model, 'demo');
    assert.equal(sent.stream, true);
    assert.deepEqual(sent.messages, [
      { role: 'system', content: 'You are careful.' },
      { role: 'user', content: 'read a.ts' },
      { role: 'assistant', content: '', tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.ts"}' } }] },
      { role: 'tool', tool_call_id: 'call_1', name: 'read_file', content: 'error: a.ts does not exist' },
      { role: 'assistant', content: 'It does not exist.' },
    ]);
    assert.deepEqual(sent.tools, [
      { type: 'function', function: { name: READ_FILE.name, description: READ_FILE.description, parameters: READ_FILE.parameters } },
    ]);
  });
});

test('no tools: the request carries no `tools` array', async () => {
  await withServer({ model: 'demo', steps: [{ text: 'ok' }] }, async (server, provider) => {
    await collect(provider.chat(request([{ role: 'user', content: 'hi' }], { tools: [] })));
    assert.equal('tools' in server.requests[0], false);
  });
});

test('a two-turn script sees the tool error of the first turn in the second request', async () => {
  const script: Script = {
    model: 'demo',
    steps: [
      { toolCalls: [{ name: 'read_file', arguments: { path: 'missing.ts' } }] },
      { text: 'The file is missing.', expect: { lastMessageIncludes: 'does not exist', anyMessageIncludes: 'read missing.ts' } },
    ],
  };
  await withServer(script, async (server, provider) => {
    const messages: ChatMessage[] = [{ role: 'user', content: 'read missing.ts' }];
    const first = calls(await collect(provider.chat(request(messages))));
    assert.equal(first.length, 1);
    assert.equal(server.remaining, 1);
    messages.push({ role: 'assistant', content: '', toolCalls: first });
    messages.push({ role: 'tool', toolCallId: first[0].id, name: first[0].name, content: 'error: missing.ts does not exist' });
    const second = await collect(provider.chat(request(messages)));
    assert.equal(texts(second).join(''), 'The file is missing.');
    assert.equal(server.remaining, 0);
    assert.equal(server.requests[1].messages.at(-1)?.content, 'error: missing.ts does not exist');
  });
});

test('a malformed chunk is a protocol error naming the line', async () => {
  await withServer({ model: 'demo', steps: [{ text: 'Some text here', fault: 'malformed' }] }, async (server, provider) => {
    const { error, chunks } = await failure(provider.chat(ask('hi')));
    assert.equal(error.kind, 'protocol');
    assert.match(error.message, new RegExp(`^POST ${server.baseUrl}/chat/completions: line \\d+ of the stream is not JSON: \\{"choices"`));
    assert.equal(
      chunks.some((c) => c.type === 'done'),
      false,
    );
  });
});

test('a connection dropped in the middle of a tool call is a network error and yields no tool call', async () => {
  const script: Script = {
    model: 'demo',
    steps: [{ text: 'Writing.', toolCalls: [{ name: 'write_file', arguments: { path: 'a.ts', content: 'x'.repeat(60) } }], fault: 'drop' }],
  };
  await withServer(script, async (server, provider) => {
    const { error, chunks } = await failure(provider.chat(ask('write')));
    assert.equal(error.kind, 'network');
    assert.ok(error.message.startsWith(`POST ${server.baseUrl}/chat/completions: `), error.message);
    assert.deepEqual(calls(chunks), [], 'a partial tool call was yielded');
    assert.equal(
      chunks.some((c) => c.type === 'done'),
      false,
    );
    assert.match(error.message, /in the middle of the answer.*; the tool call that was arriving was dropped, not run$/);
  });
});

test('a stream that ends cleanly but early, inside a tool call, is a network error and yields no tool call', async () => {
  await withRawServer(
    (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"choices":[{"index":0,"delta":{"content":"Writing."}}]}\n\n');
      res.write(
        'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"write_file","arguments":"{\\"path\\": "}}]}}]}\n\n',
      );
      res.end();
    },
    async (baseUrl) => {
      const { error, chunks } = await failure(new OpenAiProvider({ baseUrl, model: 'm' }).chat(ask('write')));
      assert.equal(error.kind, 'network');
      assert.equal(
        error.message,
        `POST ${baseUrl}/chat/completions: the stream ended before the answer was complete (no finish_reason, no [DONE]); the tool call that was arriving was dropped, not run`,
      );
      assert.deepEqual(chunks, [{ type: 'text', text: 'Writing.' }]);
    },
  );
});

test('a connection dropped in the middle of text is a network error', async () => {
  await withServer({ model: 'demo', steps: [{ text: 'A long enough answer to cut.', fault: 'drop' }] }, async (_server, provider) => {
    const { error, chunks } = await failure(provider.chat(ask('hi')));
    assert.equal(error.kind, 'network');
    assert.ok(texts(chunks).join('').length < 'A long enough answer to cut.'.length);
  });
});

test('an HTTP 500 is an http error with the status and the body message', async () => {
  await withServer({ model: 'demo', steps: [{ fault: 'http500' }] }, async (server, provider) => {
    const { error, chunks } = await failure(provider.chat(ask('hi')));
    assert.equal(error.kind, 'http');
    assert.equal(error.message, `POST ${server.baseUrl}/chat/completions answered 500 Internal Server Error: the scripted server failed on purpose at step 1`);
    assert.deepEqual(chunks, []);
  });
});

test('aborting before the answer starts is kind aborted, and quick', async () => {
  await withServer({ model: 'demo', steps: [{ text: 'late', delayMs: 5000 }] }, async (_server, provider) => {
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(), 50);
    const { error } = await failure(provider.chat(request([{ role: 'user', content: 'hi' }], { signal: controller.signal })));
    assert.equal(error.kind, 'aborted');
    assert.match(error.message, /: cancelled$/);
    assert.ok(Date.now() - started < 2000, 'the abort did not end the request');
  });
});

test('aborting in the middle of the stream is kind aborted and stops the chunks', async () => {
  await withServer(
    { model: 'demo', steps: [{ text: 'one two three four five six seven eight', toolCalls: [{ name: 'read_file', arguments: { path: 'a' } }] }] },
    async (_server, provider) => {
      const controller = new AbortController();
      const chunks: ChatChunk[] = [];
      await assert.rejects(
        (async () => {
          for await (const c of provider.chat(request([{ role: 'user', content: 'hi' }], { signal: controller.signal }))) {
            chunks.push(c);
            controller.abort();
          }
        })(),
        (e) => e instanceof ModelError && e.kind === 'aborted',
      );
      assert.equal(chunks.length, 1);
    },
  );
});

test('aborting while the consumer is busy, after the whole body arrived, still ends the chat', { timeout: 10_000 }, async () => {
  // The case where Node's fetch leaves the body stream pending forever after an abort (see sse.ts).
  await withRawServer(
    async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'one' } }] })}\n\n`);
      await new Promise((r) => setTimeout(r, 30));
      res.end(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'two' }, finish_reason: 'stop' }] })}\n\ndata: [DONE]\n\n`);
    },
    async (baseUrl) => {
      const controller = new AbortController();
      const chunks: ChatChunk[] = [];
      await assert.rejects(
        (async () => {
          for await (const c of new OpenAiProvider({ baseUrl, model: 'm' }).chat(request([{ role: 'user', content: 'hi' }], { signal: controller.signal }))) {
            chunks.push(c);
            await new Promise((r) => setTimeout(r, 200));
            controller.abort();
          }
        })(),
        (e) => e instanceof ModelError && e.kind === 'aborted',
      );
      assert.deepEqual(texts(chunks), ['one']);
    },
  );
});

test('an already aborted signal fails at once', async () => {
  await withServer({ model: 'demo', steps: [{ text: 'never' }] }, async (server, provider) => {
    const { error } = await failure(provider.chat(request([{ role: 'user', content: 'hi' }], { signal: AbortSignal.abort() })));
    assert.equal(error.kind, 'aborted');
    assert.equal(server.requests.length, 0);
  });
});

test('a silent server times out as a network error', async () => {
  await withServer({ model: 'demo', steps: [{ text: 'late', delayMs: 3000 }] }, async (server) => {
    const provider = new OpenAiProvider({ baseUrl: server.baseUrl, model: 'demo', timeoutMs: 100 });
    const { error } = await failure(provider.chat(ask('hi')));
    assert.equal(error.kind, 'network');
    assert.match(error.message, /no answer within 0\.1 s \(timed out\)$/);
  });
});

test('a consumer slower than the timeout between two chunks is not a timeout', { timeout: 10_000 }, async () => {
  // The server pauses 40 ms between chunks, well within the 150 ms timeout; the consumer takes 250 ms a chunk.
  await withRawServer(
    async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (const word of ['one ', 'two ', 'three']) {
        res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: word } }] })}\n\n`);
        await new Promise((r) => setTimeout(r, 40));
      }
      res.end('data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n');
    },
    async (baseUrl) => {
      const chunks: ChatChunk[] = [];
      for await (const c of new OpenAiProvider({ baseUrl, model: 'm', timeoutMs: 150 }).chat(ask('hi'))) {
        chunks.push(c);
        await new Promise((r) => setTimeout(r, 250));
      }
      assert.equal(texts(chunks).join(''), 'one two three');
    },
  );
});

test('a refused connection is a network error naming the endpoint', async () => {
  const server = await ScriptedModelServer.start({ model: 'demo', steps: [] });
  const baseUrl = server.baseUrl;
  await server.close();
  const { error } = await failure(new OpenAiProvider({ baseUrl, model: 'demo' }).chat(ask('hi')));
  assert.equal(error.kind, 'network');
  assert.equal(error.message, `POST ${baseUrl}/chat/completions: connection refused (is the server running?)`);
});

test('an unmet expect answers 400 saying which step expected what', async () => {
  await withServer({ model: 'demo', steps: [{ text: 'ok', expect: { lastMessageIncludes: 'permission denied' } }] }, async (_server, provider) => {
    const { error } = await failure(provider.chat(ask('hello there')));
    assert.equal(error.kind, 'http');
    assert.match(
      error.message,
      / answered 400 Bad Request: step 1 expected the last message to include "permission denied", but the last message \(user\) was "hello there"$/,
    );
  });
  await withServer({ model: 'demo', steps: [{ text: 'ok', expect: { anyMessageIncludes: 'nowhere' } }] }, async (_server, provider) => {
    const { error } = await failure(provider.chat(ask('hello')));
    assert.match(error.message, /step 1 expected a message to include "nowhere", but none of the 1 messages does$/);
  });
});

test('a request after the last step answers 400 "the script has no step N left"', async () => {
  await withServer({ model: 'demo', steps: [{ text: 'only one' }] }, async (server, provider) => {
    await collect(provider.chat(ask('1')));
    const { error } = await failure(provider.chat(ask('2')));
    assert.equal(error.kind, 'http');
    assert.match(error.message, /answered 400 Bad Request: the script has no step 2 left \(it has 1\)$/);
    assert.equal(server.requests.length, 2, 'the refused request is still recorded');
    assert.equal(server.remaining, 0);
  });
});

test('without stream: true the server answers one JSON completion', async () => {
  await withServer({ model: 'demo', steps: [{ text: 'whole', toolCalls: [{ name: 'read_file', arguments: { path: 'a' }, id: 'c1' }] }] }, async (server) => {
    const response = await fetch(`${server.baseUrl}/chat/completions`, { method: 'POST', body: JSON.stringify({ model: 'demo', messages: [] }) });
    const body = await response.json();
    assert.equal(body.object, 'chat.completion');
    assert.deepEqual(body.choices[0].message, {
      role: 'assistant',
      content: 'whole',
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a"}' } }],
    });
    assert.equal(body.choices[0].finish_reason, 'tool_calls');
  });
});

test('a server that ignores stream: true and answers JSON is still understood', async () => {
  await withRawServer(
    (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          choices: [
            {
              message: { role: 'assistant', content: 'hello', tool_calls: [{ id: 'x', type: 'function', function: { name: 'f', arguments: '' } }] },
              finish_reason: 'tool_calls',
            },
          ],
        }),
      );
    },
    async (baseUrl) => {
      const chunks = await collect(new OpenAiProvider({ baseUrl, model: 'm' }).chat(ask('hi')));
      assert.deepEqual(chunks, [
        { type: 'text', text: 'hello' },
        { type: 'toolCall', call: { id: 'x', name: 'f', arguments: '{}' } },
        { type: 'done', finishReason: 'tool_calls' },
      ]);
    },
  );
});

test('a non-JSON error page is reported by its start', async () => {
  await withRawServer(
    (_req, res) => {
      res.writeHead(502, { 'content-type': 'text/html' });
      res.end('<html>bad gateway</html>');
    },
    async (baseUrl) => {
      const { error } = await failure(new OpenAiProvider({ baseUrl, model: 'm' }).chat(ask('hi')));
      assert.equal(error.kind, 'http');
      assert.equal(error.message, `POST ${baseUrl}/chat/completions answered 502 Bad Gateway: <html>bad gateway</html>`);
    },
  );
});

test('listModels lists the scripted model, and falls back to the configured one where /models is missing', async () => {
  const scripted = await ScriptedProvider.start({ model: 'demo', contextTokens: 4096, steps: [{ text: 'hi' }] });
  try {
    assert.equal(scripted.kind, 'scripted');
    assert.equal(scripted.contextTokens, 4096);
    assert.deepEqual(
      (await scripted.listModels()).map((m) => m.id),
      ['scripted:demo'],
    );
    assert.equal(texts(await collect(scripted.chat(ask('hi')))).join(''), 'hi');
  } finally {
    await scripted.close();
  }
  await withRawServer(
    (_req, res) => {
      res.writeHead(404);
      res.end();
    },
    async (baseUrl) => {
      assert.deepEqual(
        (await new OpenAiProvider({ baseUrl, model: 'llama3' }).listModels()).map((m) => m.id),
        ['openai:llama3'],
      );
    },
  );
});

test('fragments without an index, and empty arguments, assemble into calls', () => {
  const assembler = new CompletionAssembler();
  assembler.push({ choices: [{ delta: { tool_calls: [{ id: 'a', function: { name: 'list', arguments: '' } }] } }] });
  assembler.push({ choices: [{ delta: { tool_calls: [{ function: { arguments: '' } }] }, finish_reason: 'tool_calls' }] });
  assert.deepEqual(assembler.toolCalls(), [{ id: 'a', name: 'list', arguments: '{}' }]);
  assert.throws(() => assembler.push({ choices: 'nope' }), /`choices` is not an array/);
});

test('parseScript accepts a good script and names the step of a bad one', () => {
  assert.deepEqual(parseScript('{"model":"demo","steps":[{"text":"hi"}]}', 'demo.json'), { model: 'demo', steps: [{ text: 'hi' }] });
  assert.throws(
    () => parseScript({ model: 'demo', steps: [{ text: 'ok' }, { toolCalls: [{ name: 'read_file' }], fault: 'explode' }] }, 'demo.json'),
    (e: Error) => {
      assert.match(e.message, /^demo\.json: /);
      assert.match(e.message, /step 2 \(steps\[1\]\) toolCalls\[0\]\.arguments: invalid input/);
      assert.match(e.message, /step 2 \(steps\[1\]\) fault: invalid option: expected one of "malformed"\|"drop"\|"http500"/);
      return true;
    },
  );
  assert.throws(
    () => parseScript({ model: 'demo', steps: [{ text: 'a' }, { text: 'b' }, { toolcalls: [] }] }, 's.json'),
    /step 3 \(steps\[2\]\): unrecognized key: "toolcalls"/,
  );
  assert.throws(() => parseScript({ model: 'demo', steps: [{ delayMs: 10 }] }, 's.json'), /step 1 \(steps\[0\]\): a step needs text, toolCalls or a fault/);
  assert.throws(() => parseScript('{"model":', 's.json'), /^ScriptError: s\.json: not JSON: /);
});

test('ScriptedModelServer.start refuses an invalid script', async () => {
  await assert.rejects(ScriptedModelServer.start({ model: '', steps: [] }), /^ScriptError: script: model: /);
});

async function withRawServer(handler: http.RequestListener, body: (baseUrl: string) => Promise<void>): Promise<void> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  try {
    await body(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
