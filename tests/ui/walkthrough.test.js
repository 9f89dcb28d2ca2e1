// The first run in a real VS Code, as a newcomer meets it: the packed .vsix in a fresh profile and a
// folder that is not governed yet. Opening the Chokepoint view activates the extension, which opens
// its walkthrough (once per profile: the first activation in another folder does not open it again;
// "Chokepoint: Get Started" does). The empty sidebar (and, once governed, the Sessions and Trace
// views) says what lands in each section and what to do next, with buttons; the walkthrough's buttons run their commands (govern the
// folder, connect an agent, turn VS Code's Chat on, run the demo, show the trace) and each step shows
// as done when what it completes on has happened. Connecting VS Code's Chat in a fresh profile, whose
// chat extension is disabled, says that the Chat would ask for a GitHub sign-in, and its button turns
// the Chat on.
'use strict';
const { before, after, afterEach, test } = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const path = require('path');
const { ROOT } = require('../../scripts/lib');
const { startVsCode } = require('./harness');
const { makeSampleWorkspace } = require('../../scripts/vscode');

const version = require(path.join(ROOT, 'package.json')).version;
let vsc, page, sidebar, workspace;

/** The walkthrough's page (VS Code's Welcome editor showing ours). */
const walkthrough = () => page.locator('.gettingStartedContainer');
/** A step of ours, by its id in package.json. */
const step = (id) => walkthrough().locator(`button.getting-started-step[data-step-id$="#${id}"]`);

/** Runs a command from the palette. */
const command = (title) => vsc.runCommand(title);

/** Waits until the step shows as done (VS Code sets aria-checked from its completion events). */
async function done(id) {
  await page.waitForFunction(
    (sel) => document.querySelector(sel)?.getAttribute('aria-checked') === 'true',
    `.gettingStartedContainer button.getting-started-step[data-step-id$="#${id}"]`,
    { timeout: 30000 },
  );
}

/** Selects a step (which shows its buttons) and clicks the button named `label`. */
async function press(id, label) {
  // The page re-renders its steps when a context key changes (a task writing the trace): tried again.
  for (let attempt = 1; ; attempt++) {
    try {
      await step(id).click();
      await walkthrough().getByRole('button', { name: label, exact: true }).first().click({ timeout: 5000 });
      return;
    } catch (e) {
      if (attempt === 3) throw e;
    }
  }
}

async function closeEditors() {
  await command('View: Close All Editors');
}

async function waitForFile(rel) {
  const file = path.join(workspace, rel);
  for (let i = 0; i < 150 && !fs.existsSync(file); i++) await page.waitForTimeout(200);
  assert.ok(fs.existsSync(file), `${rel} was written`);
  return fs.readFileSync(file, 'utf8');
}

before(async () => {
  vsc = await startVsCode({ firstRun: true, ungoverned: true });
  ({ page, sidebar, workspace } = vsc);
});

after(async () => {
  if (vsc) await vsc.stop();
});

// What the window showed at the end of each test, for a failure's reader (CHOKEPOINT_UI_STEPS=dir).
let shot = 0;
afterEach(async () => {
  if (process.env.CHOKEPOINT_UI_STEPS && page)
    await page.screenshot({ path: path.join(process.env.CHOKEPOINT_UI_STEPS, `walkthrough-${++shot}.png`) }).catch(() => {});
});

test('in a folder not governed yet, opening the view activates the extension and opens the walkthrough once', async () => {
  assert.ok(!fs.existsSync(path.join(workspace, '.orchestration')));
  await vsc.openSidebar();
  await walkthrough().getByText('Get Started with Chokepoint').first().waitFor({ timeout: 90000 });
  for (const id of ['about', 'govern', 'connect', 'chat', 'change', 'trace']) await step(id).waitFor({ timeout: 10000 });
  // The first step's button shows the view, and the step is done. (Showing the view ticks it too,
  // onView, but not here: in VS Code 1.139 neither onView nor an onContext key set by the view's
  // provider ticked it when opening the view is what activated the extension; seen, not explained.)
  assert.strictEqual(await step('govern').getAttribute('aria-checked'), 'false');
  await press('about', 'Open the Chokepoint View');
  await done('about');
});

test('the empty sidebar says what to do next in every section, with buttons', async () => {
  await vsc.openSidebar();
  const engine = sidebar().getByTestId('engine-welcome');
  await engine.waitFor({ timeout: 30000 });
  assert.match(await engine.textContent(), /This folder is not governed yet/);
  assert.deepStrictEqual(await engine.getByTestId('engine-welcome-action').allTextContents(), ['Govern This Folder', 'Get Started']);
  const approvals = sidebar().getByTestId('approvals-welcome');
  await approvals.waitFor();
  assert.match(await approvals.textContent(), /waits here as a card/);
  // The sessions are not on the page: the Sessions view, like the Trace view, shows once the folder
  // is governed (their own welcome: see the next test).
  assert.strictEqual(await sidebar().getByTestId('sessions').count(), 0);
  assert.strictEqual(await page.locator('.part.sidebar .pane-header h3.title', { hasText: /^(Sessions|Trace)$/ }).count(), 0);
  // A welcome button runs its command (through the protocol's allow-list): Get Started opens the
  // walkthrough again once it is closed.
  await closeEditors();
  await step('govern').waitFor({ state: 'detached', timeout: 15000 });
  await engine.getByRole('button', { name: 'Get Started' }).click();
  await step('govern').waitFor({ timeout: 30000 });
  // The README's pictures: CHOKEPOINT_UI_SHOTS=docs/images node --test tests/ui/walkthrough.test.js
  const shots = process.env.CHOKEPOINT_UI_SHOTS;
  if (shots) {
    // Wide enough for the step's page beside its list, tall enough for the whole empty view.
    await page.setViewportSize({ width: 1920, height: 1500 });
    // The step VS Code selects after the first: its page is a webview of its own, slow to follow a
    // click on another step.
    await step('govern').click();
    await page.waitForTimeout(6000);
    await sidebar()
      .locator('body')
      .evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: path.join(shots, 'walkthrough.png') });
    await page.locator('.part.sidebar').screenshot({ path: path.join(shots, 'sidebar-welcome.png') });
    await page.setViewportSize({ width: 1400, height: 900 });
  }
});

