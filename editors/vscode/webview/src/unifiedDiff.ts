/**
 * Unified diffs for the chat: the lines of an edit tool call's ACP `diff` content
 * (old and new text, worked out here) and of `session/diff`'s git text, as one list of
 * marked lines the view colours. Pure, so it is tested without a DOM.
 */

export type DiffMark = " " | "+" | "-" | "@";

export interface DiffLine {
  mark: DiffMark;
  text: string;
}

/** Above this many cells (changed old lines × changed new lines) the middle is shown as replaced. */
const MAX_CELLS = 4_000_000;

function splitLines(text: string): string[] {
  if (text === "") return [];
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  return lines;
}

/** The edit script of `a` → `b` by longest common subsequence (after the common ends are cut). */
function editScript(a: string[], b: string[]): DiffLine[] {
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const x = a.slice(head, a.length - tail);
  const y = b.slice(head, b.length - tail);
  const middle: DiffLine[] = [];
  if (x.length * y.length > MAX_CELLS) {
    middle.push(...x.map((text) => ({ mark: "-" as const, text })), ...y.map((text) => ({ mark: "+" as const, text })));
  } else {
    // lcs[i][j]: the common subsequence's length of x[i..] and y[j..].
    const width = y.length + 1;
    const lcs = new Uint32Array((x.length + 1) * width);
    for (let i = x.length - 1; i >= 0; i--) {
      for (let j = y.length - 1; j >= 0; j--) {
        lcs[i * width + j] =
          x[i] === y[j] ? lcs[(i + 1) * width + j + 1]! + 1 : Math.max(lcs[(i + 1) * width + j]!, lcs[i * width + j + 1]!);
      }
    }
    let i = 0;
    let j = 0;
    while (i < x.length || j < y.length) {
      if (i < x.length && j < y.length && x[i] === y[j]) {
        middle.push({ mark: " ", text: x[i]! });
        i++;
        j++;
      } else if (i < x.length && (j === y.length || lcs[(i + 1) * width + j]! >= lcs[i * width + j + 1]!)) {
        // Removed lines before added ones, as git shows a replaced line.
        middle.push({ mark: "-", text: x[i]! });
        i++;
      } else {
        middle.push({ mark: "+", text: y[j]! });
        j++;
      }
    }
  }
  return [
    ...a.slice(0, head).map((text) => ({ mark: " " as const, text })),
    ...middle,
    ...a.slice(a.length - tail).map((text) => ({ mark: " " as const, text })),
  ];
}

/**
 * The unified diff of `oldText` → `newText` (null: a new file): hunks with `context`
 * unchanged lines around each change, headed `@@ -a,b +c,d @@` as git writes them.
 */
export function unifiedDiff(oldText: string | null, newText: string, context = 3): DiffLine[] {
  const script = editScript(splitLines(oldText ?? ""), splitLines(newText));
  const changed = script.map((l, i) => (l.mark === " " ? -1 : i)).filter((i) => i >= 0);
  if (!changed.length) return [];
  // Group changes whose context windows touch into one hunk.
  const ranges: [number, number][] = [];
  for (const i of changed) {
    const from = Math.max(0, i - context);
    const to = Math.min(script.length - 1, i + context);
    const last = ranges[ranges.length - 1];
    if (last && from <= last[1] + 1) last[1] = Math.max(last[1], to);
    else ranges.push([from, to]);
  }
  // Line numbers at each script position.
  const oldAt: number[] = [];
  const newAt: number[] = [];
  let o = 1;
  let n = 1;
  for (const l of script) {
    oldAt.push(o);
    newAt.push(n);
    if (l.mark !== "+") o++;
    if (l.mark !== "-") n++;
  }
  const out: DiffLine[] = [];
  for (const [from, to] of ranges) {
    const lines = script.slice(from, to + 1);
    const oldCount = lines.filter((l) => l.mark !== "+").length;
    const newCount = lines.filter((l) => l.mark !== "-").length;
    const oldStart = oldCount ? oldAt[from]! : oldAt[from]! - 1;
    const newStart = newCount ? newAt[from]! : newAt[from]! - 1;
    out.push({ mark: "@", text: `@@ -${oldStart},${oldCount} +${newStart},${newCount} @@` }, ...lines);
  }
  return out;
}

/** git's unified text (`session/diff`) as marked lines: the file header left out. */
export function parseUnified(diff: string): DiffLine[] {
  const out: DiffLine[] = [];
  let inHunk = false;
  for (const line of diff.split("\n")) {
    if (line.startsWith("@@")) {
      inHunk = true;
      out.push({ mark: "@", text: line });
    } else if (inHunk && (line[0] === "+" || line[0] === "-" || line[0] === " ")) {
      out.push({ mark: line[0] as DiffMark, text: line.slice(1) });
    }
  }
  return out;
}
