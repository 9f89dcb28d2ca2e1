// The vocabulary of approvals (issue 7) as the extension uses it: the binding's generated types (the
// contract: one definition of the Pending for the binding, the runtime and the webview's protocol,
// whose zod schema is checked against it at compile time), and `ApprovalsEngine`, the binding's
// `Engine` narrowed to what the broker, the reviewer and the sidebar call. Types only: nothing loaded, nothing to run.
import type { AppliedDecision, Engine, PendingDict } from '../../../native/node/index';

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
