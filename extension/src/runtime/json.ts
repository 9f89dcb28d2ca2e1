// The JSON objects the extension reads from outside (a model's tool arguments, a tool's parameters
// as the core gives them), validated rather than cast: one schema, so every reader means the same.
import { z } from 'zod';

/** A JSON object (not an array, not null): its fields are for the reader to check. */
export const JsonObject = z.record(z.string(), z.unknown());

/** A JSON Schema of an object's arguments, as far as a reader looks into it: its properties. */
export const ToolParameters = z.object({ properties: JsonObject });
