/**
 * ACP `fs/read_text_file` / `fs/write_text_file` for the editor: reads prefer the open
 * document's current (possibly unsaved) text, as an agent working in an editor must see
 * what the user sees; writes go through the editor when it has the file open.
 */
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, isAbsolute } from "node:path";
import {
  ResponseError,
  type ReadTextFileParams,
  type ReadTextFileResult,
  type WriteTextFileParams,
  type WriteTextFileResult,
} from "@threadline/client";

const INVALID_PARAMS = -32602;

export interface DocumentSource {
  /** Current text of an open document (unsaved edits included), undefined if not open. */
  documentText(path: string): string | undefined;
}

export interface DocumentWriter {
  /** Replace an open document's text (undoable in the editor); false if it is not open. */
  writeOpenDocument(path: string, content: string): Promise<boolean>;
}

function requireAbsolute(path: unknown): string {
  if (typeof path !== "string" || !isAbsolute(path)) {
    throw new ResponseError(INVALID_PARAMS, `path must be absolute: ${String(path)}`);
  }
  return path;
}

/** The `line`/`limit` window of ACP (1-based first line, number of lines). */
export function sliceLines(text: string, line?: number | null, limit?: number | null): string {
  if (!line && !limit) return text;
  const all = text.split("\n");
  const start = Math.max((line ?? 1) - 1, 0);
  const end = limit ? start + limit : all.length;
  return all.slice(start, end).join("\n");
}

export async function readTextFile(
  source: DocumentSource,
  params: ReadTextFileParams,
): Promise<ReadTextFileResult> {
  const path = requireAbsolute(params.path);
  const open = source.documentText(path);
  const text = open ?? (await readFile(path, "utf8"));
  return { content: sliceLines(text, params.line, params.limit) };
}

export async function writeTextFile(
  writer: DocumentWriter,
  params: WriteTextFileParams,
): Promise<WriteTextFileResult> {
  const path = requireAbsolute(params.path);
  if (typeof params.content !== "string") {
    throw new ResponseError(INVALID_PARAMS, "content must be a string");
  }
  if (!(await writer.writeOpenDocument(path, params.content))) {
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, params.content, "utf8");
  }
  return {};
}
