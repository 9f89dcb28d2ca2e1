#!/usr/bin/env node
// Checks, against the real clients, what their hooks do with each kind of answer (the table in
// docs/agents/clients.md): exit 2, a JSON deny, a rewrite of a shell command, SessionStart context,
// and the failures (exit 1, a timeout, garbage on stdout). About a minute per client.
//
//   node tests/agents/probe.js [claude codex gemini copilot] [--only deny2,json,rewrite,context,exit1,timeout,garbage]
'use strict';
const { ensureAgents } = require('../../scripts/agents');
const { log } = require('../../scripts/lib');
const { CLIENTS } = require('./support/clients');
const checks = require('./support/checks');

const ALL = {
  deny2: (n) => checks.checkDenyExit2(n),
  json: (n) => checks.checkDenyJson(n),
  rewrite: (n) => checks.checkRewrite(n),
  context: (n) => checks.checkSessionContext(n),
  exit1: (n) => checks.checkFailOpen(n, 'exit1'),
  timeout: (n) => checks.checkFailOpen(n, 'timeout'),
  garbage: (n) => checks.checkFailOpen(n, 'garbage'),
};

async function main() {
  const args = process.argv.slice(2);
  const onlyAt = args.indexOf('--only');
  const only = onlyAt >= 0 ? args.splice(onlyAt, 2)[1].split(',') : Object.keys(ALL);
  const names = args.length ? args : Object.keys(CLIENTS);
  await ensureAgents({ only: names });
  const out = {};
  for (const name of names) {
    out[name] = {};
    for (const k of only) {
      const res = await ALL[k](name);
      out[name][k] = res;
      log('probe', `${name} ${k}: ${JSON.stringify(res)}`);
    }
  }
  console.log(JSON.stringify(out, null, 2));
}

main().catch((e) => {
  console.error(`error: ${e.stack || e.message}`);
  process.exit(1);
});
