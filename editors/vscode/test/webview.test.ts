/**
 * The chat page in headless Chromium (Debian's /usr/bin/chromium through playwright-core;
 * no browser is downloaded), fed the update stream recorded from a real session
 * (test/fixtures/chat-stream.json). The page is media/chat.html filled by the
 * extension's own fillTemplate, CSP included, served from a fake origin by request
 * interception: nothing touches the network. Screenshots go to test-output/.
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { fillTemplate } from "../src/core/html";
import type { HostMessage, WebviewMessage } from "../webview/src/messages";
import { png } from "./png";

const root = resolve(__dirname, "../..");
const outDir = join(root, "test-output");
const ORIGIN = "https://webview.test";
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

interface Fixture {
  marks: { interruptAt: number };
  messages: HostMessage[];
}
const fixture = JSON.parse(readFileSync(join(root, "test", "fixtures", "chat-stream.json"), "utf8")) as Fixture;

let context: BrowserContext;
let profile: string;

before(async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} missing: apt-get install -y chromium`);
  assert.ok(existsSync(join(root, "dist", "webview", "chat.js")), "run `node esbuild.mjs` first");
  mkdirSync(outDir, { recursive: true });
  profile = mkdtempSync(join(tmpdir(), "threadline-chromium-"));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
    viewport: { width: 440, height: 940 },
    timeout: 60_000,
  });
});

after(async () => {
  await context?.close();
  rmSync(profile, { recursive: true, force: true });
});

/** Serve the page and its assets from ORIGIN; refuse every other request. */
async function openPage(opts: { withVsCodeApi: boolean }): Promise<{ page: Page; errors: string[] }> {
  const page = await context.newPage();
  const errors: string[] = [];
  page.on("pageerror", (err) => errors.push(`pageerror: ${err.message}`));
  page.on("console", (msg) => {
    if (msg.type() === "error") errors.push(`console: ${msg.text()}`);
  });
  const html = fillTemplate(readFileSync(join(root, "media", "chat.html"), "utf8"), {
    cspSource: ORIGIN,
    scriptUri: `${ORIGIN}/dist/webview/chat.js`,
    styleUri: `${ORIGIN}/media/chat.css`,
  });
  await page.route("**/*", async (route) => {
    const url = new URL(route.request().url());
    if (url.origin !== ORIGIN) return route.abort();
    if (url.pathname === "/chat.html") {
      return route.fulfill({ contentType: "text/html", body: html });
    }
    const file = join(root, url.pathname);
    if (!file.startsWith(root) || !existsSync(file)) return route.fulfill({ status: 404, body: "" });
    const type = file.endsWith(".js") ? "text/javascript" : file.endsWith(".css") ? "text/css" : "application/octet-stream";
    return route.fulfill({ contentType: type, body: readFileSync(file) });
  });
  if (opts.withVsCodeApi) {
    await page.addInitScript(() => {
      const posted: unknown[] = [];
      (window as unknown as { __posted: unknown[] }).__posted = posted;
      (window as unknown as { acquireVsCodeApi: () => unknown }).acquireVsCodeApi = () => ({
        postMessage: (m: unknown) => posted.push(m),
        getState: () => undefined,
        setState: () => undefined,
      });
    });
  }
  await page.goto(`${ORIGIN}/chat.html`);
  return { page, errors };
}

async function feed(page: Page, messages: HostMessage[]): Promise<void> {
  for (const message of messages) {
    await page.evaluate((m) => window.postMessage(m, "*"), message);
  }
  // Let the page's requestAnimationFrame render run.
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
}

async function posted(page: Page): Promise<WebviewMessage[]> {
  return page.evaluate(() => (window as unknown as { __posted: WebviewMessage[] }).__posted);
}

function recordedText(messageId: string): string {
  return fixture.messages
    .map((m) =>
      m.type === "update" &&
      m.notification.update.sessionUpdate === "agent_message_chunk" &&
      m.notification.update.messageId === messageId &&
      m.notification.update.content.type === "text"
        ? m.notification.update.content.text
        : "",
    )
    .join("");
}

