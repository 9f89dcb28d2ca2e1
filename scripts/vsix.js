// What a packed .vsix holds, read without unpacking it: the platform its manifest targets, its files,
// and for the engine and the program, what machine code they are (ELF, Mach-O or PE, and for which
// processor), and for Windows and macOS what libraries they load at start (each loader looks for
// them by name before any of our code runs, so a wrong one is a .vsix that fails on every machine)
// and whether an Apple silicon binary is signed. The platforms
// layer checks each platform's .vsix with it: the right engine and program for its target, and no
// other platform's.
'use strict';
const fs = require('fs');
const zlib = require('zlib');

/** Every entry of a zip file: its name and a way to read its bytes. */
function entries(file) {
  const zip = fs.readFileSync(file);
  // The end of central directory record: its signature, searched from the end (a comment may follow).
  let end = zip.length - 22;
  while (end >= 0 && zip.readUInt32LE(end) !== 0x06054b50) end -= 1;
  if (end < 0) throw new Error(`${file} is not a zip file`);
  const count = zip.readUInt16LE(end + 10);
  let at = zip.readUInt32LE(end + 16);
  const out = [];
  for (let i = 0; i < count; i += 1) {
    if (zip.readUInt32LE(at) !== 0x02014b50) throw new Error(`${file}: a damaged central directory`);
    const method = zip.readUInt16LE(at + 10);
    const compressed = zip.readUInt32LE(at + 20);
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    const local = zip.readUInt32LE(at + 42);
    const name = zip.toString('utf8', at + 46, at + 46 + nameLength);
    out.push({
      name,
      read: () => {
        const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
        const data = zip.subarray(start, start + compressed);
        return method === 0 ? data : zlib.inflateRawSync(data);
      },
    });
    at += 46 + nameLength + extraLength + commentLength;
  }
  return out;
}

/** The kind of machine code in `bytes`: `{ format, arch }`, or null for anything else. */
function machineCode(bytes) {
  if (bytes.length >= 20 && bytes.readUInt32BE(0) === 0x7f454c46) {
    const arch = { 62: 'x64', 183: 'arm64' }[bytes.readUInt16LE(18)] ?? `elf-machine-${bytes.readUInt16LE(18)}`;
    return { format: 'elf', arch };
  }
  if (bytes.length >= 8 && bytes.readUInt32LE(0) === 0xfeedfacf) {
    const arch = { 0x01000007: 'x64', 0x0100000c: 'arm64' }[bytes.readUInt32LE(4)] ?? `mach-cpu-${bytes.readUInt32LE(4)}`;
    return { format: 'mach-o', arch };
  }
  if (bytes.length >= 64 && bytes.toString('latin1', 0, 2) === 'MZ') {
    const pe = bytes.readUInt32LE(60);
    if (bytes.length >= pe + 6 && bytes.toString('latin1', pe, pe + 4) === 'PE\0\0') {
      const arch = { 0x8664: 'x64', 0xaa64: 'arm64' }[bytes.readUInt16LE(pe + 4)] ?? `pe-machine-${bytes.readUInt16LE(pe + 4)}`;
      return { format: 'pe', arch };
    }
  }
  return null;
}

/**
 * What a PE file (a Windows .exe or DLL; the addon is a DLL) imports and exports: the DLL names of its
 * import and delay-import tables, and the names it exports. Null for anything that is not PE32+.
 * @param {Buffer} bytes
 * @returns {{ imports: string[], exports: string[] } | null}
 */
