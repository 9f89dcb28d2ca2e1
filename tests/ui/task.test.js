// The sidebar's task panel in a real VS Code, driven in Debian's Chromium against the packed .vsix:
// the demo task runs through the real engine and the scripted model, its scope expansion is rejected
// on its card in the sidebar's Approvals section, and the transcript is read as a user reads it.
'use strict';
const { before, after, test } = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const http = require('http');
const path = require('path');
const { ROOT } = require('../../scripts/lib');
const { startVsCode } = require('./harness');

const version = require(path.join(ROOT, 'package.json')).version;

// The demo's BeforeSubmit hook runs the sample's `npm test` (`node --test`). Seeing this variable,
// which our own `node --test` set, it would report to a parent runner that does not exist instead of
// failing; code-server and the extension host inherit our environment, so it goes here.
delete process.env.NODE_TEST_CONTEXT;

let vsc, page, sidebar;
const task = () => sidebar().getByTestId('task');
const calls = () => task().getByTestId('tool-call');

before(async () => {
  vsc = await startVsCode();
  ({ page, sidebar } = vsc);
  await page.locator('.statusbar').getByText(`Chokepoint ${version}`).waitFor({ timeout: 90000 });
  await vsc.openSidebar();
  await task().waitFor({ timeout: 30000 });
});

after(async () => {
  if (vsc) await vsc.stop();
});

/** What each tool-call row says: its tool, its decision, its whole text. */
function rows() {
  return calls().evaluateAll((els) => els.map((e) => ({ tool: e.dataset.tool, decision: e.dataset.decision, text: e.textContent })));
}

test('the task panel offers the models with the scripted demo model selected, and Stop only while a task runs', async () => {
  const model = task().getByTestId('task-model');
  await model.locator('option[value="scripted:demo"]').waitFor({ state: 'attached', timeout: 30000 });
  assert.strictEqual(await model.inputValue(), 'scripted:demo');
  assert.strictEqual(await model.locator('option:checked').textContent(), 'Scripted demo model');
  // Chokepoint's own models in VS Code's Chat are not offered again here (the Chat's demo drives the
  // Chat's tools, which this runtime does not have): one demo model, not two alike.
  const offered = await model.locator('option').evaluateAll((os) => os.map((o) => o.value));
  assert.deepStrictEqual(
    offered.filter((v) => v.startsWith('vscode-lm:chokepoint/')),
    [],
    offered.join(', '),
  );
  assert.strictEqual(await task().getByRole('button', { name: 'Stop the running task' }).getAttribute('aria-disabled'), 'true');
  assert.strictEqual(await task().getByRole('button', { name: 'Run demo task' }).getAttribute('aria-disabled'), 'false');
  // Nothing typed yet: nothing to run.
  assert.strictEqual(await task().getByRole('button', { name: 'Run the prompt' }).getAttribute('aria-disabled'), 'true');
});

