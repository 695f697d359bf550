/** fs/read_text_file and fs/write_text_file as the editor answers them. */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { isRpcError } from "@threadline/client";
import { readTextFile, sliceLines, writeTextFile } from "../src/core/fileAccess";
import { describePermission, outcomeFor } from "../src/core/permissions";

function dir(t: { after: (fn: () => void) => void }) {
  const d = mkdtempSync(join(tmpdir(), "threadline-fs-"));
  t.after(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

test("reads prefer the open document's unsaved text over the disk", async (t) => {
  const d = dir(t);
  const open = join(d, "open.txt");
  const closed = join(d, "closed.txt");
  writeFileSync(open, "on disk\n");
  writeFileSync(closed, "a\nb\nc\nd\n");
  const source = { documentText: (p: string) => (p === open ? "unsaved\ntext" : undefined) };
  assert.deepEqual(await readTextFile(source, { sessionId: "s", path: open }), { content: "unsaved\ntext" });
  assert.deepEqual(await readTextFile(source, { sessionId: "s", path: closed, line: 2, limit: 2 }), { content: "b\nc" });
});

test("relative paths are refused with -32602", async () => {
  await assert.rejects(
    readTextFile({ documentText: () => undefined }, { sessionId: "s", path: "relative.txt" }),
    (err: unknown) => isRpcError(err, "INVALID_PARAMS"),
  );
});

test("writes go to the open document when there is one, else to disk (creating folders)", async (t) => {
  const d = dir(t);
  const written: [string, string][] = [];
  const open = join(d, "open.txt");
  const writer = {
    writeOpenDocument: async (p: string, c: string) => {
      if (p !== open) return false;
      written.push([p, c]);
      return true;
    },
  };
  assert.deepEqual(await writeTextFile(writer, { sessionId: "s", path: open, content: "new" }), {});
  assert.deepEqual(written, [[open, "new"]]);
  const fresh = join(d, "sub", "dir", "new.txt");
  await writeTextFile(writer, { sessionId: "s", path: fresh, content: "hello" });
  assert.equal(readFileSync(fresh, "utf8"), "hello");
});

test("sliceLines is 1-based and tolerates windows past the end", () => {
  assert.equal(sliceLines("a\nb\nc", 3, 10), "c");
  assert.equal(sliceLines("a\nb\nc", null, 2), "a\nb");
  assert.equal(sliceLines("a\nb\nc", 5, 1), "");
});

test("permission prompts: labels in server order, dismissal rejects once, withdrawal cancels", () => {
  const params = {
    sessionId: "s",
    toolCall: { toolCallId: "c1", title: "write_file", kind: "edit" as const, rawInput: { path: "/x" } },
    options: [
      { optionId: "a1", name: "Allow once", kind: "allow_once" as const },
      { optionId: "a2", name: "Always allow", kind: "allow_always" as const },
      { optionId: "r1", name: "Reject", kind: "reject_once" as const },
    ],
  };
  const q = describePermission(params);
  assert.equal(q.message, "Threadline wants to run write_file (edit).");
  assert.match(q.detail, /"path": "\/x"/);
  assert.deepEqual(q.choices.map((c) => c.label), ["Allow once", "Always allow", "Reject"]);
  assert.deepEqual(outcomeFor(q, "Always allow"), { outcome: { outcome: "selected", optionId: "a2" } });
  assert.deepEqual(outcomeFor(q, undefined), { outcome: { outcome: "selected", optionId: "r1" } });
  assert.deepEqual(outcomeFor(q, "Allow once", true), { outcome: { outcome: "cancelled" } });
});
