/**
 * Images and delegated work through the chat's host side against a real sidecar, and
 * what the chat's state (the webview's reducer) makes of what the host posts: an image
 * prompt, a refused one, a tool's image result, a `delegate` call's child session.
 */
import assert from "node:assert/strict";
import { tmpdir } from "node:os";
import { test } from "node:test";
import type { ToolDefinition } from "@threadline/client";
import { ChatController } from "../src/core/chatController";
import { initialState, reduce, type ChatState, type Entry } from "../webview/src/state";
import type { HostMessage } from "../webview/src/messages";
import { png } from "./png";
import { RecordingSink, scripted, sidecar, waitFor } from "./sidecar";

const CWD = tmpdir();
const SHOT = png(32, 16).toString("base64");

function controller(
  client: ConstructorParameters<typeof ChatController>[0],
  opts: {
    model?: string;
    tools?: ToolDefinition[];
    openChild?: (id: string) => void;
    openParent?: (id: string) => void;
    initialSessionId?: string;
  } = {},
) {
  const sink = new RecordingSink();
  const chat = new ChatController(client, sink, {
    cwd: () => CWD,
    tools: () => opts.tools ?? [],
    defaultModel: () => opts.model,
    ...(opts.openChild ? { openChild: opts.openChild } : {}),
    ...(opts.openParent ? { openParent: opts.openParent } : {}),
    ...(opts.initialSessionId ? { initialSessionId: opts.initialSessionId } : {}),
  });
  return { chat, sink };
}

/** The chat's state after the view was given these host messages. */
function shown(messages: HostMessage[]): ChatState {
  const state = initialState();
  for (const m of messages) reduce(state, m);
  return state;
}

function only<K extends Entry["kind"]>(state: ChatState, kind: K): Extract<Entry, { kind: K }>[] {
  return state.entries.filter((e): e is Extract<Entry, { kind: K }> => e.kind === kind);
}

test("an image prompt: an image block after the text, shown with the prompt, stored, replayed; the text-only model's warning", async (t) => {
  const { client } = await sidecar(t);
  const { chat, sink } = controller(client, { model: scripted({ rounds: [[{ text: "I only read a placeholder." }]] }) });
  await chat.handle({ type: "prompt", text: "what is this?", images: [{ mimeType: "image/png", data: SHOT, name: "shot.png" }] });
  assert.equal(sink.of("turnEnded").at(-1)?.stopReason, "end_turn");
  assert.equal(sink.of("turnStarted")[0]?.images?.[0]?.data, SHOT);

  const sessionId = chat.currentSessionId!;
  const { messages } = await client.history(sessionId);
  const user = messages.find((m) => m.role === "user")!;
  assert.deepEqual(user.content[0], { type: "text", text: "what is this?" });
  const image = user.content[1] as { type: string; mimeType: string; data: string; _meta: { threadline: { image: { width: number; height: number } } } };
  assert.equal(image.type, "image");
  assert.equal(image.mimeType, "image/png");
  assert.equal(image.data, SHOT);
  assert.deepEqual([image._meta.threadline.image.width, image._meta.threadline.image.height], [32, 16]);

  // Live: the prompt with its thumbnail, and the server's word that the model cannot see it.
  const live = shown(sink.messages);
  const [typed] = only(live, "user");
  assert.equal(typed!.text, "what is this?");
  assert.equal(typed!.images?.[0]?.src, `data:image/png;base64,${SHOT}`);
  const warnings = only(live, "notice").filter((n) => /cannot see images/.test(n.text));
  assert.equal(warnings.length, 1, `one warning: ${JSON.stringify(only(live, "notice"))}`);

  // Replayed in another window: the same prompt, its image with its size.
  const other = controller(client);
  await other.chat.handle({ type: "resume", sessionId });
  const [replayed] = only(shown(other.sink.messages), "user");
  assert.equal(replayed!.text, "what is this?");
  assert.equal(replayed!.images?.length, 1);
  assert.equal(replayed!.images![0]!.src, `data:image/png;base64,${SHOT}`);
  assert.match(replayed!.images![0]!.label, /32×16 PNG/);
});

