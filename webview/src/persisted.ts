// What the page keeps through the view being hidden and shown again (VS Code's `setState`): the
// prompt being written, the last reload's outcome, and which sections the person folded. Versioned:
// a shape this page does not know is discarded; version 1 (before the sections folded) is read on.
// Pure, so the rules are tested under plain Node (tests/unit/persisted.test.ts). The shape is `{ v: 2, ... }`, each folded
// section kept with when it was folded (which is how Approvals tells a Pending that arrived after the fold).
import { z } from 'zod';

/** The page's sections that fold (the Sessions and the Trace are tree views of their own). */
export const SECTIONS = ['approvals', 'task', 'engine'] as const;
export type SectionKey = (typeof SECTIONS)[number];

export interface PersistedState {
  v: 2;
  lastReload?: string;
  /** The prompt being written in the Task section. */
  draft?: string;
  /** The sections the person folded, each with when (milliseconds since the epoch); absent: open.
   *  Every section is open until folded. */
  collapsed: Partial<Record<SectionKey, number>>;
}

/** What VS Code gives back, as far as it is read: a field of the wrong type is dropped, not the rest. */
const Stored = z.object({
  v: z.union([z.literal(1), z.literal(2)]),
  lastReload: z.string().optional().catch(undefined),
  draft: z.string().optional().catch(undefined),
  collapsed: z.record(z.string(), z.unknown()).optional().catch(undefined),
});

export function readPersisted(raw: unknown): PersistedState {
  const stored = Stored.safeParse(raw);
  if (!stored.success) return { v: 2, collapsed: {} };
  const r = stored.data;
  const collapsed: PersistedState['collapsed'] = {};
  const folded = r.v === 2 ? (r.collapsed ?? {}) : {};
  for (const key of SECTIONS) {
    const at = folded[key];
    if (typeof at === 'number' && Number.isFinite(at)) collapsed[key] = at;
  }
  return { v: 2, lastReload: r.lastReload, draft: r.draft, collapsed };
}

export function isExpanded(state: PersistedState, key: SectionKey): boolean {
  return state.collapsed[key] === undefined;
}

/** The state with `key` open, or folded at `now`. */
export function withExpanded(state: PersistedState, key: SectionKey, expanded: boolean, now: number): PersistedState {
  const collapsed = { ...state.collapsed };
  if (expanded) delete collapsed[key];
  else collapsed[key] = now;
  return { ...state, collapsed };
}

/** Whether the Approvals section must open: it is folded and a Pending arrived since (a page shown
 *  again cannot tell the cards it made before from new ones; the Pending's own time can). */
export function approvalsMustOpen(state: PersistedState, createdAt: readonly string[]): boolean {
  const folded = state.collapsed.approvals;
  if (folded === undefined) return false;
  return createdAt.some((t) => {
    const at = Date.parse(t);
    return Number.isNaN(at) || at >= folded;
  });
}
