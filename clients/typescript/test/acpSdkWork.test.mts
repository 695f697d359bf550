/**
 * The agent's work as a third-party ACP client does it: the official TypeScript SDK
 * (`@agentclientprotocol/sdk`) as a client that implements `fs/*` and `terminal/*`
 * against the real disk and real child processes, driving a real sidecar over ACP's
 * newline-delimited framing.
 *
 * - `edit_file`: the permission request's `toolCall` carries the diff; the file is read
 *   and written through the client (`fs/read_text_file`, `fs/write_text_file`).
 * - `run_command`: runs in the client's terminal; `session/cancel` midway makes the
 *   agent kill it, then release it (`terminal/kill`, then `terminal/release`).
 * - `ask_user`: `elicitation/create` (stable since ACP 1.21, in the SDK since 2.x) is
 *   answered by the SDK client, and the answer is the call's result.
 *
 * Every message of both conversations, both ways, is recorded as it crossed the wire
 * and checked against the ACP schema the project vendors (`protocol/acp/v1`) and
 * Threadline's own (`protocol/schema.json`) by `python -m tests.wirelog`.
 *
 * An ES module because the SDK ships only as one.
 */
import * as acp from "@agentclientprotocol/sdk";
import assert from "node:assert/strict";
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { Readable, Writable } from "node:stream";
import { test, type TestContext } from "node:test";
import { fileURLToPath } from "node:url";
import helpers from "./helpers.js";

const { alive, scripted, tempDir, threadlineCommand, waitFor } = helpers;
const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../../../..");

type Side = "client" | "agent";

/** The conversation as it crossed the wire, one JSON-RPC message per entry. */
class WireLog {
  readonly entries: { side: Side; message: unknown }[] = [];
  private readonly partial: Record<Side, string> = { client: "", agent: "" };
  private readonly decoders = { client: new TextDecoder(), agent: new TextDecoder() };

  tap(side: Side): TransformStream<Uint8Array, Uint8Array> {
    return new TransformStream({
      transform: (chunk, controller) => {
        const text = this.partial[side] + this.decoders[side].decode(chunk, { stream: true });
        const lines = text.split("\n");
        this.partial[side] = lines.pop() ?? "";
        for (const line of lines) {
          if (line.trim()) this.entries.push({ side, message: JSON.parse(line) });
        }
        controller.enqueue(chunk);
      },
    });
  }

  /** Checked by the project's conformance checker against the vendored schemas. */
  check(t: TestContext): void {
    const file = join(tempDir(t, "threadline-acp-wire-"), "wire.jsonl");
    writeFileSync(file, this.entries.map((e) => JSON.stringify(e)).join("\n") + "\n");
    const python = process.env.THREADLINE_PYTHON ?? join(dirname(threadlineCommand()), "python");
    try {
      const said = execFileSync(python, ["-m", "tests.wirelog", file], {
        cwd: REPO,
        encoding: "utf8",
      });
      if (process.env.THREADLINE_TEST_VERBOSE) console.log(said);
    } catch (err) {
      const out = (err as { stdout?: string }).stdout ?? String(err);
      assert.fail(`messages that break the protocol:\n${out}`);
    }
  }
}

/** A client-side terminal: a real child process whose output the agent reads. */
interface Terminal {
  child: ChildProcess;
  output: string;
  exit: Promise<{ exitCode: number | null; signal: string | null }>;
  exited: { exitCode: number | null; signal: string | null } | null;
}

interface Client {
  agent: acp.ClientConnection["agent"];
  updates: acp.SessionNotification[];
  permissions: acp.RequestPermissionRequest[];
  calls: string[];
  terminals: Map<string, Terminal>;
  elicitations: acp.CreateElicitationRequest[];
  wire: WireLog;
}

function killGroup(terminal: Terminal | undefined): void {
  if (!terminal || terminal.exited || !terminal.child.pid) return;
  try {
    process.kill(-terminal.child.pid, "SIGKILL");
  } catch {
    // already gone
  }
}

