// VS Code's own agent governed in a real VS Code: connected with the command "Chokepoint: Connect
// VS Code's Agent" (which writes .github/hooks/chokepoint.json), run in the Chat view's Agent mode on
// a scripted model this extension contributes, with the intent tools this extension contributes.
// The agent selects its intent through the contributed tool, writes in scope (allowed, recorded),
// writes out of scope (denied, the file unchanged, the reason in the model's next request), runs a
// shell command that writes out of scope (run contained: never applied, and reported), and makes a write a
// hook escalates with `ask`, approved on its card in the sidebar, after which the tool runs. The
// denial's reason and next step are shown to the person in the chat, as the hook's message.
// Each step of the script checks what the model was told before it answers: a script gone off the
// rails answers HTTP 400 and the chat shows an error instead of the last step's text.
'use strict';
const { before, after, test } = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const { ledgerRecords } = require('../support/ledger');
const path = require('path');
const { ROOT } = require('../../scripts/lib');
const { startVsCode } = require('./harness');

const version = require(path.join(ROOT, 'package.json')).version;
delete process.env.NODE_TEST_CONTEXT;

const HOOKS = `version: 1
hooks:
  PreToolUse:
    - name: review-sessions
      tool: create_file
      paths: ["src/auth/session.js"]
      ask: "new session code is reviewed"
`;
const LOCKOUT = "'use strict';\n// Five failures in a minute lock the account (INT-001).\nmodule.exports = { MAX_FAILURES: 5 };\n";
const SESSION = "'use strict';\nmodule.exports = { ttlMs: 15 * 60 * 1000 };\n";
const DONE = 'All done within INT-001.';

function script(ws) {
  const at = (rel) => path.join(ws, rel);
  return {
    model: 'scripted-vscode-chat',
    steps: [
      { text: 'Declaring my intent.', toolCalls: [{ name: 'select_active_intent', arguments: { intent_id: 'INT-001' } }] },
      {
        toolCalls: [{ name: 'create_file', arguments: { filePath: at('src/auth/lockout.js'), content: LOCKOUT } }],
        // The contributed tool answered the intent's context: the hook gave this chat session INT-001.
        expect: { lastMessageIncludes: '<intent_context>' },
      },
      { toolCalls: [{ name: 'create_file', arguments: { filePath: at('src/billing/invoice.js'), content: '// rewritten\n' } }] },
      {
        toolCalls: [
          {
            name: 'run_in_terminal',
            arguments: {
              command: 'echo "// by the shell" >> src/billing/invoice.js; echo "// ok" > src/auth/shell.js',
              explanation: 'note it',
              goal: 'note it',
              mode: 'sync',
            },
          },
        ],
        // The denial of the write out of scope, as the model reads it.
        expect: { lastMessageIncludes: 'outside' },
      },
      {
        toolCalls: [{ name: 'create_file', arguments: { filePath: at('src/auth/session.js'), content: SESSION } }],
        // The contained command's report (its write outside the scope not applied), in the
        // terminal's output the model read (wrapped at the terminal's width: a short needle).
        expect: { lastMessageIncludes: 'src/billing/invoice.js' },
      },
      { text: DONE },
    ],
  };
}

let vsc, page, sidebar;
const chat = () => page.locator('.interactive-session');
const approvals = () => sidebar().getByTestId('approvals');

let invoiceBefore;
before(async () => {
  vsc = await startVsCode({ outsideHome: true });
  ({ page, sidebar } = vsc);
  await page.locator('.statusbar').getByText(`Chokepoint ${version}`).waitFor({ timeout: 90000 });
  const ws = vsc.workspace;
  fs.writeFileSync(path.join(ws, '.orchestration/hooks.yaml'), HOOKS);
  fs.writeFileSync(path.join(ws, 'chat.script.json'), JSON.stringify(script(ws)));
  invoiceBefore = fs.readFileSync(path.join(ws, 'src/billing/invoice.js'), 'utf8');
  fs.mkdirSync(path.join(ws, '.vscode'), { recursive: true });
  fs.writeFileSync(path.join(ws, '.vscode/settings.json'), JSON.stringify({ 'chokepoint.chat.scripts': ['chat.script.json'] }));
  // A fresh profile turns the built-in chat extension off until chat is set up; this turns it on.
  await vsc.runCommand('Extensions: Enable All Extensions');
});

after(async () => {
  if (vsc) await vsc.stop();
});