test('Run demo task: the transcript shows each call with its decision and the hook that decided, up to success', async () => {
  await task().getByRole('button', { name: 'Run demo task' }).click();
  await task().getByTestId('task-started').waitFor({ timeout: 30000 });
  assert.strictEqual(await task().getByRole('button', { name: 'Stop the running task' }).getAttribute('aria-disabled'), 'false');

  // The scope expansion asks a human: a card in the Approvals section, answered there.
  const card = sidebar().getByTestId('approvals').getByTestId('pending').filter({ hasText: 'src/billing/**' });
  await card.waitFor({ timeout: 60000 });
  assert.match(await card.getByTestId('pending-subject').textContent(), /Intent INT-001 asks to write:src\/billing\/\*\*/);
  await card.getByTestId('pending-reason').fill('rejected by the user');
  await card.getByTestId('action-reject').click();

  const ended = task().getByTestId('task-ended');
  await ended.waitFor({ timeout: 120000 });
  assert.strictEqual(await ended.getAttribute('data-status'), 'success');
  assert.match(await ended.textContent(), /^Task ended: success/);

  const seen = await rows();
  assert.deepStrictEqual(
    seen.map((r) => [r.tool, r.decision]),
    [
      ['select_active_intent', 'allow'],
      ['write_to_file', 'allow'],
      ['write_to_file', 'deny'],
      ['scope_expansion_request', 'ask'],
      ['write_to_file', 'allow'],
      ['attempt_completion', 'allow'],
      ['apply_diff', 'allow'],
      ['attempt_completion', 'allow'],
    ],
  );

  // The handshake: allowed, the badge says so, the intent's context came back.
  const select = calls().nth(0);
  assert.strictEqual(await select.getByTestId('decision').first().textContent(), 'allow');
  assert.match(await select.getByTestId('tool-result').textContent(), /<intent_context>/);

  // The write outside the scope: denied, the gatekeeper named as the hook that decided.
  const denied = calls().nth(2);
  assert.match(seen[2].text, /src\/billing\/invoice\.js/);
  assert.strictEqual(await denied.getByTestId('decision').first().textContent(), 'deny');
  assert.match(
    await denied.getByTestId('call-reason').textContent(),
    /^denied by gatekeeper: `src\/billing\/invoice\.js` is outside the scope of intent `INT-001`/,
  );
  const hooks = denied.getByTestId('hooks');
  assert.match(await hooks.locator('summary').textContent(), /^Hooks: gatekeeper deny · /);
  // The wait for the deny's record to be durable is shown apart from the gatekeeper's own time.
  assert.match(await hooks.locator('summary').textContent(), / · recorded in (<?[\d.]+ ms|[\d.]+ s)$/);
  await hooks.locator('summary').click();
  await hooks.getByTestId('hook').first().waitFor();
  assert.match(await hooks.getByTestId('hook').first().textContent(), /^gatekeeper\s*deny\s*<?[\d.]+ ms$/);
  assert.strictEqual(await denied.getByTestId('tool-result').getAttribute('data-ok'), 'false');

  // The scope expansion: asked, and the rejection in the dialog went back to the model.
  assert.match(seen[3].text, /approval asked by gatekeeper/);
  assert.match(await calls().nth(3).getByTestId('tool-result').textContent(), /rejected by human: rejected by the user/);

  // The first completion: refused by the tests hook at BeforeSubmit; the second: accepted by it.
  const first = calls().nth(5).getByTestId('gate');
  assert.strictEqual(await first.getAttribute('data-event'), 'BeforeSubmit');
  assert.strictEqual(await first.getAttribute('data-decision'), 'deny');
  assert.match(await first.textContent(), /^BeforeSubmit\s*deny\s*by tests · /);
  assert.match(await calls().nth(5).getByTestId('tool-result').textContent(), /the completion was not accepted/);
  const last = calls().nth(7).getByTestId('gate').first();
  assert.strictEqual(await last.getAttribute('data-decision'), 'allow');
  assert.match(await last.textContent(), /by tests/);
  assert.strictEqual(await calls().nth(7).getByTestId('tool-result').getAttribute('data-ok'), 'true');

  // The streamed text, whole, in its turn; the lint hook's output piped into a later turn.
  assert.strictEqual(await task().getByTestId('assistant-text').first().textContent(), 'I will declare the intent this work serves first.');
  assert.match(await task().getByTestId('piped').first().textContent(), /Output of the lint hook/);

  // Ended: Stop is off again and the status line says how the task ended.
  await task().getByText('Last task ended: success').waitFor({ timeout: 10000 });
  assert.strictEqual(await task().getByRole('button', { name: 'Stop the running task' }).getAttribute('aria-disabled'), 'true');
});

test('the transcript comes back whole when the view is hidden and shown again', async () => {
  const before = await rows();
  // Another view in the sidebar: the Chokepoint view is hidden and its page destroyed.
  await vsc.hideAndShowSidebar();
  await task().getByTestId('task-ended').waitFor({ timeout: 30000 });
  assert.deepStrictEqual(await rows(), before);
  assert.strictEqual(await task().getByTestId('assistant-text').first().textContent(), 'I will declare the intent this work serves first.');
});

test("the page's sections fold from their headings, by keyboard too, and stay folded when the view is shown again", async () => {
  const toggle = (key) => sidebar().getByTestId(`${key}-toggle`);
  for (const key of ['approvals', 'task', 'engine']) assert.strictEqual(await toggle(key).getAttribute('aria-expanded'), 'true', `${key} starts open`);
  // The Engine's heading is a button: Tab reaches it, Space folds it.
  await toggle('engine').focus();
  await page.keyboard.press('Space');
  assert.strictEqual(await toggle('engine').getAttribute('aria-expanded'), 'false');
  await sidebar().locator('#engine-body').waitFor({ state: 'hidden', timeout: 5000 });
  await toggle('task').click();
  await task().getByTestId('task-prompt').waitFor({ state: 'hidden', timeout: 5000 });
  // Hidden and shown again (a new page): what the person folded stays folded, the rest open.
  await vsc.hideAndShowSidebar();
  await toggle('engine').waitFor({ timeout: 30000 });
  assert.strictEqual(await toggle('engine').getAttribute('aria-expanded'), 'false');
  assert.strictEqual(await toggle('task').getAttribute('aria-expanded'), 'false');
  assert.strictEqual(await toggle('approvals').getAttribute('aria-expanded'), 'true');
  assert.ok(await task().getByTestId('task-prompt').isHidden());
  // Opened again with Enter and a click.
  await toggle('task').focus();
  await page.keyboard.press('Enter');
  await task().getByTestId('task-prompt').waitFor({ timeout: 5000 });
  await toggle('engine').click();
  await sidebar().getByTestId('engine-version').waitFor({ timeout: 5000 });
  await sidebar().locator('#engine-body').getByText('Workspace', { exact: true }).waitFor({ timeout: 5000 });
  // Shown again: open as left. (VS Code saves a view's state when it hides it, not at every change:
  // the window reload of the last test would otherwise find the sections as they were at the last hiding.)
  await vsc.hideAndShowSidebar();
  await toggle('engine').waitFor({ timeout: 30000 });
  for (const key of ['approvals', 'task', 'engine']) assert.strictEqual(await toggle(key).getAttribute('aria-expanded'), 'true', `${key} open again`);
});

