// What the Trace view shows, computed from the ledger's records without VS Code (tests/unit/
// traceModel.test.ts): the records grouped by session, newest session first; in each, the agent's
// actions (tool calls, approvals, contained commands, other agents' events) with a call's before and
// after records as one action, and the lifecycle events (turns, task and session boundaries) folded
// into one list of their own, because they say when things happened, not what happened. A call's `PreToolUse` and `PostToolUse`
// records are joined by the `call` digest; also here: the filters, short names, the files an action wrote (`writtenFiles`) and
// the decision log's line (`decisionLine`).
import { z } from 'zod';
import type * as Binding from '../../../native/node/index';
import { JsonObject } from '../runtime/json';

/** A record as the view lists it: this worktree's, or the team's with where it was written. */
export type Entry = Binding.TraceEntry & { from?: { machine: string; worktree: string; branch?: string; chain: string } };

/** What an action came to, by the first word a person looks for. */
export type Outcome = 'denied' | 'asked' | 'allowed' | 'approved' | 'rejected' | 'recorded';

/** One thing an agent did: a tool call (its judged record and, once it ran, its after record), an
 *  approval's outcome, a contained command's report, or another agent's event. */
export interface Action {
  readonly outcome: Outcome;
  /** `write_to_file src/auth/login.js`, `approval approved`, `contained bash -c …`. */
  readonly label: string;
  readonly reason?: string;
  readonly time: string;
  readonly intent?: string;
  /** The records it is made of, the judged one first: what opening it shows. */
  readonly records: readonly Entry[];
  /** Whether the call ran (its after record is there). */
  readonly ran: boolean;
}

export interface SessionGroup {
  /** The session id; null for records of no session (the engine's own). */
  readonly session: string | null;
  readonly agent?: string;
  /** Every intent its records name, in the order first seen (newest first). */
  readonly intents: readonly string[];
  /** `machine · worktree` in the team's trace. */
  readonly place?: string;
  readonly newest: string;
  readonly actions: readonly Action[];
  readonly lifecycle: readonly Entry[];
  readonly counts: { readonly actions: number; readonly denied: number; readonly asked: number };
}

/** Which actions a person wants to see; every field set must match. */
export interface ViewFilter {
  readonly outcome?: 'denied' | 'asked' | 'allowed';
  readonly agent?: string;
}

/** A session id short enough to read (`vscode:3f9c2a71`, `3f9c2a71`); the full id is on hover. */
export function shortSession(session: string): string {
  const colon = session.lastIndexOf(':');
  const [prefix, id] = colon > 0 ? [session.slice(0, colon + 1), session.slice(colon + 1)] : ['', session];
  return id.length > 12 ? `${prefix}${id.slice(0, 8)}` : session;
}

function outcomeOf(e: Entry): Outcome {
  // A contained command is judged before it runs; what containment refused or undid while it ran
  // is a denial of those writes.
  if (e.kind === 'containment' && e.refused.length) return 'denied';
  switch (e.decision) {
    case 'deny':
      return 'denied';
    case 'ask':
      return 'asked';
    case 'allow':
      return 'allowed';
    case 'approved':
      return 'approved';
    case 'rejected':
    case 'timed_out':
    case 'cancelled':
      return 'rejected';
    default:
      return 'recorded';
  }
}

function describe(e: Entry): string {
  // What it wrote once it ran, else what it named when it was judged.
  const named = e.files.length ? e.files.map((f) => f.path) : e.paths;
  const file = named[0];
  const more = named.length > 1 ? ` (+${named.length - 1})` : '';
  switch (e.kind) {
    case 'approval':
      return `approval ${e.decision ?? ''}`.trim() + (e.tool ? ` · ${e.tool}` : '');
    case 'containment':
      return `contained command${e.tool ? ` · ${e.tool}` : ''}${file ? ` ${file}${more}` : ''}`;
    default:
      return [e.tool ?? e.event ?? e.kind, file && `${file}${more}`].filter(Boolean).join(' ');
  }
}

/** Groups `entries` (newest first, as the binding lists them) by session and folds each call's
 *  before and after records into one action. */
