// Server-sent events read off a fetch body: the events' `data`, each with the line it started on, so a
// malformed chunk can be reported by line. Only `data` matters to Chat Completions; `event`, `id`,
// `retry` and comments (keep-alive pings) are skipped.

export interface SseEvent {
  data: string;
  /** 1-based line of the body where the event's first `data` field is. */
  line: number;
}

export interface SseOptions {
  /** Ends a pending read. The fetch's own signal is not enough, see `readOrAbort`. */
  signal?: AbortSignal;
  /** Called whenever bytes arrive (a silence timer restarts on it). */
  onBytes?: () => void;
}

/**
 * Yields each event once its blank line arrives. A last line without its newline is dropped, as the
 * specification says: a connection cut in the middle of a JSON chunk is then diagnosed as the cut it
 * is, not as a malformed chunk. Errors of the underlying stream propagate as they are.
 */
export async function* readSse(body: ReadableStream<Uint8Array>, options: SseOptions = {}): AsyncGenerator<SseEvent> {
  const { signal, onBytes = () => {} } = options;
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let lineNo = 0;
  let data: string[] = [];
  let firstLine = 0;
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await readOrAbort(reader, signal);
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

/**
 * A read that an abort ends. Node 20's fetch leaves the body stream alone when its signal fires after
 * the whole body has arrived but before it was read: the next read then never settles (seen on Node
 * 20.20), and a Stop pressed while the runtime was busy between two chunks would hang the task.
 */
function readOrAbort(reader: ReadableStreamDefaultReader<Uint8Array>, signal: AbortSignal | undefined): Promise<ReadableStreamReadResult<Uint8Array>> {
  if (!signal) return reader.read();
  if (signal.aborted) return Promise.reject(abortError(signal));
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(abortError(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    reader.read().then(
      (result) => {
        signal.removeEventListener('abort', onAbort);
        resolve(result);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

function abortError(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('this operation was aborted', 'AbortError');
}
