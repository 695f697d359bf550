/**
 * The messages between the extension host and the chat webview, both directions.
 * Type-only: the host (Node) and the page (browser) share it without sharing code.
 */
import type {
  CompactResult,
  CreateElicitationParams,
  CreateElicitationResult,
  FileDiff,
  SearchHit,
  SessionInfo,
  SessionNotification,
  Usage,
} from "@threadline/client";

export interface ModelChoice {
  id: string;
  name: string;
  description?: string | null;
}

/** A session mode (`ask`, `plan`, `code`, `auto`) as the mode picker shows it. */
export type ModeChoice = ModelChoice;

/** An image pasted or dropped into the composer: sent as an ACP `image` block. */
export interface ImageAttachment {
  mimeType: string;
  /** The bytes, base64. */
  data: string;
  /** The file's name when it had one (shown as the thumbnail's tooltip). */
  name?: string;
}

/** Host → webview. */
export type HostMessage =
  /** The session shown from now on (after new, fork or resume), with the model picker's state. */
  | {
      type: "session";
      sessionId: string | null;
      title?: string | null;
      parentSessionId?: string | null;
      /** The parent's title, shown instead of its raw id. */
      parentTitle?: string | null;
      /** `child`: a `delegate` call's session (its parent is the session that delegated). */
      kind?: "session" | "child";
      models: ModelChoice[];
      currentModel: string | null;
      /** The mode picker's state (absent: the server has no modes). */
      modes?: ModeChoice[];
      currentMode?: string | null;
      /** The built-in tools picker's state (absent or null: not known). */
      builtinTools?: "on" | "off" | null;
    }
  /** Forget the transcript on screen (a replay of another session follows). */
  | { type: "reset" }
  /** One `session/update` of the session shown. */
  | { type: "update"; notification: SessionNotification }
  /** A turn began with this user text (and these images). */
  | { type: "turnStarted"; text: string; images?: ImageAttachment[] }
  /** The running turn ended (`cancelled` after an interrupt). */
  | {
      type: "turnEnded";
      stopReason: string;
      usage?: Usage | null;
      messageId?: string | null;
      /** The stored id of the prompt's user message: "Fork from here" works at once. */
      userMessageId?: string | null;
    }
  /** The sessions list; `archived`: it lists the archived sessions (else the others). */
  | { type: "sessions"; sessions: SessionInfo[]; archived?: boolean }
  /** `session/search`'s hits for `query` (an empty query clears the search); `error` when refused. */
  | { type: "searchResults"; query: string; hits: SearchHit[]; error?: string | null }
  /** Bring this message (or tool call) of the replayed session into view: a search hit. */
  | { type: "reveal"; messageId: string | null; toolCallId: string | null }
  | { type: "compacted"; result: CompactResult }
  /** A compaction started (true) or ended either way (false). */
  | { type: "compacting"; active: boolean }
  /** The context figure remembered for a resumed session (replays carry none). */
  | { type: "context"; used: number; size: number | null }
  /** The sidecar is down (with why) or up again (null). */
  | { type: "sidecar"; down: string | null }
  /** The files the last turn changed (`session/diff`); empty: none. */
  | { type: "turnDiff"; files: FileDiff[]; notice?: string | null }
  /** A rewind this window made can be undone (`session/unrewind`) until the next prompt; null: no more. */
  | { type: "rewound"; rewindId: string | null }
  /** The agent asks the user (`elicitation/create`): show a form; null closes it (answered or withdrawn). */
  | { type: "elicitation"; request: { id: number; params: CreateElicitationParams } | null }
  | { type: "notice"; level: "info" | "error"; text: string };

/** How a prompt typed while the session works is sent: queued as the next turn, or joining the turn. */
export type WhileRunning = "queue" | "steer";

/** Webview → host. */
export type WebviewMessage =
  | { type: "ready" }
  /** `whileRunning`: typed while the session works (Enter queues, Ctrl/Cmd+Enter steers). */
  | { type: "prompt"; text: string; whileRunning?: WhileRunning; images?: ImageAttachment[] }
  /** Open a `delegate` call's child session (VS Code: in the chat view; desktop: a new pane). */
  | { type: "openChild"; sessionId: string }
  /** The parent of the session shown (a sub-agent's, a fork's): the way back. */
  | { type: "openParent"; sessionId: string }
  /** `clearQueue`: the prompts waiting are removed too. */
  | { type: "interrupt"; clearQueue?: boolean }
  /** Replace a waiting prompt's text (`session/queue/update`). */
  | { type: "queueEdit"; id: string; text: string }
  /** Remove one waiting prompt, or (no id) all (`session/queue/remove`). */
  | { type: "queueRemove"; id?: string }
  /** Let held prompts run (`session/queue/resume`). */
  | { type: "queueResume" }
  /** Undo this window's last rewind, files too (`session/unrewind`). */
  | { type: "unrewind"; rewindId: string }
  /** The user's answer to an `elicitation` form. */
  | { type: "elicitationAnswer"; id: number; result: CreateElicitationResult }
  | { type: "fork"; messageId: string }
  | { type: "compact"; instructions?: string }
  | { type: "setModel"; model: string }
  | { type: "setMode"; mode: string }
  /** Built-in tools on or off for the session (`builtinTools` config option). */
  | { type: "setBuiltinTools"; value: "on" | "off" }
  /** End the session just before this prompt, files too (`session/rewind`). */
  | { type: "rewind"; messageId: string }
  /** Open a diff editor for one file of the last turn's diff. */
  | { type: "openDiff"; path: string }
  /** `archived`: list the archived sessions instead of the others. */
  | { type: "listSessions"; archived?: boolean }
  | { type: "resume"; sessionId: string }
  /** Full-text search over the sessions (`session/search`). */
  | { type: "search"; query: string }
  /** Open a session at a search hit's message (null: a title hit). */
  | { type: "open"; sessionId: string; messageId: string | null }
  /** `relist`: the sessions list asked (it is drawn again after). */
  | { type: "rename"; sessionId: string; title: string; relist?: boolean }
  /** `archived: false` unarchives. */
  | { type: "archive"; sessionId: string; archived: boolean; relist?: boolean }
  | { type: "newSession" }
  | { type: "restartSidecar" };