export function groupBySession(entries: readonly Entry[]): SessionGroup[] {
  const order: string[] = [];
  const bySession = new Map<string, Entry[]>();
  for (const e of entries) {
    const key = `${e.from ? `${e.from.machine}/${e.from.worktree}/` : ''}${e.session ?? ''}`;
    if (!bySession.has(key)) {
      bySession.set(key, []);
      order.push(key);
    }
    bySession.get(key)!.push(e);
  }
  return order.map((key) => group(bySession.get(key)!));
}

function group(records: Entry[]): SessionGroup {
  const actions: Action[] = [];
  const lifecycle: Entry[] = [];
  // Newest first: a call's after record comes before its judged record. An after record waits here
  // for its judged one (same tool and input digest); one whose judged record is not on this page
  // stands alone.
  const after = new Map<string, Entry>();
  for (const e of records) {
    // A gate that refused at a turn's end (a failing completion gate) is an action, not routine.
    if (e.kind === 'lifecycle' && (!e.decision || e.decision === 'allow')) {
      lifecycle.push(e);
      continue;
    }
    const call = e.kind === 'tool_call' && e.call ? `${e.tool ?? ''}/${e.call}` : undefined;
    if (call && e.event === 'PostToolUse' && !after.has(call)) {
      after.set(call, e);
      continue;
    }
    const done = call && e.event === 'PreToolUse' ? after.get(call) : undefined;
    if (done && call) after.delete(call);
    const refused = e.kind === 'containment' && e.refused.length ? `writes refused or undone: ${e.refused.join(', ')}` : undefined;
    actions.push({
      outcome: outcomeOf(e),
      label: describe(done && done.files.length > e.files.length ? { ...e, files: done.files } : e),
      reason: e.reason ?? refused,
      time: e.time,
      intent: e.intent ?? undefined,
      records: done ? [e, done] : [e],
      ran: done !== undefined,
    });
  }
  for (const e of after.values()) {
    actions.push({ outcome: 'allowed', label: describe(e), time: e.time, intent: e.intent ?? undefined, records: [e], ran: true });
  }
  actions.sort((a, b) => (a.time < b.time ? 1 : a.time > b.time ? -1 : 0));
  const first = records[0];
  const intents = [...new Set(records.map((r) => r.intent).filter((i): i is string => !!i))];
  return {
    session: first.session ?? null,
    agent: records.find((r) => r.agent)?.agent ?? undefined,
    intents,
    place: first.from ? `${first.from.machine} · ${first.from.worktree}` : undefined,
    newest: first.time,
    actions,
    lifecycle,
    counts: {
      actions: actions.length,
      denied: actions.filter((a) => a.outcome === 'denied').length,
      asked: actions.filter((a) => a.outcome === 'asked').length,
    },
  };
}

/** The groups with only the actions `filter` keeps; a group left with none is left out. */
export function applyFilter(groups: readonly SessionGroup[], filter: ViewFilter): SessionGroup[] {
  if (!filter.outcome && !filter.agent) return [...groups];
  return groups
    .filter((g) => !filter.agent || g.agent === filter.agent)
    .map((g) => ({ ...g, actions: filter.outcome ? g.actions.filter((a) => a.outcome === filter.outcome) : g.actions }))
    .filter((g) => g.actions.length > 0);
}

/** "the newest 50 of 105 records" / "3 records". */
export function countLine(shown: number, total: number | undefined): string {
  const noun = (n: number) => `${n} record${n === 1 ? '' : 's'}`;
  return total !== undefined && total > shown ? `the newest ${shown} of ${noun(total)}` : noun(shown);
}

/** A record as the output channel tells it, one line: who, what, what it came to and why. Denials,
 *  asks and refused completions at `info`; allowed calls and approvals at `debug`; lifecycle
 *  events that no gate refused not at all. */