/** An OpenAI-compatible endpoint that starts its answer and never finishes it: only Stop ends a
 *  task on it, whatever the machine's speed. Records whether the client hung up. */
async function endlessModel() {
  const seen = { requests: 0, hungUp: false };
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      seen.requests++;
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      const chunk = {
        id: 'endless-1',
        object: 'chat.completion.chunk',
        created: 0,
        model: 'endless',
        choices: [{ index: 0, delta: { role: 'assistant', content: 'Thinking it over' }, finish_reason: null }],
      };
      res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      res.on('close', () => (seen.hungUp = true));
    });
  });
  // Promise<void>: its resolve is then a callback of no arguments, as listen's is.
  await /** @type {Promise<void>} */ (new Promise((resolve) => server.listen(0, '127.0.0.1', resolve)));
  // Listening on a TCP port, address() is an AddressInfo (a string only for a pipe or socket file).
  return {
    seen,
    baseUrl: `http://127.0.0.1:${/** @type {import('net').AddressInfo} */ (server.address()).port}/v1`,
    close: () => (server.closeAllConnections(), server.close()),
  };
}

test('a prompt runs with Ctrl+Enter on the configured endpoint, and Stop ends the running task as cancelled', async () => {
  // The demo reaches its modal ask about half a second after its first event on a warm machine,
  // too close for a click to be sure to land before it: this endpoint keeps the task running instead.
  const model = await endlessModel();
  try {
    fs.mkdirSync(path.join(vsc.workspace, '.vscode'), { recursive: true });
    fs.writeFileSync(
      path.join(vsc.workspace, '.vscode/settings.json'),
      JSON.stringify({ 'chokepoint.openai.baseUrl': model.baseUrl, 'chokepoint.openai.model': 'endless' }),
    );
    // The picker follows the settings.
    const picker = task().getByTestId('task-model');
    await picker.locator('option[value="openai:endless"]').waitFor({ state: 'attached', timeout: 30000 });
    assert.strictEqual(await picker.inputValue(), 'scripted:demo', 'a new choice does not change the pick');
    await picker.selectOption('openai:endless');

    const prompt = task().getByTestId('task-prompt');
    await prompt.fill('Lock an account after five failed logins (INT-001).');
    await prompt.press('Control+Enter');
    await task().getByTestId('task-started').filter({ hasText: 'Lock an account after five failed logins' }).waitFor({ timeout: 30000 });
    assert.strictEqual(await task().getByTestId('task-started').count(), 1, 'the new run replaced the last transcript');
    assert.match(await task().getByTestId('task-started').textContent(), /^Task started with endless/);
    // Streamed text, appended as it arrives, while the answer is still open.
    await task().getByTestId('assistant-text').getByText('Thinking it over').waitFor({ timeout: 30000 });

    await task().getByRole('button', { name: 'Stop the running task' }).click();
    const ended = task().getByTestId('task-ended');
    await ended.waitFor({ timeout: 30000 });
    assert.strictEqual(await ended.getAttribute('data-status'), 'cancelled');
    await task().getByText('Last task ended: cancelled').waitFor({ timeout: 10000 });
    assert.strictEqual(await task().getByRole('button', { name: 'Stop the running task' }).getAttribute('aria-disabled'), 'true');
    assert.strictEqual(model.seen.requests, 1);
    assert.ok(model.seen.hungUp, 'Stop aborted the inference: the client hung up');
  } finally {
    model.close();
  }
});

test('a task that cannot start says why in the panel: the engine did not load', async () => {
  const installed = path.join(vsc.runDir, 'extensions');
  const dir = path.join(
    installed,
    fs.readdirSync(installed).find((d) => d.startsWith('chokepoint.chokepoint-')),
    'native',
    'node',
  );
  for (const f of fs.readdirSync(dir).filter((f) => f.endsWith('.node'))) fs.rmSync(path.join(dir, f));
  await page.reload();
  await page.locator('.statusbar').getByText('Chokepoint: engine failed').waitFor({ timeout: 90000 });
  await vsc.openSidebar();
  // The reloaded page starts from the state VS Code last saved for the view, which may be one where
  // the folding test had the Task section folded: opened, as a person would, if it is.
  const toggle = sidebar().getByTestId('task-toggle');
  await toggle.waitFor({ timeout: 30000 });
  if ((await toggle.getAttribute('aria-expanded')) === 'false') await toggle.click();
  await task().getByRole('button', { name: 'Run demo task' }).click({ timeout: 30000 });
  const status = task().getByTestId('task-status');
  await status.getByText(/^The task did not start: the engine is not running \(failed\)/).waitFor({ timeout: 10000 });
  assert.strictEqual(await task().getByRole('button', { name: 'Stop the running task' }).getAttribute('aria-disabled'), 'true');
});
