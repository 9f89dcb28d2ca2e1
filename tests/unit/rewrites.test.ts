// What the runtime reads of a hook's `modify` per event (extension/src/runtime/rewrites.ts): each
// shape validated, a field of the wrong type ignored (the runtime keeps its own value), never an error.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { firstSummary, queuedTasks, toolResultRewrite, turnRewrite } from '../../extension/src/runtime/rewrites';

/** One reader, its inputs and what it reads of each. */
function check<T>(read: (modified: unknown) => T, cases: Array<[unknown, T]>): void {
  for (const [modified, expected] of cases) assert.deepEqual(read(modified), expected, JSON.stringify(modified));
}

test('PostToolUse: the rewritten output, an error only when it says so', () => {
  check(toolResultRewrite, [
    [{ result: { output: 'ok\nlinter: 2 warnings', is_error: false } }, { output: 'ok\nlinter: 2 warnings', isError: false }],
    [{ result: { output: 'failed', is_error: true } }, { output: 'failed', isError: true }],
    [{ result: { output: 'no flag' } }, { output: 'no flag', isError: false }],
    [{ result: { output: 'odd flag', is_error: 'yes' } }, { output: 'odd flag', isError: false }],
    [{ result: { output: 7 } }, undefined],
    [{ result: 'text' }, undefined],
    [undefined, undefined],
    [null, undefined],
  ]);
});

test('TurnPrepare: the system prompt, the model and the messages, each kept when not rewritten as such', () => {
  check(turnRewrite, [
    [
      { turn: 1, system_prompt: 'steered', model: 'bigger-model', message_count: 3 },
      { systemPrompt: 'steered', model: 'bigger-model', messages: undefined },
    ],
    [
      { system_prompt: 5, model: '', messages: [{ role: 'user', content: 'hi' }] },
      { systemPrompt: undefined, model: undefined, messages: [{ role: 'user', content: 'hi' }] },
    ],
    [undefined, { systemPrompt: undefined, model: undefined, messages: undefined }],
    ['not an object', { systemPrompt: undefined, model: undefined, messages: undefined }],
  ]);
});

test('AllTasksComplete: the queued tasks with a prompt, their titles when they are text', () => {
  check(queuedTasks, [
    [{ tasks: [{ prompt: 'next', title: 'Next' }, { prompt: 'then' }] }, [{ prompt: 'next', title: 'Next' }, { prompt: 'then' }]],
    [{ tasks: [{ title: 'no prompt' }, null, { prompt: 'kept', title: 3 }] }, [{ prompt: 'kept', title: undefined }]],
    [{ tasks: 'all of them' }, []],
    [{ tasks: [] }, []],
    [undefined, []],
  ]);
});

test("a decided compaction's first summary, when it has one", () => {
  check(firstSummary, [
    [{ summaries: [{ text: 'first' }, { text: 'second' }] }, 'first'],
    [{ summaries: [{ text: 'first' }, 'malformed'] }, 'first'],
    [{ summaries: [] }, undefined],
    [{ summaries: [{ source: 'no text' }] }, undefined],
    [undefined, undefined],
  ]);
});
