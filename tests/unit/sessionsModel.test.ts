// What the Sessions view says of each session (extension/src/ui/sessionsModel.ts): the state its icon
// and menu follow, its line and description, where it works when not here, the counts, and when the
// view must read the sessions again although nothing was recorded.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { SessionView } from '../../native/node/index';
import {
  clock,
  countsText,
  holdingCount,
  leaseDetail,
  leaseState,
  leaseText,
  nextLook,
  placeText,
  sessionDescription,
  sessionLabel,
  sessionTooltip,
} from '../../extension/src/ui/sessionsModel';

const NOW = Date.UTC(2026, 10, 28, 10, 0, 0);
const ID = 'claude:0f3a9c2e-1111-2222-3333-444455556666';

function session(over: Partial<SessionView> = {}): SessionView {
  return { sessionId: ID, agentId: 'claude', label: 'Claude Code', subagents: [], leaseIdle: false, actions: [], records: 4, allowed: 2, denied: 1, ...over };
}
const lease = (over: Partial<NonNullable<SessionView['lease']>> = {}) => ({
  intentId: 'INT-001',
  sessionId: ID,
  since: NOW - 60_000,
  expires: NOW + 300_000,
  ...over,
});

test('the state follows the lease: held, idle (free to take), revoked, or none', () => {
  assert.equal(leaseState(session({ lease: lease() })), 'held');
  assert.equal(leaseState(session({ lease: lease({ expires: NOW - 1 }), leaseIdle: true })), 'idle');
  assert.equal(leaseState(session({ revoked: { sessionId: ID, intentId: 'INT-001', by: 'ana via VS Code', at: NOW } })), 'revoked');
  assert.equal(leaseState(session()), 'none');
});

test("a session's line: the agent, its short id, and where it works only when that is not here", () => {
  assert.equal(sessionLabel(session(), { worktree: 'web' }), 'Claude Code · claude:0f3a9c2e');
  // This worktree: nothing more said.
  assert.equal(sessionLabel(session({ worktree: 'web', branch: 'main' }), { worktree: 'web' }), 'Claude Code · claude:0f3a9c2e');
  // Another worktree of the repository: its name and branch.
  assert.equal(sessionLabel(session({ worktree: 'web-wt2', branch: 'feature-x' }), { worktree: 'web' }), 'Claude Code · claude:0f3a9c2e · web-wt2 · feature-x');
  // In a team, the lease's machine; alone, every lease is this machine's: not said.
  assert.equal(placeText(session({ worktree: 'web', branch: 'main', lease: lease({ machine: 'alpha' }) }), { worktree: 'web', team: true }), 'alpha');
  assert.equal(placeText(session({ worktree: 'web', branch: 'main', lease: lease({ machine: 'vm' }) }), { worktree: 'web' }), '');
  assert.equal(
    placeText(session({ worktree: 'alpha', branch: 'main', lease: lease({ machine: 'alpha' }) }), { worktree: 'beta', team: true }),
    'alpha · alpha · main',
  );
  // The whole id is in the tooltip.
  assert.match(
    sessionTooltip(session({ model: 'sonnet', subagents: ['general-purpose:a1'] })),
    new RegExp(`session \`${ID}\`[\\s\\S]*model sonnet[\\s\\S]*sub-agents: general-purpose:a1`),
  );
});

test('its description: the intent and its state, then the counts', () => {
  const until = clock(NOW + 300_000);
  assert.match(until, /^\d{1,2}:\d\d( [AP]M)?$/);
  assert.equal(sessionDescription(session({ lease: lease() })), `INT-001 held until ${until} · 3 actions · 1 denied`);
  assert.equal(leaseText(session({ lease: lease({ expires: NOW - 1 }), leaseIdle: true })), 'INT-001 idle, free to take');
  assert.equal(leaseText(session({ revoked: { sessionId: ID, intentId: 'INT-002', by: 'ana via VS Code', at: NOW } })), 'INT-002 revoked by ana via VS Code');
  assert.equal(sessionDescription(session({ allowed: 1, denied: 0 })), 'no intent · 1 action · 0 denied');
  assert.equal(countsText(session({ allowed: 0, denied: 0 })), '0 actions · 0 denied');
  // The lease's own line says since when an idle one is free, and why one was revoked.
  assert.match(leaseDetail(session({ lease: lease({ expires: NOW - 1 }), leaseIdle: true })).label, /^INT-001 idle since .+, free to take$/);
  assert.deepEqual(leaseDetail(session({ revoked: { sessionId: ID, intentId: 'INT-002', by: 'ana', reason: 'frozen', at: NOW } })).detail, 'frozen');
});

test('the header counts the sessions holding an intent; an idle lease is held by nobody', () => {
  const sessions = [session({ lease: lease() }), session({ sessionId: 'b', lease: lease({ expires: NOW - 1 }), leaseIdle: true }), session({ sessionId: 'c' })];
  assert.equal(holdingCount(sessions), 1);
  assert.equal(holdingCount([]), 0);
});

test('the view looks again just after the first held lease runs out; an idle lease schedules nothing', () => {
  assert.equal(nextLook([session({ lease: lease({ expires: NOW + 4_000 }) }), session({ lease: lease({ expires: NOW + 9_000 }) })], NOW), 4_250);
  // Already past (the core has not called it idle yet): at least a second, not a busy loop.
  assert.equal(nextLook([session({ lease: lease({ expires: NOW - 5_000 }) })], NOW), 1_000);
  // Idle since long ago: nothing to wait for.
  assert.equal(nextLook([session({ lease: lease({ expires: NOW - 5_000 }), leaseIdle: true })], NOW), undefined);
  assert.equal(nextLook([session()], NOW), undefined);
  // A lease of a year: within what a timer takes.
  assert.equal(nextLook([session({ lease: lease({ expires: NOW + 365 * 86_400_000 }) })], NOW), 2 ** 31 - 1);
});
