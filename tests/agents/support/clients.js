// Runs the real agent CLIs (installed by scripts/agents.js) headless against a scripted model server,
// each in a private temporary HOME, never the real one. How each is made to run offline, and why:
// docs/agents/clients.md (and ../shared/docs/agents.md).
//
//   const server = await CLIENTS.claude.startServer({ script });
//   const r = await runAgent('claude', { workspace, prompt, serverUrl: server.url });
//   // r = { code, signal, timedOut, ms, stdout, stderr, events }
//
// Also, per client: where its project hooks and MCP servers are configured (writeHooks, writeMcp),
// the names of every hook event it has (hookEvents), and the tool calls a script uses for a write,
// an edit and a shell command (tools).
'use strict';
const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { AGENTS, installDir } = require('../../../scripts/agents');
const { startAnthropic } = require('./anthropic');
const { startOpenAI } = require('./openai');
const { startGemini } = require('./gemini');

const SUPPORT = __dirname;
const LOGHOOK = path.join(SUPPORT, 'loghook.js');
const MCP_STUB = path.join(SUPPORT, 'mcpStub.js');

/** The options of every client's writeHooks: `timeout` (seconds) is written into each hook when given.
 *  @typedef {{ timeout?: number }} WriteHooksOptions */
/** What writeHooks is given to name each event's hook command: null registers no hook for the event.
 *  @typedef {(event: string) => string | null} HookCommand */

