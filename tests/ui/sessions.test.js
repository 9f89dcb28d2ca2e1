// The Sessions section in a real VS Code, driven in Debian's Chromium against the packed .vsix:
// Claude Code's hook (`chokepoint hook --agent claude`, fed a PreToolUse input as Claude Code feeds
// it) writes under an intent selected from a terminal; the session appears with its agent and its
// lease; a person revokes the lease with its button, confirms in VS Code's modal dialog, and the
// hook's next write is denied with who revoked it and why.
'use strict';
const { before, after, test } = require('node:test');
const assert = require('node:assert');
const { execFileSync, spawnSync } = require('child_process');
const fs = require('fs');
const { ledgerSize } = require('../support/ledger');
const path = require('path');
const { ROOT } = require('../../scripts/lib');
const { startVsCode } = require('./harness');

const version = require(path.join(ROOT, 'package.json')).version;
delete process.env.NODE_TEST_CONTEXT;

const CLI = path.join(ROOT, 'target/release/chokepoint');
const REASON = 'the login flow is frozen until the audit';

let vsc, page, sidebar;
const sessions = () => sidebar().getByTestId('sessions');
const claude = () => sessions().locator('[data-testid="session"][data-session="claude:S1"]');

/** Claude Code's PreToolUse for a Write of `rel`; its answer as Claude Code reads it (none: allowed). */
function claudeWrites(rel) {
  const input = {
    session_id: 'S1',
    transcript_path: '/tmp/S1.jsonl',
    cwd: vsc.workspace,
    permission_mode: 'default',
    hook_event_name: 'PreToolUse',
    tool_name: 'Write',
    tool_input: { file_path: path.join(vsc.workspace, rel), content: "'use strict';\n" },
    tool_use_id: 'toolu_1',
  };
  const r = spawnSync(CLI, ['hook', '--agent', 'claude', '--workspace', vsc.workspace], { input: JSON.stringify(input), encoding: 'utf8', timeout: 30000 });
  assert.strictEqual(r.status, 0, r.stderr);
  return r.stdout.trim() ? JSON.parse(r.stdout).hookSpecificOutput : undefined;
}

before(async () => {
  vsc = await startVsCode();
  ({ page, sidebar } = vsc);
  await page.locator('.statusbar').getByText(`Chokepoint ${version}`).waitFor({ timeout: 90000 });
  await vsc.openSidebar();
  await sessions().waitFor({ timeout: 30000 });
});

after(async () => {
  if (vsc) await vsc.stop();
});

test("an external agent's session shows with its lease, and a revoked lease denies its next write", async () => {
  execFileSync(CLI, ['intent', 'select', '--workspace', vsc.workspace, '--session', 'claude:S1', '--agent', 'claude', 'INT-001'], { stdio: 'pipe' });
  assert.strictEqual(claudeWrites('src/auth/lockout.js'), undefined, 'the holder writes in its scope');

  // The trace changed: the section lists the session, recognisably Claude Code, holding INT-001.
  await claude().waitFor({ timeout: 30000 });
  assert.strictEqual(await claude().getAttribute('data-agent'), 'claude');
  assert.strictEqual(await claude().getByTestId('session-agent').textContent(), 'Claude Code');
  await claude().getByTestId('session-lease').getByText(/^INT-001 until /).waitFor({ timeout: 10000 });
  await claude().getByTestId('session-counts').getByText('allowed 2 · denied 0').waitFor({ timeout: 10000 });
  assert.match(await claude().getByTestId('session-actions').textContent(), /Write allow/);

  // Revoke, with a reason; VS Code asks in a modal dialog first, and nothing happens before it is confirmed.
  await claude().getByTestId('session-reason').fill(REASON);
  await claude().getByTestId('session-revoke').click();
  const dialog = page.locator('.monaco-dialog-box');
  await dialog.waitFor({ timeout: 10000 });
  assert.match(await dialog.textContent(), /Revoke the lease of Claude Code session claude:S1 on INT-001\?/);
  await dialog.getByRole('button', { name: 'Revoke Lease' }).click();
  await claude().getByTestId('session-lease').getByText(/^lease on INT-001 revoked by .+ via VS Code/).waitFor({ timeout: 10000 });
  await claude().getByTestId('session-result').getByText('Revoked the lease of claude:S1 on INT-001.').waitFor({ timeout: 10000 });
  assert.strictEqual(await claude().getByTestId('session-revoke').isVisible(), false, 'no lease, no Revoke button');

  // The hook's next write: denied, saying who revoked the lease, why, and what to do.
  const answer = claudeWrites('src/auth/lockout.js');
  assert.strictEqual(answer?.permissionDecision, 'deny', JSON.stringify(answer));
  assert.match(answer.permissionDecisionReason, /the lease of session `claude:S1` on intent `INT-001` was revoked by a person \(.+ via VS Code\) at /);
  assert.ok(answer.permissionDecisionReason.includes(REASON), answer.permissionDecisionReason);
  assert.match(answer.permissionDecisionReason, /ask the person who revoked the lease/);
  // And the section shows that denial.
  await claude().getByTestId('session-last-denial').getByText(/was revoked by a person/).waitFor({ timeout: 30000 });
  await claude().getByTestId('session-counts').getByText('allowed 2 · denied 1').waitFor({ timeout: 10000 });
});

test('a lease that runs out shows as idle, free to take, on its own, with nothing written to the trace', async () => {
  // Leases of four seconds; nobody renews this one.
  const hooks = path.join(vsc.workspace, '.orchestration/hooks.yaml');
  fs.writeFileSync(hooks, `${fs.readFileSync(hooks, 'utf8')}\ngatekeeper:\n  lease_seconds: 4\n`);
  execFileSync(CLI, ['intent', 'select', '--workspace', vsc.workspace, '--session', 'claude:S2', '--agent', 'claude', 'INT-002'], { stdio: 'pipe' });
  const s2 = sessions().locator('[data-testid="session"][data-session="claude:S2"]');
  await s2.getByTestId('session-lease').getByText(/^INT-002 until /).waitFor({ timeout: 30000 });
  const size = ledgerSize(vsc.workspace);
  // Expired: the section no longer shows the lease as held but as idle, free to take (its holder may
  // still renew it, issue 30), without a refresh asked by anything else.
  const holds = async () => (await s2.count()) > 0 && /^INT-002 until/.test((await s2.getByTestId('session-lease').textContent().catch(() => '')) ?? '');
  for (let i = 0; i < 100 && (await holds()); i++) await page.waitForTimeout(200);
  assert.strictEqual(await holds(), false, 'the expired lease is still shown as held');
  assert.match(await s2.getByTestId('session-lease').textContent(), /^INT-002 idle since .+, free to take$/);
  assert.strictEqual(ledgerSize(vsc.workspace), size, 'the trace did not change meanwhile');
});
