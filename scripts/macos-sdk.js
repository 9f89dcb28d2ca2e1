// The Apple frameworks the macOS builds link against, as text stubs, so that `cargo zigbuild` links
// the `chokepoint` program, the addon and the test programs for macOS on this Linux machine.
//
// Why stubs: zig brings macOS's C library, but not Apple's frameworks, and no package registry carries
// the macOS SDK. What a framework gives a linker is only its install name and the symbols it exports:
// a text-based stub (`.tbd`) says exactly that. The program then loads the real framework on the Mac,
// from its install name. The stubs name the symbols our dependencies call (rustls-native-certs reads
// the Keychain's roots through Security and CoreFoundation; whoami, under tokio-postgres, links
// SystemConfiguration); a dependency that calls one more makes the link fail with
// `undefined symbol: _X`, and that symbol goes in the list below.
'use strict';
const fs = require('fs');
const path = require('path');
const { ROOT } = require('./lib');

/** Each framework the build links, with the symbols of it that the linked code calls. */
const FRAMEWORKS = {
  CoreFoundation: [
    '_CFArrayCreate',
    '_CFArrayGetCount',
    '_CFArrayGetValueAtIndex',
    '_CFDataGetBytePtr',
    '_CFDataGetLength',
    '_CFDictionaryGetValueIfPresent',
    '_CFEqual',
    '_CFNumberGetValue',
    '_CFRelease',
    '_CFRetain',
    '_CFStringCreateWithBytesNoCopy',
    '_CFStringGetBytes',
    '_CFStringGetCStringPtr',
    '_CFStringGetLength',
    '_kCFAllocatorDefault',
    '_kCFAllocatorNull',
    '_kCFTypeArrayCallBacks',
  ],
  Security: ['_SecCertificateCopyData', '_SecCopyErrorMessageString', '_SecTrustSettingsCopyCertificates', '_SecTrustSettingsCopyTrustSettings'],
  // Linked by whoami, none of whose calls into it survive dead-code stripping.
  SystemConfiguration: [],
};

/** The text stub of one framework, for both Mac architectures. */
function tbd(name, symbols) {
  const targets = '[ x86_64-macos, arm64-macos ]';
  // A stub with no symbol is refused by the linker: an unused marker stands in for the empty list.
  const exported = symbols.length ? symbols : [`_chokepoint_no_symbol_of_${name}`];
  return [
    '--- !tapi-tbd',
    'tbd-version:     4',
    `targets:         ${targets}`,
    `install-name:    '/System/Library/Frameworks/${name}.framework/Versions/A/${name}'`,
    'exports:',
    `  - targets:         ${targets}`,
    `    symbols:         [ ${exported.join(', ')} ]`,
    '...',
    '',
  ].join('\n');
}

/** Writes the stubs (again, when they changed) and returns the folder to give as `SDKROOT`. */
function macosSdk() {
  const root = path.join(ROOT, 'target', 'macos-sdk');
  for (const [name, symbols] of Object.entries(FRAMEWORKS)) {
    const dir = path.join(root, 'System/Library/Frameworks', `${name}.framework`);
    const file = path.join(dir, `${name}.tbd`);
    const text = tbd(name, symbols);
    if (fs.existsSync(file) && fs.readFileSync(file, 'utf8') === text) continue;
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(file, text);
  }
  fs.mkdirSync(path.join(root, 'usr/lib'), { recursive: true });
  return root;
}

/** The symbols a failed link could not find, from the linker's output: what to add to FRAMEWORKS. */
function undefinedSymbols(output) {
  return [...new Set([...output.matchAll(/undefined symbol: (_\w+)/g)].map((m) => m[1]))];
}

module.exports = { macosSdk, undefinedSymbols, FRAMEWORKS };
