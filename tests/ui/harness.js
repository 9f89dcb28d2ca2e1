// The UI tests' harness: the packed .vsix installed with VS Code's own installer into a fresh
// code-server, a governed sample workspace, and Debian's Chromium on the workbench. Each test file
// gets its own (node --test runs files one after another, each in its own process).
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const vscode = require('../../scripts/vscode');
const { packageVsix } = require('../../scripts/package');

/** The frame of the sidebar webview, the extension's only webview. Found by the extension that owns
 *  it, because the walkthrough's pages are webviews too (VS Code's own), and a view shown again gets
 *  a frame whose address no longer says its purpose (`webviewView`). */
const SIDEBAR_FRAME = 'iframe.webview.ready[src*="extensionId=chokepoint.chokepoint"]';

/**
 * Starts everything; `stop()` ends what it started and removes its folders. `outsideHome`: the
 * workspace goes into the system's temporary folder instead of the cache under ~/.cache, because VS
 * Code's agent asks before editing any file under a dot-folder of the home directory ("system files").
 * `env`: more of code-server's environment (which the extension host inherits). `firstRun`: the
 * extension opens its walkthrough on its first activation, as for a newcomer; without it the profile
 * turns that off (VS Code's `workbench.welcomePage.walkthroughs.openOnInstall`), so the other files
 * test their section with no walkthrough opening over it; with it, VS Code's own Welcome page does not
 * open at start, so a walkthrough that opens is the extension's doing. `ungoverned`: the sample workspace without
 * its `.orchestration/`.
 */
async function startVsCode({ outsideHome = false, env = {}, firstRun = false, ungoverned = false } = {}) {
  // This machine's platform only: the one VS Code here installs.
  const [vsix] = await packageVsix();
  const runDir = fs.mkdtempSync(path.join(vscode.CACHE, 'run-ui-tests-'));
  const extensionsDir = path.join(runDir, 'extensions');
  const installLog = vscode.installExtension(vsix, { runDir, extensionsDir });
  const workspaceParent = outsideHome ? fs.mkdtempSync(path.join(os.tmpdir(), 'chokepoint-ui-')) : runDir;
  const workspace = vscode.makeSampleWorkspace(path.join(workspaceParent, 'workspace'));
  if (ungoverned) fs.rmSync(path.join(workspace, '.orchestration'), { recursive: true, force: true });
  // VS Code's own Welcome page stays closed at start: what opens is the extension's doing.
  const user = path.join(runDir, 'data', 'User');
  fs.mkdirSync(user, { recursive: true });
  const settings = firstRun ? { 'workbench.startupEditor': 'none' } : { 'workbench.welcomePage.walkthroughs.openOnInstall': false };
  fs.writeFileSync(path.join(user, 'settings.json'), JSON.stringify(settings));
  // The profile's setting above did not reach the extension at its activation in code-server 4.139
  // (the walkthrough opened over every file's tests and took their focus): the workspace says it too.
  if (!firstRun && !ungoverned) {
    fs.mkdirSync(path.join(workspace, '.vscode'), { recursive: true });
    fs.writeFileSync(path.join(workspace, '.vscode/settings.json'), JSON.stringify({ 'chokepoint.walkthrough.openOnFirstActivation': false }));
  }
  let server, browser, page;
  try {
    server = await vscode.startCodeServer({ runDir, extensionsDir, env });
    browser = await vscode.launchBrowser({ runDir });
    page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await server.login(page.context());
    await page.goto(server.url(workspace));
  } catch (e) {
    if (browser) await browser.close().catch(() => {});
    if (server) await server.stop();
    fs.rmSync(runDir, { recursive: true, force: true, maxRetries: 3 });
    fs.rmSync(workspaceParent, { recursive: true, force: true, maxRetries: 3 });
    throw e;
  }
  return {
    runDir,
    installLog,
    workspace,
    page,
    /** The workbench's address for another folder (opened in a new window of the same profile). */
    url: (folder) => server.url(folder),
    /** The sidebar webview's document (VS Code nests it in two iframes). */
    sidebar: () => page.frameLocator(SIDEBAR_FRAME).frameLocator('#active-frame'),
    /** Shows the Chokepoint view. Clicking an already selected activity-bar item would hide it instead. */
    async openSidebar() {
      const tab = page.locator('.activitybar').getByRole('tab', { name: /^Chokepoint/ });
      await tab.waitFor({ timeout: 60000 });
      if ((await tab.getAttribute('aria-selected')) !== 'true') await tab.click();
    },
    /** Hides the Chokepoint view behind the Explorer (its page is destroyed) and shows it again,
     *  once the old page's frame is gone: the next page is a new one. */
    async hideAndShowSidebar() {
      await page
        .locator('.activitybar')
        .getByRole('tab', { name: /^Explorer/ })
        .click();
      await page.locator(SIDEBAR_FRAME).waitFor({ state: 'detached', timeout: 10000 });
      await this.openSidebar();
    },
    /** The Trace view's pane: a native tree under the Chokepoint container, expanded. */
    traceView: () => pane(page, 'Trace'),
    /** The Sessions view's pane: a native tree under the Chokepoint container, expanded. */
    sessionsView: () => pane(page, 'Sessions'),
    /** Runs the command titled `title` from the command palette, tried again when the palette was
     *  still closing or filtering, or lost the focus to a window opening (a notification, a view). */
    async runCommand(title) {
      for (let attempt = 1; ; attempt++) {
        try {
          // Not Escape first: it hides notifications, and goes back from a walkthrough to the Welcome page.
          if (attempt > 1) await page.keyboard.press('Escape');
          await page.keyboard.press('F1');
          const input = page.locator('.quick-input-widget input');
          await input.waitFor({ timeout: 5000 });
          await input.fill(`>${title}`, { timeout: 5000 });
          await page.locator('.quick-input-list .monaco-list-row').filter({ hasText: title }).first().click({ timeout: 5000 });
          return;
        } catch (e) {
          if (attempt === 4) throw e;
          await page.waitForTimeout(500);
        }
      }
    },
    /** Picks `label` in the open quick pick. */
    async pick(label) {
      await page
        .locator('.quick-input-list .monaco-list-row')
        .filter({ hasText: new RegExp(`^${label}`) })
        .first()
        .click({ timeout: 15000 });
    },
    async stop() {
      if (process.env.CHOKEPOINT_UI_SCREENSHOT) await page.screenshot({ path: process.env.CHOKEPOINT_UI_SCREENSHOT }).catch(() => {});
      await browser.close().catch(() => {});
      await server.stop();
      fs.rmSync(runDir, { recursive: true, force: true, maxRetries: 3 });
      fs.rmSync(workspaceParent, { recursive: true, force: true, maxRetries: 3 });
    },
  };
}

/** The pane of the Chokepoint container's view titled `title`, expanded (its rows are
 *  `.monaco-list-row`; a row's context menu: right-click it, then its `menuitem`; its inline actions:
 *  `.action-label[aria-label=…]`). */
async function pane(page, title) {
  // In the primary side bar, where the Chokepoint container is: VS Code's Chat has views of its own
  // (its sessions among them) in the secondary one.
  const found = page.locator('.part.sidebar .pane').filter({ has: page.locator('.pane-header h3.title', { hasText: new RegExp(`^${title}$`) }) });
  const header = found.locator('.pane-header');
  await header.waitFor({ timeout: 30000 });
  if ((await header.getAttribute('aria-expanded')) === 'false') await header.click();
  return found;
}

module.exports = { startVsCode };
