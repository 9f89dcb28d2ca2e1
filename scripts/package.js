#!/usr/bin/env node
// `npm run package`: production bundles plus the release addon and the `chokepoint` program, packed by
// @vscode/vsce into chokepoint-<version>-<platform>.vsix at the repository root, one per VS Code
// platform (the Marketplace's platform-specific extensions), each with only its own engine and program.
// Prints each .vsix path.
//
//   npm run package                      this machine's platform
//   npm run package -- --all             linux-x64, linux-arm64, darwin-x64, darwin-arm64, win32-x64
//   npm run package -- --target <name>   one platform (repeatable)
//   npm run package -- --profile <name>  the other platforms built with this cargo profile (below)
//
// Other platforms are cross-built from this Linux machine, as napi-rs does it: `napi build --target
// … --cross-compile` and `cargo zigbuild` for macOS and Linux on Arm (zig, from PyPI, with Apple's
// frameworks as text stubs: scripts/macos-sdk.js), and the `x86_64-pc-windows-gnu` target with
// Debian's MinGW for Windows (Microsoft's toolchain cannot be downloaded here). Every tool is
// installed on first use (scripts/toolchains.js). The files of a .vsix are staged under
// target/package/<platform>/ from the allow-list in .vscodeignore, so the checkout is never changed.
//
// The other platforms' engines and programs are built with cargo's `release` profile, unless
// `--profile` or CHOKEPOINT_PACKAGE_PROFILE names another (Cargo.toml's `vsix-test`: unoptimised, no debug information).
// The platforms layer's test packs that way (tests/platforms/vsix.test.js): what it inspects (the
// manifest's platform, the files' names, their format and processor, the PE imports) does not depend
// on optimisation, and a release build of four platforms on CI's two cores takes far longer than
// its budget allows (figures in the test's header). A .vsix for people is packed with `release`.
'use strict';
const fs = require('fs');
const path = require('path');
const { ROOT, log, step, run, formatSeconds } = require('./lib');
const { build } = require('./build');
const { PLATFORMS, platformNamed, hostPlatform, ensureCrossTools, zigEnv, mingwEnv } = require('./toolchains');
const { macosSdk } = require('./macos-sdk');
const { GB, HEADROOM, makeRoom, otherBuilds } = require('./disk');

/** The platforms the command line names. */
function chosen(argv) {
  if (argv.includes('--all')) return PLATFORMS;
  const names = argv.flatMap((a, i) => (a === '--target' ? [argv[i + 1]] : a.startsWith('--target=') ? [a.slice('--target='.length)] : []));
  if (names.length === 0) return [hostPlatform()];
  return names.map(platformNamed);
}

/** The cargo profile of the other platforms' builds: `--profile`'s, CHOKEPOINT_PACKAGE_PROFILE's or `release`. */
function crossProfile(argv, env = process.env) {
  const at = argv.indexOf('--profile');
  const named = at >= 0 ? argv[at + 1] : argv.find((a) => a.startsWith('--profile='))?.slice('--profile='.length);
  return named || env.CHOKEPOINT_PACKAGE_PROFILE || 'release';
}

/** The disk one other platform's engine and program take, cold: 0.56 GB for darwin-x64 with the
 *  `vsix-test` profile, 1.1 GB with `platforms` (28 November 2026); a release build's was not measured. */
const PACK_ROOM = 1.5 * GB;

/** The engine (addon) and program of `platform`: this machine's from the ordinary build, the others
 *  cross-built into target/<triple>/ with `profile`. Returns their paths. */
async function buildFor(platform, profile) {
  if (platform === hostPlatform()) {
    return { addon: path.join(ROOT, 'native/node', `chokepoint.${platform.addon}.node`), program: path.join(ROOT, 'target/release', platform.program) };
  }
  const env = {
    ...process.env,
    ...(platform.zig ? zigEnv() : {}),
    ...(platform.apple ? { SDKROOT: macosSdk() } : {}),
    ...(platform.triple.endsWith('-windows-gnu') ? mingwEnv(ROOT) : {}),
  };
  const out = path.join(ROOT, 'target', platform.triple, profile === 'release' ? 'addon' : `addon-${profile}`);
  makeRoom(PACK_ROOM + HEADROOM, `${platform.name}'s engine and program`, otherBuilds(platform.triple));
  await step('package', `${platform.name}: native addon (${profile})`, () =>
    run(
      path.join(ROOT, 'node_modules/.bin/napi'),
      [
        'build',
        '--platform',
        '--profile',
        profile,
        '--target',
        platform.triple,
        ...(platform.zig ? ['--cross-compile'] : []),
        '--cwd',
        'native/node',
        '--output-dir',
        out,
        '--no-js',
        '--dts',
        'index.d.ts',
      ],
      { env },
    ),
  );
  await step('package', `${platform.name}: chokepoint program (${profile})`, () =>
    run('cargo', [platform.zig ? 'zigbuild' : 'build', '--profile', profile, '--target', platform.triple, '-p', 'chokepoint-cli', '--bin', 'chokepoint'], {
      env,
    }),
  );
  return { addon: path.join(out, `chokepoint.${platform.addon}.node`), program: path.join(ROOT, 'target', platform.triple, profile, platform.program) };
}

