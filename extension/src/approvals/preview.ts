// What the Approvals section shows of a write: the file before (read from disk now) and after (the
// call's input: a whole file for write_to_file, the blocks applied for apply_diff). The page turns
// the two into a diff. Read only, confined to the workspace, bounded; imports no `vscode`.
import * as fs from 'fs';
import { applyBlocks, parseBlocks } from '../runtime/applyDiff';
import { FileTools } from '../runtime/fileTools';
import type { PendingDict } from './types';

/** Larger files are not previewed (the card shows the input instead). */
const MAX_PREVIEW_BYTES = 256 * 1024;

export interface WritePreview {
  path: string;
  before: string;
  after: string;
}

export function previewOf(root: string, pending: PendingDict): WritePreview | null {
  if (pending.kind !== 'tool_call') return null;
  const subject = pending.subject as { tool?: unknown; input?: unknown };
  const input = subject.input as { path?: unknown; content?: unknown; diff?: unknown } | undefined;
  if (!input || typeof input.path !== 'string') return null;
  let file: string;
  try {
    file = new FileTools(root).resolve(input.path);
  } catch {
    return null;
  }
  let before = '';
  try {
    const stat = fs.statSync(file);
    if (!stat.isFile() || stat.size > MAX_PREVIEW_BYTES) return null;
    before = fs.readFileSync(file, 'utf8');
  } catch {
    // A new file: nothing before.
  }
  if (subject.tool === 'write_to_file' && typeof input.content === 'string') {
    return input.content.length > MAX_PREVIEW_BYTES ? null : { path: input.path, before, after: input.content };
  }
  if (subject.tool === 'apply_diff' && typeof input.diff === 'string') {
    try {
      return { path: input.path, before, after: applyBlocks(before, parseBlocks(input.diff)) };
    } catch {
      return null; // a diff that does not apply: the card shows the blocks as they are
    }
  }
  return null;
}
