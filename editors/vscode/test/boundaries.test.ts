/** The layering the design relies on: only src/vscode may import `vscode`. */
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { test } from "node:test";

const root = resolve(__dirname, "../..");

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? files(p) : p.endsWith(".ts") ? [p] : [];
  });
}

const importsVscode = /(from\s+["']vscode["']|require\(\s*["']vscode["']\s*\))/;

test("src/core, webview/src and the client package never import vscode", () => {
  const checked = [
    ...files(join(root, "src", "core")),
    ...files(join(root, "webview", "src")),
    ...files(resolve(root, "../../clients/typescript/src")),
  ];
  assert.ok(checked.length > 10);
  const offenders = checked.filter((f) => importsVscode.test(readFileSync(f, "utf8")));
  assert.deepEqual(offenders, []);
});

test("the vscode adapters do import it (the check above can see an import)", () => {
  assert.ok(files(join(root, "src", "vscode")).some((f) => importsVscode.test(readFileSync(f, "utf8"))));
});