test("the chat page renders a recorded session: streaming, thoughts, tool call, interrupt", async () => {
  const { page, errors } = await openPage({ withVsCodeApi: true });
  assert.deepEqual(await posted(page), [{ type: "ready" }], "the page announces itself");

  // Play the recording up to the moment the user interrupted turn 2.
  const { interruptAt } = fixture.marks;
  await feed(page, fixture.messages.slice(0, interruptAt));
  const interrupt = page.locator("#interrupt");
  assert.equal(await interrupt.isEnabled(), true, "interrupt is live while a turn runs");
  assert.match((await interrupt.getAttribute("class")) ?? "", /active/);
  // Typing goes on while the turn runs: Send queues, Steer joins the turn.
  assert.equal(await page.locator("#send").isEnabled(), true);
  assert.equal(await page.locator("#send").innerText(), "Queue");
  assert.equal(await page.locator("#steer").isVisible(), true);
  assert.match(await page.locator("#status").innerText(), /Generating/);
  const partial = page.locator(".entry.assistant").last();
  assert.equal(await partial.locator(".body").textContent(), "Writing a long story about ");
  await page.screenshot({ path: join(outDir, "chat-streaming.png") });

  await interrupt.click();
  assert.deepEqual((await posted(page)).at(-1), { type: "interrupt" });
  await feed(page, fixture.messages.slice(interruptAt));
  assert.equal(await interrupt.isEnabled(), false, "interrupt is off once the turn ended");
  assert.equal(await page.locator(".entry.notice").last().innerText(), "Interrupted.");

  // Users' prompts, in order.
  assert.deepEqual(await page.locator(".entry.user .body").allInnerTexts(), [
    "What's the weather in Paris?",
    "Now tell me a long story.",
  ]);

  // The thought, collapsed, with its text.
  const thought = page.locator("details.thought");
  assert.equal(await thought.count(), 1);
  assert.equal(
    await thought.locator(".body").textContent(),
    "The user asks about the weather, so I should call get_weather for Paris.",
  );

  // The tool call card, completed, with its input and output.
  const tool = page.locator(".entry.tool");
  assert.equal(await tool.count(), 1);
  assert.equal(await tool.locator(".tool-title").innerText(), "get_weather");
  assert.equal(await tool.getAttribute("data-status"), "completed");
  assert.equal(await tool.locator(".badge").innerText(), "done");
  assert.equal(await tool.locator(".tool-output").innerText(), "18°C, sunny in Paris");
  assert.deepEqual(JSON.parse((await tool.locator(".tool-input pre").textContent()) ?? ""), { city: "Paris" });

  // The Markdown answer: the streamed text, rendered, with markup kept as text.
  const ended = fixture.messages.find((m) => m.type === "turnEnded" && m.stopReason === "end_turn");
  assert.ok(ended && ended.type === "turnEnded" && ended.messageId);
  const answer = page.locator(`.entry.assistant[data-message-id="${ended.messageId}"]`);
  const source = recordedText(ended.messageId);
  assert.ok(source.startsWith("It is **18°C**"), "the fixture holds the answer");
  assert.equal(await answer.locator("strong").innerText(), "18°C");
  assert.equal(await answer.locator("pre code").textContent(), '{"city": "Paris", "temperature": 18}');
  assert.equal(await answer.locator("p code").innerText(), "get_weather");
  const plain = (s: string) => s.replace(/\s+/g, " ").trim();
  assert.equal(
    plain((await answer.locator(".body").textContent()) ?? ""),
    plain(source.replace(/\*\*/g, "").replace(/```json|```/g, "").replace(/`/g, "")),
  );
  assert.equal(await page.locator(".transcript b").count(), 0, "model output is never parsed as HTML");
  assert.match(await answer.innerText(), /<b>This tag is text\.<\/b>/);

  // Title and usage from the stream.
  assert.equal(await page.locator("#title").innerText(), "What's the weather in Paris?");
  assert.match(await page.locator("#status").innerText(), /context 222 \/ 8,192 tokens/);

  // Actions post what the host expects.
  await answer.hover();
  await answer.locator("button.fork").click();
  assert.deepEqual((await posted(page)).at(-1), { type: "fork", messageId: ended.messageId });
  await page.locator("#compact").click();
  assert.deepEqual((await posted(page)).at(-1), { type: "compact" });

  const select = page.locator("#model");
  const models = await select.locator("option").evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value));
  assert.ok(models.includes("local:smollm2-135m"));
  const current = await select.inputValue();
  assert.match(current, /^scripted:.*hang/, "the picker shows the session's current model");
  await select.selectOption("local:smollm2-135m");
  assert.deepEqual((await posted(page)).at(-1), { type: "setModel", model: "local:smollm2-135m" });

  // The recording ends with a sessions list: it is shown, and a click resumes.
  const sessions = page.locator("#sessions-panel");
  assert.equal(await sessions.isVisible(), true);
  const item = sessions.locator("button.session").first();
  assert.equal(await item.locator(".session-title").innerText(), "What's the weather in Paris?");
  await page.screenshot({ path: join(outDir, "chat-sessions.png") });
  const sessionId = await item.getAttribute("data-session-id");
  await item.click();
  assert.deepEqual((await posted(page)).at(-1), { type: "resume", sessionId });
  assert.equal(await sessions.isVisible(), false);
  await page.locator("#sessions").click();
  assert.deepEqual((await posted(page)).at(-1), { type: "listSessions" });

  // The composer: Enter sends, Shift+Enter is a new line.
  await page.locator("#input").fill("first line");
  await page.locator("#input").press("Shift+Enter");
  await page.locator("#input").pressSequentially("second line");
  await page.locator("#input").press("Enter");
  assert.deepEqual((await posted(page)).at(-1), { type: "prompt", text: "first line\nsecond line" });
  assert.equal(await page.locator("#input").inputValue(), "");

  // Open the thought and the tool input for the final picture.
  await thought.locator("summary").click();
  await tool.locator(".tool-input summary").click();
  assert.equal(await thought.locator(".body").isVisible(), true);
  await page.locator(".transcript").evaluate((el) => (el.scrollTop = 0));
  const png = join(outDir, "chat.png");
  await page.screenshot({ path: png });
  assert.ok(statSync(png).size > 20_000, "the screenshot has content");
  assert.deepEqual(errors, [], "no script errors and no CSP violations");
  await page.close();
});

test("without acquireVsCodeApi (a plain browser) the page still works", async () => {
  const { page, errors } = await openPage({ withVsCodeApi: false });
  await feed(page, [
    { type: "session", sessionId: "sess_x", models: [{ id: "m", name: "Model M" }], currentModel: "m" },
    { type: "turnStarted", text: "hi" },
    {
      type: "update",
      notification: {
        sessionId: "sess_x",
        update: { sessionUpdate: "agent_message_chunk", messageId: "msg_1", content: { type: "text", text: "hello" } },
      },
    },
  ]);
  assert.equal(await page.locator(".entry.assistant .body").innerText(), "hello");
  assert.equal(await page.locator("#interrupt").isEnabled(), true);
  // Updates of another session are not mixed in.
  await feed(page, [
    {
      type: "update",
      notification: {
        sessionId: "sess_other",
        update: { sessionUpdate: "agent_message_chunk", messageId: "msg_1", content: { type: "text", text: " intruder" } },
      },
    },
  ]);
  assert.equal(await page.locator(".entry.assistant .body").innerText(), "hello");
  assert.deepEqual(errors, []);
  await page.close();
});

function update(sessionId: string, u: Record<string, unknown>): HostMessage {
  return { type: "update", notification: { sessionId, update: u } } as unknown as HostMessage;
}

test("rough edges: narrow picker, whole badges, notes, summaries, replay marks, compaction, sidecar down", async () => {
  const { page, errors } = await openPage({ withVsCodeApi: true });
  await page.setViewportSize({ width: 260, height: 900 }); // VS Code's default sidebar width
  const sid = "sess_abc";
  await feed(page, [
    {
      type: "session",
      sessionId: sid,
      title: "Colours",
      parentSessionId: "sess_parent0123456789",
      parentTitle: "Paint questions",
      models: [{ id: "local:smollm2-135m", name: "SmolLM2 135M (local)" }],
      currentModel: "local:smollm2-135m",
    },
    // A resumed session: a task, an answer a compaction took out, the summary, an
    // interrupted answer, and a tool whose long title wraps.
    update(sid, { sessionUpdate: "user_message_chunk", messageId: "msg_u1", content: { type: "text", text: "Name the colours." } }),
    update(sid, {
      sessionUpdate: "agent_message_chunk",
      messageId: "msg_a1",
      content: { type: "text", text: "Red, yellow, blue." },
      _meta: { threadline: { turnId: "a1", compacted: true } },
    }),
    update(sid, {
      sessionUpdate: "agent_message_chunk",
      messageId: "msg_s1",
      content: { type: "text", text: "The user asked for colours." },
      _meta: { threadline: { turnId: "a1", summary: true } },
    }),
    update(sid, {
      sessionUpdate: "agent_message_chunk",
      messageId: "msg_a2",
      content: { type: "text", text: "Mixing paint is" },
      _meta: { threadline: { turnId: "a2", truncated: true } },
    }),
    update(sid, {
      sessionUpdate: "tool_call",
      toolCallId: "call_1",
      title: "search_text pattern=“a very long pattern that wraps” in src/some/deeply/nested/folder",
      kind: "search",
      status: "pending",
    }),
    update(sid, { sessionUpdate: "tool_call_update", toolCallId: "call_1", status: "failed" }),
  ]);
  const box = await page.locator("#model").boundingBox();
  assert.ok(box && box.width >= 100, `the picker is squeezed to ${box?.width}px`);
  const badge = page.locator(".tool .badge");
  assert.equal(await badge.innerText(), "failed");
  assert.ok(await badge.evaluate((e) => e.scrollWidth <= e.clientWidth + 1), "the badge is clipped");
  assert.equal(await page.locator(".entry.summary").count(), 1);
  assert.equal(await page.locator(".entry.assistant", { hasText: "The user asked" }).count(), 0);
  assert.equal(await page.locator(".entry.assistant.compacted").count(), 1);
  assert.equal(await page.locator(".notice", { hasText: "Interrupted." }).count(), 1);
  assert.match(await page.locator("#status").innerText(), /fork of “Paint questions”/);
  assert.doesNotMatch(await page.locator("body").innerText(), /sess_/);
  await page.screenshot({ path: join(outDir, "chat-narrow-resumed.png") });

  // A live turn: the engine's nudge is a note (no fork); the typed message gets its id
  // when the turn ends, and with it "Fork from here".
  await feed(page, [
    { type: "turnStarted", text: "And mixing?" },
    update(sid, {
      sessionUpdate: "user_message_chunk",
      messageId: "eph_1",
      content: { type: "text", text: "You already called editor_get_selection with these arguments." },
      _meta: { threadline: { turnId: "u3", ephemeral: true } },
    }),
  ]);
  assert.equal(await page.locator(".entry.note").count(), 1);
  assert.equal(await page.locator(".entry.note .fork").count(), 0);
  assert.equal(await page.locator(".entry.user", { hasText: "And mixing?" }).locator(".fork").count(), 0);
  await feed(page, [{ type: "turnEnded", stopReason: "end_turn", messageId: "msg_a3", userMessageId: "msg_u3" }]);
  const typed = page.locator(".entry.user", { hasText: "And mixing?" });
  await typed.hover();
  await typed.locator(".fork").click();
  assert.deepEqual((await posted(page)).at(-1), { type: "fork", messageId: "msg_u3" });

  // Compaction: a prompt typed meanwhile is queued (no steering a compaction); one
  // that changed nothing says so; a real one updates the context figure.
  await feed(page, [update(sid, { sessionUpdate: "usage_update", used: 1404, size: 8192 }), { type: "compacting", active: true }]);
  assert.equal(await page.locator("#send").innerText(), "Queue");
  assert.equal(await page.locator("#steer").isHidden(), true);
  assert.equal(await page.locator("#compact").isDisabled(), true);
  assert.match(await page.locator("#status").innerText(), /Compacting…/);
  const noop = {
    summary: "",
    tokensBefore: 1404,
    tokensAfter: 1404,
    messagesBefore: 4,
    messagesAfter: 4,
    _meta: { threadline: { compacted: false, reason: "nothing old enough to summarise" } },
  };
  await feed(page, [{ type: "compacted", result: noop }, { type: "compacting", active: false }]);
  assert.equal(await page.locator(".notice").last().innerText(), "Nothing to compact: nothing old enough to summarise.");
  assert.equal(await page.locator("#send").innerText(), "Send");
  const real = { summary: "Short.", tokensBefore: 1404, tokensAfter: 610, messagesBefore: 8, messagesAfter: 5, _meta: { threadline: { compacted: true } } };
  await feed(page, [
    update(sid, { sessionUpdate: "compaction_update", compactionId: "cmp_1", status: "completed", summary: "Short." }),
    { type: "compacted", result: real },
  ]);
  assert.match(await page.locator("#status").innerText(), /context 610 \/ 8,192 tokens/);
  assert.equal(await page.locator(".entry.summary").count(), 2);

  // The sidecar is down: said in the chat, Send off, Restart asks the host.
  await feed(page, [{ type: "sidecar", down: 'could not start "/nope" (ENOENT).' }]);
  assert.equal(await page.locator("#sidecar-banner").isVisible(), true);
  assert.equal(await page.locator("#send").isDisabled(), true);
  await page.locator("#restart-sidecar").click();
  assert.deepEqual((await posted(page)).at(-1), { type: "restartSidecar" });
  await page.screenshot({ path: join(outDir, "chat-sidecar-down.png") });
  await feed(page, [{ type: "sidecar", down: null }]);
  assert.equal(await page.locator("#sidecar-banner").isVisible(), false);
  assert.deepEqual(errors, []);
  await page.close();
});

test("the toolbar in a narrow sidebar: the picker beside the buttons, or on a row of its own; the buttons always together", async () => {
  const { page, errors } = await openPage({ withVsCodeApi: true });
  await feed(page, [
    {
      type: "session",
      sessionId: "sess_abc",
      title: "A title long enough to be cut off in a narrow sidebar, surely",
      models: [{ id: "openai:gpt-4o-mini", name: "GPT-4o mini through a provider with a long name" }],
      currentModel: "openai:gpt-4o-mini",
    },
  ]);
  const rows = () =>
    page.evaluate(() => {
      // The middle of each control: a row's controls differ in height by a pixel or two.
      const top = (sel: string) => {
        const r = document.querySelector<HTMLElement>(sel)!.getBoundingClientRect();
        return Math.round((r.top + r.height / 2) / 4);
      };
      const bar = document.querySelector<HTMLElement>(".toolbar")!;
      return {
        title: top("#title"),
        picker: top("#model"),
        buttons: ["#new-session", "#sessions", "#compact"].map(top),
        overflows: bar.scrollWidth > bar.clientWidth,
      };
    });
  for (const width of [440, 320, 260, 200]) {
    await page.setViewportSize({ width, height: 700 });
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const r = await rows();
    assert.equal(new Set(r.buttons).size, 1, `at ${width}px the buttons wrapped apart: ${JSON.stringify(r)}`);
    assert.equal(r.overflows, false, `at ${width}px the toolbar overflows`);
    assert.ok(r.picker > r.title, `at ${width}px`);
    if (width >= 400) assert.equal(r.picker, r.buttons[0], `at ${width}px the picker and the buttons share a row`);
    else assert.ok(r.buttons[0]! > r.picker, `at ${width}px the picker has a row of its own`);
    await page.screenshot({ path: join(outDir, `toolbar-${width}.png`) });
  }
  // Why a turn stopped, in words.
  await feed(page, [{ type: "turnStarted", text: "go" }, { type: "turnEnded", stopReason: "max_tokens" }]);
  assert.equal(
    await page.locator(".notice").last().innerText(),
    "Stopped: the answer reached its length limit (max_tokens).",
  );
  assert.deepEqual(errors, []);
  await page.close();
});

test("the sessions panel: search with highlighted snippets opens at the hit; rename in place; archive; the archived list", async () => {
  const { page, errors } = await openPage({ withVsCodeApi: true });
  await page.setViewportSize({ width: 300, height: 900 });
  const sid = "sess_one";
  const session = (id: string, title: string) => ({
    sessionId: id,
    cwd: "/w",
    title,
    updatedAt: "2025-06-01T10:00:00Z",
    _meta: { messageCount: 2, parentSessionId: null, forkedAtMessageId: null, model: null, preview: null, archived: false, tags: [] },
  });
  await feed(page, [
    { type: "session", sessionId: sid, models: [], currentModel: null },
    { type: "sessions", sessions: [session(sid, "Kettle care"), session("sess_two", "Garden")], archived: false },
  ]);
  const panel = page.locator("#sessions-panel");
  assert.equal(await panel.locator(".session-row").count(), 2);
  assert.equal(await panel.locator(".toggle-archived").innerText(), "Show archived");

  // Typing searches (after a short pause); the hits replace the list.
  await panel.locator(".session-search").fill("descale kettle");
  await page.waitForFunction(() =>
    (window as unknown as { __posted: { type: string }[] }).__posted.some((m) => m.type === "search"),
  );
  assert.deepEqual((await posted(page)).at(-1), { type: "search", query: "descale kettle" });
  await feed(page, [
    {
      type: "searchResults",
      query: "descale kettle",
      hits: [
        {
          sessionId: "sess_two",
          messageId: "msg_u7",
          role: "user",
          title: "Garden",
          cwd: "/w",
          updatedAt: "2025-06-02T09:30:00Z",
          archived: true,
          snippet: [
            { text: "…how to ", match: false },
            { text: "descale", match: true },
            { text: " the <b>", match: false },
            { text: "kettle", match: true },
            { text: "</b> monthly", match: false },
          ],
        },
      ],
    },
  ]);
  assert.equal(await panel.locator(".session-list").isVisible(), false, "hits replace the list");
  const hit = panel.locator("button.hit");
  assert.equal(await hit.count(), 1);
  assert.equal(await hit.locator(".session-title").innerText(), "Garden");
  assert.equal(await hit.locator(".session-meta").innerText(), "in your message · 2025-06-02 09:30 · archived");
  assert.deepEqual(await hit.locator("mark").allInnerTexts(), ["descale", "kettle"]);
  assert.equal(await hit.locator(".hit-snippet").innerText(), "…how to descale the <b>kettle</b> monthly");
  assert.equal(await page.locator(".hit-snippet b").count(), 0, "snippets are text, never HTML");
  await page.screenshot({ path: join(outDir, "chat-search.png") });
  await hit.click();
  assert.deepEqual((await posted(page)).at(-1), { type: "open", sessionId: "sess_two", messageId: "msg_u7" });
  assert.equal(await panel.isVisible(), false);

  // The host replays the session and asks for the hit: it is scrolled to and marked.
  await feed(page, [
    { type: "reset" },
    { type: "session", sessionId: "sess_two", title: "Garden", models: [], currentModel: null },
    ...Array.from({ length: 12 }, (_, i) =>
      update("sess_two", {
        sessionUpdate: i % 2 ? "agent_message_chunk" : "user_message_chunk",
        messageId: i === 6 ? "msg_u7" : `msg_${i}`,
        content: { type: "text", text: `message ${i}\n\n${"filler line\n\n".repeat(8)}` },
      }),
    ),
    { type: "reveal", messageId: "msg_u7", toolCallId: null },
  ]);
  const target = page.locator('.entry.user[data-message-id="msg_u7"]');
  assert.match((await target.getAttribute("class")) ?? "", /search-target/);
  assert.equal(await page.locator(".search-target").count(), 1);
  assert.ok(await target.evaluate((el) => {
    const box = el.getBoundingClientRect();
    const view = el.closest(".transcript")!.getBoundingClientRect();
    return box.top >= view.top && box.top < view.bottom;
  }), "the hit is in view");

  // Clearing the box shows the list again; Rename edits the title in place.
  await feed(page, [{ type: "searchResults", query: "", hits: [] }, { type: "sessions", sessions: [session(sid, "Kettle care")], archived: false }]);
  assert.equal(await panel.locator(".session-list").isVisible(), true);
  assert.equal(await panel.locator(".search-results").isVisible(), false);
  const row = panel.locator(".session-row").first();
  await row.hover();
  await row.locator("button.rename").click();
  const input = row.locator(".rename-input");
  assert.equal(await input.inputValue(), "Kettle care");
  await input.fill("Kettle descaling");
  await input.press("Enter");
  assert.deepEqual((await posted(page)).at(-1), { type: "rename", sessionId: sid, title: "Kettle descaling", relist: true });
  assert.equal(await row.locator(".rename-input").count(), 0);
  await row.locator("button.rename").click();
  await row.locator(".rename-input").press("Escape");
  assert.equal((await posted(page)).filter((m) => m.type === "rename").length, 1, "Escape keeps the title");

  // Archive, and the switch to the archived sessions (where the button unarchives).
  await row.hover();
  await row.locator("button.archive").click();
  assert.deepEqual((await posted(page)).at(-1), { type: "archive", sessionId: sid, archived: true, relist: true });
  await panel.locator(".toggle-archived").click();
  assert.deepEqual((await posted(page)).at(-1), { type: "listSessions", archived: true });
  await feed(page, [{ type: "sessions", sessions: [session(sid, "Kettle care")], archived: true }]);
  assert.equal(await panel.locator(".panel-heading").last().innerText(), "Archived sessions");
  assert.equal(await panel.locator(".toggle-archived").innerText(), "Show active");
  await panel.locator(".session-row").first().hover();
  assert.equal(await panel.locator("button.archive").innerText(), "Unarchive");
  await panel.locator("button.archive").click();
  assert.deepEqual((await posted(page)).at(-1), { type: "archive", sessionId: sid, archived: false, relist: true });
  await page.screenshot({ path: join(outDir, "chat-archived.png") });
  assert.deepEqual(errors, []);
  await page.close();
});

test("the agent's work: mode picker, plan checklist above the input, the last turn's files, rewind", async () => {
  const { page, errors } = await openPage({ withVsCodeApi: true });
  const modes = [
    { id: "ask", name: "Ask", description: "Read only" },
    { id: "plan", name: "Plan" },
    { id: "code", name: "Code" },
    { id: "auto", name: "Auto" },
  ];
  await feed(page, [
    { type: "session", sessionId: null, models: [{ id: "m", name: "Model" }], currentModel: "m" },
  ]);
  assert.equal(await page.locator("#mode").isHidden(), true, "no modes known: no mode picker");
  await feed(page, [
    { type: "session", sessionId: "s1", models: [{ id: "m", name: "Model" }], currentModel: "m", modes, currentMode: "code" },
  ]);
  assert.equal(await page.locator("#mode").isVisible(), true);
  assert.equal(await page.locator("#mode").inputValue(), "code");
  assert.deepEqual(await page.locator("#mode option").allInnerTexts(), ["Ask", "Plan", "Code", "Auto"]);
  await page.selectOption("#mode", "plan");
  assert.deepEqual((await posted(page)).at(-1), { type: "setMode", mode: "plan" });
  // The server's word wins (another client switched it).
  await feed(page, [
    { type: "update", notification: { sessionId: "s1", update: { sessionUpdate: "current_mode_update", currentModeId: "auto" } } },
  ]);
  assert.equal(await page.locator("#mode").inputValue(), "auto");
  // ACP's config_option_update (here or from another window) moves every picker: the
  // model, the mode and the built-in tools (shown once the session's are known).
  assert.equal(await page.locator("#builtin-tools").isHidden(), true, "built-in tools not known: no picker");
  const select = (id: string, currentValue: string, values: string[]) => ({
    id,
    name: id,
    type: "select",
    currentValue,
    options: values.map((value) => ({ value, name: value })),
  });
  await feed(page, [
    update("s1", {
      sessionUpdate: "config_option_update",
      configOptions: [
        select("model", "m2", ["m", "m2"]),
        select("mode", "plan", ["ask", "plan", "code", "auto"]),
        select("builtinTools", "off", ["on", "off"]),
      ],
    }),
  ]);
  assert.equal(await page.locator("#model").inputValue(), "m2");
  assert.equal(await page.locator("#mode").inputValue(), "plan");
  assert.equal(await page.locator("#builtin-tools").isVisible(), true);
  assert.equal(await page.locator("#builtin-tools").inputValue(), "off");
  await page.selectOption("#builtin-tools", "on");
  assert.deepEqual((await posted(page)).at(-1), { type: "setBuiltinTools", value: "on" });

  // A turn with a plan and edits.
  await feed(page, [
    { type: "turnStarted", text: "fix the tests" },
    {
      type: "update",
      notification: {
        sessionId: "s1",
        update: {
          sessionUpdate: "plan",
          entries: [
            { content: "Run the failing test", priority: "high", status: "completed" },
            { content: "Fix add()", priority: "medium", status: "in_progress" },
            { content: "Run the suite", priority: "low", status: "pending" },
          ],
        },
      },
    },
    { type: "turnEnded", stopReason: "end_turn", userMessageId: "msg_u1", messageId: "msg_a1" },
    {
      type: "turnDiff",
      files: [
        { path: "src/calc.py", status: "modified", additions: 1, deletions: 1, diff: "@@ -1 +1 @@\n-a\n+b\n" },
        { path: "notes.txt", status: "added", additions: 2, deletions: 0, diff: "@@ -0,0 +1,2 @@\n+x\n+y\n" },
      ],
    },
  ]);
  const plan = page.locator("#plan");
  assert.equal(await plan.isVisible(), true);
  assert.deepEqual(await plan.locator(".plan-text").allInnerTexts(), ["Run the failing test", "Fix add()", "Run the suite"]);
  assert.deepEqual(
    await plan.locator(".plan-entry").evaluateAll((items) => items.map((i) => (i as HTMLElement).dataset.status)),
    ["completed", "in_progress", "pending"],
  );
  assert.deepEqual(await plan.locator(".plan-mark").allInnerTexts(), ["☑", "◐", "☐"]);
  const above = await page.evaluate(() => {
    const p = document.querySelector("#plan")!.getBoundingClientRect();
    const input = document.querySelector("#input")!.getBoundingClientRect();
    return p.bottom <= input.top;
  });
  assert.ok(above, "the plan sits above the input");

  const files = page.locator("#turn-diff .diff-file");
  assert.deepEqual(await files.locator(".diff-path").allInnerTexts(), ["src/calc.py", "notes.txt"]);
  assert.deepEqual(await files.locator(".diff-counts").allInnerTexts(), ["modified +1 −1", "added +2 −0"]);
  await files.first().click();
  assert.deepEqual((await posted(page)).at(-1), { type: "openDiff", path: "src/calc.py" });

  // Rewind to here: on the prompt, once the server gave it an id.
  const user = page.locator(".entry.user").last();
  await user.hover();
  await user.locator("button.rewind").click();
  assert.deepEqual((await posted(page)).at(-1), { type: "rewind", messageId: "msg_u1" });
  await page.screenshot({ path: join(outDir, "work.png") });

  // A new turn clears the file list; a new session clears the plan too.
  await feed(page, [{ type: "turnStarted", text: "again" }]);
  assert.equal(await page.locator("#turn-diff").isHidden(), true);
  await feed(page, [{ type: "reset" }]);
  assert.equal(await plan.isHidden(), true);

  // The toolbar with both pickers in a narrow sidebar: no overflow.
  for (const width of [440, 260]) {
    await page.setViewportSize({ width, height: 700 });
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const overflows = await page.evaluate(() => {
      const bar = document.querySelector<HTMLElement>(".toolbar")!;
      return bar.scrollWidth > bar.clientWidth;
    });
    assert.equal(overflows, false, `at ${width}px the toolbar overflows`);
  }
  assert.deepEqual(errors, []);
  await page.close();
});

test("typing while the session works: Enter queues, Ctrl+Enter steers, the queue is edited and removed; another window's turn; a question form; an edit's diff", async () => {
  const { page, errors } = await openPage({ withVsCodeApi: true });
  const info = (threadline: Record<string, unknown>): HostMessage => ({
    type: "update",
    notification: { sessionId: "s1", update: { sessionUpdate: "session_info_update", _meta: { threadline } } },
  });
  await feed(page, [
    { type: "session", sessionId: "s1", models: [{ id: "m", name: "Model" }], currentModel: "m" },
    { type: "turnStarted", text: "first" },
    info({ state: "running", owner: { pid: 11, host: "vm", since: "2026-01-01T00:00:00Z", here: true } }),
  ]);
  const input = page.locator("#input");
  await input.fill("then this");
  await input.press("Enter");
  assert.deepEqual((await posted(page)).at(-1), { type: "prompt", text: "then this", whileRunning: "queue" });
  assert.equal(await input.inputValue(), "", "the box is emptied for the next prompt");
  await input.fill("look at b.py too");
  await input.press("Control+Enter");
  assert.deepEqual((await posted(page)).at(-1), { type: "prompt", text: "look at b.py too", whileRunning: "steer" });
  await input.fill("via the button");
  await page.locator("#steer").click();
  assert.deepEqual((await posted(page)).at(-1), { type: "prompt", text: "via the button", whileRunning: "steer" });

  // The server's queue, shown above the input; edit in place and remove.
  const queued = (id: string, text: string, state = "queued") => ({
    id,
    mode: "queue",
    state,
    prompt: [{ type: "text", text }],
    createdAt: "2026-01-01T00:00:00Z",
  });
  await feed(page, [info({ queue: [queued("q1", "then this"), queued("q2", "and that")] })]);
  const queue = page.locator("#queue");
  assert.equal(await queue.isVisible(), true);
  assert.deepEqual(await queue.locator(".queued-text").allInnerTexts(), ["then this", "and that"]);
  const above = await page.evaluate(
    () => document.querySelector("#queue")!.getBoundingClientRect().bottom <= document.querySelector("#input")!.getBoundingClientRect().top,
  );
  assert.ok(above, "the queue sits above the input");
  await queue.locator(".queued").first().locator(".queued-edit").click();
  await queue.locator(".rename-input").fill("then this, but shorter");
  await queue.locator(".rename-input").press("Enter");
  assert.deepEqual((await posted(page)).at(-1), { type: "queueEdit", id: "q1", text: "then this, but shorter" });
  await queue.locator(".queued").nth(1).locator(".queued-remove").click();
  assert.deepEqual((await posted(page)).at(-1), { type: "queueRemove", id: "q2" });
  await queue.locator(".queue-clear").click();
  assert.deepEqual((await posted(page)).at(-1), { type: "queueRemove" });
  await queue.locator(".queue-stop").click();
  assert.deepEqual((await posted(page)).at(-1), { type: "interrupt", clearQueue: true }, "Stop all: interrupt and clear the queue");
  await page.screenshot({ path: join(outDir, "chat-queue.png") });

  // Interrupted: the queue is held until resumed.
  await feed(page, [
    { type: "turnEnded", stopReason: "cancelled" },
    info({ state: "idle" }),
    info({ queue: [queued("q1", "then this, but shorter", "held")] }),
  ]);
  assert.equal(await page.locator("#send").innerText(), "Send");
  assert.match(await queue.innerText(), /Held/);
  await queue.locator(".queue-resume").click();
  assert.deepEqual((await posted(page)).at(-1), { type: "queueResume" });
  await feed(page, [info({ queue: [] })]);
  assert.equal(await queue.isHidden(), true);

  // A turn another window started: its prompt and answer stream in, the chat shows it
  // running there, and what is typed now is queued.
  await feed(page, [
    info({ state: "running", owner: { pid: 4242, host: "laptop", since: "2026-01-01T00:00:00Z", here: false } }),
    {
      type: "update",
      notification: { sessionId: "s1", update: { sessionUpdate: "user_message_chunk", messageId: "msg_u9", content: { type: "text", text: "from the other window" } } },
    },
    {
      type: "update",
      notification: { sessionId: "s1", update: { sessionUpdate: "agent_message_chunk", messageId: "msg_a9", content: { type: "text", text: "answering there" } } },
    },
  ]);
  assert.equal(await page.locator(".entry.user").last().locator(".body").innerText(), "from the other window");
  assert.equal(await page.locator(".entry.assistant").last().locator(".body").innerText(), "answering there");
  assert.match(await page.locator("#status").innerText(), /running in another window \(pid 4242 on laptop\)/);
  assert.equal(await page.locator("#interrupt").isEnabled(), true);
  await input.fill("after theirs");
  await input.press("Enter");
  assert.deepEqual((await posted(page)).at(-1), { type: "prompt", text: "after theirs", whileRunning: "queue" });
  await page.locator("#interrupt").click();
  assert.deepEqual((await posted(page)).at(-1), { type: "interrupt" });
  await feed(page, [info({ state: "idle" }), info({ model: "m2" })]);
  assert.equal(await page.locator("#send").innerText(), "Send");
  assert.equal(await page.locator("#model").inputValue(), "m2", "a model picked in the other window");

  // An edit's tool card: a coloured unified diff of its ACP diff content.
  await feed(page, [
    {
      type: "update",
      notification: {
        sessionId: "s1",
        update: {
          sessionUpdate: "tool_call",
          toolCallId: "call_e",
          title: "Edit calc.py",
          kind: "edit",
          status: "pending",
          content: [{ type: "diff", path: "calc.py", oldText: "def add(a, b):\n    return a - b\n", newText: "def add(a, b):\n    return a + b\n" }],
        },
      },
    },
  ]);
  const card = page.locator('.entry.tool[data-tool-call-id="call_e"]');
  assert.equal(await card.locator(".tool-diff-path").innerText(), "calc.py");
  assert.deepEqual(await card.locator(".diff-line.del").allInnerTexts(), ["-    return a - b"]);
  assert.deepEqual(await card.locator(".diff-line.add").allInnerTexts(), ["+    return a + b"]);
  assert.equal(await card.locator(".diff-line.hunk").innerText(), "@@ -1,2 +1,2 @@");
  const colours = await card.locator(".diff-line.add, .diff-line.del").evaluateAll((lines) => lines.map((l) => getComputedStyle(l).backgroundColor));
  assert.notEqual(colours[0], colours[1], "additions and deletions are coloured apart");
  assert.equal(await card.locator(".tool-output").isHidden(), true, "no raw text for the diff");

  // The turn's files unfold their diff in place; a rewind offers its undo.
  await feed(page, [
    { type: "turnDiff", files: [{ path: "calc.py", status: "modified", additions: 1, deletions: 1, diff: "diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n" }] },
    { type: "rewound", rewindId: "sess_rw" },
  ]);
  await page.locator("#turn-diff details.diff-inline summary").click();
  assert.deepEqual(await page.locator("#turn-diff .diff-line.add").allInnerTexts(), ["+    return a + b"]);
  await page.locator("#turn-diff .undo-rewind").click();
  assert.deepEqual((await posted(page)).at(-1), { type: "unrewind", rewindId: "sess_rw" });

  // The agent asks: a form above the input; a required field is asked again.
  await feed(page, [
    {
      type: "elicitation",
      request: {
        id: 7,
        params: {
          sessionId: "s1",
          mode: "form",
          message: "Which database should I use?",
          requestedSchema: {
            type: "object",
            properties: {
              engine: { type: "string", title: "engine", enum: ["sqlite", "postgres"] },
              replicas: { type: "integer", title: "replicas" },
              tls: { type: "boolean", title: "tls" },
            },
            required: ["engine", "replicas"],
          },
        },
      },
    },
  ]);
  const form = page.locator("#elicitation");
  assert.equal(await form.isVisible(), true);
  assert.equal(await form.locator(".elicitation-question").innerText(), "Which database should I use?");
  await form.locator('select[name="engine"]').selectOption("postgres");
  await form.locator("button.primary").click();
  assert.match(await form.locator(".elicitation-problem").innerText(), /replicas/);
  await form.locator('input[name="replicas"]').fill("2");
  await form.locator('input[name="tls"]').check();
  await page.screenshot({ path: join(outDir, "chat-question.png") });
  await form.locator("button.primary").click();
  assert.deepEqual((await posted(page)).at(-1), {
    type: "elicitationAnswer",
    id: 7,
    result: { action: "accept", content: { engine: "postgres", replicas: 2, tls: true } },
  });
  await feed(page, [{ type: "elicitation", request: null }]);
  assert.equal(await form.isHidden(), true);
  assert.deepEqual(errors, []);
  await page.close();
});

/** Paste (or drop) files into the page's composer as a user's clipboard would. */
async function pasteFiles(page: Page, files: { name: string; type: string; base64: string }[], how: "paste" | "drop" = "paste") {
  await page.evaluate(
    ({ files, how }) => {
      const data = new DataTransfer();
      for (const f of files) {
        const bytes = Uint8Array.from(atob(f.base64), (c) => c.charCodeAt(0));
        data.items.add(new File([bytes], f.name, { type: f.type }));
      }
      const input = document.querySelector("#input")!;
      if (how === "paste") input.dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
      else input.dispatchEvent(new DragEvent("drop", { dataTransfer: data, bubbles: true, cancelable: true }));
    },
    { files, how },
  );
}

test("images: pasted and dropped as thumbnails, sent as the prompt's images, shown in prompts and tool results; a delegate card opens its child", async () => {
  const { page, errors } = await openPage({ withVsCodeApi: true });
  const sid = "sess_img";
  const shot = png(48, 24).toString("base64");
  await feed(page, [{ type: "session", sessionId: sid, models: [{ id: "m", name: "M" }], currentModel: "m" }]);

  // Pasted: a thumbnail over the input; a file that is no image is refused with a word why.
  await pasteFiles(page, [{ name: "shot.png", type: "image/png", base64: shot }]);
  await page.locator("#attachments .attachment img").waitFor();
  assert.equal(await page.locator("#attachments .attachment").count(), 1);
  await pasteFiles(page, [{ name: "notes.pdf", type: "application/pdf", base64: "JVBERi0=" }], "drop");
  await page.locator(".entry.notice.error").waitFor();
  assert.match(await page.locator(".entry.notice.error").innerText(), /notes\.pdf .* is not a PNG, JPEG, GIF or WebP image/);
  // Dropped: a second one; then removed again.
  await pasteFiles(page, [{ name: "two.png", type: "image/png", base64: shot }], "drop");
  await page.locator("#attachments .attachment:nth-child(2)").waitFor();
  await page.locator("#attachments .attachment").nth(1).locator(".remove-attachment").click();
  assert.equal(await page.locator("#attachments .attachment").count(), 1);
  await page.screenshot({ path: join(outDir, "chat-attachment.png") });

  // Sent with the prompt (an image alone could be sent too); the strip empties.
  await page.locator("#input").fill("what is this?");
  await page.locator("#input").press("Enter");
  assert.deepEqual((await posted(page)).at(-1), {
    type: "prompt",
    text: "what is this?",
    images: [{ mimeType: "image/png", data: shot, name: "shot.png" }],
  });
  assert.equal(await page.locator("#attachments").isHidden(), true);

  // The turn as the host shows it: the prompt with its image, the model's warning, a tool's image.
  const warning = "This model cannot see images: it reads a short description of each instead.";
  await feed(page, [
    { type: "turnStarted", text: "what is this?", images: [{ mimeType: "image/png", data: shot, name: "shot.png" }] },
    update(sid, { sessionUpdate: "session_info_update", _meta: { threadline: { warning } } }),
    update(sid, { sessionUpdate: "tool_call", toolCallId: "call_1", title: "screenshot", kind: "other", status: "in_progress" }),
    update(sid, {
      sessionUpdate: "tool_call_update",
      toolCallId: "call_1",
      status: "completed",
      content: [
        { type: "content", content: { type: "text", text: "the screen:" } },
        { type: "content", content: { type: "image", mimeType: "image/png", data: shot, _meta: { threadline: { image: { width: 48, height: 24, size: 90 } } } } },
      ],
    }),
  ]);
  const userImage = page.locator(".entry.user .images img.thumb");
  assert.equal(await userImage.count(), 1);
  assert.equal(await userImage.getAttribute("src"), `data:image/png;base64,${shot}`);
  assert.equal(await userImage.evaluate((img) => (img as HTMLImageElement).naturalWidth), 48, "the image decodes (CSP allows it)");
  assert.equal(await page.locator(".entry.notice.info", { hasText: "cannot see images" }).count(), 1);
  const toolImage = page.locator(".entry.tool .tool-images img.thumb");
  assert.equal(await toolImage.getAttribute("alt"), "Image: 48×24 PNG, 90 B");
  await toolImage.click();
  assert.match((await toolImage.getAttribute("class")) ?? "", /enlarged/);

  // Replayed prompts: the image chunk joins its message's text.
  await feed(page, [
    update(sid, { sessionUpdate: "user_message_chunk", messageId: "msg_u2", content: { type: "text", text: "and this one?" } }),
    update(sid, { sessionUpdate: "user_message_chunk", messageId: "msg_u2", content: { type: "image", mimeType: "image/png", data: shot } }),
  ]);
  const replayed = page.locator('.entry.user[data-message-id="msg_u2"]');
  assert.equal(await replayed.locator(".body").innerText(), "and this one?");
  assert.equal(await replayed.locator("img.thumb").count(), 1);

  // A delegate call: the child's progress in a fold, and a button that opens the child.
  const child = "sess_child1";
  const progress = (text: string, status: string) =>
    update(sid, {
      sessionUpdate: "tool_call_update",
      toolCallId: "call_d",
      status,
      content: [{ type: "content", content: { type: "text", text } }],
      _meta: { threadline: { childSessionId: child } },
    });
  await feed(page, [
    update(sid, { sessionUpdate: "tool_call", toolCallId: "call_d", title: "Delegate: count the files", kind: "other", status: "pending" }),
    progress(`Child session ${child}: ↳ count the files\n→ list_files`, "in_progress"),
  ]);
  const card = page.locator(".entry.tool.delegate");
  assert.equal(await card.getAttribute("data-child-session-id"), child);
  const fold = card.locator("details.child-progress");
  assert.equal(await fold.getAttribute("open"), "");
  assert.match(await fold.locator(".tool-output").innerText(), /→ list_files/);
  await feed(page, [progress("three files\n(child session sess_child1)", "completed")]);
  assert.match(await fold.locator(".tool-output").innerText(), /three files/);
  assert.equal(await card.locator(".badge").innerText(), "done");
  await page.screenshot({ path: join(outDir, "chat-images-delegate.png") });
  await fold.locator("summary").click({ position: { x: 5, y: 5 } });
  assert.equal(await fold.getAttribute("open"), null, "the fold closes");
  await card.locator("button.open-child").click();
  assert.deepEqual((await posted(page)).at(-1), { type: "openChild", sessionId: child });

  // No way back from a session without a parent.
  assert.equal(await page.locator("#open-parent").isHidden(), true);
  // The child on screen: named as its parent's sub-agent, with the way back to it.
  await feed(page, [{ type: "reset" }, { type: "session", sessionId: child, parentSessionId: sid, parentTitle: "what is this?", kind: "child", models: [], currentModel: null }]);
  assert.match(await page.locator("#status").innerText(), /sub-agent of “what is this\?”/);
  await page.locator("#open-parent").click();
  assert.deepEqual((await posted(page)).at(-1), { type: "openParent", sessionId: sid });
  assert.deepEqual(errors, []);
  await page.close();
});
