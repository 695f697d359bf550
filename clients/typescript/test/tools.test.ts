import assert from "node:assert/strict";
import { test } from "node:test";
import type { RequestPermissionParams, ToolCallCall, ToolDefinition, UpdateOf } from "../src/index";
import { CWD, scripted, startServer, streamedText, waitFor } from "./helpers";

const WEATHER: ToolDefinition = {
  name: "get_weather",
  description: "Current weather for a city",
  inputSchema: {
    type: "object",
    properties: { city: { type: "string" } },
    required: ["city"],
  },
};

const WEATHER_SCRIPT = scripted({
  rounds: [
    [{ tool_call: { name: "get_weather", arguments: { city: "Paris" } } }],
    [{ text: "It is sunny in Paris." }],
  ],
});

test("a client-defined tool runs through tool/call and its result feeds round 2", async (t) => {
  const { client, notifications } = await startServer(t);
  const calls: ToolCallCall[] = [];
  client.onToolCall((params) => {
    calls.push(params);
    return { content: [{ type: "text", text: `18°C and sunny in ${String(params.arguments.city)}` }] };
  });
  const { sessionId } = await client.newSession({
    cwd: CWD,
    threadline: { model: WEATHER_SCRIPT, tools: [WEATHER] },
  });

  const result = await client.prompt(sessionId, "Weather in Paris?");
  assert.equal(result.stopReason, "end_turn");

  assert.equal(calls.length, 1);
  const call = calls[0]!;
  assert.equal(call.sessionId, sessionId);
  assert.equal(call.name, "get_weather");
  assert.deepEqual(call.arguments, { city: "Paris" });

  const updates = notifications.filter((n) => n.sessionId === sessionId).map((n) => n.update);
  const started = updates.filter((u): u is UpdateOf<"tool_call"> => u.sessionUpdate === "tool_call");
  assert.equal(started.length, 1);
  assert.equal(started[0]!.toolCallId, call.toolCallId, "update and tool/call share the id");
  const progress = updates.filter(
    (u): u is UpdateOf<"tool_call_update"> =>
      u.sessionUpdate === "tool_call_update" && u.toolCallId === call.toolCallId,
  );
  assert.equal(progress.at(-1)?.status, "completed");

  const { messages } = await client.history(sessionId);
  assert.deepEqual(
    messages.map((m) => m.role),
    ["user", "assistant", "tool", "assistant"],
  );
  const toolUse = messages[1]!.content.find((b) => b.type === "tool_use");
  assert.ok(toolUse && toolUse.type === "tool_use");
  assert.equal(toolUse.id, call.toolCallId);
  const toolResult = messages[2]!.content[0]!;
  assert.ok(toolResult.type === "tool_result");
  assert.equal(toolResult.toolUseId, call.toolCallId);
  assert.equal(toolResult.status, "completed");
  assert.deepEqual(toolResult.content, [{ type: "text", text: "18°C and sunny in Paris" }]);

  const final = messages[3]!;
  assert.equal(streamedText(notifications, sessionId).get(final.messageId), "It is sunny in Paris.");
});

test("a handler that throws becomes a failed tool result, and the turn goes on", async (t) => {
  const { client } = await startServer(t);
  client.onToolCall(() => {
    throw new Error("weather service down");
  });
  const { sessionId } = await client.newSession({
    cwd: CWD,
    threadline: { model: WEATHER_SCRIPT, tools: [WEATHER] },
  });
  assert.equal((await client.prompt(sessionId, "Weather?")).stopReason, "end_turn");
  const { messages } = await client.history(sessionId);
  const toolResult = messages.find((m) => m.role === "tool")!.content[0]!;
  assert.ok(toolResult.type === "tool_result");
  assert.equal(toolResult.isError, true);
  assert.match(JSON.stringify(toolResult.content), /weather service down/);
});

