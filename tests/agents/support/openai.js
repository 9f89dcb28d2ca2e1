// A scripted OpenAI Responses API for Codex (a custom model provider with wire_api = "responses"):
// POST /v1/responses streamed as SSE like the real API, GET /v1/models. Node built-ins only.
//
// A tool in a step becomes the output item that matches how the request declared that tool: a
// `custom` (freeform) tool such as Codex's apply_patch becomes a `custom_tool_call` whose `input` is
// the step's input (a string: the patch text; an object's `input` field is taken), a `function` tool
// a `function_call` whose `arguments` are the step's input as JSON, `local_shell` a `local_shell_call`.
//
// Main vs side requests: a main request offers tools (Codex's agent loop always does); a request
// without tools (a title, a summary, a compaction) is a side request, answered with a short text
// without consuming a step.
'use strict';
const { startScriptedServer, sse, json, id, pieces, textOf } = require('./server');

function isMain(body) {
  return body && Array.isArray(body.tools) && body.tools.length > 0;
}

/** Every tool the request declares, by name, with its type: the `tools` list, and the namespaced
 *  tools a tool_search exposed (tool_search_output items in the input), under both their own name
 *  and `<namespace>__<name>` (e.g. mcp__chokepoint__select_active_intent). */
function declaredTools(body) {
  const out = new Map();
  const visit = (tools, namespace) => {
    for (const t of tools || []) {
      if (t.type === 'namespace' && Array.isArray(t.tools)) {
        visit(t.tools, t.name);
        continue;
      }
      const name = t.name || (t.function && t.function.name) || t.type;
      out.set(namespace ? `${namespace}__${name}` : name, { ...t, name, namespace });
      if (namespace && !out.has(name)) out.set(name, { ...t, name, namespace });
    }
  };
  visit(body && body.tools);
  for (const item of (body && Array.isArray(body.input) && body.input) || []) if (item.type === 'tool_search_output') visit(item.tools);
  return out;
}

function outputItem(tool, declared) {
  const d = declared.get(tool.name);
  const callId = tool.id || id('call_');
  if (d && d.type === 'custom') {
    const input =
      typeof tool.input === 'string' ? tool.input : tool.input && typeof tool.input.input === 'string' ? tool.input.input : JSON.stringify(tool.input);
    return { type: 'custom_tool_call', id: id('ctc_'), status: 'completed', call_id: callId, name: tool.name, input };
  }
  if (d && d.type === 'tool_search') {
    // Codex defers MCP tools behind a client-executed tool_search: the answer (tool_search_output in
    // the next request) exposes the matching tools, namespaced, for the next call.
    return { type: 'tool_search_call', id: id('ts_'), status: 'completed', call_id: callId, execution: 'client', arguments: tool.input || {} };
  }
  if (d && d.type === 'local_shell') {
    return { type: 'local_shell_call', id: id('lsh_'), status: 'completed', call_id: callId, action: { type: 'exec', ...tool.input } };
  }
  const item = {
    type: 'function_call',
    id: id('fc_'),
    status: 'completed',
    call_id: callId,
    name: d ? d.name : tool.name,
    arguments: typeof tool.input === 'string' ? tool.input : JSON.stringify(tool.input || {}),
  };
  if (d && d.namespace) item.namespace = d.namespace;
  return item;
}

