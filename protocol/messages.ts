// The message catalogue between the extension host and the sidebar webview.
//
// One file, imported by both sides, imports nothing but zod. Messages are named by direction:
// `WebviewMessage` travels webview -> host (commands and requests), `HostMessage` travels host ->
// webview (notifications and responses). Each side validates what it *receives* with these schemas at
// runtime, because a webview is a separate page whose messages are input, not trusted calls.
import { z } from 'zod';

/** Bumped when a message changes shape; the ready handshake carries it so a stale page is detected. */
export const PROTOCOL_VERSION = 2;

const Diagnostic = z.object({
  file: z.string(),
  line: z.number().int().min(0),
  column: z.number().int().min(0),
  code: z.string(),
  message: z.string(),
});

const FileState = z.object({
  path: z.string(),
  status: z.enum(['loaded', 'missing', 'invalid']),
});

/** What the sidebar shows about the engine. */
export const EngineState = z.discriminatedUnion('status', [
  z.object({
    status: z.literal('ready'),
    version: z.string(),
    workspaceRoot: z.string(),
    hooks: FileState.extend({ hookCount: z.number().int().min(0), events: z.array(z.string()), taskTypes: z.array(z.string()) }),
    intents: FileState.extend({ ids: z.array(z.string()) }),
    diagnostics: z.array(Diagnostic),
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

/** An intent id as the page may name it: only to filter what it is shown. */
const IntentId = z.string().min(1).max(200);

/** One record of the trace ledger as the sidebar lists it (the binding's `TraceEntry`). */
export const TraceEntry = z.object({
  seq: z.number().int().min(1),
  time: z.string(),
  kind: z.string(),
  event: z.string().nullish(),
  tool: z.string().nullish(),
  session: z.string().nullish(),
  agent: z.string().nullish(),
  model: z.string().nullish(),
  intent: z.string().nullish(),
  decision: z.string().nullish(),
  reason: z.string().nullish(),
  files: z.array(z.object({ path: z.string(), ranges: z.array(z.object({ start: z.number().int(), end: z.number().int() })) })),
});
export type TraceEntry = z.infer<typeof TraceEntry>;

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
  /** Show only the trace records of this intent (null: every record). The host answers with `trace`. */
  z.object({ type: z.literal('setTraceFilter'), intent: IntentId.nullable() }),
]);
export type WebviewMessage = z.infer<typeof WebviewMessage>;

export const HostMessage = z.discriminatedUnion('type', [
  z.object({ type: z.literal('state'), state: EngineState }),
  z.object({
    type: z.literal('response'),
    id: z.number().int(),
    outcome: z.discriminatedUnion('ok', [
      z.object({ ok: z.literal(true), result: ReloadResult }),
      z.object({ ok: z.literal(false), error: z.string() }),
    ]),
  }),
  /** The trace's recent records, newest first, under the filter the host applies (sent after
   *  `ready`, when the ledger changes, and when the filter changes, from the page or a command). */
  z.object({
    type: z.literal('trace'),
    intent: IntentId.nullable(),
    outcome: z.discriminatedUnion('ok', [
      z.object({ ok: z.literal(true), entries: z.array(TraceEntry) }),
      z.object({ ok: z.literal(false), error: z.string() }),
    ]),
  }),
]);
export type HostMessage = z.infer<typeof HostMessage>;

/** Validates a received message; returns it typed, or a readable reason for the log. */
export function parseMessage<T>(schema: z.ZodType<T>, data: unknown): { ok: true; value: T } | { ok: false; error: string } {
  const r = schema.safeParse(data);
  return r.success ? { ok: true, value: r.data } : { ok: false, error: z.prettifyError(r.error) };
}
