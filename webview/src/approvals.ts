// The Approvals section: every open Pending as a card: what it is about (a write's diff, a scope
// expansion's paths, a plan's tasks, a compaction's summaries, a refused completion's failing hooks),
// a button per action its kind lists, an editor for modify / edit, and a box for the reason (a
// rejection's, an override's) or the note (an approval's) or the guidance (a retry's). The host sends
// the whole list whenever it changes; cards are kept by id and updated in place, so what the reader
// typed and where the keyboard focus is survive a refresh.
//
// Each card says who asked (another agent and its session, short, the full id on hover; else the hook) and counts down to its
// deadline with what happens then (countdown.ts; one clock ticks every card). Editors: modify (JSON), edit (paths or tasks, one a
// line), edit_summary and edit_guidance. The reason of a rejection or an override is required. The count is shown as a badge.
import { JsonObject, type Decision, type PendingView, type WebviewMessage } from '../../protocol/messages';
import { countdownText, shortSession } from './countdown';
import { lineDiff } from './diff';
import { collapsible } from './collapsible';
import { welcome } from './welcome';
import { button, el, setEnabled } from './dom';

const KIND_LABEL: Record<PendingView['kind'], string> = {
  tool_call: 'Tool call',
  scope_expansion: 'Scope expansion',
  plan: 'Plan',
  compaction: 'Compaction',
  submit: 'Completion refused by the checks',
};

const ACTION_LABEL: Record<string, string> = {
  approve: 'Approve',
  approve_and_save: 'Approve and save',
  reject: 'Reject',
  modify: 'Modify…',
  edit: 'Edit…',
  edit_summary: 'Edit summary…',
  edit_guidance: 'Edit guidance…',
  retry: 'Retry',
  override: 'Override',
};

/** Actions that need the reason box filled. */
const NEEDS_REASON = new Set(['reject', 'override']);

interface Card {
  element: HTMLElement;
  subjectKey: string;
  update(p: PendingView): void;
  result(ok: boolean, error?: string): void;
  /** Moves the countdown on to `now` (milliseconds since the epoch). */
  tick(now: number): void;
}

/** Under this many seconds left, the countdown stands out. */
const SOON_SECONDS = 30;

export function approvalsSection(options: { post(message: WebviewMessage): void }) {
  const count = document.createElement('vscode-badge');
  count.setAttribute('data-testid', 'approvals-count');
  count.hidden = true;
  const status = el('p', { class: 'muted', testid: 'approvals-status', text: 'Nothing waits for approval.' });
  status.setAttribute('role', 'status');
  const list = el('ol', { class: 'approvals' });
  list.setAttribute('aria-labelledby', 'approvals-heading');
  const empty = welcome(
    'approvals-welcome',
    [
      'When an agent\u2019s action needs a person, it waits here as a card: a hooks.yaml rule that asks, a request to widen an intent\u2019s scope, a plan, a completion the tests keep refusing. The agent waits until you approve, reject or modify it.',
      'The demo task asks to widen its scope: run it to see one.',
    ],
    [{ label: 'Run Demo Task', run: { type: 'runDemo' } }],
    options.post,
  );
  // Folds; the count stays in sight beside the heading.
  const folding = collapsible('approvals', 'Approvals', { class: 'approvals-section', testid: 'approvals' }, status, empty.element, list);
  folding.heading.append(' ', count);
  const cards = new Map<string, Card>();
  // One clock for every card's countdown; a hidden view's timer costs nothing worth stopping.
  setInterval(() => {
    const now = Date.now();
    for (const card of cards.values()) card.tick(now);
  }, 1000);

  return {
    section: folding.section,
    folding,
    /** Replaces the cards with `pendings`; returns how many are new to this page. */
    show(available: boolean, pendings: PendingView[]): number {
      let arrived = 0;
      const n = pendings.length;
      count.textContent = String(n);
      count.hidden = n === 0;
      status.textContent = !available
        ? 'Approvals are not available: the engine did not load, or it keeps no approvals.'
        : n === 0
          ? 'Nothing waits for approval.'
          : `${n} waiting, oldest first`;
      empty.toggle(available && n === 0);
      const seen = new Set(pendings.map((p) => p.id));
      for (const [id, card] of cards) {
        if (seen.has(id)) continue;
        // A decided card goes; the focus it held moves to the next card rather than to nowhere.
        const hadFocus = card.element.contains(document.activeElement);
        const next = card.element.nextElementSibling ?? card.element.previousElementSibling;
        card.element.remove();
        cards.delete(id);
        if (hadFocus) (next as HTMLElement | null)?.focus();
      }
      for (const p of pendings) {
        const card = cards.get(p.id);
        if (card) card.update(p);
        else {
          const made = pendingCard(p, options.post);
          cards.set(p.id, made);
          list.append(made.element);
          arrived++;
        }
      }
      return arrived;
    },
    /** The host's answer to a decision: a refusal is shown on its card. */
    result(id: string, ok: boolean, error?: string): void {
      cards.get(id)?.result(ok, error);
    },
  };
}

