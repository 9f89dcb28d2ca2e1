// What the Sessions view says of each session, in words and states, apart from VS Code (the view,
// sessionsView.ts, turns these into tree items): so that the lines a person reads, the state an icon
// shows and when the view must look again are tested under plain Node (tests/unit/sessionsModel.test.ts).
// Its input is the binding's `SessionView`, as the core lists it: most recently active first.
import type { SessionAction, SessionView } from '../../../native/node/index';
import { shortSession } from './traceModel';

/** Where this VS Code works: its worktree's name (the root folder's, as the core names worktrees),
 *  and whether it coordinates with a team (whose leases are taken on several machines). */
export interface Here {
  worktree?: string;
  team?: boolean;
}

/** The state of a session's lease, which its icon and its menu follow: it holds its intent until the
 *  lease expires; idle (its turn ended or it lapsed, and nobody took the intent: free to take); a
 *  person revoked it; or it holds none. */
export type LeaseState = 'held' | 'idle' | 'revoked' | 'none';

export function leaseState(s: SessionView): LeaseState {
  if (s.lease) return s.leaseIdle ? 'idle' : 'held';
  return s.revoked ? 'revoked' : 'none';
}

/** A time of day (hours and minutes) from RFC 3339 or unix milliseconds, in the reader's locale;
 *  `seconds` when the minute is not enough (a lease's exact end, in its tooltip). */
export function clock(time: string | number, seconds = false): string {
  const when = new Date(time);
  if (Number.isNaN(when.getTime())) return String(time);
  return when.toLocaleTimeString(undefined, seconds ? undefined : { hour: '2-digit', minute: '2-digit' });
}

/** The intent and its state in a few words, for the session's line. */
export function leaseText(s: SessionView): string {
  switch (leaseState(s)) {
    case 'held':
      return `${s.lease!.intentId} held until ${clock(s.lease!.expires)}`;
    case 'idle':
      return `${s.lease!.intentId} idle, free to take`;
    case 'revoked':
      return `${s.revoked!.intentId} revoked by ${s.revoked!.by}`;
    case 'none':
      return 'no intent';
  }
}

/** The lease as its own line under the session: the same, with its times and the revocation's reason. */
export function leaseDetail(s: SessionView): { label: string; detail?: string } {
  switch (leaseState(s)) {
    case 'held':
      return { label: `Holds ${s.lease!.intentId}`, detail: `until ${clock(s.lease!.expires, true)}, taken at ${clock(s.lease!.since, true)}` };
    case 'idle':
      return { label: `${s.lease!.intentId} idle since ${clock(s.lease!.expires, true)}, free to take`, detail: 'renewed at its next call if nobody took it' };
    case 'revoked':
      return { label: `Lease on ${s.revoked!.intentId} revoked by ${s.revoked!.by} at ${clock(s.revoked!.at, true)}`, detail: s.revoked!.reason };
    case 'none':
      return { label: 'No intent' };
  }
}

/** Its tool calls in the window, and how many were denied: `3 actions · 1 denied`. */
export function countsText(s: SessionView): string {
  const n = s.allowed + s.denied;
  return `${n} action${n === 1 ? '' : 's'} · ${s.denied} denied`;
}

/** Where it works, when that is not plain: in a team, the machine its lease was taken on (every
 *  lease names its machine; alone, it is always this one), and its worktree and branch when they are
 *  another worktree's of the repository. */
export function placeText(s: SessionView, here: Here): string {
  const elsewhere = s.worktree && s.worktree !== here.worktree ? [s.worktree, s.branch] : [];
  return [here.team ? s.lease?.machine : undefined, ...elsewhere].filter(Boolean).join(' · ');
}

/** The session's line: the agent, its short id (the whole one is in the tooltip), where it works. */
export function sessionLabel(s: SessionView, here: Here): string {
  return [s.label, shortSession(s.sessionId), placeText(s, here)].filter(Boolean).join(' · ');
}

/** Beside it: the intent held and its state, and the counts. */
export function sessionDescription(s: SessionView): string {
  return `${leaseText(s)} · ${countsText(s)}`;
}

/** The whole of it for a tooltip (Markdown), the full session id first. */
export function sessionTooltip(s: SessionView): string {
  return [
    `**${s.label}**, session \`${s.sessionId}\``,
    leaseDetail(s).label + (leaseDetail(s).detail ? ` (${leaseDetail(s).detail})` : ''),
    s.worktree && `worktree ${s.worktree}${s.branch ? `, branch ${s.branch}` : ''}`,
    s.lease?.machine && `taken on machine ${s.lease.machine}`,
    `${s.allowed} allowed, ${s.denied} denied, ${s.records} record${s.records === 1 ? '' : 's'} in the last 24 hours`,
    s.model && `model ${s.model}`,
    s.subagents.length ? `sub-agents: ${s.subagents.join(', ')}` : undefined,
    s.lastSeen !== undefined && `last seen at ${clock(s.lastSeen, true)}`,
  ]
    .filter(Boolean)
    .join('\n\n');
}

/** What a session's record did, in a line: the tool (or event) and what it touched. */
export function actionLabel(a: SessionAction): string {
  return [a.tool ?? a.event ?? a.kind, a.summary].filter(Boolean).join(' ');
}

/** Beside it: how it was decided, when, and by which sub-agent. */
export function actionDescription(a: SessionAction): string {
  return [a.decision, clock(a.time, true), a.subagent && `sub-agent ${a.subagent}`].filter(Boolean).join(' · ');
}

/** How many sessions hold an intent now (an idle lease is free to take: not held). */
export function holdingCount(sessions: readonly SessionView[]): number {
  return sessions.filter((s) => leaseState(s) === 'held').length;
}

/** When to look again though nothing was recorded: a lease that runs out writes nothing to the trace,
 *  so the view is read again just after the first held lease expires, never showing a session holding
 *  an intent it no longer holds. An idle lease changes only with a record (taken, or renewed by its
 *  holder): it schedules nothing. Milliseconds from `now`, at least a second, within what a timer
 *  takes; undefined when nothing is held. */
export function nextLook(sessions: readonly SessionView[], now: number): number | undefined {
  const next = Math.min(...sessions.flatMap((s) => (leaseState(s) === 'held' ? [s.lease!.expires] : [])));
  if (!Number.isFinite(next)) return undefined;
  return Math.min(Math.max(next - now + 250, 1000), 2 ** 31 - 1);
}