test("an image the server refuses: its reason as an error notice, and the turn ends", async (t) => {
  const { client } = await sidecar(t);
  const { chat, sink } = controller(client, { model: scripted({ rounds: [[{ text: "never" }]] }) });
  const notImage = Buffer.from("this is plain text, not a picture").toString("base64");
  await chat.handle({ type: "prompt", text: "look", images: [{ mimeType: "image/png", data: notImage }] });
  assert.equal(sink.of("turnEnded").at(-1)?.stopReason, "error");
  const errors = sink.of("notice").filter((n) => n.level === "error");
  assert.equal(errors.length, 1);
  assert.match(errors[0]!.text, /not a PNG, JPEG, GIF or WebP image/);
  assert.match(errors[0]!.text, /-32602/);
});

test("an image-only prompt (no text) is sent as one image block", async (t) => {
  const { client } = await sidecar(t);
  const { chat } = controller(client, { model: scripted({ rounds: [[{ text: "ok" }]], images: true }) });
  await chat.handle({ type: "prompt", text: "", images: [{ mimeType: "image/png", data: SHOT }] });
  const { messages } = await client.history(chat.currentSessionId!);
  const user = messages.find((m) => m.role === "user")!;
  assert.deepEqual(
    user.content.map((b) => b.type),
    ["image"],
  );
});

test("a tool's image result is shown on its card, live and replayed", async (t) => {
  const { client } = await sidecar(t, {
    toolCall: async () => ({
      content: [
        { type: "text", text: "the screen:" },
        { type: "image", mimeType: "image/png", data: SHOT },
      ],
    }),
  });
  const tool: ToolDefinition = { name: "screenshot", description: "Take a screenshot" };
  const { chat, sink } = controller(client, {
    tools: [tool],
    model: scripted({ rounds: [[{ tool_call: { name: "screenshot", arguments: {} } }], [{ text: "I see a screen." }]], images: true }),
  });
  await chat.handle({ type: "prompt", text: "look at the screen" });
  assert.equal(sink.of("turnEnded").at(-1)?.stopReason, "end_turn");
  const [card] = only(shown(sink.messages), "tool");
  assert.equal(card!.status, "completed");
  assert.equal(card!.images.length, 1);
  assert.equal(card!.images[0]!.src, `data:image/png;base64,${SHOT}`);
  assert.match(card!.output, /the screen:/);

  const other = controller(client);
  await other.chat.handle({ type: "resume", sessionId: chat.currentSessionId! });
  const [replayed] = only(shown(other.sink.messages), "tool");
  assert.equal(replayed!.images.length, 1);
  assert.equal(replayed!.images[0]!.src, `data:image/png;base64,${SHOT}`);
});

