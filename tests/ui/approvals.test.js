// The Approvals section in a real VS Code, driven in Debian's Chromium against the packed .vsix: a
// scripted task asks for a scope expansion (the gatekeeper's ask) and makes a write a hook escalates
// with `ask`; the expansion is approved and the write rejected with a reason by clicking their cards;
// the agent's tool results (the transcript) and the scripted model's own expectations say what the
// agent received, and the activity-bar badge counts what waits.
'use strict';
const { before, after, test } = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const { ledgerRecords } = require('../support/ledger');
const { spawnSync } = require('child_process');
const path = require('path');
const { ROOT } = require('../../scripts/lib');
const { startVsCode } = require('./harness');
const { ensureAgents } = require('../../scripts/agents');
const { CLIENTS, runAgent } = require('../agents/support/clients');

const CLI = path.join(ROOT, 'target/release/chokepoint');

const version = require(path.join(ROOT, 'package.json')).version;
delete process.env.NODE_TEST_CONTEXT;

const REASON = 'keep login.js as it is; put the lockout in lockout.js';
const HOOKS = `version: 1
hooks:
  PreToolUse:
    - name: review-login
      tool: write_to_file
      paths: ["src/auth/login.js"]
      ask: "changes to login.js are reviewed"
    - name: confirm-claude-writes
      tool: Write
      ask: "a person confirms what Claude Code writes"
`;
const SCRIPT = {
  model: 'scripted-approvals',
  steps: [
    { toolCalls: [{ name: 'select_active_intent', arguments: { intent_id: 'INT-001' } }] },
    {
      toolCalls: [
        {
          name: 'scope_expansion_request',
          arguments: { intent_id: 'INT-001', paths: ['docs/**'], justification: 'the lockout needs a line in the user docs' },
        },
      ],
    },
    {
      toolCalls: [
        {
          name: 'write_to_file',
          arguments: { path: 'src/auth/login.js', content: "'use strict';\n// rewritten by the agent\nmodule.exports = { login: () => false };\n" },
        },
      ],
      expect: { lastMessageIncludes: 'approved by human: docs/** added to the scope of INT-001' },
    },
    // The model answers only if the rejection's reason is in the request: otherwise the scripted
    // server answers 400 and the task ends in error.
    {
      toolCalls: [{ name: 'attempt_completion', arguments: { result: 'left login.js alone' } }],
      expect: { lastMessageIncludes: `rejected by human: ${REASON}` },
    },
  ],
};

let vsc, page, sidebar;
const approvals = () => sidebar().getByTestId('approvals');
const task = () => sidebar().getByTestId('task');
const badge = () =>
  page
    .locator('.activitybar')
    .getByRole('tab', { name: /^Chokepoint/ })
    .locator('.badge-content');
/** What the badge shows: '' when there is none (VS Code keeps the element, hidden, when the count is gone). */
async function badgeText() {
  const b = badge();
  if ((await b.count()) === 0 || !(await b.first().isVisible())) return '';
  return ((await b.first().textContent()) || '').trim();
}

before(async () => {
  vsc = await startVsCode();
  ({ page, sidebar } = vsc);
  await page.locator('.statusbar').getByText(`Chokepoint ${version}`).waitFor({ timeout: 90000 });
  fs.writeFileSync(path.join(vsc.workspace, '.orchestration/hooks.yaml'), HOOKS);
  const script = path.join(vsc.workspace, '.orchestration/approvals.script.json');
  fs.writeFileSync(script, JSON.stringify(SCRIPT));
  fs.mkdirSync(path.join(vsc.workspace, '.vscode'), { recursive: true });
  fs.writeFileSync(path.join(vsc.workspace, '.vscode/settings.json'), JSON.stringify({ 'chokepoint.agent.model': `scripted:${script}` }));
  await vsc.openSidebar();
  await approvals().waitFor({ timeout: 30000 });
  // The engine picked the new hooks.yaml up (it watches its configuration).
  await sidebar().getByText('PreToolUse').first().waitFor({ timeout: 30000 });
});

after(async () => {
  if (vsc) await vsc.stop();
});

