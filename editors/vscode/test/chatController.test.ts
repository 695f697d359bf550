/** The chat's host side against a real sidecar: what the webview receives for each action. */
import assert from "node:assert/strict";
import { tmpdir } from "node:os";
import { test } from "node:test";
import type { ToolDefinition } from "@threadline/client";
import { ChatController } from "../src/core/chatController";
import { describePermission, outcomeFor } from "../src/core/permissions";
import { RecordingSink, scripted, sidecar, waitFor } from "./sidecar";

const CWD = tmpdir();

function controller(
  client: ConstructorParameters<typeof ChatController>[0],
  opts: { model?: string; tools?: ToolDefinition[] } = {},
) {
  const sink = new RecordingSink();
  const chat = new ChatController(client, sink, {
    cwd: () => CWD,
    tools: () => opts.tools ?? [],
    defaultModel: () => opts.model,
  });
  return { chat, sink };
}

test("ready then prompt: session, turnStarted, streamed updates equal to history, turnEnded", async (t) => {
  const { client } = await sidecar(t);
  const model = scripted({ rounds: [[{ thought: "hmm" }, { text: "Hello " }, { text: "there." }]] });
  const { chat, sink } = controller(client, { model });
  await chat.handle({ type: "ready" });
  assert.equal(sink.of("session")[0]?.sessionId, null, "no session before the first prompt");
  assert.ok(sink.of("session")[0]!.models.length > 0, "model picker is filled from initialize");

  await chat.handle({ type: "prompt", text: "Hi" });
  const session = sink.of("session").at(-1)!;
  assert.ok(session.sessionId);
  assert.equal(session.currentModel, model);
  assert.deepEqual(sink.of("turnStarted"), [{ type: "turnStarted", text: "Hi" }]);
  const ended = sink.of("turnEnded");
  assert.equal(ended.length, 1);
  assert.equal(ended[0]!.stopReason, "end_turn");

  const { messages } = await client.history(session.sessionId);
  const assistant = messages.find((m) => m.role === "assistant")!;
  assert.equal(ended[0]!.messageId, assistant.messageId);
  assert.equal(sink.agentText().get(assistant.messageId), "Hello there.");
  assert.ok(
    sink.of("update").some((m) => m.notification.update.sessionUpdate === "agent_thought_chunk"),
    "thoughts are forwarded",
  );
  const order = sink.messages.map((m) => m.type);
  assert.ok(order.indexOf("turnStarted") < order.indexOf("update"));
  assert.equal(order.at(-1), "turnEnded");
});

test("interrupt during a turn ends it with cancelled; a second prompt while running is queued, and held by the interrupt", async (t) => {
  const { client } = await sidecar(t);
  const { chat, sink } = controller(client, { model: scripted({ rounds: [[{ text: "partial" }, { hang: true }]] }) });
  const turn = chat.handle({ type: "prompt", text: "go" });
  await waitFor(() => sink.of("update").length > 0, 5000, "first update");
  assert.equal(chat.isRunning, true);
  const again = chat.handle({ type: "prompt", text: "again" });
  await waitFor(
    () =>
      sink.of("update").some((m) => {
        const u = m.notification.update;
        return u.sessionUpdate === "session_info_update" && (u._meta?.threadline?.queue?.length ?? 0) > 0;
      }),
    5000,
    "queued",
  );
  await chat.handle({ type: "interrupt" });
  await Promise.all([turn, again]);
  const { prompts } = await client.queue(chat.currentSessionId!);
  assert.deepEqual(prompts.map((p) => p.state), ["held"]);
  assert.equal(sink.of("turnEnded").at(-1)?.stopReason, "cancelled");
  assert.equal(chat.isRunning, false);
});

test("a provider failure becomes an error notice and a turnEnded(error)", async (t) => {
  const { client } = await sidecar(t);
  const { chat, sink } = controller(client, {
    model: scripted({ rounds: [[{ error: { reason: "boom", message: "provider exploded", retryable: false } }]] }),
  });
  await chat.handle({ type: "prompt", text: "go" });
  assert.equal(sink.of("notice").at(-1)?.level, "error");
  assert.match(sink.of("notice").at(-1)!.text, /-32011/);
  assert.equal(sink.of("turnEnded").at(-1)?.stopReason, "error");
});

