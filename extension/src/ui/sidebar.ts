// The sidebar webview view: serves the page with a strict CSP, validates every message it receives,
// and pushes engine state, the approvals and the task panel's models and transcript only after the
// page says it is ready. What must survive the view being hidden lives here, not in the page: the
// model last picked, and the transcript of the current or last run, which a page shown again gets
// back whole. (The sessions and the trace are native tree views of their own: sessionsView.ts and
// traceView.ts.)
//
// The page: CSP `default-src 'none'` with a per-load nonce, `localResourceRoots` limited to `dist/`. The count of open approvals
// is also the view's `badge` on the activity-bar icon (set while the page is hidden). The transcript is one runtime session's,
// streamed text coalesced and bounded. Tasks start and stop through `AgentHost`, which says why one did not start (engine not
// loaded, a task already running, a model it does not offer: the page may start only a model of the list it was sent). A run
// started by a command shows as running too, until `AgentHost.onDidChangeBusy` says the agent is idle again (after the task's
// trace is durable).
import * as crypto from 'crypto';
import * as vscode from 'vscode';
import {
  HostMessage,
  MAX_PENDINGS,
  MAX_TRANSCRIPT_EVENTS,
  PROTOCOL_VERSION,
  WebviewMessage,
  parseMessage,
  type EngineState,
  type ModelChoice,
  type RuntimeEvent as WireRuntimeEvent,
} from '../../../protocol/messages';
import type { AgentHost } from '../agent/agent';
import type { ApprovalsHost } from '../host/approvals';
import type { EngineHost } from '../engine/engineHost';
import type { Log } from '../host/log';
import type { RuntimeEvent } from '../runtime/types';

// The protocol mirrors the runtime's events with a zod schema (protocol/ imports only zod): this
// line stops the build when the two drift apart, in either direction.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const runtimeEventsMirrored: Same<RuntimeEvent, WireRuntimeEvent> = true;
void runtimeEventsMirrored;

