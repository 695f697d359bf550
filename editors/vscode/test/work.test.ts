/**
 * The agent's work in the chat, against a real sidecar: modes (picker state, switching,
 * replay), the plan, a command run in the editor's terminal, an edit's proposed diff in
 * the permission request, the last turn's diff (files that open diff editors, their old
 * text rebuilt from the hunks) and "Rewind to here (files too)".
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { ChildProcessTerminals, type FileDiff, type RequestPermissionParams } from "@threadline/client";
import { ChatController } from "../src/core/chatController";
import { oldTextFromDiff } from "../src/core/diffText";
import { proposedDiffs } from "../src/core/permissions";
import { initialState, reduce } from "../webview/src/state";
import { RecordingSink, scripted, sidecar } from "./sidecar";

function call(name: string, args: Record<string, unknown>) {
  return { tool_call: { name, arguments: args } };
}

function workspace(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), "threadline-vscode-ws-"));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const allow = (asked: RequestPermissionParams[] = []) => async (p: RequestPermissionParams) => {
  asked.push(p);
  return { outcome: { outcome: "selected" as const, optionId: p.options.find((o) => o.kind === "allow_once")!.optionId } };
};

function chatFor(
  client: ConstructorParameters<typeof ChatController>[0],
  cwd: string,
  model: string,
  extra: Partial<ConstructorParameters<typeof ChatController>[2]> = {},
) {
  const sink = new RecordingSink();
  const chat = new ChatController(client, sink, { cwd: () => cwd, tools: () => [], defaultModel: () => model, ...extra });
  return { chat, sink };
}

/** The webview's state after every message the sink got. */
function viewState(sink: RecordingSink) {
  const state = initialState();
  for (const m of sink.messages) reduce(state, m);
  return state;
}

test("modes: the picker's state comes with the session, set_mode switches it, a resume brings it back", async (t) => {
  const { client } = await sidecar(t);
  const cwd = workspace(t);
  const { chat, sink } = chatFor(client, cwd, scripted({ rounds: [[{ text: "hi" }], [{ text: "again" }]] }));
  await chat.handle({ type: "setMode", mode: "plan" });
  assert.match(sink.of("notice").at(-1)!.text, /first message/, "no session yet: nothing to switch");
  await chat.handle({ type: "prompt", text: "Hi" });
  const session = sink.of("session").at(-1)!;
  assert.deepEqual(
    session.modes?.map((m) => m.id),
    ["ask", "plan", "code", "auto"],
  );
  assert.equal(session.currentMode, "code");

  await chat.handle({ type: "setMode", mode: "plan" });
  assert.equal(sink.of("session").at(-1)!.currentMode, "plan");
  assert.equal(chat.currentMode, "plan");
  assert.ok(
    sink.of("update").some((m) => m.notification.update.sessionUpdate === "current_mode_update"),
    "the server's current_mode_update reaches the view",
  );
  assert.equal(viewState(sink).currentMode, "plan");

  // Another window resumes the session: the mode is the stored one.
  const other = chatFor(client, cwd, "");
  await other.chat.handle({ type: "resume", sessionId: session.sessionId! });
  assert.equal(other.sink.of("session").at(-1)!.currentMode, "plan");
  assert.equal(viewState(other.sink).currentMode, "plan");
});

test("the plan: update_plan's entries reach the view's checklist, and a resume replays them", async (t) => {
  const { client } = await sidecar(t);
  const cwd = workspace(t);
  const entries = [
    { content: "Read the failing test", priority: "high", status: "completed" },
    { content: "Fix add()", priority: "medium", status: "in_progress" },
    { content: "Run the tests", priority: "low", status: "pending" },
  ];
  const { chat, sink } = chatFor(client, cwd, scripted({ rounds: [[call("update_plan", { entries })], [{ text: "Planned." }]] }));
  await chat.handle({ type: "prompt", text: "plan it" });
  assert.deepEqual(viewState(sink).plan, entries);

  const other = chatFor(client, cwd, "");
  await other.chat.handle({ type: "resume", sessionId: chat.currentSessionId! });
  assert.deepEqual(viewState(other.sink).plan, entries);
});

