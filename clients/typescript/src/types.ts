/**
 * Named views of the generated protocol types. Nothing here restates a shape: every
 * alias is derived from src/generated/protocol.ts, so a schema change flows through.
 */
import type {
  EmptyResult,
  Message,
  PromptParams,
  ProtocolMethods,
  SessionNotification,
  ToolCallCallResult,
} from "./generated/protocol";

export * from "./generated/protocol";

/** `fs/write_text_file` answers `{}` (ACP) or `null` (some clients). */
export type WriteTextFileResult = EmptyResult | null;

/** One `session/update` payload: a union discriminated by `sessionUpdate`. */
export type SessionUpdate = SessionNotification["update"];
/** The `sessionUpdate` discriminator values. */
export type SessionUpdateKind = SessionUpdate["sessionUpdate"];
/** The update variant for one discriminator value, e.g. `UpdateOf<"tool_call">`. */
export type UpdateOf<K extends SessionUpdateKind> = Extract<SessionUpdate, { sessionUpdate: K }>;

/** A content block a prompt may carry (ACP ContentBlock). */
export type ContentBlock = PromptParams["prompt"][number];
/** A content block of a transcript message (ACP blocks plus thought, tool_use, …). */
export type MessageBlock = Message["content"][number];
/** A content block in a `tool/call` answer. */
export type ToolResultContent = NonNullable<ToolCallCallResult["content"]>[number];

export type ParamsOf<M extends keyof ProtocolMethods> = ProtocolMethods[M]["params"];
export type ResultOf<M extends keyof ProtocolMethods> = ProtocolMethods[M]["result"];
