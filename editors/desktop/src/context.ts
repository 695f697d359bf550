/**
 * The picture of a session's context: how much of the window the system prompt and
 * tool definitions, the history and a compaction's summary take, drawn as a bar (two
 * after a compaction: before and after). The total is the server's own figure (the
 * last `usage_update`, or the compaction's `tokensAfter`); history and summary are
 * estimated from their text (about four characters a token), and the system prompt
 * and tools are the rest. The legend says which numbers are estimates.
 */
import type { Message } from "@threadline/client";

export interface ContextParts {
  /** null until the server has measured the whole prompt (no turn yet in this pane). */
  systemAndTools: number | null;
  history: number;
  summary: number;
  used: number;
  size: number | null;
}

const tokensOf = (text: string) => Math.ceil(text.length / 4);

function blockText(block: unknown): string {
  const b = block as { type?: string; text?: string; input?: unknown; content?: unknown };
  if (b.type === "text" || b.type === "summary" || b.type === "thought") return b.text ?? "";
  if (b.type === "tool_use") return JSON.stringify(b.input ?? {});
  if (b.type === "tool_result") return (Array.isArray(b.content) ? b.content : []).map(blockText).join("\n");
  return "";
}

export function contextParts(messages: readonly Message[], used: number | null, size: number | null): ContextParts {
  let history = 0;
  let summary = 0;
  for (const m of messages) {
    if ((m as { compacted?: boolean }).compacted) continue;
    const isSummary = m.content[0] && (m.content[0] as { type: string }).type === "summary";
    const tokens = tokensOf(m.content.map(blockText).join("\n"));
    if (isSummary) summary += tokens;
    else history += tokens;
  }
  const measured = used ?? history + summary;
  return { systemAndTools: used === null ? null : Math.max(0, used - history - summary), history, summary, used: measured, size };
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
    ["system", parts.systemAndTools ?? 0],
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
  const legend = document.createElement("span");
  legend.className = "row-total";
  legend.textContent = `${parts.used.toLocaleString("en-US")}${parts.size ? ` / ${parts.size.toLocaleString("en-US")}` : ""}`;
  r.append(name, bar, legend);
  return r;
}

export function renderPicture(container: HTMLElement, before: ContextParts | null, after: ContextParts | null): void {
  if (!after) {
    container.replaceChildren();
    return;
  }
  const scale = Math.max(after.size ?? 0, before?.used ?? 0, after.used, 1);
  const rows = before ? [row("before", before, scale), row("after", after, scale)] : [row("now", after, scale)];
  const legend = document.createElement("div");
  legend.className = "legend";
  legend.textContent =
    `system prompt + tools ${after.systemAndTools === null ? "not measured yet" : after.systemAndTools.toLocaleString("en-US")}` +
    ` · history ≈${after.history.toLocaleString("en-US")}` +
    ` · summary ≈${after.summary.toLocaleString("en-US")} tokens (≈: estimated from the text)`;
  container.replaceChildren(...rows, legend);
}
