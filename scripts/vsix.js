// What a packed .vsix holds, read without unpacking it: the platform its manifest targets, its files,
// and for the engine and the program, what machine code they are (ELF, Mach-O or PE, and for which
// processor). The platforms layer checks each platform's .vsix with it: the right engine and program
// for its target, and no other platform's.
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
  const code = (e) => ({ name: e.name, code: machineCode(e.read()) });
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
      }
    }
  };
  check('engine', found.engines, `extension/native/node/chokepoint.${platform.addon}.node`);
  check('program', found.programs, `extension/bin/${platform.program}`);
  return out;
}

module.exports = { inspect, problems, machineCode, expectedCode, entries };
