#!/usr/bin/env node
// The real agent CLIs that `chokepoint hook --agent …` is proven against, installed from npm at pinned
// versions into the cache folder (<CACHE>/agents/<pkg>@<version>/), once. Used by the agents test
// layer (tests/agents) and by tests/agents/capture.js. `node scripts/agents.js` installs them and
// prints what is there. How each one runs offline: docs/agents/clients.md.
'use strict';
const fs = require('fs');
const path = require('path');
const { log, run, envWithoutNpm } = require('./lib');
const { CACHE } = require('./vscode');

/** The pinned clients. Move a version here (and re-run tests/agents/capture.js) on purpose only. */
const AGENTS = {
  claude: { pkg: '@anthropic-ai/claude-code', version: '2.1.331', bin: 'claude' },
  codex: { pkg: '@openai/codex', version: '0.169.0', bin: 'codex' },
  gemini: { pkg: '@google/gemini-cli', version: '0.61.0', bin: 'gemini' },
  // Runs offline without a GitHub sign-in through its BYOK provider variables (docs/agents/clients.md).
  copilot: { pkg: '@github/copilot', version: '1.0.102', bin: 'copilot' },
};

const AGENTS_CACHE = path.join(CACHE, 'agents');

function installDir(name) {
  const a = AGENTS[name];
  return path.join(AGENTS_CACHE, `${a.pkg.replace('/', '+')}@${a.version}`);
}

function binPath(name) {
  return path.join(installDir(name), 'node_modules', '.bin', AGENTS[name].bin);
}

/** The version of the package actually installed in `dir`, or null. */
function installedVersion(name) {
  try {
    const pj = path.join(installDir(name), 'node_modules', AGENTS[name].pkg, 'package.json');
    return JSON.parse(fs.readFileSync(pj, 'utf8')).version;
  } catch {
    return null;
  }
}

/** Installs one client unless its pinned version is already there; returns { bin, version }. */
async function ensureAgent(name) {
  const a = AGENTS[name];
  if (!a) throw new Error(`unknown agent \`${name}\`; the agents are ${Object.keys(AGENTS).join(', ')}`);
  const dir = installDir(name);
  if (installedVersion(name) === a.version && fs.existsSync(binPath(name))) return { bin: binPath(name), version: a.version };
  log('agents', `installing ${a.pkg}@${a.version} into ${dir}`);
  // Install into a scratch folder and move it in place, so an interrupted install is never mistaken
  // for a finished one on the next run. The packages' install scripts fetch nothing we need (their
  // native binaries come as optional dependencies), so scripts run as npm decides.
  const partial = `${dir}.partial`;
  fs.rmSync(partial, { recursive: true, force: true });
  fs.mkdirSync(partial, { recursive: true });
  try {
    await run('npm', ['install', '--prefix', partial, '--no-save', '--no-audit', '--no-fund', '--loglevel=error', `${a.pkg}@${a.version}`], {
      env: envWithoutNpm(),
      cwd: partial,
    });
  } catch (e) {
    fs.rmSync(partial, { recursive: true, force: true });
    throw new Error(`could not install the agent CLI ${a.pkg}@${a.version} from npm: ${e.message}`);
  }
  fs.rmSync(dir, { recursive: true, force: true });
  fs.renameSync(partial, dir);
  const version = installedVersion(name);
  if (version !== a.version || !fs.existsSync(binPath(name))) {
    throw new Error(`installing ${a.pkg}@${a.version} left no ${a.bin} executable (found version ${version}) in ${dir}`);
  }
  log('agents', `installed ${a.pkg}@${version}`);
  return { bin: binPath(name), version };
}

/** Installs the pinned clients (all of them, or `only` those named). Returns
 *  { claude: { bin, version }, codex: …, gemini: …, copilot: … }. Fails naming the package that could
 *  not be installed.
 *  @param {{ only?: string[] }} [options] */
async function ensureAgents({ only } = {}) {
  const names = only || Object.keys(AGENTS);
  const out = {};
  for (const name of names) out[name] = await ensureAgent(name);
  return out;
}

module.exports = { AGENTS, AGENTS_CACHE, ensureAgents, ensureAgent, installDir };

if (require.main === module) {
  ensureAgents()
    .then((agents) => {
      for (const [name, a] of Object.entries(agents)) log('agents', `${name.padEnd(8)} ${AGENTS[name].pkg}@${a.version}  ${a.bin}`);
    })
    .catch((e) => {
      console.error(`error: ${e.message}`);
      process.exit(1);
    });
}