function peLinks(bytes) {
  if (machineCode(bytes)?.format !== 'pe') return null;
  const pe = bytes.readUInt32LE(60);
  const sections = bytes.readUInt16LE(pe + 6);
  const optional = pe + 24;
  if (bytes.readUInt16LE(optional) !== 0x20b) return null;
  const sectionTable = optional + bytes.readUInt16LE(pe + 20);
  /** A relative virtual address as an offset into the file, through the section that holds it. */
  const offset = (rva) => {
    for (let i = 0; i < sections; i += 1) {
      const at = sectionTable + i * 40;
      const va = bytes.readUInt32LE(at + 12);
      const size = Math.max(bytes.readUInt32LE(at + 8), bytes.readUInt32LE(at + 16));
      if (rva >= va && rva < va + size) return rva - va + bytes.readUInt32LE(at + 20);
    }
    throw new Error(`a PE address 0x${rva.toString(16)} in no section`);
  };
  const text = (rva) => {
    const start = offset(rva);
    return bytes.toString('latin1', start, bytes.indexOf(0, start));
  };
  const directories = bytes.readUInt32LE(optional + 108);
  const directory = (index) => (index < directories ? bytes.readUInt32LE(optional + 112 + index * 8) : 0);
  const imports = [];
  // The import table (directory 1): 20-byte descriptors, the DLL's name at +12, ended by zeroes.
  // The delay-import table (13): 32-byte descriptors, the name at +4.
  for (const [index, size, nameAt] of [
    [1, 20, 12],
    [13, 32, 4],
  ]) {
    const rva = directory(index);
    if (rva === 0) continue;
    for (let at = offset(rva); bytes.readUInt32LE(at + nameAt) !== 0; at += size) imports.push(text(bytes.readUInt32LE(at + nameAt)));
  }
  const exports = [];
  const table = directory(0);
  if (table !== 0) {
    const at = offset(table);
    const names = offset(bytes.readUInt32LE(at + 32));
    for (let i = 0; i < bytes.readUInt32LE(at + 24); i += 1) exports.push(text(bytes.readUInt32LE(names + i * 4)));
  }
  return { imports, exports };
}

/**
 * What is wrong with how a Windows engine or program links, `links` read by peLinks: a DLL it imports
 * that a Windows machine does not have. Node's own (`node.exe`, `node.dll`, `libnode.dll`): Node-API
 * is the host process's, and in VS Code that process is `Code.exe`, so an addon importing Node by a
 * file name does not load there (native/node/build.rs says how the addon finds it instead). MinGW's
 * runtime (`libgcc_s_seh-1.dll`, `libwinpthread-1.dll`, `libstdc++-6.dll`: the `lib*.dll` names):
 * linked statically, or the program does not start. An engine must also export
 * `napi_register_module_v1`, which Node calls to load it.
 * @param {{ imports: string[], exports: string[] }} links
 * @param {'engine' | 'program'} kind
 */
function peProblems(links, kind) {
  const out = [];
  for (const dll of links.imports) {
    if (/^(node|libnode)\.(exe|dll)$/i.test(dll)) out.push(`imports ${dll}: Node-API must be looked up in the host process, which in VS Code is Code.exe`);
    else if (/^lib.*\.dll$/i.test(dll)) out.push(`imports ${dll}, which Windows does not have (MinGW's runtime is linked statically)`);
  }
  if (kind === 'engine' && !links.exports.includes('napi_register_module_v1'))
    out.push('exports no napi_register_module_v1, which Node calls to load an addon');
  return out;
}

/** Mach-O's load commands that name a library loaded at start (`LC_LOAD_DYLIB` and its weak, re-exported,
 *  lazy and upward kinds), and the one that carries the code signature (`LC_CODE_SIGNATURE`). */
const LOAD_DYLIB = new Set([0xc, 0x80000018, 0x8000001f, 0x20, 0x80000023]);
const CODE_SIGNATURE = 0x1d;

/**
 * What a 64-bit Mach-O file (a macOS program or addon) loads and whether it is signed: the install
 * names of the libraries it loads at start, and whether it carries a code signature. Null for anything
 * else.
 * @param {Buffer} bytes
 * @returns {{ loads: string[], signed: boolean } | null}
 */
