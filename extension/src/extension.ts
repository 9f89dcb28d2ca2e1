// Activation: loads the native engine once (engine/native.ts, the one module that requires the
// binding), then wires the engine host to the status bar, the sidebar, the Problems panel and the
// commands. Wiring only: what each piece does lives in its room (engine/, ui/, agent/, runtime/,
// approvals/).
//
// The rooms, in layers: runtime/ → approvals/ → engine/ → host/ → agent/ → ui/ → extension.ts, each importing only the rooms
// before it (types included: an `import type` upwards is a dependency too). runtime/ and approvals/ know nothing of VS Code (no
// `vscode` import, so they run under `node --test` against the real addon); only engine/native.ts loads the binding at runtime,
// and every other room may take the binding's generated declarations (native/node/index.d.ts, the contract) with `import type`
// only. No two files import each other, directly or round a circle. tests/unit/rooms.test.ts fails on a file that breaks one of
// these, naming the import and the rule.
//
// The API returned on activation is used by the integration tests and by other extensions: the agent, `evaluate`
// (engine/chokepoint.ts), and `approvals.registerHandler(kind, name, handler)`, `list`, `decide`, `onDidChange`. The context key
// `chokepoint.governed` (the folder has a hooks.yaml or an active_intents.yaml) is set here.
import * as vscode from 'vscode';
import { z } from 'zod';
import { AgentHost, type Approver } from './agent/agent';
import { ChatModels } from './agent/chatModels';
import { registerIntentTools } from './agent/intentTools';
import type { ApprovalHandler } from './approvals/broker';
import type { PendingDict, PendingKind } from './approvals/types';
import { ApprovalsHost } from './host/approvals';
import { evaluate, type ChainDecision, type ChainEvent } from './engine/chokepoint';
import { EngineHost, describe } from './engine/engineHost';
import { FirstRunState, enableChat, governFolder, openOnFirstActivation, openWalkthrough, warnIfChatNeedsSignIn } from './ui/firstRun';
import { makeFindable } from './engine/findable';
import { Log } from './host/log';
import { loadNative } from './engine/native';
import { chokepointProgram, setUpAgent } from './ui/setUpAgent';
import { SidebarProvider } from './ui/sidebar';
import { StatusBar } from './ui/statusBar';
import { registerReplay } from './ui/replay';
import { Trace, showProvenance, type ProvenanceReport } from './ui/trace';
import { TraceView } from './ui/traceView';
import { SessionsView } from './ui/sessionsView';
import { DecisionLog } from './ui/decisionLog';
import type { EngineState } from '../../protocol/messages';
import type { CompactionItem } from './runtime/prompt';
import type { ModelProvider, RuntimeEvent } from './runtime/types';

/** What `activate` returns: the extension's public API (used by its own integration tests). */
export interface ChokepointApi {
  readonly engineState: EngineState;
  readonly statusBarText: string;
  reload(): EngineState;
  /** Judges one agent action through the chain (see engine/chokepoint.ts). */
  evaluate(event: ChainEvent): Promise<ChainDecision>;
  /** Which recorded write explains line `line` (1-based) of `uri` (see ui/trace.ts); shows nothing. */
  provenance(uri: vscode.Uri, line: number): ProvenanceReport;
  /** The agent runtime: run a task, stop it, listen to what it does, answer its asks (agent/agent.ts). */
  readonly agent: {
    start(prompt: string, modelId: string): Promise<void>;
    runDemo(): Promise<void>;
    stop(): void;
    onEvent: vscode.Event<RuntimeEvent>;
    /** true when a task starts; false once it ended and its trace is durable. */
    onDidChangeBusy: vscode.Event<boolean>;
    setApprover(approver: Approver | undefined): void;
  };
  /** Approvals (issue 7): the open Pendings, a decision, and a handler of one's own for a kind. */
  readonly approvals: {
    /** Decides every Pending of `kind` (`*`: of any kind without a handler of its own) that the
     *  configuration does not route elsewhere; its route is `handler:<name>`. One per kind: a new
     *  registration replaces the last. A handler that returns without deciding leaves a warning in
     *  the log, and the Pending is rejected after its timeout. */
    registerHandler(kind: PendingKind | '*', name: string, handler: ApprovalHandler): vscode.Disposable;
    list(): PendingDict[];
    decide(id: string, decision: { action: string } & Record<string, unknown>, by?: string): { ok: true; effect: string } | { ok: false; error: string };
    onDidChange: vscode.Event<void>;
  };
}