function responseEvents(step, body) {
  const responseId = id('resp_');
  const model = (body && body.model) || 'gpt-5.5';
  const declared = declaredTools(body);
  // Output items of the Responses API: which fields one has depends on its `type`.
  /** @type {{ type: string, id: string, [field: string]: any }[]} */
  const items = [];
  if (step.text)
    items.push({
      type: 'message',
      id: id('msg_'),
      status: 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text: step.text, annotations: [] }],
    });
  for (const t of step.tools || []) items.push(outputItem(t, declared));
  let seq = 0;
  const ev = (type, data) => ({ event: type, data: { type, sequence_number: seq++, ...data } });
  const base = { id: responseId, object: 'response', created_at: Math.floor(Date.now() / 1000), model, status: 'in_progress', output: [] };
  const events = [ev('response.created', { response: base }), ev('response.in_progress', { response: base })];
  items.forEach((item, output_index) => {
    if (item.type === 'message') {
      const text = item.content[0].text;
      events.push(ev('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', content: [] } }));
      events.push(
        ev('response.content_part.added', { item_id: item.id, output_index, content_index: 0, part: { type: 'output_text', text: '', annotations: [] } }),
      );
      for (const p of pieces(text)) events.push(ev('response.output_text.delta', { item_id: item.id, output_index, content_index: 0, delta: p }));
      events.push(ev('response.output_text.done', { item_id: item.id, output_index, content_index: 0, text }));
      events.push(ev('response.content_part.done', { item_id: item.id, output_index, content_index: 0, part: item.content[0] }));
    } else if (item.type === 'function_call') {
      events.push(ev('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', arguments: '' } }));
      for (const p of pieces(item.arguments)) events.push(ev('response.function_call_arguments.delta', { item_id: item.id, output_index, delta: p }));
      events.push(ev('response.function_call_arguments.done', { item_id: item.id, output_index, arguments: item.arguments }));
    } else if (item.type === 'custom_tool_call') {
      events.push(ev('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', input: '' } }));
      for (const p of pieces(item.input)) events.push(ev('response.custom_tool_call_input.delta', { item_id: item.id, output_index, delta: p }));
      events.push(ev('response.custom_tool_call_input.done', { item_id: item.id, output_index, input: item.input }));
    } else {
      events.push(ev('response.output_item.added', { output_index, item }));
    }
    events.push(ev('response.output_item.done', { output_index, item }));
  });
  const usage = {
    input_tokens: 100,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: 20,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 120,
  };
  events.push(ev('response.completed', { response: { ...base, status: 'completed', output: items, usage } }));
  return { events, items, responseId, usage, model };
}

/** Tool results in one request body: function_call_output / custom_tool_call_output input items. */
function toolResults(body) {
  if (!body || !Array.isArray(body.input)) return [];
  const names = new Map();
  const out = [];
  for (const item of body.input) {
    if (item.type === 'function_call' || item.type === 'custom_tool_call' || item.type === 'local_shell_call')
      names.set(item.call_id, item.namespace ? `${item.namespace}__${item.name}` : item.name || item.type);
    if (item.type === 'tool_search_call') names.set(item.call_id, 'tool_search');
    if (item.type === 'function_call_output' || item.type === 'custom_tool_call_output' || item.type === 'tool_search_output') {
      const content = textOf(item.output);
      out.push({ id: item.call_id, name: names.get(item.call_id), content, isError: item.output && item.output.success === false });
    }
  }
  return out;
}

const MODELS = ['gpt-5.5'];

function toolNames(body) {
  return [...declaredTools(body).keys()];
}

/** @param {import('./server').ScriptOptions} [options] */
async function startOpenAI({ script, finalText } = {}) {
  return startScriptedServer({
    name: 'openai',
    script,
    finalText,
    toolResults,
    toolNames,
    handle(req, res, url, body, entry, server) {
      const p = url.pathname;
      if (req.method === 'GET' && /\/models\/?$/.test(p)) {
        return json(res, 200, { object: 'list', data: MODELS.map((m) => ({ id: m, object: 'model', created: 1700000000, owned_by: 'scripted' })), models: [] });
      }
      if (req.method === 'POST' && /\/responses$/.test(p)) {
        const step = isMain(body) ? server.nextStep(body, entry) : { text: 'Scripted side answer.' };
        const r = responseEvents(step, body);
        if (body && body.stream === false)
          return json(res, 200, { id: r.responseId, object: 'response', model: r.model, status: 'completed', output: r.items, usage: r.usage });
        return sse(res, r.events);
      }
      return false;
    },
  });
}

module.exports = { toolNames, startOpenAI, toolResults, isMain };
