// The demo task: a script for the scripted model (a real HTTP server on loopback speaking Chat
// Completions) that walks through what Chokepoint does, against the sample workspace:
//   1. the handshake (select_active_intent INT-001: the intent's context comes back);
//   2. an allowed write inside the intent's scope (src/auth/login.js, with an off-by-one);
//   3. a denied write outside it (src/billing/invoice.js), answered with a structured tool error;
//   4. a scope expansion request for it (an ask: a human, a policy or a reviewer decides);
//   5. a test for the lockout (tests/auth/login.test.js), after which the lint hook's piped output
//      reaches the next turn;
//   6. a completion gated by the tests: refused while the off-by-one makes the test fail;
//   7. the fix (apply_diff), 8. the completion, accepted once the tests pass.
// Each step's `expect` checks what the model was told before it answers, so a demo that goes off the
// rails stops with an error saying where instead of playing on.
import type { Script } from './providers/script';

export const DEMO_PROMPT = 'Harden the login flow (INT-001): lock an account for fifteen minutes after five failed logins within a minute.';

const LOGIN = `'use strict';
// Checks a password against a stored one in constant time, and locks an account for fifteen minutes
// after five failed logins within a minute (INT-001).
const crypto = require('crypto');

const WINDOW_MS = 60 * 1000;
const LOCK_MS = 15 * 60 * 1000;
const MAX_FAILURES = 6;
const failures = new Map();

function sameSecret(a, b) {
  const x = Buffer.from(String(a));
  const y = Buffer.from(String(b));
  return x.length === y.length && crypto.timingSafeEqual(x, y);
}

function login(users, name, password, now = Date.now()) {
  const record = failures.get(name) || { times: [], lockedUntil: 0 };
  if (record.lockedUntil > now) return false;
  const user = users.get(name);
  if (user && sameSecret(user.password, password)) {
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

const LOGIN_TEST = `'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { login } = require('../../src/auth/login');

test('five failed logins in a minute lock the account for fifteen minutes', () => {
  const users = new Map([['ada', { password: 'correct horse' }]]);
  for (let i = 0; i < 5; i++) assert.equal(login(users, 'ada', 'wrong', 1000 + i), false);
  assert.equal(login(users, 'ada', 'correct horse', 2000), false, 'locked after five failures');
  assert.equal(login(users, 'ada', 'correct horse', 2000 + 15 * 60 * 1000), true, 'unlocked after fifteen minutes');
});
`;

export const DEMO_FILES = { login: 'src/auth/login.js', test: 'tests/auth/login.test.js', outOfScope: 'src/billing/invoice.js' };

export const DEMO_SCRIPT: Script = {
  model: 'scripted-demo',
  contextTokens: 32_000,
  steps: [
    {
      text: 'I will declare the intent this work serves first.',
      toolCalls: [{ name: 'select_active_intent', arguments: { intent_id: 'INT-001' } }],
      expect: { lastMessageIncludes: 'INT-001' },
    },
    {
      text: 'Now the lockout itself.',
      toolCalls: [{ name: 'write_to_file', arguments: { path: DEMO_FILES.login, content: LOGIN } }],
      expect: { lastMessageIncludes: '<intent_context>' },
    },
    {
      text: 'Invoices should log failed payments too; I will touch billing.',
      toolCalls: [{ name: 'write_to_file', arguments: { path: DEMO_FILES.outOfScope, content: "'use strict';\nmodule.exports = {};\n" } }],
      expect: { anyMessageIncludes: 'replaced src/auth/login.js' },
    },
    {
      text: 'That path is outside my scope; I will ask for it.',
      toolCalls: [
        {
          name: 'scope_expansion_request',
          arguments: { intent_id: 'INT-001', paths: ['src/billing/**'], justification: 'Failed payments should count as failed logins.' },
        },
      ],
      expect: { lastMessageIncludes: '"error"' },
    },
    {
      text: 'Either way, the lockout needs a test.',
      toolCalls: [{ name: 'write_to_file', arguments: { path: DEMO_FILES.test, content: LOGIN_TEST } }],
    },
    {
      text: 'Done, I believe.',
      toolCalls: [{ name: 'attempt_completion', arguments: { result: 'Accounts lock for fifteen minutes after five failed logins in a minute.' } }],
      expect: { anyMessageIncludes: '<hook_output hook="lint">' },
    },
    {
      text: 'The test says the lock comes one failure late: the limit must be five.',
      toolCalls: [
        {
          name: 'apply_diff',
          arguments: { path: DEMO_FILES.login, diff: '<<<<<<< SEARCH\nconst MAX_FAILURES = 6;\n=======\nconst MAX_FAILURES = 5;\n>>>>>>> REPLACE' },
        },
      ],
      expect: { lastMessageIncludes: 'the completion was not accepted' },
    },
    {
      text: 'Fixed; the tests should pass now.',
      toolCalls: [
        {
          name: 'attempt_completion',
          arguments: { result: 'Accounts lock for fifteen minutes after five failed logins within a minute; tests/auth/login.test.js covers it.' },
        },
      ],
      expect: { anyMessageIncludes: 'applied 1 block' },
    },
  ],
};