/** A shell word: single-quoted unless plainly safe. */
function q(s) {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${String(s).replace(/'/g, `'\\''`)}'`;
}

/** The command line that runs loghook for one event (log file, event name, optional actions file). */
function loghookCommand(logFile, event, actionsFile) {
  return [process.execPath, LOGHOOK, logFile, event, ...(actionsFile ? [actionsFile] : [])].map(q).join(' ');
}

/** The MCP stub as a stdio server definition. */
function mcpStubServer(callsFile) {
  return { command: process.execPath, args: [MCP_STUB, ...(callsFile ? [callsFile] : [])] };
}

function writeJson(file, value) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

function readJson(file) {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return {};
  }
}

/** Merges `patch` into the JSON file (top-level keys). */
function mergeJson(file, patch) {
  writeJson(file, { ...readJson(file), ...patch });
}

/** Claude's hook format (Codex reads the same): { Event: [{ hooks: [{ type, command, timeout }] }] }.
 *  `command(event)` gives the command line, or null to leave that event out. */
function claudeStyleHooks(events, command, timeout) {
  const hooks = {};
  for (const e of events) {
    const c = command(e);
    if (c) hooks[e] = [{ hooks: [{ type: 'command', command: c, ...(timeout ? { timeout } : {}) }] }];
  }
  return hooks;
}

function tomlString(s) {
  return JSON.stringify(String(s));
}

function binOf(name) {
  return path.join(installDir(name), 'node_modules', '.bin', AGENTS[name].bin);
}

/** The base environment of every run: enough to find programs, nothing of the user's own set-up;
 *  `chokepoint` on PATH (the folder of PROGRAM first), as on a machine that installed it or in a
 *  terminal of VS Code with the extension: the settings `chokepoint init` writes name no path, and
 *  find it there. A run given its own PATH (`env`) replaces this one. */
function baseEnv(home) {
  const keep = ['LANG', 'LC_ALL', 'TERM', 'TZ'];
  const env = Object.fromEntries(keep.filter((k) => process.env[k] !== undefined).map((k) => [k, process.env[k]]));
  env.PATH = [path.dirname(PROGRAM), process.env.PATH].filter(Boolean).join(path.delimiter);
  return {
    ...env,
    HOME: home,
    USERPROFILE: home,
    TMPDIR: path.join(home, 'tmp'),
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_CACHE_HOME: path.join(home, '.cache'),
    XDG_DATA_HOME: path.join(home, '.local/share'),
    XDG_STATE_HOME: path.join(home, '.local/state'),
    NO_COLOR: '1',
    CI: '1',
  };
}

const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;

const CLIENTS = {
  claude: {
    vendor: 'anthropic',
    startServer: startAnthropic,
    hookEvents: [
      'PreToolUse',
      'PostToolUse',
      'PostToolUseFailure',
      'PostToolBatch',
      'Notification',
      'UserPromptSubmit',
      'UserPromptExpansion',
      'SessionStart',
      'SessionEnd',
      'Stop',
      'StopFailure',
      'SubagentStart',
      'SubagentStop',
      'PreCompact',
      'PostCompact',
      'PreModelSwitch',
      'PostModelSwitch',
      'PermissionRequest',
      'PermissionDenied',
      'Setup',
      'TeammateIdle',
      'TaskCreated',
      'TaskCompleted',
      'Elicitation',
      'ElicitationResult',
      'ConfigChange',
      'WorktreeCreate',
      'WorktreeRemove',
      'InstructionsLoaded',
      'CwdChanged',
      'FileChanged',
      'DirectoryAdded',
      'MessageDisplay',
    ],
    preToolUse: 'PreToolUse',
    /** @param {string} workspace @param {HookCommand} command @param {WriteHooksOptions} [options] */
    writeHooks(workspace, command, { timeout } = {}) {
      const file = path.join(workspace, '.claude/settings.json');
      mergeJson(file, { hooks: claudeStyleHooks(this.hookEvents, command, timeout) });
      return file;
    },
    writeMcp(workspace, servers) {
      writeJson(path.join(workspace, '.mcp.json'), { mcpServers: Object.fromEntries(Object.entries(servers).map(([n, s]) => [n, { type: 'stdio', ...s }])) });
      // A project's .mcp.json servers need approval; under -p there is no prompt, so approve them here.
      mergeJson(path.join(workspace, '.claude/settings.json'), { enableAllProjectMcpServers: true });
    },
    prepare({ home, serverUrl }) {
      const configDir = path.join(home, '.claude');
      fs.mkdirSync(configDir, { recursive: true });
      return {
        env: {
          ANTHROPIC_BASE_URL: serverUrl,
          ANTHROPIC_API_KEY: 'sk-ant-scripted',
          CLAUDE_CONFIG_DIR: configDir,
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
          DISABLE_TELEMETRY: '1',
          DISABLE_AUTOUPDATER: '1',
          DISABLE_ERROR_REPORTING: '1',
          ...(isRoot ? { IS_SANDBOX: '1' } : {}),
        },
        args: (prompt) => ['-p', prompt, '--output-format', 'stream-json', '--verbose', '--include-hook-events', '--permission-mode', 'bypassPermissions'],
      };
    },
    tools: {
      write: (ws, rel, content) => ({ name: 'Write', input: { file_path: path.join(ws, rel), content } }),
      edit: (ws, rel, oldText, newText) => ({ name: 'Edit', input: { file_path: path.join(ws, rel), old_string: oldText, new_string: newText } }),
      shell: (command) => ({ name: 'Bash', input: { command, description: 'Run a command' } }),
      // MCP tools are deferred behind ToolSearch: the model selects one before it can call it.
      mcp: (tool, input) => [
        { tools: [{ name: 'ToolSearch', input: { query: `select:mcp__chokepoint__${tool}`, max_results: 5 } }] },
        { tools: [{ name: `mcp__chokepoint__${tool}`, input }] },
      ],
      // A sub-agent in the foreground: its own model requests come next, then the main loop resumes.
      subagent: (steps) => [
        {
          tools: [
            {
              name: 'Agent',
              input: { description: 'Write a file', prompt: 'Write the file you are asked to.', subagent_type: 'general-purpose', run_in_background: false },
            },
          ],
        },
        ...steps,
        { text: 'Sub-agent done.' },
      ],
    },
  },

  codex: {
    vendor: 'openai',
    startServer: startOpenAI,
    model: 'gpt-5.5',
    hookEvents: [
      'SessionStart',
      'UserPromptSubmit',
      'PreToolUse',
      'PermissionRequest',
      'PostToolUse',
      'PreCompact',
      'PostCompact',
      'SubagentStart',
      'SubagentStop',
      'Stop',
      'SessionEnd',
    ],
    preToolUse: 'PreToolUse',
    /** @param {string} workspace @param {HookCommand} command @param {WriteHooksOptions} [options] */
    writeHooks(workspace, command, { timeout } = {}) {
      const file = path.join(workspace, '.codex/hooks.json');
      writeJson(file, { hooks: claudeStyleHooks(this.hookEvents, command, timeout) });
      return file;
    },
    writeMcp(workspace, servers) {
      // Codex reads MCP servers from config.toml: the user's (CODEX_HOME) and a trusted project's
      // .codex/config.toml. The project's is used here; runAgent marks the workspace trusted.
      const lines = [];
      for (const [n, s] of Object.entries(servers)) {
        lines.push(
          `[mcp_servers.${n}]`,
          `command = ${tomlString(s.command)}`,
          `args = [${(s.args || []).map(tomlString).join(', ')}]`,
          'startup_timeout_sec = 20',
          '',
        );
      }
      const file = path.join(workspace, '.codex/config.toml');
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.appendFileSync(file, `${lines.join('\n')}\n`);
    },
    prepare({ home, workspace, cwd = workspace, serverUrl }) {
      const codexHome = path.join(home, '.codex');
      fs.mkdirSync(codexHome, { recursive: true });
      const trusted = [...new Set([workspace, fs.realpathSync(workspace), cwd, fs.realpathSync(cwd)])];
      const config = [
        `model = ${tomlString(this.model)}`,
        'model_provider = "scripted"',
        'check_for_update_on_startup = false',
        '',
        '[model_providers.scripted]',
        'name = "scripted"',
        `base_url = ${tomlString(`${serverUrl}/v1`)}`,
        'wire_api = "responses"',
        'env_key = "SCRIPTED_API_KEY"',
        'request_max_retries = 0',
        'stream_max_retries = 0',
        '',
        ...trusted.flatMap((p) => [`[projects.${tomlString(p)}]`, 'trust_level = "trusted"', '']),
        '[analytics]',
        'enabled = false',
        '',
        '[otel]',
        'exporter = "none"',
        '',
      ];
      fs.writeFileSync(path.join(codexHome, 'config.toml'), config.join('\n'));
      return {
        env: { CODEX_HOME: codexHome, SCRIPTED_API_KEY: 'sk-scripted' },
        args: (prompt) => [
          'exec',
          '--json',
          '--color',
          'never',
          '--dangerously-bypass-approvals-and-sandbox',
          '--dangerously-bypass-hook-trust',
          '--skip-git-repo-check',
          '-C',
          cwd,
          prompt,
        ],
      };
    },
    tools: {
      write: (ws, rel, content) => ({
        name: 'apply_patch',
        input: `*** Begin Patch\n*** Add File: ${rel}\n${content
          .replace(/\n$/, '')
          .split('\n')
          .map((l) => `+${l}`)
          .join('\n')}\n*** End Patch\n`,
      }),
      edit: (ws, rel, oldText, newText) => ({
        name: 'apply_patch',
        input: `*** Begin Patch\n*** Update File: ${rel}\n@@\n-${oldText}\n+${newText}\n*** End Patch\n`,
      }),
      shell: (command) => ({ name: 'exec_command', input: { cmd: command } }),
      // MCP tools are deferred behind the client-executed tool_search; its answer exposes the
      // namespace mcp__chokepoint, whose functions are then called with `namespace` set.
      mcp: (tool, input) => [{ tools: [{ name: 'tool_search', input: { query: tool, limit: 8 } }] }, { tools: [{ name: `mcp__chokepoint__${tool}`, input }] }],
    },
  },

  gemini: {
    vendor: 'gemini',
    startServer: startGemini,
    hookEvents: [
      'SessionStart',
      'BeforeAgent',
      'BeforeModel',
      'AfterModel',
      'BeforeToolSelection',
      'BeforeTool',
      'AfterTool',
      'AfterAgent',
      'Notification',
      'PreCompress',
      'SessionEnd',
    ],
    preToolUse: 'BeforeTool',
    /** @param {string} workspace @param {HookCommand} command @param {WriteHooksOptions} [options] */
    writeHooks(workspace, command, { timeout } = {}) {
      const file = path.join(workspace, '.gemini/settings.json');
      const hooks = {};
      // Gemini's timeout is in milliseconds.
      for (const e of this.hookEvents) {
        const c = command(e);
        if (c) hooks[e] = [{ hooks: [{ type: 'command', name: `loghook-${e}`, command: c, ...(timeout ? { timeout: timeout * 1000 } : {}) }] }];
      }
      mergeJson(file, { hooks });
      return file;
    },
    writeMcp(workspace, servers) {
      mergeJson(path.join(workspace, '.gemini/settings.json'), {
        mcpServers: Object.fromEntries(Object.entries(servers).map(([n, s]) => [n, { ...s, trust: true, timeout: 20000 }])),
      });
    },
    prepare({ home, workspace, cwd = workspace, serverUrl }) {
      const dir = path.join(home, '.gemini');
      writeJson(path.join(dir, 'settings.json'), {
        security: { auth: { selectedType: 'gemini-api-key' }, folderTrust: { enabled: true } },
        privacy: { usageStatisticsEnabled: false },
        telemetry: { enabled: false },
        general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
      });
      writeJson(
        path.join(dir, 'trustedFolders.json'),
        Object.fromEntries([...new Set([workspace, fs.realpathSync(workspace), cwd, fs.realpathSync(cwd)])].map((p) => [p, 'TRUST_FOLDER'])),
      );
      return {
        env: { GEMINI_CLI_HOME: home, GEMINI_API_KEY: 'scripted-key', GOOGLE_GEMINI_BASE_URL: serverUrl, GEMINI_CLI_NO_RELAUNCH: 'true' },
        args: (prompt) => ['-p', prompt, '--yolo', '--output-format', 'stream-json'],
      };
    },
    tools: {
      write: (ws, rel, content) => ({ name: 'write_file', input: { file_path: path.join(ws, rel), content } }),
      edit: (ws, rel, oldText, newText) => ({
        name: 'replace',
        input: { file_path: path.join(ws, rel), old_string: oldText, new_string: newText, instruction: 'Edit the file.' },
      }),
      shell: (command) => ({ name: 'run_shell_command', input: { command, description: 'Run a command' } }),
      mcp: (tool, input) => [{ tools: [{ name: `mcp_chokepoint_${tool}`, input }] }],
      // The built-in `generalist` sub-agent: its own model requests come next (it ends with
      // `complete_task`), then the main loop resumes. Its tool calls reach the hooks with the
      // session's `session_id` and nothing that marks them as a sub-agent's (0.61).
      subagent: (steps) => [
        { tools: [{ name: 'invoke_agent', input: { agent_name: 'generalist', prompt: 'Write the file you are asked to.' } }] },
        ...steps,
        { tools: [{ name: 'complete_task', input: { result: 'Sub-agent done.' } }] },
      ],
    },
  },

  copilot: {
    vendor: 'anthropic',
    startServer: startAnthropic,
    model: 'claude-sonnet-4.5',
    hookEvents: [
      'sessionStart',
      'sessionEnd',
      'userPromptSubmitted',
      'userPromptTransformed',
      'preToolUse',
      'preMcpToolCall',
      'postToolUse',
      'postToolUseFailure',
      'errorOccurred',
      'agentStop',
      'subagentStart',
      'subagentStop',
      'preCompact',
      'permissionRequest',
      'notification',
    ],
    preToolUse: 'preToolUse',
    /** @param {string} workspace @param {HookCommand} command @param {WriteHooksOptions} [options] */
    writeHooks(workspace, command, { timeout } = {}) {
      const file = path.join(workspace, '.github/hooks/chokepoint.json');
      const hooks = {};
      for (const e of this.hookEvents) {
        const c = command(e);
        if (c) hooks[e] = [{ type: 'command', bash: c, ...(timeout ? { timeoutSec: timeout } : {}) }];
      }
      writeJson(file, { version: 1, hooks });
      return file;
    },
    writeMcp(workspace, servers) {
      writeJson(path.join(workspace, '.mcp.json'), {
        mcpServers: Object.fromEntries(Object.entries(servers).map(([n, s]) => [n, { type: 'stdio', tools: ['*'], ...s }])),
      });
    },
    prepare({ home, serverUrl }) {
      return {
        env: {
          COPILOT_HOME: path.join(home, '.copilot'),
          COPILOT_OFFLINE: 'true',
          COPILOT_AUTO_UPDATE: 'false',
          COPILOT_PROVIDER_BASE_URL: serverUrl,
          COPILOT_PROVIDER_TYPE: 'anthropic',
          COPILOT_PROVIDER_API_KEY: 'sk-ant-scripted',
          COPILOT_MODEL: this.model,
          // Exactly "true" also trusts the working directory, which loads its hooks and MCP servers.
          COPILOT_ALLOW_ALL: 'true',
          GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS: 'true',
          GITHUB_COPILOT_PROMPT_MODE_WORKSPACE_MCP: 'true',
        },
        args: (prompt) => ['-p', prompt, '--allow-all-tools', '--output-format', 'json', '--disable-client-telemetry', '--no-auto-update'],
      };
    },
    tools: {
      write: (ws, rel, content) => ({ name: 'create', input: { path: path.join(ws, rel), file_text: content } }),
      edit: (ws, rel, oldText, newText) => ({ name: 'edit', input: { path: path.join(ws, rel), old_str: oldText, new_str: newText } }),
      shell: (command) => ({ name: 'bash', input: { command, description: 'Run a command', mode: 'sync', initial_wait: 30 } }),
      mcp: (tool, input) => [{ tools: [{ name: `chokepoint-${tool}`, input }] }],
      subagent: (steps) => [
        {
          tools: [
            {
              name: 'task',
              input: { name: 'writer', description: 'Write a file', prompt: 'Write the file you are asked to.', agent_type: 'general-purpose', mode: 'sync' },
            },
          ],
        },
        ...steps,
        { text: 'Sub-agent done.' },
      ],
    },
  },
};

/** The clients the tests drive. */
const RUNNABLE = ['claude', 'codex', 'gemini', 'copilot'];

/** The `chokepoint` program the agents' hooks run: the release build, as every test of this layer
 *  uses; CHOKEPOINT_PROGRAM names another build (a debug one, or an older one to see a test fail). */
const PROGRAM = process.env.CHOKEPOINT_PROGRAM || path.join(__dirname, '../../../target/release/chokepoint');
/** The clients a test runs: every runnable one, or those CHOKEPOINT_AGENTS names (`codex,gemini`). */
const CHOSEN = process.env.CHOKEPOINT_AGENTS ? process.env.CHOKEPOINT_AGENTS.split(',') : RUNNABLE;

/** Parses the JSON lines of a CLI's stdout (the lines that are not JSON are skipped); a stdout that
 *  is one JSON document (several lines) is returned as one event. */
function parseEvents(stdout) {
  const events = [];
  for (const line of stdout.split('\n')) {
    const t = line.trim();
    if (!t.startsWith('{')) continue;
    try {
      events.push(JSON.parse(t));
    } catch {
      // not a whole JSON line
    }
  }
  if (events.length === 0) {
    try {
      events.push(JSON.parse(stdout));
    } catch {
      // no JSON at all
    }
  }
  return events;
}

/** Kills a process group we started (ignored when it is gone already). */
function killGroup(pid) {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // gone
  }
}

