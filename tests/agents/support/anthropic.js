// A scripted Anthropic Messages API for Claude Code (ANTHROPIC_BASE_URL): POST /v1/messages streamed
// as SSE like the real API, count_tokens, GET /v1/models. Node built-ins only.
//
// Main vs side requests: a main request is a /v1/messages call that offers tools (Claude Code's agent
// loop, a sub-agent's loop too, always does); a call without tools (title or topic generation, the
// quota probe with max_tokens 1) is a side request, answered with a short text without consuming a step.
'use strict';
const { startScriptedServer, sse, json, id, pieces, textOf } = require('./server');

const MODELS = ['claude-sonnet-4-5-20250929', 'claude-opus-4-1-20250805', 'claude-haiku-4-5-20251001'];

function isMain(body) {
  return body && Array.isArray(body.tools) && body.tools.length > 0;
}

/** The SSE events of one assistant message made of a step. */
function messageEvents(step, model) {
  const blocks = [];
  if (step.text) blocks.push({ type: 'text', text: step.text });
  for (const t of step.tools || []) blocks.push({ type: 'tool_use', id: t.id || id('toolu_'), name: t.name, input: t.input || {} });
  const stop = (step.tools || []).length ? 'tool_use' : 'end_turn';
  // Server-Sent Events of every kind, not only the shape of the first two.
  /** @type {{ event: string, data: object }[]} */
  const events = [
    {
      event: 'message_start',
      data: {
        type: 'message_start',
        message: {
          id: id('msg_'),
          type: 'message',
          role: 'assistant',
          model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 100, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 1 },
        },
      },
    },
    { event: 'ping', data: { type: 'ping' } },
  ];
  blocks.forEach((b, index) => {
    if (b.type === 'text') {
      events.push({ event: 'content_block_start', data: { type: 'content_block_start', index, content_block: { type: 'text', text: '' } } });
      for (const p of pieces(b.text))
        events.push({ event: 'content_block_delta', data: { type: 'content_block_delta', index, delta: { type: 'text_delta', text: p } } });
    } else {
      events.push({
        event: 'content_block_start',
        data: { type: 'content_block_start', index, content_block: { type: 'tool_use', id: b.id, name: b.name, input: {} } },
      });
      for (const p of pieces(JSON.stringify(b.input)))
        events.push({ event: 'content_block_delta', data: { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: p } } });
    }
    events.push({ event: 'content_block_stop', data: { type: 'content_block_stop', index } });
  });
  events.push({ event: 'message_delta', data: { type: 'message_delta', delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 20 } } });
  events.push({ event: 'message_stop', data: { type: 'message_stop' } });
  return { events, blocks, stop };
}

/** Tool results in one request body: user messages' tool_result blocks, named after the tool_use. */
function toolResults(body) {
  if (!body || !Array.isArray(body.messages)) return [];
  const names = new Map();
  const out = [];
  for (const m of body.messages) {
    if (!Array.isArray(m.content)) continue;
    for (const c of m.content) {
      if (c.type === 'tool_use') names.set(c.id, c.name);
      if (c.type === 'tool_result') out.push({ id: c.tool_use_id, name: names.get(c.tool_use_id), content: textOf(c.content), isError: !!c.is_error });
    }
  }
  return out;
}

function toolNames(body) {
  return ((body && body.tools) || []).map((t) => t.name);
}

/** @param {import('./server').ScriptOptions} [options] */
async function startAnthropic({ script, finalText } = {}) {
  return startScriptedServer({
    name: 'anthropic',
    script,
    finalText,
    toolResults,
    toolNames,
    handle(req, res, url, body, entry, server) {
      const p = url.pathname;
      if (req.method === 'GET' && /\/v1\/models\/?$/.test(p)) {
        return json(res, 200, {
          data: MODELS.map((m) => ({ type: 'model', id: m, display_name: m, created_at: '2025-01-01T00:00:00Z' })),
          has_more: false,
          first_id: MODELS[0],
          last_id: MODELS[MODELS.length - 1],
        });
      }
      if (req.method === 'GET' && /\/v1\/models\//.test(p)) {
        const m = decodeURIComponent(p.split('/').pop());
        return json(res, 200, { type: 'model', id: m, display_name: m, created_at: '2025-01-01T00:00:00Z' });
      }
      if (req.method === 'POST' && /\/v1\/messages\/count_tokens$/.test(p)) {
        return json(res, 200, { input_tokens: Math.ceil(JSON.stringify(body || '').length / 4) });
      }
      if (req.method === 'POST' && /\/v1\/messages$/.test(p)) {
        const model = (body && body.model) || MODELS[0];
        const step = isMain(body) ? server.nextStep(body, entry) : { text: 'Scripted side answer.' };
        const { events, blocks, stop } = messageEvents(step, model);
        if (body && body.stream) return sse(res, events);
        return json(res, 200, {
          id: id('msg_'),
          type: 'message',
          role: 'assistant',
          model,
          content: blocks,
          stop_reason: stop,
          stop_sequence: null,
          usage: { input_tokens: 100, output_tokens: 20 },
        });
      }
      return false;
    },
  });
}

module.exports = { toolNames, startAnthropic, toolResults, isMain };
