#!/usr/bin/env node
// Captures the real hook protocol of each agent CLI: one headless session per client, with loghook
// registered for EVERY hook event the client has and the MCP stub registered as the server
// `chokepoint`, whose scripted model calls select_active_intent, writes a new file, edits it, runs a
// shell command that writes a file (and, where the client has one, starts a sub-agent that writes a
// file), then finishes. Every hook input is saved, sanitised, as
//   tests/agents/fixtures/<client>/<nn>-<Event>[-<tool>].json
// plus _session.json (versions, the tool names seen, the hook's environment). These are the golden
// inputs of the protocol tests: re-run on purpose only (after moving a pinned version), and review
// the diff.
//
//   node tests/agents/capture.js [claude codex gemini copilot]
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { ensureAgents, AGENTS, AGENTS_CACHE } = require('../../scripts/agents');
const { ROOT, log } = require('../../scripts/lib');
const { CLIENTS, runAgent, makeWorkspace, readLog, loghookCommand, mcpStubServer } = require('./support/clients');

const FIXTURES = path.join(__dirname, 'fixtures');

/** The scripted session: what the model does, in the client's own tools. */
function script(name, ws) {
  const t = CLIENTS[name].tools;
  const steps = [
    ...t.mcp('select_active_intent', { intent_id: 'INT-001' }),
    { tools: [t.write(ws, 'notes.txt', 'hello\n')] },
    { tools: [t.edit(ws, 'notes.txt', 'hello', 'hello, world')] },
    { tools: [t.shell('echo shell > shell.txt')] },
  ];
  if (t.subagent) steps.push(...t.subagent([{ tools: [t.write(ws, 'sub.txt', 'from the sub-agent\n')] }]));
  steps.push({ text: 'Finished.' });
  return steps;
}

/** Replaces this run's temporary paths (and the checkout's, the cache's, the user's home) by stable
 *  names, in any string. */
function sanitiser({ ws, home, scratch, serverUrl }) {
  const pairs = [];
  const add = (from, to) => from && pairs.push([from, to]);
  // Gemini names its per-project temp folder after the workspace, lower-cased.
  const geminiTmp = `/.gemini/tmp/${path.basename(ws).toLowerCase()}`;
  for (const p of new Set([ws, fs.realpathSync(ws)])) {
    add(p, '/WORKSPACE');
    add(p.replace(/[^A-Za-z0-9]/g, '-'), '-WORKSPACE'); // Claude's per-project folder name
  }
  add(home, '/HOME');
  add(scratch, '/SCRATCH');
  add(ROOT, '/REPO');
  add(AGENTS_CACHE, '/CACHE/agents');
  add(serverUrl, 'http://127.0.0.1:PORT');
  add(process.execPath, '/NODE');
  pairs.sort((a, b) => b[0].length - a[0].length);
  return (s) => {
    s = s.split(geminiTmp).join('/.gemini/tmp/WORKSPACE');
    for (const [from, to] of pairs) s = s.split(from).join(to);
    // What is left of the user's home or the temporary folder, as whole paths only.
    return s
      .replace(new RegExp(`(?<![\\w.-])${escape(os.homedir())}(?=/|$)`, 'g'), '/USERHOME')
      .replace(new RegExp(`(?<![\\w.-])${escape(os.tmpdir())}(?=/)`, 'g'), '/TMP');
  };
}

function escape(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function deepMap(value, f) {
  if (typeof value === 'string') return f(value);
  if (Array.isArray(value)) return value.map((v) => deepMap(v, f));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [f(k), deepMap(v, f)]));
  return value;
}

function toolOf(input) {
  if (!input || typeof input !== 'object') return null;
  return input.tool_name || input.toolName || null;
}

