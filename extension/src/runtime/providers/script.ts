// The script a ScriptedModelServer replays: its type, derived from one zod schema, and the validation
// that turns a bad script into an error naming the step. Objects are strict: a misspelt `toolcalls`
// would otherwise be dropped silently and the step would answer with nothing.
import { readFile } from 'node:fs/promises';
import { z } from 'zod';

const ScriptToolCall = z.strictObject({
  name: z.string().min(1),
  /** An object is sent as its JSON text; a string is sent as is (so a script can send invalid JSON). */
  arguments: z.union([z.record(z.string(), z.unknown()), z.string()]),
  id: z.string().min(1).optional(),
});

const ScriptStep = z
  .strictObject({
    text: z.string().optional(),
    toolCalls: z.array(ScriptToolCall).optional(),
    /** `malformed`: a chunk that is not JSON; `drop`: the socket destroyed mid-stream; `http500`: a 500. */
    fault: z.enum(['malformed', 'drop', 'http500']).optional(),
    /** A pause before the answer starts, to give a test time to cancel or the demo time to show "thinking". */
    delayMs: z.number().int().min(0).max(600_000).optional(),
    /** What the request must hold for this step to answer; otherwise it answers HTTP 400 saying so. */
    expect: z
      .strictObject({
        lastMessageIncludes: z.string().optional(),
        anyMessageIncludes: z.string().optional(),
      })
      .optional(),
  })
  .refine((s) => s.text !== undefined || s.toolCalls?.length || s.fault, { message: 'a step needs text, toolCalls or a fault' });

export const Script = z.strictObject({
  /** The model id the server reports and the provider records in the trace. */
  model: z.string().min(1),
  contextTokens: z.number().int().positive().optional(),
  steps: z.array(ScriptStep),
});

export type Script = z.infer<typeof Script>;
export type ScriptStep = z.infer<typeof ScriptStep>;
export type ScriptToolCall = z.infer<typeof ScriptToolCall>;

export class ScriptError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ScriptError';
  }
}

/**
 * Validates a script, given as JSON text or as an already parsed value. Throws a ScriptError whose
 * message starts with `sourceName` and names each problem's step (1-based, as people count them).
 */
export function parseScript(json: unknown, sourceName: string): Script {
  let value = json;
  if (typeof json === 'string') {
    try {
      value = JSON.parse(json);
    } catch (e) {
      throw new ScriptError(`${sourceName}: not JSON: ${(e as Error).message}`);
    }
  }
  const result = Script.safeParse(value);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => `${where(issue.path)}${lowerFirst(issue.message)}`);
  throw new ScriptError(`${sourceName}: ${problems.join('; ')}`);
}

export async function loadScript(file: string): Promise<Script> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw new ScriptError(`${file}: cannot read the script: ${(e as Error).message}`);
  }
  return parseScript(text, file);
}

function where(path: PropertyKey[]): string {
  if (path[0] === 'steps' && typeof path[1] === 'number') {
    const rest = path.slice(2);
    return `step ${path[1] + 1} (steps[${path[1]}])${rest.length ? ` ${dotted(rest)}` : ''}: `;
  }
  return path.length ? `${dotted(path)}: ` : '';
}

function dotted(path: PropertyKey[]): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i ? '.' : ''}${String(p)}`)).join('');
}

function lowerFirst(s: string): string {
  return s.charAt(0).toLowerCase() + s.slice(1);
}
