// Issue 30, "leases end with their sessions", in a real VS Code: a chat whose turn ended does not
// keep its intent from the next chat. VS Code's own agent (connected through .github/hooks, on two
// scripted models this extension contributes) runs a first chat in the Chat view: it selects INT-001,
// writes, and its turn ends (VS Code's Stop hook). The Sessions view then shows the lease idle,
// free to take. A second chat, in a chat editor (Chat: New Chat Editor), selects INT-001 at once and
// writes under it. The first chat's next turn writes again and is told it lost the intent, to whom.
// Each script checks what its model was told before it answers (a failed expectation answers HTTP
// 400, and the chat shows an error instead of the step's text).
'use strict';
const { before, after, test } = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const { ledgerRecords } = require('../support/ledger');
const { ROOT } = require('../../scripts/lib');
const { startVsCode } = require('./harness');

const version = require(path.join(ROOT, 'package.json')).version;
delete process.env.NODE_TEST_CONTEXT;

const FIRST_DONE = 'First chat: lockout written.';
const FIRST_TOLD = 'First chat: told INT-001 was taken over.';
const SECOND_DONE = 'Second chat: INT-001 taken, session written.';

function scripts(ws) {
  const at = (rel) => path.join(ws, rel);
  const first = {
    model: 'scripted-first-chat',
    steps: [
      { text: 'Declaring my intent.', toolCalls: [{ name: 'select_active_intent', arguments: { intent_id: 'INT-001' } }] },
      {
        toolCalls: [{ name: 'create_file', arguments: { filePath: at('src/auth/first.js'), content: '// first\n' } }],
        expect: { lastMessageIncludes: '<intent_context>' },
      },
      { text: FIRST_DONE },
      // The next turn: a write under INT-001, which the second chat holds by now.
      { toolCalls: [{ name: 'create_file', arguments: { filePath: at('src/auth/again.js'), content: '// again\n' } }] },
      { text: FIRST_TOLD, expect: { lastMessageIncludes: 'lost its lock on intent `INT-001`' } },
    ],
  };
  const second = {
    model: 'scripted-second-chat',
    steps: [
      { text: 'Declaring my intent.', toolCalls: [{ name: 'select_active_intent', arguments: { intent_id: 'INT-001' } }] },
      // The tool answered the intent's context: the hook gave this chat INT-001 (a refusal would not).
      {
        toolCalls: [{ name: 'create_file', arguments: { filePath: at('src/auth/second.js'), content: '// second\n' } }],
        expect: { lastMessageIncludes: '<intent_context>' },
      },
      { text: SECOND_DONE },
    ],
  };
  return { first, second };
}

let vsc, page;
/** The chat in the Chat view, and the one in an editor tab. */
const viewChat = () => page.locator('.part.auxiliarybar .interactive-session, .part.sidebar .interactive-session, .part.panel .interactive-session').first();
const editorChat = () => page.locator('.part.editor .interactive-session').first();

before(async () => {
  vsc = await startVsCode({ outsideHome: true });
  ({ page } = vsc);
  await page.locator('.statusbar').getByText(`Chokepoint ${version}`).waitFor({ timeout: 90000 });
  const ws = vsc.workspace;
  // No completion gate of the project's: every turn the agent ends is let through.
  fs.writeFileSync(path.join(ws, '.orchestration/hooks.yaml'), 'version: 1\n');
  const { first, second } = scripts(ws);
  fs.writeFileSync(path.join(ws, 'first.json'), JSON.stringify(first));
  fs.writeFileSync(path.join(ws, 'second.json'), JSON.stringify(second));
  fs.mkdirSync(path.join(ws, '.vscode'), { recursive: true });
  fs.writeFileSync(path.join(ws, '.vscode/settings.json'), JSON.stringify({ 'chokepoint.chat.scripts': ['first.json', 'second.json'] }));
  await vsc.runCommand('Extensions: Enable All Extensions');
  await vsc.runCommand("Chokepoint: Connect VS Code's Agent (Chat View) to Chokepoint");
  const hooks = path.join(ws, '.github/hooks/chokepoint.json');
  for (let i = 0; i < 100 && !fs.existsSync(hooks); i++) await page.waitForTimeout(200);
  assert.ok(fs.existsSync(hooks), 'the hooks file is written');
});

after(async () => {
  if (vsc) await vsc.stop();
});

/** Picks the scripted model `name` in `chat`'s model picker (tried until the input shows it: the
 *  models of chokepoint.chat.scripts may come a moment after the settings file). */
async function pickModel(chat, name) {
  const part = chat.locator('.interactive-input-part');
  await part.locator('.monaco-editor').first().waitFor({ timeout: 60000 });
  const picked = part.getByText(`Scripted: ${name}`);
  for (let attempt = 0; attempt < 10 && !(await picked.first().isVisible()); attempt++) {
    await part
      .getByText(/Chokepoint demo \(scripted\)|Scripted:|Auto|GPT|Claude/)
      .first()
      .click({ timeout: 60000 });
    await page.getByPlaceholder('Search models').fill(name);
    const item = page.locator('.quick-input-widget, .monaco-list').getByText(`Scripted: ${name}`).first();
    if (await item.isVisible({ timeout: 3000 }).catch(() => false)) await item.click();
    else await page.keyboard.press('Escape');
    await page.waitForTimeout(1000);
  }
  await picked.first().waitFor({ timeout: 5000 });
}

