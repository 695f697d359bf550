/** The chat's unified diffs (edit cards, the turn's files) and the question form's reading of answers. */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { CreateElicitationParams } from "@threadline/client";
import { readAnswers } from "../webview/src/elicitation";
import { parseUnified, unifiedDiff } from "../webview/src/unifiedDiff";

const text = (lines: { mark: string; text: string }[]) => lines.map((l) => (l.mark === "@" ? l.text : `${l.mark}${l.text}`));

test("unifiedDiff: one changed line with three lines of context, as git writes it", () => {
  const before = ["a", "b", "c", "d", "e", "f", "g", "h"].join("\n") + "\n";
  const after = before.replace("e\n", "E\n");
  assert.deepEqual(text(unifiedDiff(before, after)), ["@@ -2,7 +2,7 @@", " b", " c", " d", "-e", "+E", " f", " g", " h"]);
});

test("unifiedDiff: changes far apart are two hunks; near ones one; a new file; no change", () => {
  const lines = Array.from({ length: 20 }, (_, i) => `line ${i + 1}`);
  const before = lines.join("\n") + "\n";
  const after = before.replace("line 2\n", "line two\n").replace("line 19\n", "");
  const hunks = unifiedDiff(before, after).filter((l) => l.mark === "@").map((l) => l.text);
  assert.deepEqual(hunks, ["@@ -1,5 +1,5 @@", "@@ -16,5 +16,4 @@"]);
  const near = before.replace("line 5\n", "five\n").replace("line 8\n", "eight\n");
  assert.equal(unifiedDiff(before, near).filter((l) => l.mark === "@").length, 1);
  assert.deepEqual(text(unifiedDiff(null, "x\ny\n")), ["@@ -0,0 +1,2 @@", "+x", "+y"]);
  assert.deepEqual(unifiedDiff(before, before), []);
});

test("unifiedDiff: an insertion in the middle keeps the common lines as context", () => {
  assert.deepEqual(text(unifiedDiff("a\nb\nc\n", "a\nb\nnew\nc\n")), ["@@ -1,3 +1,4 @@", " a", " b", "+new", " c"]);
});

test("parseUnified: git's text without its file header", () => {
  const git = "diff --git a/x b/x\nindex 1..2 100644\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n";
  assert.deepEqual(text(parseUnified(git)), ["@@ -1,2 +1,2 @@", " keep", "-old", "+new"]);
});

test("readAnswers: typed by the schema; required fields left empty and non-numbers are named", () => {
  const params: CreateElicitationParams = {
    sessionId: "s",
    mode: "form",
    message: "?",
    requestedSchema: {
      type: "object",
      properties: {
        name: { type: "string", title: "name" },
        age: { type: "integer", title: "age" },
        tls: { type: "boolean", title: "tls" },
        note: { type: "string", title: "note" },
      },
      required: ["name", "age"],
    },
  };
  assert.deepEqual(readAnswers(params, { name: " Ada ", age: "36", tls: true, note: "" }), {
    content: { name: "Ada", age: 36, tls: true },
    missing: [],
  });
  assert.deepEqual(readAnswers(params, { name: "", age: "3.5", tls: false }).missing, ["name", "age (a whole number)"]);
});
