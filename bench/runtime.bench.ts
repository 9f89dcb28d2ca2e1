// The runtime's own cost per tool call: the same tool loop with the engine at the chokepoint
// (`runtime.tool_call`: five chain evaluations per call — TurnStart, TurnPrepare, PreToolUse,
// PostToolUse, TurnEnd — and their trace records, all made durable by one sync: PreToolUse's, before
// the tool runs, which covers the previous call's result and this turn's records) and with the engine bypassed (`runtime.tool_call.bypass`). The model answers in-process,
// at once, so what is timed is the loop; each call writes a small file inside the intent's scope.
// Prints one JSON object per figure for scripts/bench.js (bundled by it with esbuild).
import * as fs from 'fs';
import * as path from 'path';
import { AgentRuntime } from '../extension/src/runtime/loop';
import type { ChatChunk, ChatRequest, ModelProvider, RuntimeEngine } from '../extension/src/runtime/types';

const ROOT = path.resolve(__dirname, '..');
// A computed require: esbuild leaves the addon to be loaded at run time.
const binding = require(path.join(ROOT, 'native/node')) as typeof import('../native/node/index');
const CALLS = Number(process.env.BENCH_RUNTIME_CALLS || 40);
const SAMPLES = Number(process.env.BENCH_RUNTIME_SAMPLES || 30);

/** Answers every request at once: the handshake, then CALLS writes, then the completion. */
class InstantModel implements ModelProvider {
  readonly kind = 'bench';
  readonly model = 'bench-instant';
  readonly contextTokens = 1_000_000;
  private turn = 0;
  async *chat(_request: ChatRequest): AsyncGenerator<ChatChunk> {
    const n = this.turn++;
    const call =
      n === 0
        ? { name: 'select_active_intent', arguments: JSON.stringify({ intent_id: 'INT-001' }) }
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
async function sample(root: string, engine: RuntimeEngine, bypassEngine: boolean): Promise<number> {
  const runtime = new AgentRuntime({ root, engine, provider: new InstantModel(), bypassEngine, limits: { maxTurns: CALLS + 5 }, ask: async () => ({ approved: false }) });
  let failed = '';
  runtime.onEvent((e) => {
    if (e.type === 'taskEnded' && e.status !== 'success') failed = `${e.status}: ${e.summary}`;
  });
  const t0 = process.hrtime.bigint();
  await runtime.run({ prompt: 'bench' });
  const ns = Number(process.hrtime.bigint() - t0) / (CALLS + 2);
  await runtime.end();
  if (failed) throw new Error(`the bench task did not succeed (${failed})`);
  return ns;
}

async function main(): Promise<void> {
  const dirs = [workspace(), workspace()];
  try {
    const engines = dirs.map((d) => binding.Engine.open(d) as unknown as RuntimeEngine);
    for (let i = 0; i < 3; i++) {
      await sample(dirs[0], engines[0], false);
      await sample(dirs[1], engines[1], true);
    }
    const governed: number[] = [];
    const bypass: number[] = [];
    // Interleaved, so both see the same disk and CPU noise.
    for (let i = 0; i < SAMPLES; i++) {
      governed.push(await sample(dirs[0], engines[0], false));
      bypass.push(await sample(dirs[1], engines[1], true));
    }
    console.log(JSON.stringify({ name: 'runtime.tool_call.bypass', samples: bypass }));
    console.log(JSON.stringify({ name: 'runtime.tool_call', baseline: 'runtime.tool_call.bypass', samples: governed }));
  } finally {
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e.stack || e.message);
  process.exit(1);
});
