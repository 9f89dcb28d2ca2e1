// The transcript of an agent run, built from the runtime's events as they arrive: per turn, the
// streamed assistant text (appended in place), each tool call as a row (its arguments in short, its
// decision as a badge, the hook that decided and every hook's outcome and duration, the gates that
// judged it while it ran, its result collapsed to the first line), piped hook output, compaction
// notices, errors and the terminal status. Nothing is re-rendered: an event adds or extends one
// element, so the keyboard focus and what the reader expanded stay where they were.
import type { RuntimeEvent } from '../../protocol/messages';
import { z } from 'zod';
import { el } from './dom';

/** A hook's outcome as the protocol carries it (its `outcome` is the core's generated `OutcomeName`). */
type Hook = Extract<RuntimeEvent, { type: 'toolCall' }>['hooks'][number];
type CallRow = { row: HTMLElement };
type Turn = { items: HTMLElement; text: HTMLElement; streamed: Text };

export function transcriptView() {
  const list = el('ol', { class: 'transcript', testid: 'transcript' });
  list.setAttribute('aria-label', 'Transcript');
  // Its own scroll area, reachable with the keyboard; updates are many, so they are not announced
  // (the status line says when a task starts and ends).
  list.tabIndex = 0;
  list.setAttribute('aria-live', 'off');
  const turns = new Map<string, Turn>();
  const calls = new Map<string, CallRow>();
  /** The call whose result has not arrived: lifecycle events until then (BeforeSubmit) belong to it. */
  let openCall: CallRow | undefined;
  let currentTurn: Turn | undefined;

  function turnOf(taskId: string, turn: number): Turn {
    const key = `${taskId}:${turn}`;
    let t = turns.get(key);
    if (!t) {
      const streamed = document.createTextNode('');
      const text = el('p', { class: 'assistant', testid: 'assistant-text' }, streamed);
      text.hidden = true;
      const items = el('ol', { class: 'turn-items' });
      const li = el('li', { class: 'turn', testid: 'turn' }, el('div', { class: 'turn-head muted', text: `Turn ${turn + 1}` }), text, items);
      list.append(li);
      t = { items, text, streamed };
      turns.set(key, t);
    }
    currentTurn = t;
    return t;
  }

  /** Where an event without a turn goes: the current turn, or the top level between turns. */
  function place(node: HTMLElement): void {
    (currentTurn?.items ?? list).append(node);
  }

  function apply(e: RuntimeEvent): void {
    switch (e.type) {
      case 'taskStarted': {
        currentTurn = undefined;
        const prompt = el('p', { class: 'prompt-echo', text: e.prompt, title: e.prompt });
        list.append(el('li', { class: 'task-start', testid: 'task-started' }, el('div', { class: 'muted', text: `Task started with ${e.model}` }), prompt));
        return;
      }
      case 'turnStarted':
        turnOf(e.taskId, e.turn);
        return;
      case 'text': {
        const t = turnOf(e.taskId, e.turn);
        t.text.hidden = false;
        t.streamed.appendData(e.text);
        return;
      }
      case 'toolCall': {
        const row = callRow(e);
        turnOf(e.taskId, e.turn).items.append(row);
        openCall = { row };
        calls.set(e.callId, openCall);
        return;
      }
      case 'toolResult': {
        const call = calls.get(e.callId);
        const node = result(e.ok, e.content);
        if (call) call.row.append(node);
        else turnOf(e.taskId, e.turn).items.append(node);
        if (openCall === call) openCall = undefined;
        return;
      }
      case 'lifecycle': {
        if (openCall) {
          // A gate that judged the call while it ran (BeforeSubmit for attempt_completion); one with
          // nothing to say (no hook, allowed) is left out.
          if (e.hooks.length > 0 || e.decision !== 'allow') openCall.row.append(gate(e.event, e.decision, e.hooks, e.durableMs));
        } else if (e.decision !== 'allow' || e.hooks.some((h) => h.outcome !== 'allow')) {
          place(el('li', { class: 'lifecycle' }, gate(e.event, e.decision, e.hooks, e.durableMs)));
        }
        return;
      }
      case 'piped': {
        const body = el('pre', { class: 'mono', text: e.text });
        const details = el('details', { class: 'piped' }, el('summary', { text: `Output of the ${e.hook} hook, piped into this turn` }), body);
        place(el('li', { class: 'notice', testid: 'piped' }, details));
        return;
      }
      case 'compacted':
        place(
          el('li', {
            class: 'notice muted',
            testid: 'compacted',
            text: `Context compacted from ${e.beforeTokens} to ${e.afterTokens} tokens (${e.dropped} dropped, ${e.summarized} summarized)`,
          }),
        );
        return;
      case 'error':
        place(el('li', { class: 'notice error', testid: 'error', text: `Error: ${e.message}` }));
        return;
      case 'taskEnded': {
        currentTurn = undefined;
        openCall = undefined;
        const badge = el('span', { class: `status-badge ${e.status}`, text: e.status });
        const li = el('li', { class: 'task-end', testid: 'task-ended' }, el('span', { text: 'Task ended: ' }), badge);
        li.dataset.status = e.status;
        if (e.summary) li.append(el('p', { class: 'summary', text: e.summary }));
        list.append(li);
        return;
      }
    }
  }

  function atBottom(): boolean {
    return list.scrollHeight - list.scrollTop - list.clientHeight < 24;
  }

  return {
    element: list,
    /** Adds one event; keeps the view at the newest entry if the reader was there. */
    append(e: RuntimeEvent): void {
      const follow = atBottom();
      apply(e);
      if (follow) list.scrollTop = list.scrollHeight;
    },
    /** Replaces everything with these events (a page shown again, a new run). */
    replace(events: RuntimeEvent[]): void {
      list.replaceChildren();
      turns.clear();
      calls.clear();
      openCall = undefined;
      currentTurn = undefined;
      for (const e of events) apply(e);
      list.scrollTop = list.scrollHeight;
    },
  };
}