test("sessions list, new session and resume replay the chosen session", async (t) => {
  const { client } = await sidecar(t);
  const { chat, sink } = controller(client, { model: "scripted:echo" });
  await chat.handle({ type: "prompt", text: "remember the word kiwi" });
  const first = chat.currentSessionId!;
  await chat.handle({ type: "newSession" });
  assert.equal(chat.currentSessionId, null);
  assert.equal(sink.messages.at(-2)?.type, "reset");
  await chat.handle({ type: "prompt", text: "another session" });
  const second = chat.currentSessionId!;
  assert.notEqual(first, second);

  await chat.handle({ type: "listSessions" });
  const listed = sink.of("sessions").at(-1)!.sessions.map((s) => s.sessionId);
  assert.ok(listed.includes(first) && listed.includes(second));

  const before = sink.messages.length;
  await chat.handle({ type: "resume", sessionId: first });
  assert.equal(chat.currentSessionId, first);
  const after = sink.messages.slice(before);
  assert.equal(after[0]?.type, "reset");
  assert.equal(after[1]?.type === "session" && after[1].sessionId, first);
  assert.equal(after[1]?.type === "session" && after[1].currentModel, "scripted:echo");
  const replayedUser = after
    .filter((m) => m.type === "update" && m.notification.update.sessionUpdate === "user_message_chunk")
    .map((m) => (m.type === "update" && m.notification.update.sessionUpdate === "user_message_chunk" && m.notification.update.content.type === "text" ? m.notification.update.content.text : ""));
  assert.deepEqual(replayedUser, ["remember the word kiwi"]);
  assert.ok(
    after.every((m) => m.type !== "update" || m.notification.sessionId === first),
    "only the resumed session's updates reach the view",
  );
});

test("the model picker: before a session it sets the new session's model, after it switches", async (t) => {
  const { client } = await sidecar(t);
  const { chat, sink } = controller(client);
  const a = scripted({ rounds: [[{ text: "from A" }]] });
  const b = scripted({ rounds: [[{ text: "from B" }]] });
  await chat.handle({ type: "setModel", model: a });
  assert.equal(sink.of("session").at(-1)?.currentModel, a);
  await chat.handle({ type: "prompt", text: "1" });
  await chat.handle({ type: "setModel", model: b });
  assert.equal(sink.of("session").at(-1)?.currentModel, b);
  await chat.handle({ type: "prompt", text: "2" });
  const texts = [...sink.agentText().values()];
  assert.deepEqual(texts, ["from A", "from B"]);
});

test("a tool that needs approval goes through the permission prompt mapping", async (t) => {
  const asked: string[] = [];
  const { client } = await sidecar(t, {
    permission: async (params) => {
      const question = describePermission(params);
      asked.push(question.message);
      return outcomeFor(question, "Allow once");
    },
    toolCall: async (call) => ({ content: [{ type: "text", text: `ran ${call.name}` }] }),
  });
  const tool: ToolDefinition = { name: "deploy", description: "Deploy", needsApproval: true };
  const { chat } = controller(client, {
    tools: [tool],
    model: scripted({ rounds: [[{ tool_call: { name: "deploy", arguments: { env: "prod" } } }], [{ text: "deployed" }]] }),
  });
  await chat.handle({ type: "prompt", text: "ship it" });
  assert.deepEqual(asked, ["Threadline wants to run deploy."]);
  const { messages } = await client.history(chat.currentSessionId!);
  const result = messages.find((m) => m.role === "tool")!.content[0]!;
  assert.ok(result.type === "tool_result");
  assert.equal(result.isError, false);
  assert.deepEqual(result.content, [{ type: "text", text: "ran deploy" }]);
});

test("fork from a message shows the child session with the parent's prefix", async (t) => {
  const { client } = await sidecar(t);
  const { chat, sink } = controller(client, { model: "scripted:echo" });
  await chat.handle({ type: "prompt", text: "one" });
  await chat.handle({ type: "prompt", text: "two" });
  const parent = chat.currentSessionId!;
  const firstAnswer = sink.of("turnEnded")[0]!.messageId!;
  await chat.handle({ type: "fork", messageId: firstAnswer });
  assert.deepEqual(sink.of("notice").filter((n) => n.level === "error"), []);
  const child = chat.currentSessionId!;
  assert.notEqual(child, parent);
  const session = sink.of("session").at(-1)!;
  assert.equal(session.parentSessionId, parent);
  const { messages } = await client.history(child);
  assert.equal(messages.length, 2);
  assert.equal(messages[1]!.messageId, firstAnswer);
});

