/**
 * The type generator and its drift check, run as CI runs them (the CLI), against copies
 * of the real schema.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { test } from "node:test";

const pkg = resolve(__dirname, "../..");
const script = join(pkg, "scripts", "generate-protocol.mjs");
const schemaPath = resolve(pkg, "../../protocol/schema.json");
const checkedIn = join(pkg, "src", "generated", "protocol.ts");

/** The body of `export interface <name> { ... }` in generated text. */
function interfaceBody(text: string, name: string): string {
  const start = text.indexOf(`export interface ${name} {\n`);
  assert.ok(start >= 0, `interface ${name} generated`);
  return text.slice(start, text.indexOf("\n}\n", start));
}

function run(args: string[]) {
  return spawnSync(process.execPath, [script, ...args], { encoding: "utf8", timeout: 30_000 });
}

function tempDir(t: { after: (fn: () => void) => void }) {
  const dir = mkdtempSync(join(tmpdir(), "threadline-gen-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test("the checked-in protocol.ts is what the generator makes from schema.json", () => {
  const res = run(["--check"]);
  assert.equal(res.status, 0, res.stderr);
});

test("--check fails, naming the first difference, when the schema changed", (t) => {
  const dir = tempDir(t);
  const schema = JSON.parse(readFileSync(schemaPath, "utf8"));
  schema.$defs.ForkResult.properties.brandNewField = { type: "string", title: "Brandnewfield" };
  const changed = join(dir, "schema.json");
  writeFileSync(changed, JSON.stringify(schema));
  const res = run(["--check", "--schema", changed, "--out", checkedIn]);
  assert.equal(res.status, 1);
  const kept = /regenerated copy: (.+?protocol\.ts)\)/.exec(res.stderr)?.[1];
  assert.ok(kept, res.stderr);
  assert.equal(readFileSync(kept, "utf8").includes("brandNewField?: string;"), true);
  rmSync(dirname(kept), { recursive: true, force: true });
  assert.match(res.stderr, /is stale/);
  assert.match(res.stderr, /brandNewField\?: string;/);
});

test("generated types: discriminators required, unions from oneOf, strict params closed", (t) => {
  const dir = tempDir(t);
  const out = join(dir, "protocol.ts");
  const res = run(["--out", out]);
  assert.equal(res.status, 0, res.stderr);
  const text = readFileSync(out, "utf8");
  assert.equal(text, readFileSync(checkedIn, "utf8"));
  assert.match(interfaceBody(text, "AgentMessageChunk"), /\n  sessionUpdate: "agent_message_chunk";/);
  assert.match(interfaceBody(text, "TextContent"), /\n  type: "text";/);
  assert.match(interfaceBody(text, "SessionNotification"), /update: AgentMessageChunk \| AgentThoughtChunk \|/);
  const sessionRef = interfaceBody(text, "SessionRef");
  assert.match(sessionRef, /sessionId: string;/);
  assert.doesNotMatch(sessionRef, /\[key: string\]/, "params models reject unknown keys");
  assert.match(text, /SESSION_NOT_FOUND: -32002,/);
});

test("an unsupported JSON Schema keyword fails loudly instead of becoming unknown", (t) => {
  const dir = tempDir(t);
  const schema = JSON.parse(readFileSync(schemaPath, "utf8"));
  schema.$defs.ForkResult.properties.sessionId.patternProperties = { "^x": {} };
  const changed = join(dir, "schema.json");
  writeFileSync(changed, JSON.stringify(schema));
  const res = run(["--schema", changed, "--out", join(dir, "out.ts")]);
  assert.notEqual(res.status, 0);
  assert.match(res.stderr, /unsupported JSON Schema keyword "patternProperties"/);
});
