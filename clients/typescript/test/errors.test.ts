import assert from "node:assert/strict";
import { test } from "node:test";
import { ErrorCodes, errorName, isRpcError } from "../src/index";
import { CWD, scripted, startServer, streamedText, waitFor } from "./helpers";

const UNKNOWN = "sess_does_not_exist";

test("unknown session ids answer -32002 on every session method", async (t) => {
  const { client } = await startServer(t);
  const calls: [string, () => Promise<unknown>][] = [
    ["prompt", () => client.prompt(UNKNOWN, "hi")],
    ["history", () => client.history(UNKNOWN)],
    ["interrupt", () => client.interrupt(UNKNOWN)],
    ["load", () => client.load({ sessionId: UNKNOWN, cwd: CWD })],
    ["resume", () => client.resume({ sessionId: UNKNOWN })],
    ["delete", () => client.delete(UNKNOWN)],
    ["setModel", () => client.setModel(UNKNOWN, "scripted:echo")],
  ];
  for (const [name, call] of calls) {
    await assert.rejects(call(), (err: unknown) => {
      assert.ok(isRpcError(err, "SESSION_NOT_FOUND"), `${name}: ${String(err)}`);
      assert.equal(err.code, -32002);
      assert.equal(errorName(err.code), "SESSION_NOT_FOUND");
      return true;
    });
  }
});

test("invalid params answer -32602 with pydantic's reasons in data", async (t) => {
  const { client } = await startServer(t);
  await assert.rejects(client.newSession({ cwd: "relative/path" }), (err: unknown) => {
    assert.ok(isRpcError(err, "INVALID_PARAMS"), String(err));
    assert.match(err.message, /cwd/);
    assert.ok(Array.isArray(err.data), "data carries the error list");
    return true;
  });
});

test("an unknown method answers -32601", async (t) => {
  const { client } = await startServer(t);
  await assert.rejects(client.connection.sendRequest("session/teleport", {}), (err: unknown) =>
    isRpcError(err, "METHOD_NOT_FOUND"),
  );
});

test("a second prompt while a turn runs answers -32010 session busy", async (t) => {
  const { client, notifications } = await startServer(t);
  const model = scripted({ rounds: [[{ text: "working" }, { hang: true }]] });
  const { sessionId } = await client.newSession({ cwd: CWD, threadline: { model } });
  const first = client.prompt(sessionId, "one");
  await waitFor(() => streamedText(notifications, sessionId).size > 0, 5000, "first chunk");
  await assert.rejects(client.prompt(sessionId, "two"), (err: unknown) =>
    isRpcError(err, "SESSION_BUSY"),
  );
  await client.interrupt(sessionId);
  assert.equal((await first).stopReason, "cancelled");
});

test("a provider error fails the prompt with -32011 and structured data", async (t) => {
  const { client } = await startServer(t);
  const model = scripted({
    rounds: [[{ text: "part" }, { error: { reason: "boom", message: "provider exploded", retryable: false } }]],
  });
  const { sessionId } = await client.newSession({ cwd: CWD, threadline: { model } });
  await assert.rejects(client.prompt(sessionId, "hi"), (err: unknown) => {
    assert.ok(isRpcError(err), String(err));
    assert.equal(err.code, ErrorCodes.PROVIDER_FAILED);
    const data = err.data as { partialText?: string; retryable?: boolean };
    assert.equal(data.partialText, "part");
    assert.equal(data.retryable, false);
    return true;
  });
});