/** The tools package.json declares for VS Code's agent (`contributes.languageModelTools`). */
const DeclaredTools = z.object({ contributes: z.object({ languageModelTools: z.array(z.object({ name: z.string() })) }) });

export function activate(context: vscode.ExtensionContext): ChokepointApi {
  const log = new Log();
  context.subscriptions.push(log);
  const native = loadNative(context.extensionPath);
  if (!native.ok) {
    // Never a silent no-op: an ungoverned workspace must look ungoverned.
    log.error(native.error);
    void vscode.window.showErrorMessage(`Chokepoint could not load its native engine: ${native.lookedFor}`, 'Show Log').then((pick) => {
      if (pick) log.channel.show();
    });
  }
  const program = chokepointProgram(context.extensionPath);
  // The agents' committed settings name no path: they find this program on PATH or by the pointer.
  if (program) {
    const findable = makeFindable(program, context.environmentVariableCollection);
    if (findable && 'error' in findable.pointer)
      log.warn(`agents started outside VS Code will not find chokepoint: cannot write ${findable.pointer.file}: ${findable.pointer.error}`);
    else if (findable) log.info(`chokepoint is on PATH for VS Code's terminals (${findable.folder}), and named by ${findable.pointer.file}`);
  }
  const engine = new EngineHost(native, log, program);
  const statusBar = new StatusBar();
  statusBar.update(engine.state);
  const trace = new Trace(engine, log);
  // Token counts and compaction plans come from the core (exact tokenizers where it has them).
  const compactor = native.ok
    ? { count: native.binding.countTokens, plan: (items: CompactionItem[], budget: number) => native.binding.planCompaction(items, budget) }
    : undefined;
  // The reviewer's model comes from the agent's providers (declared below; called only later).
  const approvals: ApprovalsHost = new ApprovalsHost(engine, log, (modelId): Promise<ModelProvider> => agent.providerFor(modelId));
  const agent: AgentHost = new AgentHost(engine, context.secrets, log, approvals, compactor);
  // VS Code's own agent runs on our models too (the scripted demo, the configured endpoint).
  const chatModels = new ChatModels(log, (model) => agent.providerFor(`openai:${model}`), native.ok ? native.binding.countTokensAsync : undefined);
  const sidebar = new SidebarProvider(context.extensionUri, engine, agent, approvals, log);
  const traceView = new TraceView(trace, engine);
  const sessionsView = new SessionsView(engine, trace, traceView, log);
  // Every agent's decisions, told in the output channel as they land in the ledger.
  const decisionLog = new DecisionLog(trace, engine, log);
  // Menus that only make sense in a governed workspace (the editor's "Show Provenance of Line").
  // Governed: the folder has a configuration, as the activation events say (the engine itself may
  // make `.orchestration/` for its runtime files in a folder that has none).
  const setGoverned = (state: EngineState) =>
    void vscode.commands.executeCommand(
      'setContext',
      'chokepoint.governed',
      state.status === 'ready' && (state.hooks.status !== 'missing' || state.intents.status !== 'missing'),
    );
  setGoverned(engine.state);
  // The walkthrough's steps complete on these context keys (ui/firstRun.ts).
  const firstRun = new FirstRunState(engine, trace);
  const connectAgent = async (agentId: string | undefined) => {
    const result = await setUpAgent(context.extensionPath, log, agentId);
    firstRun.refresh();
    // The moment the person is about to use the Chat: its sign-in wall, explained before it shows.
    if (result.ok && result.agent === 'vscode') void warnIfChatNeedsSignIn(log);
    return result;
  };
  context.subscriptions.push(
    engine,
    trace,
    agent,
    approvals,
    statusBar,
    sidebar,
    traceView,
    sessionsView,
    decisionLog,
    chatModels,
    firstRun,
    chatModels.register(),
    // VS Code's agent declares its intent through these; its hooks bind its chat session.
    ...registerIntentTools(engine, DeclaredTools.safeParse(context.extension.packageJSON).data?.contributes.languageModelTools ?? []),
    engine.onDidChange((state) => {
      statusBar.update(state);
      setGoverned(state);
    }),
    vscode.window.registerWebviewViewProvider(SidebarProvider.viewId, sidebar),
    vscode.commands.registerCommand('chokepoint.showEngineInfo', () => showEngineInfo(engine, log)),
    vscode.commands.registerCommand('chokepoint.reloadConfiguration', () => engine.reload()),
    vscode.commands.registerCommand('chokepoint.showLog', () => log.channel.show()),
    vscode.commands.registerCommand('chokepoint.runDemoTask', () => runTask(agent, log, () => agent.runDemo())),
    vscode.commands.registerCommand('chokepoint.stopTask', () => agent.stop()),
    vscode.commands.registerCommand('chokepoint.setApiKey', () => agent.setApiKey()),
    vscode.commands.registerCommand('chokepoint.setUpAgent', (agentId?: unknown) => connectAgent(typeof agentId === 'string' ? agentId : undefined)),
    vscode.commands.registerCommand('chokepoint.connectVsCodeAgent', () => connectAgent('vscode')),
    // The first run (ui/firstRun.ts): the walkthrough and what its buttons run.
    vscode.commands.registerCommand('chokepoint.getStarted', () => openWalkthrough(context)),
    vscode.commands.registerCommand('chokepoint.governFolder', () => governFolder(context.extensionPath, engine, log)),
    vscode.commands.registerCommand('chokepoint.enableChat', () => enableChat(log)),
    vscode.commands.registerCommand('chokepoint.openView', () => sidebar.reveal()),
    vscode.commands.registerCommand('chokepoint.showTrace', () => traceView.showIntent(null)),
    // Policy replay: the trace judged again against an edited hooks.yaml (editor title, CodeLens).
    registerReplay(engine, log),
    vscode.commands.registerCommand('chokepoint.showProvenance', (uri?: unknown, line?: unknown) =>
      showProvenance(trace, (intent) => traceView.showIntent(intent), uri instanceof vscode.Uri ? uri : undefined, typeof line === 'number' ? line : undefined),
    ),
  );
  void openOnFirstActivation(context, log);
  return {
    get engineState() {
      return engine.state;
    },
    get statusBarText() {
      return statusBar.text;
    },
    reload: () => engine.reload(),
    evaluate: (event) => evaluate(engine, event),
    provenance: (uri, line) => trace.provenance(uri, line),
    agent: {
      start: (prompt, modelId) => agent.start(prompt, modelId),
      runDemo: () => agent.runDemo(),
      stop: () => agent.stop(),
      onEvent: agent.onEvent,
      onDidChangeBusy: agent.onDidChangeBusy,
      setApprover: (approver) => agent.setApprover(approver),
    },
    approvals: {
      registerHandler: (kind, name, handler) => approvals.registerHandler(kind, name, handler),
      list: () => approvals.list(),
      decide: (id, decision, by) => approvals.decide(id, decision, by),
      onDidChange: approvals.onDidChange,
    },
  };
}