function ledger() {
  return ledgerRecords(vsc.workspace);
}

test('"Connect VS Code\'s Agent" writes the hooks VS Code runs', async () => {
  await vsc.runCommand("Chokepoint: Connect VS Code's Agent (Chat View) to Chokepoint");
  const file = path.join(vsc.workspace, '.github/hooks/chokepoint.json');
  for (let i = 0; i < 100 && !fs.existsSync(file); i++) await page.waitForTimeout(200);
  const hooks = JSON.parse(fs.readFileSync(file, 'utf8'));
  const pre = hooks.hooks.preToolUse ?? hooks.hooks.PreToolUse;
  assert.ok(pre?.length === 1, JSON.stringify(hooks));
  assert.match(pre[0].bash ?? pre[0].command, / hook --agent /);
});

test("VS Code's agent: intent through the contributed tool, writes judged, the shell contained, an ask approved on its card", async () => {
  try {
    await chatSession();
  } catch (e) {
    // What the chat shows (a scripted step's failed expectation is there, as the model error).
    e.message += `\n--- the chat shows:\n${await chat()
      .innerText()
      .catch((err) => String(err))}`;
    throw e;
  }
});

async function chatSession() {
  const ws = vsc.workspace;
  await vsc.runCommand('Chat: Open Chat (Agent)');
  const input = chat().locator('.interactive-input-part .monaco-editor').first();
  await input.waitFor({ timeout: 60000 });
  // Our scripted model, picked in the chat's model picker (it lists the first model and folds the
  // others under "Other Models": searched instead). The models of chokepoint.chat.scripts may come
  // a moment after the settings file: tried until the input shows the model.
  const picked = chat().locator('.interactive-input-part').getByText('Scripted: chat.script.json');
  for (let attempt = 0; attempt < 10 && !(await picked.first().isVisible()); attempt++) {
    await chat()
      .locator('.interactive-input-part')
      .getByText(/Chokepoint demo \(scripted\)|Scripted:/)
      .first()
      .click({ timeout: 60000 });
    await page.getByPlaceholder('Search models').fill('chat.script.json');
    const item = page.locator('.quick-input-widget, .monaco-list').getByText('Scripted: chat.script.json').first();
    if (await item.isVisible({ timeout: 3000 }).catch(() => false)) await item.click();
    else await page.keyboard.press('Escape');
    await page.waitForTimeout(1000);
  }
  await picked.first().waitFor({ timeout: 5000 });
  await input.click();
  await page.keyboard.type('Add the lockout (INT-001).');
  await page.keyboard.press('Enter');

  // VS Code asks before running the contained command (Chokepoint's answer keeps its confirmation).
  const confirm = chat()
    .getByRole('button', { name: /^(Allow|Run|Continue)/ })
    .first();
  await confirm.waitFor({ timeout: 90000 });
  await confirm.click();

  // The escalated write: a card in the sidebar, naming VS Code's agent, approved there.
  await vsc.openSidebar();
  const card = approvals().getByTestId('pending').filter({ hasText: 'session.js' });
  await card.waitFor({ timeout: 90000 });
  assert.match(await card.textContent(), /new session code is reviewed/);
  // Who asked: VS Code's agent and its chat session (short; the full id on hover) instead of the
  // hook, the intent the session holds, and how long a person has (hooks.yaml's default five
  // minutes, which the hook's --deadline 600 leaves whole) and what happens then.
  const by = card.getByTestId('pending-by');
  assert.match(await by.textContent(), /^asked by VS Code\S*.*, session \S+/);
  assert.match(await by.getAttribute('title'), /^session vscode:\S+; the hook that asked: review-sessions$/);
  assert.match(await card.getByTestId('pending-who').textContent(), /intent INT-001/);
  const countdown = card.getByTestId('pending-countdown');
  const secondsLeft = async () => {
    const text = await countdown.textContent();
    const m = /^Lapses in (\d+):(\d\d): then the call is denied\.$/.exec(text);
    assert.ok(m, `the countdown reads: ${text}`);
    return Number(m[1]) * 60 + Number(m[2]);
  };
  const first = await secondsLeft();
  assert.ok(first > 240 && first <= 300, `${first} s left of five minutes`);
  // Issue 30: the ask lasts longer than a minute (it lapsed after 24 s, VS Code's 30 s timeout less
  // our margin), and the person's approval after that still lets the agent's write run.
  await page.waitForTimeout(65000);
  assert.ok(await card.isVisible(), 'the card still waits after 65 s');
  const later = await secondsLeft();
  assert.ok(later <= first - 60 && later > 0, `the countdown went from ${first} s to ${later} s`);
  await card.locator('[data-action="approve"]').click();
  await card.waitFor({ state: 'detached', timeout: 15000 });

  // The script's last step answers only if every expectation before it held.
  await chat().getByText(DONE).waitFor({ timeout: 90000 });

  // Issue 27, item 8: the person reads Chokepoint's reason and next step for the denied write as the
  // hook's own message (VS Code's title of the part stays its "Blocked … hook"; expanded, it shows
  // the hook's `systemMessage` beside VS Code's "A hook prevented chat from continuing").
  // Each hook part is folded into its title (inside the turn's folded steps): unfolded here, its
  // details are rendered on the first unfolding.
  const hookParts = chat().locator('[class*="chat-hook-outcome-"]');
  await hookParts.first().waitFor({ state: 'attached', timeout: 10000 });
  for (let i = 0; i < (await hookParts.count()); i++) {
    const button = hookParts.nth(i).locator('.chat-used-context-label .monaco-button').first();
    if ((await button.getAttribute('aria-expanded')) === 'false') await button.dispatchEvent('click');
  }
  const read = () =>
    hookParts.evaluateAll((els) =>
      els.map((e) => ({
        title: e.querySelector('.chat-used-context-label')?.textContent ?? '',
        reason: e.querySelector('.chat-hook-reason')?.textContent ?? '',
        message: e.querySelector('.chat-hook-message')?.textContent ?? '',
      })),
    );
  let parts = await read();
  for (let i = 0; i < 20 && !parts.some((p) => p.message.includes('src/billing/invoice.js')); i++) {
    await page.waitForTimeout(250);
    parts = await read();
  }
  const shown = parts.map((p) => p.message).find((m) => m.includes('src/billing/invoice.js')) ?? '';
  assert.match(shown, /Chokepoint: `src\/billing\/invoice\.js` is outside the scope of intent `INT-001`/, `the hook parts: ${JSON.stringify(parts, null, 1)}`);
  assert.match(shown, /Next step: call the tool `scope_expansion_request` that the Chokepoint extension contributes/, shown);

  // VS Code's create_file makes the file, then saves the text through an editor model: the content
  // may land a moment after the chat has moved on (seen in CI: session.js still empty at DONE).
  const settled = async (rel, expected) => {
    const file = path.join(ws, rel);
    const read = () => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : undefined);
    for (let i = 0; i < 75 && read() !== expected; i++) await page.waitForTimeout(200);
    return read();
  };
  assert.strictEqual(await settled('src/auth/lockout.js', LOCKOUT), LOCKOUT);
  assert.strictEqual(fs.readFileSync(path.join(ws, 'src/billing/invoice.js'), 'utf8'), invoiceBefore, 'neither the denied write nor the shell changed billing');
  assert.strictEqual(fs.readFileSync(path.join(ws, 'src/auth/shell.js'), 'utf8'), '// ok\n', "the shell's write in scope stayed");
  assert.strictEqual(await settled('src/auth/session.js', SESSION), SESSION, 'the approved write ran');

  const records = ledger().filter((r) => r.agent === 'vscode');
  const calls = records.filter((r) => r.event === 'PreToolUse').map((r) => `${r.tool}:${r.decision.decision}`);
  assert.deepStrictEqual(
    calls.filter((c) => !c.startsWith('select_active_intent')).slice(0, 2),
    ['create_file:allow', 'create_file:deny'],
    JSON.stringify(calls),
  );
  assert.ok(
    records.every((r) => /^vscode:/.test(r.session)),
    'every record names the chat session',
  );

  // The session on view: VS Code's agent holding INT-001, its denial.
  await vsc.openSidebar();
  const tree = await vsc.sessionsView();
  const session = tree
    .locator('.monaco-list-row')
    .filter({ hasText: /^VS Code/ })
    .first();
  await session.waitFor({ timeout: 30000 });
  assert.match(await session.locator('.label-description').textContent(), /^INT-001 /);
  // Its last denial, under it (the most recent session is open).
  await tree
    .locator('.monaco-list-row')
    .filter({ hasText: /^Last denial: .*src\/billing\/invoice\.js/ })
    .waitFor({ timeout: 10000 });
}
