// The file tools' executors, on the real file system under the workspace root. They run only after
// the chain allowed the call; they still refuse any path that resolves outside the root (a read is not
// gated by intents, but the workspace is the agent's whole world).
import * as fs from 'fs';
import * as path from 'path';
import { applyBlocks, parseBlocks } from './applyDiff';

/** A tool's failure that goes back to the model as the tool result (not an exception of the loop). */
export class ToolError extends Error {}

const MAX_READ_BYTES = 1024 * 1024;
const MAX_LIST_ENTRIES = 2000;
const MAX_SEARCH_MATCHES = 200;
/** Folders a listing or search does not descend into: generated, vendored, or the engine's own. */
const SKIPPED = new Set(['.git', 'node_modules', 'target', 'dist', 'out']);

export class FileTools {
  constructor(readonly root: string) {}

  /** The absolute path of `relative`, refusing anything that leaves the root (also through `..`). */
  resolve(relative: string): string {
    const absolute = path.resolve(this.root, relative);
    const back = path.relative(this.root, absolute);
    if (back.startsWith('..') || path.isAbsolute(back)) throw new ToolError(`${relative} is outside the workspace`);
    return absolute;
  }

  readFile(args: { path: string; start_line?: number; end_line?: number }): string {
    const file = this.resolve(args.path);
    let stat: fs.Stats;
    try {
      stat = fs.statSync(file);
    } catch {
      throw new ToolError(`${args.path} does not exist`);
    }
    if (stat.isDirectory()) throw new ToolError(`${args.path} is a folder; use list_files`);
    if (stat.size > MAX_READ_BYTES && args.start_line === undefined) {
      throw new ToolError(`${args.path} is ${stat.size} bytes; read it in ranges with start_line and end_line`);
    }
    const lines = fs.readFileSync(file, 'utf8').split('\n');
    const from = (args.start_line ?? 1) - 1;
    const to = Math.min(args.end_line ?? lines.length, lines.length);
    if (from >= lines.length) throw new ToolError(`${args.path} has ${lines.length} lines; start_line ${args.start_line} is past its end`);
    return lines
      .slice(from, to)
      .map((l, i) => `${from + i + 1} | ${l}`)
      .join('\n');
  }

  listFiles(args: { path: string; recursive: boolean }): string {
    const dir = this.resolve(args.path);
    if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) throw new ToolError(`${args.path} is not a folder`);
    const out: string[] = [];
    const walk = (abs: string) => {
      for (const entry of fs.readdirSync(abs, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
        if (out.length >= MAX_LIST_ENTRIES) return;
        const rel = path.relative(this.root, path.join(abs, entry.name)).split(path.sep).join('/');
        out.push(entry.isDirectory() ? `${rel}/` : rel);
        if (args.recursive && entry.isDirectory() && !SKIPPED.has(entry.name)) walk(path.join(abs, entry.name));
      }
    };
    walk(dir);
    const more = out.length >= MAX_LIST_ENTRIES ? `\n(listing stopped at ${MAX_LIST_ENTRIES} entries)` : '';
    return (out.join('\n') || '(empty)') + more;
  }

  searchFiles(args: { path: string; regex: string; file_pattern?: string }): string {
    let re: RegExp;
    try {
      re = new RegExp(args.regex);
    } catch (e) {
      throw new ToolError(`invalid regular expression: ${(e as Error).message}`);
    }
    const nameFilter = args.file_pattern ? globToRegExp(args.file_pattern) : undefined;
    const start = this.resolve(args.path);
    const matches: string[] = [];
    const walk = (abs: string) => {
      for (const entry of fs.readdirSync(abs, { withFileTypes: true })) {
        if (matches.length >= MAX_SEARCH_MATCHES) return;
        const full = path.join(abs, entry.name);
        if (entry.isDirectory()) {
          if (!SKIPPED.has(entry.name) && entry.name !== '.orchestration') walk(full);
          continue;
        }
        if (!entry.isFile() || (nameFilter && !nameFilter.test(entry.name))) continue;
        const stat = fs.statSync(full);
        if (stat.size > MAX_READ_BYTES) continue;
        const text = fs.readFileSync(full, 'utf8');
        if (text.includes('\u0000')) continue; // binary
        const rel = path.relative(this.root, full).split(path.sep).join('/');
        text.split('\n').forEach((line, i) => {
          if (matches.length < MAX_SEARCH_MATCHES && re.test(line)) matches.push(`${rel}:${i + 1}: ${line.trim().slice(0, 200)}`);
        });
      }
    };
    if (fs.statSync(start).isDirectory()) walk(start);
    const more = matches.length >= MAX_SEARCH_MATCHES ? `\n(stopped at ${MAX_SEARCH_MATCHES} matches)` : '';
    return (matches.join('\n') || 'no matches') + more;
  }

  writeFile(args: { path: string; content: string }): string {
    const file = this.resolve(args.path);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const existed = fs.existsSync(file);
    writeAtomically(file, args.content);
    return `${existed ? 'replaced' : 'created'} ${args.path} (${args.content.split('\n').length} lines)`;
  }

  applyDiff(args: { path: string; diff: string }): string {
    const file = this.resolve(args.path);
    if (!fs.existsSync(file)) throw new ToolError(`${args.path} does not exist; create it with write_to_file`);
    let blocks;
    try {
      blocks = parseBlocks(args.diff);
    } catch (e) {
      throw new ToolError(`the diff is malformed: ${(e as Error).message}`);
    }
    let next: string;
    try {
      next = applyBlocks(fs.readFileSync(file, 'utf8'), blocks);
    } catch (e) {
      throw new ToolError(`${args.path} was not changed: ${(e as Error).message}`);
    }
    writeAtomically(file, next);
    return `applied ${blocks.length} block${blocks.length === 1 ? '' : 's'} to ${args.path}`;
  }
}

/** Writes through a temporary file and a rename, so a crash leaves the old or the new content, never half. */
function writeAtomically(file: string, content: string): void {
  const temp = path.join(path.dirname(file), `.${path.basename(file)}.chokepoint-${process.pid}.tmp`);
  fs.writeFileSync(temp, content);
  try {
    const mode = fs.existsSync(file) ? fs.statSync(file).mode : undefined;
    if (mode !== undefined) fs.chmodSync(temp, mode);
    fs.renameSync(temp, file);
  } catch (e) {
    fs.rmSync(temp, { force: true });
    throw e;
  }
}

function globToRegExp(glob: string): RegExp {
  const body = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${body}$`);
}
