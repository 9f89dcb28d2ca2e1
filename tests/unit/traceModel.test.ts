// What the Trace view makes of the ledger's records (extension/src/ui/traceModel.ts): sessions
// newest first, a call's before and after as one action, lifecycle folded away, the filters, and
// short session names.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type Entry,
  applyFilter,
  containedCommandLines,
  countLine,
  decisionLine,
  groupBySession,
  shortSession,
  writtenFiles,
} from '../../extension/src/ui/traceModel';

let seq = 100;
function rec(over: Partial<Entry>): Entry {
  seq -= 1;
  return { seq, time: new Date(Date.UTC(2026, 10, 28, 10) + seq * 1000).toISOString(), kind: 'tool_call', files: [], refused: [], paths: [], ...over } as Entry;
}

// Newest first, as the binding lists them: session B's denial, then session A's call (after, then
// before), its turn's lifecycle, and an ask.
const S_A = 'claude:0f3a9c2e-1111-2222-3333-444455556666';
const entries: Entry[] = [
  rec({
    session: 'vscode:b',
    agent: 'vscode',
    intent: 'INT-002',
    event: 'PreToolUse',
    tool: 'write_to_file',
    decision: 'deny',
    reason: 'outside the scope',
    paths: ['src/billing/x.js'],
    call: 'c3',
  }),
  rec({ session: S_A, agent: 'claude', kind: 'lifecycle', event: 'TurnEnd' }),
  rec({
    session: S_A,
    agent: 'claude',
    intent: 'INT-001',
    event: 'PostToolUse',
    tool: 'Write',
    decision: 'allow',
    files: [{ path: 'src/auth/login.js', ranges: [{ start: 1, end: 3 }] }],
    call: 'c1',
  }),
  rec({ session: S_A, agent: 'claude', intent: 'INT-001', event: 'PreToolUse', tool: 'Write', decision: 'allow', paths: ['src/auth/login.js'], call: 'c1' }),
  rec({ session: S_A, agent: 'claude', intent: 'INT-001', event: 'PreToolUse', tool: 'Bash', decision: 'ask', reason: 'a person confirms', call: 'c2' }),
  rec({ session: S_A, agent: 'claude', kind: 'lifecycle', event: 'TurnStart' }),
  rec({ session: S_A, agent: 'claude', kind: 'lifecycle', event: 'SessionStart' }),
];

test('records are grouped by session, newest session first, with lifecycle events folded away', () => {
  const groups = groupBySession(entries);
  assert.deepEqual(
    groups.map((g) => g.session),
    ['vscode:b', S_A],
  );
  const a = groups[1];
  assert.equal(a.agent, 'claude');
  assert.deepEqual(a.intents, ['INT-001']);
  assert.deepEqual(
    a.lifecycle.map((e) => e.event),
    ['TurnEnd', 'TurnStart', 'SessionStart'],
  );
  assert.deepEqual(a.counts, { actions: 2, denied: 0, asked: 1 });
  assert.equal(groups[0].counts.denied, 1);
});

test("a call's judged record and its after record are one action that ran, labelled with what it wrote", () => {
  const a = groupBySession(entries)[1];
  const write = a.actions.find((x) => x.label.startsWith('Write'));
  assert.ok(write);
  assert.equal(write.label, 'Write src/auth/login.js');
  assert.equal(write.outcome, 'allowed');
  assert.equal(write.ran, true);
  assert.deepEqual(
    write.records.map((r) => r.event),
    ['PreToolUse', 'PostToolUse'],
    'the judged record first',
  );
  const ask = a.actions.find((x) => x.label === 'Bash');
  assert.ok(ask);
  assert.equal(ask.outcome, 'asked');
  assert.equal(ask.ran, false);
  assert.equal(ask.reason, 'a person confirms');
});

