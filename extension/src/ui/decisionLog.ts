// The output channel's account of what agents' calls came to. This window's live engine answers
// other agents' hooks (VS Code's own agent, Claude Code, Codex…) and a hook may judge alone in its
// own process: either way the decision lands in the ledger, and here, as the ledger changes, each
// new record is told in one line (`traceModel.decisionLine`): refusals and asks at `info`, allowed
// calls at `debug` (`chokepoint.logLevel`). What the ledger held before the window opened is not
// told again.
import type * as vscode from 'vscode';
import type { EngineHost } from '../engine/engineHost';
import type { Log } from '../host/log';
import type { Trace } from './trace';
import { decisionLine } from './traceModel';

/** How many of the newest records are read at each change: more than land between two debounced
 *  changes of the ledger. */
const WINDOW = 200;
/** How many told records are remembered (a record is named by its chain and seq). */
const REMEMBERED = 4_000;

export class DecisionLog implements vscode.Disposable {
  private readonly told = new Set<string>();
  private primed = false;
  private readonly subscriptions: vscode.Disposable[];

  constructor(
    private readonly trace: Trace,
    engine: EngineHost,
    private readonly log: Log,
  ) {
    // What the ledger holds when its engine first loads is the past: read once, untold.
    this.subscriptions = [trace.onDidChange(() => this.catchUp()), engine.onDidChange(() => this.primed || this.catchUp())];
    this.catchUp();
  }

  private catchUp(): void {
    const outcome = this.trace.recent({}, WINDOW);
    if (!outcome.ok) return;
    const fresh = outcome.entries.filter((e) => !this.told.has(`${e.chain ?? ''}#${e.seq}`));
    for (const e of fresh.reverse()) {
      this.told.add(`${e.chain ?? ''}#${e.seq}`);
      if (!this.primed) continue;
      const told = decisionLine(e);
      if (told) this.log[told.level](`decision: ${told.line}`);
    }
    this.primed = true;
    if (this.told.size > REMEMBERED) {
      for (const key of [...this.told].slice(0, this.told.size - REMEMBERED)) this.told.delete(key);
    }
  }

  dispose(): void {
    for (const s of this.subscriptions) s.dispose();
  }
}
