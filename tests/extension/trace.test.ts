// The trace in the real extension host: an agent's write judged through the extension's chokepoint is
// recorded, and "Chokepoint: Show Provenance of Line" names the intent, session, agent and record that
// last wrote the cursor's line, after lines were typed above it.
import * as assert from 'assert';
import * as fs from 'fs';
import { ledgerRecords } from '../support/ledger';
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';
import type { ChokepointApi } from '../../extension/src/extension';
import type { ProvenanceReport } from '../../extension/src/ui/trace';
import type { EventName } from '../../native/node/index';

const root = () => vscode.workspace.workspaceFolders![0].uri.fsPath;
const FILE = 'src/billing/cents.js';
const WRITTEN = 'export function toCents(amount) {\n  return Math.round(amount * 100);\n}\n';

async function api(): Promise<ChokepointApi> {
  return vscode.extensions.getExtension<ChokepointApi>('chokepoint.chokepoint')!.activate();
}

describe('provenance of a line', () => {
  const session = 'provenance-test';
  let writeSeq = 0;

  before(async () => {
    const chokepoint = await api();
    const ids = { sessionId: session, agentId: 'test-agent' };
    const write = (event: EventName) => ({ event, tool: 'write_to_file', input: { path: FILE, content: WRITTEN }, paths: [FILE], ...ids });
    assert.strictEqual(
      (await chokepoint.evaluate({ event: 'PreToolUse', tool: 'select_active_intent', input: { intent_id: 'INT-002' }, ...ids })).decision,
      'allow',
    );
    assert.strictEqual((await chokepoint.evaluate(write('PreToolUse'))).decision, 'allow');
    fs.writeFileSync(path.join(root(), FILE), WRITTEN); // the tool runs
    await chokepoint.evaluate(write('PostToolUse')); // answered once its record is durable
    await chokepoint.evaluate({ event: 'TaskComplete', ...ids });
    // Two lines typed above the agent's write: the write is now lines 3-5.
    fs.writeFileSync(path.join(root(), FILE), `// Money is kept in integer cents.\n\n${WRITTEN}`);
    const ledger = ledgerRecords(root());
    writeSeq = ledger.filter((r) => r.event === 'PostToolUse' && r.session === session).pop().seq;
  });

  after(() => fs.rmSync(path.join(root(), FILE), { force: true }));

  it('the command names the intent, session, agent and record of the cursor line, found after it moved', async () => {
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(path.join(root(), FILE)));
    const editor = await vscode.window.showTextDocument(doc);
    editor.selection = new vscode.Selection(3, 2, 3, 2); // line 4: `  return Math.round(amount * 100);`
    const report = await vscode.commands.executeCommand<ProvenanceReport>('chokepoint.showProvenance');
    assert.ok(report, 'the command returns what it found');
    assert.strictEqual(report.error, undefined, report.message);
    assert.deepStrictEqual([report.path, report.line, report.text], [FILE, 4, '  return Math.round(amount * 100);']);
    const o = report.origin!;
    assert.deepStrictEqual([o.seq, o.intent, o.session, o.agent, o.tool], [writeSeq, 'INT-002', session, 'test-agent', 'write_to_file']);
    assert.strictEqual(
      report.message,
      `Line 4 of ${FILE} was last written under intent INT-002, session ${session}, agent test-agent, tool write_to_file (record #${writeSeq}, ${o.time}).`,
    );
  });

  it('says when no record explains a line (typed by hand)', async () => {
    const report = (await api()).provenance(vscode.Uri.file(path.join(root(), FILE)), 1);
    assert.strictEqual(report.origin, undefined);
    assert.strictEqual(report.text, '// Money is kept in integer cents.');
    assert.match(report.message, /^Line 1 of src\/billing\/cents\.js: no record explains it/);
  });

  it('refuses a file outside the governed workspace and a line past the end, saying why', async () => {
    const chokepoint = await api();
    const outside = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'chokepoint-outside-')), 'a.js');
    fs.writeFileSync(outside, 'x\n');
    const away = chokepoint.provenance(vscode.Uri.file(outside), 1);
    assert.match(away.error ?? '', /is not a file of the governed workspace/);
    const past = chokepoint.provenance(vscode.Uri.file(path.join(root(), FILE)), 99);
    assert.match(past.error ?? '', /has 5 lines; there is no line 99/);
    assert.match(past.message, /^Chokepoint cannot explain this line: /);
  });

  it('is in the editor context menu and the command palette of a governed workspace', () => {
    const manifest = vscode.extensions.getExtension('chokepoint.chokepoint')!.packageJSON;
    const command = manifest.contributes.commands.find((c: { command: string }) => c.command === 'chokepoint.showProvenance');
    assert.deepStrictEqual([command.title, command.category], ['Show Provenance of Line', 'Chokepoint']);
    assert.match(manifest.contributes.menus['editor/context'][0].when, /chokepoint\.governed/);
  });
});

describe('policy replay from the editor', () => {
  it('offers the replay on an edited hooks.yaml and names the recorded writes a new rule would deny', async () => {
    await api();
    const uri = vscode.Uri.file(path.join(root(), '.orchestration/hooks.yaml'));
    const document = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(document);
    // The demo task (agent.test.ts, run before this file) wrote src/auth/login.js, allowed. A draft,
    // unsaved, freezes src/auth/: the replay must name that write as allow → deny.
    const edit = new vscode.WorkspaceEdit();
    const at = document.getText().indexOf('hooks:\n') + 'hooks:\n'.length;
    edit.insert(
      uri,
      document.positionAt(at),
      "  PreToolUse:\n    - name: freeze-auth\n      paths: ['src/auth/**']\n      deny:\n        reason: auth is frozen\n",
    );
    assert.ok(await vscode.workspace.applyEdit(edit));
    try {
      assert.ok(document.isDirty);
      const lenses = await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', uri);
      assert.ok(
        lenses.some((l) => l.command?.command === 'chokepoint.replayTrace'),
        `the lenses: ${lenses.map((l) => l.command?.title).join(', ')}`,
      );
      const report = await vscode.commands.executeCommand<string | undefined>('chokepoint.replayTrace', uri);
      assert.ok(report, 'the replay produced a report');
      assert.match(report, /\*\*[1-9]\d* would change\*\*/);
      assert.match(report, /allow → deny \| `freeze-auth`/);
      assert.match(report, /allow → \*\*deny\*\* `write_to_file` `src\/auth\/login\.js`/);
      assert.ok(!/src\/billing/.test(report.split('## Changes')[1] ?? ''), 'nothing outside src/auth/ flips');
    } finally {
      // The report's preview took the focus: the draft's editor is brought back to revert it.
      await vscode.window.showTextDocument(document);
      await vscode.commands.executeCommand('workbench.action.files.revert');
    }
    assert.ok(!document.isDirty, 'the draft was reverted');
  });
});
