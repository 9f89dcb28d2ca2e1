// What the sidebar page keeps through being hidden (webview/src/persisted.ts): which sections the
// person folded, read on from the shape before sections folded, and when the Approvals section must
// open again by itself.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { approvalsMustOpen, isExpanded, readPersisted, withExpanded } from '../../webview/src/persisted';

test('every section is open until folded, and a folded one is remembered', () => {
  const fresh = readPersisted(undefined);
  assert.deepEqual(fresh, { v: 2, collapsed: {} });
  for (const key of ['approvals', 'task', 'engine'] as const) assert.equal(isExpanded(fresh, key), true);
  const folded = withExpanded(fresh, 'engine', false, 1_000);
  assert.equal(isExpanded(folded, 'engine'), false);
  assert.equal(isExpanded(folded, 'task'), true);
  // What VS Code hands back (a structured clone of what was set) reads the same.
  const again = readPersisted(JSON.parse(JSON.stringify(folded)));
  assert.equal(isExpanded(again, 'engine'), false);
  assert.equal(isExpanded(withExpanded(again, 'engine', true, 2_000), 'engine'), true);
});

test('the shape before sections folded keeps its draft; an unknown one, or a section the page does not have, is dropped', () => {
  assert.deepEqual(readPersisted({ v: 1, draft: 'Lock accounts', lastReload: 'Reloaded at 10:00' }), {
    v: 2,
    draft: 'Lock accounts',
    lastReload: 'Reloaded at 10:00',
    collapsed: {},
  });
  assert.deepEqual(readPersisted({ v: 7, draft: 'x' }), { v: 2, collapsed: {} });
  assert.deepEqual(readPersisted({ v: 2, collapsed: { sessions: 5, task: 'yes', engine: 9 } }).collapsed, { engine: 9 });
  assert.deepEqual(readPersisted('garbage'), { v: 2, collapsed: {} });
});

test('a folded Approvals section opens again when a Pending arrives after it was folded, not for one it hid', () => {
  const open = readPersisted(undefined);
  assert.equal(approvalsMustOpen(open, ['2026-11-28T10:00:00.000Z']), false, 'already open');
  const folded = withExpanded(open, 'approvals', false, Date.parse('2026-11-28T10:00:05.000Z'));
  assert.equal(approvalsMustOpen(folded, ['2026-11-28T10:00:00.000Z']), false, 'the person folded it over this one');
  assert.equal(approvalsMustOpen(folded, ['2026-11-28T10:00:00.000Z', '2026-11-28T10:00:09.000Z']), true);
  assert.equal(approvalsMustOpen(folded, []), false);
  // A time that cannot be read: better open than a Pending nobody sees.
  assert.equal(approvalsMustOpen(folded, ['soon']), true);
});