function machoLinks(bytes) {
  if (machineCode(bytes)?.format !== 'mach-o') return null;
  const loads = [];
  let signed = false;
  let at = 32;
  for (let i = 0; i < bytes.readUInt32LE(16); i += 1) {
    const cmd = bytes.readUInt32LE(at);
    if (cmd === CODE_SIGNATURE) signed = true;
    if (LOAD_DYLIB.has(cmd)) {
      const name = at + bytes.readUInt32LE(at + 8);
      loads.push(bytes.toString('latin1', name, bytes.indexOf(0, name)));
    }
    at += bytes.readUInt32LE(at + 4);
  }
  return { loads, signed };
}

/**
 * What is wrong with how a macOS engine or program links, `links` read by machoLinks: a library it
 * loads from outside `/usr/lib/` and `/System/Library/` (what every Mac has; anything else is a path
 * of the machine that built it), and on Apple silicon no code signature (macOS kills arm64 code
 * without one; zig's linker signs ad hoc).
 * @param {{ loads: string[], signed: boolean }} links
 * @param {string} arch
 */
function machoProblems(links, arch) {
  const out = links.loads.filter((l) => !l.startsWith('/usr/lib/') && !l.startsWith('/System/Library/')).map((l) => `loads ${l}, which is not part of macOS`);
  if (arch === 'arm64' && !links.signed) out.push('has no code signature, without which macOS on Apple silicon does not run it');
  return out;
}

/** The machine code each VS Code platform runs: format and processor. */
function expectedCode(platform) {
  const [os, arch] = platform.split('-');
  return { format: { linux: 'elf', darwin: 'mach-o', win32: 'pe' }[os], arch };
}

/**
 * What `file` (a .vsix) holds: the platform in its manifest, its file names, and the machine code
 * of its engines (`extension/native/node/*.node`) and programs (`extension/bin/*`).
 */
function inspect(file) {
  const all = entries(file);
  const manifest = all.find((e) => e.name === 'extension.vsixmanifest');
  const target = manifest ? /TargetPlatform="([^"]+)"/.exec(manifest.read().toString('utf8'))?.[1] : undefined;
  const code = (e) => {
    const bytes = e.read();
    const links = peLinks(bytes) ?? machoLinks(bytes);
    return { name: e.name, code: machineCode(bytes), ...(links ? { links } : {}) };
  };
  return {
    target,
    files: all.map((e) => e.name),
    engines: all.filter((e) => /^extension\/native\/node\/[^/]+\.node$/.test(e.name)).map(code),
    programs: all.filter((e) => /^extension\/bin\/[^/]+$/.test(e.name)).map(code),
  };
}

/**
 * What is wrong with `file` as the .vsix of `platform` (a scripts/toolchains.js platform): its manifest
 * targets that platform, it carries exactly one engine and one program, named as the extension looks
 * for them there, each machine code of that platform's format and processor, and nothing of another
 * platform's. Empty when it is right.
 */
function problems(file, platform) {
  const found = inspect(file);
  const want = expectedCode(platform.name);
  const out = [];
  if (found.target !== platform.name) out.push(`its manifest targets ${found.target ?? 'no platform'}, not ${platform.name}`);
  const check = (kind, list, name) => {
    if (list.length !== 1 || list[0].name !== name) out.push(`it carries ${list.map((e) => e.name).join(', ') || `no ${kind}`}, not just ${name}`);
    for (const e of list) {
      if (!e.code || e.code.format !== want.format || e.code.arch !== want.arch) {
        out.push(`${e.name} is ${e.code ? `${e.code.format} ${e.code.arch}` : 'not machine code'}, not ${want.format} ${want.arch}`);
      } else if (e.links && 'imports' in e.links) {
        for (const p of peProblems(e.links, kind)) out.push(`${e.name} ${p}`);
      } else if (e.links && 'loads' in e.links) {
        for (const p of machoProblems(e.links, want.arch)) out.push(`${e.name} ${p}`);
      }
    }
  };
  check('engine', found.engines, `extension/native/node/chokepoint.${platform.addon}.node`);
  check('program', found.programs, `extension/bin/${platform.program}`);
  return out;
}

module.exports = { inspect, problems, machineCode, expectedCode, entries, peLinks, peProblems, machoLinks, machoProblems };
