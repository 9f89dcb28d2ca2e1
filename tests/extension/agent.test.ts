// The agent runtime in the real extension host: the demo task end to end through the extension (the
// scripted model over loopback HTTP, the real engine, the sample workspace, the sample's tests run by
// the BeforeSubmit hook), and Stop in the middle of a command.
import * as assert from 'assert';
import * as fs from 'fs';
import { ledgerLines, ledgerRecords } from '../support/ledger';
import * as path from 'path';
import * as vscode from 'vscode';
import type { ChokepointApi } from '../../extension/src/extension';
import type { PendingDict } from '../../extension/src/approvals/types';
import type { RuntimeEvent } from '../../extension/src/runtime/types';

const root = () => vscode.workspace.workspaceFolders![0].uri.fsPath;
const TOUCHED = ['src/auth/login.js', 'tests/auth/login.test.js', 'src/billing/invoice.js', 'src/auth/started.txt', 'src/auth/after.txt'];

/** Whether a `sleep <seconds>` process runs on this machine. */
function sleeping(seconds: string): boolean {
  return fs.readdirSync('/proc').some((pid) => {
    if (!/^\d+$/.test(pid)) return false;
    try {
      return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8') === `sleep\0${seconds}\0`;
    } catch {
      return false;
    }
  });
}

async function api(): Promise<ChokepointApi> {
  return vscode.extensions.getExtension<ChokepointApi>('chokepoint.chokepoint')!.activate();
}

/** Runs `task` and returns every runtime event it produced. */
async function collect(chokepoint: ChokepointApi, task: () => Promise<void>, onEvent?: (e: RuntimeEvent) => void): Promise<RuntimeEvent[]> {
  const events: RuntimeEvent[] = [];
  const listening = chokepoint.agent.onEvent((e) => {
    events.push(e);
    onEvent?.(e);
  });
  try {
    await task();
  } finally {
    listening.dispose();
  }
  return events;
}

