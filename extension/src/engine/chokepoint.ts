// The chokepoint call site of the extension's API (`evaluate`, extension.ts): hands an agent's action
// to the engine's chain and gets a decision back, a deny when no engine is loaded. The agent runtime
// reaches the same chain through its RuntimeEngine (runtime/types.ts), the engine agent/agent.ts hands it.
import type { Evaluation, Event } from '../../../native/node/index';
import type { EngineHost } from './engineHost';

export type ChainEvent = Event;
export type ChainDecision = Evaluation;

/** Runs the event's chain with every kind of hook. An engine that did not load is a deny, never an allow. */
export async function evaluate(host: EngineHost, event: ChainEvent): Promise<ChainDecision> {
  const engine = host.nativeEngine;
  if (!engine) {
    const why = host.state.status === 'failed' ? host.state.error : 'no governed workspace is open';
    return { decision: 'deny', reason: `Chokepoint's engine is not running (${why}); nothing is allowed until it is` };
  }
  return engine.evaluateAsync(event);
}
