// A write's diff as the Approvals section shows it: the lines before and after, the common head and
// tail kept as context (three lines each side), what lies between removed and added. One hunk, linear
// time: enough to see what a write changes; the decision is on the whole file either way.

export interface DiffLine {
  kind: 'ctx' | 'del' | 'add' | 'gap';
  text: string;
}

const CONTEXT = 3;
/** Lines shown at most; the rest is counted. */
const MAX_LINES = 400;

export function lineDiff(before: string, after: string): DiffLine[] {
  const a = lines(before);
  const b = lines(after);
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const out: DiffLine[] = [];
  const from = Math.max(0, head - CONTEXT);
  if (from > 0) out.push({ kind: 'gap', text: `… ${from} unchanged line${from === 1 ? '' : 's'}` });
  for (let i = from; i < head; i++) out.push({ kind: 'ctx', text: a[i] });
  for (let i = head; i < a.length - tail; i++) out.push({ kind: 'del', text: a[i] });
  for (let i = head; i < b.length - tail; i++) out.push({ kind: 'add', text: b[i] });
  const shown = Math.min(tail, CONTEXT);
  for (let i = b.length - tail; i < b.length - tail + shown; i++) out.push({ kind: 'ctx', text: b[i] });
  if (tail > shown) out.push({ kind: 'gap', text: `… ${tail - shown} unchanged line${tail - shown === 1 ? '' : 's'}` });
  if (out.length > MAX_LINES) {
    const more = out.length - MAX_LINES;
    return [...out.slice(0, MAX_LINES), { kind: 'gap', text: `… ${more} more line${more === 1 ? '' : 's'}` }];
  }
  return out;
}

/** The lines of a text; the end of the last line is not a line of its own. */
function lines(text: string): string[] {
  if (text === '') return [];
  const all = text.replace(/\r\n/g, '\n').split('\n');
  if (all[all.length - 1] === '') all.pop();
  return all;
}
