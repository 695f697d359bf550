/**
 * The chat's state as a pure reducer over host messages, so the rendering stays dumb
 * and the logic can be reasoned about (and tested) without a DOM.
 */
import type {
  CreateElicitationParams,
  FileDiff,
  OwnerInfo,
  PlanEntry,
  QueuedPrompt,
  SearchHit,
  SessionInfo,
  SessionInfoUpdateInfo,
  SessionUpdate,
  Usage,
} from "@threadline/client";
import type { HostMessage, ModeChoice, ModelChoice } from "./messages";
import { pickerState } from "./configOptions";
import { contentText, imageOf, imagesOf, type ImageView } from "./content";

export { contentText, type ImageView };

export type ToolStatus = "pending" | "in_progress" | "completed" | "failed";

/** One file an edit tool call changes: ACP's `{type: "diff", path, oldText, newText}`. */
export interface ToolDiff {
  path: string;
  oldText: string | null;
  newText: string;
}

/** The session's state as the server says it (`session_info_update`), whoever runs the turn. */
export type SessionState = NonNullable<SessionInfoUpdateInfo["state"]>;

/** `compacted`: a compaction took the message out of the model's context. */
export type Entry =
  /** `images`: pasted or dropped with the prompt (or a replayed prompt's image blocks). */
  | { kind: "user"; key: string; messageId: string | null; text: string; version: number; compacted?: boolean; images?: ImageView[] }
  | { kind: "assistant"; key: string; messageId: string | null; text: string; version: number; compacted?: boolean }
  | { kind: "thought"; key: string; messageId: string | null; text: string; version: number; compacted?: boolean }
  /** What the engine told the model for one request (not part of the history: no fork). */
  | { kind: "note"; key: string; messageId: string | null; text: string; version: number; compacted?: boolean }
  /** A compaction's summary of the messages before it. */
  | { kind: "summary"; key: string; messageId: string | null; text: string; version: number; compacted?: boolean }
  | {
      kind: "tool";
      key: string;
      toolCallId: string;
      title: string;
      toolKind: string;
      status: ToolStatus;
      input: unknown;
      output: string;
      /** ACP `diff` content of an edit (shown as a coloured unified diff). */
      diffs: ToolDiff[];
      /** Images the tool returned (MCP and client tools' image content). */
      images: ImageView[];
      /** A `delegate` call's child session (`_meta.threadline.childSessionId`): the card opens it. */
      childSessionId: string | null;
      cancelled: boolean;
      version: number;
    }
  | { kind: "notice"; key: string; level: "info" | "error"; text: string; version: number };

export interface ChatState {
  sessionId: string | null;
  title: string | null;
  parentSessionId: string | null;
  parentTitle: string | null;
  /** `child`: the session is a `delegate` call's child of `parentSessionId` (else a fork). */
  kind: "session" | "child";
  entries: Entry[];
  running: boolean;
  /** The session's state as the server says it: `running` for a turn in any window. */
  sessionState: SessionState;
  /** The editor process whose sidecar runs the session's turn (null: idle). */
  owner: OwnerInfo | null;
  /** Prompts typed while the session worked, waiting (or held) in order. */
  queue: QueuedPrompt[];
  /** A question the agent asks (`elicitation/create`), answered in a form. */
  elicitation: { id: number; params: CreateElicitationParams } | null;
  /** This window's last rewind, which "Undo rewind" brings back (until the next prompt). */
  rewindId: string | null;
  models: ModelChoice[];
  currentModel: string | null;
  /** The session's modes (empty: the server offers none) and the one it is in. */
  modes: ModeChoice[];
  currentMode: string | null;
  /** The session's built-in tools (`builtinTools` config option; null: not known). */
  builtinTools: "on" | "off" | null;
  /** The agent's plan (ACP `plan`: the whole list each time), shown above the input. */
  plan: PlanEntry[];
  /** The files the last turn changed (null: not known). */
  turnDiff: { files: FileDiff[]; notice: string | null } | null;
  sessions: SessionInfo[] | null;
  /** The list shows the archived sessions. */
  sessionsArchived: boolean;
  /** The sessions panel's search: its query and hits (null: no search). */
  search: { query: string; hits: SearchHit[]; error: string | null } | null;
  /** A message (or tool call) to bring into view once, numbered so a repeat is seen. */
  reveal: { messageId: string | null; toolCallId: string | null; seq: number } | null;
  contextUsed: number | null;
  contextSize: number | null;
  lastUsage: Usage | null;
  compaction: { status: string; message: string | null } | null;
  /** A compaction is running: nothing else may be sent. */
  compacting: boolean;
  /** Why the sidecar is down, or null while it runs. */
  sidecarDown: string | null;
  commands: string[];
  /** Bumped on every change, so the view can skip work when nothing changed. */
  revision: number;
}

