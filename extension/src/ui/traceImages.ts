// The texts of a written file before and after a recorded write, as read-only documents of their own
// scheme (`chokepoint-image:`), which VS Code's diff editor shows side by side ("Open Changes" in
// the Trace view). The ledger keeps hashes only; the texts are the engine's image store's
// (`native/core/src/ledger/images.rs`, `.orchestration/images.db`), which keeps recent ones and may
// have pruned older ones: a text that is gone is said to be gone, never shown as empty.
import * as vscode from 'vscode';
import type { EngineHost } from '../engine/engineHost';
import type { WrittenFile } from './traceModel';

/** The scheme of the read-only documents that hold a written file's text before or after a write. */
export const IMAGE_SCHEME = 'chokepoint-image';

/** Why a file's changes cannot be shown, or `undefined` when both its texts are kept. */
export function missingImage(engine: EngineHost, file: WrittenFile): string | undefined {
  const native = engine.nativeEngine;
  if (!native) return 'the engine is not running';
  if (!file.before)
    return 'the record does not name the text before the write (it was written before Chokepoint kept texts, by another process, or the file was too large or not text)';
  const gone = (sha: string) => native.traceImage(sha) === null;
  if (gone(file.before) || (file.after && gone(file.after))) {
    return 'its texts are no longer kept (the image store keeps the most recent writes, and this machine may not have recorded it)';
  }
  return undefined;
}

export class TraceImages implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly registration: vscode.Disposable;

  constructor(private readonly engine: EngineHost) {
    this.registration = vscode.workspace.registerTextDocumentContentProvider(IMAGE_SCHEME, this);
  }

  /** Opens VS Code's diff editor on `file`'s text before and after its write, or says why it
   *  cannot. */
  async openDiff(file: WrittenFile): Promise<void> {
    const missing = missingImage(this.engine, file);
    if (missing) {
      void vscode.window.showWarningMessage(`The changes of ${file.path} (#${file.seq}) cannot be shown: ${missing}.`);
      return;
    }
    const uri = (side: 'before' | 'after', sha?: string) =>
      // The file's own path, so the editor picks its language; the hash, the side and the record in the
      // query, so two writes of one file are two documents.
      vscode.Uri.from({ scheme: IMAGE_SCHEME, path: `/${file.path}`, query: new URLSearchParams({ side, seq: `${file.seq}`, sha: sha ?? '' }).toString() });
    const title = `${file.path} (before ↔ after, #${file.seq})`;
    await vscode.commands.executeCommand('vscode.diff', uri('before', file.before), uri('after', file.after), title, { preview: true });
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    const sha = new URLSearchParams(uri.query).get('sha');
    // No hash on the after side: the write deleted the file.
    if (!sha) return '';
    const text = this.engine.nativeEngine?.traceImage(sha);
    return text ?? `This text (SHA-256 ${sha}) is no longer kept by the image store: the ledger records its hash only.`;
  }

  dispose(): void {
    this.registration.dispose();
  }
}
