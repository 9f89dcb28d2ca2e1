// The binding from Node: each figure is measured in batches, interleaved with its baseline so that
// both see the same machine noise. Prints one JSON object per figure on stdout for scripts/bench.js.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');

const ROOT = path.resolve(__dirname, '..');
const binding = require(path.join(ROOT, 'native/node'));

const BATCH = Number(process.env.BENCH_BATCH || 200);
const SAMPLES = Number(process.env.BENCH_SAMPLES || 3000);

/** Per-call nanoseconds of `fn`, one sample per batch of BATCH calls; `after` runs untimed. */
function sampleOnce(fn, after) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < BATCH; i++) fn();
  const ns = Number(process.hrtime.bigint() - t0) / BATCH;
  if (after) after();
  return ns;
}

/** Measures several figures round-robin: sample k of every figure is taken back to back. */
function measure(figures) {
  for (const f of figures) for (let i = 0; i < 100; i++) sampleOnce(f.fn, f.after); // warm-up (JIT, caches)
  const samples = figures.map(() => []);
  for (let s = 0; s < SAMPLES; s++) figures.forEach((f, i) => samples[i].push(sampleOnce(f.fn, f.after)));
  return figures.map((f, i) => ({ name: f.name, baseline: f.baseline, samples: samples[i] }));
}

const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'chokepoint-bench-'));
try {
  fs.mkdirSync(path.join(ws, '.orchestration'));
  for (const f of ['hooks.yaml', 'active_intents.yaml']) fs.copyFileSync(path.join(ROOT, '.orchestration', f), path.join(ws, '.orchestration', f));
  const engine = binding.Engine.open(ws);
  const input = { path: 'src/auth/login.js' };
  // The chain8 figure: the same 8-hook chain and 1 KiB write as the Rust bench engine.chain8.rust.
  const ws8 = path.join(ws, 'chain8');
  fs.mkdirSync(path.join(ws8, '.orchestration'), { recursive: true });
  fs.copyFileSync(path.join(ROOT, 'bench/chain8.hooks.yaml'), path.join(ws8, '.orchestration/hooks.yaml'));
  const engine8 = binding.Engine.open(ws8);
  const write = { path: 'src/app/main.ts', content: 'x'.repeat(1024 - 40) };
  const paths = ['src/app/main.ts'];
  if (engine8.evaluate('PreToolUse', 'write_to_file', paths, write).additionalContext.length !== 2)
    throw new Error('the chain8 benchmark chain did not do its work');
  const results = measure([
    { name: 'binding.empty_call', fn: () => binding.noop() },
    // The ledger is drained after each batch, untimed, as engine.chain8.rust does (its bench says
    // why): the figure is what a call costs its caller, not the backlog of a flood of them.
    {
      name: 'binding.engine_call',
      baseline: 'binding.empty_call',
      fn: () => engine.evaluate('PreToolUse', 'read_file', null, input),
      after: () => engine.flushTrace(),
    },
    {
      name: 'engine.chain8.binding',
      baseline: 'binding.empty_call',
      fn: () => engine8.evaluate('PreToolUse', 'write_to_file', paths, write),
      after: () => engine8.flushTrace(),
    },
  ]);
  for (const r of results) console.log(JSON.stringify(r));
} finally {
  fs.rmSync(ws, { recursive: true, force: true });
}
