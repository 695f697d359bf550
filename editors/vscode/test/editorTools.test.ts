/**
 * Editor tools end to end: the real sidecar's scripted model calls them through
 * `tool/call`, the extension's EditorTools answer from an in-memory editor state (VS Code
 * itself cannot run here), and the answers land in the transcript.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { ChatController } from "../src/core/chatController";
import { EDITOR_TOOLS, EditorTools, type EditorHost } from "../src/core/editorTools";
import { RecordingSink, scripted, sidecar } from "./sidecar";

function workspace(t: { after: (fn: () => void) => void }) {
  const dir = mkdtempSync(join(tmpdir(), "threadline-ws-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function editor(dir: string): EditorHost {
  const mainTs = join(dir, "main.ts");
  writeFileSync(mainTs, "const saved = 1;\n");
  const unsaved = "const unsaved = 2;\nexport function add(a: number, b: number) {\n  return a + b;\n}\n";
  return {
    activeSelection: () => ({
      path: mainTs,
      languageId: "typescript",
      isDirty: true,
      range: { start: { line: 1, character: 0 }, end: { line: 3, character: 1 } },
      text: "export function add(a: number, b: number) {\n  return a + b;\n}",
    }),
    openDocuments: () => [{ path: mainTs, languageId: "typescript", isDirty: true, lineCount: 5, isActive: true }],
    diagnostics: (path) =>
      [
        {
          path: mainTs,
          severity: "error" as const,
          message: "Cannot find name 'sum'.",
          range: { start: { line: 2, character: 9 }, end: { line: 2, character: 12 } },
          source: "ts",
          code: 2304,
        },
        {
          path: join(dir, "other.ts"),
          severity: "hint" as const,
          message: "unused",
          range: { start: { line: 0, character: 0 }, end: { line: 0, character: 1 } },
        },
      ].filter((d) => !path || d.path === path),
    documentText: (path) => (path === mainTs ? unsaved : undefined),
  };
}

async function runTool(t: Parameters<typeof sidecar>[0], name: string, args: Record<string, unknown>) {
  const dir = workspace(t);
  const tools = new EditorTools(editor(dir), () => dir);
  const { client } = await sidecar(t, { toolCall: (call) => tools.run(call) });
  const sink = new RecordingSink();
  const chat = new ChatController(client, sink, {
    cwd: () => dir,
    tools: () => EDITOR_TOOLS,
    defaultModel: () => scripted({ rounds: [[{ tool_call: { name, arguments: args } }], [{ text: "ok" }]] }),
  });
  await chat.handle({ type: "prompt", text: "use the editor" });
  const { messages } = await client.history(chat.currentSessionId!);
  const block = messages.find((m) => m.role === "tool")?.content[0];
  assert.ok(block && block.type === "tool_result", JSON.stringify(messages));
  const text = block.content.map((c) => (c.type === "text" ? c.text : "")).join("");
  // The webview saw the call as it ran, with the same id as the transcript.
  const started = sink.of("update").find((m) => m.notification.update.sessionUpdate === "tool_call");
  assert.equal(started?.notification.update.sessionUpdate === "tool_call" && started.notification.update.toolCallId, block.toolUseId);
  return { text, isError: block.isError, dir };
}

test("editor_get_selection returns the active selection with 1-based lines", async (t) => {
  const { text, isError, dir } = await runTool(t, "editor_get_selection", {});
  assert.equal(isError, false);
  assert.equal(
    text,
    `${join(dir, "main.ts")} (typescript, unsaved changes)\nselection: lines 2-4\n\nexport function add(a: number, b: number) {\n  return a + b;\n}`,
  );
});

test("editor_read_file returns an open file's unsaved text, windowed by line/limit", async (t) => {
  const { text, isError } = await runTool(t, "editor_read_file", { path: "main.ts", line: 2, limit: 1 });
  assert.equal(isError, false);
  assert.equal(text, "export function add(a: number, b: number) {");
});

test("editor_list_open_files lists documents with their dirty state", async (t) => {
  const { text, dir } = await runTool(t, "editor_list_open_files", {});
  assert.equal(text, `${join(dir, "main.ts")} (typescript, 5 lines, unsaved changes, active)`);
});

test("editor_get_diagnostics filters by file and severity", async (t) => {
  const { text, dir } = await runTool(t, "editor_get_diagnostics", { severity: "warning" });
  assert.equal(text, `${join(dir, "main.ts")}:3:10 error: Cannot find name 'sum'. [ts 2304]`);
});

test("editor_read_file on a missing file is a tool error, not a crash", async (t) => {
  const { text, isError } = await runTool(t, "editor_read_file", { path: "/nonexistent/file.txt" });
  assert.equal(isError, true);
  assert.match(text, /cannot read \/nonexistent\/file.txt/);
});