/**
 * Runs one headless session of a real client in `workspace` (started in its folder `cwd`, the
 * workspace itself unless given) against the scripted server at `serverUrl`, with a private
 * temporary HOME (deleted afterwards unless `keepHome`), killing the whole process group after
 * `timeoutMs`. Returns { code, signal, timedOut, ms, stdout, stderr, events, home }.
 *
 * @typedef {object} RunAgentOptions
 * @property {string} workspace the project the session works in
 * @property {string} [cwd] the folder the client starts in; `workspace` when not given
 * @property {string} prompt the one prompt of the headless session
 * @property {string} serverUrl the scripted model server the client talks to
 * @property {number} [timeoutMs] when the process group is killed
 * @property {Record<string, string>} [env] added to the client's environment
 * @property {boolean} [keepHome] keep the temporary HOME afterwards
 * @property {string} [home] a HOME to use instead of a fresh temporary one (then kept)
 * @param {string} name
 * @param {RunAgentOptions} options
 */
async function runAgent(name, { workspace, cwd = workspace, prompt, serverUrl, timeoutMs = 60000, env = {}, keepHome = false, home }) {
  const client = CLIENTS[name];
  if (!client) throw new Error(`unknown client \`${name}\`; the clients are ${Object.keys(CLIENTS).join(', ')}`);
  const bin = binOf(name);
  if (!fs.existsSync(bin)) throw new Error(`${AGENTS[name].pkg}@${AGENTS[name].version} is not installed (run node scripts/agents.js)`);
  const ownHome = !home;
  home = home || fs.mkdtempSync(path.join(os.tmpdir(), `chokepoint-${name}-home-`));
  fs.mkdirSync(path.join(home, 'tmp'), { recursive: true });
  const prepared = client.prepare.call(client, { home, workspace, cwd, serverUrl });
  const childEnv = { ...baseEnv(home), ...prepared.env, ...env };
  const started = Date.now();
  const child = spawn(bin, prepared.args(prompt), { cwd, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup(child.pid);
  }, timeoutMs);
  const { code, signal } = await new Promise((resolve) => {
    child.on('error', (e) => {
      stderr += String(e.message);
      resolve({ code: 127, signal: null });
    });
    child.on('close', (c, s) => resolve({ code: c, signal: s }));
  });
  clearTimeout(timer);
  // Whatever the client left behind in its group (an MCP server, a shell) ends with it.
  killGroup(child.pid);
  const ms = Date.now() - started;
  if (ownHome && !keepHome) fs.rmSync(home, { recursive: true, force: true, maxRetries: 3 });
  return { code, signal, timedOut, ms, stdout, stderr, events: parseEvents(stdout), home };
}

/** A fresh empty workspace folder (its real path: macOS-style /tmp links would differ from cwd). */
function makeWorkspace(name) {
  return fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), `chokepoint-${name}-ws-`)));
}

/** Reads a loghook log: one object per line. */
function readLog(file) {
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

module.exports = { CLIENTS, RUNNABLE, PROGRAM, CHOSEN, runAgent, makeWorkspace, readLog, loghookCommand, mcpStubServer, parseEvents, LOGHOOK, MCP_STUB };