export function initialState(): ChatState {
  return {
    sessionId: null,
    title: null,
    parentSessionId: null,
    parentTitle: null,
    kind: "session",
    entries: [],
    running: false,
    sessionState: "idle",
    owner: null,
    queue: [],
    elicitation: null,
    rewindId: null,
    models: [],
    currentModel: null,
    modes: [],
    currentMode: null,
    builtinTools: null,
    plan: [],
    turnDiff: null,
    sessions: null,
    sessionsArchived: false,
    search: null,
    reveal: null,
    contextUsed: null,
    contextSize: null,
    lastUsage: null,
    compaction: null,
    compacting: false,
    sidecarDown: null,
    commands: [],
    revision: 0,
  };
}

let keys = 0;
function nextKey(prefix: string): string {
  keys += 1;
  return `${prefix}-${keys}`;
}

type TextEntry = Extract<Entry, { kind: "user" | "assistant" | "thought" | "note" | "summary" }>;

function notice(state: ChatState, level: "info" | "error", text: string): void {
  state.entries.push({ kind: "notice", key: nextKey("notice"), level, text, version: 0 });
}

interface ReplayMarks {
  ephemeral?: boolean;
  summary?: boolean;
  compacted?: boolean;
  truncated?: boolean;
}

function marksOf(update: { _meta?: { [key: string]: unknown } | null }): ReplayMarks {
  const tl = (update._meta as { threadline?: ReplayMarks } | null | undefined)?.threadline;
  return tl ?? {};
}

/**
 * Append streamed text: to the entry of the same kind and message id if there is one,
 * else to the last entry when it is of the same kind and has no id, else a new entry.
 */
function appendText(
  state: ChatState,
  kind: TextEntry["kind"],
  messageId: string | null,
  text: string,
  marks: ReplayMarks = {},
) {
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
  state.entries.push({ kind, key: nextKey(kind), messageId, text, version: 0, ...(marks.compacted ? { compacted: true } : {}) });
  // A replayed answer that an interrupt cut off reads as it did live.
  if (marks.truncated && kind === "assistant") notice(state, "info", "Interrupted.");
}

/** A `delegate` call's child session, from the update's `_meta.threadline`. */
function childOf(update: { _meta?: { [key: string]: unknown } | null }): string | null {
  const tl = (update._meta as { threadline?: { childSessionId?: string | null } } | null | undefined)?.threadline;
  return tl?.childSessionId ?? null;
}

/**
 * A prompt's image (replayed, or another window's prompt): onto its user entry, which
 * the prompt's text chunk of the same message made or makes (the text comes first).
 */
function appendImages(state: ChatState, messageId: string | null, images: ImageView[], marks: ReplayMarks): void {
  let target: Extract<Entry, { kind: "user" }> | undefined;
  const last = state.entries[state.entries.length - 1];
  if (messageId) {
    for (let i = state.entries.length - 1; i >= 0 && !target; i--) {
      const e = state.entries[i]!;
      if (e.kind === "user" && e.messageId === messageId) target = e;
    }
  } else if (last?.kind === "user" && last.messageId === null) target = last;
  if (!target) {
    target = { kind: "user", key: nextKey("user"), messageId, text: "", version: 0, ...(marks.compacted ? { compacted: true } : {}) };
    state.entries.push(target);
  }
  target.images = [...(target.images ?? []), ...images];
  target.version += 1;
}

/** The `diff` items of tool-call content. */
function diffsOf(content: unknown): ToolDiff[] {
  if (!Array.isArray(content)) return [];
  const out: ToolDiff[] = [];
  for (const item of content) {
    const c = item as { type?: string; path?: string; oldText?: string | null; newText?: string };
    if (c?.type === "diff" && typeof c.path === "string") out.push({ path: c.path, oldText: c.oldText ?? null, newText: c.newText ?? "" });
  }
  return out;
}