/** Runs a task from a command, with progress in the notification area and errors shown, not thrown. */
function runTask(agent: AgentHost, log: Log, task: () => Promise<void>): Thenable<void> {
  return vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: 'Chokepoint: running the agent task', cancellable: true },
    async (_progress, token) => {
      token.onCancellationRequested(() => agent.stop());
      try {
        await task();
      } catch (e) {
        log.error((e as Error).message);
        void vscode.window.showErrorMessage(`Chokepoint: ${(e as Error).message}`);
      }
    },
  );
}

/** Writes the full state to the log and shows a one-line summary; returns the state for scripts. */
function showEngineInfo(engine: EngineHost, log: Log): EngineState {
  const state = engine.state;
  const summary = describe(state);
  log.info(summary);
  if (state.status === 'ready') {
    log.info(`  workspace: ${state.workspaceRoot}`);
    log.info(
      `  ${state.hooks.path}: ${state.hooks.status}; events: ${state.hooks.events.join(', ') || 'none'}; task types: ${state.hooks.taskTypes.join(', ') || 'none'}`,
    );
    log.info(`  ${state.intents.path}: ${state.intents.status}; intents: ${state.intents.ids.join(', ') || 'none'}`);
    for (const d of state.diagnostics) log.info(`  ${d.file}:${d.line}:${d.column}: ${d.message} [${d.code}]`);
  }
  const show = state.status === 'failed' ? vscode.window.showErrorMessage : vscode.window.showInformationMessage;
  void show(summary, 'Show Log').then((pick) => {
    if (pick) log.channel.show();
  });
  return state;
}

export function deactivate(): void {}
