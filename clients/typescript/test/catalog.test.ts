/** Finding sessions through the typed calls: rename, archive, tags, search, export/import. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { isRpcError } from "../src/index";
import { CWD, startServer } from "./helpers";

test("setTitle renames (with a session_info_update); archive hides from list until unarchived", async (t) => {
  const { client, notifications } = await startServer(t);
  const { sessionId } = await client.newSession({ cwd: CWD, threadline: { model: "scripted:echo" } });
  await client.prompt(sessionId, "descale the kettle with citric acid");
  await client.setTitle(sessionId, "  Kettle\n care  ");
  const info = notifications.filter((n) => n.sessionId === sessionId && n.update.sessionUpdate === "session_info_update");
  assert.equal((info.at(-1)!.update as { title?: string }).title, "Kettle care");
  const listed = (await client.list()).sessions.find((s) => s.sessionId === sessionId);
  assert.equal(listed?.title, "Kettle care");
  assert.equal(listed?._meta?.preview, "descale the kettle with citric acid");

  await client.archive(sessionId);
  assert.ok(!(await client.list()).sessions.some((s) => s.sessionId === sessionId));
  const archived = await client.listFiltered({ archived: true });
  assert.deepEqual(archived.sessions.map((s) => s.sessionId), [sessionId]);
  assert.equal(archived.sessions[0]!._meta?.archived, true);
  await client.archive(sessionId, false);
  assert.ok((await client.list()).sessions.some((s) => s.sessionId === sessionId));

  await client.setTags(sessionId, ["home", "chores"]);
  const tagged = await client.listFiltered({ tag: "home" });
  assert.deepEqual(tagged.sessions.map((s) => s.sessionId), [sessionId]);
  assert.deepEqual(tagged.sessions[0]!._meta?.tags, ["chores", "home"]);
  assert.equal((await client.listFiltered({ tag: "work" })).sessions.length, 0);
});

test("search finds messages and titles with snippets; bad queries are -32602", async (t) => {
  const { client } = await startServer(t);
  const { sessionId } = await client.newSession({ cwd: CWD, threadline: { model: "scripted:echo" } });
  await client.prompt(sessionId, "the kettle needs descaling every month");
  const other = (await client.newSession({ cwd: CWD, threadline: { model: "scripted:echo" } })).sessionId;
  await client.prompt(other, "unrelated words about gardening");
  await client.archive(sessionId);

  const { hits } = await client.search({ query: "kettle" });
  assert.ok(hits.length >= 1);
  const { messages } = await client.history(sessionId);
  assert.ok(hits.every((h) => h.sessionId === sessionId));
  const userHit = hits.find((h) => h.role === "user")!;
  assert.equal(userHit.messageId, messages[0]!.messageId);
  assert.equal(userHit.archived, true, "archived sessions stay searchable");
  assert.ok(userHit.snippet.some((s) => s.match && s.text.toLowerCase() === "kettle"));
  assert.match(userHit.snippet.map((s) => s.text).join(""), /descaling every month/);

  const page = await client.search({ query: "kettle", limit: 1 });
  assert.equal(page.hits.length, 1);
  if (hits.length > 1) assert.ok(page.nextCursor);

  await assert.rejects(client.search({ query: "   " }), (err: unknown) => isRpcError(err, "INVALID_PARAMS"));
});

test("exportSession and importSession round-trip a session", async (t) => {
  const { client } = await startServer(t);
  const { sessionId } = await client.newSession({ cwd: CWD, threadline: { model: "scripted:echo" } });
  await client.prompt(sessionId, "one line to keep");
  const md = await client.exportSession({ sessionId, format: "markdown" });
  assert.equal(md.format, "markdown");
  assert.match(md.content, /one line to keep/);
  const log = await client.exportSession({ sessionId, format: "jsonl" });
  const imported = await client.importSession({ content: log.content });
  assert.notEqual(imported.sessionId, sessionId);
  assert.equal(imported.messages, 2);
  const copy = (await client.history(imported.sessionId)).messages;
  const original = (await client.history(sessionId)).messages;
  assert.deepEqual(
    copy.map((m) => [m.role, m.content]),
    original.map((m) => [m.role, m.content]),
  );
});
