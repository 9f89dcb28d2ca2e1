// The message catalogue between the extension host and the sidebar webview.
//
// One file, imported by both sides, imports nothing but zod, the core's vocabularies as values
// (names.ts, generated with the binding's header) and the binding's generated declarations, as types,
// to check its schemas against them at compile time. Where a message carries one of the core's
// names, its schema is a `z.enum` of the generated list: its type is the generated union, and the
// check at runtime accepts the same names. Messages are named by direction:
// `WebviewMessage` travels webview -> host (commands and requests), `HostMessage` travels host ->
// webview (notifications and responses). Each side validates what it *receives* with these schemas at
// runtime, because a webview is a separate page whose messages are input, not trusted calls.
//
// The catalogue. WebviewMessage: `ready` (carries PROTOCOL_VERSION), `request`, `command`, `openConfig`; the task panel's
// `startTask` (a prompt of at most MAX_PROMPT_CHARS, a model id), `runDemo`, `stopTask`; the Approvals section's `decide` (a
// Pending's id and a `Decision`: one action with its arguments, discriminated by `action`; the core still refuses an action the
// kind does not list); and the welcome content's `runCommand` (a command of the allow-list `WelcomeCommand`, no arguments: the
// page can run no other command, and the list is exactly what the page's welcome buttons run). HostMessage: `state`
// notifications, `response`; the task panel's `models` (the choices and the selected one), `transcript` (the whole run,
// replacing), `runtime` (one event, appended) and `taskState` (running, and why a task did not start); the Approvals section's
// `approvals` (every open `PendingView`, oldest first, replacing; at most MAX_PENDINGS) and `approvalResult` (a decision done or
// refused). `RuntimeEvent` is a zod mirror of the runtime's union in extension/src/runtime/types.ts; ui/sidebar.ts holds a
// type-level check that fails the build when the two drift.
import { z } from 'zod';
import type {
  CoordinationModeName,
  DecisionEffectName,
  DecisionName,
  EventName,
  FileStatusName,
  LifecycleSubjects,
  OutcomeName,
  PendingDict,
  PendingKindName,
  PendingLapseName,
  PendingRoute as PendingRouteName,
} from '../native/node/index';
import {
  CoordinationModeNames,
  DecisionEffectNames,
  DecisionNames,
  EventNames,
  FileStatusNames,
  OutcomeNames,
  PendingKindNames,
  PendingLapseNames,
  TaskStatusNames,
} from './names';

/** True only when `A` and `B` are the same type: a schema and the binding's contract cannot drift. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

/** Bumped when a message changes shape; the ready handshake carries it so a stale page is detected.
 *  3 since the task panel's messages, 4 since the Approvals section's, 5 since the Sessions section's,
 *  6 since the Trace section's team scope, 7 since the trace left the page for a tree view of its own,
 *  8 since the welcome content's `runCommand`, a Pending's countdown and asker (`PendingView`'s `deadlineMs`, `onTimeout`, whose
 *  enum a type-level check keeps equal to the generated `PendingDict['on_timeout']`, and `intent`) and a session's idle
 *  lease (`leaseIdle`), 9 since the sessions left the page for a tree view of their own (no more
 *  `sessions`, `revokeLease` nor `revokeResult`; the welcome's allow-list lost the Sessions section's
 *  two commands). */
export const PROTOCOL_VERSION = 9;

const Diagnostic = z.object({
  file: z.string(),
  line: z.number().int().min(0),
  column: z.number().int().min(0),
  code: z.string(),
  message: z.string(),
});

const FileState = z.object({
  path: z.string(),
  status: z.enum(FileStatusNames),
});
const fileStatusesMatch: Same<z.infer<typeof FileState>['status'], FileStatusName> = true;
void fileStatusesMatch;

/** What the sidebar shows about the engine. */
/** What the agents coordinate on (the binding's `Coordination`): this repository's state, a team's
 *  PostgreSQL database, this machine alone while the team's cannot be reached, or a broken setting. */
export const CoordinationState = z.object({
  mode: z.enum(CoordinationModeNames),
  database: z.string().nullish(),
  namespace: z.string().nullish(),
  machine: z.string().nullish(),
  cause: z.string().nullish(),
});
export type CoordinationState = z.infer<typeof CoordinationState>;
const coordinationModesMatch: Same<CoordinationState['mode'], CoordinationModeName> = true;
void coordinationModesMatch;

