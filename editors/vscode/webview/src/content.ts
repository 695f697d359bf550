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

/** An image of a message or a tool result, ready for an `<img>` (`src` null: not shown inline). */
export interface ImageView {
  mimeType: string;
  /** A `data:` URL of the bytes, or null for a blob reference the page was not sent the bytes of. */
  src: string | null;
  /** What it is in words: `64×32 PNG, 2 KB` (the `alt` text and tooltip). */
  label: string;
}

interface ImageBlock {
  type?: string;
  mimeType?: string;
  data?: string;
  uri?: string | null;
  content?: unknown;
  _meta?: { threadline?: { image?: { width?: number; height?: number; size?: number } } } | null;
}

/** The image of one ACP `image` block (null for any other block). */
export function imageOf(block: unknown): ImageView | null {
  const b = block as ImageBlock | null;
  if (!b || typeof b !== "object" || b.type !== "image") return null;
  const mimeType = b.mimeType ?? "image/png";
  const facts = b._meta?.threadline?.image;
  const kind = mimeType.replace(/^image\//, "").toUpperCase();
  const size = facts?.size ?? (b.data ? Math.floor((b.data.length * 3) / 4) : undefined);
  const parts = [facts?.width && facts.height ? `${facts.width}×${facts.height} ${kind}` : kind];
  if (size !== undefined) parts.push(size < 1024 ? `${size} B` : `${Math.round(size / 1024)} KB`);
  return { mimeType, src: b.data ? `data:${mimeType};base64,${b.data}` : null, label: `Image: ${parts.join(", ")}` };
}

/** The images of ACP content: a block, or tool-call content items (`{type: "content", content}`). */
export function imagesOf(content: unknown): ImageView[] {
  if (Array.isArray(content)) return content.flatMap(imagesOf);
  const c = content as ImageBlock | null;
  if (c?.type === "content") return imagesOf(c.content);
  const image = imageOf(c);
  return image ? [image] : [];
}
