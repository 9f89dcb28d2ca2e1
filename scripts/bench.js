#!/usr/bin/env node
// `npm run bench`: criterion benches of the Rust core, Node benches of the binding and of the agent
// runtime, in one run.
// Prints each figure as median and p99, with its ratio to the baseline measured in the same run, and
// writes target/bench.json: [{ name, median_ns, p99_ns, baseline, ratio }].
//
// Absolute times on a shared machine move from run to run; the ratio against a baseline measured in
// the same run is the figure to compare.
'use strict';
const fs = require('fs');
const path = require('path');
const { ROOT, log, run, capture } = require('./lib');
const { buildNative } = require('./build');

function percentile(sorted, p) {
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

function summarize({ name, baseline, samples }) {
  const sorted = [...samples].sort((a, b) => a - b);
  return { name, median_ns: percentile(sorted, 50), p99_ns: percentile(sorted, 99), baseline: baseline || null, samples: sorted.length };
}

/** Criterion's raw samples (total time and iterations per sample) as per-iteration nanoseconds. */
function criterionFigures() {
  const dir = path.join(ROOT, 'target/criterion');
  if (!fs.existsSync(dir)) return [];
  const out = [];
  // Groups nest one level deeper (target/criterion/<group>/<name>); plain benches do not.
  const dirs = fs
    .readdirSync(dir)
    .flatMap((d) => (fs.existsSync(path.join(dir, d, 'new')) ? [d] : fs.readdirSync(path.join(dir, d)).map((n) => path.join(d, n))));
  for (const rel of dirs) {
    const name = path.basename(rel);
    const file = path.join(dir, rel, 'new/sample.json');
    if (!fs.existsSync(file)) continue;
    const { iters, times } = JSON.parse(fs.readFileSync(file, 'utf8'));
    const baseline = BASELINES[name];
    out.push({ name, baseline, samples: times.map((t, i) => t / iters[i]) });
  }
  return out;
}

/** Per-operation samples that a `harness = false` bench wrote itself (target/bench-samples/*.json,
 *  each `{ name, baseline?, samples: [ns, ...] }`): figures criterion cannot time, such as one
 *  operation while other processes contend for the same lock. */
function rawSampleFigures() {
  const dir = path.join(ROOT, 'target/bench-samples');
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')));
}

/** Which Rust figure is compared with which (the Node bench names its own baselines). */
const BASELINES = { 'engine.command_hook': 'spawn.true' };

function format(ns) {
  if (ns < 1e3) return `${ns.toFixed(1)} ns`;
  if (ns < 1e6) return `${(ns / 1e3).toFixed(2)} µs`;
  return `${(ns / 1e6).toFixed(2)} ms`;
}

/** bench/runtime.bench.ts drives the TypeScript runtime: bundled like the unit tests. */
async function bundleRuntimeBench() {
  const out = path.join(ROOT, 'target/runtime.bench.js');
  await require('esbuild').build({
    entryPoints: [path.join(ROOT, 'bench/runtime.bench.ts')],
    outfile: out,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    logLevel: 'warning',
  });
  return out;
}

async function main() {
  await buildNative();
  log('bench', 'criterion benches (Rust core)');
  fs.rmSync(path.join(ROOT, 'target/criterion'), { recursive: true, force: true });
  fs.rmSync(path.join(ROOT, 'target/bench-samples'), { recursive: true, force: true });
  // The hook bench times the program as shipped (statically linked by buildNative); cargo bench would
  // time its own build, which it links dynamically into the same place, so a copy is timed.
  const shipped = path.join(ROOT, 'target/bench/chokepoint');
  fs.mkdirSync(path.dirname(shipped), { recursive: true });
  fs.copyFileSync(path.join(ROOT, 'target/release/chokepoint'), shipped);
  await run('cargo', ['bench', '--workspace', '--bench', '*', '--', '--noplot'], { env: { ...process.env, CHOKEPOINT_BENCH_PROGRAM: shipped } });
  log('bench', 'binding benches (Node)');
  const r = await capture(process.execPath, [path.join(ROOT, 'bench/binding.bench.js')]);
  if (r.code !== 0) throw new Error(`the binding bench failed:\n${r.stderr}`);
  log('bench', 'agent runtime (Node)');
  const runtime = await capture(process.execPath, [await bundleRuntimeBench()]);
  if (runtime.code !== 0) throw new Error(`the runtime bench failed:\n${runtime.stderr}`);
  const lines = (text) =>
    text
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  const raw = [...criterionFigures(), ...rawSampleFigures(), ...lines(r.stdout), ...lines(runtime.stdout)];
  const figures = raw.map(summarize);
  const byName = new Map(figures.map((f) => [f.name, f]));
  for (const f of figures) {
    const base = f.baseline && byName.get(f.baseline);
    f.ratio = base ? Number((f.median_ns / base.median_ns).toFixed(3)) : null;
  }
  const out = path.join(ROOT, 'target/bench.json');
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(
    out,
    JSON.stringify(
      figures.map(({ name, median_ns, p99_ns, baseline, ratio }) => ({ name, median_ns, p99_ns, baseline, ratio })),
      null,
      2,
    ) + '\n',
  );

  console.log('');
  console.log(`${'figure'.padEnd(28)}${'median'.padStart(12)}${'p99'.padStart(12)}   ratio to baseline`);
  for (const f of figures) {
    const ratio = f.ratio === null ? '' : `${f.ratio.toFixed(2)}× ${f.baseline}`;
    console.log(`${f.name.padEnd(28)}${format(f.median_ns).padStart(12)}${format(f.p99_ns).padStart(12)}   ${ratio}`);
  }
  console.log(`\nwritten to ${path.relative(process.cwd(), out)}`);
}

main().catch((e) => {
  console.error(`error: ${e.message}`);
  process.exit(1);
});
