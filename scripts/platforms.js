// The platforms layer of `npm test` (`npm test -- platforms`): the core's, the CLI's and the Windows crate's test suites
// built for the other platforms VS Code runs on and run from this Linux machine, Windows
// (`x86_64-pc-windows-gnu`, Debian's MinGW, the tests under Wine) and Linux on Arm
// (`aarch64-unknown-linux-gnu`, Debian's cross gcc, the tests under qemu-user). The linkers and
// runners are in .cargo/config.toml, so `cargo test --target …` runs the same by hand; this module
// installs what they need (Debian packages as root, rust targets with rustup) and counts.
//
// A test that needs what the emulation lacks (a Windows kernel feature Wine does not have, Landlock
// under qemu) is marked `#[cfg_attr(…, ignore = "why")]` in the code; cargo prints each one as
// `ignored, <why>`, and this layer lists them all with their reasons, so none is skipped unseen.
'use strict';
const fs = require('fs');
const path = require('path');
const { ROOT, log, capture } = require('./lib');
const vscode = require('./vscode');
const { PLATFORMS, platformNamed, ensureRustTargets } = require('./toolchains');
const { GB, HEADROOM, makeRoom, otherBuilds } = require('./disk');

/** The crates whose suites run on every platform (the napi binding is built per platform by
 *  packaging, not tested here; the Windows crate's tests are Windows' own, empty elsewhere). */
const CRATES = ['-p', 'chokepoint-core', '-p', 'chokepoint-cli', '-p', 'chokepoint-win'];

/** Wine's prefix (its C: drive and registry), made by the first run (about half a minute) and kept. */
const WINEPREFIX = path.join(ROOT, 'target/wine');

/**
 * How each platform the layer runs is run from here: the Debian packages that build and run its
 * tests, and the environment of its test run. Its name, triple and the rest are scripts/toolchains.js's.
 * @typedef {object} Emulation
 * @property {string[]} packages
 * @property {Record<string, string>} env
 * @property {number} [jobs] test binaries at a time, where not JOBS
 * @property {RegExp} [emulatorFault] output that only the emulator's own fault prints: a test binary
 *   that failed with it is run once more, and the layer says so
 * @property {number} room the disk its test build takes, cold (scripts/disk.js makes room for it),
 *   measured on 28 November 2026
 */
/** @type {Record<string, Emulation>} */
const EMULATED = {
  'linux-arm64': {
    packages: ['gcc-aarch64-linux-gnu', 'libc6-dev-arm64-cross', 'qemu-user-static'],
    // Where qemu finds the Arm dynamic loader and C library, for the programs a test starts itself
    // (the `chokepoint` binary), which the kernel hands to qemu through binfmt_misc, not the runner.
    // `--cfg qemu` marks the tests that need what qemu-user lacks (`cfg_attr(qemu, ignore = "why")`);
    // it changes only which tests run, and only in this layer's build.
    env: { QEMU_LD_PREFIX: '/usr/aarch64-linux-gnu', CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUSTFLAGS: '--cfg qemu' },
    // 47 test executables of 70 MB, 3.8 GB in all (and 1.1 GB more of incremental cache before the
    // profile went without it).
    room: 4 * GB,
  },
  'win32-x64': {
    packages: ['gcc-mingw-w64-x86-64', 'wine64', 'wine'],
    // No debug chatter, a prefix of our own under target/, and no offer to download Mono and Gecko
    // (nothing here uses .NET or HTML, and this machine has no network for them). `--cfg wine` marks
    // the tests that need what this Wine lacks and a real Windows has (git, PowerShell):
    // `cfg_attr(wine, ignore = "why")`.
    env: { WINEDEBUG: '-all', WINEPREFIX, WINEDLLOVERRIDES: 'mscoree,mshtml=', CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUSTFLAGS: '--cfg wine' },
    // One binary at a time: every Windows process of a run goes through one Wine server, and the
    // suite passed whole run so (two at a time has not been tried under Wine).
    jobs: 1,
    // Wine's CreateProcess now and then fails with ERROR_INTERNAL_ERROR (1359) when a test starts the
    // `chokepoint` program: seen once in about eight runs of the suite (`hook`, 28 November 2026), and
    // the same binary then passed three times of three. Nothing of ours returns that error; a fault
    // of ours that did would fail the second run as well, and count.
    emulatorFault: /Os \{ code: 1359, kind: Uncategorized, message: "Internal error\." \}/,
    // 47 test executables of 78 MB, 4.5 GB in all.
    room: 4.5 * GB,
  },
};

