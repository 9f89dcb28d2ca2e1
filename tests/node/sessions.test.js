// The Sessions view and a person's revocation through the binding, as the sidebar drives them: every
// agent's session from the trace and the leases (Claude Code's hook is another process, the
// `chokepoint` CLI), and a revoked session's next write denied with the revocation, here and in a hook
// process judging alone.
'use strict';
const { test } = require('node:test');
const assert = require('node:assert');
const { execFileSync, spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const ROOT = path.resolve(__dirname, '../..');
const binding = require(path.join(ROOT, 'native/node'));
const CLI = path.join(ROOT, 'target/release/chokepoint');
const support = require('../support/workspace');
const sampleWorkspace = () => support.sampleWorkspace(ROOT, { prefix: 'chokepoint-sessions-test-' });

/** Claude Code's PreToolUse for a Write, answered by `chokepoint hook` judging alone. */
function claudeWrites(dir, rel) {
  const input = {
    session_id: 'S1',
    cwd: dir,
    hook_event_name: 'PreToolUse',
    tool_name: 'Write',
    tool_input: { file_path: path.join(dir, rel), content: 'x\n' },
    tool_use_id: 't1',
  };
  const r = spawnSync(CLI, ['hook', '--agent', 'claude', '--local', '--workspace', dir], { input: JSON.stringify(input), encoding: 'utf8' });
  assert.strictEqual(r.status, 0, r.stderr);
  return r.stdout.trim() ? JSON.parse(r.stdout).hookSpecificOutput : undefined;
}

test('every agent working in the workspace is listed with its lease, actions and denials', () => {
  const dir = sampleWorkspace();
  const engine = binding.Engine.open(dir);
  execFileSync(CLI, ['intent', 'select', '--workspace', dir, '--session', 'claude:S1', '--agent', 'claude', 'INT-001'], { stdio: 'pipe' });
  assert.strictEqual(claudeWrites(dir, 'src/auth/lockout.js'), undefined);
  const denied = claudeWrites(dir, 'src/billing/invoice.js');
  assert.strictEqual(denied.permissionDecision, 'deny');
  // Our own agent, in this process: a write before any intent is denied.
  const ours = engine.evaluate(
    'PreToolUse',
    'write_to_file',
    ['src/auth/a.js'],
    { path: 'src/auth/a.js', content: 'x' },
    { sessionId: 'our-1', agentId: 'chokepoint' },
  );
  assert.strictEqual(ours.decision, 'deny');
  engine.flushTrace();

  const sessions = engine.sessions();
  const claude = sessions.find((s) => s.sessionId === 'claude:S1');
  assert.ok(claude, JSON.stringify(sessions));
  assert.deepStrictEqual([claude.agentId, claude.label, claude.lease?.intentId], ['claude', 'Claude Code', 'INT-001']);
  assert.ok(claude.lease.expires > Date.now());
  assert.deepStrictEqual([claude.allowed, claude.denied], [2, 1]);
  assert.match(claude.lastDenial.reason, /`src\/billing\/invoice.js` is outside the scope of intent `INT-001`/);
  assert.deepStrictEqual(
    claude.actions.map((a) => [a.tool, a.decision]),
    [
      ['Write', 'deny'],
      ['Write', 'allow'],
      ['select_active_intent', 'allow'],
    ],
  );
  const mine = sessions.find((s) => s.sessionId === 'our-1');
  assert.deepStrictEqual([mine.label, mine.denied, mine.lease], ['Chokepoint agent', 1, undefined]);
});

test('a revoked lease: released, recorded, and the next write of the session is denied saying so', () => {
  const dir = sampleWorkspace();
  const engine = binding.Engine.open(dir);
  execFileSync(CLI, ['intent', 'select', '--workspace', dir, '--session', 'claude:S1', '--agent', 'claude', 'INT-001'], { stdio: 'pipe' });
  assert.strictEqual(claudeWrites(dir, 'src/auth/lockout.js'), undefined);

  const revoked = engine.revokeLease('claude:S1', 'alice via VS Code', 'hands off the login flow');
  assert.deepStrictEqual(
    [revoked.sessionId, revoked.intentId, revoked.agentId, revoked.by, revoked.reason],
    ['claude:S1', 'INT-001', 'claude', 'alice via VS Code', 'hands off the login flow'],
  );
  assert.deepStrictEqual(engine.intentHolders(), []);
  assert.strictEqual(engine.revokeLease('claude:S1', 'alice via VS Code'), null, 'nothing is left to revoke');
  // The binding throws napi's Errors, which carry a code (a validator's argument is typed unknown).
  assert.throws(
    () => engine.revokeLease('claude:S1', ' '),
    (/** @type {Error & { code?: string }} */ e) => e.code === 'EINVAL',
  );

  const answer = claudeWrites(dir, 'src/auth/lockout.js');
  assert.strictEqual(answer.permissionDecision, 'deny');
  assert.match(
    answer.permissionDecisionReason,
    /the lease of session `claude:S1` on intent `INT-001` was revoked by a person \(alice via VS Code\) at .*: hands off the login flow/,
  );
  const claude = engine.sessions().find((s) => s.sessionId === 'claude:S1');
  assert.strictEqual(claude.lease, undefined);
  assert.strictEqual(claude.revoked.by, 'alice via VS Code');
  const recorded = engine.traceRecent({ session: 'claude:S1' });
  assert.ok(
    recorded.some((r) => r.decision === 'revoked' && r.intent === 'INT-001'),
    JSON.stringify(recorded),
  );
});

test('two worktrees of one repository share the holders, each with its worktree and branch', () => {
  const dir = sampleWorkspace();
  const git = (cwd, ...args) =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', '-c', 'init.defaultBranch=main', '-c', 'commit.gpgsign=false', ...args], {
      cwd,
      stdio: 'pipe',
    });
  git(dir, 'init', '-q');
  git(dir, 'add', '.');
  git(dir, 'commit', '-q', '-m', 'governed');
  const linked = `${dir}-wt2`;
  git(dir, 'worktree', 'add', '-q', '-b', 'feature-x', linked);
  try {
    const main = binding.Engine.open(dir);
    const other = binding.Engine.open(linked);
    const ctx = (sessionId) => ({ sessionId, agentId: 'claude' });
    const select = (engine, sessionId) => engine.evaluate('PreToolUse', 'select_active_intent', null, { intent_id: 'INT-001' }, ctx(sessionId));
    assert.strictEqual(select(other, 'claude:B').decision, 'allow');
    const refused = select(main, 'claude:A');
    assert.strictEqual(refused.decision, 'deny');
    assert.match(refused.reason, /session `claude:B` \(agent `claude`\) on machine `[^`]+` in worktree `[^`]+-wt2` on branch `feature-x`/);
    for (const engine of [main, other]) {
      const [held] = engine.intentHolders();
      assert.deepStrictEqual([held.sessionId, held.worktree, held.branch], ['claude:B', path.basename(linked), 'feature-x']);
      assert.strictEqual(fs.realpathSync(held.worktreeRoot), fs.realpathSync(linked));
    }
    const listed = main.sessions().find((s) => s.sessionId === 'claude:B');
    assert.deepStrictEqual([listed?.worktree, listed?.branch, listed?.lease?.intentId], [path.basename(linked), 'feature-x', 'INT-001']);
  } finally {
    fs.rmSync(linked, { recursive: true, force: true, maxRetries: 20, retryDelay: 100 });
  }
});
