import assert from "node:assert/strict";
import { test } from "node:test";
import {
  ACP_PROTOCOL_VERSION,
  METHODS,
  ThreadlineClient,
  isRpcError,
  type ClientNotificationMethod,
  type ClientRequestMethod,
} from "../src/index";
import { startServer } from "./helpers";

test("initialize answers with ACP capabilities and Threadline's extension block", async (t) => {
  const { client } = await startServer(t, { initialize: false });
  const result = await client.initialize();
  assert.equal(result.protocolVersion, ACP_PROTOCOL_VERSION);
  assert.equal(client.serverInfo, result);
  assert.equal(result.agentCapabilities?.loadSession, true);
  const meta = result.agentCapabilities?._meta as Record<string, unknown> | undefined;
  const threadline = meta?.threadline as Record<string, unknown> | undefined;
  assert.ok(threadline, "agentCapabilities._meta.threadline is present");
  assert.ok(Object.keys(threadline).length > 0);
});

test("a request before initialize is refused with -32600", async (t) => {
  const { client } = await startServer(t, { initialize: false });
  await assert.rejects(client.list(), (err: unknown) => {
    assert.ok(isRpcError(err, "INVALID_REQUEST"), String(err));
    assert.match(err.message, /not initialized/);
    return true;
  });
});

test("shutdown then exit ends the process with code 0", async (t) => {
  const { client } = await startServer(t);
  const closed = new Promise<void>((resolve) => client.onClose(resolve));
  assert.equal(await client.stop(5000), 0);
  await closed;
  assert.equal(client.isConnected, false);
});

/**
 * Every client→server method in the generated table has a ThreadlineClient method, so a
 * method added to the protocol fails here until the client grows a wrapper for it.
 */
test("the client wraps every client-to-server method of the schema", () => {
  const wrappers: Record<ClientRequestMethod | ClientNotificationMethod, keyof ThreadlineClient> = {
    initialize: "initialize",
    shutdown: "shutdown",
    exit: "exit",
    "session/new": "newSession",
    "session/prompt": "prompt",
    "session/interrupt": "interrupt",
    "session/cancel": "cancel",
    "session/fork": "fork",
    "session/compact": "compact",
    "session/history": "history",
    "session/context": "context",
    "session/blob": "blob",
    "session/load": "load",
    "session/resume": "resume",
    "session/list": "list",
    "session/close": "close",
    "session/delete": "delete",
    "session/set_config_option": "setConfigOption",
    "session/queue/list": "queue",
    "session/queue/update": "editQueued",
    "session/queue/remove": "removeQueued",
    "session/queue/resume": "resumeQueue",
    "session/set_mode": "setMode",
    "session/approvals": "approvals",
    "session/remove_approval": "removeApproval",
    "session/set_title": "setTitle",
    "session/archive": "archive",
    "session/set_tags": "setTags",
    "session/search": "search",
    "session/export": "exportSession",
    "session/import": "importSession",
    "session/diff": "diff",
    "session/rewind": "rewind",
    "session/unrewind": "unrewind",
  };
  const fromSchema = Object.entries(METHODS)
    .filter(([, m]) => m.direction === "client_to_server")
    .map(([name]) => name)
    .sort();
  assert.deepEqual(Object.keys(wrappers).sort(), fromSchema);
  for (const name of Object.values(wrappers)) {
    assert.equal(typeof ThreadlineClient.prototype[name], "function", name);
  }
});