/**
 * Each platform whose suites the layer runs: scripts/toolchains.js's platform with its emulation.
 * @typedef {import('./toolchains').Platform & Emulation} Target
 */
/** @type {Target[]} */
const TARGETS = PLATFORMS.filter((p) => EMULATED[p.name]).map((p) => ({ ...p, ...EMULATED[p.name] }));

/** The binfmt_misc entry that has the kernel hand an Arm program to qemu, so a test that starts the
 *  Arm `chokepoint` binary can. qemu-user-static's package registers it where systemd runs (a CI
 *  machine); in a container without systemd it is registered here, as root, from the same file. */
function ensureArmBinfmt() {
  const dir = '/proc/sys/fs/binfmt_misc';
  if (fs.existsSync(path.join(dir, 'qemu-aarch64'))) return;
  const conf = '/usr/lib/binfmt.d/qemu-aarch64.conf';
  if (typeof process.getuid !== 'function' || process.getuid() !== 0 || !fs.existsSync(conf)) {
    log('test', `the kernel does not run Arm programs through qemu (no ${dir}/qemu-aarch64): tests that start the chokepoint binary fail`);
    return;
  }
  const { spawnSync } = require('child_process');
  if (!fs.existsSync(path.join(dir, 'register'))) spawnSync('mount', ['-t', 'binfmt_misc', 'binfmt_misc', dir], { stdio: 'inherit' });
  try {
    fs.writeFileSync(path.join(dir, 'register'), fs.readFileSync(conf, 'utf8').trim());
    log('setup', `registered ${conf} with binfmt_misc`);
  } catch (e) {
    log('test', `cannot register ${conf} with binfmt_misc: ${/** @type {Error} */ (e).message}`);
  }
}

/** Rust's standard library draws random numbers from `ProcessPrng` in bcryptprimitives.dll (Windows
 *  10 and later), which Debian's Wine 8 does not have: no Rust program starts under it (status
 *  c0000135). A stand-in DLL with that one function, over `RtlGenRandom` (advapi32's
 *  SystemFunction036, which Wine has), built with MinGW into the prefix's system32. */
const PRNG_SHIM = `#include <windows.h>
BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG n = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!SystemFunction036(data, n)) return FALSE;
        data += n;
        len -= n;
    }
    return TRUE;
}
`;

/** Makes Wine's prefix (once: about half a minute) and puts the ProcessPrng stand-in in it. */
async function ensureWinePrefix(env) {
  const dll = path.join(WINEPREFIX, 'drive_c/windows/system32/bcryptprimitives.dll');
  if (fs.existsSync(dll)) return;
  log('setup', `making Wine's prefix in ${path.relative(ROOT, WINEPREFIX)} (once)`);
  const boot = await capture('wine', ['wineboot', '--init'], { env: { ...process.env, ...env } });
  if (!fs.existsSync(path.dirname(dll))) throw new Error(`wineboot made no prefix in ${WINEPREFIX}: ${boot.stderr.trim()}`);
  const source = path.join(ROOT, 'target/wine-prng/prng.c');
  fs.mkdirSync(path.dirname(source), { recursive: true });
  fs.writeFileSync(source, PRNG_SHIM);
  const built = await capture('x86_64-w64-mingw32-gcc', ['-shared', '-O2', '-o', dll, source, '-ladvapi32']);
  if (built.code !== 0) throw new Error(`cannot build the ProcessPrng stand-in for Wine: ${built.stderr.trim()}`);
}

/**
 * The counts of a `cargo test` run's output: `test result:` lines summed, and every ignored test
 * with its reason (`test name ... ignored, reason`).
 * @param {string} text
 */