export class SidebarProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  static readonly viewId = 'chokepoint.sidebar';
  private view: vscode.WebviewView | undefined;
  private ready = false;
  /** The model the page last started a task with; undefined: the `chokepoint.agent.model` setting. */
  private pickedModel: string | undefined;
  /** The events of the current or last run (one session of the runtime), streamed text coalesced. */
  private transcript: RuntimeEvent[] = [];
  private transcriptSession: string | undefined;
  /** A run this view started has not ended yet. */
  private starting = false;
  /** What the page was last told: a task runs (its own or one started by a command). */
  private running = false;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly engine: EngineHost,
    private readonly agent: AgentHost,
    private readonly approvals: ApprovalsHost,
    private readonly log: Log,
  ) {
    approvals.isVisible = () => this.view?.visible === true && this.ready;
    this.subscriptions.push(
      engine.onDidChange((state) => this.pushState(state)),
      agent.onEvent((e) => this.record(e)),
      // A run started elsewhere (the Run Demo Task command) shows as running until the agent is idle
      // again; a run started here is the panel's own to show (`starting`).
      agent.onDidChangeBusy((busy) => {
        if (!this.starting && busy !== this.running) this.setRunning(busy);
      }),
      approvals.onDidChange(() => this.pushApprovals()),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('chokepoint.agent.model')) this.pickedModel = undefined;
        if (e.affectsConfiguration('chokepoint.agent.model') || e.affectsConfiguration('chokepoint.openai')) void this.pushModels();
      }),
    );
  }

  /** Shows the view ("Chokepoint: Open the Chokepoint View", the walkthrough's first button). */
  reveal(): Thenable<unknown> {
    return vscode.commands.executeCommand(`${SidebarProvider.viewId}.focus`);
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.ready = false;
    const dist = vscode.Uri.joinPath(this.extensionUri, 'dist');
    view.webview.options = { enableScripts: true, localResourceRoots: [dist] };
    view.webview.html = this.html(view.webview, dist);
    this.pushApprovals(); // the badge, before the page is ready
    this.subscriptions.push(
      view.webview.onDidReceiveMessage((data: unknown) => this.receive(data)),
      // Only this view's own end clears it: VS Code may resolve the view again (the walkthrough
      // opening on the first activation moves the focus) before the old one's disposal is heard,
      // and clearing then would leave the new page unanswered, stuck at "Starting…".
      view.onDidDispose(() => {
        if (this.view !== view) return;
        this.view = undefined;
        this.ready = false;
      }),
    );
  }

  private html(webview: vscode.Webview, dist: vscode.Uri): string {
    // A fresh nonce per load: only our own script runs, even if state text ever reached the DOM as HTML.
    const nonce = crypto.randomBytes(16).toString('base64');
    const script = webview.asWebviewUri(vscode.Uri.joinPath(dist, 'webview.js'));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(dist, 'webview.css'));
    const csp = [
      "default-src 'none'",
      `script-src 'nonce-${nonce}'`,
      `style-src ${webview.cspSource} 'nonce-${nonce}'`,
      `font-src ${webview.cspSource}`,
      `img-src ${webview.cspSource}`,
    ].join('; ');
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style}" nonce="${nonce}">
<title>Chokepoint</title>
</head>
<body>
<main id="app" aria-live="polite"><p class="muted">Starting…</p></main>
<script nonce="${nonce}" src="${script}"></script>
</body>
</html>`;
  }

  private receive(data: unknown): void {
    const parsed = parseMessage(WebviewMessage, data);
    if (!parsed.ok) {
      this.log.warn(`sidebar sent an invalid message, ignored: ${parsed.error}`);
      return;
    }
    const msg = parsed.value;
    switch (msg.type) {
      case 'ready':
        if (msg.protocol !== PROTOCOL_VERSION) {
          this.log.warn(`sidebar speaks protocol ${msg.protocol}, the extension ${PROTOCOL_VERSION}; reloading it`);
          if (this.view) this.view.webview.html = this.html(this.view.webview, vscode.Uri.joinPath(this.extensionUri, 'dist'));
          return;
        }
        this.ready = true;
        this.pushState(this.engine.state);
        this.post({ type: 'transcript', events: this.transcript });
        this.post({ type: 'taskState', running: this.running });
        this.pushApprovals();
        void this.pushModels();
        return;
      case 'request': {
        // One method today; the switch keeps the catalogue exhaustive as methods are added.
        switch (msg.method) {
          case 'reloadConfiguration': {
            try {
              const state = this.engine.reload();
              const diagnostics = state.status === 'ready' ? state.diagnostics.length : 0;
              this.post({ type: 'response', id: msg.id, outcome: { ok: true, result: { diagnostics, reloadedAt: new Date().toISOString() } } });
            } catch (e) {
              this.post({ type: 'response', id: msg.id, outcome: { ok: false, error: (e as Error).message } });
            }
            return;
          }
        }
        return;
      }
      case 'command':
        void vscode.commands.executeCommand(msg.command === 'showLog' ? 'chokepoint.showLog' : 'chokepoint.showEngineInfo');
        return;
      case 'openConfig': {
        const state = this.engine.state;
        if (state.status !== 'ready') return;
        const file = msg.file === 'hooks' ? state.hooks.path : state.intents.path;
        const at = new vscode.Position(Math.max(msg.line - 1, 0), Math.max(msg.column - 1, 0));
        void vscode.window.showTextDocument(vscode.Uri.file(file), { selection: new vscode.Range(at, at) });
        return;
      }
      case 'startTask':
        void this.startTask(msg.prompt, msg.model);
        return;
      case 'runDemo':
        void this.run(() => this.agent.runDemo());
        return;
      case 'stopTask':
        this.agent.stop();
        return;
      case 'decide': {
        const r = this.approvals.decide(msg.id, msg.decision, 'human');
        if (!r.ok) this.log.warn(`the decision on ${msg.id} was refused: ${r.error}`);
        this.postIfReady(
          r.ok ? { type: 'approvalResult', id: msg.id, ok: true, effect: r.effect } : { type: 'approvalResult', id: msg.id, ok: false, error: r.error },
        );
        return;
      }
      case 'runCommand':
        // Only a command of the protocol's allow-list gets here (validated above), and with no
        // arguments: what needs a choice asks for it in VS Code's own UI.
        void vscode.commands.executeCommand(msg.command);
        return;
    }
  }

  // ---- the task panel -------------------------------------------------------------------------

  private async startTask(prompt: string, model: string): Promise<void> {
    // The page may start only a model the host offers (as it may open only the two governance files).
    const choices = await this.modelChoices();
    if (!choices.some((c) => c.id === model)) {
      this.postIfReady({ type: 'taskState', running: this.running, error: `the model \`${model}\` is not offered; pick one in the list` });
      return;
    }
    this.pickedModel = model;
    await this.run(() => this.agent.start(prompt, model));
  }

  /** Runs a task and reports whether it runs; a task that cannot start says why on the page. */
  private async run(task: () => Promise<void>): Promise<void> {
    if (this.starting || this.agent.busy) {
      this.postIfReady({ type: 'taskState', running: true, error: 'a task is already running; stop it first' });
      return;
    }
    this.starting = true;
    this.setRunning(true);
    let error: string | undefined;
    try {
      await task();
    } catch (e) {
      error = (e as Error).message;
      this.log.error(`the task did not run: ${error}`);
    } finally {
      this.starting = false;
    }
    this.setRunning(false, error);
  }

  /** Keeps the event for a page shown later and forwards it to the page showing now. */
  private record(e: RuntimeEvent): void {
    if (e.type === 'taskStarted' && e.sessionId !== this.transcriptSession) {
      // A new run (a new session of the runtime): its transcript replaces the last one.
      this.transcriptSession = e.sessionId;
      this.transcript = [e];
      this.postIfReady({ type: 'transcript', events: this.transcript });
    } else {
      this.keep(e);
      this.postIfReady({ type: 'runtime', event: e });
    }
  }

  private keep(e: RuntimeEvent): void {
    const last = this.transcript[this.transcript.length - 1];
    if (e.type === 'text' && last?.type === 'text' && last.taskId === e.taskId && last.turn === e.turn) {
      this.transcript[this.transcript.length - 1] = { ...last, text: last.text + e.text };
      return;
    }
    this.transcript.push(e);
    // A runaway run must not grow the host without bound: the oldest events go first.
    if (this.transcript.length > MAX_TRANSCRIPT_EVENTS) this.transcript.splice(0, this.transcript.length - MAX_TRANSCRIPT_EVENTS);
  }

  private setRunning(running: boolean, error?: string): void {
    this.running = running;
    this.postIfReady({ type: 'taskState', running, error });
  }

  /** The models the picker offers; the configured one is among them even when nothing lists it. */
  private async modelChoices(): Promise<ModelChoice[]> {
    const choices = await this.agent.models();
    const configured = this.configuredModel();
    if (!choices.some((c) => c.id === configured)) choices.push({ id: configured, label: configured, detail: 'the chokepoint.agent.model setting' });
    return choices;
  }

  private configuredModel(): string {
    return vscode.workspace.getConfiguration('chokepoint.agent').get<string>('model', 'scripted:demo') || 'scripted:demo';
  }

  private async pushModels(): Promise<void> {
    if (!this.ready) return;
    try {
      const choices = await this.modelChoices();
      const wanted = this.pickedModel ?? this.configuredModel();
      this.post({ type: 'models', choices, selected: choices.some((c) => c.id === wanted) ? wanted : choices[0].id });
    } catch (e) {
      this.log.error(`the models could not be listed: ${(e as Error).message}`);
    }
  }

  // ---- the Approvals section ------------------------------------------------------------------

  /** The open Pendings to the page, and their count on the activity-bar icon (set even while the
   *  page is hidden: the badge is how a hidden view says something waits). */
  private pushApprovals(): void {
    const pendings = this.approvals.views();
    if (this.view) {
      const n = pendings.length;
      this.view.badge = n ? { value: n, tooltip: `${n} approval${n === 1 ? '' : 's'} waiting` } : undefined;
    }
    this.postIfReady({ type: 'approvals', available: this.approvals.available, pendings: pendings.slice(0, MAX_PENDINGS) });
  }

  private pushState(state: EngineState): void {
    if (this.ready) this.post({ type: 'state', state });
  }

  private post(message: HostMessage): void {
    void this.view?.webview.postMessage(message);
  }

  /** Task panel messages go only to a page that said it is ready; it gets the whole transcript then. */
  private postIfReady(message: HostMessage): void {
    if (this.ready) this.post(message);
  }

  dispose(): void {
    for (const s of this.subscriptions) s.dispose();
  }
}
