// A new user's steps through the Threadline extension inside real VS Code
// (code-server), driven by playwright-core over Debian's chromium. Each step takes a
// screenshot into THREADLINE_E2E_SHOTS and asserts what a person would check by eye.
// Started by e2e/run.sh, which sets up code-server and the environment.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const URL_ = must("THREADLINE_E2E_URL");
const SHOTS = must("THREADLINE_E2E_SHOTS");
const WORK = must("THREADLINE_E2E_WORK");
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

function must(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (run e2e/run.sh)`);
  return v;
}

mkdirSync(SHOTS, { recursive: true });
const profile = mkdtempSync(join(tmpdir(), "threadline-e2e-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
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
  viewport: { width: 1280, height: 860 },
  timeout: 60_000,
});
context.setDefaultTimeout(30_000);
const page = context.pages()[0] ?? (await context.newPage());
const pageErrors = [];
page.on("pageerror", (err) => pageErrors.push(err.message));

let shot = 0;
const results = [];
async function snap(name) {
  shot += 1;
  const file = join(SHOTS, `${String(shot).padStart(2, "0")}-${name}.png`);
  await page.screenshot({ path: file });
  return file;
}

/** Run one named step: screenshot afterwards (also on failure), record the outcome. */
async function step(name, body) {
  const started = Date.now();
  try {
    await body();
    const file = await snap(name);
    results.push({ name, ok: true, ms: Date.now() - started, file });
    console.log(`ok   ${name} (${Date.now() - started} ms)`);
  } catch (err) {
    const file = await snap(`${name}-FAILED`).catch(() => "");
    results.push({ name, ok: false, ms: Date.now() - started, file, error: String(err?.stack ?? err) });
    console.log(`FAIL ${name}: ${err?.message ?? err}`);
    throw err;
  }
}

// -- VS Code helpers ----------------------------------------------------------------

/** The chat view's page: VS Code nests a webview's document in two iframes. */
function chat() {
  return page.frameLocator("iframe.webview.ready").frameLocator("iframe#active-frame");
}

async function runCommand(title) {
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget .quick-input-box input");
  await input.waitFor({ state: "visible" });
  await input.fill(`>${title}`);
  const row = page.locator(".quick-input-widget .monaco-list-row", { hasText: title }).first();
  await row.waitFor({ state: "visible" });
  await input.press("Enter");
}

async function quickPickRows() {
  const rows = page.locator(".quick-input-widget .monaco-list-row");
  await rows.first().waitFor({ state: "visible" });
  return rows;
}

function toasts() {
  return page.locator(".notifications-toasts .notification-toast");
}

async function dismissToasts() {
  for (const close of await page.locator(".notifications-toasts .codicon-notifications-clear").all()) {
    await close.click().catch(() => undefined);
  }
}

// -- chat helpers -------------------------------------------------------------------

async function chatText(selector) {
  return (await chat().locator(selector).allInnerTexts()).join("\n");
}

async function statusText() {
  return chat().locator("#status").innerText();
}

/**
 * The chat pages on screen (the view's, and a child session's tab beside the editor),
 * each as the frame of its document with the session's title: once a tab is open,
 * `chat()` is ambiguous.
 */
async function chatPages() {
  const pages = [];
  for (const frame of page.frames()) {
    const title = await frame
      .locator("#title")
      .innerText({ timeout: 500 })
      .catch(() => null);
    if (title !== null) pages.push({ frame, title });
  }
  return pages;
}

/** Wait for a condition on the chat page, polling; fails with `what`. */
async function until(what, predicate, ms = 30_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await predicate()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await page.waitForTimeout(100);
  }
}

async function send(text) {
  const input = chat().locator("#input");
  await input.click();
  await input.fill(text);
  await input.press("Enter");
  await until("the turn to start", async () => (await statusText()).includes("Generating"));
}

/**
 * A new session whose turns follow `script`. The sessions' model is
 * `scripted:<WORK>/script.json`, read once per sidecar: the script, and a restart,
 * make the next turns do what it says (these are the last steps).
 */
async function newSessionWith(script) {
  writeFileSync(join(WORK, "script.json"), JSON.stringify(script));
  await dismissToasts();
  await runCommand("Threadline: Restart the Sidecar");
  await page.waitForTimeout(1500);
  await titleAction("New Session").click();
  await until("an empty chat", async () => (await chat().locator(".entry").count()) === 0);
}

async function waitIdle(ms = 60_000) {
  await until("the turn to end", async () => !(await statusText()).includes("Generating"), ms);
}

/** Wait until the answer of the running turn has streamed `words` words at least. */
async function waitStreaming(words = 3) {
  await until("the answer to stream", async () => {
    const last = chat().locator(".entry.assistant").last();
    if ((await chat().locator(".entry.assistant").count()) === 0) return false;
    const text = await last.locator(".body").innerText();
    return text.includes("Primary") && text.trim().split(/\s+/).length >= words;
  });
}

async function assistantCount() {
  return chat().locator(".entry.assistant").count();
}

/** Every badge shows its whole word (nothing clipped by a wrapping title). */
async function assertBadgesWhole() {
  const clipped = await chat()
    .locator(".tool .badge")
    .evaluateAll((els) => els.filter((e) => e.scrollWidth > e.clientWidth + 1).map((e) => e.textContent));
  assert.deepEqual(clipped, [], "tool badges clipped");
}

async function assertNoRawIds() {
  const shown = await chatText(".notice, #status, #title");
  assert.ok(!/sess_[0-9a-z]/i.test(shown), `raw session ids on screen: ${shown}`);
}

/** A button in the view's title bar (VS Code keeps a hidden copy for the pane header). */
function titleAction(label) {
  return page.locator(`.part.sidebar .action-label[aria-label^="${label}"]`).filter({ visible: true });
}

async function interruptButtonShown() {
  return (await titleAction("Interrupt the Running Turn").count()) > 0;
}

/** Change a string setting as a user does: in the Settings editor. */
async function setSetting(id, value) {
  await runCommand("Preferences: Open User Settings");
  const search = page.locator(".settings-editor .suggest-input-container .view-lines, .settings-editor .settings-header textarea, .settings-editor .settings-header input").first();
  await search.waitFor({ state: "visible" });
  await page.keyboard.type(id);
  const input = page.locator(`.settings-editor input[aria-label="${id}"]`).first();
  await input.waitFor({ state: "visible" });
  await input.fill(value);
  await input.press("Tab");
  await until(`${id} saved`, async () => readFileSync(join(WORK, "user", "User", "settings.json"), "utf8").includes(JSON.stringify(value)), 10_000);
  await page.keyboard.press("Control+W").catch(() => undefined);
  await runCommand("View: Close All Editors");
}

// -- the steps ----------------------------------------------------------------------

const liveToolTitles = [];
let firstTitle = "";

try {
  await step("open-vscode", async () => {
    await page.goto(URL_);
    await page.locator(".monaco-workbench").waitFor({ state: "visible", timeout: 90_000 });
    await page.locator(".part.activitybar").waitFor({ state: "visible" });
  });

  await step("open-threadline-view", async () => {
    await page.locator('.activitybar [aria-label^="Threadline"]').first().click();
    await chat().locator("#input").waitFor({ state: "visible", timeout: 60_000 });
    // The picker is filled once the sidecar answered `initialize`.
    await until("the model picker to fill", async () => (await chat().locator("#model option").count()) > 0, 60_000);
    const box = await chat().locator("#model").boundingBox();
    assert.ok(box && box.width >= 90, `model picker squeezed to ${box?.width}px`);
    assert.equal(await interruptButtonShown(), false, "the Interrupt title button shows while idle");
  });

  await step("select-text-in-editor", async () => {
    await page.keyboard.press("F1");
    const input = page.locator(".quick-input-widget .quick-input-box input");
    await input.fill("greet.py");
    await page.locator(".quick-input-widget .monaco-list-row", { hasText: "greet.py" }).first().waitFor();
    await input.press("Enter");
    const editor = page.locator(".editor-instance .monaco-editor").first();
    await editor.waitFor({ state: "visible" });
    await editor.locator(".view-lines").click();
    await page.keyboard.press("Control+A");
  });

  await step("new-session", async () => {
    await titleAction("New Session").click();
    await until("an empty chat", async () => (await chat().locator(".entry").count()) === 0);
    assert.equal(await chat().locator("#title").innerText(), "New session");
  });

  await step("prompt-streams-answer", async () => {
    await send("Name the primary colours.");
    // Typing goes on during a turn: Send queues, Steer joins the turn.
    assert.equal(await chat().locator("#send").innerText(), "Queue", "Send is not Queue during a turn");
    assert.equal(await chat().locator("#steer").isVisible(), true, "no Steer during a turn");
    await until("the red Interrupt button while running", interruptButtonShown, 10_000);
    await waitStreaming(2);
    const early = await chat().locator(".entry.assistant").last().innerText();
    await waitIdle();
    const done = await chat().locator(".entry.assistant").last().innerText();
    assert.ok(done.length > early.length, "the answer grew while streaming");
    assert.match(done, /secondary colours orange, green and purple/);
    await until("the Interrupt title button to go after the turn", async () => !(await interruptButtonShown()), 5_000);
  });

  await step("editor-selection-tool-and-engine-note", async () => {
    // The repeated call is answered by the engine itself, and shown so (as on resume).
    const tools = chat().locator(".entry.tool");
    assert.equal(await tools.count(), 2);
    assert.match(await tools.nth(1).locator(".tool-output").innerText(), /already called/i);
    const output = await tools.first().locator(".tool-output").innerText();
    assert.match(output, /def greet/, "the selection reached the model");
    for (const t of await chat().locator(".tool .tool-title").allInnerTexts()) liveToolTitles.push(t);
    await assertBadgesWhole();
    // The engine's nudge (when the server shows it) is a note to the model, never
    // something the user said, and offers no Fork.
    const note = chat().locator(".entry.note");
    for (const text of await note.allInnerTexts()) assert.match(text, /already called editor_get_selection/);
    assert.equal(await note.locator(".fork").count(), 0, "the note offers Fork");
    assert.equal(await chat().locator(".entry.user").count(), 1, "the nudge shows as the user's message");
    // The message just typed can be forked from at once.
    assert.equal(await chat().locator(".entry.user .fork").count(), 1, "no Fork on the typed message");
    firstTitle = await chat().locator("#title").innerText();
    assert.match(firstTitle, /primary colours/i);
  });

  await step("interrupt-with-chat-button", async () => {
    const before = await chat().locator(".notice", { hasText: "Interrupted." }).count();
    await send("And the secondary ones?");
    await waitStreaming(2);
    await chat().locator("#interrupt").click();
    await waitIdle(15_000);
    assert.equal(await chat().locator(".notice", { hasText: "Interrupted." }).count(), before + 1);
  });

  await step("interrupt-with-title-button", async () => {
    await send("Why these three?");
    await waitStreaming(2);
    await titleAction("Interrupt the Running Turn").click();
    await waitIdle(15_000);
    assert.equal(await chat().locator(".notice", { hasText: "Interrupted." }).count(), 2);
  });

  await step("interrupt-with-keybinding", async () => {
    await send("Tell me about mixing paint.");
    await waitStreaming(2);
    await page.keyboard.press("Control+Alt+Backspace");
    await waitIdle(15_000);
    assert.equal(await chat().locator(".notice", { hasText: "Interrupted." }).count(), 3);
  });

  let contextBefore = "";
  await step("compact-with-button", async () => {
    contextBefore = await statusText();
    assert.match(contextBefore, /context [\d,]+/);
    await chat().locator("#compact").click();
    await until("compacting to show", async () => (await statusText()).includes("Compacting"), 10_000);
    assert.equal(await chat().locator("#send").innerText(), "Queue", "a prompt typed while compacting is not queued");
    await snap("compacting");
    await until("the compaction to end", async () => !(await statusText()).includes("Compacting"), 30_000);
    const notice = await chat().locator(".notice").last().innerText();
    assert.match(notice, /^Compacted: \d+ older messages? summarised/);
    assert.equal(await chat().locator(".entry.summary").count(), 1);
    const after = await statusText();
    assert.notEqual(after.match(/context [\d,]+/)?.[0], contextBefore.match(/context [\d,]+/)?.[0], "context figure not updated");
  });

  await step("compact-again-from-palette-changes-nothing", async () => {
    const notices = await chat().locator(".notice").count();
    await runCommand("Threadline: Compact the Session");
    const box = page.locator(".quick-input-widget .quick-input-box input");
    await box.waitFor({ state: "visible" });
    await page.waitForTimeout(300);
    await box.press("Enter");
    await until("the compaction's answer", async () => (await chat().locator(".notice").count()) > notices);
    const notice = await chat().locator(".notice").last().innerText();
    assert.match(notice, /^Nothing to compact/, `a compaction that changed nothing said: ${notice}`);
  });

  await step("fork-from-typed-message", async () => {
    const user = chat().locator(".entry.user").first();
    await user.hover();
    await user.locator(".fork").click();
    await until("the fork's notice", async () => (await chatText(".notice")).includes("Forked from"));
    assert.match(await chatText(".notice"), /Forked from “.*primary colours/i);
    assert.match(await statusText(), /fork of “/);
    await assertNoRawIds();
    assert.equal(await chat().locator(".entry.user").count(), 1);
  });

  await step("fork-from-palette", async () => {
    await runCommand("Threadline: Fork the Session");
    await until("the second fork's notice", async () => (await chat().locator(".notice", { hasText: "Forked from" }).count()) === 1 && (await statusText()).includes("fork of"));
    await assertNoRawIds();
  });

  await step("sessions-panel", async () => {
    await chat().locator("#sessions").click();
    const rows = chat().locator(".sessions-panel .session");
    await until("three sessions", async () => (await rows.count()) === 3);
    const labels = await chat().locator(".sessions-panel .session-title").allInnerTexts();
    assert.equal(labels.filter((l) => l.startsWith("↳")).length, 2, `forks not marked: ${labels}`);
    const details = await chat().locator(".sessions-panel .session-meta").allInnerTexts();
    assert.equal(details.filter((d) => d.includes("fork of “")).length, 2);
  });

  await step("resume-compacted-session", async () => {
    const original = chat().locator(".sessions-panel .session", { hasNot: chat().locator("text=↳") });
    await original.first().click();
    await until("the replay", async () => (await chat().locator(".entry.user").count()) >= 4);
    await page.waitForTimeout(300);
    // Summary as a summary, placed where the compaction happened, not as an answer.
    assert.equal(await chat().locator(".entry.summary").count(), 1);
    assert.equal(await chat().locator(".entry.assistant", { hasText: "The user asked about colours" }).count(), 0);
    assert.ok((await chat().locator(".entry.compacted").count()) > 0, "compacted messages not marked");
    // What the live chat showed survives the resume.
    assert.equal(await chat().locator(".notice", { hasText: "Interrupted." }).count(), 3, "Interrupted. notices lost");
    assert.match(await statusText(), /context [\d,]+/, "context figure lost");
    const titles = await chat().locator(".tool .tool-title").allInnerTexts();
    assert.deepEqual(titles.slice(0, liveToolTitles.length), liveToolTitles, "tool titles differ live and resumed");
    assert.equal(await chat().locator(".entry.note").count(), 0);
    await assertBadgesWhole();
  });

  await step("resume-quick-pick", async () => {
    await titleAction("Resume a Session").click();
    const rows = await quickPickRows();
    await until("three rows", async () => (await rows.count()) === 3);
    const labels = (await rows.allInnerTexts()).map((t) => t.split("\n")[0].trim());
    assert.equal(new Set(labels).size, 3, `look-alike rows: ${labels}`);
    assert.equal(labels.filter((l) => l.startsWith("↳")).length, 2, `forks not marked: ${labels}`);
    await snap("resume-quick-pick-open");
    await page.keyboard.press("Escape");
  });

  await step("search-in-sessions-panel", async () => {
    await chat().locator("#sessions").click();
    const box = chat().locator(".sessions-panel .session-search");
    await box.waitFor({ state: "visible" });
    await box.fill("secondary colours");
    const hits = chat().locator(".sessions-panel .hit[data-message-id]");
    await until("hits with snippets", async () => (await hits.count()) > 0);
    const marked = (await hits.first().locator("mark").allInnerTexts()).map((t) => t.toLowerCase());
    assert.ok(marked.some((w) => w.startsWith("secondary")), `marked: ${marked}`);
    const messageId = await hits.first().getAttribute("data-message-id");
    await snap("search-hits");
    await hits.first().click();
    await until("the hit in view", async () =>
      (await chat().locator(`.search-target[data-message-id="${messageId}"]`).count()) === 1,
    );
    // The panel closed on the click; reopened, it still holds the search until cleared.
    assert.equal(await chat().locator(".sessions-panel").isVisible(), false);
    await chat().locator("#sessions").click();
    await box.fill("");
    await until("the list instead of hits", async () => chat().locator(".sessions-panel .session-list").isVisible());
    await chat().locator("#sessions").click();
  });

  await step("search-from-palette", async () => {
    await runCommand("Threadline: Search Sessions");
    const input = page.locator(".quick-input-widget .quick-input-box input");
    await input.waitFor({ state: "visible" });
    await input.fill("primary colours");
    await input.press("Enter");
    const rows = await quickPickRows();
    await until("hit rows", async () => (await page.locator(".quick-input-widget .quick-input-title").innerText()).includes("for “primary colours”"));
    assert.ok((await rows.count()) > 0);
    assert.match(await rows.first().innerText(), /«/);
    await snap("search-quick-pick");
    // Title hits (no message to outline) may rank first: pick a message's hit.
    await rows.filter({ hasText: /in an answer|in your message/ }).first().click();
    await until("a hit outlined", async () => (await chat().locator(".search-target").count()) === 1);
  });

  await step("rename-session", async () => {
    await runCommand("Threadline: Rename the Session");
    const input = page.locator(".quick-input-widget .quick-input-box input");
    await input.waitFor({ state: "visible" });
    assert.notEqual(await input.inputValue(), "", "the current title is filled in");
    await input.fill("Colour chat");
    await input.press("Enter");
    await until("the new title", async () => (await chat().locator("#title").innerText()) === "Colour chat");
  });

  await step("archive-and-unarchive", async () => {
    await runCommand("Threadline: Archive the Session");
    await dismissToasts();
    const rows = chat().locator(".sessions-panel .session");
    if (!(await chat().locator(".sessions-panel").isVisible())) await chat().locator("#sessions").click();
    await chat().locator(".sessions-panel .toggle-archived").click();
    await until("the archived list", async () =>
      (await rows.count()) === 1 && (await chat().locator(".sessions-panel .toggle-archived").innerText()) === "Show active",
    );
    assert.equal(await rows.first().locator(".session-title").innerText(), "Colour chat");
    await snap("archived-list");
    await chat().locator(".sessions-panel .session-row").first().hover();
    await chat().locator(".sessions-panel .session-row .archive").first().click();
    await until("no archived sessions", async () => (await chatText(".sessions-panel .panel-heading")).includes("No archived sessions"));
    await chat().locator(".sessions-panel .toggle-archived").click();
    await until("all three back", async () => (await rows.count()) === 3);
    await chat().locator("#sessions").click();
  });

  await step("model-picker", async () => {
    await runCommand("Threadline: Pick Model");
    const rows = await quickPickRows();
    await page.waitForTimeout(300);
    const texts = await rows.allInnerTexts();
    assert.ok(texts.length >= 2, `models: ${texts}`);
    assert.ok(texts.some((t) => t.includes("current")), `no current model in ${texts}`);
    await snap("model-picker-open");
    await page.keyboard.press("Escape");
    const box = await chat().locator("#model").boundingBox();
    assert.ok(box && box.width >= 90);
  });

  await step("show-log", async () => {
    await runCommand("Threadline: Show Log");
    await until("the log", async () => (await page.locator(".part.panel").innerText()).includes("serving"), 15_000);
  });

  await step("restart-sidecar-reloads-chat", async () => {
    const before = await chat().locator(".entry.user").count();
    const title = await chat().locator("#title").innerText();
    await runCommand("Threadline: Restart the Sidecar");
    await page.waitForTimeout(1500);
    await until("the reloaded transcript", async () => (await chat().locator(".entry.user").count()) === before, 30_000);
    assert.equal(await chat().locator("#title").innerText(), title);
  });

  await step("missing-sidecar", async () => {
    await dismissToasts();
    await setSetting("threadline.server.command", "/nonexistent/threadline");
    await runCommand("Threadline: Restart the Sidecar");
    await until("the banner", async () => chat().locator("#sidecar-banner").isVisible(), 30_000);
    await page.waitForTimeout(1500);
    assert.equal(await toasts().count(), 1, "one failure, one toast");
    assert.match(await chat().locator("#sidecar-banner").innerText(), /not running.*nonexistent/s);
    assert.equal(await chat().locator("#send").isDisabled(), true);
  });

  await step("restart-from-banner", async () => {
    await setSetting("threadline.server.command", must("THREADLINE_E2E_SIDECAR"));
    await dismissToasts();
    await chat().locator("#restart-sidecar").click();
    await until("the banner to go", async () => !(await chat().locator("#sidecar-banner").isVisible()), 30_000);
    await until("the transcript", async () => (await chat().locator(".entry.user").count()) >= 4, 30_000);
  });

  // Typed while a turn runs: Enter queues; the queue shows above the input and runs next.
  await step("queue-while-running", async () => {
    const users = () => chat().locator(".entry.user .body").allInnerTexts();
    await send("Tell me about blue.");
    await waitStreaming(2);
    const input = chat().locator("#input");
    await input.fill("And about red?");
    await input.press("Enter");
    const queued = chat().locator("#queue .queued-text");
    await until("the queued prompt above the input", async () => (await queued.allInnerTexts()).includes("And about red?"), 10_000);
    await snap("queued-while-running");
    await until("the queued prompt to run", async () => (await users()).at(-1) === "And about red?", 30_000);
    await until("the queue to empty", async () => !(await chat().locator("#queue").isVisible()), 10_000);
    await waitIdle();
    const texts = await users();
    assert.deepEqual(texts.slice(-2), ["Tell me about blue.", "And about red?"]);
    assert.match(await chat().locator(".entry.assistant").last().innerText(), /secondary colours orange, green and purple/);
  });

  // Another window: a second sidecar on the same data runs a turn on the session on
  // screen; the chat shows its prompt, its answer and that it runs elsewhere, live.
  await step("second-sidecar-turn-shown-live", async () => {
    const { ThreadlineClient } = await import("@threadline/client");
    const other = ThreadlineClient.spawn({
      command: must("THREADLINE_E2E_SIDECAR"),
      args: ["serve"],
      env: { THREADLINE_HOME: join(WORK, "home") },
    });
    try {
      await other.initialize();
      const title = await chat().locator("#title").innerText();
      const { sessions } = await other.list({});
      const session = sessions.find((s) => s.title === title);
      assert.ok(session, `no session titled ${title} in ${sessions.map((s) => s.title)}`);
      const answers = await assistantCount();
      const turn = other.prompt(session.sessionId, "Asked from a second sidecar.");
      await until("the other sidecar's prompt in the chat", async () =>
        (await chat().locator(".entry.user .body").allInnerTexts()).includes("Asked from a second sidecar."),
      );
      await until("running in another window", async () => /in another window/.test(await statusText()), 10_000);
      await until("the Interrupt title button for a turn elsewhere", interruptButtonShown, 10_000);
      await snap("turn-in-another-sidecar");
      const result = await turn;
      assert.equal(result.stopReason, "end_turn");
      await until("its answer streamed here", async () => (await assistantCount()) > answers, 30_000);
      await until("idle here again", async () => !/in another window/.test(await statusText()), 10_000);
      assert.match(await chat().locator(".entry.assistant").last().innerText(), /secondary colours orange, green and purple/);
      await until("the Interrupt title button to go", async () => !(await interruptButtonShown()), 10_000);
    } finally {
      await other.stop(5000);
    }
  });

  // The agent's work: a plan, an edit proposed in a diff editor, a command in a VS Code
  // terminal, the turn's changed file opening a diff editor, the mode picker.
  await step("work-plan-edit-diff-terminal-mode", async () => {
    const script = {
      rounds: [
        [{ tool_call: { name: "update_plan", arguments: { entries: [
          { content: "Make greet shout", status: "in_progress" },
          { content: "Check it runs", status: "pending" },
        ] } } }],
        [{ tool_call: { name: "edit_file", arguments: { path: "src/greet.py", edits: [{ oldText: "Hello, {name}!", newText: "HELLO, {name}!" }] } } }],
        [{ tool_call: { name: "run_command", arguments: { command: "echo ran-in-a-vscode-terminal" } } }],
        [{ text: "Done: greet shouts now." }],
      ],
    };
    await newSessionWith(script);
    const input = chat().locator("#input");
    await input.click();
    await input.fill("Make greet shout.");
    await input.press("Enter");

    // The edit: a diff editor with the change, behind the permission dialog.
    const dialog = page.locator(".monaco-dialog-box");
    await dialog.waitFor({ state: "visible", timeout: 30_000 });
    assert.match(await dialog.innerText(), /edit_file|greet/i);
    await page.locator(".monaco-diff-editor").first().waitFor({ state: "visible", timeout: 10_000 });
    const tabs = await page.locator(".tabs-container .tab").allInnerTexts();
    assert.ok(tabs.some((t) => t.includes("greet.py")), `diff tab: ${tabs}`);
    await until("the proposed text in the diff editor", async () => (await page.locator(".monaco-diff-editor").first().innerText()).includes("HELLO"), 10_000);
    await snap("edit-diff-editor-and-dialog");
    await dialog.locator("a.monaco-button", { hasText: "Allow once" }).click();
    await until("the diff editor to close", async () => (await page.locator(".monaco-diff-editor").count()) === 0, 10_000);

    // The command: asked, then run in a VS Code terminal.
    await dialog.waitFor({ state: "visible", timeout: 30_000 });
    await dialog.locator("a.monaco-button", { hasText: "Allow once" }).click();
    await until("the answer", async () => (await chat().locator(".entry.assistant").last().innerText()).includes("greet shouts"), 30_000);
    // The command's terminal: shown in the panel (its name in the terminal's title or tabs).
    await page.locator(".part.panel .xterm").first().waitFor({ state: "visible", timeout: 10_000 });
    await snap("command-in-vscode-terminal");
    assert.match(await chatText(".entry.tool"), /Threadline terminal/);
    assert.match(readFileSync(join(WORK, "project", "src", "greet.py"), "utf8"), /HELLO, \{name\}!/);

    // The plan above the input, the changed file below the transcript.
    assert.deepEqual(await chat().locator("#plan .plan-text").allInnerTexts(), ["Make greet shout", "Check it runs"]);
    const file = chat().locator("#turn-diff .diff-file", { hasText: "src/greet.py" });
    await file.waitFor({ state: "visible", timeout: 10_000 });
    await file.click();
    await page.locator(".monaco-diff-editor").first().waitFor({ state: "visible", timeout: 10_000 });
    await until("the old text beside the new in the diff editor", async () => {
      // Monaco renders spaces as no-break spaces.
      const text = (await page.locator(".monaco-diff-editor").first().innerText()).replace(/\u00a0/g, " ");
      return text.includes("Hello, {name}!") && text.includes("HELLO, {name}!");
    }, 10_000);
    await snap("last-turn-diff-editor");

    // The mode picker.
    assert.equal(await chat().locator("#mode").inputValue(), "code");
    await chat().locator("#mode").selectOption("plan");
    await runCommand("Threadline: Pick Mode (ask, plan, code, auto)");
    const rows = await quickPickRows();
    await until("Plan marked current", async () => (await rows.allInnerTexts()).some((t) => t.includes("Plan") && t.includes("current")), 10_000);
    await page.keyboard.press("Escape");
  });

  // Images and sub-agents: a screenshot pasted into the chat (a paste event carrying an
  // image file, as VS Code's webview gets one from the clipboard) is shown as a
  // thumbnail, sent with the prompt and shown in the transcript; the prompt's turn
  // delegates, and the card's "Open child session" opens the child in a tab of its own
  // beside the editor (the chat view keeps the parent); its Parent button leads back.
  await step("paste-image-and-open-child-session", async () => {
    const child = `scripted:${JSON.stringify({ rounds: [[{ text: "The sub-agent counted three files." }]] })}`;
    const script = {
      rounds: [
        [{ tool_call: { name: "delegate", arguments: { task: "count the files", model: child } } }],
        [{ text: "A blue and orange picture; three files." }],
      ],
    };
    await newSessionWith(script);
    const input = chat().locator("#input");
    await input.click();
    // A 40×20 PNG, left half blue, right half orange.
    const png =
      "iVBORw0KGgoAAAANSUhEUgAAACgAAAAUCAIAAABwJOjsAAAAKUlEQVR4nGPgzLxFNvrQI0I2Yhi1eNTiUYtHLR61eNTiUYtHLR45FgMA5LJ3/dNCyq0AAAAASUVORK5CYII=";
    await input.evaluate((el, base64) => {
      const data = new DataTransfer();
      data.items.add(new File([Uint8Array.from(atob(base64), (c) => c.charCodeAt(0))], "shot.png", { type: "image/png" }));
      el.dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
    }, png);
    await chat().locator("#attachments .attachment img").waitFor({ state: "visible", timeout: 10_000 });
    await snap("image-attached");
    await input.fill("What is in this picture? Count the files too.");
    await input.press("Enter");
    const thumb = chat().locator(".entry.user img.thumb");
    await until("the image in the transcript", async () => (await thumb.count()) === 1, 30_000);
    assert.equal(await thumb.evaluate((img) => img.naturalWidth), 40, "the image decodes in the webview (CSP)");
    await until("the text-only model's warning", async () => (await chatText(".entry.notice")).includes("cannot see images"), 30_000);
    await until("the answer", async () => (await chatText(".entry.assistant")).includes("three files"), 30_000);
    const card = chat().locator(".entry.tool.delegate");
    assert.match(await card.locator(".tool-output").innerText(), /three files/);
    await snap("image-and-delegate-in-transcript");
    const parentTitle = await chat().locator("#title").innerText();
    await card.locator("button.open-child").click();
    let childPage = null;
    await until(
      "the child session in a tab beside",
      async () => (childPage = (await chatPages()).find((p) => p.title === "↳ count the files")?.frame ?? null) !== null,
      30_000,
    );
    await until("named as its parent's sub-agent", async () => /sub-agent of/.test(await childPage.locator("#status").innerText()), 30_000);
    assert.match((await childPage.locator(".entry.assistant").allInnerTexts()).join("\n"), /The sub-agent counted three files\./);
    assert.equal(await page.locator(".tabs-container .tab", { hasText: "↳ count the files" }).count(), 1, "an editor tab named after the child");
    const pages = await chatPages();
    assert.equal(pages.length, 2, "the chat view and the child's tab");
    const parent = pages.find((p) => p.frame !== childPage);
    assert.equal(parent.title, parentTitle, "the chat view still shows the parent");
    assert.equal(await parent.frame.locator(".entry.tool.delegate").count(), 1);
    await snap("child-session-beside-its-parent");
    // The way back: the child's Parent button brings up the chat view with the parent.
    await childPage.locator("#open-parent").click();
    await until("the parent brought up", async () => (await chatPages()).some((p) => p.title === parentTitle), 10_000);
  });
} finally {
  writeFileSync(join(SHOTS, "results.json"), JSON.stringify({ results, pageErrors }, null, 2));
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
const failed = results.filter((r) => !r.ok).length;
console.log(`${results.length - failed} passed, ${failed} failed`);