test('nothing waits at first: the section says so and the icon has no badge', async () => {
  await approvals().getByTestId('approvals-status').getByText('Nothing waits for approval.').waitFor({ timeout: 30000 });
  assert.strictEqual(await badgeText(), '');
});

test('a scope expansion approved and a write rejected with a reason on their cards reach the agent', async () => {
  const picker = task().getByTestId('task-model');
  const id = `scripted:${path.join(vsc.workspace, '.orchestration/approvals.script.json')}`;
  await picker.locator(`option[value="${id}"]`).waitFor({ state: 'attached', timeout: 30000 });
  await picker.selectOption(id);
  await task().getByTestId('task-prompt').fill('Lock an account after five failed logins (INT-001).');
  // The person folded the Approvals section: a Pending that arrives opens it again.
  const toggle = sidebar().getByTestId('approvals-toggle');
  await toggle.click();
  assert.strictEqual(await toggle.getAttribute('aria-expanded'), 'false');
  await task().getByRole('button', { name: 'Run the prompt' }).click();

  // The gatekeeper's ask: a card with the paths and the justification; the badge counts it.
  const expansion = approvals().getByTestId('pending').filter({ hasText: 'docs/**' });
  await expansion.waitFor({ timeout: 60000 });
  assert.strictEqual(await toggle.getAttribute('aria-expanded'), 'true', 'a new Pending opens the folded section');
  assert.strictEqual(await expansion.getAttribute('data-kind'), 'scope_expansion');
  assert.deepStrictEqual(await expansion.getByTestId('pending-paths').locator('li').allTextContents(), ['docs/**']);
  assert.match(await expansion.textContent(), /the lockout needs a line in the user docs/);
  await badge().getByText('1').waitFor({ timeout: 10000 });
  // Every action of the kind is a button, in the kind's order.
  const actions = await expansion.locator('[data-action]').evaluateAll((els) => els.map((e) => e.dataset.action));
  assert.deepStrictEqual(actions, ['approve', 'reject', 'edit', 'approve_and_save']);
  // Keyboard reachable: the reason box takes the focus and Tab reaches the buttons.
  await expansion.getByTestId('pending-reason').focus();
  await page.keyboard.press('Tab');
  assert.strictEqual(await expansion.locator(':focus').getAttribute('data-action'), 'approve');
  await page.keyboard.press('Enter');

  // The write the hook escalates: its card shows the diff of the file, before from disk, after from the input.
  const write = approvals().getByTestId('pending').filter({ hasText: 'write_to_file' });
  await write.waitFor({ timeout: 60000 });
  await expansion.waitFor({ state: 'detached', timeout: 10000 });
  const diff = write.getByTestId('pending-diff');
  assert.match(await diff.textContent(), /\+\/\/ rewritten by the agent/);
  assert.match(await diff.textContent(), /-.*function login/);
  assert.match(await write.textContent(), /changes to login.js are reviewed/);
  // A rejection needs its reason: without one the card says so and nothing is sent.
  await write.getByTestId('action-reject').click();
  await write
    .getByTestId('pending-error')
    .getByText(/A reason is required to reject/)
    .waitFor({ timeout: 5000 });
  await write.getByTestId('pending-reason').fill(REASON);
  await write.getByTestId('action-reject').click();
  await write.waitFor({ state: 'detached', timeout: 10000 });

  // The task ends in success only if the model's last request carried the reason (its expectation).
  const ended = task().getByTestId('task-ended');
  await ended.waitFor({ timeout: 60000 });
  assert.strictEqual(await ended.getAttribute('data-status'), 'success', await ended.textContent());

  // What the agent received, as the transcript shows its tool results.
  const row = (tool) => task().locator(`[data-testid="tool-call"][data-tool="${tool}"]`);
  assert.match(await row('scope_expansion_request').getByTestId('tool-result').textContent(), /approved by human: docs\/\*\* added to the scope of INT-001/);
  assert.match(
    await row('write_to_file').getByTestId('tool-result').textContent(),
    new RegExp(`rejected by human: ${REASON.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
  );
  assert.ok(!fs.readFileSync(path.join(vsc.workspace, 'src/auth/login.js'), 'utf8').includes('rewritten by the agent'), 'the rejected write did not run');

  // Nothing waits any more: no badge, the empty state.
  await approvals().getByTestId('approvals-status').getByText('Nothing waits for approval.').waitFor({ timeout: 10000 });
  assert.strictEqual(await badgeText(), '');
});

test("Claude Code's ask waits on a card that names the agent and its session, and its write runs once approved there", async () => {
  // The real Claude Code CLI on a scripted Anthropic server, its hooks set up by `chokepoint init`.
  // Its hook process finds the extension's live engine by the socket in code-server's runtime folder,
  // so the ask opens a Pending in VS Code and the hook waits on it.
  await ensureAgents({ only: ['claude'] });
  const ws = vsc.workspace;
  // The committed settings find the program at run time; this machine names it in Claude Code's
  // local settings, as a person with chokepoint off PATH would.
  for (const args of [[], ['--local', '--program', CLI]]) {
    const init = spawnSync(CLI, ['init', '--agent', 'claude', '--workspace', ws, ...args], { encoding: 'utf8' });
    assert.strictEqual(init.status, 0, init.stderr);
  }
  const CONTENT = "'use strict';\n// written by Claude Code, approved in VS Code\n";
  const t = CLIENTS.claude.tools;
  const script = [...t.mcp('select_active_intent', { intent_id: 'INT-001' }), { tools: [t.write(ws, 'src/auth/claude.js', CONTENT)] }, { text: 'Done.' }];
  const model = await CLIENTS.claude.startServer({ script });
  const env = { XDG_RUNTIME_DIR: path.join(vsc.runDir, 'xdg', 'run') };
  let r;
  const run = runAgent('claude', { workspace: ws, prompt: 'Do as scripted.', serverUrl: model.url, timeoutMs: 150000, env });
  try {
    const card = approvals().getByTestId('pending').filter({ hasText: 'Claude Code' });
    await card.waitFor({ timeout: 90000 });
    assert.match(await card.getByTestId('pending-who').textContent(), /^Claude Code · session claude:\S+ · intent INT-001 · hook confirm-claude-writes$/);
    // The head names the agent and its session, short (the full id on hover), not the hook.
    const by = card.getByTestId('pending-by');
    assert.match(await by.textContent(), /^asked by Claude Code, session \S{1,8}…?$/);
    assert.match(await by.getAttribute('title'), /^session claude:\S+; the hook that asked: confirm-claude-writes$/);
    // The countdown moves, toward what happens when nobody answers.
    const countdown = card.getByTestId('pending-countdown');
    const left = async () => {
      const text = await countdown.textContent();
      const m = /^Lapses in (\d+):(\d\d): then the call is denied\.$/.exec(text);
      assert.ok(m, `the countdown reads: ${text}`);
      return Number(m[1]) * 60 + Number(m[2]);
    };
    const first = await left();
    assert.ok(first > 240 && first <= 300, `${first} s left of five minutes`);
    await page.waitForTimeout(2500);
    const then = await left();
    assert.ok(then < first && then >= first - 4, `the countdown went from ${first} s to ${then} s`);
    assert.match(await card.textContent(), /a person confirms what Claude Code writes/);
    assert.match(await card.getByTestId('pending-diff').textContent(), /\+\/\/ written by Claude Code, approved in VS Code/);
    await card.getByTestId('action-approve').click();
    await card.waitFor({ state: 'detached', timeout: 15000 });
  } finally {
    r = await run;
    await model.close();
  }
  assert.strictEqual(r.timedOut, false, `claude timed out; stderr: ${r.stderr.slice(-800)}`);
  assert.strictEqual(r.code, 0, `claude exited ${r.code}; stderr: ${r.stderr.slice(-800)}`);
  assert.strictEqual(fs.readFileSync(path.join(ws, 'src/auth/claude.js'), 'utf8'), CONTENT, 'the approved write ran');

  // The ledger has the person's decision on Claude Code's session.
  const records = ledgerRecords(ws);
  const decided = records.filter((x) => x.kind === 'approval' && x.data.phase === 'decision' && /^claude:/.test(x.session ?? ''));
  assert.strictEqual(decided.length, 1, JSON.stringify(decided));
  assert.strictEqual(decided[0].data.status, 'approved');
});
