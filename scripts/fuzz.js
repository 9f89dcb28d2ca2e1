#!/usr/bin/env node
// `npm run fuzz [-- SECONDS] [--asan]`: builds the fuzz targets (fuzz/: `canonicalize`, the path
// canonicaliser; `hook_input`, what `chokepoint hook` answers an agent's input it cannot judge) and runs
// libFuzzer over each one's seed corpus for SECONDS each (default 20; `node scripts/fuzz.js 600` for a
// long run by hand). `npm test` runs them briefly as part of the cargo layer.
//
// No nightly and no cargo-fuzz needed: a plain `cargo build` with the coverage flags cargo-fuzz passes,
// all of them stable `-C` flags. Left out by default is cargo-fuzz's default AddressSanitizer: the code
// under test forbids `unsafe`, and the sanitizer costs well over half the speed. `--asan` adds it as the
// unstable `-Zsanitizer=address`, which stable rustc accepts under RUSTC_BOOTSTRAP=1 (the runtime ships
// with the stable standard library), in a target folder of its own. With nightly and cargo-fuzz,
// `cargo fuzz run canonicalize` runs the same target with it.
//
// What the fuzzer finds goes to fuzz/target/corpus/ (it is handed the seeds read-only, as a second
// folder), a failing input to fuzz/artifacts/; both are ignored by git. The fixture workspace the
// target builds lives under fuzz/target/tmp/, cleared around each run.
'use strict';
const fs = require('fs');
const path = require('path');
const { ROOT, log, capture } = require('./lib');

/** Each target, with its dictionary if it has one. */
// canonicalize: long enough for a name past NAME_MAX (255), short enough that one input is not
// thousands of lookups; hook_input: a whole hook input (the seeds are the agents' documented ones).
const TARGETS = [
  { name: 'canonicalize', dict: true, maxLen: 512 },
  { name: 'hook_input', dict: false, maxLen: 8192 },
];
const FUZZ_DIR = path.join(ROOT, 'fuzz');
const TARGET_DIR = path.join(FUZZ_DIR, 'target');

/** What cargo-fuzz (src/project.rs) puts in RUSTFLAGS for its default build on Linux (release, with
 *  debug assertions, one codegen unit) less the sanitizer, so this build and
 *  `cargo fuzz build --sanitizer none` instrument the same way. */
const RUSTFLAGS = [
  '-Cpasses=sancov-module',
  '-Cllvm-args=-sanitizer-coverage-level=4',
  '-Cllvm-args=-sanitizer-coverage-inline-8bit-counters',
  '-Cllvm-args=-sanitizer-coverage-pc-table',
  '-Cllvm-args=-sanitizer-coverage-trace-compares',
  '-Cllvm-args=-simplifycfg-branch-fold-threshold=0',
  '--cfg fuzzing',
  '-Clink-dead-code',
  '-Cllvm-args=-sanitizer-coverage-stack-depth',
  '-Cdebug-assertions',
  '-Ccodegen-units=1',
].join(' ');

async function hostTriple() {
  const r = await capture('rustc', ['-vV']);
  const m = /^host: (\S+)/m.exec(r.stdout);
  if (!m) throw new Error(`cannot tell the host triple from \`rustc -vV\`: ${r.stderr.trim()}`);
  return m[1];
}

/** Builds the targets; returns the folder of their binaries, or throws with cargo's output already shown. */
async function buildTarget({ asan = false } = {}) {
  // An explicit --target keeps RUSTFLAGS away from build scripts and proc macros, which would otherwise
  // be instrumented too and fail to link without libFuzzer's runtime (cargo-fuzz does the same).
  const triple = await hostTriple();
  // Cargo keeps one build per target folder whatever the flags: a folder of its own for the sanitizer
  // build, so switching does not rebuild the other from scratch.
  const targetDir = asan ? path.join(TARGET_DIR, 'asan') : TARGET_DIR;
  const flags = asan ? `${RUSTFLAGS} -Zsanitizer=address` : RUSTFLAGS;
  const r = await capture(
    'cargo',
    // --locked: `npm test` leaves the work tree as it found it. A fuzz/Cargo.lock that no longer
    // matches the core's dependencies fails the build, with the command that brings it up to date.
    [
      'build',
      '--release',
      '--locked',
      '--manifest-path',
      path.join(FUZZ_DIR, 'Cargo.toml'),
      '--target-dir',
      targetDir,
      '--target',
      triple,
      ...TARGETS.flatMap((t) => ['--bin', t.name]),
      '--color',
      'never',
    ],
    {
      echo: true,
      env: {
        ...process.env,
        // RUSTFLAGS replaces any flags from config files, so an outer value is appended, as cargo-fuzz does.
        RUSTFLAGS: [flags, process.env.RUSTFLAGS].filter(Boolean).join(' '),
        // Line tables for the backtrace of a failing input, as `cargo fuzz` builds.
        CARGO_PROFILE_RELEASE_DEBUG: 'true',
        ...(asan ? { RUSTC_BOOTSTRAP: '1' } : {}),
      },
    },
  );
  if (r.code !== 0) {
    const stale = /cannot update the lock file/.test(r.stderr)
      ? "; fuzz/Cargo.lock is out of date with the core's dependencies: run `cargo metadata --manifest-path fuzz/Cargo.toml --format-version 1 >/dev/null` and commit fuzz/Cargo.lock"
      : '';
    throw new Error(`the fuzz target did not build (cargo exit code ${r.code})${stale}`);
  }
  return path.join(targetDir, triple, 'release');
}