/** The session is working, in this window or another: prompts typed now queue or steer. */
export function isBusy(state: ChatState): boolean {
  return state.running || state.compacting || (state.sessionState !== "idle" && state.sessionId !== null);
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
    case "agent_message_chunk": {
      const marks = marksOf(update);
      appendText(state, marks.summary ? "summary" : "assistant", update.messageId ?? null, contentText(update.content), marks);
      return;
    }
    case "agent_thought_chunk":
      appendText(state, "thought", update.messageId ?? null, contentText(update.content));
      return;
    case "user_message_chunk": {
      const marks = marksOf(update);
      if (update.content.type === "image" && !marks.ephemeral) {
        appendImages(state, update.messageId ?? null, imagesOf(update.content), marks);
        return;
      }
      appendText(state, marks.ephemeral ? "note" : "user", update.messageId ?? null, contentText(update.content), marks);
      return;
    }
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
        diffs: diffsOf(update.content ?? []),
        images: imagesOf(update.content ?? []),
        childSessionId: childOf(update),
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
          diffs: [],
          images: [],
          childSessionId: null,
          cancelled: false,
          version: 0,
        };
        state.entries.push(tool);
      }
      if (update.title) tool.title = update.title;
      if (update.status) tool.status = update.status;
      if (update.rawInput !== undefined && update.rawInput !== null) tool.input = update.rawInput;
      if (update.content) {
        tool.output = contentText(update.content);
        const diffs = diffsOf(update.content);
        if (diffs.length) tool.diffs = diffs;
        tool.images = imagesOf(update.content);
      }
      tool.childSessionId = childOf(update) ?? tool.childSessionId;
      const meta = update._meta as { threadline?: { cancelled?: boolean } } | null | undefined;
      if (meta?.threadline?.cancelled) tool.cancelled = true;
      tool.version += 1;
      return;
    }
    case "usage_update":
      state.contextUsed = update.used;
      state.contextSize = update.size;
      return;
    case "session_info_update": {
      if (update.title !== undefined) state.title = update.title ?? null;
      const info = update._meta?.threadline;
      if (!info) return;
      if (info.state) {
        state.sessionState = info.state;
        state.owner = info.state === "idle" ? null : (info.owner ?? state.owner);
      }
      if (info.queue) state.queue = info.queue;
      if (info.model) state.currentModel = info.model;
      // Said once per session: the model reads a placeholder instead of the images.
      if (info.warning) notice(state, "info", info.warning);
      return;
    }
    case "compaction_update": {
      // Read loosely: the summary has been a string and is becoming content blocks,
      // the failure text `message` and then `error`.
      const u = update as unknown as { status: string; summary?: unknown; message?: unknown; error?: unknown };
      const summary = typeof u.summary === "string" ? u.summary : contentText(u.summary ?? []);
      const problem = typeof u.error === "string" ? u.error : typeof u.message === "string" ? u.message : null;
      state.compaction = { status: u.status, message: summary || problem };
      // The summary, live or replayed: where the compaction happened in the transcript.
      if (u.status === "completed" && summary) {
        const last = state.entries[state.entries.length - 1];
        if (!(last?.kind === "summary" && last.text === summary)) {
          state.entries.push({ kind: "summary", key: nextKey("summary"), messageId: null, text: summary, version: 0 });
        }
      }
      return;
    }
    case "available_commands_update":
      state.commands = update.availableCommands.map((c) => c.name);
      return;
    case "plan":
      state.plan = update.entries;
      return;
    case "current_mode_update":
      state.currentMode = update.currentModeId;
      return;
    case "config_option_update": {
      // Model, mode or built-in tools changed here or in another window.
      const picked = pickerState(update.configOptions);
      if (picked.currentModel !== undefined) state.currentModel = picked.currentModel;
      if (picked.currentMode !== undefined) state.currentMode = picked.currentMode;
      if (picked.modes && !state.modes.length) state.modes = picked.modes;
      if (picked.builtinTools !== undefined) state.builtinTools = picked.builtinTools;
      return;
    }
  }
}

/** Why a turn stopped, in words (ACP's stop reasons other than end_turn and cancelled). */
const STOP_WORDS: Record<string, string> = {
  max_tokens: "Stopped: the answer reached its length limit (max_tokens).",
  max_turn_requests: "Stopped: the turn used up its tool calls.",
  refusal: "Stopped: the model refused to answer.",
};

