// The trace ledger of a workspace as the tests read it: the legacy `agent_trace.jsonl` when present,
// then each chain of `.orchestration/trace/` in the order they began (ledger/chains.rs; the Rust
// tests' `chains::all_lines`). Plain reads, no test hooks: the VS Code tests bundle it too.
'use strict';
const fs = require('fs');
const path = require('path');

/** A chain's file name as the core makes them: `<yyyymmddThhmmssZ>-<8 hex>.jsonl`. */
const CHAIN_FILE = /^\d{8}T\d{6}Z-[0-9a-f]{8}\.jsonl$/;

/** The ledger's files of `dir`, in reading order. */
function ledgerFiles(dir) {
  const sidecar = path.join(dir, '.orchestration');
  const files = [];
  if (fs.existsSync(path.join(sidecar, 'agent_trace.jsonl'))) files.push(path.join(sidecar, 'agent_trace.jsonl'));
  const folder = path.join(sidecar, 'trace');
  if (fs.existsSync(folder))
    files.push(
      ...fs
        .readdirSync(folder)
        .filter((n) => CHAIN_FILE.test(n))
        .sort()
        .map((n) => path.join(folder, n)),
    );
  return files;
}

/** Every line of `dir`'s ledger, front to back, chain after chain. */
function ledgerLines(dir) {
  return ledgerFiles(dir).flatMap((f) => fs.readFileSync(f, 'utf8').split('\n').filter(Boolean));
}

/** The records of `dir`'s ledger, parsed, in `ledgerLines`' order. */
function ledgerRecords(dir) {
  return ledgerLines(dir).map((l) => JSON.parse(l));
}

/** The ledger's size in bytes, all files together: grows with every record. */
function ledgerSize(dir) {
  return ledgerFiles(dir).reduce((n, f) => n + fs.statSync(f).size, 0);
}

module.exports = { ledgerLines, ledgerRecords, ledgerSize };