test("session/request_permission reaches the handler; a rejection keeps the tool from running", async (t) => {
  const { client } = await startServer(t);
  const asked: RequestPermissionParams[] = [];
  let ran = 0;
  client.onRequestPermission((params) => {
    asked.push(params);
    const reject = params.options.find((o) => o.kind === "reject_once");
    assert.ok(reject, "a reject_once option is offered");
    return { outcome: { outcome: "selected", optionId: reject.optionId } };
  });
  client.onToolCall(() => {
    ran++;
    return { content: [{ type: "text", text: "should not happen" }] };
  });
  const { sessionId } = await client.newSession({
    cwd: CWD,
    threadline: { model: WEATHER_SCRIPT, tools: [{ ...WEATHER, needsApproval: true }] },
  });
  assert.equal((await client.prompt(sessionId, "Weather?")).stopReason, "end_turn");
  assert.equal(asked.length, 1);
  assert.equal(asked[0]!.sessionId, sessionId);
  assert.deepEqual(asked[0]!.toolCall.rawInput, { city: "Paris" });
  assert.equal(ran, 0);
  const { messages } = await client.history(sessionId);
  const toolResult = messages.find((m) => m.role === "tool")!.content[0]!;
  assert.ok(toolResult.type === "tool_result");
  assert.equal(toolResult.isError, true);
});

test("an allowed permission lets the tool run", async (t) => {
  const { client } = await startServer(t);
  let ran = 0;
  client.onRequestPermission((params) => ({
    outcome: { outcome: "selected", optionId: params.options.find((o) => o.kind === "allow_once")!.optionId },
  }));
  client.onToolCall(() => {
    ran++;
    return { content: [{ type: "text", text: "sunny" }] };
  });
  const { sessionId } = await client.newSession({
    cwd: CWD,
    threadline: { model: WEATHER_SCRIPT, tools: [{ ...WEATHER, needsApproval: true }] },
  });
  assert.equal((await client.prompt(sessionId, "Weather?")).stopReason, "end_turn");
  assert.equal(ran, 1);
});

test("interrupting during a client tool cancels the tool/call request's token", async (t) => {
  const { client } = await startServer(t);
  let started = false;
  let tokenCancelled = false;
  client.onToolCall(
    (_params, token) =>
      new Promise((resolve) => {
        started = true;
        token.onCancellationRequested(() => {
          tokenCancelled = true;
          resolve({ content: [{ type: "text", text: "gave up" }], isError: true });
        });
      }),
  );
  const { sessionId } = await client.newSession({
    cwd: CWD,
    threadline: { model: WEATHER_SCRIPT, tools: [WEATHER] },
  });
  const turn = client.prompt(sessionId, "Weather?");
  await waitFor(() => started, 5000, "tool/call");
  const res = await client.interrupt(sessionId);
  assert.equal(res.interrupted, true);
  assert.equal((await turn).stopReason, "cancelled");
  await waitFor(() => tokenCancelled, 5000, "$/cancelRequest for tool/call");
  const { messages } = await client.history(sessionId);
  const toolResult = messages.find((m) => m.role === "tool")!.content[0]!;
  assert.ok(toolResult.type === "tool_result");
  assert.equal(toolResult.status, "cancelled");
});

test("onElicitation: registered before initialize, form elicitation is advertised and ask_user's question answered", async (t) => {
  const asked: { message: string; properties: unknown }[] = [];
  const { client } = await startServer(t, {
    setup: (c) => {
      c.onElicitation(async (p) => {
        asked.push({ message: p.message, properties: p.requestedSchema.properties });
        return { action: "accept", content: { answer: "blue" } };
      });
    },
  });
  const model = scripted({
    rounds: [
      [{ tool_call: { name: "ask_user", arguments: { question: "Which colour?", choices: ["red", "blue"] } } }],
      [{ text: "Blue." }],
    ],
  });
  const { sessionId } = await client.newSession({ cwd: CWD, threadline: { model } });
  const result = await client.prompt(sessionId, "paint it");
  assert.equal(result.stopReason, "end_turn");
  assert.deepEqual(asked, [{ message: "Which colour?", properties: { answer: { type: "string", title: "Answer", enum: ["red", "blue"] } } }]);
  const { messages } = await client.history(sessionId);
  assert.match(JSON.stringify(messages), /The user answered: blue/);
});