function pendingCard(initial: PendingView, post: (m: WebviewMessage) => void): Card {
  let p = initial;
  const title = el('span', { class: 'what', text: KIND_LABEL[p.kind] });
  const when = new Date(p.createdAt);
  const time = el('time', { class: 'muted', text: Number.isNaN(when.getTime()) ? p.createdAt : when.toLocaleTimeString(), title: p.createdAt });
  time.dateTime = p.createdAt;
  // Who asked: the agent and its session when another agent's call waits here (the full session id
  // on hover), else the hook or policy that asked.
  const by = el('span', { class: 'muted', testid: 'pending-by' });
  const renderBy = () => {
    by.textContent = p.agent ? `asked by ${p.agent}${p.sessionId ? `, session ${shortSession(p.sessionId)}` : ''}` : `asked by ${p.triggeredBy}`;
    by.title = p.agent ? `${p.sessionId ? `session ${p.sessionId}; ` : ''}the hook that asked: ${p.triggeredBy}` : '';
  };
  renderBy();
  const route = el('span', { class: 'muted', testid: 'pending-route', text: p.route === 'human' ? '' : `· ${p.route}` });
  const head = el('div', { class: 'entry-head' }, title, by, route, time);
  // Another agent's call: which agent and which session wait on this card, and in which worktree
  // when its hook relayed the ask from another worktree of the repository.
  const who = el('div', { class: 'muted pending-who', testid: 'pending-who' });
  const renderWho = () => {
    const parts = [p.sessionId ? `session ${p.sessionId}` : '', p.intent ? `intent ${p.intent}` : '', p.from ? `in ${p.from}` : '', `hook ${p.triggeredBy}`];
    who.textContent = p.agent ? `${p.agent} · ${parts.filter(Boolean).join(' · ')}` : '';
    who.hidden = !p.agent;
  };
  renderWho();
  // How long a person has, counting down each second, and what happens when it runs out.
  const countdown = el('p', { class: 'muted countdown', testid: 'pending-countdown' });
  const tick = (now: number) => {
    countdown.textContent = countdownText(p, now);
    countdown.hidden = p.deadlineMs === null;
    const left = p.deadlineMs === null ? Infinity : (p.deadlineMs - now) / 1000;
    countdown.classList.toggle('soon', left < SOON_SECONDS);
    if (p.deadlineMs !== null) countdown.dataset.deadline = String(p.deadlineMs);
  };
  tick(Date.now());
  const subject = el('div', { class: 'pending-subject', testid: 'pending-subject' });

  const reasonId = `reason-${p.id}`;
  const reason = el('textarea', { class: 'prompt reason-box', testid: 'pending-reason' });
  reason.id = reasonId;
  reason.rows = 2;
  reason.maxLength = 4000;
  const reasonLabel = el('label', { class: 'label', text: 'Reason or note' });
  reasonLabel.htmlFor = reasonId;
  reason.placeholder = 'Why (required to reject); the agent is told';

  const editor = el('textarea', { class: 'prompt editor mono', testid: 'pending-editor' });
  editor.id = `editor-${p.id}`;
  editor.rows = 8;
  const editorLabel = el('label', { class: 'label' });
  editorLabel.htmlFor = editor.id;
  let editing: string | undefined;
  const apply = button('Apply', () => applyEdit());
  apply.setAttribute('aria-label', 'Apply the edit');
  const cancel = button('Cancel', () => closeEditor(), true);
  const editorBox = el('div', { class: 'editor-box' }, editorLabel, editor, el('div', { class: 'actions' }, apply, cancel));
  editorBox.hidden = true;

  const message = el('p', { class: 'error', testid: 'pending-error' });
  message.setAttribute('role', 'alert');
  message.hidden = true;
  const actions = el('div', { class: 'actions' });
  const buttons: HTMLElement[] = [];

  const element = el(
    'li',
    { class: 'pending', testid: 'pending' },
    head,
    who,
    countdown,
    subject,
    el('div', { class: 'reason-row' }, reasonLabel, reason),
    editorBox,
    actions,
    message,
  );
  element.dataset.kind = p.kind;
  element.dataset.id = p.id;
  element.tabIndex = -1;
  element.setAttribute('aria-label', `${KIND_LABEL[p.kind]} asked by ${p.agent ?? p.triggeredBy}`);

  function fail(text: string): void {
    message.textContent = text;
    message.hidden = false;
  }

  function send(decision: Decision): void {
    message.hidden = true;
    buttons.forEach((b) => setEnabled(b, false));
    post({ type: 'decide', id: p.id, decision });
  }

  function act(action: string): void {
    const text = reason.value.trim();
    if (NEEDS_REASON.has(action) && !text && !(action === 'reject' && p.kind === 'compaction')) {
      fail(`A reason is required to ${action === 'reject' ? 'reject' : 'override'}: the agent is told it.`);
      reason.focus();
      return;
    }
    switch (action) {
      case 'approve':
      case 'approve_and_save':
        return send({ action, ...(text ? { note: text } : {}) });
      case 'reject':
        return send({ action, ...(text ? { reason: text } : {}) });
      case 'override':
        return send({ action, reason: text });
      case 'retry':
        return send(p.kind === 'compaction' ? { action, index: 0, guidance: text } : { action, ...(text ? { guidance: text } : {}) });
      case 'modify':
      case 'edit':
      case 'edit_summary':
      case 'edit_guidance':
        return openEditor(action);
      default:
        fail(`This page does not know the action \`${action}\`.`);
    }
  }

  function openEditor(action: string): void {
    editing = action;
    const s = p.subject;
    if (action === 'modify') {
      editorLabel.textContent = 'Input (JSON) that runs instead';
      editor.value = JSON.stringify(s.input ?? {}, null, 2);
    } else if (action === 'edit' && p.kind === 'scope_expansion') {
      editorLabel.textContent = 'Paths, one per line';
      editor.value = strings(s.paths).join('\n');
    } else if (action === 'edit') {
      editorLabel.textContent = 'Tasks, one prompt per line';
      editor.value = tasksOf(s.tasks)
        .map((t) => t.prompt)
        .join('\n');
    } else if (action === 'edit_summary') {
      editorLabel.textContent = 'Summary';
      editor.value = summariesOf(s.summaries)[0]?.text ?? '';
    } else {
      editorLabel.textContent = 'Guidance';
      editor.value = typeof s.guidance === 'string' ? s.guidance : '';
    }
    editorBox.hidden = false;
    editor.focus();
  }

  function closeEditor(): void {
    editing = undefined;
    editorBox.hidden = true;
    buttons[0]?.focus();
  }

  function applyEdit(): void {
    const text = reason.value.trim();
    const lines = editor.value
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean);
    switch (editing) {
      case 'modify': {
        let input: unknown;
        try {
          input = JSON.parse(editor.value);
        } catch (e) {
          return fail(`The input is not JSON: ${(e as Error).message}`);
        }
        const object = JsonObject.safeParse(input);
        if (!object.success) return fail('The input must be a JSON object.');
        send({ action: 'modify', input: object.data, ...(text ? { note: text } : {}) });
        break;
      }
      case 'edit':
        if (lines.length === 0) return fail(p.kind === 'scope_expansion' ? 'At least one path.' : 'At least one task.');
        send(p.kind === 'scope_expansion' ? { action: 'edit', paths: lines } : { action: 'edit', tasks: lines.map((prompt) => ({ prompt })) });
        break;
      case 'edit_summary':
        send({ action: 'edit_summary', index: 0, text: editor.value });
        break;
      case 'edit_guidance':
        send({ action: 'edit_guidance', text: editor.value });
        break;
      default:
        return;
    }
    editing = undefined;
    editorBox.hidden = true;
  }

  function renderActions(): void {
    buttons.length = 0;
    actions.replaceChildren(
      ...p.actions.map((action, i) => {
        const b = button(ACTION_LABEL[action] ?? action, () => act(action), i > 0 && action !== 'reject');
        b.dataset.action = action;
        b.setAttribute('data-testid', `action-${action}`);
        buttons.push(b);
        return b;
      }),
    );
  }

  renderSubject(subject, p);
  renderActions();
  let subjectKey = JSON.stringify([p.subject, p.preview]);
  return {
    element,
    get subjectKey() {
      return subjectKey;
    },
    update(next: PendingView): void {
      p = next;
      renderBy();
      renderWho();
      tick(Date.now());
      const key = JSON.stringify([p.subject, p.preview]);
      if (key !== subjectKey) {
        subjectKey = key;
        renderSubject(subject, p);
      }
      route.textContent = p.route === 'human' ? '' : `· ${p.route}`;
      if (buttons.map((b) => b.dataset.action).join() !== p.actions.join()) renderActions();
      buttons.forEach((b) => setEnabled(b, true));
    },
    result(ok: boolean, error?: string): void {
      buttons.forEach((b) => setEnabled(b, true));
      if (!ok) fail(`Refused: ${error ?? 'unknown reason'}`);
    },
    tick,
  };
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

