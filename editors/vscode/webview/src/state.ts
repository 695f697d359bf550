/**
 * The chat's state as a pure reducer over host messages, so the rendering stays dumb
 * and the logic can be reasoned about (and tested) without a DOM.
 */
import type { SessionInfo, SessionUpdate, Usage } from "@threadline/client";
import type { HostMessage, ModelChoice } from "./messages";

export type ToolStatus = "pending" | "in_progress" | "completed" | "failed";

export type Entry =
  | { kind: "user"; key: string; messageId: string | null; text: string; version: number }
  | { kind: "assistant"; key: string; messageId: string | null; text: string; version: number }
  | { kind: "thought"; key: string; messageId: string | null; text: string; version: number }
  | {
      kind: "tool";
      key: string;
      toolCallId: string;
      title: string;
      toolKind: string;
      status: ToolStatus;
      input: unknown;
      output: string;
      cancelled: boolean;
      version: number;
    }
  | { kind: "notice"; key: string; level: "info" | "error"; text: string; version: number };

export interface ChatState {
  sessionId: string | null;
  title: string | null;
  parentSessionId: string | null;
  entries: Entry[];
  running: boolean;
  models: ModelChoice[];
  currentModel: string | null;
  sessions: SessionInfo[] | null;
  contextUsed: number | null;
  contextSize: number | null;
  lastUsage: Usage | null;
  compaction: { status: string; message: string | null } | null;
  commands: string[];
  /** Bumped on every change, so the view can skip work when nothing changed. */
  revision: number;
}

export function initialState(): ChatState {
  return {
    sessionId: null,
    title: null,
    parentSessionId: null,
    entries: [],
    running: false,
    models: [],
    currentModel: null,
    sessions: null,
    contextUsed: null,
    contextSize: null,
    lastUsage: null,
    compaction: null,
    commands: [],
    revision: 0,
  };
}

let keys = 0;
function nextKey(prefix: string): string {
  keys += 1;
  return `${prefix}-${keys}`;
}

type TextEntry = Extract<Entry, { kind: "user" | "assistant" | "thought" }>;

/**
 * Append streamed text: to the entry of the same kind and message id if there is one,
 * else to the last entry when it is of the same kind and has no id, else a new entry.
 */
function appendText(state: ChatState, kind: TextEntry["kind"], messageId: string | null, text: string) {
  let target: TextEntry | undefined;
  if (messageId) {
    for (let i = state.entries.length - 1; i >= 0; i--) {
      const e = state.entries[i]!;
      if (e.kind === kind && e.messageId === messageId) {
        target = e;
        break;
      }
    }
  } else {
    const last = state.entries[state.entries.length - 1];
    if (last && last.kind === kind && last.messageId === null) target = last;
  }
  if (target) {
    target.text += text;
    target.version += 1;
    return;
  }
  state.entries.push({ kind, key: nextKey(kind), messageId, text, version: 0 });
}

/** Text of ACP content (a block, or tool-call content items) for display. */
export function contentText(content: unknown): string {
  if (Array.isArray(content)) return content.map(contentText).filter(Boolean).join("\n");
  if (!content || typeof content !== "object") return "";
  const c = content as { type?: string; text?: string; content?: unknown; path?: string; newText?: string; uri?: string };
  switch (c.type) {
    case "text":
      return c.text ?? "";
    case "content":
      return contentText(c.content);
    case "diff":
      return `diff ${c.path ?? ""}\n${c.newText ?? ""}`;
    case "resource_link":
      return c.uri ?? "";
    default:
      return "";
  }
}

function findTool(state: ChatState, toolCallId: string) {
  for (let i = state.entries.length - 1; i >= 0; i--) {
    const e = state.entries[i]!;
    if (e.kind === "tool" && e.toolCallId === toolCallId) return e;
  }
  return undefined;
}