export const EngineState = z.discriminatedUnion('status', [
  z.object({
    status: z.literal('ready'),
    version: z.string(),
    workspaceRoot: z.string(),
    hooks: FileState.extend({ hookCount: z.number().int().min(0), events: z.array(z.string()), taskTypes: z.array(z.string()) }),
    intents: FileState.extend({ ids: z.array(z.string()) }),
    diagnostics: z.array(Diagnostic),
    coordination: CoordinationState.optional(),
  }),
  /** The native addon could not be loaded: nothing is governed, and the sidebar must say so. */
  z.object({ status: z.literal('failed'), error: z.string(), lookedFor: z.string() }),
  /** No folder with `.orchestration/` is open. */
  z.object({ status: z.literal('noWorkspace') }),
]);
export type EngineState = z.infer<typeof EngineState>;

/** Requests the webview may make, with the result type of each. */
export const RequestMethod = z.enum(['reloadConfiguration']);
export type RequestMethod = z.infer<typeof RequestMethod>;
export const ReloadResult = z.object({ diagnostics: z.number().int().min(0), reloadedAt: z.string() });
export type ReloadResult = z.infer<typeof ReloadResult>;

/** A JSON object (not an array, not null), whose fields its reader checks. */
export const JsonObject = z.record(z.string(), z.unknown());

/** The longest prompt the page may start a task with (characters). */
export const MAX_PROMPT_CHARS = 20_000;

/** A model as the picker offers it (the runtime's `ModelChoice`): `provider:model`. */
const ModelId = z.string().min(1).max(300);
export const ModelChoice = z.object({ id: ModelId, label: z.string(), detail: z.string().optional() });
export type ModelChoice = z.infer<typeof ModelChoice>;

const HookOutcomeView = z.object({ hook: z.string(), outcome: z.enum(OutcomeNames), durationMs: z.number().min(0), reason: z.string().optional() });
const Turn = z.number().int().min(0);

/** The terminal status of a task. */
export const TaskStatus = z.enum(TaskStatusNames);
export type TaskStatus = z.infer<typeof TaskStatus>;
// The list (the core's names) and the subject's type (its JSON schema) are written two ways from one enum.
const taskStatusesMatch: Same<TaskStatus, LifecycleSubjects['TaskComplete']['status']> = true;
void taskStatusesMatch;

/** What the agent runtime reports while it works: the mirror of `RuntimeEvent` in
 *  extension/src/runtime/types.ts (this file may import only zod). sidebar.ts fails to compile when
 *  the two drift apart. */
export const RuntimeEvent = z.discriminatedUnion('type', [
  z.object({ type: z.literal('taskStarted'), taskId: z.string(), sessionId: z.string(), prompt: z.string(), model: z.string() }),
  z.object({
    type: z.literal('lifecycle'),
    taskId: z.string(),
    event: z.enum(EventNames),
    decision: z.enum(DecisionNames),
    hooks: z.array(HookOutcomeView),
    durableMs: z.number().min(0).optional(),
  }),
  z.object({ type: z.literal('turnStarted'), taskId: z.string(), turn: Turn }),
  z.object({ type: z.literal('text'), taskId: z.string(), turn: Turn, text: z.string() }),
  z.object({
    type: z.literal('toolCall'),
    taskId: z.string(),
    turn: Turn,
    callId: z.string(),
    tool: z.string(),
    arguments: z.string(),
    /** The chain's decision, or `invalid`: arguments refused before the chain. */
    decision: z.enum([...DecisionNames, 'invalid']),
    reason: z.string().optional(),
    hooks: z.array(HookOutcomeView),
    durableMs: z.number().min(0).optional(),
  }),
  z.object({ type: z.literal('toolResult'), taskId: z.string(), turn: Turn, callId: z.string(), tool: z.string(), ok: z.boolean(), content: z.string() }),
  z.object({ type: z.literal('piped'), taskId: z.string(), hook: z.string(), text: z.string() }),
  z.object({
    type: z.literal('compacted'),
    taskId: z.string(),
    beforeTokens: z.number().int().min(0),
    afterTokens: z.number().int().min(0),
    dropped: z.number().int().min(0),
    summarized: z.number().int().min(0),
  }),
  z.object({ type: z.literal('error'), taskId: z.string(), message: z.string() }),
  z.object({ type: z.literal('taskEnded'), taskId: z.string(), status: TaskStatus, summary: z.string().optional() }),
]);
export type RuntimeEvent = z.infer<typeof RuntimeEvent>;

/** The most events one `transcript` message carries (the host coalesces streamed text). */
export const MAX_TRANSCRIPT_EVENTS = 5_000;

// The lists and the unions are generated together; these lines hold the messages' types to the
// binding's fields (the generated `PendingDict['kind']`, ...) should either move.
const eventsMatch: Same<(typeof EventNames)[number], EventName> = true;
void eventsMatch;
const decisionsMatch: Same<(typeof DecisionNames)[number], DecisionName> = true;
void decisionsMatch;
const outcomesMatch: Same<z.infer<typeof HookOutcomeView>['outcome'], OutcomeName> = true;
void outcomesMatch;

