/**
 * Editor tools for the model: declared as Threadline client tools at `session/new` and
 * run here when the server sends `tool/call`. The editor itself is behind `EditorHost`,
 * so this module has no `vscode` import and runs (and is tested) in plain Node.
 */
import { isAbsolute, resolve } from "node:path";
import type { ToolCallCall, ToolCallCallResult, ToolDefinition } from "@threadline/client";
import { readTextFile } from "./fileAccess";

/** 0-based, as editors count. Tools print 1-based lines for the model. */
export interface TextPosition {
  line: number;
  character: number;
}
export interface TextRange {
  start: TextPosition;
  end: TextPosition;
}

export interface EditorSelection {
  path: string;
  languageId: string;
  isDirty: boolean;
  range: TextRange;
  /** The selected text, or "" for an empty selection (a cursor). */
  text: string;
}

export interface OpenDocument {
  path: string;
  languageId: string;
  isDirty: boolean;
  lineCount: number;
  isActive: boolean;
}

export type Severity = "error" | "warning" | "information" | "hint";

export interface DiagnosticInfo {
  path: string;
  severity: Severity;
  message: string;
  range: TextRange;
  source?: string;
  code?: string | number;
}

/** What the tools need from an editor. */
export interface EditorHost {
  activeSelection(): EditorSelection | undefined;
  openDocuments(): OpenDocument[];
  diagnostics(path?: string): DiagnosticInfo[];
  /** The current text of an open document, unsaved edits included; undefined if not open. */
  documentText(path: string): string | undefined;
}

const noArguments = { type: "object", properties: {}, additionalProperties: false };

export const EDITOR_TOOLS: ToolDefinition[] = [
  {
    name: "editor_get_selection",
    description:
      "The file in the user's active editor, the selected lines and the selected text " +
      "(unsaved edits included). Use it when the user refers to 'this', 'here' or 'the selection'.",
    inputSchema: noArguments,
  },
  {
    name: "editor_list_open_files",
    description:
      "Files open in the user's editor, with their language, line count and whether they have unsaved changes.",
    inputSchema: noArguments,
  },
  {
    name: "editor_read_file",
    description:
      "Read a file as the editor sees it: an open file's unsaved text, otherwise the file on disk. " +
      "`line` is the 1-based first line, `limit` the number of lines.",
    inputSchema: {
      type: "object",
      properties: {
        path: { type: "string", description: "Absolute, or relative to the workspace folder" },
        line: { type: "integer", minimum: 1 },
        limit: { type: "integer", minimum: 1 },
      },
      required: ["path"],
      additionalProperties: false,
    },
  },
  {
    name: "editor_get_diagnostics",
    description:
      "Errors and warnings the editor's language services report, for one file or for all files.",
    inputSchema: {
      type: "object",
      properties: {
        path: { type: "string", description: "Only this file (absolute or workspace-relative)" },
        severity: {
          type: "string",
          enum: ["error", "warning", "information", "hint"],
          description: "Only this severity and worse",
        },
      },
      additionalProperties: false,
    },
  },
];

const SEVERITY_ORDER: Severity[] = ["error", "warning", "information", "hint"];

function text(value: string, isError = false): ToolCallCallResult {
  return { content: [{ type: "text", text: value }], isError };
}

function lines(range: TextRange): string {
  const a = range.start.line + 1;
  const b = range.end.line + 1;
  return a === b ? `line ${a}` : `lines ${a}-${b}`;
}

function str(value: unknown): string | undefined {
  return typeof value === "string" && value.length > 0 ? value : undefined;
}

function int(value: unknown): number | undefined {
  return typeof value === "number" && Number.isInteger(value) && value > 0 ? value : undefined;
}

export class EditorTools {
  constructor(
    private readonly host: EditorHost,
    /** Relative paths resolve against this (the session's workspace folder). */
    private readonly cwd: () => string,
  ) {}

  /** True for the tools this module owns; other `tool/call`s belong elsewhere. */
  owns(name: string): boolean {
    return EDITOR_TOOLS.some((t) => t.name === name);
  }

  private path(p: string): string {
    return isAbsolute(p) ? p : resolve(this.cwd(), p);
  }

  async run(call: Pick<ToolCallCall, "name" | "arguments" | "sessionId">): Promise<ToolCallCallResult> {
    const args = call.arguments ?? {};
    switch (call.name) {
      case "editor_get_selection":
        return this.selection();
      case "editor_list_open_files":
        return this.openFiles();
      case "editor_read_file": {
        const path = str(args.path);
        if (!path) return text("editor_read_file needs a `path`", true);
        try {
          const { content } = await readTextFile(this.host, {
            sessionId: call.sessionId,
            path: this.path(path),
            line: int(args.line) ?? null,
            limit: int(args.limit) ?? null,
          });
          return text(content);
        } catch (err) {
          return text(`cannot read ${path}: ${err instanceof Error ? err.message : String(err)}`, true);
        }
      }
      case "editor_get_diagnostics":
        return this.diagnosticsResult(str(args.path), str(args.severity) as Severity | undefined);
      default:
        return text(`unknown editor tool ${call.name}`, true);
    }
  }

  private selection(): ToolCallCallResult {
    const sel = this.host.activeSelection();
    if (!sel) return text("No file is open in an active editor.");
    const head = `${sel.path} (${sel.languageId}${sel.isDirty ? ", unsaved changes" : ""})`;
    if (!sel.text) {
      return text(`${head}\ncursor at line ${sel.range.start.line + 1}, column ${sel.range.start.character + 1}; nothing selected`);
    }
    return text(`${head}\nselection: ${lines(sel.range)}\n\n${sel.text}`);
  }

  private openFiles(): ToolCallCallResult {
    const docs = this.host.openDocuments();
    if (!docs.length) return text("No files are open.");
    return text(
      docs
        .map((d) => `${d.path} (${d.languageId}, ${d.lineCount} lines${d.isDirty ? ", unsaved changes" : ""}${d.isActive ? ", active" : ""})`)
        .join("\n"),
    );
  }

  private diagnosticsResult(path: string | undefined, severity: Severity | undefined): ToolCallCallResult {
    const limit = severity ? SEVERITY_ORDER.indexOf(severity) : SEVERITY_ORDER.length - 1;
    const found = this.host
      .diagnostics(path ? this.path(path) : undefined)
      .filter((d) => SEVERITY_ORDER.indexOf(d.severity) <= limit);
    if (!found.length) return text(path ? `No diagnostics for ${path}.` : "No diagnostics.");
    return text(
      found
        .map((d) => {
          const where = `${d.path}:${d.range.start.line + 1}:${d.range.start.character + 1}`;
          const origin = [d.source, d.code].filter((x) => x !== undefined && x !== "").join(" ");
          return `${where} ${d.severity}: ${d.message}${origin ? ` [${origin}]` : ""}`;
        })
        .join("\n"),
    );
  }
}