function cargoCounts(text) {
  let passed = 0;
  let failed = 0;
  for (const m of text.matchAll(/test result: \w+\. (\d+) passed; (\d+) failed/g)) {
    passed += Number(m[1]);
    failed += Number(m[2]);
  }
  const ignored = [...text.matchAll(/^test (\S+) \.\.\. ignored(?:, (.*))?$/gm)].map((m) => ({ test: m[1], reason: m[2] || '(no reason given)' }));
  return { passed, failed, ignored };
}

/**
 * The cargo profile of every platform's test build, Cargo.toml's `platforms`: the tests as `cargo
 * test` builds them, but optimised (under qemu every instruction is emulated, and most of the Arm
 * suite's time is the `chokepoint` program started again and again, each start emulated from the
 * first instruction), with line tables only and no incremental cache. On the dev profile the Windows
 * build took 4.7 GB of disk, 0.7 GB of it the incremental cache.
 */
const PROFILE = 'platforms';

/** How long one test binary may run under emulation before it counts as hung: a test that waits
 *  forever on what the emulator lacks must fail the layer, not stall CI. */
const BINARY_TIMEOUT_S = 600;

/** How many test binaries run at once. A binary's own tests already run on every core, but most of a
 *  CLI suite's time is spent in a few long tests that start the program again and again, which leave
 *  the other core idle; two binaries at a time keep both busy. `CHOKEPOINT_PLATFORMS_JOBS` overrides it
 *  (and a platform's own `jobs`). */
const JOBS = Math.max(1, Number(process.env.CHOKEPOINT_PLATFORMS_JOBS) || 2);

/** Builds the suites for one target, then runs each test binary on its own (its runner from
 *  .cargo/config.toml) within BINARY_TIMEOUT_S; returns the counts, the hung binaries counted as failed. */
async function runTarget(target) {
  const started = Date.now();
  log('test', `platform ${target.name} (${target.triple})`);
  const env = { ...process.env, ...target.env };
  makeRoom(target.room + HEADROOM, `${target.name}'s test build`, otherBuilds(target.triple));
  const base = ['test', '--target', target.triple, '--color', 'never', '--profile', PROFILE];
  const built = await capture('cargo', [...base, ...CRATES, '--no-run', '--message-format', 'json-render-diagnostics'], { env });
  const buildSeconds = Math.round((Date.now() - started) / 1000);
  if (built.code !== 0) {
    process.stderr.write(built.stderr);
    return { passed: 0, failed: 1, ignored: [], hung: [], reruns: [], seconds: buildSeconds, buildSeconds, binaries: [] };
  }
  log('test', `${target.name}: built in ${buildSeconds} s`);
  // One run per test target, named for both crates at once: cargo unifies the dependencies' features
  // over the packages it is given, so `-p` of one crate alone would build them all again.
  const selectors = new Map();
  for (const line of built.stdout.split('\n').filter((l) => l.startsWith('{'))) {
    const m = JSON.parse(line);
    if (m.reason !== 'compiler-artifact' || !m.executable || !m.profile?.test) continue;
    const kind = m.target.kind[0];
    const select = kind === 'lib' ? ['--lib'] : kind === 'bin' ? ['--bin', m.target.name] : ['--test', m.target.name];
    selectors.set(select.join(' '), select);
  }
  const totals = {
    passed: 0,
    failed: 0,
    ignored: /** @type {{ test: string, reason: string }[]} */ ([]),
    hung: /** @type {string[]} */ ([]),
    reruns: /** @type {string[]} */ ([]),
    binaries: /** @type {{ label: string, seconds: number }[]} */ ([]),
  };
  // JOBS test binaries at a time, each in its own cargo run (cargo 1.95 holds no lock on the build
  // folder while tests run), each printed whole when it ends so that their lines do not interleave.
  const queue = [...selectors];
  const runOne = async ([label, select]) => {
    const begun = Date.now();
    const once = async () => {
      const out = await capture('timeout', ['--kill-after=10', String(BINARY_TIMEOUT_S), 'cargo', ...base, ...CRATES, ...select, '--no-fail-fast'], { env });
      process.stdout.write(out.stdout);
      process.stderr.write(out.stderr);
      return out;
    };
    let r = await once();
    if (r.code !== 0 && target.emulatorFault?.test(r.stdout + r.stderr)) {
      log('test', `${target.name} ${label}: failed by the emulator's own fault (${target.emulatorFault.source}); running it once more, and counting that run`);
      totals.reruns.push(label);
      r = await once();
    }
    const seconds = Math.round((Date.now() - begun) / 1000);
    totals.binaries.push({ label, seconds });
    log('test', `${target.name} ${label}: ${seconds} s`);
    const counts = cargoCounts(r.stdout + r.stderr);
    totals.passed += counts.passed;
    totals.failed += counts.failed;
    totals.ignored.push(...counts.ignored);
    if (r.code === 124 || r.code === 137) {
      totals.hung.push(label);
      totals.failed += 1;
    } else if (r.code !== 0 && counts.failed === 0) totals.failed += 1; // it crashed: no test result line
  };
  const worker = async () => {
    for (let next = queue.shift(); next; next = queue.shift()) await runOne(next);
  };
  const jobs = process.env.CHOKEPOINT_PLATFORMS_JOBS ? JOBS : (target.jobs ?? JOBS);
  await Promise.all(Array.from({ length: jobs }, worker));
  // A Windows program left waiting when its test binary was killed would keep Wine's server up.
  if (target.env.WINEPREFIX) await capture('/usr/lib/wine/wineserver', ['-k'], { env });
  return { ...totals, buildSeconds, seconds: Math.round((Date.now() - started) / 1000) };
}

