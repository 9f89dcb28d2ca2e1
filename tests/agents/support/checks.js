// Reusable behaviour checks of a client's hooks: one short scripted session each, with loghook as the
// only hook (on the pre-tool event, or SessionStart) answering what an actions file says. Used by
// tests/agents/clients.test.js and tests/agents/probe.js (which prints the table in
// docs/agents/clients.md).
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { CLIENTS, runAgent, makeWorkspace, readLog, loghookCommand } = require('./clients');

/** A client's JSON answers, in its own dialect. */
const ANSWERS = {
  deny(name, reason) {
    if (name === 'gemini') return { decision: 'deny', reason };
    if (name === 'copilot') return { permissionDecision: 'deny', permissionDecisionReason: reason };
    return { hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: reason } };
  },
  /** Replaces the shell tool's whole input by `input`. */
  rewrite(name, input) {
    if (name === 'gemini') return { hookSpecificOutput: { hookEventName: 'BeforeTool', tool_input: input } };
    if (name === 'copilot') return { permissionDecision: 'allow', modifiedArgs: input };
    return {
      hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'allow', permissionDecisionReason: 'rewritten by the test', updatedInput: input },
    };
  },
  context(name, text) {
    if (name === 'copilot') return { additionalContext: text };
    return { hookSpecificOutput: { hookEventName: 'SessionStart', additionalContext: text } };
  },
};

/** The event names of a client for the pre-tool hook and session start. */
function eventOf(name, kind) {
  const c = CLIENTS[name];
  if (kind === 'pre') return c.preToolUse;
  return c.hookEvents.find((e) => /^sessionstart$/i.test(e));
}

/**
 * One session with a single hook (`event`: 'pre' or 'start') answering `action` (loghook's action
 * format, without event/tool filters) for the tool calls in `steps` (functions of the workspace).
 * Returns { r, server, ws, hooks, file(rel), toolResults, requestsText, cleanup }.
 * @param {string} name
 * @param {object} o
 * @param {'pre' | 'start'} [o.event]
 * @param {object} o.action
 * @param {(ws: string, tools: any) => object[]} o.steps
 * @param {number} [o.timeout] the hook's timeout (seconds), the client's default when not given
 * @param {number} [o.timeoutMs]
 * @param {string} [o.prompt]
 */
async function sessionWithHook(name, { event = 'pre', action, steps, timeout, timeoutMs = 90000, prompt = 'Do as scripted.' }) {
  const client = CLIENTS[name];
  const ws = makeWorkspace(name);
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), `chokepoint-${name}-check-`));
  const hookLog = path.join(scratch, 'hooks.jsonl');
  const actionsFile = path.join(scratch, 'actions.json');
  fs.writeFileSync(actionsFile, JSON.stringify(action ? [action] : []));
  const hookEvent = eventOf(name, event);
  client.writeHooks(ws, (e) => (e === hookEvent ? loghookCommand(hookLog, e, actionsFile) : null), timeout ? { timeout } : {});
  const server = await client.startServer({ script: steps(ws, client.tools) });
  let r;
  try {
    r = await runAgent(name, { workspace: ws, prompt, serverUrl: server.url, timeoutMs });
  } finally {
    await server.close();
  }
  const file = (rel) => {
    try {
      return fs.readFileSync(path.join(ws, rel), 'utf8');
    } catch {
      return null;
    }
  };
  return {
    r,
    server,
    ws,
    hooks: readLog(hookLog),
    file,
    toolResults: server.toolResults(),
    requestsText: JSON.stringify(server.mainRequests),
    cleanup() {
      fs.rmSync(ws, { recursive: true, force: true });
      fs.rmSync(scratch, { recursive: true, force: true });
    },
  };
}

const writeSteps = (rel) => (ws, t) => [{ tools: [t.write(ws, rel, 'should this exist?\n')] }, { text: 'Done.' }];