async function capture(name) {
  const client = CLIENTS[name];
  const ws = makeWorkspace(name);
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), `chokepoint-${name}-capture-`));
  const home = fs.mkdtempSync(path.join(os.tmpdir(), `chokepoint-${name}-home-`));
  const hookLog = path.join(scratch, 'hooks.jsonl');
  const mcpCalls = path.join(scratch, 'mcp.jsonl');
  client.writeHooks(ws, (event) => loghookCommand(hookLog, event), { timeout: 30 });
  client.writeMcp(ws, { chokepoint: mcpStubServer(mcpCalls) });
  const server = await client.startServer({ script: script(name, ws) });
  let r;
  try {
    r = await runAgent(name, {
      workspace: ws,
      prompt: 'Select the intent INT-001, write notes.txt, edit it, run a command.',
      serverUrl: server.url,
      timeoutMs: 120000,
      home,
      keepHome: true,
    });
  } finally {
    await server.close();
  }
  const clean = sanitiser({ ws, home, scratch, serverUrl: server.url });
  const hooks = readLog(hookLog);
  const problems = [];
  if (r.code !== 0 || r.timedOut) problems.push(`the session ended with code ${r.code}${r.timedOut ? ' (timed out)' : ''}: ${r.stderr.slice(-800)}`);
  for (const f of ['notes.txt', 'shell.txt', ...(client.tools.subagent ? ['sub.txt'] : [])])
    if (!fs.existsSync(path.join(ws, f))) problems.push(`${f} was not written`);
  if (fs.existsSync(path.join(ws, 'notes.txt')) && !/hello, world/.test(fs.readFileSync(path.join(ws, 'notes.txt'), 'utf8')))
    problems.push('notes.txt was not edited');
  if (!fs.existsSync(mcpCalls)) problems.push('the MCP tool select_active_intent was never called');
  if (server.remaining > 0) problems.push(`${server.remaining} scripted steps were never asked for`);

  const dir = path.join(FIXTURES, name);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const files = [];
  hooks.forEach((h, i) => {
    const tool = toolOf(h.stdin);
    const file = `${String(i + 1).padStart(2, '0')}-${h.event}${tool ? `-${tool.replace(/[^A-Za-z0-9_.-]/g, '_')}` : ''}.json`;
    fs.writeFileSync(path.join(dir, file), `${JSON.stringify(deepMap(h.stdin, clean), null, 2)}\n`);
    files.push(file);
  });
  const toolsSeen = {};
  for (const h of hooks) {
    const tool = toolOf(h.stdin);
    if (!tool) continue;
    const input = h.stdin.tool_input || h.stdin.toolArgs || h.stdin.toolInput;
    toolsSeen[tool] = toolsSeen[tool] || { events: [], inputFields: input && typeof input === 'object' ? Object.keys(input) : typeof input };
    if (!toolsSeen[tool].events.includes(h.event)) toolsSeen[tool].events.push(h.event);
  }
  const session = {
    client: name,
    package: `${AGENTS[name].pkg}@${AGENTS[name].version}`,
    hookEventsRegistered: client.hookEvents,
    hookEventsFired: [...new Set(hooks.map((h) => h.event))],
    toolsSeen,
    hookEnv: deepMap(hooks[0] ? hooks[0].env : {}, clean),
    hookCwd: hooks[0] ? clean(hooks[0].cwd) : null,
    modelRequests: server.log.map((e) => `${e.method} ${clean(e.path)}${e.main ? '' : ' (side)'}`),
  };
  fs.writeFileSync(path.join(dir, '_session.json'), `${JSON.stringify(session, null, 2)}\n`);
  fs.rmSync(ws, { recursive: true, force: true });
  fs.rmSync(home, { recursive: true, force: true });
  fs.rmSync(scratch, { recursive: true, force: true });
  return { files, problems, ms: r.ms, session };
}

async function main() {
  const names = process.argv.slice(2).length ? process.argv.slice(2) : Object.keys(CLIENTS);
  await ensureAgents({ only: names });
  let failed = 0;
  for (const name of names) {
    log('capture', `${name}: one scripted session with loghook on ${CLIENTS[name].hookEvents.length} events`);
    const { files, problems, ms, session } = await capture(name);
    log('capture', `${name}: ${files.length} hook inputs in ${ms} ms → tests/agents/fixtures/${name}/ (events fired: ${session.hookEventsFired.join(', ')})`);
    for (const [tool, t] of Object.entries(session.toolsSeen))
      log('capture', `  ${tool}: ${t.events.join(', ')}; input ${Array.isArray(t.inputFields) ? t.inputFields.join(', ') : t.inputFields}`);
    for (const p of problems) console.error(`  problem: ${p}`);
    failed += problems.length ? 1 : 0;
  }
  process.exit(failed ? 1 : 0);
}

if (require.main === module) {
  main().catch((e) => {
    console.error(`error: ${e.stack || e.message}`);
    process.exit(1);
  });
}

module.exports = { capture, sanitiser };
