/**
 * The text a file had before a turn, worked out from its text now and the turn's
 * `session/diff` (git's unified format): the hunks are applied backwards. `session/diff`
 * sends hunks, not whole texts, and a diff editor needs both sides.
 */

interface Hunk {
  /** New-side start line (1-based) and length, as in `@@ -a,b +c,d @@`. */
  newStart: number;
  newLength: number;
  /** The hunk's old-side lines, each with its line ending. */
  oldLines: string[];
}

const HUNK_HEADER = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@/;

function parseHunks(diff: string): Hunk[] {
  const hunks: Hunk[] = [];
  let current: Hunk | undefined;
  let last: " " | "-" | "+" | undefined;
  for (const line of diff.split("\n")) {
    const header = HUNK_HEADER.exec(line);
    if (header) {
      current = { newStart: Number(header[1]), newLength: header[2] === undefined ? 1 : Number(header[2]), oldLines: [] };
      hunks.push(current);
      last = undefined;
      continue;
    }
    if (!current) continue; // the file header (diff --git, ---, +++)
    const mark = line[0];
    if (mark === " " || mark === "-") {
      current.oldLines.push(`${line.slice(1)}\n`);
      last = mark;
    } else if (mark === "+") {
      last = "+";
    } else if (mark === "\\") {
      // "\ No newline at end of file" belongs to the line before it.
      if (last === " " || last === "-") {
        const i = current.oldLines.length - 1;
        current.oldLines[i] = current.oldLines[i]!.replace(/\n$/, "");
      }
    }
  }
  return hunks;
}

/** Lines of `text`, each with its own ending (the last may have none). */
function linesOf(text: string): string[] {
  const lines = text.split(/(?<=\n)/);
  return lines.length === 1 && lines[0] === "" ? [] : lines;
}

/** `newText` with `diff`'s hunks undone: the file's text before the change. */
export function oldTextFromDiff(newText: string, diff: string): string {
  const lines = linesOf(newText);
  const out: string[] = [];
  let cursor = 0; // lines of `lines` consumed
  for (const hunk of parseHunks(diff)) {
    // `+c,0` is an empty new side placed after line c; otherwise the hunk starts at c.
    const start = hunk.newLength === 0 ? hunk.newStart : hunk.newStart - 1;
    out.push(...lines.slice(cursor, start));
    out.push(...hunk.oldLines);
    cursor = start + hunk.newLength;
  }
  out.push(...lines.slice(cursor));
  return out.join("");
}