function applyUpdate(state: ChatState, update: SessionUpdate): void {
  switch (update.sessionUpdate) {
    case "agent_message_chunk":
      appendText(state, "assistant", update.messageId ?? null, contentText(update.content));
      return;
    case "agent_thought_chunk":
      appendText(state, "thought", update.messageId ?? null, contentText(update.content));
      return;
    case "user_message_chunk":
      appendText(state, "user", update.messageId ?? null, contentText(update.content));
      return;
    case "tool_call": {
      const existing = findTool(state, update.toolCallId);
      if (existing) return;
      state.entries.push({
        kind: "tool",
        key: nextKey("tool"),
        toolCallId: update.toolCallId,
        title: update.title,
        toolKind: update.kind ?? "other",
        status: update.status ?? "pending",
        input: update.rawInput ?? null,
        output: contentText(update.content ?? []),
        cancelled: false,
        version: 0,
      });
      return;
    }
    case "tool_call_update": {
      let tool = findTool(state, update.toolCallId);
      if (!tool) {
        tool = {
          kind: "tool",
          key: nextKey("tool"),
          toolCallId: update.toolCallId,
          title: update.title ?? update.toolCallId,
          toolKind: update.kind ?? "other",
          status: "pending",
          input: null,
          output: "",
          cancelled: false,
          version: 0,
        };
        state.entries.push(tool);
      }
      if (update.title) tool.title = update.title;
      if (update.status) tool.status = update.status;
      if (update.rawInput !== undefined && update.rawInput !== null) tool.input = update.rawInput;
      if (update.content) tool.output = contentText(update.content);
      const meta = update._meta as { threadline?: { cancelled?: boolean } } | null | undefined;
      if (meta?.threadline?.cancelled) tool.cancelled = true;
      tool.version += 1;
      return;
    }
    case "usage_update":
      state.contextUsed = update.used;
      state.contextSize = update.size;
      return;
    case "session_info_update":
      if (update.title !== undefined) state.title = update.title ?? null;
      return;
    case "compaction_update":
      state.compaction = { status: update.status, message: update.summary ?? update.message ?? null };
      return;
    case "available_commands_update":
      state.commands = update.availableCommands.map((c) => c.name);
      return;
    case "plan":
      return;
  }
}

/** Apply one host message; returns the same (mutated) state with a new revision. */
export function reduce(state: ChatState, message: HostMessage): ChatState {
  switch (message.type) {
    case "session":
      // Keep a title learnt from session_info_update unless the session changed.
      if (message.title) state.title = message.title;
      else if (message.sessionId !== state.sessionId) state.title = null;
      state.sessionId = message.sessionId;
      state.parentSessionId = message.parentSessionId ?? null;
      state.models = message.models;
      state.currentModel = message.currentModel;
      break;
    case "reset":
      state.entries = [];
      state.running = false;
      state.compaction = null;
      state.contextUsed = null;
      state.contextSize = null;
      state.lastUsage = null;
      break;
    case "update":
      if (state.sessionId && message.notification.sessionId !== state.sessionId) return state;
      applyUpdate(state, message.notification.update);
      break;
    case "turnStarted":
      state.running = true;
      state.entries.push({ kind: "user", key: nextKey("user"), messageId: null, text: message.text, version: 0 });
      break;
    case "turnEnded":
      state.running = false;
      state.lastUsage = message.usage ?? null;
      if (message.stopReason === "cancelled") {
        state.entries.push({ kind: "notice", key: nextKey("notice"), level: "info", text: "Interrupted.", version: 0 });
      } else if (message.stopReason !== "end_turn" && message.stopReason !== "error") {
        state.entries.push({ kind: "notice", key: nextKey("notice"), level: "info", text: `Stopped: ${message.stopReason}`, version: 0 });
      }
      break;
    case "sessions":
      state.sessions = message.sessions;
      break;
    case "compacted":
      state.compaction = { status: "completed", message: message.result.summary };
      state.entries.push({
        kind: "notice",
        key: nextKey("notice"),
        level: "info",
        text: `Compacted ${message.result.messagesBefore} → ${message.result.messagesAfter} messages (${message.result.tokensBefore} → ${message.result.tokensAfter} tokens).`,
        version: 0,
      });
      break;
    case "notice":
      state.entries.push({ kind: "notice", key: nextKey("notice"), level: message.level, text: message.text, version: 0 });
      break;
  }
  state.revision += 1;
  return state;
}