/** The kinds of Pending: the generated `PendingDict['kind']` (checked just below). */
export const PendingKind = z.enum(PendingKindNames);

/** What a Pending becomes when nobody decides it in time: the generated `PendingDict['on_timeout']`. */
export const PendingLapse = z.enum(PendingLapseNames);

const pendingKindNamesMatch: Same<z.infer<typeof PendingKind>, PendingKindName> = true;
void pendingKindNamesMatch;
const pendingLapseNamesMatch: Same<z.infer<typeof PendingLapse>, PendingLapseName> = true;
void pendingLapseNamesMatch;
const pendingKindsMatch: Same<z.infer<typeof PendingKind>, PendingDict['kind']> = true;
void pendingKindsMatch;
const pendingLapsesMatch: Same<z.infer<typeof PendingLapse>, PendingDict['on_timeout']> = true;
void pendingLapsesMatch;

/** Who answers a Pending: the generated `PendingRoute`, whose `handler:<name>` no name list can
 *  carry, so the fixed routes are listed here and the whole held to the generated type just below. */
export const PendingRoute = z.union([
  z.enum(['caller', 'human', 'reviewer', 'auto-approve', 'auto-deny', 'guard']),
  z.custom<`handler:${string}`>((v) => typeof v === 'string' && /^handler:.+/.test(v), 'a route is a fixed one or handler:<name>'),
]);
const pendingRoutesMatch: Same<z.infer<typeof PendingRoute>, PendingRouteName> = true;
void pendingRoutesMatch;

/** An open Pending as the Approvals section shows it: the core's dict in short, and for a write the
 *  file before (from disk) and after (from the call's input), which the page shows as a diff. */
export const PendingView = z.object({
  id: z.string(),
  kind: PendingKind,
  createdAt: z.string(),
  triggeredBy: z.string(),
  /** The agent whose call asked, for people (`Claude Code`), when it is another agent's call. */
  agent: z.string().nullable(),
  /** The session the Pending belongs to (`claude:<id>` for another agent's). */
  sessionId: z.string().nullable(),
  /** The intent that session holds, when another agent's call asked. */
  intent: z.string().nullable(),
  /** When it lapses if nobody decides it, in milliseconds since the Unix epoch (the card counts
   *  down to it). */
  deadlineMs: z.number().nullable(),
  /** What happens then: rejected, the agent's call denied, or handed to the agent's own prompt. */
  onTimeout: PendingLapse,
  /** Where an ask relayed from another worktree's hook comes from (`worktree wt2 on branch x`). */
  from: z.string().nullable(),
  route: PendingRoute,
  /** Per kind, as the approvals contract has it; the page reads it defensively. */
  subject: JsonObject,
  actions: z.array(z.string()),
  preview: z.object({ path: z.string(), before: z.string(), after: z.string() }).nullable(),
});
export type PendingView = z.infer<typeof PendingView>;

/** The most Pendings one `approvals` message carries (the oldest are shown first). */
export const MAX_PENDINGS = 200;
const Note = z.string().max(4_000);
const Reason = z.string().trim().max(4_000);
/** A workspace-relative path or glob, as a scope expansion's edit gives it (the core checks it too). */
const ScopePath = z.string().trim().min(1).max(1_000);
const PlanTask = z.object({ prompt: z.string().trim().min(1).max(MAX_PROMPT_CHARS), title: z.string().max(300).nullish() });

/** A decision the page may send: one action of the Pending's kind and its arguments. The core refuses
 *  an action the kind does not list; this only keeps malformed input out. */
export const Decision = z.discriminatedUnion('action', [
  z.object({ action: z.literal('approve'), note: Note.optional() }),
  z.object({ action: z.literal('approve_and_save'), note: Note.optional() }),
  z.object({ action: z.literal('reject'), reason: Reason.optional() }),
  z.object({ action: z.literal('modify'), input: JsonObject, note: Note.optional() }),
  z
    .object({ action: z.literal('edit'), paths: z.array(ScopePath).min(1).max(100).optional(), tasks: z.array(PlanTask).min(1).max(100).optional() })
    .refine((d) => (d.paths === undefined) !== (d.tasks === undefined), { message: 'an edit carries paths or tasks' }),
  z.object({ action: z.literal('edit_summary'), index: z.number().int().min(0), text: z.string().max(100_000) }),
  z.object({ action: z.literal('edit_guidance'), text: z.string().max(10_000) }),
  z.object({ action: z.literal('retry'), index: z.number().int().min(0).optional(), guidance: z.string().max(10_000).optional() }),
  z.object({ action: z.literal('override'), reason: Reason.min(1) }),
]);
export type Decision = z.infer<typeof Decision>;

