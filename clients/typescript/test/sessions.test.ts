import assert from "node:assert/strict";
import { test } from "node:test";
import { isRpcError, type SessionUpdate, type ThreadlineClient } from "../src/index";
import { CWD, scripted, startServer, streamedText } from "./helpers";

/** Two echo turns; returns the session id. */
async function twoTurns(client: ThreadlineClient): Promise<string> {
  const { sessionId } = await client.newSession({ cwd: CWD, threadline: { model: "scripted:echo" } });
  await client.prompt(sessionId, "first question");
  await client.prompt(sessionId, "second question");
  return sessionId;
}

function textOf(update: SessionUpdate): string {
  switch (update.sessionUpdate) {
    case "user_message_chunk":
    case "agent_message_chunk":
    case "agent_thought_chunk":
      return update.content.type === "text" ? update.content.text : "";
    default:
      return "";
  }
}

test("list shows sessions with cwd and message counts; close keeps the session", async (t) => {
  const { client } = await startServer(t);
  const a = await twoTurns(client);
  const { sessionId: b } = await client.newSession({ cwd: CWD, threadline: { model: "scripted:echo" } });
  const { sessions } = await client.list({ cwd: CWD });
  const byId = new Map(sessions.map((s) => [s.sessionId, s]));
  assert.ok(byId.has(a) && byId.has(b));
  assert.equal(byId.get(a)!.cwd, CWD);
  assert.equal((byId.get(a)!._meta as { messageCount?: number }).messageCount, 4);

  await client.close(a);
  const { messages } = await client.history(a);
  assert.equal(messages.length, 4, "a closed session is only unloaded, still durable");
});

test("after a restart, load replays the history as updates and resume continues it", async (t) => {
  const first = await startServer(t);
  const sessionId = await twoTurns(first.client);
  const before = (await first.client.history(sessionId)).messages;
  assert.equal(await first.client.stop(), 0);

  const second = await startServer(t, { home: first.home });
  await second.client.load({ sessionId, cwd: CWD });
  const replayed = second.notifications.filter((n) => n.sessionId === sessionId).map((n) => n.update);
  const userText = replayed
    .filter((u) => u.sessionUpdate === "user_message_chunk")
    .map(textOf)
    .join("|");
  assert.equal(userText, "first question|second question");
  const agentText = streamedText(second.notifications, sessionId);
  for (const m of before.filter((m) => m.role === "assistant")) {
    const text = m.content.map((b) => (b.type === "text" ? b.text : "")).join("");
    assert.equal(agentText.get(m.messageId), text, `replayed text of ${m.messageId}`);
  }

  const third = await startServer(t, { home: first.home });
  await third.client.resume({ sessionId });
  assert.equal(third.notifications.length, 0, "resume does not replay");
  await third.client.prompt(sessionId, "third question");
  const { messages } = await third.client.history(sessionId);
  assert.equal(messages.length, 6);
  assert.deepEqual(messages.slice(0, 4), before);
});

test("delete removes a session: its id is unknown afterwards", async (t) => {
  const { client } = await startServer(t);
  const sessionId = await twoTurns(client);
  await client.delete(sessionId);
  await assert.rejects(client.history(sessionId), (err: unknown) => isRpcError(err, "SESSION_NOT_FOUND"));
  const { sessions } = await client.list();
  assert.ok(!sessions.some((s) => s.sessionId === sessionId));
});

test("setConfigOption switches the model for the next turn", async (t) => {
  const { client } = await startServer(t);
  const { sessionId, configOptions } = await client.newSession({
    cwd: CWD,
    threadline: { model: "scripted:echo" },
  });
  assert.equal(configOptions?.find((o) => o.id === "model")?.currentValue, "scripted:echo");
  const next = scripted({ rounds: [[{ text: "from the new model" }]] });
  const result = await client.setModel(sessionId, next);
  assert.equal(result.configOptions.find((o) => o.id === "model")?.currentValue, next);
  await client.prompt(sessionId, "hello");
  const { messages } = await client.history(sessionId);
  assert.deepEqual(messages[1]!.content, [{ type: "text", text: "from the new model" }]);
  assert.equal(messages[1]!.model, next);
});

test("fork branches at a message; the parent is untouched", async (t) => {
  const { client } = await startServer(t);
  const parent = await twoTurns(client);
  const parentHistory = (await client.history(parent)).messages;
  const forkPoint = parentHistory[1]!; // the first answer
  const forked = await client.fork({ sessionId: parent, messageId: forkPoint.messageId });
  assert.equal(forked.parentSessionId, parent);
  assert.equal(forked.forkedAtMessageId, forkPoint.messageId);
  assert.notEqual(forked.sessionId, parent);

  const child = (await client.history(forked.sessionId)).messages;
  assert.deepEqual(
    child.map((m) => m.messageId),
    parentHistory.slice(0, 2).map((m) => m.messageId),
  );
  await client.prompt(forked.sessionId, "a different second question");
  assert.deepEqual((await client.history(parent)).messages, parentHistory, "parent untouched");
  const childAfter = (await client.history(forked.sessionId)).messages;
  assert.equal(childAfter.length, 4);
  const { sessions } = await client.list();
  const info = sessions.find((s) => s.sessionId === forked.sessionId);
  assert.equal((info?._meta as { parentSessionId?: string } | undefined)?.parentSessionId, parent);
});

test("compact summarises older turns and reports progress as compaction_update", async (t) => {
  const { client, notifications } = await startServer(t);
  // Long turns: a summary is only committed when it is shorter than what it replaces.
  const model = scripted({ rounds: [[{ text: "an answer" }]], summary: [{ text: "Short summary." }] });
  const { sessionId } = await client.newSession({ cwd: CWD, threadline: { model } });
  for (const q of ["first", "second", "third"]) {
    await client.prompt(sessionId, `${q} question ${"with detail ".repeat(60)}`);
  }
  const result = await client.compact({ sessionId, keepTurns: 1 });
  assert.equal(typeof result.summary, "string");
  assert.ok(result.summary.length > 0);
  assert.equal(result.messagesBefore, 6);
  assert.ok(result.messagesAfter < result.messagesBefore);

  const progress = notifications
    .map((n) => n.update)
    .filter((u) => u.sessionUpdate === "compaction_update");
  assert.ok(progress.length >= 1);
  assert.equal(progress.at(-1)!.status, "completed");

  const { messages } = await client.history(sessionId);
  assert.ok(messages.some((m) => m.compacted), "replaced messages stay, marked compacted");
  const summary = messages.flatMap((m) => m.content).find((b) => b.type === "summary");
  assert.ok(summary && summary.type === "summary");
  assert.equal(summary.text, result.summary);
  await client.prompt(sessionId, "after compaction");
});