/** Did the pre-tool hook's `action` block a write of a new file, and did `marker` reach the model? */
async function checkBlocksWrite(name, action, marker) {
  const s = await sessionWithHook(name, { action, steps: writeSteps('blocked.txt') });
  try {
    const result = s.toolResults.find((t) => t.content.includes(marker));
    return {
      ended: s.r.code === 0 && !s.r.timedOut,
      hookFired: s.hooks.length > 0,
      blocked: s.file('blocked.txt') === null,
      reasonInToolResult: !!result,
      reasonInNextRequest: s.requestsText.includes(marker),
      toolResult: (s.toolResults[0] && s.toolResults[0].content) || null,
      code: s.r.code,
      ms: s.r.ms,
      stderr: s.r.stderr.slice(-400),
    };
  } finally {
    s.cleanup();
  }
}

function checkDenyExit2(name) {
  const marker = 'CHOKEPOINT_EXIT2_REASON';
  return checkBlocksWrite(name, { exit: 2, stderr: `Blocked by the test: ${marker}` }, marker);
}

function checkDenyJson(name) {
  const marker = 'CHOKEPOINT_JSON_REASON';
  return checkBlocksWrite(name, { exit: 0, stdout: ANSWERS.deny(name, `Blocked by the test: ${marker}`) }, marker);
}

/** Does the client fail open when the pre-tool hook exits 1, times out, or prints garbage? */
async function checkFailOpen(name, mode) {
  const action =
    mode === 'exit1'
      ? { exit: 1, stderr: 'CHOKEPOINT_EXIT1 failing hook' }
      : mode === 'timeout'
        ? { sleepMs: 8000 }
        : { exit: 0, stdout: 'this is not { the protocol' };
  const s = await sessionWithHook(name, { action, steps: writeSteps('open.txt'), timeout: mode === 'timeout' ? 2 : undefined });
  try {
    return {
      ended: s.r.code === 0 && !s.r.timedOut,
      hookFired: s.hooks.length > 0,
      allowed: s.file('open.txt') !== null,
      toolResult: (s.toolResults[0] && s.toolResults[0].content) || null,
      ms: s.r.ms,
      code: s.r.code,
    };
  } finally {
    s.cleanup();
  }
}

/** Is a rewrite of the shell command obeyed? The model asks for `echo original > ran.txt`; the hook
 *  answers `echo rewritten > ran.txt`. */
async function checkRewrite(name) {
  const client = CLIENTS[name];
  const original = client.tools.shell('echo original > ran.txt');
  const rewritten = {
    ...original.input,
    [name === 'codex' ? 'command' : Object.keys(original.input).find((k) => /^(command|cmd)$/.test(k))]: 'echo rewritten > ran.txt',
  };
  if (name === 'codex') delete rewritten.cmd;
  const s = await sessionWithHook(name, {
    action: { exit: 0, stdout: ANSWERS.rewrite(name, rewritten) },
    steps: (ws, t) => [{ tools: [t.shell('echo original > ran.txt')] }, { text: 'Done.' }],
  });
  try {
    const ran = s.file('ran.txt');
    return {
      ended: s.r.code === 0 && !s.r.timedOut,
      hookFired: s.hooks.length > 0,
      ran: ran && ran.trim(),
      obeyed: !!ran && ran.trim() === 'rewritten',
      toolResult: (s.toolResults[0] && s.toolResults[0].content) || null,
      stderr: s.r.stderr.slice(-400),
    };
  } finally {
    s.cleanup();
  }
}

/** Does SessionStart's additionalContext reach the model's first request? */
async function checkSessionContext(name) {
  const marker = 'CHOKEPOINT_SESSION_CONTEXT';
  const s = await sessionWithHook(name, {
    event: 'start',
    action: { exit: 0, stdout: ANSWERS.context(name, `Remember: ${marker}`) },
    steps: () => [{ text: 'Done.' }],
  });
  try {
    const first = JSON.stringify(s.server.mainRequests[0] || {});
    return {
      ended: s.r.code === 0 && !s.r.timedOut,
      hookFired: s.hooks.length > 0,
      inFirstRequest: first.includes(marker),
      inAnyRequest: s.requestsText.includes(marker),
    };
  } finally {
    s.cleanup();
  }
}

module.exports = { ANSWERS, sessionWithHook, checkDenyExit2, checkDenyJson, checkFailOpen, checkRewrite, checkSessionContext, writeSteps };