/** Builds the targets and runs each for `seconds`; returns `{ passed, failed }`, one count per target.
 *  `echo` shows libFuzzer's progress as it runs (for a long run by hand); `asan` adds AddressSanitizer. */
async function fuzz(seconds = 20, { echo = false, asan = false } = {}) {
  log('fuzz', `building ${TARGETS.map((t) => t.name).join(', ')}`);
  let bin;
  try {
    bin = await buildTarget({ asan });
  } catch (e) {
    console.error(`error: ${e.message}`);
    return { passed: 0, failed: TARGETS.length };
  }
  const counts = { passed: 0, failed: 0 };
  for (const target of TARGETS) {
    const one = await fuzzOne(target, path.join(bin, target.name), seconds, { echo, asan });
    counts.passed += one.passed;
    counts.failed += one.failed;
  }
  return counts;
}

async function fuzzOne({ name: TARGET, dict, maxLen }, binary, seconds, { echo, asan }) {
  const seeds = path.join(FUZZ_DIR, 'corpus', TARGET);
  const found = path.join(TARGET_DIR, 'corpus', TARGET);
  const artifacts = path.join(FUZZ_DIR, 'artifacts', TARGET);
  const tmp = path.join(TARGET_DIR, 'tmp');
  for (const d of [found, artifacts]) fs.mkdirSync(d, { recursive: true });
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.mkdirSync(tmp, { recursive: true });

  // Any variable may be added below: an environment, not the shape of its first two entries.
  /** @type {NodeJS.ProcessEnv} */
  const env = { ...process.env, TMPDIR: tmp };
  // As cargo-fuzz sets it: the sanitizer would otherwise flag globals that are legitimately defined twice.
  if (asan) env.ASAN_OPTIONS = ['detect_odr_violation=0', process.env.ASAN_OPTIONS].filter(Boolean).join(':');
  log('fuzz', `running ${TARGET}${asan ? ' (AddressSanitizer)' : ''} for ${seconds} s`);
  const t0 = Date.now();
  const r = await capture(
    binary,
    [
      `-max_total_time=${seconds}`,
      '-timeout=10',
      `-max_len=${maxLen}`,
      '-print_final_stats=1',
      ...(dict ? [`-dict=${path.join(FUZZ_DIR, `${TARGET}.dict`)}`] : []),
      `-artifact_prefix=${artifacts}/`,
      found,
      seeds,
    ],
    { echo, env },
  );
  fs.rmSync(tmp, { recursive: true, force: true });
  const elapsed = ((Date.now() - t0) / 1000).toFixed(1);
  const out = r.stdout + r.stderr;
  const stat = (k) => (new RegExp(`^stat::${k}:\\s*(\\d+)`, 'm').exec(out) || [])[1];
  const execs = stat('number_of_executed_units');
  const rate = stat('average_exec_per_sec');
  const artifact = (/Test unit written to (\S+)/.exec(out) || [])[1];

  if (r.code === 0 && !artifact) {
    console.log(`fuzz ${TARGET}: ok, ${execs ?? '?'} inputs in ${elapsed} s (${rate ?? '?'}/s), no failure`);
    return { passed: 1, failed: 0 };
  }
  // libFuzzer's own report: the panic message, the backtrace and the input.
  if (!echo)
    process.stderr.write(
      out
        .split('\n')
        .filter((l) => !/^#\d+\s+(NEW|REDUCE|pulse|INITED|RELOAD)\b/.test(l))
        .join('\n'),
    );
  console.error(`\nfuzz ${TARGET}: FAILED after ${elapsed} s (exit code ${r.code}${r.signal ? `, signal ${r.signal}` : ''})`);
  if (artifact) console.error(`  input: ${artifact}\n  rerun: ${path.relative(ROOT, binary)} ${path.relative(ROOT, artifact)}`);
  return { passed: 0, failed: 1 };
}

module.exports = { fuzz };

if (require.main === module) {
  const args = process.argv.slice(2);
  const asan = args.includes('--asan');
  const rest = args.filter((a) => a !== '--asan');
  const seconds = Number(rest[0] || 20);
  if (rest.length > 1 || !Number.isInteger(seconds) || seconds <= 0) {
    console.error(`usage: node scripts/fuzz.js [SECONDS] [--asan]  (SECONDS a whole number, not \`${rest.join(' ')}\`)`);
    process.exit(2);
  }
  fuzz(seconds, { echo: true, asan }).then(
    ({ passed, failed }) => {
      console.log(`${passed} passed, ${failed} failed`);
      process.exit(failed === 0 ? 0 : 1);
    },
    (e) => {
      console.error(`error: ${e.message}`);
      console.log('0 passed, 1 failed');
      process.exit(1);
    },
  );
}