/** Sends `prompt` in `chat`. */
async function send(chat, prompt) {
  await chat.locator('.interactive-input-part .monaco-editor').first().click();
  await page.keyboard.type(prompt);
  await page.keyboard.press('Enter');
}

/** Waits until `check(records)` holds for the ledger's records, and returns them. */
async function ledgerUntil(check, what) {
  let records = [];
  for (let i = 0; i < 150; i++) {
    records = ledgerRecords(vsc.workspace);
    if (check(records)) return records;
    await page.waitForTimeout(200);
  }
  assert.fail(`${what}: ${JSON.stringify(records.map((r) => [r.session, r.event, r.tool, r.decision?.decision]))}`);
}

const vscodeRecords = (records) => records.filter((r) => r.agent === 'vscode');

test("a second chat takes the intent as soon as the first chat's turn ended; the first is told it lost it", async () => {
  const shown = async (e) => {
    e.message += `\n--- the view's chat shows:\n${await viewChat()
      .innerText()
      .catch((err) => String(err))}`;
    e.message += `\n--- the editor's chat shows:\n${await editorChat()
      .innerText()
      .catch((err) => String(err))}`;
    throw e;
  };
  try {
    await twoChats();
  } catch (e) {
    await shown(e);
  }
});

async function twoChats() {
  const ws = vsc.workspace;
  // The first chat, in the Chat view: its turn selects INT-001, writes, and ends.
  await vsc.runCommand('Chat: Open Chat (Agent)');
  await pickModel(viewChat(), 'first.json');
  await send(viewChat(), 'Add the lockout (INT-001).');
  await viewChat().getByText(FIRST_DONE).waitFor({ timeout: 90000 });
  const firstSession = (await ledgerUntil((rs) => vscodeRecords(rs).some((r) => r.tool === 'create_file'), 'the first chat wrote')).find(
    (r) => r.agent === 'vscode' && r.tool === 'create_file',
  ).session;
  // VS Code's Stop hook ran at the end of the turn and let it end.
  await ledgerUntil((rs) => rs.some((r) => r.session === firstSession && r.event === 'BeforeSubmit' && r.decision?.decision === 'allow'), 'the turn ended');

  // The Sessions view shows the lease idle since the turn's end, free to take (the session's row is
  // found by its full id, which its accessible name carries; its line shows the short one).
  await vsc.openSidebar();
  const tree = await vsc.sessionsView();
  const first = tree.locator(`.monaco-list-row[aria-label*=" session ${firstSession},"]`);
  await first.waitFor({ timeout: 30000 });
  const lease = first.locator('.label-description');
  for (let i = 0; i < 50 && !/idle/.test((await lease.textContent()) ?? ''); i++) await page.waitForTimeout(200);
  assert.match(await lease.textContent(), /^INT-001 idle, free to take · \d+ actions? · 0 denied$/);
  // Under it, the lease says since when.
  await tree
    .locator('.monaco-list-row')
    .filter({ hasText: /^INT-001 idle since \d{1,2}:\d\d(:\d\d)?( [AP]M)?, free to take/ })
    .waitFor({ timeout: 10000 });

  // The second chat, in an editor: it selects INT-001 at once (its script checks the intent's
  // context came back) and writes under it.
  await vsc.runCommand('Chat: New Chat Editor');
  await pickModel(editorChat(), 'second.json');
  await send(editorChat(), 'Add the session timeout (INT-001).');
  await editorChat().getByText(SECOND_DONE).waitFor({ timeout: 90000 });
  const records = await ledgerUntil((rs) => vscodeRecords(rs).some((r) => r.session !== firstSession && r.tool === 'create_file'), 'the second chat wrote');
  const secondSession = vscodeRecords(records).find((r) => r.session !== firstSession && r.tool === 'create_file').session;
  const selects = vscodeRecords(records).filter((r) => r.event === 'PreToolUse' && r.tool === 'select_active_intent');
  assert.deepStrictEqual(
    selects.map((r) => [r.session, r.decision.decision]),
    [
      [firstSession, 'allow'],
      [secondSession, 'allow'],
    ],
  );
  // VS Code's create_file can leave the file empty for a moment before its text is saved: it was once
  // read empty here, in a full npm test (never with this file alone). A person sees it a moment later.
  const second = path.join(ws, 'src/auth/second.js');
  for (let i = 0; i < 50 && fs.readFileSync(second, 'utf8') === ''; i++) await page.waitForTimeout(200);
  assert.strictEqual(fs.readFileSync(second, 'utf8'), '// second\n');

  // The first chat's next turn: its write is refused, and its model reads why (its script checks).
  await send(viewChat(), 'Go on: add the retry counter.');
  await viewChat().getByText(FIRST_TOLD).waitFor({ timeout: 90000 });
  assert.ok(!fs.existsSync(path.join(ws, 'src/auth/again.js')), 'the write under the lost intent did not run');
  const denied = (
    await ledgerUntil((rs) => rs.some((r) => r.session === firstSession && r.tool === 'create_file' && r.decision?.decision === 'deny'), 'the refusal')
  )
    .filter((r) => r.session === firstSession && r.tool === 'create_file' && r.decision?.decision === 'deny')
    .pop();
  assert.match(denied.decision.reason, /lost its lock on intent `INT-001`/);
  assert.ok(denied.decision.reason.includes(`session \`${secondSession}\``), denied.decision.reason);
}
