// Makes the `chokepoint` program this extension ships findable by the agents it sets up. The
// settings `chokepoint init` writes are committed and name no machine's path: their hooks and MCP
// server find `chokepoint` at run time ($CHOKEPOINT_PROGRAM, then PATH, then a per-user pointer;
// native/core/src/agents/portable.rs), and block with a fix when they find none. So, on activation:
// - its folder goes first on PATH for VS Code's terminals (an agent started there, Claude Code or
//   Codex in the integrated terminal) and for this extension host's own child processes;
// - its absolute path is written to the pointer `$XDG_STATE_HOME/chokepoint/program` (else
//   `~/.local/state/chokepoint/program`), which the guard reads when an agent runs outside VS Code
//   (another terminal, VS Code's Chat hooks wherever VS Code spawns them), and which stays true
//   until another version of the extension, activated, rewrites it.
// No `vscode` here: the caller hands in VS Code's environment collection (plain Node tests this: tests/unit/findable.test.ts runs
// the real guard against it).
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

/** The part of VS Code's `EnvironmentVariableCollection` used here. */
export interface PathPrepender {
  prepend(variable: string, value: string): void;
}

/** The program's file name on this platform. */
export const PROGRAM = process.platform === 'win32' ? 'chokepoint.exe' : 'chokepoint';

/** The pointer file's path relative to the state home: `agents::portable::POINTER`. */
export const POINTER = path.join('chokepoint', 'program');

/** Where the pointer goes: under `$XDG_STATE_HOME` when it is absolute, else `~/.local/state`. */
export function pointerFile(env: NodeJS.ProcessEnv = process.env, home = os.homedir()): string {
  const state = env.XDG_STATE_HOME && path.isAbsolute(env.XDG_STATE_HOME) ? env.XDG_STATE_HOME : path.join(env.HOME || home, '.local', 'state');
  return path.join(state, POINTER);
}

/** What was done, for the log. */
export interface Findable {
  /** The folder put first on PATH. */
  folder: string;
  /** The pointer written (or already true), or why it could not be. */
  pointer: { file: string; written: boolean } | { file: string; error: string };
}

/** `program`'s folder first on PATH (terminals through `terminals`, this process's children through
 *  `env`), and the pointer naming `program`, replaced in one step (a guard reading it meanwhile sees
 *  the old path or the new one, never half). Windows is left out: the guard is POSIX `sh`. */
export function makeFindable(program: string, terminals: PathPrepender | undefined, env: NodeJS.ProcessEnv = process.env): Findable | undefined {
  if (process.platform === 'win32') return undefined;
  const folder = path.dirname(program);
  terminals?.prepend('PATH', `${folder}${path.delimiter}`);
  const entries = (env.PATH ?? '').split(path.delimiter);
  if (entries[0] !== folder) env.PATH = [folder, ...entries.filter((e) => e !== folder && e !== '')].join(path.delimiter);
  const file = pointerFile(env);
  try {
    if (fs.existsSync(file) && fs.readFileSync(file, 'utf8').trim() === program) return { folder, pointer: { file, written: false } };
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    const temp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(temp, `${program}\n`, { mode: 0o644 });
    fs.renameSync(temp, file);
    return { folder, pointer: { file, written: true } };
  } catch (e) {
    return { folder, pointer: { file, error: (e as Error).message } };
  }
}
