/**
 * The messages between the extension host and the chat webview, both directions.
 * Type-only: the host (Node) and the page (browser) share it without sharing code.
 */
import type {
  CompactResult,
  SessionInfo,
  SessionNotification,
  Usage,
} from "@threadline/client";

export interface ModelChoice {
  id: string;
  name: string;
  description?: string | null;
}

/** Host → webview. */
export type HostMessage =
  /** The session shown from now on (after new, fork or resume), with the model picker's state. */
  | {
      type: "session";
      sessionId: string | null;
      title?: string | null;
      parentSessionId?: string | null;
      models: ModelChoice[];
      currentModel: string | null;
    }
  /** Forget the transcript on screen (a replay of another session follows). */
  | { type: "reset" }
  /** One `session/update` of the session shown. */
  | { type: "update"; notification: SessionNotification }
  /** A turn began with this user text. */
  | { type: "turnStarted"; text: string }
  /** The running turn ended (`cancelled` after an interrupt). */
  | { type: "turnEnded"; stopReason: string; usage?: Usage | null; messageId?: string | null }
  | { type: "sessions"; sessions: SessionInfo[] }
  | { type: "compacted"; result: CompactResult }
  | { type: "notice"; level: "info" | "error"; text: string };

/** Webview → host. */
export type WebviewMessage =
  | { type: "ready" }
  | { type: "prompt"; text: string }
  | { type: "interrupt" }
  | { type: "fork"; messageId: string }
  | { type: "compact"; instructions?: string }
  | { type: "setModel"; model: string }
  | { type: "listSessions" }
  | { type: "resume"; sessionId: string }
  | { type: "newSession" };