function tasksOf(v: unknown): Array<{ prompt: string; title?: string | null }> {
  return Array.isArray(v) ? v.filter((t) => t && typeof t.prompt === 'string') : [];
}

function summariesOf(v: unknown): Array<{ text: string; source?: string | null }> {
  return Array.isArray(v) ? v.filter((t) => t && typeof t.text === 'string') : [];
}

function renderSubject(node: HTMLElement, p: PendingView): void {
  const s = p.subject;
  node.replaceChildren();
  switch (p.kind) {
    case 'tool_call': {
      const input = JsonObject.safeParse(s.input).data ?? {};
      node.append(
        el(
          'div',
          { class: 'call-head' },
          el('span', { class: 'what mono', text: String(s.tool ?? '') }),
          el('span', { class: 'mono', text: typeof input.path === 'string' ? input.path : strings(s.paths).join(', ') }),
        ),
      );
      // The hook's question: an ask, coloured as one, not as a denial.
      if (typeof s.reason === 'string' && s.reason) node.append(el('div', { class: 'reason ask', testid: 'pending-reason-text', text: s.reason }));
      if (p.preview) node.append(diffView(p.preview.path, p.preview.before, p.preview.after));
      else node.append(el('pre', { class: 'mono subject-json', text: JSON.stringify(input, null, 2) }));
      return;
    }
    case 'scope_expansion': {
      node.append(el('div', { text: `Intent ${String(s.intent_id ?? '')} asks to write:` }));
      const paths = el('ul', { class: 'paths', testid: 'pending-paths' }, ...strings(s.paths).map((x) => el('li', { class: 'mono', text: x })));
      node.append(paths);
      if (typeof s.justification === 'string') node.append(el('p', { class: 'justification', text: s.justification }));
      return;
    }
    case 'plan': {
      if (typeof s.title === 'string') node.append(el('div', { class: 'what', text: s.title }));
      node.append(
        el(
          'ol',
          { class: 'tasks', testid: 'pending-tasks' },
          ...tasksOf(s.tasks).map((t) => el('li', { text: t.title ? `${t.title}: ${t.prompt}` : t.prompt })),
        ),
      );
      return;
    }
    case 'compaction': {
      node.append(el('div', { class: 'muted', text: `${String(s.original_tokens)} → ${String(s.estimated_tokens)} tokens (budget ${String(s.budget)})` }));
      summariesOf(s.summaries).forEach((x, i) =>
        node.append(
          el(
            'details',
            { class: 'result', testid: 'pending-summary' },
            el('summary', { text: `Summary ${i + 1}${x.source ? ` (${x.source})` : ''}` }),
            el('pre', { class: 'mono', text: x.text }),
          ),
        ),
      );
      if (typeof s.guidance === 'string' && s.guidance) node.append(el('div', { class: 'muted', text: `Guidance: ${s.guidance}` }));
      return;
    }
    case 'submit': {
      const failures = Array.isArray(s.failures) ? (s.failures as Array<{ hook?: unknown; reason?: unknown; output?: unknown }>) : [];
      node.append(
        el(
          'ul',
          { class: 'failures', testid: 'pending-failures' },
          ...failures.map((f) => {
            const li = el(
              'li',
              {},
              el('span', { class: 'hook-name', text: String(f.hook ?? '') }),
              el('span', { class: 'reason', text: ` ${String(f.reason ?? '')}` }),
            );
            if (typeof f.output === 'string' && f.output) li.append(el('pre', { class: 'mono', text: f.output }));
            return li;
          }),
        ),
      );
      if (typeof s.result === 'string') node.append(el('p', { class: 'summary', text: `The agent's result: ${s.result}` }));
      return;
    }
  }
}

function diffView(path: string, before: string, after: string): HTMLElement {
  const pre = el('pre', { class: 'mono diff', testid: 'pending-diff' });
  pre.setAttribute('aria-label', `Changes to ${path}`);
  for (const line of lineDiff(before, after)) {
    const mark = line.kind === 'add' ? '+' : line.kind === 'del' ? '-' : line.kind === 'gap' ? '' : ' ';
    pre.append(el('span', { class: `diff-${line.kind}`, text: `${mark}${line.text}\n` }));
  }
  return pre;
}
