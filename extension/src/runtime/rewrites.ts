// What a hook's `modify` may rewrite, per event, as the runtime reads it: one schema each, so a
// rewrite is validated rather than cast to a guessed shape. The core passes `Evaluation.modified`
// through as the hook wrote it (`EventKind::rewrites` names what each event rewrites, not its
// shape), so the shapes live here until the core defines them.
//
// Each reading is lenient as the runtime always was: a field of the wrong type is ignored (the
// runtime keeps its own value), never an error of the task.
import { z } from 'zod';

/** A field that is ignored, not refused, when it has the wrong type. */
const ignoredUnless = <T extends z.ZodType>(schema: T) => schema.optional().catch(undefined);

/** `PostToolUse`: the tool's result as the model is told it (e.g. linter errors appended). */
const ToolResultRewrite = z.object({
  result: ignoredUnless(z.object({ output: ignoredUnless(z.string()), is_error: ignoredUnless(z.unknown()) })),
});

/** `TurnPrepare`: the system prompt, the model, and the messages of this inference. */
const TurnRewrite = z.object({
  system_prompt: ignoredUnless(z.string()),
  model: ignoredUnless(z.string().min(1)),
  /** Checked message by message by the loop (`chatMessages`). */
  messages: z.unknown().optional(),
});

/** `AllTasksComplete`: more tasks for the queue; an entry without a prompt is skipped. */
const QueuedTask = z.object({ prompt: z.string(), title: ignoredUnless(z.string()) });
const QueueRewrite = z.object({ tasks: ignoredUnless(z.array(z.unknown())) });

/** A compaction's Pending as decided: its summaries (the core's `CompactionSubject`), the first of
 *  which the loop reads. */
const CompactionSummaries = z.object({ summaries: z.array(z.unknown()).min(1) });
const Summary = z.object({ text: z.string() });

const read = <T extends z.ZodType>(schema: T, modified: unknown): z.infer<T> | undefined => {
  const r = schema.safeParse(modified);
  return r.success ? r.data : undefined;
};

/** The rewritten tool result, when a hook rewrote its output (a string). */
export function toolResultRewrite(modified: unknown): { output: string; isError: boolean } | undefined {
  const result = read(ToolResultRewrite, modified)?.result;
  return typeof result?.output === 'string' ? { output: result.output, isError: result.is_error === true } : undefined;
}

/** What a `TurnPrepare` hook rewrote; each field absent when it did not (or not as a string). */
export function turnRewrite(modified: unknown): { systemPrompt?: string; model?: string; messages?: unknown } {
  const r = read(TurnRewrite, modified ?? {});
  return { systemPrompt: r?.system_prompt, model: r?.model, messages: r?.messages };
}

/** The tasks an `AllTasksComplete` hook queued, those with a prompt. */
export function queuedTasks(modified: unknown): { prompt: string; title?: string }[] {
  return (read(QueueRewrite, modified)?.tasks ?? []).flatMap((t) => read(QueuedTask, t) ?? []);
}

/** The first summary of a decided compaction, if its subject has one. */
export function firstSummary(subject: unknown): string | undefined {
  return read(Summary, read(CompactionSummaries, subject)?.summaries[0])?.text;
}