test("run_command in the editor's terminal: the host runs it, the tool card says where the output is", async (t) => {
  const terminals = new ChildProcessTerminals();
  let output = "";
  terminals.onOutput((o) => (output += o.data));
  const created: string[] = [];
  terminals.onCreate((info) => created.push(info.args.join(" ")));
  const { client } = await sidecar(t, { permission: allow(), terminals });
  const cwd = workspace(t);
  const { chat, sink } = chatFor(
    client,
    cwd,
    scripted({ rounds: [[call("run_command", { command: "echo from-the-terminal" })], [{ text: "ran" }]] }),
  );
  await chat.handle({ type: "prompt", text: "run" });
  assert.deepEqual(created, ["-c echo from-the-terminal"]);
  assert.match(output, /from-the-terminal/);
  assert.deepEqual(terminals.ids, [], "released");
  const tool = viewState(sink).entries.find((e) => e.kind === "tool");
  assert.ok(tool && tool.kind === "tool");
  assert.equal(tool.status, "completed");
  assert.match(tool.output, /Threadline terminal/);
  const { messages } = await client.history(chat.currentSessionId!);
  const result = messages.flatMap((m) => m.content).find((b) => b.type === "tool_result");
  assert.ok(result && result.type === "tool_result");
  assert.equal((result.rawOutput as { ranIn: string }).ranIn, "terminal");
});

test("an edit's permission request carries the proposed diff the prompt opens", async (t) => {
  const asked: RequestPermissionParams[] = [];
  const { client } = await sidecar(t, { permission: allow(asked) });
  const cwd = workspace(t);
  writeFileSync(join(cwd, "calc.py"), "def add(a, b):\n    return a - b\n");
  const edit = call("edit_file", { path: "calc.py", edits: [{ oldText: "a - b", newText: "a + b" }] });
  const { chat } = chatFor(client, cwd, scripted({ rounds: [[edit], [{ text: "Fixed." }]] }));
  await chat.handle({ type: "prompt", text: "fix it" });
  assert.equal(asked.length, 1);
  const diffs = proposedDiffs(asked[0]!);
  assert.equal(diffs.length, 1);
  assert.equal(diffs[0]!.oldText, "def add(a, b):\n    return a - b\n");
  assert.equal(diffs[0]!.newText, "def add(a, b):\n    return a + b\n");
  assert.ok(diffs[0]!.path.endsWith("calc.py"));
  assert.equal(readFileSync(join(cwd, "calc.py"), "utf8"), "def add(a, b):\n    return a + b\n");
});