function callRow(e: Extract<RuntimeEvent, { type: 'toolCall' }>): HTMLElement {
  const badge = el('span', { class: `decision ${e.decision}`, text: e.decision, testid: 'decision' });
  badge.setAttribute('aria-label', `decision: ${e.decision}`);
  const head = el(
    'div',
    { class: 'call-head' },
    el('span', { class: 'what', text: e.tool }),
    el('span', { class: 'args mono', text: shortArgs(e.arguments), title: clip(e.arguments, 2000) }),
    badge,
  );
  const row = el('li', { class: 'call', testid: 'tool-call' }, head);
  row.dataset.tool = e.tool;
  row.dataset.decision = e.decision;
  if (e.decision !== 'allow' && e.reason) {
    const decider = e.hooks.find((h) => h.outcome === e.decision);
    const verb = e.decision === 'deny' ? 'denied' : e.decision === 'ask' ? 'approval asked' : 'invalid arguments';
    const reason = decider && e.reason.startsWith(`${decider.hook}: `) ? e.reason.slice(decider.hook.length + 2) : e.reason;
    row.append(
      el('div', { class: `reason ${e.decision}`, testid: 'call-reason', text: decider ? `${verb} by ${decider.hook}: ${reason}` : `${verb}: ${reason}` }),
    );
  }
  if (e.hooks.length) row.append(hooksDetails(e.hooks, e.decision, e.durableMs));
  return row;
}

/** A lifecycle event that judged something: its name, decision, the deciding hook and every hook. */
function gate(event: string, decision: string, hooks: Hook[], durableMs?: number): HTMLElement {
  const decider = hooks.find((h) => h.outcome === decision && decision !== 'allow') ?? (hooks.length === 1 ? hooks[0] : undefined);
  const head = el(
    'div',
    { class: 'call-head' },
    el('span', { class: 'event', text: event }),
    el('span', { class: `decision ${decision}`, text: decision, testid: 'decision' }),
  );
  if (decider) head.append(el('span', { class: 'muted', text: `by ${decider.hook} · ${duration(decider.durationMs)}` }));
  const node = el('div', { class: 'gate', testid: 'gate' }, head);
  node.dataset.event = event;
  node.dataset.decision = decision;
  if (hooks.length) node.append(hooksDetails(hooks, decision, durableMs));
  return node;
}