/** The user entry of the running turn: typed here, so it has no id until the turn ends. */
function lastTypedUserEntry(state: ChatState) {
  for (let i = state.entries.length - 1; i >= 0; i--) {
    const e = state.entries[i]!;
    if (e.kind === "user") return e.messageId === null ? e : undefined;
  }
  return undefined;
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
      state.parentTitle = message.parentTitle ?? null;
      state.kind = message.kind ?? "session";
      state.models = message.models;
      state.currentModel = message.currentModel;
      if (message.modes) state.modes = message.modes;
      if (message.currentMode !== undefined) state.currentMode = message.currentMode;
      if (message.builtinTools !== undefined) state.builtinTools = message.builtinTools;
      break;
    case "reset":
      state.entries = [];
      state.running = false;
      state.compacting = false;
      state.compaction = null;
      state.contextUsed = null;
      state.contextSize = null;
      state.lastUsage = null;
      state.plan = [];
      state.turnDiff = null;
      state.sessionState = "idle";
      state.owner = null;
      state.queue = [];
      state.elicitation = null;
      state.rewindId = null;
      break;
    case "update":
      if (state.sessionId && message.notification.sessionId !== state.sessionId) return state;
      applyUpdate(state, message.notification.update);
      break;
    case "turnDiff":
      state.turnDiff = { files: message.files, notice: message.notice ?? null };
      break;
    case "turnStarted":
      state.running = true;
      state.turnDiff = null;
      state.rewindId = null;
      state.entries.push({
        kind: "user",
        key: nextKey("user"),
        messageId: null,
        text: message.text,
        version: 0,
        ...(message.images?.length ? { images: message.images.map((i) => imageOf({ type: "image", ...i })!) } : {}),
      });
      break;
    case "turnEnded": {
      state.running = false;
      state.lastUsage = message.usage ?? null;
      const typed = lastTypedUserEntry(state);
      if (typed && message.userMessageId) {
        typed.messageId = message.userMessageId;
        typed.version += 1;
      }
      if (message.stopReason === "cancelled") {
        notice(state, "info", "Interrupted.");
      } else if (message.stopReason !== "end_turn" && message.stopReason !== "error") {
        notice(state, "info", STOP_WORDS[message.stopReason] ?? `Stopped: ${message.stopReason}.`);
      }
      break;
    }
    case "sessions":
      state.sessions = message.sessions;
      state.sessionsArchived = message.archived ?? false;
      break;
    case "searchResults":
      state.search = message.query ? { query: message.query, hits: message.hits, error: message.error ?? null } : null;
      break;
    case "reveal":
      state.reveal = { messageId: message.messageId, toolCallId: message.toolCallId, seq: (state.reveal?.seq ?? 0) + 1 };
      break;
    case "compacted": {
      const r = message.result;
      state.compacting = false;
      const meta = (r._meta as { threadline?: { compacted?: boolean; reason?: string } } | null | undefined)?.threadline;
      if (meta?.compacted === false || (r.messagesAfter === r.messagesBefore && r.tokensAfter === r.tokensBefore)) {
        notice(state, "info", `Nothing to compact${meta?.reason ? `: ${meta.reason}` : ""}.`);
        break;
      }
      state.compaction = { status: "completed", message: r.summary };
      state.contextUsed = r.tokensAfter;
      // The summary takes the place of the messages it covers.
      const replaced = r.messagesBefore - r.messagesAfter + 1;
      notice(
        state,
        "info",
        `Compacted: ${replaced} older message${replaced === 1 ? "" : "s"} summarised (${r.tokensBefore.toLocaleString("en-US")} → ${r.tokensAfter.toLocaleString("en-US")} tokens).`,
      );
      break;
    }
    case "compacting":
      state.compacting = message.active;
      break;
    case "context":
      state.contextUsed = message.used;
      state.contextSize = message.size;
      break;
    case "sidecar":
      state.sidecarDown = message.down;
      if (message.down !== null) {
        state.running = false;
        state.compacting = false;
      }
      break;
    case "rewound":
      state.rewindId = message.rewindId;
      break;
    case "elicitation":
      state.elicitation = message.request;
      break;
    case "notice":
      notice(state, message.level, message.text);
      break;
  }
  state.revision += 1;
  return state;
}
