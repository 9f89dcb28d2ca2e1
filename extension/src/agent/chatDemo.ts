// The demo for VS Code's own agent (the Chat view, on the model "Chokepoint demo (scripted)"): the
// same story as our agent's demo (runtime/demo.ts), told with VS Code's tools, whose paths are
// absolute. VS Code's agent runs the tools; Chokepoint judges each call through the hooks that
// "Chokepoint: Connect VS Code's Agent" wrote (.github/hooks/chokepoint.json) and through the
// intent tools this extension contributes:
//   1. the handshake (select_active_intent INT-001);
//   2. an allowed write inside the intent's scope (src/auth/lockout.js);
//   3. a write outside it (src/billing/invoice.js), denied, the file untouched;
//   4. a shell command that writes outside it, run contained: that write never lands;
//   5. an answer that points at the Trace view for what happened (a script cannot know).
// Each step's `expect` checks what the model was told before it answers.
import * as path from 'path';
import type { Script } from '../runtime/providers/script';

const LOCKOUT = `'use strict';
// Locks an account for fifteen minutes after five failed logins within a minute (INT-001).
const WINDOW_MS = 60 * 1000;
const LOCK_MS = 15 * 60 * 1000;
const MAX_FAILURES = 5;
const failures = new Map();

function login(users, name, password, now = Date.now()) {
  const record = failures.get(name) || { times: [], lockedUntil: 0 };
  if (record.lockedUntil > now) return false;
  const user = users.get(name);
  if (user && user.password === password) {
    failures.delete(name);
    return true;
  }
  record.times = record.times.filter((t) => now - t < WINDOW_MS).concat(now);
  if (record.times.length >= MAX_FAILURES) record.lockedUntil = now + LOCK_MS;
  failures.set(name, record);
  return false;
}

module.exports = { login };
`;

export function vscodeDemoScript(root: string): Script {
  const at = (rel: string) => path.join(root, rel);
  return {
    model: 'chokepoint-demo-vscode',
    contextTokens: 128_000,
    steps: [
      {
        text: 'I will declare the intent this work serves first.',
        toolCalls: [{ name: 'select_active_intent', arguments: { intent_id: 'INT-001' } }],
      },
      {
        text: 'Now the lockout itself.',
        toolCalls: [{ name: 'create_file', arguments: { filePath: at('src/auth/lockout.js'), content: LOCKOUT } }],
        expect: { anyMessageIncludes: 'INT-001' },
      },
      {
        text: 'Invoices should log failed payments too; I will touch billing.',
        toolCalls: [{ name: 'create_file', arguments: { filePath: at('src/billing/invoice.js'), content: "'use strict';\nmodule.exports = {};\n" } }],
      },
      {
        text: 'Then through the shell.',
        toolCalls: [
          {
            name: 'run_in_terminal',
            arguments: {
              command: 'echo "// failed payments" >> src/billing/invoice.js',
              explanation: 'Note failed payments in billing',
              goal: 'Note failed payments',
              mode: 'sync',
            },
          },
        ],
        expect: { anyMessageIncludes: 'Chokepoint' },
      },
      {
        // A script cannot read what happened: this answer claims nothing that depends on it (the
        // lockout's write may have been refused too, with no intent selected). The Trace view says.
        text: 'Chokepoint kept me inside INT-001: only writes inside its scope could land, and billing belongs to INT-002, so what I tried there was refused. The Trace view shows each call and what became of it.',
      },
    ],
  };
}
