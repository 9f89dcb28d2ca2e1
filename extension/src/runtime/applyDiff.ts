// `apply_diff`: search/replace blocks applied all or nothing. A block whose search text is not in the
// file exactly once is refused with an error that says which block and why, so the model can re-read
// the file and try again instead of corrupting it.

export interface Block {
  search: string;
  replace: string;
}

const START = /^<{7} SEARCH\s*$/;
const MIDDLE = /^={7}\s*$/;
const END = /^>{7} REPLACE\s*$/;

/** Parses the blocks of a diff; throws an Error naming the line of a malformed block. */
export function parseBlocks(diff: string): Block[] {
  const lines = diff.replace(/\r\n/g, '\n').split('\n');
  const blocks: Block[] = [];
  let i = 0;
  while (i < lines.length) {
    if (lines[i].trim() === '') {
      i++;
      continue;
    }
    if (!START.test(lines[i])) throw new Error(`line ${i + 1}: expected "<<<<<<< SEARCH" to start a block, found ${JSON.stringify(lines[i].slice(0, 60))}`);
    const start = i++;
    const search: string[] = [];
    while (i < lines.length && !MIDDLE.test(lines[i])) search.push(lines[i++]);
    if (i >= lines.length) throw new Error(`the block starting at line ${start + 1} has no "=======" line`);
    i++;
    const replace: string[] = [];
    while (i < lines.length && !END.test(lines[i])) replace.push(lines[i++]);
    if (i >= lines.length) throw new Error(`the block starting at line ${start + 1} has no ">>>>>>> REPLACE" line`);
    i++;
    if (search.length === 0) throw new Error(`the block starting at line ${start + 1} has an empty SEARCH part; use write_to_file to create a file`);
    blocks.push({ search: search.join('\n'), replace: replace.join('\n') });
  }
  if (blocks.length === 0) throw new Error('the diff has no search/replace block');
  return blocks;
}

function occurrences(text: string, part: string): number[] {
  const at: number[] = [];
  for (let i = text.indexOf(part); i !== -1; i = text.indexOf(part, i + 1)) at.push(i);
  return at;
}

/** Applies every block to `content` in order, or throws naming the first block that does not apply. */
export function applyBlocks(content: string, blocks: Block[]): string {
  // Work on \n line endings and give the file back in its own.
  const crlf = content.includes('\r\n');
  let text = crlf ? content.replace(/\r\n/g, '\n') : content;
  blocks.forEach((block, n) => {
    const found = occurrences(text, block.search);
    if (found.length === 0) {
      const first = block.search.split('\n')[0];
      const near = text.split('\n').findIndex((l) => l.trim() === first.trim());
      const hint = near >= 0 ? ` (its first line resembles line ${near + 1}; whitespace or later lines differ)` : '';
      throw new Error(`block ${n + 1} of ${blocks.length} does not match the file${hint}; read the file again and copy the lines exactly`);
    }
    if (found.length > 1) {
      throw new Error(`block ${n + 1} of ${blocks.length} matches ${found.length} places; include more surrounding lines so it matches exactly one`);
    }
    text = text.slice(0, found[0]) + block.replace + text.slice(found[0] + block.search.length);
  });
  return crlf ? text.replace(/\n/g, '\r\n') : text;
}