/** Every hook that ran, expandable: name, outcome, duration and, for a failure, why. The wait for the
 *  record's durability is shown apart (`recorded in`): it is no hook's time. */
function hooksDetails(hooks: Hook[], decision: string, durableMs?: number): HTMLElement {
  const total = hooks.reduce((s, h) => s + h.durationMs, 0);
  // Collapsed, it still names the hooks (up to three) and what each answered.
  const named = hooks.length <= 3 ? hooks.map((h) => `${h.hook} ${h.outcome}`).join(', ') : `${hooks.length} hooks, ${decision}`;
  const recorded = durableMs === undefined ? '' : ` · recorded in ${duration(durableMs)}`;
  const summary = el('summary', { text: `Hooks: ${named} · ${duration(total)}${recorded}` });
  const items = hooks.map((h) => {
    const li = el(
      'li',
      { testid: 'hook' },
      el('span', { class: 'hook-name', text: h.hook }),
      el('span', { class: `decision ${h.outcome}`, text: h.outcome }),
      el('span', { class: 'muted', text: duration(h.durationMs) }),
    );
    if (h.reason) li.append(el('div', { class: `reason ${h.outcome}`, text: h.reason }));
    return li;
  });
  return el('details', { class: 'hooks', testid: 'hooks' }, summary, el('ul', {}, ...items));
}

/** A tool's result, collapsed to its first line; a structured tool error shows its `error` first. */
function result(ok: boolean, content: string): HTMLElement {
  const { head, body } = splitResult(content);
  const mark = el('span', { class: ok ? 'result-mark ok' : 'result-mark error', text: ok ? 'result' : 'error' });
  const node = body
    ? el('details', { class: 'result' }, el('summary', {}, mark, el('span', { class: 'first-line', text: head })), el('pre', { class: 'mono', text: body }))
    : el('div', { class: 'result' }, mark, el('span', { class: 'first-line', text: head }));
  node.setAttribute('data-testid', 'tool-result');
  node.dataset.ok = String(ok);
  return node;
}

/** A tool's structured error, as the runtime writes it (`toolError`): the first line is its `error`. */
const ToolErrorResult = z.object({
  error: z.string(),
  remediation: z.string().optional().catch(undefined),
  suggested_tool: z.string().optional().catch(undefined),
});

function splitResult(content: string): { head: string; body: string } {
  try {
    const parsed = ToolErrorResult.safeParse(JSON.parse(content));
    if (parsed.success) {
      const { error, remediation, suggested_tool } = parsed.data;
      const rest = [remediation ?? '', suggested_tool ? `suggested tool: ${suggested_tool}` : ''];
      return { head: error, body: rest.filter(Boolean).join('\n\n') };
    }
  } catch {
    // Not a structured error: plain text.
  }
  const nl = content.indexOf('\n');
  return nl < 0 ? { head: content, body: '' } : { head: content.slice(0, nl), body: content.slice(nl + 1) };
}

/** The arguments in one short line: strings and lists as they are, long text as its line count. */
export function shortArgs(raw: string): string {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return clip(raw, 100);
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) return clip(raw, 100);
  const parts: string[] = [];
  for (const [key, v] of Object.entries(value)) {
    if (typeof v === 'string') {
      const lines = v.split('\n').length;
      parts.push(lines > 1 ? `${key}: ${lines} lines` : key === 'path' ? v : `${key}: ${clip(v, 60)}`);
    } else if (Array.isArray(v)) parts.push(`${key}: ${clip(v.map(String).join(', '), 60)}`);
    else if (typeof v === 'number' || typeof v === 'boolean') parts.push(`${key}: ${v}`);
  }
  return clip(parts.join(' · '), 140);
}

function clip(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}

function duration(ms: number): string {
  if (ms >= 1000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms >= 10) return `${Math.round(ms)} ms`;
  return ms < 0.01 ? '<0.01 ms' : `${ms.toFixed(2)} ms`;
}
