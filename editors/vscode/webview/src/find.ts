/**
 * DOM pieces of finding a session, shared by the chat's sessions panel and the desktop
 * app's tree: a search snippet with its matched words marked, and a title edited in place.
 */
import type { SnippetSpan } from "@threadline/client";

/** A search snippet: its text (never parsed as HTML), the matched words in `<mark>`. */
export function snippetNodes(spans: readonly SnippetSpan[]): Node[] {
  return spans.map((s) => {
    if (!s.match) return document.createTextNode(s.text.replace(/\s+/g, " "));
    const mark = document.createElement("mark");
    mark.textContent = s.text;
    return mark;
  });
}

/**
 * Edit a title in place: `shown` is hidden and a text field (`.rename-input`) put first
 * in `row`, filled with `title`. Enter commits a changed, non-blank title through
 * `commit`; Escape or leaving the field keeps the old one.
 */
export function editInPlace(row: HTMLElement, shown: HTMLElement, title: string, commit: (title: string) => void): void {
  if (row.querySelector(":scope > .rename-input")) return;
  const input = document.createElement("input");
  input.className = "rename-input";
  input.value = title;
  input.setAttribute("aria-label", "New title");
  shown.hidden = true;
  row.prepend(input);
  let finished = false;
  const done = (keep: boolean) => {
    if (finished) return;
    finished = true;
    const value = input.value.trim();
    input.remove();
    shown.hidden = false;
    if (keep && value && value !== title) commit(value);
  };
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" || event.key === "Escape") {
      event.preventDefault();
      done(event.key === "Enter");
    }
  });
  input.addEventListener("blur", () => done(false));
  input.focus();
  input.select();
}
