// What a Pending's card says of its time and its asker: the countdown to its deadline with what
// happens then, and a session's short name. Pure functions of the Pending and the time: no DOM, so
// the unit tests run them in Node (tests/unit/countdown.test.ts).
import type { PendingView } from '../../protocol/messages';

/** What the countdown reads of a Pending. */
export type Lapsing = Pick<PendingView, 'deadlineMs' | 'onTimeout' | 'agent'>;

/** A session id as a card names it: the agent's own id after `<agent>:`, its first 8 characters. */
export function shortSession(session: string): string {
  const own = session.includes(':') ? session.slice(session.indexOf(':') + 1) : session;
  return own.length > 8 ? `${own.slice(0, 8)}…` : own;
}

/** `m:ss` (or `h:mm:ss`) of a number of seconds. */
export function clock(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  const [h, m, r] = [Math.floor(s / 3600), Math.floor((s % 3600) / 60), s % 60];
  const two = (n: number) => String(n).padStart(2, '0');
  return h > 0 ? `${h}:${two(m)}:${two(r)}` : `${m}:${two(r)}`;
}

/** What happens to `p` when nobody decides it, as the end of a sentence. */
function lapseText(p: Lapsing): string {
  switch (p.onTimeout) {
    case 'deny':
      return 'then the call is denied';
    case 'agent_prompt':
      return `then ${p.agent ?? 'the agent'} asks you in its own prompt`;
    default:
      return 'then it counts as rejected';
  }
}

/** The countdown line of `p` at `now`: "Lapses in 4:12: then the call is denied." */
export function countdownText(p: Lapsing, now: number): string {
  if (p.deadlineMs === null) return '';
  const left = (p.deadlineMs - now) / 1000;
  return left > 0 ? `Lapses in ${clock(left)}: ${lapseText(p)}.` : `Lapsed: ${lapseText(p).replace(/^then /, '')}.`;
}
