#!/usr/bin/env node
// A minimal MCP server over stdio (JSON-RPC 2.0, one message per line) offering Chokepoint's intent
// tools, each answering a fixed text. Registered as the server `chokepoint` by the agent tests, so the
// tool names each client reports for an MCP tool can be captured.
//
//   node mcpStub.js [<calls.jsonl>]   (each tools/call is appended there as one JSON line)
//
// Nothing but Node built-ins.
'use strict';
const fs = require('fs');
const readline = require('readline');

const callsFile = process.argv[2] || process.env.CHOKEPOINT_MCP_LOG;

const TOOLS = [
  { name: 'list_intents', description: 'Lists the intents of this workspace.', inputSchema: { type: 'object', properties: {}, additionalProperties: false } },
  {
    name: 'select_active_intent',
    description: 'Selects the intent the following changes belong to.',
    inputSchema: {
      type: 'object',
      properties: { intent_id: { type: 'string', description: 'The id of the intent.' } },
      required: ['intent_id'],
      additionalProperties: false,
    },
  },
  {
    name: 'intent_context',
    description: 'The active intent, its scope and its constraints.',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
  },
  {
    name: 'scope_expansion_request',
    description: 'Asks to widen the active intent to more paths.',
    inputSchema: {
      type: 'object',
      properties: { intent_id: { type: 'string' }, paths: { type: 'array', items: { type: 'string' } }, justification: { type: 'string' } },
      required: ['intent_id', 'paths', 'justification'],
      additionalProperties: false,
    },
  },
];

function answer(name, args) {
  switch (name) {
    case 'list_intents':
      return 'INT-001 Add the greeting (owned_scope: src/**)';
    case 'select_active_intent':
      return `Active intent: ${args.intent_id}.`;
    case 'intent_context':
      return 'No active intent.';
    case 'scope_expansion_request':
      return `Scope expansion for ${args.intent_id} is pending: ${(args.paths || []).join(', ')}.`;
    default:
      return null;
  }
}

function send(msg) {
  process.stdout.write(`${JSON.stringify(msg)}\n`);
}

const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  if (!line.trim()) return;
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    return send({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error' } });
  }
  const { id, method, params = {} } = msg;
  if (id === undefined || id === null) return; // a notification (notifications/initialized, cancelled…)
  if (method === 'initialize') {
    return send({
      jsonrpc: '2.0',
      id,
      result: {
        protocolVersion: params.protocolVersion || '2025-06-18',
        capabilities: { tools: { listChanged: false } },
        serverInfo: { name: 'chokepoint', version: '0.0.0-stub' },
      },
    });
  }
  if (method === 'ping') return send({ jsonrpc: '2.0', id, result: {} });
  if (method === 'tools/list') return send({ jsonrpc: '2.0', id, result: { tools: TOOLS } });
  if (method === 'resources/list') return send({ jsonrpc: '2.0', id, result: { resources: [] } });
  if (method === 'resources/templates/list') return send({ jsonrpc: '2.0', id, result: { resourceTemplates: [] } });
  if (method === 'prompts/list') return send({ jsonrpc: '2.0', id, result: { prompts: [] } });
  if (method === 'tools/call') {
    const text = answer(params.name, params.arguments || {});
    if (callsFile) fs.appendFileSync(callsFile, `${JSON.stringify({ name: params.name, arguments: params.arguments || {} })}\n`);
    if (text === null) return send({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: `unknown tool ${params.name}` }], isError: true } });
    return send({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text }], isError: false } });
  }
  return send({ jsonrpc: '2.0', id, error: { code: -32601, message: `method not found: ${method}` } });
});
