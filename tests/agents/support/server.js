// The part every scripted model server shares (tests/agents/support/{anthropic,openai,gemini}.js):
// an HTTP server on 127.0.0.1, the script consumed one step per MAIN model request, every request
// recorded. Node built-ins only.
//
// A step is `{ text }`, `{ tools: [{ name, input }] }` (optionally with `text` too), or a function
// `(body, server) => step` called with the parsed body of the request it answers. When the script is
// exhausted every main request is answered with `finalText`.
'use strict';
const http = require('http');

/**
 * What a test gives a vendor's start function (startAnthropic, startOpenAI, startGemini); both may be left out.
 * @typedef {object} ScriptOptions
 * @property {Array} [script] steps, one per main request
 * @property {string} [finalText] the answer once the script is exhausted
 */

/**
 * @param {object} o
 * @param {string} o.name the vendor's name, in the 404 answer and the debug log
 * @param {Array} [o.script] steps, one per main request
 * @param {string} [o.finalText] the answer once the script is exhausted
 * @param {(req: http.IncomingMessage, res: http.ServerResponse, url: URL, body: any, entry: object, server: object) => Promise<boolean|void>|boolean|void} o.handle
 *   the vendor's routes, given the request's log `entry` (for nextStep) and the scripted server; it
 *   answers `res` itself and returns false when the route is unknown (then 404)
 * @param {(body: any) => Array} o.toolResults the vendor's extraction of tool results from one body
 * @param {(body: any) => string[]} o.toolNames the names of the tools one request body offers
 */
async function startScriptedServer({ script = [], finalText = 'Done.', handle, toolResults, toolNames, name }) {
  const queue = [...script];
  const server = {
    name,
    url: '',
    /** Every parsed JSON request body, in order (side requests included). */
    requests: [],
    /** Every request: { method, path, side, body } (side: answered without consuming a step). */
    log: [],
    /** The bodies of the main requests only, in order. */
    get mainRequests() {
      return this.log.filter((r) => r.main).map((r) => r.body);
    },
    /** Steps not yet consumed. */
    get remaining() {
      return queue.length;
    },
    /** Consumes the next step for a main request (recorded as main). */
    nextStep(body, entry) {
      if (entry) entry.main = true;
      let step = queue.length ? queue.shift() : { text: finalText };
      if (typeof step === 'function') step = step(body, server) || { text: finalText };
      return step;
    },
    /** The names of the tools a request offers (the first main request's when no body is given). */
    toolNames(body) {
      return toolNames(body || server.mainRequests[0]) || [];
    },
    /** Tool results the client sent back, deduplicated by call id, in the order they first appeared:
     *  [{ id, name, content (text), isError }]. */
    toolResults() {
      const seen = new Map();
      for (const body of server.requests) for (const r of toolResults(body) || []) if (!seen.has(r.id)) seen.set(r.id, r);
      return [...seen.values()];
    },
    close: () =>
      new Promise((resolve) => {
        httpServer.closeAllConnections?.();
        httpServer.close(() => resolve());
      }),
  };
  const httpServer = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body = null;
      if (raw) {
        try {
          body = JSON.parse(raw);
        } catch {
          body = raw;
        }
      }
      const url = new URL(req.url, 'http://127.0.0.1');
      const entry = { method: req.method, path: url.pathname + url.search, main: false, body };
      server.log.push(entry);
      if (body !== null && typeof body === 'object') server.requests.push(body);
      if (process.env.CHOKEPOINT_AGENTS_DEBUG) process.stderr.write(`[${name}] ${req.method} ${entry.path} ${raw.length}B\n`);
      try {
        const handled = await handle(req, res, url, body, entry, server);
        if (handled === false && !res.headersSent) {
          res.writeHead(404, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { message: `no route ${req.method} ${url.pathname} in the scripted ${name} server` } }));
        }
      } catch (e) {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: String(e.stack || e) } }));
      }
    });
  });
  // Promise<void>: its resolve is then a callback of no arguments, as listen's is.
  await /** @type {Promise<void>} */ (new Promise((resolve) => httpServer.listen(0, '127.0.0.1', resolve)));
  // Listening on a TCP port, address() is an AddressInfo (a string only for a pipe or socket file).
  server.url = `http://127.0.0.1:${/** @type {import('net').AddressInfo} */ (httpServer.address()).port}`;
  return server;
}

/** Writes Server-Sent Events: [{ event?, data }]. */
function sse(res, events) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  for (const e of events) {
    if (e.event) res.write(`event: ${e.event}\n`);
    res.write(`data: ${JSON.stringify(e.data)}\n\n`);
  }
  res.end();
}

function json(res, status, value) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}

let counter = 0;
/** A short unique id with a prefix. */
function id(prefix) {
  counter += 1;
  return `${prefix}${Date.now().toString(36)}${counter.toString(36).padStart(4, '0')}`;
}

/** Splits a string into a few pieces, so deltas stream in more than one event. */
function pieces(s, n = 3) {
  if (!s) return [''];
  const size = Math.max(1, Math.ceil(s.length / n));
  const out = [];
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out;
}

/** Text of a tool result's content however the vendor shaped it (string, blocks, object). */
function textOf(content) {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) return content.map((c) => (typeof c === 'string' ? c : (c.text ?? textOf(c.content ?? c.output ?? '')))).join('');
  if (typeof content === 'object')
    return (
      content.text ?? (content.output !== undefined ? textOf(content.output) : content.error !== undefined ? textOf(content.error) : JSON.stringify(content))
    );
  return String(content);
}

module.exports = { startScriptedServer, sse, json, id, pieces, textOf };
