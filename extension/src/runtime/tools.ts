// The runtime's tools: one zod schema each, from which both the JSON Schema the model is offered and
// the validator of what it sends back are derived (one source of truth). A bad argument is a tool
// error the model can correct, never an exception and never something the chain sees.
import { z } from 'zod';
import type { ToolDefinition } from './types';

const RelativePath = z.string().min(1).describe('A path relative to the workspace root, with / separators.');

const TOOLS = {
  read_file: {
    description: 'Read a text file of the workspace. Lines are numbered from 1; give a range to read part of a long file.',
    schema: z
      .object({
        path: RelativePath,
        start_line: z.number().int().min(1).optional().describe('First line to return (1-based).'),
        end_line: z.number().int().min(1).optional().describe('Last line to return (inclusive).'),
      })
      .strict()
      .refine((a) => a.start_line === undefined || a.end_line === undefined || a.start_line <= a.end_line, {
        message: 'start_line must not be after end_line',
      }),
  },
  list_files: {
    description: 'List the files and folders under a folder of the workspace.',
    schema: z
      .object({
        path: RelativePath.default('.'),
        recursive: z.boolean().default(false).describe('List every level below, not just the folder itself.'),
      })
      .strict(),
  },
  search_files: {
    description: 'Search the text files under a folder for a regular expression; returns matching lines with their paths and line numbers.',
    schema: z
      .object({
        path: RelativePath.default('.'),
        regex: z.string().min(1).describe('A JavaScript regular expression.'),
        file_pattern: z.string().optional().describe('Only files whose name matches this glob, e.g. *.ts.'),
      })
      .strict(),
  },
  write_to_file: {
    description: 'Create a file, or replace a file\u2019s whole content. Needs an active intent whose scope owns the path.',
    schema: z.object({ path: RelativePath, content: z.string() }).strict(),
  },
  apply_diff: {
    description:
      'Edit a file with search/replace blocks. Each block is "<<<<<<< SEARCH\\n<exact lines>\\n=======\\n<new lines>\\n>>>>>>> REPLACE"; ' +
      'every SEARCH part must match the file exactly once. Needs an active intent whose scope owns the path.',
    schema: z.object({ path: RelativePath, diff: z.string().min(1) }).strict(),
  },
  execute_command: {
    description:
      'Run a shell command in the workspace. It runs contained to the active intent\u2019s scope: what it changes outside never lands, and you are told.',
    schema: z
      .object({
        command: z.string().min(1),
        cwd: RelativePath.optional().describe('Working directory, relative to the workspace root.'),
        timeout_seconds: z.number().int().min(1).max(3600).optional(),
      })
      .strict(),
  },
  select_active_intent: {
    description: 'Declare which intent of .orchestration/active_intents.yaml you work on. Required before any write; returns the intent\u2019s context.',
    schema: z.object({ intent_id: z.string().min(1) }).strict(),
  },
  scope_expansion_request: {
    description: 'Ask for paths outside your intent\u2019s owned scope. A human or a policy decides; say why you need them.',
    schema: z
      .object({
        intent_id: z.string().min(1),
        paths: z.array(z.string().min(1)).min(1).describe('Workspace-relative paths or globs.'),
        justification: z.string().min(1),
      })
      .strict(),
  },
  submit_plan: {
    description: 'Propose a plan: tasks that are queued and run one after another once the plan is accepted.',
    schema: z
      .object({
        title: z.string().optional(),
        tasks: z.array(z.object({ title: z.string().optional(), prompt: z.string().min(1) }).strict()).min(1),
      })
      .strict(),
  },
  attempt_completion: {
    description: 'Say the task is done, with a summary of the result. Checks (such as the tests) run before it is accepted.',
    schema: z.object({ result: z.string().min(1) }).strict(),
  },
} as const;

export type ToolName = keyof typeof TOOLS;
export type ToolArguments<N extends ToolName> = z.output<(typeof TOOLS)[N]['schema']>;

export const TOOL_NAMES = Object.keys(TOOLS) as ToolName[];

export function isToolName(name: string): name is ToolName {
  return Object.prototype.hasOwnProperty.call(TOOLS, name);
}

let definitions: ToolDefinition[] | undefined;

/** The tools as the model is offered them (JSON Schema draft 2020-12 parameters). */
export function toolDefinitions(): ToolDefinition[] {
  definitions ??= TOOL_NAMES.map((name) => {
    // `input`: the schema of what the model may send (defaults make fields optional).
    const { $schema: _ignored, ...parameters } = z.toJSONSchema(TOOLS[name].schema, { io: 'input', unrepresentable: 'any' });
    return { name, description: TOOLS[name].description, parameters };
  });
  return definitions;
}

/** A call's name with its arguments as its schema parsed them: a switch on `name` types `args`. */
export type ToolInput = { [N in ToolName]: { name: N; args: ToolArguments<N> } }[ToolName];

export type Validated = ({ ok: true } & ToolInput) | { ok: false; error: string };

/** Parses and validates a tool call's raw JSON arguments; the error says what to fix. */
export function validateToolCall(name: string, rawArguments: string): Validated {
  if (!isToolName(name)) {
    return { ok: false, error: `there is no tool \`${name}\`; the tools are ${TOOL_NAMES.join(', ')}` };
  }
  let parsed: unknown;
  try {
    parsed = rawArguments.trim() === '' ? {} : JSON.parse(rawArguments);
  } catch (e) {
    return { ok: false, error: `the arguments of ${name} are not JSON (${(e as Error).message}); send one JSON object` };
  }
  return validateToolArgs(name, parsed);
}

/** Validates arguments already parsed (a hook's or a decider's rewrite of a call is held to the same
 *  schema as the model's own call). */
export function validateToolArgs(name: ToolName, value: unknown): Validated {
  const result = TOOLS[name].schema.safeParse(value);
  if (!result.success) {
    const problems = result.error.issues.map((i) => `${i.path.length ? i.path.join('.') : '(arguments)'}: ${i.message}`);
    return { ok: false, error: `invalid arguments for ${name}: ${problems.join('; ')}` };
  }
  // The schema of `name` parsed it: its output type is `ToolArguments<typeof name>`, which the
  // compiler cannot pair with `name` through the lookup (tests/unit/tools.test.ts runs each tool).
  return { ok: true, name, args: result.data } as Validated;
}
