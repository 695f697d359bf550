import assert from "node:assert/strict";
import { test } from "node:test";
import type { UpdateOf } from "../src/index";
import { CWD, scripted, startServer, streamedText } from "./helpers";

test("streamed agent_message_chunk text equals the message text in history", async (t) => {
  const { client, notifications } = await startServer(t);
  const model = scripted({
    rounds: [
      [
        { thought: "thinking it over", signature: "sig-1" },
        { text: "Hello, " },
        { repeat: { text: "tok ", count: 40 } },
        { text: "done." },
        { usage: { input_tokens: 7, output_tokens: 42 } },
      ],
    ],
  });
  const { sessionId } = await client.newSession({ cwd: CWD, threadline: { model } });
  const thoughts: UpdateOf<"agent_thought_chunk">[] = [];
  client.onUpdateOf("agent_thought_chunk", (u) => thoughts.push(u));

  const result = await client.prompt(sessionId, "Say hello");
  assert.equal(result.stopReason, "end_turn");

  const { messages } = await client.history(sessionId);
  assert.deepEqual(
    messages.map((m) => m.role),
    ["user", "assistant"],
  );
  const assistant = messages[1]!;
  const historyText = assistant.content
    .map((b) => (b.type === "text" ? b.text : ""))
    .join("");
  assert.equal(historyText, "Hello, " + "tok ".repeat(40) + "done.");

  const streamed = streamedText(notifications, sessionId);
  assert.equal(streamed.get(assistant.messageId), historyText);
  assert.equal(streamed.size, 1, "all chunks carry the assistant message id");

  assert.equal(thoughts.map((u) => (u.content.type === "text" ? u.content.text : "")).join(""), "thinking it over");
  const thought = assistant.content.find((b) => b.type === "thought");
  assert.ok(thought && thought.type === "thought");
  assert.equal(thought.text, "thinking it over");
  assert.equal(assistant.usage?.outputTokens, 42);
  assert.equal(result.usage?.outputTokens, 42);
});

test("onSessionUpdate only delivers the subscribed session's updates", async (t) => {
  const { client } = await startServer(t);
  const model = scripted({ rounds: [[{ text: "one" }]] });
  const a = await client.newSession({ cwd: CWD, threadline: { model } });
  const b = await client.newSession({ cwd: CWD, threadline: { model: "scripted:echo" } });
  const seenA: string[] = [];
  const sub = client.onSessionUpdate(a.sessionId, (u) => {
    if (u.sessionUpdate === "agent_message_chunk" && u.content.type === "text") seenA.push(u.content.text);
  });
  await Promise.all([client.prompt(a.sessionId, "x"), client.prompt(b.sessionId, "echo me")]);
  sub.dispose();
  assert.equal(seenA.join(""), "one");
  await client.prompt(a.sessionId, "again");
  assert.equal(seenA.join(""), "one", "no delivery after dispose");
});
