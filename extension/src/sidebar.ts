// The sidebar webview view: serves the page with a strict CSP, validates every message it receives,
// and pushes engine state and the trace's recent records only after the page says it is ready. The
// trace filter lives here, not in the page, so a command ("Show in Trace") can set it too and it
// survives the view being hidden.
import * as crypto from 'crypto';
import * as vscode from 'vscode';
import { HostMessage, PROTOCOL_VERSION, WebviewMessage, parseMessage, type EngineState } from '../../protocol/messages';
import type { EngineHost } from './engineHost';
import type { Log } from './log';
import type { Trace } from './trace';

export class SidebarProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  static readonly viewId = 'chokepoint.sidebar';
  private view: vscode.WebviewView | undefined;
  private ready = false;
  /** The intent whose records the Trace section lists; null: every record. */
  private traceIntent: string | null = null;
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly engine: EngineHost,
    private readonly trace: Trace,
    private readonly log: Log,
  ) {
    this.subscriptions.push(
      engine.onDidChange((state) => {
        this.pushState(state);
        this.pushTrace();
      }),
      trace.onDidChange(() => this.pushTrace()),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('chokepoint.trace.limit')) this.pushTrace();
      }),
    );
  }

  /** Filters the Trace section by `intent` and shows the view ("Show in Trace"). */
  showTrace(intent: string | null): void {
    this.traceIntent = intent;
    this.pushTrace();
    void vscode.commands.executeCommand(`${SidebarProvider.viewId}.focus`);
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.ready = false;
    const dist = vscode.Uri.joinPath(this.extensionUri, 'dist');
    view.webview.options = { enableScripts: true, localResourceRoots: [dist] };
    view.webview.html = this.html(view.webview, dist);
    this.subscriptions.push(
      view.webview.onDidReceiveMessage((data: unknown) => this.receive(data)),
      view.onDidDispose(() => {
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
        this.pushTrace();
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
      case 'setTraceFilter':
        this.traceIntent = msg.intent;
        this.pushTrace();
        return;
    }
  }

  private pushTrace(): void {
    if (!this.ready || this.engine.state.status !== 'ready') return;
    const limit = vscode.workspace.getConfiguration('chokepoint').get<number>('trace.limit', 50);
    const outcome = this.trace.recent(this.traceIntent ?? undefined, Math.max(1, Math.floor(limit)));
    this.post({ type: 'trace', intent: this.traceIntent, outcome });
  }

  private pushState(state: EngineState): void {
    if (this.ready) this.post({ type: 'state', state });
  }

  private post(message: HostMessage): void {
    void this.view?.webview.postMessage(message);
  }

  dispose(): void {
    for (const s of this.subscriptions) s.dispose();
  }
}
