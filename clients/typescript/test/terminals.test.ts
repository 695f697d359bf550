/**
 * ACP `terminal/*` answered by this client: a real sidecar's `run_command` runs in a
 * child process the client owns, and an interrupt midway kills it (`terminal/kill`,
 * then `terminal/release`).
 */
import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import {
  ChildProcessTerminals,
  type RequestPermissionParams,
  type TerminalRef,
  type ThreadlineClient,
} from "../src/index";
import { alive, scripted, startServer, tempDir, waitFor } from "./helpers";

/** Records the `terminal/*` requests in the order the server sent them. */
class RecordingTerminals extends ChildProcessTerminals {
  readonly calls: string[] = [];
  readonly pids: number[] = [];
  override create(params: Parameters<ChildProcessTerminals["create"]>[0]) {
    this.calls.push("create");
    return super.create(params);
  }
  override outputOf(ref: TerminalRef) {
    this.calls.push("output");
    return super.outputOf(ref);
  }
  override waitForExit(ref: TerminalRef) {
    this.calls.push("wait_for_exit");
    return super.waitForExit(ref);
  }
  override kill(ref: TerminalRef) {
    this.calls.push("kill");
    return super.kill(ref);
  }
  override release(ref: TerminalRef) {
    this.calls.push("release");
    return super.release(ref);
  }
}

function allowAll(client: ThreadlineClient): RequestPermissionParams[] {
  const asked: RequestPermissionParams[] = [];
  client.onRequestPermission((params) => {
    asked.push(params);
    const allow = params.options.find((o) => o.kind === "allow_once")!;
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  });
  return asked;
}

function runCommand(command: string): string {
  return scripted({
    rounds: [[{ tool_call: { name: "run_command", arguments: { command } } }], [{ text: "done" }]],
  });
}

function workspace(t: TestContext): string {
  return tempDir(t, "threadline-ts-term-");
}

test("without opting in, terminal is not advertised: the sidecar runs the command itself", async (t) => {
  const { client } = await startServer(t);
  allowAll(client);
  assert.equal(client.terminals, undefined);
  const { sessionId } = await client.newSession({
    cwd: workspace(t),
    threadline: { model: runCommand("echo in-sidecar") },
  });
  assert.equal((await client.prompt(sessionId, "run it")).stopReason, "end_turn");
  const { messages } = await client.history(sessionId);
  const result = messages.flatMap((m) => m.content).find((b) => b.type === "tool_result");
  assert.ok(result && result.type === "tool_result");
  assert.equal((result.rawOutput as { ranIn: string }).ranIn, "sidecar");
});

test("run_command runs in the client's terminal: output, exit code, terminal content, released", async (t) => {
  const host = new RecordingTerminals();
  const shown: string[] = [];
  host.onOutput((o) => shown.push(o.data));
  const { client, notifications } = await startServer(t, {
    setup: (c) => c.useTerminals(host),
  });
  allowAll(client);
  const cwd = workspace(t);
  const { sessionId } = await client.newSession({
    cwd,
    threadline: { model: runCommand("echo in-terminal; pwd; echo to-stderr >&2; exit 3") },
  });
  assert.equal((await client.prompt(sessionId, "run it")).stopReason, "end_turn");

  assert.deepEqual(host.calls, ["create", "wait_for_exit", "output", "release"]);
  assert.deepEqual(host.ids, [], "the server released its terminal");
  assert.match(shown.join(""), /in-terminal/, "output streamed to the app as it came");

  const contents = notifications
    .map((n) => n.update)
    .filter((u) => u.sessionUpdate === "tool_call_update")
    .flatMap((u) => (u.sessionUpdate === "tool_call_update" ? (u.content ?? []) : []));
  assert.ok(
    contents.some((c) => c.type === "terminal" && c.terminalId === "term-1"),
    "the call shows the client's terminal",
  );

  const { messages } = await client.history(sessionId);
  const result = messages.flatMap((m) => m.content).find((b) => b.type === "tool_result");
  assert.ok(result && result.type === "tool_result");
  const text = JSON.stringify(result.content);
  assert.match(text, /in-terminal/);
  assert.match(text, /to-stderr/);
  assert.ok(text.includes(cwd), "ran in the session's folder");
  assert.match(text, /exit code 3/);
  const raw = result.rawOutput as { ranIn: string; exitCode: number };
  assert.equal(raw.ranIn, "terminal");
  assert.equal(raw.exitCode, 3);
});

test("an interrupt midway kills the terminal's command (kill, then release) and the turn ends cancelled", async (t) => {
  const host = new RecordingTerminals();
  let output = "";
  host.onOutput((o) => (output += o.data));
  const exits: { signal: string | null }[] = [];
  host.onExit((e) => exits.push(e));
  const { client } = await startServer(t, { setup: (c) => c.useTerminals(host) });
  allowAll(client);
  const cwd = workspace(t);
  // The command's child (`sleep`) prints its pid: the kill must reach it too.
  const { sessionId } = await client.newSession({
    cwd,
    threadline: { model: runCommand("sleep 120 & echo pid=$!; wait") },
  });
  const turn = client.prompt(sessionId, "run it");
  await waitFor(() => /pid=\d+/.test(output), 10000, "the command's output");
  const pid = Number(/pid=(\d+)/.exec(output)![1]);
  assert.ok(alive(pid));

  const interrupted = await client.interrupt(sessionId);
  assert.equal(interrupted.interrupted, true);
  assert.equal((await turn).stopReason, "cancelled");

  assert.deepEqual(host.calls.slice(0, 2), ["create", "wait_for_exit"]);
  const tail = host.calls.slice(2);
  assert.ok(tail.includes("kill"), `terminal/kill sent: ${host.calls.join(",")}`);
  assert.equal(tail[tail.length - 1], "release", "released last");
  assert.ok(tail.indexOf("kill") < tail.indexOf("release"));
  assert.deepEqual(host.ids, []);
  assert.equal(exits.length, 1);
  assert.equal(exits[0]!.signal, "SIGTERM");
  await waitFor(() => !alive(pid), 5000, "the background sleep to be gone");
});

test("a host cuts kept output to outputByteLimit from the start, on a character boundary", async (t) => {
  const host = new ChildProcessTerminals();
  t.after(() => host.dispose());
  const { terminalId } = host.create({
    sessionId: "s",
    command: "/bin/sh",
    args: ["-c", "printf 'aaaa'; printf 'é%.0s' 1 2 3 4 5; printf 'end'"],
    outputByteLimit: 8,
  });
  const ref = { sessionId: "s", terminalId };
  assert.deepEqual(await host.waitForExit(ref), { exitCode: 0, signal: null });
  const out = host.outputOf(ref);
  assert.equal(out.truncated, true);
  assert.ok(Buffer.byteLength(out.output) <= 8);
  assert.ok(out.output.endsWith("éend"), out.output);
  assert.ok(!out.output.includes("\ufffd"), "no broken character");
  assert.deepEqual(out.exitStatus, { exitCode: 0, signal: null });
  await host.release(ref);
  assert.throws(() => host.outputOf(ref), /no terminal/);
});
