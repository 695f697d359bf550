/**
 * The picture of a session's context: how much of the window the system message, the
 * tool definitions, the history and a compaction's summary take, drawn as a bar (two
 * after a compaction: before and after). Every figure is the server's own count of the
 * next request (`session/context`, the model's tokenizer), never an estimate.
 */
import type { ContextResult } from "@threadline/client";

export interface ContextParts {
  system: number;
  tools: number;
  history: number;
  summary: number;
  used: number;
  size: number;
}

export function contextParts(result: ContextResult): ContextParts {
  return { ...result.parts, used: result.used, size: result.size };
}

function row(label: string, parts: ContextParts, scale: number): HTMLElement {
  const r = document.createElement("div");
  r.className = "row";
  r.dataset.row = label;
  const name = document.createElement("span");
  name.className = "row-label";
  name.textContent = label;
  const bar = document.createElement("div");
  bar.className = "bar";
  for (const [kind, value] of [
    ["system", parts.system],
    ["tools", parts.tools],
    ["history", parts.history],
    ["summary", parts.summary],
  ] as const) {
    const seg = document.createElement("div");
    seg.className = `seg ${kind}`;
    seg.dataset.tokens = String(value);
    seg.style.width = `${(100 * value) / scale}%`;
    seg.title = `${kind}: ${value.toLocaleString("en-US")} tokens`;
    bar.append(seg);
  }
  const total = document.createElement("span");
  total.className = "row-total";
  total.textContent = `${parts.used.toLocaleString("en-US")} / ${parts.size.toLocaleString("en-US")}`;
  r.append(name, bar, total);
  return r;
}

export function renderPicture(container: HTMLElement, before: ContextParts | null, after: ContextParts | null): void {
  if (!after) {
    container.replaceChildren();
    return;
  }
  const scale = Math.max(after.size, before?.used ?? 0, after.used, 1);
  const rows = before ? [row("before", before, scale), row("after", after, scale)] : [row("now", after, scale)];
  const legend = document.createElement("div");
  legend.className = "legend";
  const t = (value: number) => value.toLocaleString("en-US");
  legend.textContent =
    `system ${t(after.system)} · tools ${t(after.tools)} · history ${t(after.history)}` +
    ` · summary ${t(after.summary)} tokens (counted by the model's tokenizer)`;
  container.replaceChildren(...rows, legend);
}