test('an after record whose judged record is not listed still shows, as one that ran', () => {
  const [g] = groupBySession([entries[2]]);
  assert.equal(g.actions.length, 1);
  assert.equal(g.actions[0].ran, true);
  assert.equal(g.actions[0].records.length, 1);
});

test('the outcome and agent filters keep matching actions and drop sessions left empty', () => {
  const groups = groupBySession(entries);
  const denied = applyFilter(groups, { outcome: 'denied' });
  assert.deepEqual(
    denied.map((g) => g.session),
    ['vscode:b'],
  );
  assert.deepEqual(
    denied[0].actions.map((a) => a.label),
    ['write_to_file src/billing/x.js'],
  );
  const asked = applyFilter(groups, { outcome: 'asked' });
  assert.deepEqual(
    asked.map((g) => [g.session, g.actions.length]),
    [[S_A, 1]],
  );
  assert.deepEqual(
    applyFilter(groups, { agent: 'claude' }).map((g) => g.session),
    [S_A],
  );
  assert.equal(applyFilter(groups, {}).length, 2);
});

test('the team scope keeps one machine’s session apart from another’s of the same id', () => {
  const from = (machine: string) => ({ machine, worktree: 'web', chain: `${machine}-1` });
  const groups = groupBySession([rec({ session: 's', from: from('alpha') }), rec({ session: 's', from: from('beta') })]);
  assert.deepEqual(
    groups.map((g) => g.place),
    ['alpha · web', 'beta · web'],
  );
});

test('session ids are shortened to read, and counts say how many of how many', () => {
  assert.equal(shortSession(S_A), 'claude:0f3a9c2e');
  assert.equal(shortSession('vscode:b'), 'vscode:b');
  assert.equal(shortSession('9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d'), '9b1deb4d');
  assert.equal(countLine(50, 105), 'the newest 50 of 105 records');
  assert.equal(countLine(3, 3), '3 records');
  assert.equal(countLine(1, undefined), '1 record');
});

test('a contained command whose writes were refused or undone counts as a denial, naming them', () => {
  const contained = rec({
    session: 's',
    kind: 'containment',
    tool: 'execute_command',
    files: [{ path: 'src/auth/ok.js', ranges: [] }],
    refused: ['src/billing/x.js'],
  });
  const clean = rec({ session: 's', kind: 'containment', tool: 'execute_command', files: [{ path: 'src/auth/ok.js', ranges: [] }] });
  const [g] = groupBySession([contained, clean]);
  assert.deepEqual(
    g.actions.map((a) => a.outcome),
    ['denied', 'recorded'],
  );
  assert.equal(g.actions[0].reason, 'writes refused or undone: src/billing/x.js');
  assert.equal(g.actions[0].label, 'contained command · execute_command src/auth/ok.js');
  assert.equal(g.counts.denied, 1);
});

test('a completion gate that refused at the turn’s end is an action, not folded lifecycle', () => {
  const [g] = groupBySession([
    rec({ session: 's', kind: 'lifecycle', event: 'BeforeSubmit', decision: 'deny', reason: 'the tests fail' }),
    rec({ session: 's', kind: 'lifecycle', event: 'BeforeSubmit', decision: 'allow' }),
  ]);
  assert.deepEqual(
    g.actions.map((a) => [a.label, a.outcome]),
    [['BeforeSubmit', 'denied']],
  );
  assert.equal(g.lifecycle.length, 1);
});

