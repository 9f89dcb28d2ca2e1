// The agent runtime inside VS Code: picks the model (the scripted demo model, an OpenAI-compatible
// endpoint from the settings with its key in SecretStorage, or a chat model of VS Code's Language
// Model API), runs tasks through the runtime at the chokepoint, hands its asks to the approvals (a
// Pending each, host/approvals.ts), and reports every runtime event to its listeners (the sidebar's
// task panel, the output channel, the tests).
//
// Model ids: `scripted:demo` or `scripted:<file>`, `openai:<model>`, `vscode-lm:<vendor>/<id>`. `onDidChangeBusy` says when a
// task starts and when it has ended; every record of a task is flushed before the task is reported ended. The API's
// `setApprover` registers itself as the `*` handler; Stop rejects the stopped session's open Pendings.
import * as vscode from 'vscode';
import type { ApprovalsHost } from '../host/approvals';
import type { PendingDict, PendingKind } from '../approvals/types';
import type { EngineHost } from '../engine/engineHost';
import type { Log } from '../host/log';
import { DEMO_PROMPT, DEMO_SCRIPT } from '../runtime/demo';
import { AgentRuntime } from '../runtime/loop';
import type { Compactor } from '../runtime/prompt';
import { OpenAiProvider } from '../runtime/providers/openai';
import { ScriptedProvider, loadScript } from '../runtime/providers/scripted';
import { VsCodeLmProvider, listVsCodeModels } from './vscodeLm';
import { VENDOR as CHAT_VENDOR } from './chatModels';
import { refusal, type Settlement, type ModelChoice, type ModelProvider, type RuntimeEvent } from '../runtime/types';

export const SCRIPTED_DEMO = 'scripted:demo';
const SECRET_KEY = 'chokepoint.openai.apiKey';

/** Answers a Pending (the API's `setApprover`): registered as the approvals' `*` handler, so it decides
 *  every Pending the configuration does not route elsewhere. Unset, Pendings go where hooks.yaml
 *  says (`approvals.default`, the human's sidebar unless configured otherwise). */
export type Approver = (pending: PendingDict) => Promise<ApproverAnswer>;

/** An approver's yes or no. Only `approved` is required. */
export interface ApproverAnswer {
  approved: boolean;
  /** A rejection's or an override's reason: the model is told. */
  reason?: string;
  /** A scope expansion: also write the paths into active_intents.yaml. */
  save?: boolean;
  approvedBy?: string;
  /** What the approver says with an approval or a modification: the model is told. */
  note?: string;
  /** A tool call's `modify`: the input that runs instead (judged again first). */
  input?: Record<string, unknown>;
  /** A submission: another round, with this guidance for the model. */
  retry?: { guidance?: string };
}

/** An approver's answer as a decision of the Pending's kind. */
export function decisionOf(answer: ApproverAnswer, kind: PendingKind): { action: string } & Record<string, unknown> {
  const note = answer.note ? { note: answer.note } : {};
  if (answer.approved) {
    if (kind === 'submit') return { action: 'override', reason: answer.reason || 'accepted by the approver' };
    if (answer.input && kind === 'tool_call') return { action: 'modify', input: answer.input, ...note };
    if (kind === 'scope_expansion' && answer.save) return { action: 'approve_and_save', ...note };
    return { action: 'approve', ...note };
  }
  if (answer.retry && kind === 'submit') return { action: 'retry', ...(answer.retry.guidance ? { guidance: answer.retry.guidance } : {}) };
  return { action: 'reject', reason: answer.reason || 'rejected by the approver' };
}

