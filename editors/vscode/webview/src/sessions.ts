/**
 * How sessions are named in lists (the chat's Sessions panel and VS Code's Resume
 * quick pick share this). Forks keep their parent's title, so a fork is marked "↳"
 * and names its parent, and rows that would still read the same get a number: no two
 * rows of one list look alike. A `delegate` call's child session (titled `↳ <task>` by
 * the server) is named as its parent's sub-agent.
 */
import type { SearchHit, SessionInfo, SnippetSpan } from "@threadline/client";

export interface SessionRow {
  label: string;
  detail: string;
}

interface ListMeta {
  messageCount?: number;
  parentSessionId?: string | null;
  kind?: "session" | "child";
}

export function sessionTitle(s: Pick<SessionInfo, "title"> | undefined): string {
  return s?.title?.trim() || "Untitled session";
}

function parentOf(s: SessionInfo): string | null {
  return ((s._meta ?? {}) as ListMeta).parentSessionId ?? null;
}

function isChild(s: SessionInfo): boolean {
  return ((s._meta ?? {}) as ListMeta).kind === "child";
}

/** A row for each session of `all`, by session id. */
export function describeSessions(all: readonly SessionInfo[]): Map<string, SessionRow> {
  const base = new Map(all.map((s) => [s.sessionId, `${parentOf(s) && !isChild(s) ? "↳ " : ""}${sessionTitle(s)}`]));
  // Oldest first gets the plain label; later look-alikes are numbered.
  const byAge = [...all].sort((a, b) => a.updatedAt.localeCompare(b.updatedAt) || a.sessionId.localeCompare(b.sessionId));
  const seen = new Map<string, number>();
  const labels = new Map<string, string>();
  for (const s of byAge) {
    const label = base.get(s.sessionId)!;
    const n = (seen.get(label) ?? 0) + 1;
    seen.set(label, n);
    labels.set(s.sessionId, n === 1 ? label : `${label} (${n})`);
  }
  const rows = new Map<string, SessionRow>();
  for (const s of all) {
    const meta = (s._meta ?? {}) as ListMeta;
    const count = meta.messageCount ?? 0;
    const parts = [`${count} message${count === 1 ? "" : "s"}`, s.updatedAt.slice(0, 16).replace("T", " ")];
    const parent = parentOf(s);
    if (parent) parts.push(`${isChild(s) ? "sub-agent" : "fork"} of “${labels.get(parent) ?? "a session not listed"}”`);
    rows.set(s.sessionId, { label: labels.get(s.sessionId)!, detail: parts.join(" · ") });
  }
  return rows;
}

const ROLE_WORDS: Record<SearchHit["role"], string> = {
  user: "your message",
  assistant: "an answer",
  tool: "a tool result",
  title: "the title",
};

/** A search hit's row: the session's title, and where the words were found and when. */
export function describeHit(hit: SearchHit): SessionRow {
  const parts = [`in ${ROLE_WORDS[hit.role] ?? hit.role}`, hit.updatedAt.slice(0, 16).replace("T", " ")];
  if (hit.archived) parts.push("archived");
  return { label: sessionTitle(hit), detail: parts.join(" · ") };
}

/** A snippet as plain text, its matched words between the given marks (for a quick pick or a terminal). */
export function snippetText(spans: readonly SnippetSpan[], open = "", close = open): string {
  return spans
    .map((s) => (s.match ? `${open}${s.text}${close}` : s.text))
    .join("")
    .replace(/\s+/g, " ")
    .trim();
}

