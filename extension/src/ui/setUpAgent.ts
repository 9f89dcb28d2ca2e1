// "Chokepoint: Set Up Another Agent…": the same set-up as `chokepoint init --agent <agent>`, from a
// picker. The plan and the merge live in the core; this runs the `chokepoint` program the extension
// ships (bin/chokepoint in the .vsix; target/release/chokepoint in a development checkout), then
// offers `chokepoint doctor`. The files it writes name no path: their hooks find that program on
// PATH or by the pointer the extension writes at activation (engine/findable.ts). scripts/package.js copies the program into
// the .vsix's bin/.
import { execFile } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import type { Log } from '../host/log';
import { PROGRAM } from '../engine/findable';

/** The agents `chokepoint init` sets up, as the picker shows them. */
export const AGENTS = [
  { id: 'claude', label: 'Claude Code', detail: '.claude/settings.json and .mcp.json' },
  { id: 'codex', label: 'Codex CLI', detail: '.codex/hooks.json and .codex/config.toml (review the hooks in Codex afterwards)' },
  { id: 'gemini', label: 'Gemini CLI', detail: '.gemini/settings.json (trust the folder in Gemini CLI)' },
  { id: 'copilot', label: 'Copilot CLI', detail: '.github/hooks/chokepoint.json and .mcp.json' },
  { id: 'cursor', label: 'Cursor', detail: '.cursor/hooks.json and .cursor/mcp.json' },
  {
    id: 'vscode',
    label: 'VS Code\u2019s agent (Chat view)',
    detail: '.github/hooks/chokepoint.json (shared with Copilot CLI); the intent tools come from this extension',
  },
] as const;

export type AgentId = (typeof AGENTS)[number]['id'];

/** What the command did, for the caller (the integration tests) and the log. */
export interface SetUpResult {
  ok: boolean;
  agent?: AgentId;
  output: string;
}

/** The `chokepoint` program: shipped in the .vsix, or built in a development checkout. */
export function chokepointProgram(extensionPath: string): string | undefined {
  const candidates = [path.join(extensionPath, 'bin', PROGRAM), path.join(extensionPath, 'target', 'release', PROGRAM)];
  return candidates.find((p) => fs.existsSync(p));
}

function run(program: string, args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(program, args, { timeout: 120_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, output: `${stdout}${stderr}`.trim() || (error ? error.message : '') });
    });
  });
}

/** Sets `agent` up (asking which one when not given) in the first workspace folder. */
export async function setUpAgent(extensionPath: string, log: Log, agent?: string): Promise<SetUpResult> {
  const folder = vscode.workspace.workspaceFolders?.[0];
  if (!folder) {
    void vscode.window.showErrorMessage('Chokepoint: open the workspace folder to set an agent up in.');
    return { ok: false, output: 'no workspace folder is open' };
  }
  const program = chokepointProgram(extensionPath);
  if (!program) {
    const message = `Chokepoint: the chokepoint program is missing (looked for bin/chokepoint and target/release/chokepoint in ${extensionPath}); reinstall the extension, or run npm run build in a checkout.`;
    log.error(message);
    void vscode.window.showErrorMessage(message);
    return { ok: false, output: message };
  }
  let id = AGENTS.find((a) => a.id === agent)?.id;
  if (agent !== undefined && !id) return { ok: false, output: `unknown agent \`${agent}\`; known: ${AGENTS.map((a) => a.id).join(', ')}` };
  if (!id) {
    const picked = await vscode.window.showQuickPick(
      AGENTS.map((a) => ({ label: a.label, description: a.id, detail: `Writes ${a.detail}`, id: a.id })),
      { title: 'Set up another agent to be governed by Chokepoint', placeHolder: 'Which agent works in this workspace?' },
    );
    if (!picked) return { ok: false, output: 'cancelled' };
    id = picked.id;
  }
  const label = AGENTS.find((a) => a.id === id)!.label;
  const init = await run(program, ['init', '--agent', id, '--workspace', folder.uri.fsPath]);
  log.info(`chokepoint init --agent ${id}:\n${init.output}`);
  if (init.code !== 0) {
    void vscode.window.showErrorMessage(`Chokepoint could not set ${label} up: ${init.output.split('\n')[0]}`, 'Show Log').then((a) => a && log.channel.show());
    return { ok: false, agent: id, output: init.output };
  }
  void vscode.window.showInformationMessage(`Chokepoint governs ${label} in this workspace now.`, 'Run Doctor', 'Show Log').then(async (action) => {
    if (action === 'Show Log') log.channel.show();
    if (action !== 'Run Doctor') return;
    const doctor = await run(program, ['doctor', '--workspace', folder.uri.fsPath]);
    log.info(`chokepoint doctor:\n${doctor.output}`);
    log.channel.show();
  });
  return { ok: true, agent: id, output: init.output };
}