/** The files .vscodeignore lets into a .vsix (its `!` lines), other than the engine and program. */
function shippedFiles() {
  const globs = fs
    .readFileSync(path.join(ROOT, '.vscodeignore'), 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('!'))
    .map((l) => l.slice(1));
  const files = [];
  for (const glob of globs) {
    if (glob.startsWith('native/node/') || glob.startsWith('bin/')) continue;
    // The globs are a folder and a file pattern (`media/**`, `templates/orchestration/*.yaml`) or a file.
    const [dir, pattern] = glob.includes('*') ? [path.dirname(glob.replace(/\/\*\*$/, '/x')), path.basename(glob)] : [path.dirname(glob), path.basename(glob)];
    const walk = (rel) => {
      const abs = path.join(ROOT, rel);
      if (!fs.existsSync(abs)) return;
      for (const e of fs.readdirSync(abs, { withFileTypes: true })) {
        const child = path.join(rel, e.name);
        if (e.isDirectory() && pattern === '**') walk(child);
        else if (e.isFile() && matches(e.name, pattern)) files.push(child);
      }
    };
    walk(dir === '.' ? '' : dir);
  }
  return files;
}

/** Whether a file name matches a pattern of .vscodeignore's: `**`, `*.ext` or a name. */
function matches(name, pattern) {
  if (pattern === '**') return true;
  if (pattern.startsWith('*.')) return name.endsWith(pattern.slice(1));
  return name === pattern;
}

/** Packs one platform's .vsix from a staging folder; returns its path. */
async function packFor(platform, built) {
  const stage = path.join(ROOT, 'target/package', platform.name);
  fs.rmSync(stage, { recursive: true, force: true });
  for (const rel of shippedFiles()) {
    fs.mkdirSync(path.join(stage, path.dirname(rel)), { recursive: true });
    fs.copyFileSync(path.join(ROOT, rel), path.join(stage, rel));
  }
  for (const [from, to, mode] of [
    [built.addon, path.join('native/node', `chokepoint.${platform.addon}.node`), 0o644],
    [built.program, path.join('bin', platform.program), 0o755],
  ]) {
    if (!fs.existsSync(from)) throw new Error(`${platform.name}: ${from} was not built`);
    fs.mkdirSync(path.join(stage, path.dirname(to)), { recursive: true });
    fs.copyFileSync(from, path.join(stage, to));
    fs.chmodSync(path.join(stage, to), mode);
  }
  fs.copyFileSync(path.join(ROOT, '.vscodeignore'), path.join(stage, '.vscodeignore'));
  const { version } = require(path.join(ROOT, 'package.json'));
  const out = path.join(ROOT, `chokepoint-${version}-${platform.name}.vsix`);
  // --no-dependencies: everything the extension needs is bundled into dist/ or is the .node file.
  await step('package', `${platform.name}: packing ${path.basename(out)}`, () =>
    run(
      path.join(ROOT, 'node_modules/.bin/vsce'),
      ['package', '--target', platform.name, '--no-dependencies', '--skip-license', '--allow-missing-repository', '--out', out],
      {
        cwd: stage,
        stdio: ['ignore', 'inherit', 'inherit'],
      },
    ),
  );
  // The .vsix holds it all now; the staged copy (up to a quarter of a gigabyte for Windows) would only take disk.
  fs.rmSync(stage, { recursive: true, force: true });
  return out;
}

/** The CPU time, in seconds, of the children this process has waited for (cargo, rustc, the linkers):
 *  Linux's /proc/self/stat `cutime` and `cstime`, in clock ticks of 1/100 s. Null elsewhere. */
function childrenCpuSeconds() {
  try {
    const fields = fs.readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
    return (Number(fields[13]) + Number(fields[14])) / 100;
  } catch {
    return null;
  }
}

/** Packs the platforms `argv` names; returns the .vsix paths. */
async function packageVsix(argv = []) {
  const platforms = chosen(argv);
  await build({ production: true });
  if (platforms.some((p) => p !== hostPlatform())) await ensureCrossTools(platforms.filter((p) => p !== hostPlatform()));
  // The program other agents' hooks run, for a checkout: bin/ is what the extension runs first.
  fs.mkdirSync(path.join(ROOT, 'bin'), { recursive: true });
  fs.copyFileSync(path.join(ROOT, 'target/release/chokepoint'), path.join(ROOT, 'bin/chokepoint'));
  fs.chmodSync(path.join(ROOT, 'bin/chokepoint'), 0o755);
  const outs = [];
  const profile = crossProfile(argv);
  for (const platform of platforms) {
    // What each platform's pack costs, for CI's budget: its time, and the CPU time of what it ran.
    const [started, cpu] = [Date.now(), childrenCpuSeconds()];
    outs.push(await packFor(platform, await buildFor(platform, profile)));
    const used = cpu === null ? '' : `, ${formatSeconds(/** @type {number} */ (childrenCpuSeconds()) - cpu)} of CPU`;
    log(
      'package',
      `${platform.name} (${platform === hostPlatform() ? "this machine's release build" : profile}): ${formatSeconds((Date.now() - started) / 1000)}${used}`,
    );
  }
  log('package', `packed ${outs.length}: ${outs.map((o) => path.basename(o)).join(', ')}`);
  return outs;
}

module.exports = { packageVsix, shippedFiles };

if (require.main === module) {
  packageVsix(process.argv.slice(2))
    .then((outs) => outs.forEach((o) => console.log(o)))
    .catch((e) => {
      console.error(`error: ${e.message}`);
      process.exit(1);
    });
}