export function decisionLine(e: Entry): { level: 'info' | 'debug'; line: string } | undefined {
  if (e.kind === 'lifecycle' && (!e.decision || e.decision === 'allow')) return undefined;
  const outcome = outcomeOf(e);
  const who = [e.agent ?? 'agent', e.session ? shortSession(e.session) : undefined].filter(Boolean).join(' ');
  const what = [e.event, describe(e)].filter(Boolean).join(' ');
  const reason = e.reason ?? (e.kind === 'containment' && e.refused.length ? `writes refused or undone: ${e.refused.join(', ')}` : undefined);
  const line = `${who}: ${what}: ${outcome}${e.intent ? ` (${e.intent})` : ''}${reason ? `: ${reason}` : ''} [#${e.seq}]`;
  return { level: outcome === 'allowed' || outcome === 'approved' || outcome === 'recorded' ? 'debug' : 'info', line };
}

/** One file an action wrote, as its diff is opened: the record that wrote it and the hashes of its
 *  text before and after the write (the ledger keeps hashes; the engine's image store the texts). */
export interface WrittenFile {
  readonly path: string;
  /** The record of the write's result. */
  readonly seq: number;
  /** Lines the write put there, as the record document words them (`2–3, 7`); empty when none. */
  readonly lines: string;
  /** The hash of the text before the write (of the empty text for a file it created); absent when
   *  the engine did not read it (a record from before images were kept, a file too large). */
  readonly before?: string;
  /** The hash of the text after it; absent when the write deleted the file. */
  readonly after?: string;
}

/** The files an action wrote: those of its newest record that names any (a call's after record, a
 *  contained command's report). */
export function writtenFiles(action: Action): WrittenFile[] {
  const wrote = [...action.records].reverse().find((r) => r.files.length);
  if (!wrote) return [];
  return wrote.files.map((f) => ({
    path: f.path,
    seq: wrote.seq,
    lines: f.ranges.map((x) => (x.start === x.end ? `${x.start}` : `${x.start}–${x.end}`)).join(', '),
    before: f.beforeSha256 ?? undefined,
    after: f.sha256 ?? undefined,
  }));
}

/** A containment record, as far as it is read here: its `data` is an object whose fields are read one
 *  by one, each as text. */
const ContainmentRecord = z.object({ kind: z.literal('containment'), data: JsonObject });
/** A list of changes in that data; anything else reads as none. */
const ChangeList = z.array(JsonObject).catch([]);

/** A contained command's record as a person reads it (its `data`, as `engine::trace::containment_record`
 *  writes it): what it ran and how it ended, how it was contained, what it changed and kept, what was
 *  refused (outside the scope) and what was not applied (undone) with why. Empty for any other record,
 *  or one whose data cannot be read. */
export function containedCommandLines(record: unknown): string[] {
  const r = ContainmentRecord.safeParse(record);
  if (!r.success) return [];
  const d = r.data.data;
  const list = (key: string) => ChangeList.parse(d[key]);
  const change = (c: Record<string, unknown>) => `\`${String(c.path)}\` (${String(c.kind)})`;
  const argv = Array.isArray(d.argv) ? d.argv.map(String).join(' ') : '';
  const ended = d.cancelled ? 'stopped (cancelled)' : d.timed_out ? 'stopped (timed out)' : `exit code ${String(d.exit_code)}`;
  const lines = ['### What the contained command did', '', `\`${argv}\` · ${ended} · ${String(d.isolation)} · confinement: ${String(d.confinement)}`, ''];
  const section = (title: string, items: string[]) => {
    if (items.length) lines.push(`**${title}**`, '', ...items.map((i) => `- ${i}`), '');
  };
  section('Changed, and kept', list('changed').map(change));
  section('Refused: outside its scope, never applied', list('refused').map(change));
  section(
    'Not applied (undone), and why',
    list('not_applied').map((n) => `${change(n)}: ${String(n.reason)}${n.conflict ? ' (someone else changed it meanwhile: theirs is kept)' : ''}`),
  );
  section('Changed by others while it ran (not its own)', list('others').map(change));
  const notes = Array.isArray(d.notes) ? (d.notes as unknown[]).map(String) : [];
  section('Notes', notes);
  if (list('changed').length + list('refused').length + list('not_applied').length === 0) lines.push('It changed nothing in the workspace.', '');
  return lines;
}