export class AgentHost implements vscode.Disposable {
  private runtime: AgentRuntime | undefined;
  private provider: ModelProvider | undefined;
  private approver: { dispose(): void } | undefined;
  /** Settles when the running task is stopped. */
  private stopped: Promise<void> = new Promise(() => {});
  private stop_: () => void = () => {};
  private readonly emitter = new vscode.EventEmitter<RuntimeEvent>();
  /** Every runtime event, in order (the task panel renders them, tests assert them). */
  readonly onEvent = this.emitter.event;
  private readonly busyEmitter = new vscode.EventEmitter<boolean>();
  /** `busy` changed: true when a task starts, false once it and what it queued ended and their trace
   *  is durable (the task panel shows a run started elsewhere, e.g. the Run Demo Task command). */
  readonly onDidChangeBusy = this.busyEmitter.event;
  private readonly disposables: vscode.Disposable[] = [this.emitter, this.busyEmitter];

  constructor(
    private readonly engine: EngineHost,
    private readonly secrets: vscode.SecretStorage,
    private readonly log: Log,
    private readonly approvals: ApprovalsHost,
    private readonly compactor?: Compactor,
  ) {}

  get busy(): boolean {
    return this.runtime?.busy ?? false;
  }

  setApprover(approver: Approver | undefined): void {
    this.approver?.dispose();
    this.approver = undefined;
    if (!approver) return;
    this.approver = this.approvals.registerHandler('*', 'api-approver', async (pending) => {
      const answer = await approver(pending);
      this.approvals.decide(pending.id, decisionOf(answer, pending.kind), answer.approvedBy ?? 'handler:api-approver');
    });
  }

  /** The models the picker offers: the demo, the configured endpoint, and VS Code's chat models. */
  async models(): Promise<ModelChoice[]> {
    const choices: ModelChoice[] = [{ id: SCRIPTED_DEMO, label: 'Scripted demo model', detail: 'replays the demo script over a loopback HTTP server' }];
    const config = vscode.workspace.getConfiguration('chokepoint.openai');
    const model = config.get<string>('model', '');
    if (model) choices.push({ id: `openai:${model}`, label: model, detail: config.get<string>('baseUrl', '') });
    try {
      // Not our own models in VS Code's Chat: the Chat's demo script drives the Chat's tools (this
      // runtime has others), and its endpoint model is the `openai:` choice above.
      choices.push(...(await listVsCodeModels(CHAT_VENDOR)));
    } catch (e) {
      this.log.debug(`VS Code's language models are not available: ${(e as Error).message}`);
    }
    return choices;
  }

  /** Runs `prompt` as a task with the model `modelId`; resolves when the task (and what it queued) ends. */
  async start(prompt: string, modelId: string): Promise<void> {
    if (this.busy) throw new Error('a task is already running; stop it first');
    const engine = this.engine.nativeEngine;
    if (!engine) throw new Error(`the engine is not running (${this.engine.state.status}); no task may run ungoverned`);
    const root = this.engine.state.status === 'ready' ? this.engine.state.workspaceRoot : undefined;
    if (!root) throw new Error('no governed workspace is open');
    await this.closeProvider();
    this.provider = await this.providerFor(modelId);
    const settings = vscode.workspace.getConfiguration('chokepoint.agent');
    const runtime = new AgentRuntime({
      root,
      engine,
      program: this.engine.program,
      provider: this.provider,
      compactor: this.compactor,
      limits: {
        maxTurns: settings.get<number>('maxTurns', 25),
        toolTimeoutMs: settings.get<number>('toolTimeoutSeconds', 120) * 1000,
        maxSubmitRetries: settings.get<number>('maxSubmitRetries', 2),
      },
      // Stop also answers a question still open (a modal stays up until dismissed, the task does not
      // wait for it).
      ask: (request) => Promise.race([this.approvals.ask(request), this.stopped.then((): Settlement => refusal('the task was stopped', 'stop'))]),
    });
    this.runtime = runtime;
    this.stopped = new Promise<void>((resolve) => (this.stop_ = resolve));
    runtime.onEvent((e) => {
      this.logEvent(e);
      this.emitter.fire(e);
    });
    this.busyEmitter.fire(true);
    try {
      await runtime.run({ prompt });
      await runtime.end();
    } finally {
      // Every record of the task is durable before anyone is told it ended.
      try {
        engine.flushTrace();
      } catch (e) {
        this.log.error(`the trace of the task could not be made durable: ${(e as Error).message}`);
      }
      await this.closeProvider();
      this.busyEmitter.fire(false);
    }
  }