test("the last turn's diff lists its files, each opens a diff editor, and a rewind puts the files back", async (t) => {
  const { client } = await sidecar(t, { permission: allow() });
  const cwd = workspace(t);
  const original = "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\n";
  writeFileSync(join(cwd, "notes.txt"), original);
  const edits = [
    { oldText: "line 2\n", newText: "line two\n" },
    { oldText: "line 7\nline 8\n", newText: "line 7\n" },
  ];
  const model = scripted({
    rounds: [
      [call("edit_file", { path: "notes.txt", edits })],
      [call("write_file", { path: "new.txt", content: "brand new\n" })],
      [{ text: "Edited." }],
    ],
  });
  const opened: { file: FileDiff; cwd: string }[] = [];
  const { chat, sink } = chatFor(client, cwd, model, {
    openDiff: async (file, where) => {
      opened.push({ file, cwd: where });
    },
    confirm: async () => true,
  });
  await chat.handle({ type: "prompt", text: "edit the notes" });
  const listed = sink.of("turnDiff").at(-1)!;
  assert.deepEqual(listed.files.map((f) => [f.path, f.status]).sort(), [
    ["new.txt", "added"],
    ["notes.txt", "modified"],
  ]);
  assert.deepEqual(
    viewState(sink).turnDiff?.files.map((f) => f.path).sort(),
    ["new.txt", "notes.txt"],
  );

  await chat.handle({ type: "openDiff", path: "notes.txt" });
  assert.equal(opened.length, 1);
  assert.equal(opened[0]!.cwd, cwd);
  const now = readFileSync(join(cwd, "notes.txt"), "utf8");
  assert.notEqual(now, original);
  assert.equal(oldTextFromDiff(now, opened[0]!.file.diff!), original, "the diff editor's left side is the file before the turn");
  await chat.handle({ type: "openDiff", path: "new.txt" });
  assert.equal(oldTextFromDiff("brand new\n", opened[1]!.file.diff!), "");

  // Rewind to before the prompt, files too.
  const userMessageId = sink.of("turnEnded").at(-1)!.userMessageId!;
  assert.ok(userMessageId);
  await chat.handle({ type: "rewind", messageId: userMessageId });
  assert.equal(readFileSync(join(cwd, "notes.txt"), "utf8"), original);
  assert.throws(() => readFileSync(join(cwd, "new.txt")), /ENOENT/);
  assert.match(sink.of("notice").at(-1)!.text, /Rewound.*2 files restored/);
  const state = viewState(sink);
  assert.equal(state.turnDiff?.files.length ?? 0, 0);
  assert.deepEqual(
    state.entries.filter((e) => e.kind === "user" || e.kind === "assistant"),
    [],
    "the session ends before the rewound prompt",
  );
  const { messages } = await client.history(chat.currentSessionId!);
  assert.equal(messages.length, 0);

  // "Undo rewind": the turns and the files come back.
  const rewindId = sink.of("rewound").at(-1)!.rewindId!;
  assert.ok(rewindId);
  assert.equal(state.rewindId, rewindId, "the view offers the undo");
  await chat.handle({ type: "unrewind", rewindId });
  assert.equal(readFileSync(join(cwd, "notes.txt"), "utf8"), now);
  assert.equal(readFileSync(join(cwd, "new.txt"), "utf8"), "brand new\n");
  assert.match(sink.of("notice").at(-1)!.text, /Rewind undone/);
  const back = viewState(sink);
  assert.equal(back.rewindId, null);
  assert.deepEqual(
    back.entries.filter((e) => e.kind === "user").map((e) => (e as { text: string }).text),
    ["edit the notes"],
  );
});

test("a rewind the user does not confirm changes nothing", async (t) => {
  const { client } = await sidecar(t);
  const cwd = workspace(t);
  const { chat, sink } = chatFor(client, cwd, scripted({ rounds: [[{ text: "one" }]] }), { confirm: async () => false });
  await chat.handle({ type: "prompt", text: "Hi" });
  await chat.handle({ type: "rewind", messageId: sink.of("turnEnded").at(-1)!.userMessageId! });
  const { messages } = await client.history(chat.currentSessionId!);
  assert.equal(messages.length, 2);
});

test("oldTextFromDiff: hunks at the start and end, insertions, deletions, no final newline", () => {
  // Hand-written git diffs of known pairs.
  assert.equal(
    oldTextFromDiff("b\nc\n", "@@ -1,3 +1,2 @@\n-a\n b\n c\n"),
    "a\nb\nc\n",
  );
  assert.equal(oldTextFromDiff("a\nb\nx\n", "@@ -2 +2,2 @@\n b\n+x\n"), "a\nb\n");
  assert.equal(oldTextFromDiff("a\nb", "@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n"), "a\nb\n");
  assert.equal(oldTextFromDiff("a\nb\n", "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"), "a\nb");
  assert.equal(oldTextFromDiff("new\n", "@@ -0,0 +1 @@\n+new\n"), "");
  assert.equal(oldTextFromDiff("", "@@ -1,2 +0,0 @@\n-gone\n-too\n"), "gone\ntoo\n");
  assert.equal(oldTextFromDiff("x\na\n", "@@ -0,0 +1 @@\n+x\n"), "a\n");
});