describe('the agent runtime', () => {
  const saved = new Map<string, string | undefined>();
  before(() => {
    for (const f of TOUCHED) {
      const p = path.join(root(), f);
      saved.set(f, fs.existsSync(p) ? fs.readFileSync(p, 'utf8') : undefined);
    }
  });
  after(async () => {
    (await api()).agent.setApprover(undefined);
    for (const [f, content] of saved) {
      const p = path.join(root(), f);
      if (content === undefined) fs.rmSync(p, { force: true });
      else fs.writeFileSync(p, content);
    }
    fs.rmSync(path.join(root(), 'tests/auth'), { recursive: true, force: true });
  });

  it('runs the demo task: every tool call judged, the denial and the rejection reach the model, completion gated by the tests', async () => {
    const chokepoint = await api();
    const asked: PendingDict[] = [];
    chokepoint.agent.setApprover(async (request) => {
      asked.push(request);
      return { approved: false, reason: 'billing belongs to INT-002', approvedBy: 'extension-test' };
    });
    const busy: boolean[] = [];
    let ledgerWhenIdle = '';
    const watching = chokepoint.agent.onDidChangeBusy((b) => {
      busy.push(b);
      if (!b) ledgerWhenIdle = ledgerLines(root()).join('\n');
    });
    const events = await collect(chokepoint, () => chokepoint.agent.runDemo());
    watching.dispose();
    // Busy, then idle once the session's last record is durable (the task panel relies on it).
    assert.deepStrictEqual(busy, [true, false]);
    assert.strictEqual(JSON.parse(ledgerWhenIdle.trim().split('\n').pop()!).event, 'SessionEnd');
    const ended = events.find((e) => e.type === 'taskEnded');
    assert.strictEqual(ended?.type === 'taskEnded' && ended.status, 'success', JSON.stringify(events.filter((e) => e.type === 'error')));
    assert.match(fs.readFileSync(path.join(root(), 'src/auth/login.js'), 'utf8'), /const MAX_FAILURES = 5;/);
    assert.ok(fs.existsSync(path.join(root(), 'tests/auth/login.test.js')));
    assert.deepStrictEqual(
      asked.map((a) => a.kind),
      ['scope_expansion'],
    );

    const calls = events.flatMap((e) => (e.type === 'toolCall' ? [`${e.tool}:${e.decision}`] : []));
    assert.deepStrictEqual(calls, [
      'select_active_intent:allow',
      'write_to_file:allow',
      'write_to_file:deny',
      'scope_expansion_request:ask',
      'write_to_file:allow',
      'attempt_completion:allow',
      'apply_diff:allow',
      'attempt_completion:allow',
    ]);
    const results = events.flatMap((e) => (e.type === 'toolResult' ? [e.content] : []));
    assert.match(JSON.parse(results[2]).error, /outside the scope of intent `INT-001`/);
    assert.match(results[3], /billing belongs to INT-002/, 'the rejection reason is the tool result');
    assert.match(JSON.parse(results[5]).error, /the completion was not accepted: `npm test --silent` failed/);
    assert.ok(
      events.some((e) => e.type === 'piped' && e.hook === 'lint'),
      'the lint hook\u2019s output was piped into a turn',
    );

    // Hooks in order: the lifecycle of the task, then every turn's TurnStart → TurnPrepare → TurnEnd.
    const lifecycle = events.flatMap((e) => (e.type === 'lifecycle' ? [e.event] : []));
    assert.deepStrictEqual(lifecycle.slice(0, 3), ['TaskStart', 'TurnStart', 'TurnPrepare']);
    assert.strictEqual(lifecycle.filter((e) => e === 'TurnStart').length, 8);
    assert.deepStrictEqual(lifecycle.slice(-4), ['BeforeSubmit', 'AfterSubmit', 'TurnEnd', 'TaskComplete']);
    const tests = events.flatMap((e) => (e.type === 'lifecycle' && e.event === 'BeforeSubmit' ? [e.hooks.map((h) => `${h.hook}:${h.outcome}`).join()] : []));
    assert.deepStrictEqual(tests, ['tests:deny', 'tests:allow']);

    // The trace has the task's tool calls with the model and the intent.
    const ledger = ledgerRecords(root());
    const mine = ledger.filter((r) => r.model === 'scripted-demo' && r.kind === 'tool_call' && r.event === 'PreToolUse');
    assert.deepStrictEqual(
      mine.map((r) => `${r.tool}:${r.decision.decision}`),
      calls,
    );
    assert.ok(mine.slice(1).every((r) => r.intent === 'INT-001'));
  });

  it('Stop while a question waits for its answer ends the task at once', async () => {
    const chokepoint = await api();
    chokepoint.agent.setApprover(() => new Promise(() => {})); // nobody ever answers
    const events = await collect(
      chokepoint,
      () => chokepoint.agent.runDemo(),
      (e) => {
        if (e.type === 'toolCall' && e.decision === 'ask') setTimeout(() => chokepoint.agent.stop(), 50);
      },
    );
    chokepoint.agent.setApprover(undefined);
    const ended = events.find((e) => e.type === 'taskEnded');
    assert.strictEqual(ended?.type === 'taskEnded' && ended.status, 'cancelled');
    const answer = events.find((e) => e.type === 'toolResult' && e.tool === 'scope_expansion_request');
    assert.match(answer?.type === 'toolResult' ? answer.content : '', /the task was stopped/);
  });

  it('Stop in the middle of a command kills it and ends the task as cancelled', async () => {
    const chokepoint = await api();
    const script = path.join(root(), '.orchestration', 'cancel.script.json');
    fs.writeFileSync(
      script,
      JSON.stringify({
        model: 'scripted-cancel',
        steps: [
          { toolCalls: [{ name: 'select_active_intent', arguments: { intent_id: 'INT-001' } }] },
          {
            toolCalls: [
              { name: 'execute_command', arguments: { command: 'echo started > src/auth/started.txt; sleep 29.5\necho after > src/auth/after.txt' } },
            ],
          },
          { text: 'never reached' },
        ],
      }),
    );
    const started = Date.now();
    try {
      const events = await collect(
        chokepoint,
        () => chokepoint.agent.start('run the slow command', `scripted:${script}`),
        (e) => {
          if (e.type === 'toolCall' && e.tool === 'execute_command') {
            // The command runs isolated: its writes land when it ends, so its start is seen by its
            // sleep among the processes.
            const poll = setInterval(() => {
              if (sleeping('29.5')) {
                clearInterval(poll);
                void vscode.commands.executeCommand('chokepoint.stopTask');
              }
            }, 20);
          }
        },
      );
      const ended = events.find((e) => e.type === 'taskEnded');
      assert.strictEqual(ended?.type === 'taskEnded' && ended.status, 'cancelled');
      assert.ok(Date.now() - started < 15_000, 'stopped at once');
      await new Promise((r) => setTimeout(r, 300));
      assert.ok(!fs.existsSync(path.join(root(), 'src/auth/after.txt')), 'the command did not go on');
    } finally {
      fs.rmSync(script, { force: true });
    }
  });
});