test("a delegate call: its card names the child; Open child session opens it where the editor says (or here); Parent leads back", async (t) => {
  const { client } = await sidecar(t);
  const child = scripted({ rounds: [[{ text: "three files" }]] });
  const model = scripted({
    rounds: [[{ tool_call: { name: "delegate", arguments: { task: "count the files", model: child } } }], [{ text: "Parent done." }]],
  });
  const { chat, sink } = controller(client, { model });
  await chat.handle({ type: "prompt", text: "delegate it" });
  assert.equal(sink.of("turnEnded").at(-1)?.stopReason, "end_turn");
  const parentId = chat.currentSessionId!;
  const [card] = only(shown(sink.messages), "tool");
  assert.ok(card?.childSessionId, `the card names the child: ${JSON.stringify(card)}`);
  assert.match(card.output, /three files/);
  const childId = card.childSessionId;

  // Where the editor opens it (VS Code: a tab beside; the desktop: a pane beside): this
  // view stays on the parent.
  const opened: string[] = [];
  const desk = controller(client, { openChild: (id) => void opened.push(id) });
  await desk.chat.handle({ type: "resume", sessionId: parentId });
  await desk.chat.handle({ type: "openChild", sessionId: childId });
  assert.deepEqual(opened, [childId]);
  assert.equal(desk.chat.currentSessionId, parentId);

  // The child's own page (VS Code's tab): it shows the child, and its Parent button
  // asks the editor to bring up the page that shows the parent; the tab stays.
  const parents: string[] = [];
  const tab = controller(client, { initialSessionId: childId, openParent: (id) => void parents.push(id) });
  await tab.chat.handle({ type: "ready" });
  const tabState = shown(tab.sink.messages);
  assert.deepEqual([tabState.sessionId, tabState.kind, tabState.parentSessionId], [childId, "child", parentId]);
  await tab.chat.handle({ type: "openParent", sessionId: parentId });
  assert.deepEqual(parents, [parentId]);
  assert.equal(tab.chat.currentSessionId, childId);

  // A controller without an editor's way (no openChild): the child replaces the parent
  // here, named as its sub-agent, and Parent shows the parent again.
  await chat.handle({ type: "openChild", sessionId: childId });
  assert.equal(chat.currentSessionId, childId);
  const session = sink.of("session").at(-1)!;
  assert.equal(session.kind, "child");
  assert.equal(session.parentSessionId, parentId);
  assert.equal(session.parentTitle, "delegate it");
  const afterReset = sink.messages.slice(sink.messages.lastIndexOf(sink.of("reset").at(-1)!));
  const state = shown(afterReset);
  assert.equal(state.kind, "child");
  assert.deepEqual(only(state, "assistant").map((e) => e.text), ["three files"]);
  await chat.handle({ type: "openParent", sessionId: parentId });
  assert.equal(chat.currentSessionId, parentId);
  assert.deepEqual(only(shown(sink.messages.slice(sink.messages.lastIndexOf(sink.of("reset").at(-1)!))), "assistant").map((e) => e.text), ["Parent done."]);

  // The sessions list says which session is a child, and whose.
  const { sessions } = await client.list({});
  const listed = sessions.find((s) => s.sessionId === childId)!;
  assert.deepEqual([(listed._meta as { kind?: string }).kind, (listed._meta as { parentSessionId?: string }).parentSessionId], ["child", parentId]);
});

test("a child opened while it runs streams live in the view; the parent's end is not shown over it", async (t) => {
  const { client } = await sidecar(t);
  const child = scripted({ rounds: [[{ text: "counting " }, { sleep: 1.5 }, { text: "done: three files" }]] });
  const model = scripted({
    rounds: [[{ tool_call: { name: "delegate", arguments: { task: "count the files", model: child } } }], [{ text: "Parent done." }]],
  });
  const { chat, sink } = controller(client, { model });
  const turn = chat.handle({ type: "prompt", text: "delegate it" });
  let childId: string | null = null;
  await waitFor(
    () => {
      const [card] = only(shown(sink.messages), "tool");
      childId = card?.childSessionId ?? null;
      return childId !== null && /counting/.test(card?.output ?? "");
    },
    15_000,
    "the card naming the child, its first words streamed",
  );
  await chat.handle({ type: "openChild", sessionId: childId! });
  const from = sink.messages.length;
  await turn;
  await waitFor(() => only(shown(sink.messages.slice(sink.messages.lastIndexOf(sink.of("reset").at(-1)!))), "assistant").some((e) => e.text.includes("three files")), 15_000, "the child's answer live");
  const view = shown(sink.messages.slice(sink.messages.lastIndexOf(sink.of("reset").at(-1)!)));
  assert.equal(view.sessionId, childId);
  // What it streamed before it was opened comes first, then the rest live, each once.
  const answers = only(view, "assistant").map((e) => e.text);
  assert.equal(answers.length, 1);
  assert.equal(answers[0], "counting done: three files");
  const after = sink.messages.slice(from);
  assert.deepEqual(after.filter((m) => m.type === "turnEnded" || m.type === "turnDiff"), [], "the parent's end stays the parent's");
  assert.ok(!after.some((m) => m.type === "update" && m.notification.sessionId !== childId), "only the child's updates");
});
