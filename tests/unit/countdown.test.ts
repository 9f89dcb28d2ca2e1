// The card's countdown and session name (webview/src/countdown.ts): what a person reads of how long
// an ask waits and of who asked, for each outcome at the deadline.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clock, countdownText, shortSession } from '../../webview/src/countdown';

test('the countdown reads minutes and seconds left, then what happens at the deadline', () => {
  const now = 1_000_000;
  const check = (deadlineMs: number | null, onTimeout: 'reject' | 'deny' | 'agent_prompt', expected: string) =>
    assert.strictEqual(countdownText({ deadlineMs, onTimeout, agent: "VS Code's agent" }, now), expected);
  check(now + 252_400, 'deny', 'Lapses in 4:12: then the call is denied.');
  check(now + 299_999, 'reject', 'Lapses in 4:59: then it counts as rejected.');
  check(now + 61_000, 'agent_prompt', "Lapses in 1:01: then VS Code's agent asks you in its own prompt.");
  check(now - 1, 'deny', 'Lapsed: the call is denied.');
  check(null, 'deny', '');
  assert.strictEqual(clock(3_725), '1:02:05');
  assert.strictEqual(clock(-3), '0:00');
});

test("a session is named by the agent's own id, its first eight characters", () => {
  assert.strictEqual(shortSession('claude:3f2a9c1e-77b0-4c1d-9d5e-0a1b2c3d4e5f'), '3f2a9c1e…');
  assert.strictEqual(shortSession('vscode:abc'), 'abc');
  assert.strictEqual(shortSession('task-1'), 'task-1');
});