test('the output channel tells each judged record in one line, refusals at info and the rest at debug', () => {
  const denied = decisionLine(
    rec({
      session: 'vscode:3f9c2a71-aaaa-bbbb-cccc-ddddeeeeffff',
      agent: 'vscode',
      intent: 'INT-001',
      event: 'PreToolUse',
      tool: 'create_file',
      decision: 'deny',
      reason: 'outside the scope',
      paths: ['src/billing/x.js'],
    }),
  );
  assert.deepEqual(denied, {
    level: 'info',
    line: `vscode vscode:3f9c2a71: PreToolUse create_file src/billing/x.js: denied (INT-001): outside the scope [#${seq}]`,
  });
  assert.equal(decisionLine(rec({ session: 's', agent: 'claude', event: 'PreToolUse', tool: 'Read', decision: 'allow' }))?.level, 'debug');
  assert.equal(decisionLine(rec({ session: 's', kind: 'lifecycle', event: 'TurnEnd' })), undefined, 'routine lifecycle is not told');
  assert.equal(decisionLine(rec({ session: 's', kind: 'lifecycle', event: 'BeforeSubmit', decision: 'deny', reason: 'tests fail' }))?.level, 'info');
  assert.equal(decisionLine(rec({ session: 's', event: 'PreToolUse', tool: 'Bash', decision: 'ask', reason: 'a person confirms' }))?.level, 'info');
});

test("a call's written files are its after record's, each with the hashes its diff is opened by", () => {
  const after = rec({
    session: 'S',
    event: 'PostToolUse',
    tool: 'Write',
    decision: 'allow',
    call: 'w',
    files: [
      {
        path: 'src/a.js',
        ranges: [
          { start: 2, end: 3 },
          { start: 7, end: 7 },
        ],
        sha256: 'aa',
        beforeSha256: 'bb',
      },
      { path: 'src/gone.js', ranges: [], beforeSha256: 'cc' },
      { path: 'src/old.js', ranges: [{ start: 1, end: 1 }], sha256: 'dd' },
    ],
  });
  const before = rec({ session: 'S', event: 'PreToolUse', tool: 'Write', decision: 'allow', call: 'w', paths: ['src/a.js'] });
  const [action] = groupBySession([after, before])[0].actions;
  assert.deepEqual(writtenFiles(action), [
    { path: 'src/a.js', seq: after.seq, lines: '2–3, 7', before: 'bb', after: 'aa' },
    { path: 'src/gone.js', seq: after.seq, lines: '', before: 'cc', after: undefined },
    { path: 'src/old.js', seq: after.seq, lines: '1', before: undefined, after: 'dd' },
  ]);
  // A denied call wrote nothing.
  assert.deepEqual(writtenFiles(groupBySession(entries)[0].actions[0]), []);
});

test("a contained command's record says what it changed and kept, what was refused, and what was undone with why", () => {
  const record = {
    kind: 'containment',
    data: {
      argv: ['sh', '-c', 'npm run fix'],
      exit_code: 0,
      timed_out: false,
      cancelled: false,
      confinement: 'landlock abi 4',
      isolation: 'isolated',
      changed: [{ path: 'src/auth/login.js', kind: 'modified' }],
      refused: [{ path: 'src/billing/invoice.js', kind: 'modified' }],
      not_applied: [{ path: 'src/auth/notes.md', kind: 'created', conflict: true, kept: 'theirs', reason: 'a person wrote it while the command ran' }],
      others: [],
      notes: ['1 write outside the scope was refused'],
    },
  };
  const text = containedCommandLines(record).join('\n');
  assert.match(text, /`sh -c npm run fix` · exit code 0 · isolated · confinement: landlock abi 4/);
  assert.match(text, /\*\*Changed, and kept\*\*\n\n- `src\/auth\/login\.js` \(modified\)/);
  assert.match(text, /\*\*Refused: outside its scope, never applied\*\*\n\n- `src\/billing\/invoice\.js` \(modified\)/);
  assert.match(text, /- `src\/auth\/notes\.md` \(created\): a person wrote it while the command ran \(someone else changed it meanwhile: theirs is kept\)/);
  assert.match(text, /\*\*Notes\*\*\n\n- 1 write outside the scope was refused/);
  assert.deepEqual(containedCommandLines({ kind: 'tool_call', data: {} }), [], 'only a contained command');
  assert.match(containedCommandLines({ kind: 'containment', data: { argv: ['true'], exit_code: 0 } }).join('\n'), /It changed nothing in the workspace/);
});
