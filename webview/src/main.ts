// The sidebar page. It talks to the extension only through the typed catalogue in
// protocol/messages.ts, validates every message it receives, and renders with textContent only (no
// HTML from data ever reaches the DOM).
//
// Five regions: the Approvals section (approvals.ts: a card per open Pending, updated in place), the
// Task section (taskPanel.ts: the prompt, the model, the transcript appended event by event), the
// Sessions section (sessions.ts: every agent's session, its lease with a Revoke button), the
// engine (re-rendered whenever its state arrives) and the Trace section (its filter, its scope (this
// worktree or the team, when the engine has a team database) and list updated in place, so a ledger
// refresh never steals the keyboard focus).
import './main.css';
import '@vscode-elements/elements/dist/vscode-badge/index.js';
import {
  HostMessage,
  PROTOCOL_VERSION,
  parseMessage,
  type EngineState,
  type ReloadResult,
  type TeamTraceState,
  type TraceListEntry,
  type TraceScope,
  type WebviewMessage,
} from '../../protocol/messages';
import { approvalsSection } from './approvals';
import { sessionsSection } from './sessions';
import { button, el } from './dom';
import { taskPanel } from './taskPanel';

interface VsCodeApi {
  postMessage(message: WebviewMessage): void;
  getState(): unknown;
  setState(state: PersistedState): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

/** What survives the view being hidden and shown again. Versioned: an old shape is discarded. */
interface PersistedState {
  v: 1;
  lastReload?: string;
  /** The prompt being written in the Task section. */
  draft?: string;
}

const vscode = acquireVsCodeApi();
const app = document.getElementById('app')!;
let persisted: PersistedState = readPersisted(vscode.getState());
const taskRegion = taskPanel({
  post: (m) => vscode.postMessage(m),
  draft: persisted.draft ?? '',
  onDraft: (draft) => persist({ draft }),
});
const approvalsRegion = approvalsSection({ post: (m) => vscode.postMessage(m) });
const sessionsRegion = sessionsSection({ post: (m) => vscode.postMessage(m) });
const engineRegion = el('div', { class: 'engine' });
const traceRegion = traceSection();
app.replaceChildren(approvalsRegion.section, taskRegion.section, sessionsRegion.section, engineRegion, traceRegion.section);
let state: EngineState | undefined;
let nextRequestId = 1;
const pending = new Map<number, (r: ReloadResult) => void>();

function readPersisted(raw: unknown): PersistedState {
  const r = raw as Partial<PersistedState> | undefined;
  if (!r || r.v !== 1) return { v: 1 };
  return { v: 1, lastReload: typeof r.lastReload === 'string' ? r.lastReload : undefined, draft: typeof r.draft === 'string' ? r.draft : undefined };
}

function persist(change: Omit<PersistedState, 'v'>): void {
  persisted = { ...persisted, ...change };
  vscode.setState(persisted);
}

function row(label: string, value: string, tone?: 'ok' | 'warn' | 'error'): HTMLElement {
  return el('div', { class: 'row' }, el('span', { class: 'label', text: label }), el('span', { class: `value ${tone ?? ''}`, text: value }));
}

function fileTone(status: 'loaded' | 'missing' | 'invalid'): 'ok' | 'warn' | 'error' {
  return status === 'loaded' ? 'ok' : status === 'missing' ? 'warn' : 'error';
}

function render(): void {
  engineRegion.replaceChildren();
  traceRegion.section.hidden = state?.status !== 'ready';
  sessionsRegion.section.hidden = state?.status !== 'ready';
  if (!state) {
    engineRegion.append(el('p', { class: 'muted', text: 'Waiting for the engine…' }));
    return;
  }
  switch (state.status) {
    case 'failed':
      engineRegion.append(
        el('h2', { class: 'error', text: 'Engine not loaded' }),
        el('p', { text: 'Nothing is governed until the native engine loads.' }),
        el('p', { class: 'mono', text: state.error }),
        button('Show Log', () => vscode.postMessage({ type: 'command', command: 'showLog' })),
      );
      return;
    case 'noWorkspace':
      engineRegion.append(el('p', { text: 'Open a folder to govern it. Chokepoint reads .orchestration/ at its root.' }));
      return;
    case 'ready': {
      const s = state;
      const badge = document.createElement('vscode-badge');
      badge.textContent = `v${s.version}`;
      badge.setAttribute('data-testid', 'engine-version');
      engineRegion.append(
        el('h2', {}, el('span', { text: 'Engine ' }), badge),
        row('Workspace', s.workspaceRoot),
        row('hooks.yaml', `${s.hooks.status} · ${s.hooks.hookCount} hooks`, fileTone(s.hooks.status)),
        row('Events', s.hooks.events.join(', ') || 'none'),
        row('Task types', s.hooks.taskTypes.join(', ') || 'none'),
        row('Intents', `${s.intents.status} · ${s.intents.ids.join(', ') || 'none'}`, fileTone(s.intents.status)),
      );
      if (s.diagnostics.length) {
        const list = el('ul', { class: 'problems' });
        for (const d of s.diagnostics) {
          const file = d.file.endsWith('hooks.yaml') ? 'hooks' : 'intents';
          const link = el('a', { text: `${d.file.split(/[\\/]/).pop()}:${d.line}:${d.column}`, title: 'Open at this position' });
          link.href = '#';
          link.addEventListener('click', (e) => {
            e.preventDefault();
            vscode.postMessage({ type: 'openConfig', file, line: d.line, column: d.column });
          });
          list.append(el('li', {}, link, el('span', { text: ` ${d.message}` })));
        }
        engineRegion.append(el('h3', { class: 'error', text: 'Configuration problems (last good configuration kept)' }), list);
      }
      const actions = el('div', { class: 'actions' },
        button('Reload configuration', reloadConfiguration),
        button('Engine info', () => vscode.postMessage({ type: 'command', command: 'showEngineInfo' }), true),
      );
      engineRegion.append(actions);
      if (persisted.lastReload) engineRegion.append(el('p', { class: 'muted', text: persisted.lastReload }));
      traceRegion.setIntents(s.intents.ids);
      return;
    }
  }
}

function reloadConfiguration(): void {
  const id = nextRequestId++;
  pending.set(id, (result) => {
    const when = new Date(result.reloadedAt).toLocaleTimeString();
    const problems = result.diagnostics === 0 ? 'no problems' : `${result.diagnostics} problem(s)`;
    persist({ lastReload: `Reloaded at ${when}: ${problems}` });
    render();
  });
  vscode.postMessage({ type: 'request', id, method: 'reloadConfiguration' });
}

window.addEventListener('message', (event: MessageEvent<unknown>) => {
  const parsed = parseMessage(HostMessage, event.data);
  if (!parsed.ok) {
    console.error(`chokepoint: ignored an invalid message from the extension: ${parsed.error}`);
    return;
  }
  const msg = parsed.value;
  switch (msg.type) {
    case 'state':
      state = msg.state;
      render();
      return;
    case 'trace':
      traceRegion.show(msg.intent, msg.scope, msg.team, msg.outcome);
      return;
    case 'models':
      taskRegion.setModels(msg.choices, msg.selected);
      return;
    case 'transcript':
      taskRegion.setTranscript(msg.events);
      return;
    case 'runtime':
      taskRegion.append(msg.event);
      return;
    case 'taskState':
      taskRegion.setState(msg.running, msg.error);
      return;
    case 'approvals':
      approvalsRegion.show(msg.available, msg.pendings);
      return;
    case 'approvalResult':
      approvalsRegion.result(msg.id, msg.ok, msg.error);
      return;
    case 'sessions':
      sessionsRegion.show(msg.outcome);
      return;
    case 'revokeResult':
      sessionsRegion.result(msg.session, msg.ok, msg.revoked, msg.message, msg.error);
      return;
    case 'response': {
      const resolve = pending.get(msg.id);
      pending.delete(msg.id);
      if (!resolve) return;
      if (msg.outcome.ok) resolve(msg.outcome.result);
      else {
        persist({ lastReload: `Reload failed: ${msg.outcome.error}` });
        render();
      }
      return;
    }
  }
});

/** The Trace section: a filter by intent, a scope (this worktree's ledger or every machine's records
 *  in the team's database, offered only when the engine has one) and the newest records, newest first. */
function traceSection() {
  const heading = el('h3', { text: 'Trace' });
  heading.id = 'trace-heading';
  // A native <select>: complete for the keyboard and screen readers, and its value is reliable
  // before custom elements upgrade; the theme's dropdown colours make it look like VS Code's own.
  const filter = el('select', { class: 'dropdown', title: 'Show the records of one intent' });
  filter.id = 'trace-intent';
  filter.setAttribute('data-testid', 'trace-filter');
  const label = el('label', { class: 'label', text: 'Intent' });
  label.htmlFor = filter.id;
  // Two native radio buttons: a toggle the keyboard (arrows) and screen readers already know.
  const scopeRadio = (value: TraceScope, text: string) => {
    const input = el('input', { testid: `trace-scope-${value}` });
    input.type = 'radio';
    input.name = 'trace-scope';
    input.value = value;
    input.addEventListener('change', () => {
      if (input.checked) vscode.postMessage({ type: 'setTraceScope', scope: value });
    });
    return { input, label: el('label', { class: 'scope-choice' }, input, document.createTextNode(` ${text}`)) };
  };
  const worktreeScope = scopeRadio('worktree', 'This worktree');
  const teamScope = scopeRadio('team', 'The team');
  const scopeRow = el('div', { class: 'row scope', testid: 'trace-scope' }, worktreeScope.label, teamScope.label);
  scopeRow.setAttribute('role', 'radiogroup');
  scopeRow.setAttribute('aria-label', 'Whose records');
  scopeRow.hidden = true;
  // One line, whichever scope is shown: this worktree's records wait for the team's database.
  const copyWarning = el('p', { class: 'warn copy-warning', testid: 'trace-copy-warning' });
  copyWarning.hidden = true;
  const status = el('p', { class: 'muted' });
  status.setAttribute('role', 'status');
  const list = el('ol', { class: 'trace' });
  list.setAttribute('aria-labelledby', heading.id);
  const section = el('section', { class: 'trace-section' }, heading, scopeRow, el('div', { class: 'row filter' }, label, filter), copyWarning, status, list);
  section.setAttribute('data-testid', 'trace');
  // Updates are frequent; announcing each would drown the reader. The status line says what changed.
  section.setAttribute('aria-live', 'off');
  section.hidden = true;
  let intents: string[] = [];
  let selected: string | null = null;

  filter.addEventListener('change', () => {
    selected = filter.value === '' ? null : filter.value;
    vscode.postMessage({ type: 'setTraceFilter', intent: selected });
  });

  function fillFilter(): void {
    const options = [null, ...intents];
    // The filter may name an intent that is no longer configured (records outlive intents).
    if (selected !== null && !intents.includes(selected)) options.push(selected);
    const option = (id: string | null) => {
      const o = el('option', { text: id ?? 'All intents' });
      o.value = id ?? '';
      return o;
    };
    filter.replaceChildren(...options.map(option));
    filter.value = selected ?? '';
  }

  /** Unique in the list: a team's `seq` repeats across machines, worktrees and chains. */
  const key = (e: TraceListEntry) => (e.from ? `${e.from.machine}/${e.from.worktree}/${e.from.chain}#${e.seq}` : `#${e.seq}`);

  function entry(e: TraceListEntry): HTMLElement {
    const what = e.tool ?? e.event ?? e.kind;
    const when = new Date(e.time);
    const time = el('time', { class: 'muted', text: Number.isNaN(when.getTime()) ? e.time : when.toLocaleTimeString(), title: e.time });
    time.dateTime = e.time;
    const head = el('div', { class: 'entry-head' }, el('span', { class: 'seq muted', text: `#${e.seq}` }), time, el('span', { class: 'what', text: what }));
    if (e.from) {
      const branch = e.from.branch ? ` on branch ${e.from.branch}` : '';
      const title = `Written on machine ${e.from.machine}, worktree ${e.from.worktree}${branch} (chain ${e.from.chain})`;
      head.append(el('span', { class: 'origin muted', text: `${e.from.machine} · ${e.from.worktree}`, title, testid: 'trace-origin' }));
    }
    if (e.decision) head.append(el('span', { class: `decision ${e.decision}`, text: e.decision }));
    const item = el('li', { class: 'entry' }, head);
    if (e.decision !== 'allow' && e.reason) item.append(el('div', { class: `reason ${e.decision ?? ''}`, testid: 'trace-reason', text: e.reason }));
    const who = [e.intent ? `intent ${e.intent}` : undefined, e.session ? `session ${e.session}` : undefined, e.agent ? `agent ${e.agent}` : undefined]
      .filter((x): x is string => x !== undefined);
    if (who.length) item.append(el('div', { class: 'who muted', text: who.join(' · ') }));
    for (const f of e.files) {
      const ranges = f.ranges.map((r) => (r.start === r.end ? `${r.start}` : `${r.start}–${r.end}`)).join(', ');
      item.append(el('div', { class: 'file mono', text: ranges ? `${f.path}:${ranges}` : f.path }));
    }
    // Reachable with Tab; its whole text is its name for a screen reader.
    item.tabIndex = 0;
    item.dataset.seq = String(e.seq);
    item.dataset.key = key(e);
    item.setAttribute('data-testid', 'trace-entry');
    return item;
  }

  return {
    section,
    setIntents(ids: string[]): void {
      if (ids.length === intents.length && ids.every((id, i) => id === intents[i])) return;
      intents = [...ids];
      fillFilter();
    },
    show(
      intent: string | null,
      scope: TraceScope,
      team: TeamTraceState | null,
      outcome: { ok: true; entries: TraceListEntry[] } | { ok: false; error: string },
    ): void {
      if (intent !== selected) {
        selected = intent;
        fillFilter();
      }
      // The toggle says the scope the host applied (it lists this worktree's when there is no team).
      scopeRow.hidden = team === null;
      worktreeScope.input.checked = scope === 'worktree';
      teamScope.input.checked = scope === 'team';
      copyWarning.hidden = !team?.copyError;
      copyWarning.textContent = team?.copyError
        ? "The team's database could not be reached: this worktree's records are kept here and copied when it returns."
        : '';
      copyWarning.title = team?.copyError ?? '';
      // Keep the focus on the record it was on, if that record is still listed.
      const focused = list.contains(document.activeElement) ? (document.activeElement as HTMLElement).dataset.key : undefined;
      list.replaceChildren();
      status.classList.toggle('error', !outcome.ok);
      const whose = scope === 'team' ? "the team's trace" : 'the trace';
      if (!outcome.ok) {
        status.textContent = `Cannot read ${whose}: ${outcome.error}`;
        return;
      }
      if (outcome.entries.length === 0) {
        const none = scope === 'team' ? 'No records in the team’s database yet' : 'No records yet';
        status.textContent = intent ? `${none} for ${intent}` : none;
        return;
      }
      const n = outcome.entries.length;
      const where = scope === 'team' ? ', every machine' : '';
      status.textContent = `${n} record${n === 1 ? '' : 's'}, newest first${where}${intent ? ` (${intent})` : ''}`;
      list.append(...outcome.entries.map(entry));
      if (focused) list.querySelector<HTMLElement>(`[data-key="${CSS.escape(focused)}"]`)?.focus();
    },
  };
}

render();
vscode.postMessage({ type: 'ready', protocol: PROTOCOL_VERSION });
