// The status-bar item's text per engine state (extension/src/ui/statusLine.ts), above all that a
// deleted active_intents.yaml, which turns scope checks off, does not look like a healthy engine.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { EngineState } from '../../protocol/messages';
import { statusLine } from '../../extension/src/ui/statusLine';

function ready(intents: 'loaded' | 'missing' | 'invalid', diagnostics = 0): EngineState {
  return {
    status: 'ready',
    version: '0.1.0',
    workspaceRoot: '/ws',
    hooks: { path: '/ws/.orchestration/hooks.yaml', status: 'loaded', hookCount: 1, events: [], taskTypes: [] },
    intents: { path: '/ws/.orchestration/active_intents.yaml', status: intents, ids: intents === 'loaded' ? ['INT-1'] : [] },
    diagnostics: Array.from({ length: diagnostics }, () => ({ file: 'hooks.yaml', line: 1, column: 1, code: 'x', message: 'bad' })),
  } as EngineState;
}

test('a healthy engine shows its shield and no warning', () => {
  assert.deepEqual(statusLine(ready('loaded')), { text: '$(shield) Chokepoint 0.1.0' });
});

test('a missing active_intents.yaml says that scope checks are off, in the warning colour', () => {
  const line = statusLine(ready('missing'));
  assert.equal(line.text, '$(warning) Chokepoint 0.1.0: scope checks off');
  assert.equal(line.tone, 'warning');
  assert.match(line.warning ?? '', /active_intents\.yaml is missing: scope checks are off/);
});

test("a team's database is named, and falling back to this machine alone or a broken setting warns", () => {
  const at = (coordination: NonNullable<Extract<EngineState, { status: 'ready' }>['coordination']>) =>
    statusLine({ ...(ready('loaded') as Extract<EngineState, { status: 'ready' }>), coordination });
  assert.equal(
    at({ mode: 'team', database: 'postgres://team@db.example:5432/chokepoint' }).text,
    '$(shield) Chokepoint 0.1.0 · team: db.example:5432/chokepoint',
  );
  const local = at({ mode: 'local-fallback', database: 'postgres://team@db.example/c', cause: 'coordinating on this machine alone: x' });
  assert.equal(local.tone, 'warning');
  assert.match(local.text, /this machine alone/);
  assert.match(local.warning ?? '', /coordinating on this machine alone/);
  const broken = at({ mode: 'broken', cause: 'no origin remote' });
  assert.equal(broken.tone, 'error');
  assert.equal(broken.warning, 'no origin remote');
  assert.deepEqual(at({ mode: 'off' }), { text: '$(shield) Chokepoint 0.1.0' });
});

test('a configuration error still comes first', () => {
  assert.equal(statusLine(ready('missing', 1)).text, '$(warning) Chokepoint 0.1.0: config error');
  assert.equal(statusLine({ status: 'failed', error: 'x', lookedFor: 'y' }).tone, 'error');
});
