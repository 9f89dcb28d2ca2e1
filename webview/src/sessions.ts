// The Sessions section: every agent session working in the workspace (ours, Claude Code, Codex,
// Gemini CLI, VS Code's agent, ...) and in the other worktrees of its repository, each with its
// worktree and branch, as the core reads it from the trace and the leases: the agent,
// the intent it holds and until when, its counts of allowed and denied calls, its last denial and its
// last actions; and a Revoke button per held lease, with an optional reason told to the agent. The
// host confirms a revocation in a modal dialog; the page only asks. Items are kept by session and
// updated in place, so a reason being typed survives a refresh of the trace.
import type { SessionAction, SessionView, WebviewMessage } from '../../protocol/messages';
import { MAX_REVOKE_REASON } from '../../protocol/messages';
import { button, el, setEnabled } from './dom';
import { welcome } from './welcome';

interface Item {
  element: HTMLElement;
  body: HTMLElement;
  controls: HTMLElement;
  reason: HTMLInputElement;
  revoke: HTMLElement;
  note: HTMLElement;
}

/** A time of day from RFC 3339 or unix milliseconds, as the reader's locale writes it. */
function clock(time: string | number): string {
  const when = new Date(time);
  return Number.isNaN(when.getTime()) ? String(time) : when.toLocaleTimeString();
}

/** One action in a line: when, what (tool or event), what it touched, how it was decided. */
export function actionText(a: SessionAction): string {
  const what = a.tool ?? a.event ?? a.kind;
  return [clock(a.time), what, a.summary, a.decision, a.subagent ? `(sub-agent ${a.subagent})` : undefined]
    .filter((x): x is string => !!x)
    .join(' ');
}

/** Where a session works, in words: the machine its lease was taken on (a team's database names
 *  it), its git worktree and branch (empty outside a repository). */
export function placeText(s: SessionView): string {
  if (!s.worktree) return s.lease?.machine ?? '';
  const place = s.branch ? `${s.worktree} · ${s.branch}` : s.worktree;
  return s.lease?.machine ? `${s.lease.machine} · ${place}` : place;
}

/** The lease in words: the intent and until when (or, yielded at its turn's end, since when it is
 *  free to take), or why there is none. */
export function leaseText(s: SessionView): string {
  if (s.lease && s.leaseIdle) return `${s.lease.intentId} idle since ${clock(s.lease.expires)}, free to take`;
  if (s.lease) return `${s.lease.intentId} until ${clock(s.lease.expires)}`;
  if (s.revoked) return `lease on ${s.revoked.intentId} revoked by ${s.revoked.by} at ${clock(s.revoked.at)}`;
  return 'no intent';
}

