// The sidebar page. It talks to the extension only through the typed catalogue in
// protocol/messages.ts, validates every message it receives, and renders with textContent only (no
// HTML from data ever reaches the DOM).
//
// Three sections: Approvals (approvals.ts: a card per open Pending, updated in place), Task
// (taskPanel.ts: the prompt, the model, the transcript appended event by event) and the Engine
// (re-rendered whenever its state arrives). Each folds from its heading (collapsible.ts); which are
// folded is kept in the persisted state (persisted.ts), and Approvals opens again when a Pending
// arrives. The sessions and the trace are not here: they are the Sessions and Trace views, trees of
// the extension's own (extension/src/ui/sessionsView.ts, traceView.ts). An empty section shows welcome
// content (welcome.ts): what lands there and the next step, with a button for it; a folder without
// .orchestration/ shows its first step on top.
//
// Plain DOM with @vscode-elements/elements for the VS Code look. Never imports `vscode` or anything from extension/: it talks only
// through protocol/. Every section is open until the person folds it; a folded Approvals opens again when a Pending created after
// the fold arrives (its `createdAt`, so a page shown again tells old cards from new ones). The Engine section shows its version
// beside the heading and is hidden without a folder.
import './main.css';
import '@vscode-elements/elements/dist/vscode-badge/index.js';
import { HostMessage, PROTOCOL_VERSION, parseMessage, type EngineState, type ReloadResult, type WebviewMessage } from '../../protocol/messages';
import { approvalsSection } from './approvals';
import { collapsible, type Collapsible } from './collapsible';
import { button, el } from './dom';
import { type PersistedState, type SectionKey, approvalsMustOpen, isExpanded, readPersisted, withExpanded } from './persisted';
import { taskPanel } from './taskPanel';
import { welcome } from './welcome';

interface VsCodeApi {
  postMessage(message: WebviewMessage): void;
  getState(): unknown;
  setState(state: PersistedState): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const post = (m: WebviewMessage) => vscode.postMessage(m);
const app = document.getElementById('app')!;
let persisted: PersistedState = readPersisted(vscode.getState());
const taskRegion = taskPanel({
  post: (m) => vscode.postMessage(m),
  draft: persisted.draft ?? '',
  onDraft: (draft) => persist({ draft }),
});
const approvalsRegion = approvalsSection({ post: (m) => vscode.postMessage(m) });
// The first step while there is nothing to govern yet (no folder, no .orchestration/): on top.
const startRegion = el('div', { class: 'start' });
const engineRegion = el('div', { class: 'engine' });
const engineSection = collapsible('engine', 'Engine', { class: 'engine-section', testid: 'engine' }, engineRegion);
// The engine's version, beside the heading (in sight when the section is folded).
const engineVersion = el('span', { class: 'heading-extra' });
engineSection.heading.append(engineVersion);
app.replaceChildren(startRegion, approvalsRegion.section, taskRegion.section, engineSection.section);
const folding: Record<SectionKey, Collapsible> = { approvals: approvalsRegion.folding, task: taskRegion.folding, engine: engineSection };
for (const [key, section] of Object.entries(folding) as [SectionKey, Collapsible][]) {
  section.setExpanded(isExpanded(persisted, key));
  section.onToggle = (expanded) => persistState(withExpanded(persisted, key, expanded, Date.now()));
}
let state: EngineState | undefined;
let nextRequestId = 1;
const pending = new Map<number, (r: ReloadResult) => void>();

function persist(change: Partial<Omit<PersistedState, 'v'>>): void {
  persistState({ ...persisted, ...change });
}

function persistState(next: PersistedState): void {
  persisted = next;
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
  startRegion.replaceChildren();
  engineVersion.replaceChildren();
  // Without a folder there is no engine to show: the first step on top says what to do.
  engineSection.section.hidden = state?.status === 'noWorkspace';
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
    case 'noWorkspace': {
      const w = welcome(
        'engine-welcome',
        ['Open a folder to govern it. Chokepoint reads .orchestration/ at its root.'],
        [{ label: 'Get Started', run: 'chokepoint.getStarted' }],
        post,
      );
      w.toggle(true);
      startRegion.append(w.element);
      return;
    }
    case 'ready': {
      const s = state;
      const badge = document.createElement('vscode-badge');
      badge.textContent = `v${s.version}`;
      badge.setAttribute('data-testid', 'engine-version');
      // A folder without .orchestration/: the engine runs, but there is nothing to judge against.
      if (s.hooks.status === 'missing' && s.intents.status === 'missing') {
        const w = welcome(
          'engine-welcome',
          [
            'This folder is not governed yet: Chokepoint reads .orchestration/ at its root (active_intents.yaml: what agents may work on, and where; hooks.yaml: what judges their actions).',
          ],
          [
            { label: 'Govern This Folder', run: 'chokepoint.governFolder' },
            { label: 'Get Started', run: 'chokepoint.getStarted', secondary: true },
          ],
          post,
        );
        w.toggle(true);
        startRegion.append(w.element);
      }
      engineVersion.append(' ', badge);
      engineRegion.append(
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
      const actions = el(
        'div',
        { class: 'actions' },
        button('Reload configuration', reloadConfiguration),
        button('Engine info', () => vscode.postMessage({ type: 'command', command: 'showEngineInfo' }), true),
      );
      engineRegion.append(actions);
      if (persisted.lastReload) engineRegion.append(el('p', { class: 'muted', text: persisted.lastReload }));
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
    case 'approvals': {
      approvalsRegion.show(msg.available, msg.pendings);
      // A Pending that arrived since the person folded the section opens it: somebody waits.
      if (
        approvalsMustOpen(
          persisted,
          msg.pendings.map((p) => p.createdAt),
        )
      ) {
        approvalsRegion.folding.setExpanded(true);
        persistState(withExpanded(persisted, 'approvals', true, Date.now()));
      }
      return;
    }
    case 'approvalResult':
      approvalsRegion.result(msg.id, msg.ok, msg.error);
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

render();
vscode.postMessage({ type: 'ready', protocol: PROTOCOL_VERSION });
