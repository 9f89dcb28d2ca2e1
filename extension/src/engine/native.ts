// The only module that loads the native binding (tests/unit/rooms.test.ts fails on a runtime import of it anywhere else).
//
// It loads the platform's `.node` file from `native/node/` of the installed extension by its exact
// name, so that a failure can name the file it looked for; everything else in the extension receives
// the loaded binding (or the failure) from here and never requires it itself. The file is
// `native/node/chokepoint.<triple>.node`. It never throws: a failure is an error in the output channel, a notification and a red
// status bar item.
import * as fs from 'fs';
import * as path from 'path';
import { z } from 'zod';
import type * as Binding from '../../../native/node/index';

export type NativeBinding = typeof Binding;
export type NativeEngine = Binding.Engine;
export type EngineInfo = Binding.EngineInfo;
export type Coordination = Binding.Coordination;
export type EngineDiagnostic = Binding.Diagnostic;

export type NativeLoad = { ok: true; binding: NativeBinding; file: string } | { ok: false; error: string; lookedFor: string };

/** The platform suffix napi-rs gives the addon (`napi build --platform`), e.g. `linux-x64-gnu`. */
export function platformTriple(platform = process.platform, arch = process.arch): string {
  if (platform === 'linux') return `linux-${arch}-${isMusl() ? 'musl' : 'gnu'}`;
  // Built with MinGW (`x86_64-pc-windows-gnu`): Microsoft's toolchain cannot be downloaded where the
  // .vsix files are made (scripts/package.js).
  if (platform === 'win32') return `win32-${arch}-gnu`;
  return `${platform}-${arch}`;
}

/** Whether this Linux's C library is musl, asked the way napi-rs's own loader asks: what `ldd` is
 *  first, then the process report. The report alone was not enough: an extension host reloaded in
 *  the same window was seen to get a report without `glibcVersionRuntime` on glibc, looked for the
 *  musl addon and said the engine was missing. Glibc unless something says musl. */
const DiagnosticReport = z.object({
  header: z.object({ glibcVersionRuntime: z.string().optional() }).optional(),
  sharedObjects: z.array(z.string()).optional(),
});

function isMusl(): boolean {
  try {
    return fs.readFileSync('/usr/bin/ldd', 'utf8').includes('musl');
  } catch {
    // No readable ldd (a minimal image): the report says which C library the process runs on.
  }
  try {
    // Node types the report as `object`: read the two fields it has on Linux.
    const report = DiagnosticReport.safeParse(process.report?.getReport()).data;
    if (report?.header?.glibcVersionRuntime) return false;
    return report?.sharedObjects?.some((o) => o.includes('libc.musl-') || o.includes('ld-musl-')) ?? false;
  } catch {
    return false;
  }
}

/** The absolute path of the addon this process needs, under the extension's `native/node` folder. */
export function nativeFile(extensionRoot: string): string {
  return path.join(extensionRoot, 'native', 'node', `chokepoint.${platformTriple()}.node`);
}

/** Loads the binding. Never throws: a failure is returned with the file that was looked for. */
export function loadNative(extensionRoot: string): NativeLoad {
  const file = nativeFile(extensionRoot);
  if (!fs.existsSync(file)) {
    return {
      ok: false,
      lookedFor: file,
      error: `the native engine is missing: ${file} does not exist (build it with \`npm run build\`, or reinstall the extension for ${platformTriple()})`,
    };
  }
  try {
    // A computed path: esbuild leaves this require to run at runtime, outside the bundle.
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- the one load of the addon, by path
    const binding = require(file) as NativeBinding;
    if (typeof binding.version !== 'function' || typeof binding.Engine !== 'function') {
      return { ok: false, lookedFor: file, error: `${file} is not the Chokepoint engine (it exports no version() or Engine)` };
    }
    return { ok: true, binding, file };
  } catch (e) {
    return { ok: false, lookedFor: file, error: `cannot load the native engine from ${file}: ${(e as Error).message}` };
  }
}