test("the walkthrough's Govern This Folder writes .orchestration/, and the step and the view follow", async () => {
  await press('govern', 'Govern This Folder');
  const intents = await waitForFile('.orchestration/active_intents.yaml');
  assert.match(intents, /id: INT-001/);
  assert.ok(fs.existsSync(path.join(workspace, '.orchestration/hooks.yaml')));
  assert.ok(fs.existsSync(path.join(workspace, '.orchestration/schema/active_intents.schema.json')));
  await done('govern');
  await page.locator('.statusbar').getByText(`Chokepoint ${version}`).waitFor({ timeout: 30000 });
  await sidebar().getByTestId('engine-welcome').waitFor({ state: 'detached', timeout: 30000 });
  // The Sessions and Trace views appear, empty, saying what lands there and what to do first.
  const sessions = await vsc.sessionsView();
  await sessions.getByText(/^No session yet\./).waitFor({ timeout: 15000 });
  assert.deepStrictEqual(await sessions.locator('.welcome-view-content').getByRole('button').allTextContents(), [
    "Connect VS Code's Agent",
    'Set Up Another Agent\u2026',
  ]);
  const trace = await vsc.traceView();
  await trace.getByText(/No records yet/).waitFor({ timeout: 15000 });
  await trace.getByRole('button', { name: 'Run the Demo Task' }).waitFor();
});

test("connecting VS Code's agent from the empty Sessions view warns of the Chat's sign-in, and its button turns the Chat on", async () => {
  assert.strictEqual(await step('chat').getAttribute('aria-checked'), 'false', "a fresh profile's chat extension is disabled");
  await vsc.openSidebar();
  const sessions = await vsc.sessionsView();
  await sessions.getByRole('button', { name: "Connect VS Code's Agent" }).click();
  assert.match(await waitForFile('.github/hooks/chokepoint.json'), / hook --agent /);
  await done('connect');
  // Looked for in the notification center: a toast may be hidden by then (or not shown as one when
  // the Chat view is open beside the editor).
  await command('Notifications: Show Notifications');
  const center = page.locator('.notifications-center');
  const warning = center.locator('.notification-list-item').filter({ hasText: 'will ask you to sign in to GitHub' });
  try {
    await warning.first().waitFor({ timeout: 30000 });
  } catch (e) {
    await page.screenshot({ path: path.join(require('os').tmpdir(), 'walkthrough-no-warning.png') }).catch(() => {});
    e.message += `\n--- the notifications: ${await center.innerText().catch((err) => String(err))}`;
    throw e;
  }
  await warning.first().getByRole('button', { name: 'Turn On Chat (Enable All Extensions)' }).click();
  await done('chat');
  await center.locator('.notification-list-item').filter({ hasText: 'Chat is on' }).first().waitFor({ timeout: 30000 });
  await command('Notifications: Hide Notifications');
});

test("the walkthrough's agent buttons set that agent up, with no picker", async () => {
  await command('Chokepoint: Get Started');
  await press('connect', 'Claude Code');
  assert.match(await waitForFile('.claude/settings.json'), / hook --agent claude/);
  await press('chat', 'Turn On VS Code\u2019s Chat');
  await done('chat');
});

test('Run the Demo Task makes a first governed change: the step is done and the Trace view lists it', async () => {
  await press('change', 'Run the Demo Task');
  await done('change');
  await vsc.openSidebar();
  const trace = await vsc.traceView();
  await trace
    .locator('.monaco-list-row')
    .filter({ hasText: /records?, newest first/ })
    .first()
    .waitFor({ timeout: 60000 });
  assert.strictEqual(await trace.getByText(/No records yet/).count(), 0);
  await command('Chokepoint: Stop Agent Task');
  await command('Chokepoint: Get Started');
  await press('trace', 'Show the Trace');
  await done('trace');
});

test('"Chokepoint: Get Started" opens the walkthrough; the first activation in another folder does not open it again', async () => {
  await closeEditors();
  await step('govern').waitFor({ state: 'detached', timeout: 15000 });
  await command('Chokepoint: Get Started');
  await step('govern').waitFor({ timeout: 30000 });
  // Once per profile: a governed folder, where the extension activates at once, opened in this window.
  const other = makeSampleWorkspace(path.join(path.dirname(workspace), 'second'));
  await page.goto(vsc.url(other));
  await page
    .locator('.statusbar')
    .getByText(/Chokepoint/)
    .first()
    .waitFor({ timeout: 90000 });
  await page.waitForTimeout(5000);
  assert.strictEqual(await walkthrough().count(), 0, 'the walkthrough opened again on a later activation');
});