test("compact reports its result to the view", async (t) => {
  const { client } = await sidecar(t);
  // Long turns: a summary is only committed when it is shorter than what it replaces.
  const model = scripted({ rounds: [[{ text: "an answer" }]], summary: [{ text: "Short summary." }] });
  const { chat, sink } = controller(client, { model });
  for (const q of ["one", "two", "three", "four"]) {
    await chat.handle({ type: "prompt", text: `${q} ${"with detail ".repeat(60)}` });
  }
  await chat.handle({ type: "compact" });
  const compacted = sink.of("compacted").at(-1);
  assert.ok(compacted, JSON.stringify(sink.of("notice")));
  assert.ok(compacted.result.summary.length > 0);
  assert.ok(
    sink.of("update").some((m) => m.notification.update.sessionUpdate === "compaction_update"),
  );
});

test("after a sidecar restart a new controller reloads the session on screen, context figure included", async (t) => {
  const { client, home } = await sidecar(t);
  const model = scripted({ rounds: [[{ text: "Hello." }, { usage: { input_tokens: 700, output_tokens: 5 } }]] });
  const figures = new Map<string, { used: number; size: number }>();
  const running: boolean[] = [];
  const first = new RecordingSink();
  const before = new ChatController(client, first, {
    cwd: () => CWD,
    tools: () => [],
    defaultModel: () => model,
    onRunning: (r) => running.push(r),
    contextFigures: figures,
  });
  await before.handle({ type: "prompt", text: "Hi" });
  assert.deepEqual(running, [true, false], "the editor hears when a turn runs");
  const ended = first.of("turnEnded")[0]!;
  const sid = before.currentSessionId!;
  const { messages } = await client.history(sid);
  assert.equal(ended.userMessageId, messages[0]!.messageId, "the typed message can be forked at once");
  await client.stop(5000);

  // A new sidecar on the same data, as Restart the Sidecar does.
  const { client: restarted } = await sidecar(t, {}, home);
  const second = new RecordingSink();
  const after = new ChatController(restarted, second, {
    cwd: () => CWD,
    tools: () => [],
    defaultModel: () => model,
    initialSessionId: sid,
    contextFigures: figures,
  });
  await after.handle({ type: "ready" });
  assert.equal(second.of("session").at(-1)?.sessionId, sid);
  assert.equal(second.agentText().get(messages[1]!.messageId), "Hello.");
  assert.deepEqual(second.of("context"), [{ type: "context", used: 705, size: 8192 }]);
});

test("a prompt typed while the session replays waits for the replay: its turn follows the history", async (t) => {
  const { client } = await sidecar(t);
  const model = scripted({ rounds: [[{ text: "One." }], [{ text: "Two." }], [{ text: "Three." }], [{ text: "Four." }]] });
  const first = controller(client, { model });
  for (const text of ["first", "second", "third"]) await first.chat.handle({ type: "prompt", text });
  const sid = first.chat.currentSessionId!;
  first.chat.dispose();

  // A view that opens on the session (a reloaded webview, a restarted sidecar) and the
  // user sends at once, while the replay still streams.
  const sink = new RecordingSink();
  const chat = new ChatController(client, sink, { cwd: () => CWD, tools: () => [], defaultModel: () => model, initialSessionId: sid });
  const ready = chat.handle({ type: "ready" });
  await chat.handle({ type: "prompt", text: "fourth" });
  await ready;
  const userTexts = sink.messages.flatMap((m) => {
    if (m.type === "turnStarted") return [m.text];
    if (m.type !== "update") return [];
    const u = m.notification.update;
    return u.sessionUpdate === "user_message_chunk" && u.content.type === "text" ? [u.content.text] : [];
  });
  assert.deepEqual(userTexts, ["first", "second", "third", "fourth"]);
  assert.equal(sink.of("turnEnded").at(-1)?.stopReason, "end_turn");
});

