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
  assert.equal(await page.locator("#send").isEnabled(), false);
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
