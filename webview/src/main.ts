// The sidebar page. It talks to the extension only through the typed catalogue in
// protocol/messages.ts, validates every message it receives, and renders with textContent only (no
// HTML from data ever reaches the DOM).
import './main.css';
import '@vscode-elements/elements/dist/vscode-button/index.js';
import '@vscode-elements/elements/dist/vscode-badge/index.js';
import { HostMessage, PROTOCOL_VERSION, parseMessage, type EngineState, type ReloadResult, type WebviewMessage } from '../../protocol/messages';

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
}

const vscode = acquireVsCodeApi();
const app = document.getElementById('app')!;
let persisted: PersistedState = readPersisted(vscode.getState());
let state: EngineState | undefined;
let nextRequestId = 1;
const pending = new Map<number, (r: ReloadResult) => void>();

function readPersisted(raw: unknown): PersistedState {
  const r = raw as Partial<PersistedState> | undefined;
  return r && r.v === 1 ? { v: 1, lastReload: typeof r.lastReload === 'string' ? r.lastReload : undefined } : { v: 1 };
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, props: { class?: string; text?: string; title?: string } = {}, ...children: Node[]): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (props.class) node.className = props.class;
  if (props.text !== undefined) node.textContent = props.text;
  if (props.title) node.title = props.title;
  node.append(...children);
  return node;
}

function button(label: string, onClick: () => void, secondary = false): HTMLElement {
  const b = document.createElement('vscode-button');
  b.textContent = label;
  if (secondary) b.setAttribute('secondary', '');
  b.addEventListener('click', onClick);
  return b;
}

function row(label: string, value: string, tone?: 'ok' | 'warn' | 'error'): HTMLElement {
  return el('div', { class: 'row' }, el('span', { class: 'label', text: label }), el('span', { class: `value ${tone ?? ''}`, text: value }));
}

function fileTone(status: 'loaded' | 'missing' | 'invalid'): 'ok' | 'warn' | 'error' {
  return status === 'loaded' ? 'ok' : status === 'missing' ? 'warn' : 'error';
}

function render(): void {
  app.replaceChildren();
  if (!state) {
    app.append(el('p', { class: 'muted', text: 'Waiting for the engine…' }));
    return;
  }
  switch (state.status) {
    case 'failed':
      app.append(
        el('h2', { class: 'error', text: 'Engine not loaded' }),
        el('p', { text: 'Nothing is governed until the native engine loads.' }),
        el('p', { class: 'mono', text: state.error }),
        button('Show Log', () => vscode.postMessage({ type: 'command', command: 'showLog' })),
      );
      return;
    case 'noWorkspace':
      app.append(el('p', { text: 'Open a folder to govern it. Chokepoint reads .orchestration/ at its root.' }));
      return;
    case 'ready': {
      const s = state;
      const badge = document.createElement('vscode-badge');
      badge.textContent = `v${s.version}`;
      badge.setAttribute('data-testid', 'engine-version');
      app.append(
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
        app.append(el('h3', { class: 'error', text: 'Configuration problems (last good configuration kept)' }), list);
      }
      const actions = el('div', { class: 'actions' },
        button('Reload configuration', reloadConfiguration),
        button('Engine info', () => vscode.postMessage({ type: 'command', command: 'showEngineInfo' }), true),
      );
      app.append(actions);
      if (persisted.lastReload) app.append(el('p', { class: 'muted', text: persisted.lastReload }));
      return;
    }
  }
}

function reloadConfiguration(): void {
  const id = nextRequestId++;
  pending.set(id, (result) => {
    const when = new Date(result.reloadedAt).toLocaleTimeString();
    const problems = result.diagnostics === 0 ? 'no problems' : `${result.diagnostics} problem(s)`;
    persisted = { v: 1, lastReload: `Reloaded at ${when}: ${problems}` };
    vscode.setState(persisted);
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
  if (msg.type === 'state') {
    state = msg.state;
    render();
  } else {
    const resolve = pending.get(msg.id);
    pending.delete(msg.id);
    if (!resolve) return;
    if (msg.outcome.ok) resolve(msg.outcome.result);
    else {
      persisted = { v: 1, lastReload: `Reload failed: ${msg.outcome.error}` };
      render();
    }
  }
});

render();
vscode.postMessage({ type: 'ready', protocol: PROTOCOL_VERSION });
