// The Chat Completions wire format, as both ends of it in this folder speak it: the HTTP client
// (openai.ts) and the scripted server (scripted.ts). Our own ChatMessage is camelCase and names only
// what the runtime needs; the translation to the snake_case wire shape happens here and nowhere else.
import { z } from 'zod';
import type { ChatMessage, ToolDefinition } from '../types';

export interface WireToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export type WireMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string; tool_calls?: WireToolCall[] }
  | { role: 'tool'; tool_call_id: string; name: string; content: string };

export interface WireTool {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

export interface WireChatRequest {
  model: string;
  messages: WireMessage[];
  tools?: WireTool[];
  stream?: boolean;
  stream_options?: { include_usage: boolean };
}

/** A tool-call fragment of a streamed delta: every field but `index` may be absent after the first. */
export interface WireToolCallDelta {
  index?: number;
  id?: string;
  type?: 'function';
  function?: { name?: string; arguments?: string };
}

export interface WireUsage {
  prompt_tokens: number;
  completion_tokens: number;
}

/** One `data:` event of a streamed answer. */
export interface WireStreamChunk {
  id?: string;
  object?: string;
  model?: string;
  choices?: { index?: number; delta?: { role?: string; content?: string | null; tool_calls?: WireToolCallDelta[] }; finish_reason?: string | null }[];
  usage?: WireUsage | null;
  /** Some servers report a failure inside the stream instead of with a status code. */
  error?: unknown;
}

/** A whole (non-streamed) answer. */
export interface WireCompletion {
  id?: string;
  object?: string;
  model?: string;
  choices?: { index?: number; message?: { role?: string; content?: string | null; tool_calls?: WireToolCall[] }; finish_reason?: string | null }[];
  usage?: WireUsage | null;
}

export function toWireMessage(m: ChatMessage): WireMessage {
  switch (m.role) {
    case 'system':
    case 'user':
      return { role: m.role, content: m.content };
    case 'assistant':
      // An empty `tool_calls` array is rejected by some servers, so it is left out rather than sent empty.
      return m.toolCalls?.length
        ? {
            role: 'assistant',
            content: m.content,
            tool_calls: m.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })),
          }
        : { role: 'assistant', content: m.content };
    case 'tool':
      // `name` is not in the current OpenAI schema, which ignores it; servers for other model families
      // (Mistral, Gemini's compatibility layer) need it to pair a result with its call.
      return { role: 'tool', tool_call_id: m.toolCallId, name: m.name, content: m.content };
  }
}

export function toWireTool(t: ToolDefinition): WireTool {
  return { type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } };
}

/** An OpenAI-style error body: `{ error: { message, type, code } }`. */
export function wireError(message: string, type: string, code: string | null = null): { error: { message: string; type: string; code: string | null } } {
  return { error: { message, type, code } };
}

/**
 * The message of an error body, whatever shape the server chose: OpenAI's `{error: {message}}`,
 * llama.cpp's and Ollama's `{error: "..."}`, or a bare `{message}`.
 */
export function errorMessageOf(body: unknown): string | undefined {
  const r = ErrorBody.safeParse(body);
  if (!r.success) return undefined;
  return 'error' in r.data ? (typeof r.data.error === 'string' ? r.data.error : r.data.error.message) : r.data.message;
}

/** The error bodies `errorMessageOf` reads, in the order it prefers them. */
const ErrorBody = z.union([z.object({ error: z.string() }), z.object({ error: z.object({ message: z.string() }) }), z.object({ message: z.string() })]);