/** The commands a button of the sidebar's welcome content (what an empty section says to do next)
 *  may run: an allow-list, so the page can run these and nothing else. Each is one of package.json's
 *  `contributes.commands` (tests/node/walkthrough.test.js holds them to it). */
export const WelcomeCommand = z.enum(['chokepoint.getStarted', 'chokepoint.governFolder']);
export type WelcomeCommand = z.infer<typeof WelcomeCommand>;

export const WebviewMessage = z.discriminatedUnion('type', [
  /** Sent once the page's script runs; the host pushes state only after this. */
  z.object({ type: z.literal('ready'), protocol: z.number().int() }),
  z.object({ type: z.literal('request'), id: z.number().int().min(0), method: RequestMethod }),
  z.object({ type: z.literal('command'), command: z.enum(['showEngineInfo', 'showLog']) }),
  /** Open one of the governance files at a position (only these two: the page cannot name paths). */
  z.object({
    type: z.literal('openConfig'),
    file: z.enum(['hooks', 'intents']),
    line: z.number().int().min(0),
    column: z.number().int().min(0),
  }),
  /** Run `prompt` with `model`, one of the ids the host offered in `models`. The host answers with
   *  `taskState` (and an error if the task cannot start). */
  z.object({ type: z.literal('startTask'), prompt: z.string().trim().min(1).max(MAX_PROMPT_CHARS), model: ModelId }),
  /** Run the demo task (its prompt, the scripted model). */
  z.object({ type: z.literal('runDemo') }),
  /** Stop the running task (inference aborted, a running command's process group killed). */
  z.object({ type: z.literal('stopTask') }),
  /** Decide (or edit) an open Pending, as the human. The host answers with `approvalResult`. */
  z.object({ type: z.literal('decide'), id: z.string().min(1).max(200), decision: Decision }),
  /** Run one command of the welcome content's allow-list, without arguments (a command that needs a
   *  choice asks for it in VS Code's own UI). */
  z.object({ type: z.literal('runCommand'), command: WelcomeCommand }),
]);
export type WebviewMessage = z.infer<typeof WebviewMessage>;

export const HostMessage = z.discriminatedUnion('type', [
  z.object({ type: z.literal('state'), state: EngineState }),
  z.object({
    type: z.literal('response'),
    id: z.number().int(),
    outcome: z.discriminatedUnion('ok', [z.object({ ok: z.literal(true), result: ReloadResult }), z.object({ ok: z.literal(false), error: z.string() })]),
  }),
  /** The models the picker offers and the one it starts with (sent after `ready` and when the
   *  settings that make the list change). */
  z.object({ type: z.literal('models'), choices: z.array(ModelChoice), selected: ModelId }),
  /** The whole transcript of the current or last run, replacing what the page shows (sent after
   *  `ready`, and when a new run starts). */
  z.object({ type: z.literal('transcript'), events: z.array(RuntimeEvent).max(MAX_TRANSCRIPT_EVENTS) }),
  /** One more event of the current run, appended to the transcript. */
  z.object({ type: z.literal('runtime'), event: RuntimeEvent }),
  /** Whether a task runs (the Stop button), and why a task the page asked for did not start. */
  z.object({ type: z.literal('taskState'), running: z.boolean(), error: z.string().optional() }),
  /** Every open Pending, oldest first, replacing what the Approvals section shows (sent after
   *  `ready` and whenever one opens, is edited or is decided). `available` is false when the engine
   *  cannot keep Pendings (not loaded, or a binding without them). */
  z.object({ type: z.literal('approvals'), available: z.boolean(), pendings: z.array(PendingView).max(MAX_PENDINGS) }),
  /** What became of a `decide`: done, or why the core refused it. */
  z.object({
    type: z.literal('approvalResult'),
    id: z.string(),
    ok: z.boolean(),
    effect: z.enum(DecisionEffectNames).optional(),
    error: z.string().optional(),
  }),
]);
const effectsMatch: Same<(typeof DecisionEffectNames)[number], DecisionEffectName> = true;
void effectsMatch;
export type HostMessage = z.infer<typeof HostMessage>;

/** Validates a received message; returns it typed, or a readable reason for the log. */
export function parseMessage<T>(schema: z.ZodType<T>, data: unknown): { ok: true; value: T } | { ok: false; error: string } {
  const r = schema.safeParse(data);
  return r.success ? { ok: true, value: r.data } : { ok: false, error: z.prettifyError(r.error) };
}
