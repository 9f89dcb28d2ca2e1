// The real agent CLIs (scripts/agents.js, pinned) driven headless against scripted model servers:
// their pre-tool hook fires for a write with the file's path, and a hook's deny blocks it. These pin
// what `chokepoint hook --agent …` relies on; docs/agents/clients.md says what each client does.
// A client that cannot be installed fails here (ensureAgents throws), it is never skipped.
'use strict';
const assert = require('node:assert/strict');
const { describe, it, before, after } = require('node:test');
const path = require('path');
const { ensureAgents } = require('../../scripts/agents');
const { RUNNABLE } = require('./support/clients');
const { sessionWithHook, checkDenyJson, checkFailOpen, checkRewrite } = require('./support/checks');

/** What differs per client (checked against the pinned versions; see docs/agents/clients.md). */
const EXPECT = {
  claude: { exit2ReasonReachesModel: true, exit1FailsOpen: true },
  codex: { exit2ReasonReachesModel: true, exit1FailsOpen: true },
  gemini: { exit2ReasonReachesModel: true, exit1FailsOpen: true },
  // Copilot CLI blocks on exit 2 but tells the model only "hook exited with code 2"; a hook that
  // exits 1 (an error) denies the call: it fails closed.
  copilot: { exit2ReasonReachesModel: false, exit1FailsOpen: false },
};

const REASON = 'CHOKEPOINT_TEST_DENY denied.txt is outside the intent';

before(async () => {
  await ensureAgents({ only: RUNNABLE });
});

for (const name of RUNNABLE) {
  describe(name, () => {
    let s;
    before(async () => {
      // One session: write allowed.txt (the hook logs it and lets it through), then denied.txt (the
      // hook exits 2 with a reason on stderr), then finish.
      s = await sessionWithHook(name, {
        action: { match: 'denied\\.txt', exit: 2, stderr: REASON },
        steps: (ws, t) => [{ tools: [t.write(ws, 'allowed.txt', 'ok\n')] }, { tools: [t.write(ws, 'denied.txt', 'no\n')] }, { text: 'Finished.' }],
      });
    });
    after(() => s && s.cleanup());

    it('ends the session', () => {
      assert.equal(s.r.timedOut, false, `timed out; stderr: ${s.r.stderr.slice(-600)}`);
      assert.equal(s.r.code, 0, `exit code ${s.r.code}; stderr: ${s.r.stderr.slice(-600)}`);
      assert.equal(s.server.remaining, 0, 'the client stopped before the script was done');
    });

    it('fires the pre-tool hook for the write, with the file path in its input', () => {
      const pre = s.hooks.filter((h) => h.stdin && JSON.stringify(h.stdin).includes('allowed.txt'));
      assert.ok(pre.length > 0, `no hook input mentions allowed.txt; got ${s.hooks.map((h) => h.event).join(', ')}`);
      const input = pre[0].stdin.tool_input || pre[0].stdin.toolArgs;
      assert.ok(input, `no tool input in ${JSON.stringify(pre[0].stdin).slice(0, 300)}`);
      const where = JSON.stringify(input);
      // A path (absolute for Claude, Gemini and Copilot; inside the patch text for Codex).
      assert.ok(where.includes(path.join(s.ws, 'allowed.txt')) || /\*\*\* Add File: allowed\.txt/.test(where), where);
      assert.equal(s.file('allowed.txt'), 'ok\n');
    });

    it('lets an exit-2 deny block the write', () => {
      assert.equal(s.file('denied.txt'), null, 'denied.txt was written despite the deny');
      const denied = s.toolResults.find((t) => /denied/i.test(t.content) || t.content.includes('CHOKEPOINT_TEST_DENY'));
      assert.ok(denied, `no tool result reports the deny: ${JSON.stringify(s.toolResults.map((t) => t.content.slice(0, 120)))}`);
    });

    it(`${EXPECT[name].exit2ReasonReachesModel ? 'relays' : 'does not relay'} the exit-2 reason to the model's next request`, () => {
      const results = s.toolResults.filter((t) => t.content.includes('CHOKEPOINT_TEST_DENY'));
      assert.equal(results.length > 0, EXPECT[name].exit2ReasonReachesModel, JSON.stringify(s.toolResults.map((t) => t.content.slice(0, 200))));
    });

    it('lets a JSON deny block the write, with its reason', async () => {
      const r = await checkDenyJson(name);
      assert.ok(r.ended && r.hookFired, JSON.stringify(r));
      assert.equal(r.blocked, true, JSON.stringify(r));
      assert.equal(r.reasonInToolResult, true, JSON.stringify(r));
    });

    it('runs the rewritten shell command', async () => {
      const r = await checkRewrite(name);
      assert.equal(r.ran, 'rewritten', JSON.stringify(r));
    });

    it(`${EXPECT[name].exit1FailsOpen ? 'fails open' : 'fails closed'} when the hook exits 1`, async () => {
      const r = await checkFailOpen(name, 'exit1');
      assert.ok(r.ended && r.hookFired, JSON.stringify(r));
      assert.equal(r.allowed, EXPECT[name].exit1FailsOpen, JSON.stringify(r));
    });
  });
}
