// The vocabulary of approvals (issue 7) as the extension uses it: the binding's generated types (the
// contract: one definition of the Pending for the binding, the runtime and the webview's protocol,
// whose zod schema is checked against it at compile time), and `ApprovalsEngine`, the binding's
// `Engine` narrowed to what the broker, the reviewer and the sidebar call, and `PendingContext`, what a
// handler or the reviewer is given with a Pending. Types only: nothing loaded, nothing to run.
import type { AppliedDecision, Engine, PendingDict, PendingTool } from '../../../native/node/index';
import type { Ask } from '../runtime/types';

export type {
  AppliedDecision,
  ApprovalsConfig,
  OpenedPending,
  PendingDecision,
  PendingDict,
  PendingRoute,
  PendingTool,
  Settlement,
} from '../../../native/node/index';

/** The kinds of Pending, each with its own subject and actions. */
export type PendingKind = PendingDict['kind'];
export type PendingStatus = PendingDict['status'];
export type DecisionEffect = AppliedDecision['effect'];

/** What the extension calls of the engine for approvals. */
export type ApprovalsEngine = Pick<
  Engine,
  | 'openAsk'
  | 'settlePending'
  | 'getPending'
  | 'listPending'
  | 'pendingTools'
  | 'describePending'
  | 'applyDecision'
  | 'executePendingTool'
  | 'setApprovalHandler'
  | 'enterApprovalHandler'
  | 'exitApprovalHandler'
  | 'noteUnresolved'
  | 'approvalsConfig'
  | 'onPendingChange'
  | 'escalatePending'
>;

/** What a handler (or a reviewing caller) can do with the Pending it is given. */
export interface PendingContext {
  /** The runtime's ask that opened it (absent for a Pending opened by someone else). */
  readonly request?: Ask;
  /** Applies a decision: `{ action: 'reject', reason: '…' }`. Throws (`code: 'EREFUSED'`) on an
   *  action the kind does not allow or bad arguments. */
  decide(decision: { action: string } & Record<string, unknown>): { pending: PendingDict; effect: DecisionEffect };
  tools(): PendingTool[];
  describe(): string;
  /** The tool interface (`to_tools` / `execute_tool`) for a model's loop. */
  execute(name: string, args: Record<string, unknown>): { pending: PendingDict; effect: DecisionEffect; text: string };
}
