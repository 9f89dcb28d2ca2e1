#!/usr/bin/env node
// A hook command for any of the agent CLIs: appends what it was given as one JSON line to a log
// file, then answers nothing and exits 0 (unless an action file says otherwise).
//
//   node loghook.js <log.jsonl> [<EventName>] [<actions.json>]
//
// The log file may also be named by CHOKEPOINT_LOGHOOK_FILE. A line is
//   { event, argv, cwd, env: { CLAUDE_PROJECT_DIR, … }, stdin: <parsed JSON or the raw text>, at }
// `event` is the name the hook was registered under (argv), since not every client puts the event's
// name in its input.
//
// The optional actions file (JSON) makes the hook answer: an array of
//   { event?, tool?: "<regex on tool_name / toolName>", match?: "<regex on the raw stdin>",
//     exit?: 0, stdout?: "<text or JSON value>", stderr?: "…", sleepMs?: 0, once?: false }
// the first that matches is applied (`once`: only for the first matching call, tracked beside the
// log file). Nothing but Node built-ins.
'use strict';
const fs = require('fs');

const [logFile = process.env.CHOKEPOINT_LOGHOOK_FILE, eventArg, actionsFile] = process.argv.slice(2);
const KEEP_ENV = /^(CLAUDE_|GEMINI_|CODEX_|COPILOT_|CURSOR_|CHOKEPOINT_|PWD$)/;
const SECRET = /KEY|TOKEN|SECRET|PASSWORD|BASE_URL/;

function readStdin() {
  try {
    return fs.readFileSync(0, 'utf8');
  } catch {
    return '';
  }
}

const raw = readStdin();
// The parsed JSON (an object of the client's hook input), null for no input, or the raw text.
/** @type {any} */
let input = raw;
try {
  input = raw.trim() ? JSON.parse(raw) : null;
} catch {
  // Not JSON: kept as text.
}
const event = eventArg || (input && (input.hook_event_name || input.hookEventName)) || 'unknown';
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => KEEP_ENV.test(k) && !SECRET.test(k)));
if (logFile) {
  fs.appendFileSync(logFile, `${JSON.stringify({ event, argv: process.argv.slice(2), cwd: process.cwd(), env, stdin: input, at: Date.now() })}\n`);
}

let action = null;
if (actionsFile) {
  const actions = JSON.parse(fs.readFileSync(actionsFile, 'utf8'));
  const tool = input && typeof input === 'object' ? input.tool_name || input.toolName || '' : '';
  for (let i = 0; i < actions.length; i++) {
    const a = actions[i];
    if (a.event && a.event !== event) continue;
    if (a.tool && !new RegExp(a.tool).test(tool)) continue;
    if (a.match && !new RegExp(a.match).test(raw)) continue;
    if (a.once) {
      const mark = `${actionsFile}.used-${i}`;
      try {
        fs.writeFileSync(mark, '', { flag: 'wx' });
      } catch {
        continue;
      }
    }
    action = a;
    break;
  }
}

function finish() {
  if (!action) process.exit(0);
  if (action.stdout !== undefined) process.stdout.write(typeof action.stdout === 'string' ? action.stdout : JSON.stringify(action.stdout));
  if (action.stderr) process.stderr.write(action.stderr);
  process.exitCode = action.exit || 0;
}
if (action && action.sleepMs) setTimeout(finish, action.sleepMs);
else finish();
