/**
 * A deliberately small Markdown subset for streamed answers: fenced code blocks,
 * paragraphs, `inline code` and **bold**. It builds DOM nodes with textContent only, so
 * model output can never inject markup or script into the page.
 */

interface Segment {
  code: boolean;
  lang: string;
  lines: string[];
}

/** Split text on ``` fences; an unclosed fence (still streaming) is code to the end. */
function segments(text: string): Segment[] {
  const out: Segment[] = [];
  let current: Segment = { code: false, lang: "", lines: [] };
  for (const line of text.split("\n")) {
    const fence = /^\s*```(\S*)\s*$/.exec(line);
    if (!fence) {
      current.lines.push(line);
      continue;
    }
    if (current.code || current.lines.length) out.push(current);
    current = current.code
      ? { code: false, lang: "", lines: [] }
      : { code: true, lang: fence[1] ?? "", lines: [] };
  }
  if (current.code || current.lines.length) out.push(current);
  return out;
}

function inline(parent: HTMLElement, text: string): void {
  const pattern = /(`[^`\n]+`|\*\*[^*\n]+\*\*)/g;
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    const index = match.index ?? 0;
    if (index > last) parent.append(text.slice(last, index));
    const token = match[0];
    const el = document.createElement(token.startsWith("`") ? "code" : "strong");
    el.textContent = token.startsWith("`") ? token.slice(1, -1) : token.slice(2, -2);
    parent.append(el);
    last = index + token.length;
  }
  if (last < text.length) parent.append(text.slice(last));
}

/** Replace `container`'s children with the rendering of `text`. */
export function renderMarkdown(container: HTMLElement, text: string): void {
  const nodes: Node[] = [];
  for (const seg of segments(text)) {
    if (seg.code) {
      const pre = document.createElement("pre");
      const code = document.createElement("code");
      if (seg.lang) code.dataset.lang = seg.lang;
      code.textContent = seg.lines.join("\n");
      pre.append(code);
      nodes.push(pre);
      continue;
    }
    for (const para of seg.lines.join("\n").split(/\n{2,}/)) {
      if (!para.trim()) continue;
      const p = document.createElement("p");
      inline(p, para);
      nodes.push(p);
    }
  }
  container.replaceChildren(...nodes);
}