test("compacting is announced around the call; a fork names its parent by title", async (t) => {
  const { client } = await sidecar(t);
  const model = scripted({ rounds: [[{ text: "An answer long enough to be worth a summary, ".repeat(8) }]], summary: [{ text: "Short." }] });
  const { chat, sink } = controller(client, { model });
  for (const text of ["one", "two", "three", "four"]) await chat.handle({ type: "prompt", text });
  await chat.handle({ type: "compact" });
  const order = sink.messages.map((m) => m.type).filter((t) => t === "compacting" || t === "compacted");
  assert.deepEqual(order, ["compacting", "compacted", "compacting"]);
  assert.deepEqual(sink.of("compacting").map((m) => m.active), [true, false]);
  await chat.forkLatest();
  const notice = sink.of("notice").at(-1)!.text;
  assert.match(notice, /^Forked from “one”/);
  assert.doesNotMatch(notice, /sess_/);
  assert.equal(sink.of("session").at(-1)?.parentTitle, "one");
});

test("forks of forks are numbered, not titled · fork · fork", async (t) => {
  const { client } = await sidecar(t);
  const { chat, sink } = controller(client, { model: scripted({ rounds: [[{ text: "An answer." }]] }) });
  await chat.handle({ type: "prompt", text: "Colours" });
  const titles: (string | null | undefined)[] = [];
  for (let i = 0; i < 3; i++) {
    await chat.forkLatest();
    titles.push(sink.of("session").at(-1)?.title);
  }
  assert.deepEqual(titles, ["Colours · fork", "Colours · fork 2", "Colours · fork 3"]);
  assert.equal(sink.of("session").at(-1)?.parentTitle, "Colours · fork 2", "each names its own parent");
});

test("two views of one session on one client: a replay shows once, a turn in one shows in the other", async (t) => {
  const { client } = await sidecar(t);
  const model = scripted({ rounds: [[{ text: "Red, yellow, blue." }]] });
  const a = controller(client, { model });
  await a.chat.handle({ type: "prompt", text: "Name the colours." });
  const sid = a.chat.currentSessionId!;
  const b = controller(client, { model });
  const before = a.sink.of("update").length;
  await b.chat.handle({ type: "resume", sessionId: sid });
  assert.equal(a.sink.of("update").length, before, "the other view's replay is not shown again here");
  assert.ok(b.sink.of("update").length > 0);
  await b.chat.handle({ type: "prompt", text: "And more?" });
  assert.deepEqual(a.sink.of("turnStarted").map((m) => m.text), ["Name the colours.", "And more?"]);
  assert.equal(a.sink.of("turnEnded").length, 2);
  assert.ok(a.sink.agentText().size >= 2, "the answer streamed into both views");
});

test("a session resumed in a window that never saw it run still shows its context figure", async (t) => {
  const { client } = await sidecar(t);
  const model = scripted({ rounds: [[{ text: "Hello." }, { usage: { input_tokens: 300, output_tokens: 7 } }]] });
  const { chat } = controller(client, { model });
  await chat.handle({ type: "prompt", text: "Hi" });
  const sid = chat.currentSessionId!;
  const fresh = controller(client, { model });
  await fresh.chat.handle({ type: "resume", sessionId: sid });
  assert.deepEqual(fresh.sink.of("context"), [{ type: "context", used: 307, size: null }]);
});