function start(t: TestContext, home: string): Client {
  const child = spawn(threadlineCommand(), ["serve"], {
    env: { ...process.env, THREADLINE_HOME: home },
    stdio: ["pipe", "pipe", "ignore"],
  });
  const wire = new WireLog();
  const out: Client = {
    agent: undefined as unknown as Client["agent"],
    updates: [],
    permissions: [],
    calls: [],
    terminals: new Map(),
    elicitations: [],
    wire,
  };
  let next = 0;
  const app = acp
    .client({ name: "threadline-acp-sdk-work-test" })
    .onNotification("session/update", ({ params }) => {
      out.updates.push(params);
    })
    .onRequest("session/request_permission", async ({ params }) => {
      out.permissions.push(params);
      const allow = params.options.find((o) => o.kind === "allow_once")!;
      return { outcome: { outcome: "selected", optionId: allow.optionId } };
    })
    .onRequest("fs/read_text_file", async ({ params }) => {
      out.calls.push(`read ${params.path}`);
      return { content: readFileSync(params.path, "utf8") };
    })
    .onRequest("fs/write_text_file", async ({ params }) => {
      out.calls.push(`write ${params.path}`);
      writeFileSync(params.path, params.content);
      return {};
    })
    .onRequest("terminal/create", async ({ params }) => {
      out.calls.push("terminal/create");
      // Its own process group, as a terminal's shell has: a kill reaches what it started.
      const proc = spawn(params.command, params.args ?? [], {
        cwd: params.cwd ?? undefined,
        stdio: ["ignore", "pipe", "pipe"],
        detached: true,
      });
      const terminal: Terminal = {
        child: proc,
        output: "",
        exited: null,
        exit: new Promise((done) =>
          proc.once("exit", (exitCode, signal) => {
            terminal.exited = { exitCode, signal };
            done(terminal.exited);
          }),
        ),
      };
      proc.stdout!.on("data", (d: Buffer) => (terminal.output += d.toString()));
      proc.stderr!.on("data", (d: Buffer) => (terminal.output += d.toString()));
      const terminalId = `term-${++next}`;
      out.terminals.set(terminalId, terminal);
      return { terminalId };
    })
    .onRequest("terminal/output", async ({ params }) => {
      out.calls.push("terminal/output");
      const terminal = out.terminals.get(params.terminalId)!;
      return { output: terminal.output, truncated: false, exitStatus: terminal.exited };
    })
    .onRequest("terminal/wait_for_exit", async ({ params }) => {
      out.calls.push("terminal/wait_for_exit");
      return out.terminals.get(params.terminalId)!.exit;
    })
    .onRequest("terminal/kill", async ({ params }) => {
      out.calls.push("terminal/kill");
      killGroup(out.terminals.get(params.terminalId));
      return {};
    })
    .onRequest("terminal/release", async ({ params }) => {
      out.calls.push("terminal/release");
      killGroup(out.terminals.get(params.terminalId));
      out.terminals.delete(params.terminalId);
      return {};
    })
    .onRequest("elicitation/create", async ({ params }) => {
      out.elicitations.push(params);
      return { action: "accept", content: { answer: "blue" } };
    });
  const toAgent = wire.tap("client");
  // Closing the connection at the end aborts this pipe: that is how it ends.
  toAgent.readable
    .pipeTo(Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>)
    .catch(() => undefined);
  const fromAgent = (Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>).pipeThrough(
    wire.tap("agent"),
  );
  const connection = app.connect(acp.ndJsonStream(toAgent.writable, fromAgent));
  out.agent = connection.agent;
  t.after(async () => {
    for (const terminal of out.terminals.values()) killGroup(terminal);
    connection.close();
    child.stdin?.end();
    if (child.exitCode === null) await new Promise((r) => child.once("exit", r));
  });
  return out;
}

