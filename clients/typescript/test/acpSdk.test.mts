/**
 * Threadline as a third-party ACP client sees it: the official TypeScript SDK
 * (`@agentclientprotocol/sdk`, which validates every message it receives) drives a
 * real sidecar over ACP's newline-delimited framing. initialize, a new session, a
 * streamed prompt whose tool call waits for permission, `session/cancel` — which must
 * withdraw that pending request with ACP's `$/cancel_request`, so the SDK aborts the
 * handler's signal — then `session/load` in a new process and `session/close`.
 *
 * An ES module because the SDK ships only as one.
 */
import * as acp from "@agentclientprotocol/sdk";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { test, type TestContext } from "node:test";
import helpers from "./helpers.js";

const { scripted, threadlineCommand, waitFor, CWD } = helpers;

const DEPLOY = { name: "deploy", description: "Deploy the app", needsApproval: true };
const MODEL = scripted({
  rounds: [
    [
      { text: "Deploying " },
      { sleep: 0.05 },
      { text: "now." },
      { tool_call: { name: "deploy", arguments: { to: "prod" } } },
    ],
    [{ text: "Not deployed." }],
  ],
});

interface Sidecar {
  connection: acp.ClientConnection;
  updates: acp.SessionNotification[];
  permissions: { params: acp.RequestPermissionRequest; withdrawn: boolean }[];
}

/** A sidecar process and an SDK client connected to it over stdio. */
function start(t: TestContext, home: string): Sidecar {
  const child: ChildProcess = spawn(threadlineCommand(), ["serve"], {
    env: { ...process.env, THREADLINE_HOME: home },
    stdio: ["pipe", "pipe", "ignore"],
  });
  const updates: acp.SessionNotification[] = [];
  const permissions: Sidecar["permissions"] = [];
  const app = acp
    .client({ name: "threadline-acp-sdk-test" })
    .onNotification("session/update", ({ params }) => {
      updates.push(params);
    })
    .onRequest("session/request_permission", async ({ params, signal }) => {
      const entry = { params, withdrawn: false };
      permissions.push(entry);
      // Never answered by the user: only the agent withdrawing it ends the wait.
      await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve()));
      entry.withdrawn = true;
      return { outcome: { outcome: "cancelled" } };
    });
  const stream = acp.ndJsonStream(
    Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>,
    Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>,
  );
  const connection = app.connect(stream);
  t.after(async () => {
    connection.close();
    child.stdin?.end();
    if (child.exitCode === null) await new Promise((r) => child.once("exit", r));
  });
  return { connection, updates, permissions };
}

async function initialize(side: Sidecar) {
  return side.connection.agent.request("initialize", {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
    clientInfo: { name: "threadline-acp-sdk-test", version: "1" },
  });
}

test("the official ACP SDK: prompt, cancel withdraws the permission request, load in a new process, close", async (t) => {
  const home = mkdtempSync(join(tmpdir(), "threadline-acp-sdk-"));
  t.after(() => rmSync(home, { recursive: true, force: true }));

  const first = start(t, home);
  const init = await initialize(first);
  assert.equal(init.protocolVersion, 1);
  assert.equal(init.agentCapabilities?.loadSession, true);

  const agent = first.connection.agent;
  const { sessionId } = await agent.request("session/new", {
    cwd: CWD,
    mcpServers: [],
    _meta: { threadline: { model: MODEL, tools: [DEPLOY], builtinTools: false } },
  });
  const prompt = agent.request("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "Deploy it." }],
  });
  await waitFor(() => first.permissions.length === 1, 30_000, "session/request_permission");
  assert.equal(first.permissions[0]!.params.toolCall.title, "deploy");
  await agent.notify("session/cancel", { sessionId });
  assert.equal((await prompt).stopReason, "cancelled");
  await waitFor(() => first.permissions[0]!.withdrawn, 10_000, "the request to be withdrawn");

  const live = first.updates.filter((n) => n.sessionId === sessionId).map((n) => n.update);
  const text = live
    .filter((u) => u.sessionUpdate === "agent_message_chunk")
    .map((u) => (u.content.type === "text" ? u.content.text : ""))
    .join("");
  assert.equal(text, "Deploying now.");
  const call = live.find((u) => u.sessionUpdate === "tool_call");
  assert.ok(call && call.sessionUpdate === "tool_call" && call.title === "deploy");
  const end = live.filter((u) => u.sessionUpdate === "tool_call_update").at(-1);
  assert.ok(end && end.sessionUpdate === "tool_call_update" && end.status === "failed");

  // A new process on the same data folder: load replays what the live client saw.
  const second = start(t, home);
  await initialize(second);
  const loaded = await second.connection.agent.request("session/load", {
    sessionId,
    cwd: CWD,
    mcpServers: [],
  });
  // ACP 1.21: load answers the session's config options (model and mode select).
  assert.deepEqual(Object.keys(loaded).sort(), ["configOptions", "modes"]);
  assert.equal(loaded.modes?.currentModeId, "code");
  const replayed = second.updates.filter((n) => n.sessionId === sessionId).map((n) => n.update);
  const kinds = replayed.map((u) => u.sessionUpdate);
  assert.deepEqual(kinds.slice(0, 4), [
    "user_message_chunk",
    "agent_message_chunk",
    "tool_call",
    "tool_call_update",
  ]);
  assert.deepEqual(replayed[2], call);
  assert.deepEqual(replayed[3], end);

  const closed = await second.connection.agent.request("session/close", { sessionId });
  assert.deepEqual(closed, {});
});