  runDemo(): Promise<void> {
    return this.start(DEMO_PROMPT, SCRIPTED_DEMO);
  }

  /** Stops the running task: inference aborted, a running command's process group killed, an open
   *  question answered as rejected. */
  stop(): void {
    this.runtime?.cancel();
    this.stop_();
    // The cards of the stopped task go away: nobody waits for their answer any more.
    if (this.runtime) this.approvals.cancelSession(this.runtime.sessionId, 'the task was stopped');
  }

  async setApiKey(): Promise<void> {
    const key = await vscode.window.showInputBox({
      prompt: 'API key of the OpenAI-compatible endpoint (kept in VS Code\u2019s secret storage)',
      password: true,
      ignoreFocusOut: true,
    });
    if (key === undefined) return;
    if (key === '') await this.secrets.delete(SECRET_KEY);
    else await this.secrets.store(SECRET_KEY, key);
    void vscode.window.showInformationMessage(key === '' ? 'Chokepoint: API key removed' : 'Chokepoint: API key stored');
  }

  /** A provider for a model id of the picker (`scripted:…`, `openai:…`, `vscode-lm:…`); the
   *  approvals' reviewer gets its model here too. The caller closes it. */
  async providerFor(modelId: string): Promise<ModelProvider> {
    const colon = modelId.indexOf(':');
    const kind = colon < 0 ? modelId : modelId.slice(0, colon);
    const model = colon < 0 ? '' : modelId.slice(colon + 1);
    switch (kind) {
      case 'scripted':
        // `scripted:demo`, or `scripted:<file>`: a script of one's own (tests, recorded sessions).
        return ScriptedProvider.start(model === 'demo' || model === '' ? DEMO_SCRIPT : await loadScript(model));
      case 'openai': {
        const config = vscode.workspace.getConfiguration('chokepoint.openai');
        return new OpenAiProvider({
          baseUrl: config.get<string>('baseUrl', 'http://127.0.0.1:11434/v1'),
          model: model || config.get<string>('model', ''),
          apiKey: await this.secrets.get(SECRET_KEY),
          contextTokens: config.get<number>('contextTokens', 128_000),
        });
      }
      case 'vscode-lm': {
        const found = await VsCodeLmProvider.select(model);
        if (!found) throw new Error(`VS Code has no chat model \`${model}\` now (is its extension installed and signed in?)`);
        return found;
      }
      default:
        throw new Error(`unknown model \`${modelId}\`; pick one in the Chokepoint sidebar`);
    }
  }

  private async closeProvider(): Promise<void> {
    const p = this.provider;
    this.provider = undefined;
    await p?.close?.();
  }

  private logEvent(e: RuntimeEvent): void {
    switch (e.type) {
      case 'taskStarted':
        return this.log.info(`task ${e.taskId} started with ${e.model}: ${e.prompt}`);
      case 'toolCall':
        return this.log.info(`task ${e.taskId} turn ${e.turn}: ${e.tool} → ${e.decision}${e.reason ? ` (${e.reason})` : ''}`);
      case 'error':
        return this.log.error(`task ${e.taskId}: ${e.message}`);
      case 'taskEnded':
        return this.log.info(`task ${e.taskId} ended: ${e.status}${e.summary ? ` — ${e.summary}` : ''}`);
      case 'compacted':
        return this.log.info(`task ${e.taskId}: context compacted from ${e.beforeTokens} to ${e.afterTokens} tokens`);
      default:
        return this.log.debug(`runtime: ${JSON.stringify(e).slice(0, 300)}`);
    }
  }

  dispose(): void {
    this.runtime?.cancel();
    void this.closeProvider();
    for (const d of this.disposables) d.dispose();
  }
}