export function sessionsSection(options: { post(message: WebviewMessage): void }) {
  const heading = el('h3', { text: 'Sessions' });
  heading.id = 'sessions-heading';
  const count = document.createElement('vscode-badge');
  count.setAttribute('data-testid', 'sessions-count');
  count.hidden = true;
  heading.append(' ', count);
  const status = el('p', { class: 'muted', testid: 'sessions-status', text: 'No session has acted yet.' });
  status.setAttribute('role', 'status');
  const list = el('ol', { class: 'sessions' });
  list.setAttribute('aria-labelledby', heading.id);
  const empty = welcome(
    'sessions-welcome',
    [
      'Connect an agent: each of its sessions shows here with the intent it holds, its allowed and denied calls and its last actions, and a Revoke button for its lease.',
    ],
    [
      { label: 'Connect VS Code\u2019s Chat', run: 'chokepoint.connectVsCodeAgent' },
      { label: 'Set Up Another Agent\u2026', run: 'chokepoint.setUpAgent', secondary: true },
    ],
    options.post,
  );
  const section = el('section', { class: 'sessions-section', testid: 'sessions' }, heading, status, empty.element, list);
  section.setAttribute('aria-labelledby', heading.id);
  // Refreshed on every change of the trace: announcing each would drown the reader.
  section.setAttribute('aria-live', 'off');
  // Shown once an engine runs (main.ts), like the Trace section: without one there is nothing to read.
  section.hidden = true;
  const items = new Map<string, Item>();

  function item(session: string): Item {
    const reason = el('input', { class: 'prompt reason-line', testid: 'session-reason', title: 'Told to the agent with the revocation' });
    reason.placeholder = 'Reason (optional, told to the agent)';
    reason.maxLength = MAX_REVOKE_REASON;
    reason.setAttribute('aria-label', `Why the lease of ${session} is revoked`);
    const note = el('p', { class: 'muted', testid: 'session-result' });
    note.hidden = true;
    const revoke = button('Revoke', () => {
      setEnabled(revoke, false);
      note.hidden = true;
      const text = reason.value.trim();
      options.post({ type: 'revokeLease', session, ...(text ? { reason: text } : {}) });
    });
    revoke.setAttribute('data-testid', 'session-revoke');
    revoke.setAttribute('aria-label', `Revoke the lease of ${session}`);
    const controls = el('div', { class: 'actions session-controls' }, reason, revoke);
    const body = el('div', {});
    const element = el('li', { class: 'entry session', testid: 'session' }, body, controls, note);
    element.dataset.session = session;
    return { element, body, controls, reason, revoke, note };
  }

  function fill(it: Item, s: SessionView): void {
    it.element.dataset.agent = s.agentId ?? '';
    const head = el(
      'div',
      { class: 'entry-head' },
      el('span', { class: 'what', testid: 'session-agent', text: s.label }),
      el('span', { class: 'mono muted', text: s.sessionId }),
    );
    // Every worktree of the repository shares the lease table: say where each session works.
    const place = placeText(s);
    if (place) {
      const where = el('span', { class: 'muted', testid: 'session-worktree', text: place });
      where.title = `${s.lease?.machine ? `machine ${s.lease.machine}, ` : ''}worktree ${s.worktree ?? '?'}${s.branch ? `, branch ${s.branch}` : ''}`;
      head.append(where);
    }
    const lease = el('span', { class: s.lease && !s.leaseIdle ? 'lease' : 'lease muted', testid: 'session-lease', text: leaseText(s) });
    lease.dataset.idle = String(s.leaseIdle);
    if (s.leaseIdle) lease.title = 'Its turn ended: any session may take this intent now; this one renews it at its next call if nobody did.';
    if (s.revoked && !s.lease) lease.className = 'lease reason';
    const counts = el('div', { class: 'muted', testid: 'session-counts', text: `allowed ${s.allowed} · denied ${s.denied}` });
    const rows: Node[] = [head, el('div', {}, lease), counts];
    const more = [s.subagents.length ? `sub-agents: ${s.subagents.join(', ')}` : undefined, s.model ? `model ${s.model}` : undefined].filter(
      (x): x is string => !!x,
    );
    if (more.length) rows.push(el('div', { class: 'muted', text: more.join(' · ') }));
    if (s.lastDenial) {
      rows.push(el('div', { class: 'reason', testid: 'session-last-denial', text: `Last denial (${clock(s.lastDenial.time)}): ${s.lastDenial.reason ?? s.lastDenial.tool ?? ''}` }));
    }
    if (s.actions.length) {
      const actions = el('ul', { class: 'session-actions', testid: 'session-actions' });
      for (const a of s.actions) {
        const li = el('li', { class: 'mono', text: actionText(a) });
        if (a.decision) li.classList.add(`decided-${a.decision}`);
        actions.append(li);
      }
      rows.push(actions);
    }
    it.body.replaceChildren(...rows);
    it.controls.hidden = !s.lease;
    setEnabled(it.revoke, !!s.lease);
  }

  return {
    section,
    show(outcome: { ok: true; sessions: SessionView[] } | { ok: false; error: string }): void {
      status.classList.toggle('error', !outcome.ok);
      if (!outcome.ok) {
        empty.toggle(false);
        status.textContent = `Cannot read the sessions: ${outcome.error}`;
        return;
      }
      const sessions = outcome.sessions;
      count.textContent = String(sessions.length);
      count.hidden = sessions.length === 0;
      status.textContent = sessions.length
        ? `${sessions.length} session${sessions.length === 1 ? '' : 's'} in the last 24 hours or holding an intent, most recent first`
        : 'No session has acted yet.';
      empty.toggle(sessions.length === 0);
      const seen = new Set<string>();
      const ordered: HTMLElement[] = [];
      for (const s of sessions) {
        seen.add(s.sessionId);
        let it = items.get(s.sessionId);
        if (!it) {
          it = item(s.sessionId);
          items.set(s.sessionId, it);
        }
        fill(it, s);
        ordered.push(it.element);
      }
      for (const [id, it] of items) {
        if (!seen.has(id)) {
          it.element.remove();
          items.delete(id);
        }
      }
      // Moves only what moved: an element re-appended in place keeps its focus and typed text.
      ordered.forEach((node, i) => {
        if (list.children[i] !== node) list.insertBefore(node, list.children[i] ?? null);
      });
    },
    result(session: string, ok: boolean, revoked: boolean | undefined, message: string | undefined, error: string | undefined): void {
      const it = items.get(session);
      if (!it) return;
      setEnabled(it.revoke, true);
      it.note.hidden = false;
      it.note.classList.toggle('error', !ok);
      it.note.textContent = ok ? (message ?? '') : `Not revoked: ${error ?? 'unknown error'}`;
      if (ok && revoked) it.reason.value = '';
    },
  };
}
