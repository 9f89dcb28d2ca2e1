// What the Approvals section shows of a write: the file before (read from disk now) and after. Any
// agent's write tool is read by the core (`Engine.previewPending`: whole contents, replacements,
// lists of edits); only our runtime's `apply_diff`, whose search/replace blocks this extension
// parses and applies (runtime/applyDiff.ts), is worked out here. The page turns the two into a diff.
// Read only, confined to the workspace, bounded; imports no `vscode`.
import * as fs from 'fs';
import { z } from 'zod';
import { applyBlocks, parseBlocks } from '../runtime/applyDiff';
import { FileTools } from '../runtime/fileTools';
import type { PendingDict } from './types';
import type { WritePreview as CorePreview } from '../../../native/node/index';

/** Larger files are not previewed (the card shows the input instead). */
const MAX_PREVIEW_BYTES = 256 * 1024;

export interface WritePreview {
  path: string;
  before: string;
  after: string;
}

export function previewOf(root: string, pending: PendingDict, core: (id: string) => CorePreview | null): WritePreview | null {
  if (pending.kind !== 'tool_call') return null;
  if (pending.subject.tool === 'apply_diff') return applyDiffPreview(root, pending.subject.input);
  const p = core(pending.id);
  return p?.path && typeof p.after === 'string' && p.after.length <= MAX_PREVIEW_BYTES && p.before.length <= MAX_PREVIEW_BYTES
    ? { path: p.path, before: p.before, after: p.after }
    : null;
}

/** `apply_diff`'s input, as the subject carries it (the agent's arguments, validated when it called). */
const ApplyDiffInput = z.object({ path: z.string(), diff: z.string() });

function applyDiffPreview(root: string, subjectInput: unknown): WritePreview | null {
  const parsed = ApplyDiffInput.safeParse(subjectInput);
  if (!parsed.success) return null;
  const input = parsed.data;
  let before = '';
  try {
    const file = new FileTools(root).resolve(input.path);
    const stat = fs.statSync(file);
    if (!stat.isFile() || stat.size > MAX_PREVIEW_BYTES) return null;
    before = fs.readFileSync(file, 'utf8');
  } catch (e) {
    // A new file has nothing before; a path outside the workspace is not previewed.
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') return null;
  }
  try {
    return { path: input.path, before, after: applyBlocks(before, parseBlocks(input.diff)) };
  } catch {
    return null; // a diff that does not apply: the card shows the blocks as they are
  }
}