/** The names of the platforms this run of the layer is about: all five, or those named in
 *  `CHOKEPOINT_PLATFORMS` (VS Code's names, comma-separated: `CHOKEPOINT_PLATFORMS=linux-arm64` runs
 *  only the Arm suites and packs only the Arm .vsix). An unknown name is an error that lists them. */
function chosenPlatforms() {
  const named = (process.env.CHOKEPOINT_PLATFORMS || '')
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  return named.length === 0 ? PLATFORMS.map((p) => p.name) : named.map((n) => platformNamed(n).name);
}

/** The platforms layer: every target in turn, then what each passed, failed and ignored, and why. */
async function platformsLayer() {
  const targets = TARGETS.filter((t) => chosenPlatforms().includes(t.name));
  await vscode.ensureSystemPackages({ need: targets.flatMap((t) => t.packages) });
  await ensureRustTargets(targets.map((t) => t.triple));
  if (targets.some((t) => t.name === 'linux-arm64')) ensureArmBinfmt();
  const windows = targets.find((t) => t.name === 'win32-x64');
  if (windows) {
    fs.mkdirSync(path.dirname(WINEPREFIX), { recursive: true });
    await ensureWinePrefix(windows.env);
  }
  const results = [];
  for (const target of targets) results.push({ target, ...(await runTarget(target)) });
  console.log('');
  for (const r of results) {
    console.log(
      `  ${r.target.name.padEnd(12)} ${r.passed} passed, ${r.failed} failed, ${r.ignored.length} ignored (${r.seconds} s, of which building ${r.buildSeconds} s)`,
    );
    // The slowest test binaries first: where the layer's time goes.
    const slowest = [...r.binaries].sort((a, b) => b.seconds - a.seconds).slice(0, 5);
    if (slowest.length) console.log(`      slowest: ${slowest.map((b) => `${b.label} ${b.seconds} s`).join(', ')}`);
    for (const h of r.hung) console.log(`      hung (killed after ${BINARY_TIMEOUT_S} s): ${h}`);
    for (const h of r.reruns) console.log(`      run twice, the first failed by the emulator's own fault: ${h}`);
    for (const i of r.ignored) console.log(`      ignored ${i.test}: ${i.reason}`);
  }
  return { passed: results.reduce((s, r) => s + r.passed, 0), failed: results.reduce((s, r) => s + r.failed, 0) };
}

module.exports = { platformsLayer, chosenPlatforms, cargoCounts, TARGETS, ensureWinePrefix };
