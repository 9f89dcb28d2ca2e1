// Generated, with native/node/header.d.ts, by the test in native/node/src/header.rs
// (`UPDATE_HEADER=1 cargo test -p chokepoint-node header`): the core's vocabularies as values, for
// the schemas of protocol/messages.ts. Each list's members are its header union's. Edit neither by hand.

/** The lifecycle events (`EventKind::ALL`). */
export const EventNames = ['SessionStart', 'TaskStart', 'TurnStart', 'TurnPrepare', 'PreToolUse', 'PostToolUse', 'PreCompact', 'TurnEnd', 'TaskComplete', 'PlanSubmit', 'PlanComplete', 'AllTasksComplete', 'SessionEnd', 'Error', 'BeforeSubmit', 'AfterSubmit', 'BeforeMerge', 'AfterMerge'] as const;

/** What the chain decided (`Decision`). */
export const DecisionNames = ['allow', 'deny', 'ask'] as const;

/** How one hook's run ended (`OutcomeKind`). */
export const OutcomeNames = ['allow', 'deny', 'ask', 'modify', 'failed_open', 'failed_closed'] as const;

/** The kinds of Pending (`approvals::PendingKind`). */
export const PendingKindNames = ['tool_call', 'scope_expansion', 'plan', 'compaction', 'submit'] as const;

/** Where a Pending stands (`approvals::Status`); all but `open` are final. */
export const PendingStatusNames = ['open', 'approved', 'rejected', 'modified', 'overridden', 'retry', 'timed_out'] as const;

/** What a Pending becomes when nobody decides it in time (`approvals::Lapse`). */
export const PendingLapseNames = ['reject', 'deny', 'agent_prompt'] as const;

/** What follows a decided ask for the agent (`approvals::Next`). */
export const SettlementNextNames = ['run', 'run_modified', 'granted', 'override', 'retry', 'refuse'] as const;

/** What a decision did to its Pending (`approvals::Effect`). */
export const DecisionEffectNames = ['decided', 'edited', 'retry_requested'] as const;

/** Who answers a Pending by default (`ApprovalRoute`). */
export const ApprovalRouteNames = ['human', 'reviewer', 'auto-approve', 'auto-deny'] as const;

/** Who decided, as the policy's feedback counts it (`approvals::FeedbackSource`). */
export const FeedbackSourceNames = ['human', 'reviewer', 'policy', 'timeout'] as const;

/** How a path changed under a contained command (`containment::snapshot::ChangeKind`). */
export const ChangeKindNames = ['created', 'modified', 'deleted', 'type_changed'] as const;

/** How far Landlock confined a command (`containment::sandbox::Confinement`). */
export const ConfinementNames = ['enforced', 'partial', 'unavailable'] as const;

/** What a hook may answer (`Answer`). */
export const HookAnswerNames = ['allow', 'deny', 'ask', 'modify'] as const;

/** Where a hook runs in its chain (`Priority`). */
export const PriorityNames = ['critical', 'high', 'normal', 'low'] as const;

/** What a hook's failure means (`FailureMode`). */
export const FailureModeNames = ['closed', 'open'] as const;

/** The kinds of ledger record (`ledger::RecordKind`). */
export const RecordKindNames = ['tool_call', 'lifecycle', 'approval', 'containment', 'external'] as const;

/** How a configuration file stands after the last load (`FileStatus`). */
export const FileStatusNames = ['missing', 'loaded', 'invalid'] as const;

/** The tokenizer families (`budget::tokens::Family`). */
export const TokenFamilyNames = ['o200k', 'cl100k', 'claude', 'gemini', 'llama', 'unknown'] as const;

/** What a piece of a prompt is, for compaction (`budget::compaction::ItemKind`). */
export const PromptItemKindNames = ['systemPrompt', 'intentContext', 'brain', 'constraint', 'acceptanceCriterion', 'turn'] as const;

/** What the workspace's agents coordinate on (`scope::gatekeeper::CoordinationState`). */
export const CoordinationModeNames = ['off', 'team', 'local-fallback', 'broken'] as const;

/** How a task ended (`model::subject::TaskStatus`). */
export const TaskStatusNames = ['success', 'rejected', 'error', 'cancelled', 'max_turns'] as const;

/** Who wrote a message of a rewritten turn (`model::rewrite::MessageRole`). */
export const MessageRoleNames = ['user', 'assistant', 'tool'] as const;

/** Which hook outcomes an evaluation lists (the binding's `evaluate::Detail`). */
export const OutcomesDetailNames = ['deciding', 'all', 'none'] as const;
