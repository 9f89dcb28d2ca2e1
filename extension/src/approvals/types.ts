// The vocabulary of approvals (issue 7) as the extension sees it: the Pending the core keeps, and the
// binding methods the broker, the reviewer and the sidebar call, in the style of the runtime's
// `RuntimeEngine` (runtime/types.ts): an interface of exactly what is used, which the binding's `Engine`
// satisfies. Narrower than the generated index.d.ts (kinds and statuses as unions, where napi gives
// strings), and it imports nothing, so the webview's protocol, which imports only zod, can use it.

/** The kinds of Pending, each with its own subject and actions. */
export type PendingKind = 'tool_call' | 'scope_expansion' | 'plan' | 'compaction' | 'submit';
export const PENDING_KINDS: readonly PendingKind[] = ['tool_call', 'scope_expansion', 'plan', 'compaction', 'submit'];

export type PendingStatus = 'open' | 'approved' | 'rejected' | 'modified' | 'overridden' | 'retry' | 'timed_out';

/** What the core answered once a Pending was decided. */
export interface PendingDecision {
  action: string;
  by: string;
  reason: string | null;
  note: string | null;
  input: unknown;
  save: boolean | null;
}

/** `to_dict()` of a Pending: every field present, null when empty. */
export interface PendingDict {
  id: string;
  kind: PendingKind;
  created_at: string;
  triggered_by: string;
  session_id: string | null;
  task_id: string | null;
  status: PendingStatus;
  /** caller | human | reviewer | auto-approve | auto-deny | handler:<name> | guard */
  route: string;
  subject: Record<string, unknown>;
  actions: string[];
  decision: PendingDecision | null;
}

/** One action as a model's tool (`to_tools()`). */
export interface PendingTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export type DecisionEffect = 'decided' | 'edited' | 'retry_requested';

export interface ApprovalsConfig {
  default: string;
  timeoutSeconds: number;
  handlers: Record<string, string>;
  reviewer: { model: string; escalateOn: string[] } | null;
}

/** What the extension needs of the engine for approvals: the binding's `Engine` has all of it. */
export interface ApprovalsEngine {
  openPending(req: { kind: string; subject: unknown; triggeredBy: string; sessionId?: string; taskId?: string; review?: boolean }): { pending: PendingDict; route: string };
  getPending(id: string): PendingDict | null;
  /** The open ones, oldest first. */
  listPending(): PendingDict[];
  pendingTools(id: string): PendingTool[];
  describePending(id: string): string;
  /** Throws an Error with `code: 'EREFUSED'` for an action the kind does not allow, bad arguments, or a
   *  Pending no longer open. */
  applyDecision(id: string, decision: object, decidedBy: string): { pending: PendingDict; effect: string };
  executePendingTool(id: string, name: string, args: object, decidedBy: string): { pending: PendingDict; effect: string; text: string };
  /** Resolves when the Pending is decided, or when `timeoutMs` passed (then it is `timed_out`). */
  waitPending(id: string, timeoutMs?: number): Promise<PendingDict>;
  setApprovalHandler(kind: string, handler: string | null): void;
  enterApprovalHandler(sessionId: string): void;
  exitApprovalHandler(sessionId: string): void;
  /** Records (trace) and returns the warning for a handler that returned without deciding. */
  noteUnresolved(id: string, handler: string): string;
  approvalsConfig(): ApprovalsConfig;
  /** Every open, edit and decision, on the JS thread. */
  onPendingChange(cb: (pending: PendingDict) => void): void;
  /** Hands an open Pending to another route (the reviewer to the human); recorded in the trace. */
  escalatePending(id: string, to: string, note: string): PendingDict;
}

/** True for a Pending no longer waiting for anyone. */
export function isDecided(p: PendingDict): boolean {
  return p.status !== 'open';
}