test("the official ACP SDK as a client with fs and terminals: an edit's diff, a command interrupted midway", async (t) => {
  const home = tempDir(t, "threadline-acp-sdk-home-");
  const cwd = tempDir(t, "threadline-acp-sdk-work-");
  const file = join(cwd, "a.txt");
  writeFileSync(file, "old line\n");
  const client = start(t, home);
  const init = await client.agent.request("initialize", {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
    clientInfo: { name: "threadline-acp-sdk-work-test", version: "1" },
  });
  assert.equal(init.protocolVersion, 1);
  const model = scripted({
    rounds: [
      [{ tool_call: { name: "edit_file", arguments: { path: "a.txt", edits: [{ oldText: "old", newText: "new" }] } } }],
      [{ tool_call: { name: "run_command", arguments: { command: "echo started; sleep 30; echo never" } } }],
      [{ text: "not reached" }],
    ],
  });
  const { sessionId } = await client.agent.request("session/new", {
    cwd,
    mcpServers: [],
    _meta: { threadline: { model } },
  });
  const prompt = client.agent.request("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "Edit a.txt, then run the slow command." }],
  });
  await waitFor(() => client.calls.includes("terminal/create"), 30_000, "terminal/create");
  const [terminal] = [...client.terminals.values()];
  await waitFor(() => terminal!.output.includes("started"), 10_000, "the command's first output");
  const pid = terminal!.child.pid!;
  await client.agent.notify("session/cancel", { sessionId });
  assert.equal((await prompt).stopReason, "cancelled");

  // The edit: asked with its diff, read and written through the client.
  const [edit, run] = client.permissions;
  assert.equal(edit!.toolCall.kind, "edit");
  assert.deepEqual(
    (edit!.toolCall.content ?? []).filter((c) => c.type === "diff"),
    [{ type: "diff", path: file, oldText: "old line\n", newText: "new line\n" }],
  );
  assert.equal(readFileSync(file, "utf8"), "new line\n");
  assert.ok(client.calls.includes(`read ${file}`) && client.calls.includes(`write ${file}`));

  // The command: asked, run in the client's terminal, killed midway, then released.
  assert.equal(run!.toolCall.kind, "execute");
  await waitFor(() => client.calls.includes("terminal/release"), 10_000, "terminal/release");
  const term = client.calls.filter((c) => c.startsWith("terminal/"));
  assert.equal(term[0], "terminal/create");
  assert.ok(term.indexOf("terminal/kill") > 0, `terminal/kill was sent: ${term.join(", ")}`);
  assert.ok(term.indexOf("terminal/kill") < term.indexOf("terminal/release"), term.join(", "));
  await waitFor(() => !alive(pid), 5_000, "the command to be gone");
  assert.ok(!terminal!.output.includes("never"));
  const shown = client.updates
    .filter((n) => n.sessionId === sessionId)
    .map((n) => n.update)
    .flatMap((u) => (u.sessionUpdate === "tool_call_update" ? (u.content ?? []) : []));
  assert.ok(shown.some((c) => c.type === "terminal" && c.terminalId === "term-1"));

  client.wire.check(t);
});

test("the official ACP SDK answers ask_user's elicitation/create; the answer is the call's result", async (t) => {
  const home = tempDir(t, "threadline-acp-sdk-home-");
  const client = start(t, home);
  await client.agent.request("initialize", {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { elicitation: { form: {} } },
    clientInfo: { name: "threadline-acp-sdk-work-test", version: "1" },
  });
  const model = scripted({
    rounds: [
      [{ tool_call: { name: "ask_user", arguments: { question: "Which colour?", choices: ["red", "blue"] } } }],
      [{ text: "Blue it is." }],
    ],
  });
  const { sessionId } = await client.agent.request("session/new", {
    cwd: tempDir(t, "threadline-acp-sdk-work-"),
    mcpServers: [],
    _meta: { threadline: { model } },
  });
  const result = await client.agent.request("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "Paint the button." }],
  });
  assert.equal(result.stopReason, "end_turn");
  const [asked] = client.elicitations;
  assert.equal(client.elicitations.length, 1);
  assert.equal(asked!.message, "Which colour?");
  const form = asked as acp.CreateElicitationRequest & {
    sessionId: string;
    requestedSchema: { properties: Record<string, { enum?: string[] }>; required?: string[] };
  };
  assert.equal(form.sessionId, sessionId);
  assert.deepEqual(form.requestedSchema.properties.answer?.enum, ["red", "blue"]);
  const updates = client.updates.filter((n) => n.sessionId === sessionId).map((n) => n.update);
  const done = updates.find((u) => u.sessionUpdate === "tool_call_update" && u.status === "completed");
  assert.ok(done && done.sessionUpdate === "tool_call_update");
  assert.match(JSON.stringify(done.content), /The user answered: blue/);
  assert.deepEqual(done.rawOutput, { action: "accept", content: { answer: "blue" } });

  client.wire.check(t);
});
