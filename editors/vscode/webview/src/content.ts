/** Reading ACP content for display (shared by the chat's state and its rendering). */

/** Text of ACP content (a block, or tool-call content items) for display. */
export function contentText(content: unknown): string {
  if (Array.isArray(content)) return content.map(contentText).filter(Boolean).join("\n");
  if (!content || typeof content !== "object") return "";
  const c = content as { type?: string; text?: string; content?: unknown; uri?: string };
  switch (c.type) {
    case "text":
      return c.text ?? "";
    case "content":
      return contentText(c.content);
    case "diff":
      return ""; // drawn as a unified diff on the tool card (state.ts `diffsOf`)
    case "resource_link":
      return c.uri ?? "";
    case "terminal":
      return "(running in a Threadline terminal: see the Terminal panel)";
    default:
      return "";
  }
}
