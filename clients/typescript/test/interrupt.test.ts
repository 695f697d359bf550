import assert from "node:assert/strict";
import { test } from "node:test";
import { CancellationTokenSource, isRpcError } from "../src/index";
import { CWD, scripted, startServer, streamedText, waitFor } from "./helpers";

const HANGING = scripted({ rounds: [[{ text: "partial answer" }, { hang: true }]] });

test("interrupt stops a hanging turn: prompt answers cancelled, partial text kept", async (t) => {
  const { client, notifications } = await startServer(t);
  const { sessionId } = await client.newSession({ cwd: CWD, threadline: { model: HANGING } });
  const turn = client.prompt(sessionId, "go");
  await waitFor(() => streamedText(notifications, sessionId).size > 0, 5000, "first chunk");

  let promptSettled = false;
  void turn.then(() => (promptSettled = true));
  const interrupted = await client.interrupt(sessionId);
  assert.equal(interrupted.interrupted, true);
  assert.ok(interrupted.turnId);
  assert.ok(promptSettled, "session/prompt was answered before session/interrupt");
  assert.equal((await turn).stopReason, "cancelled");

  const again = await client.interrupt(sessionId);
  assert.equal(again.interrupted, false, "interrupt is idempotent");

  const { messages } = await client.history(sessionId);
  const assistant = messages.find((m) => m.role === "assistant");
  assert.ok(assistant);
  assert.equal(assistant.truncated, true);
  assert.deepEqual(
    assistant.content.filter((b) => b.type === "text").map((b) => (b.type === "text" ? b.text : "")),
    ["partial answer"],
  );
});

test("session/cancel (ACP notification) also ends the turn with cancelled", async (t) => {
  const { client, notifications } = await startServer(t);
  const { sessionId } = await client.newSession({ cwd: CWD, threadline: { model: HANGING } });
  const turn = client.prompt(sessionId, "go");
  await waitFor(() => streamedText(notifications, sessionId).size > 0, 5000, "first chunk");
  await client.cancel(sessionId);
  assert.equal((await turn).stopReason, "cancelled");
});

test("cancelling the prompt's token sends $/cancelRequest: -32800, session still usable", async (t) => {
  const { client, notifications } = await startServer(t);
  const { sessionId } = await client.newSession({ cwd: CWD, threadline: { model: HANGING } });
  const source = new CancellationTokenSource();
  const turn = client.prompt(sessionId, "go", source.token);
  await waitFor(() => streamedText(notifications, sessionId).size > 0, 5000, "first chunk");
  source.cancel();
  await assert.rejects(turn, (err: unknown) => isRpcError(err, "REQUEST_CANCELLED"));

  // The turn was stopped, not left running: a new prompt is accepted (no -32010).
  await client.setModel(sessionId, scripted({ rounds: [[{ text: "after" }]] }));
  assert.equal((await client.prompt(sessionId, "again")).stopReason, "end_turn");
  const { messages } = await client.history(sessionId);
  const last = messages[messages.length - 1]!;
  assert.deepEqual(last.content, [{ type: "text", text: "after" }]);
});
