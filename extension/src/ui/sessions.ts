// The sessions working in the workspace (every agent's, read by the core from the trace and the
// leases), for the Sessions view (sessionsView.ts), and a person's revocation of a session's lease,
// confirmed in a modal dialog before the core revokes it. Reads through the binding only; the core
// keeps the revocation (state.db) and records it (the trace). The modal's button is `REVOKE_CONFIRM` ("Revoke Lease"); the
// revoker is `<user name> via VS Code`.
import * as os from 'os';
import * as vscode from 'vscode';
import type { SessionView } from '../../../native/node/index';
import type { EngineHost } from '../engine/engineHost';
import type { Log } from '../host/log';

export type SessionsOutcome = { ok: true; sessions: SessionView[] } | { ok: false; error: string };
export type RevokeOutcome = { ok: true; revoked: boolean; message: string } | { ok: false; error: string };

/** The button of the confirmation dialog (the UI tests click it by this name). */
export const REVOKE_CONFIRM = 'Revoke Lease';

export class Sessions {
  constructor(
    private readonly engine: EngineHost,
    private readonly log: Log,
  ) {}

  /** Every session the core lists, most recently active first. */
  list(): SessionsOutcome {
    const engine = this.engine.nativeEngine;
    if (!engine) return { ok: false, error: 'the engine is not running' };
    try {
      return { ok: true, sessions: engine.sessions() };
    } catch (e) {
      const error = (e as Error).message;
      this.log.warn(`reading the sessions failed: ${error}`);
      return { ok: false, error };
    }
  }

  /** Asks the person (a modal dialog) and revokes `session`'s lease if they confirm (a lease of
   *  another worktree of the repository too: the lease table is the one they share). */
  async revoke(session: string, reason: string | undefined): Promise<RevokeOutcome> {
    const engine = this.engine.nativeEngine;
    if (!engine) return { ok: false, error: 'the engine is not running' };
    const listed = this.list();
    const view = listed.ok ? listed.sessions.find((s) => s.sessionId === session) : undefined;
    const lease = view?.lease;
    if (!view || !lease) return { ok: false, error: `session ${session} holds no lease now` };
    const pick = await vscode.window.showWarningMessage(
      `Revoke the lease of ${view.label} session ${session} on ${lease.intentId}${where(lease)}?`,
      {
        modal: true,
        detail:
          `${lease.intentId} becomes free at once. The session's next write is denied, telling its agent that a person revoked the lease` +
          `${reason ? ` (“${reason}”)` : ''} and to ask before selecting the intent again.`,
      },
      REVOKE_CONFIRM,
    );
    if (pick !== REVOKE_CONFIRM) return { ok: true, revoked: false, message: 'not revoked' };
    try {
      const revoked = engine.revokeLease(session, `${personName()} via VS Code`, reason || undefined);
      if (!revoked) return { ok: false, error: `session ${session} held no lease any more; nothing was revoked` };
      this.log.info(`revoked the lease of session ${session} on ${revoked.intentId}${reason ? `: ${reason}` : ''}`);
      return { ok: true, revoked: true, message: `Revoked the lease of ${session} on ${revoked.intentId}.` };
    } catch (e) {
      const error = (e as Error).message;
      this.log.error(`revoking the lease of ${session} failed: ${error}`);
      return { ok: false, error };
    }
  }
}

/** Who revokes: the user of this machine, as the trace and the agent are told. */
function personName(): string {
  try {
    return os.userInfo().username || 'an unnamed user';
  } catch {
    return 'an unnamed user';
  }
}

/** Where a lease's holder works, for the dialog: ` (worktree wt2, branch feature-x)`, or nothing
 *  outside a git repository. */
function where(lease: { worktree?: string; branch?: string }): string {
  if (!lease.worktree) return '';
  return ` (worktree ${lease.worktree}${lease.branch ? `, branch ${lease.branch}` : ''})`;
}
