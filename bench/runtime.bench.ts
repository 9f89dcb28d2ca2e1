// The runtime's own cost per tool call: the same tool loop with the engine at the chokepoint
// (`runtime.tool_call`: five chain evaluations per call — TurnStart, TurnPrepare, PreToolUse,
// PostToolUse, TurnEnd — and their trace records, all made durable by one sync: PreToolUse's, before
// the tool runs, which covers the previous call's result and this turn's records) and with the engine bypassed (`runtime.tool_call.bypass`). The model answers in-process,
// at once, so what is timed is the loop; each call writes a small file inside the intent's scope.
// `runtime.ask.expansion` is the ask path: each call is a `scope_expansion_request`, which the
// gatekeeper asks about; the Pending is opened by the core (`openAsk`), approved at once by the caller
// (so no human time is in it), and settled by the core (`settlePending`: the approval synced, the
// expansion granted) before the tool result goes back: from the runtime's ask to the tool running.
// Prints one JSON object per figure for scripts/bench.js (bundled by it with esbuild).
import * as fs from 'fs';
import * as path from 'path';
import { ApprovalBroker } from '../extension/src/approvals/broker';
import { AgentRuntime } from '../extension/src/runtime/loop';
import type { ApprovalsEngine } from '../extension/src/approvals/types';
import { refusal, type Ask, type ChatChunk, type ChatRequest, type ModelProvider, type RuntimeEngine, type Settlement } from '../extension/src/runtime/types';

const ROOT = path.resolve(__dirname, '..');
// A computed require: esbuild leaves the addon to be loaded at run time.
// eslint-disable-next-line @typescript-eslint/no-require-imports -- the addon is found at run time, by path
const binding = require(path.join(ROOT, 'native/node')) as typeof import('../native/node/index');
const CALLS = Number(process.env.BENCH_RUNTIME_CALLS || 40);
const SAMPLES = Number(process.env.BENCH_RUNTIME_SAMPLES || 30);

type Work = 'write' | 'expansion';

/** Answers every request at once: the handshake, then CALLS writes (or expansion requests), then the
 *  completion. */
class InstantModel implements ModelProvider {
  readonly kind = 'bench';
  readonly model = 'bench-instant';
  readonly contextTokens = 1_000_000;
  private turn = 0;
  constructor(private readonly work: Work) {}
  async *chat(_request: ChatRequest): AsyncGenerator<ChatChunk> {
    const n = this.turn++;
    const expansion = { intent_id: 'INT-001', paths: [`docs/bench-${n}/**`], justification: 'the bench needs it' };
    const call =
      n === 0
        ? { name: 'select_active_intent', arguments: JSON.stringify({ intent_id: 'INT-001' }) }
        : n <= CALLS && this.work === 'expansion'
          ? { name: 'scope_expansion_request', arguments: JSON.stringify(expansion) }
          : n <= CALLS
            ? { name: 'write_to_file', arguments: JSON.stringify({ path: 'src/auth/bench.js', content: `module.exports = ${n};\n`.repeat(20) }) }
            : { name: 'attempt_completion', arguments: JSON.stringify({ result: 'done' }) };
    yield { type: 'toolCall', call: { id: `c${n}`, ...call } };
    yield { type: 'done', finishReason: 'tool_calls' };
  }
}

function workspace(): string {
  const dir = fs.mkdtempSync(path.join(ROOT, 'target', 'bench-runtime-'));
  fs.mkdirSync(path.join(dir, '.orchestration'));
  fs.mkdirSync(path.join(dir, 'src/auth'), { recursive: true });
  fs.copyFileSync(path.join(ROOT, '.orchestration/active_intents.yaml'), path.join(dir, '.orchestration/active_intents.yaml'));
  // The gatekeeper only (it is built in): the figure is the chokepoint's own cost, not a hook's.
  fs.writeFileSync(path.join(dir, '.orchestration/hooks.yaml'), 'version: 1\nhooks: {}\n');
  return dir;
}

/** Nanoseconds per tool call of one task of CALLS writes. */
/** One broker per engine, for the whole run: a broker subscribes to its engine's Pending changes. */
function approverOf(engine: ApprovalsEngine): (request: Ask) => Promise<Settlement> {
  const broker = new ApprovalBroker({ engine, log: { info() {}, warn() {}, error() {} }, human: { arrived() {} } });
  // The caller approves at once: the figure holds no human time.
  return (request) => broker.ask(request, { review: (_p, context) => void context.decide({ action: 'approve' }) });
}

async function sample(
  root: string,
  engine: RuntimeEngine,
  bypassEngine: boolean,
  work: Work = 'write',
  approve?: (request: Ask) => Promise<Settlement>,
): Promise<number> {
  const ask = approve ?? (async () => refusal('no'));
  const runtime = new AgentRuntime({ root, engine, provider: new InstantModel(work), bypassEngine, limits: { maxTurns: CALLS + 5 }, ask });
  let failed = '';
  let granted = 0;
  runtime.onEvent((e) => {
    if (e.type === 'taskEnded' && e.status !== 'success') failed = `${e.status}: ${e.summary}`;
    if (e.type === 'toolResult' && e.tool === 'scope_expansion_request' && e.ok && e.content.startsWith('approved by caller')) granted++;
  });
  const t0 = process.hrtime.bigint();
  await runtime.run({ prompt: 'bench' });
  const ns = Number(process.hrtime.bigint() - t0) / (CALLS + 2);
  await runtime.end();
  if (failed) throw new Error(`the bench task did not succeed (${failed})`);
  if (work === 'expansion' && granted !== CALLS) throw new Error(`only ${granted} of ${CALLS} expansions were granted`);
  return ns;
}

async function main(): Promise<void> {
  const dirs = [workspace(), workspace(), workspace()];
  try {
    const engines = dirs.map((d) => binding.Engine.open(d));
    for (let i = 0; i < 3; i++) {
      await sample(dirs[0], engines[0], false);
      await sample(dirs[1], engines[1], true);
    }
    const approve = approverOf(engines[2]);
    await sample(dirs[2], engines[2], false, 'expansion', approve);
    const governed: number[] = [];
    const bypass: number[] = [];
    const asked: number[] = [];
    // Interleaved, so all see the same disk and CPU noise.
    for (let i = 0; i < SAMPLES; i++) {
      governed.push(await sample(dirs[0], engines[0], false));
      bypass.push(await sample(dirs[1], engines[1], true));
      asked.push(await sample(dirs[2], engines[2], false, 'expansion', approve));
    }
    console.log(JSON.stringify({ name: 'runtime.tool_call.bypass', samples: bypass }));
    console.log(JSON.stringify({ name: 'runtime.tool_call', baseline: 'runtime.tool_call.bypass', samples: governed }));
    console.log(JSON.stringify({ name: 'runtime.ask.expansion', baseline: 'runtime.tool_call', samples: asked }));
  } finally {
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e.stack || e.message);
  process.exit(1);
});