test("search finds a message, opening a hit replays the session and reveals the message (a tool result at its call)", async (t) => {
  const { client } = await sidecar(t, {
    toolCall: async () => ({ content: [{ type: "text", text: "the barometer reads 1013 hectopascal" }] }),
  });
  const tool: ToolDefinition = { name: "barometer", description: "Air pressure" };
  const { chat, sink } = controller(client, {
    tools: [tool],
    model: scripted({ rounds: [[{ tool_call: { name: "barometer", arguments: {} } }], [{ text: "Pressure is normal." }]] }),
  });
  await chat.handle({ type: "prompt", text: "what does the barometer say about the weather" });
  const withTool = chat.currentSessionId!;
  await chat.handle({ type: "newSession" });
  await chat.handle({ type: "setModel", model: "scripted:echo" });
  await chat.handle({ type: "prompt", text: "a kiwi is a fruit and a bird" });
  const kiwi = chat.currentSessionId!;

  await chat.handle({ type: "search", query: "kiwi" });
  const found = sink.of("searchResults").at(-1)!;
  assert.equal(found.query, "kiwi");
  assert.ok(found.hits.length >= 1 && found.hits.every((h) => h.sessionId === kiwi));
  const userHit = found.hits.find((h) => h.role === "user")!;
  assert.ok(userHit.snippet.some((s) => s.match && /kiwi/i.test(s.text)));

  // Open the other session at its tool result: replayed, then revealed at the tool call.
  await chat.handle({ type: "search", query: "hectopascal" });
  const toolHit = sink.of("searchResults").at(-1)!.hits.find((h) => h.role === "tool")!;
  assert.equal(toolHit.sessionId, withTool);
  const before = sink.messages.length;
  await chat.handle({ type: "open", sessionId: toolHit.sessionId, messageId: toolHit.messageId });
  assert.equal(chat.currentSessionId, withTool);
  const after = sink.messages.slice(before);
  assert.equal(after[0]?.type, "reset");
  const { messages } = await client.history(withTool);
  const call = messages.flatMap((m) => m.content).find((b) => b.type === "tool_use");
  assert.ok(call && call.type === "tool_use");
  assert.deepEqual(after.at(-1), { type: "reveal", messageId: toolHit.messageId, toolCallId: call.id });
  assert.ok(after.findIndex((m) => m.type === "update") < after.length - 1, "the reveal follows the replay");

  // A user-message hit reveals that message; a search with no words is said, not thrown.
  await chat.handle({ type: "open", sessionId: kiwi, messageId: userHit.messageId });
  assert.deepEqual(sink.messages.at(-1), { type: "reveal", messageId: userHit.messageId, toolCallId: null });
  await chat.handle({ type: "search", query: "(*)" });
  const refused = sink.of("searchResults").at(-1)!;
  assert.deepEqual(refused.hits, []);
  assert.match(refused.error ?? "", /-32602/);
  assert.equal(sink.of("notice").filter((n) => n.level === "error").length, 0);
  await chat.handle({ type: "search", query: "  " });
  assert.deepEqual(sink.of("searchResults").at(-1), { type: "searchResults", query: "", hits: [] });
});

test("rename and archive from the sessions list; archived sessions are listed on request and still open", async (t) => {
  const { client } = await sidecar(t);
  const { chat, sink } = controller(client, { model: "scripted:echo" });
  await chat.handle({ type: "prompt", text: "plan the garden beds" });
  const garden = chat.currentSessionId!;
  await chat.handle({ type: "newSession" });
  await chat.handle({ type: "prompt", text: "another thing entirely" });
  const other = chat.currentSessionId!;

  // Renaming the session on screen: its title changes in the view at once.
  await chat.handle({ type: "rename", sessionId: other, title: "Other\nthing" });
  const info = sink
    .of("update")
    .map((m) => m.notification.update)
    .filter((u) => u.sessionUpdate === "session_info_update");
  assert.equal((info.at(-1) as { title?: string }).title, "Other thing");
  // From the list: it is drawn again with the new title.
  await chat.handle({ type: "rename", sessionId: garden, title: "Garden", relist: true });
  const relisted = sink.of("sessions").at(-1)!;
  assert.equal(relisted.archived, false);
  assert.equal(relisted.sessions.find((s) => s.sessionId === garden)?.title, "Garden");

  await chat.handle({ type: "archive", sessionId: garden, archived: true, relist: true });
  assert.deepEqual(sink.of("sessions").at(-1)!.sessions.map((s) => s.sessionId), [other]);
  await chat.handle({ type: "listSessions", archived: true });
  const archived = sink.of("sessions").at(-1)!;
  assert.equal(archived.archived, true);
  assert.deepEqual(archived.sessions.map((s) => s.sessionId), [garden]);

  // An archived session opens with its title, and search still finds it.
  await chat.handle({ type: "search", query: "garden beds" });
  const hit = sink.of("searchResults").at(-1)!.hits.find((h) => h.sessionId === garden)!;
  assert.equal(hit.archived, true);
  await chat.handle({ type: "open", sessionId: garden, messageId: null });
  assert.equal(sink.of("session").at(-1)?.title, "Garden");
  assert.equal(sink.messages.at(-1)?.type === "reveal", false, "a title hit needs no reveal");

  // The list remembers it shows the archived ones; unarchiving puts the session back.
  await chat.handle({ type: "archive", sessionId: garden, archived: false, relist: true });
  assert.equal(sink.of("sessions").at(-1)!.archived, true);
  assert.deepEqual(sink.of("sessions").at(-1)!.sessions, []);
  await chat.handle({ type: "listSessions", archived: false });
  assert.deepEqual(new Set(sink.of("sessions").at(-1)!.sessions.map((s) => s.sessionId)), new Set([garden, other]));
});
