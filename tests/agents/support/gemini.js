// A scripted Gemini API for Gemini CLI (GOOGLE_GEMINI_BASE_URL): POST
// /v1beta/models/<model>:streamGenerateContent?alt=sse streamed like the real API, with functionCall
// parts for tools; :generateContent, :countTokens, GET /v1beta/models. Node built-ins only.
//
// Main vs side requests: a main request is a :streamGenerateContent call that declares function
// tools (the agent loop). The CLI's helpers (the next-speaker check, the model router's classifier,
// loop detection, summaries) call :generateContent, mostly asking for JSON against a responseSchema:
// those are side requests, answered with a value that satisfies the schema (`next_speaker: "user"`,
// the first value of an enum, …) without consuming a step.
'use strict';
const { startScriptedServer, sse, json, id } = require('./server');

function isMain(body, url) {
  return (
    /:streamGenerateContent$/.test(url.pathname) &&
    body &&
    Array.isArray(body.tools) &&
    body.tools.some((t) => Array.isArray(t.functionDeclarations) && t.functionDeclarations.length > 0)
  );
}

/** A minimal value satisfying a (Gemini or JSON) schema; `next_speaker` answers "user" so the CLI
 *  never continues on its own. */
function fromSchema(schema, key) {
  if (!schema) return null;
  const type = String(schema.type || (schema.properties ? 'object' : 'string')).toLowerCase();
  if (schema.enum && schema.enum.length) return key === 'next_speaker' && schema.enum.includes('user') ? 'user' : schema.enum[0];
  if (type === 'object') {
    const o = {};
    for (const [k, v] of Object.entries(schema.properties || {})) o[k] = fromSchema(v, k);
    return o;
  }
  if (type === 'array') return [];
  if (type === 'boolean') return false;
  if (type === 'number' || type === 'integer') return schema.minimum ?? 1;
  if (key === 'next_speaker') return 'user';
  return 'scripted';
}

function sideAnswer(body) {
  const cfg = (body && (body.generationConfig || body.config)) || {};
  const schema = cfg.responseSchema || cfg.responseJsonSchema || cfg._responseJsonSchema;
  if (schema || cfg.responseMimeType === 'application/json') return JSON.stringify(fromSchema(schema || { type: 'object' }));
  return 'Scripted side answer.';
}

function candidateChunk(parts, finishReason) {
  const c = { content: { role: 'model', parts }, index: 0 };
  if (finishReason) c.finishReason = finishReason;
  return {
    candidates: [c],
    usageMetadata: { promptTokenCount: 100, candidatesTokenCount: 20, totalTokenCount: 120 },
    modelVersion: 'gemini-2.5-pro',
    responseId: id('resp'),
  };
}

/** The chunks of one streamed answer made of a step: text first (in pieces), then one functionCall
 *  part per tool, the last chunk carrying finishReason STOP (as the real API does for tool calls too). */
function chunksOf(step) {
  const chunks = [];
  if (step.text) {
    const words = step.text.split(/(?<= )/);
    const half = Math.ceil(words.length / 2);
    chunks.push(candidateChunk([{ text: words.slice(0, half).join('') }]));
    if (words.length > half) chunks.push(candidateChunk([{ text: words.slice(half).join('') }]));
  }
  const calls = (step.tools || []).map((t) => ({ functionCall: { name: t.name, args: t.input || {}, ...(t.id ? { id: t.id } : {}) } }));
  if (calls.length) chunks.push(candidateChunk(calls));
  if (!chunks.length) chunks.push(candidateChunk([{ text: '' }]));
  chunks[chunks.length - 1].candidates[0].finishReason = 'STOP';
  return chunks;
}

/** Tool results in one request body: functionResponse parts of user turns. */
function toolResults(body) {
  if (!body || !Array.isArray(body.contents)) return [];
  const out = [];
  let n = 0;
  for (const c of body.contents) {
    for (const p of c.parts || []) {
      if (p.functionResponse) {
        const r = p.functionResponse;
        const resp = r.response || {};
        const content =
          typeof resp.output === 'string'
            ? resp.output
            : resp.error !== undefined
              ? String(typeof resp.error === 'string' ? resp.error : JSON.stringify(resp.error))
              : JSON.stringify(resp);
        // Gemini has no call ids on the wire unless the model sent them: the position identifies it.
        out.push({ id: r.id || `${r.name}#${n}`, name: r.name, content, isError: resp.error !== undefined });
        n += 1;
      }
    }
  }
  return out;
}

const MODELS = ['gemini-2.5-pro', 'gemini-2.5-flash', 'gemini-2.5-flash-lite'];

function toolNames(body) {
  return ((body && body.tools) || []).flatMap((t) => (t.functionDeclarations || []).map((f) => f.name));
}

/** @param {import('./server').ScriptOptions} [options] */
async function startGemini({ script, finalText } = {}) {
  return startScriptedServer({
    name: 'gemini',
    script,
    finalText,
    toolResults,
    toolNames,
    handle(req, res, url, body, entry, server) {
      const p = url.pathname;
      if (req.method === 'GET' && /\/models\/?$/.test(p)) {
        return json(res, 200, {
          models: MODELS.map((m) => ({ name: `models/${m}`, displayName: m, supportedGenerationMethods: ['generateContent', 'countTokens'] })),
        });
      }
      if (req.method === 'POST' && /:countTokens$/.test(p)) {
        return json(res, 200, { totalTokens: Math.ceil(JSON.stringify(body || '').length / 4) });
      }
      if (req.method === 'POST' && /:streamGenerateContent$/.test(p)) {
        const step = isMain(body, url) ? server.nextStep(body, entry) : { text: sideAnswer(body) };
        return sse(
          res,
          chunksOf(step).map((data) => ({ data })),
        );
      }
      if (req.method === 'POST' && /:generateContent$/.test(p)) {
        return json(res, 200, candidateChunk([{ text: sideAnswer(body) }], 'STOP'));
      }
      if (req.method === 'POST' && /:embedContent$/.test(p)) return json(res, 200, { embedding: { values: [0, 0, 0] } });
      return false;
    },
  });
}

module.exports = { toolNames, startGemini, toolResults, isMain };
