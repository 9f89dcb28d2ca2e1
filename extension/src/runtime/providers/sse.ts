// Server-sent events read off a fetch body: the events' `data`, each with the line it started on, so a
// malformed chunk can be reported by line. Only `data` matters to Chat Completions; `event`, `id`,
// `retry` and comments (keep-alive pings) are skipped.

export interface SseEvent {
  data: string;
  /** 1-based line of the body where the event's first `data` field is. */
  line: number;
}

/**
 * Yields each event once its blank line arrives. A last line without its newline is dropped, as the
 * specification says: a connection cut in the middle of a JSON chunk is then diagnosed as the cut it
 * is, not as a malformed chunk. Errors of the underlying stream propagate as they are.
 */
export async function* readSse(body: ReadableStream<Uint8Array>, onBytes: () => void = () => {}): AsyncGenerator<SseEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let lineNo = 0;
  let data: string[] = [];
  let firstLine = 0;
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        finished = true;
        // A final event whose blank line never came is still whole if its line ended.
        if (data.length) yield { data: data.join('\n'), line: firstLine };
        return;
      }
      onBytes();
      buffer += decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl).replace(/\r$/, '');
        buffer = buffer.slice(nl + 1);
        lineNo++;
        if (line === '') {
          if (data.length) yield { data: data.join('\n'), line: firstLine };
          data = [];
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        if (field !== 'data') continue;
        let text = colon < 0 ? '' : line.slice(colon + 1);
        if (text.startsWith(' ')) text = text.slice(1);
        if (!data.length) firstLine = lineNo;
        data.push(text);
      }
    }
  } finally {
    // The consumer stopped early (an error, a `[DONE]`, a break): free the connection.
    if (!finished) reader.cancel().catch(() => {});
  }
}
