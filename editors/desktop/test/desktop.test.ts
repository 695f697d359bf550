/**
 * `threadline desktop` for real: the repository's `.venv/bin/threadline desktop` on
 * loopback (its own THREADLINE_HOME, a scripted model so answers are predictable),
 * Debian's chromium through playwright-core. A user's steps: prompt and watch it
 * stream, interrupt, fork and see the branch in the tree, compact and see the context
 * picture change, two sessions side by side, search; and the refusals that keep other
 * web pages out. Screenshots go to test-output/.
 */
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { chromium, type BrowserContext, type Page } from "playwright-core";

const root = resolve(__dirname, "../..");
const repo = resolve(root, "../..");
const outDir = join(root, "test-output");
const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const THREADLINE = process.env.THREADLINE_COMMAND ?? join(repo, ".venv", "bin", "threadline");

const words = (
  "Primary colours are red, yellow and blue; mixing two of them gives a secondary colour: " +
  "red and yellow make orange, yellow and blue make green, blue and red make purple."
).split(" ");
const SCRIPT = {
  rounds: [[...words.flatMap((w) => [{ text: `${w} ` }, { sleep: 0.08 }]), { usage: { input_tokens: 900, output_tokens: 40 } }]],
  summary: [{ sleep: 0.5 }, { text: "Colours were discussed." }],
};

let server: ChildProcess;
let url = "";
let port = 0;
let home = "";
let context: BrowserContext;
let profile = "";

before(async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} missing: apt-get install -y chromium`);
  assert.ok(existsSync(THREADLINE), `no sidecar at ${THREADLINE}`);
  mkdirSync(outDir, { recursive: true });
  home = mkdtempSync(join(tmpdir(), "threadline-desktop-"));
  const script = join(home, "script.json");
  writeFileSync(script, JSON.stringify(SCRIPT));
  server = spawn(THREADLINE, ["desktop", "--no-browser"], {
    cwd: home,
    env: { ...process.env, THREADLINE_HOME: join(home, "data"), THREADLINE_MODEL: `scripted:${script}` },
    stdio: ["ignore", "pipe", "inherit"],
  });
  url = await new Promise<string>((resolveUrl, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`no address printed: ${out}`)), 30_000);
    server.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const found = /Threadline desktop: (http:\/\/\S+)/.exec(out);
      if (found) {
        clearTimeout(timer);
        resolveUrl(found[1]!);
      }
    });
    server.once("exit", (code) => reject(new Error(`threadline desktop exited (${code}): ${out}`)));
  });
  port = Number(new URL(url).port);
  profile = mkdtempSync(join(tmpdir(), "threadline-desktop-chromium-"));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
    viewport: { width: 1500, height: 900 },
    timeout: 60_000,
  });
  context.setDefaultTimeout(30_000);
});

after(async () => {
  await context?.close();
  server?.kill("SIGINT");
  await new Promise((r) => (server?.exitCode !== null ? r(null) : server.once("exit", r)));
  rmSync(home, { recursive: true, force: true });
  rmSync(profile, { recursive: true, force: true });
});

/** The status code the desktop server answers a raw HTTP/1.1 request with. */
function status(path: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolveStatus, reject) => {
    const socket = connect(port, "127.0.0.1", () => {
      const lines = [`GET ${path} HTTP/1.1`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`), "", ""];
      socket.write(lines.join("\r\n"));
    });
    let head = "";
    socket.on("data", (chunk) => {
      head += chunk.toString("latin1");
      const line = /^HTTP\/1\.1 (\d{3})/.exec(head);
      if (line) {
        socket.destroy();
        resolveStatus(Number(line[1]));
      }
    });
    socket.on("error", reject);
    socket.setTimeout(10_000, () => reject(new Error(`no answer to ${path}`)));
  });
}

/** What a timed-out wait reports: each pane's label, entries and notices, the connection. */
async function shownState(page: Page): Promise<string> {
  try {
    const panes = await page.locator(".pane").evaluateAll((els) =>
      els.map((el) => ({
        label: el.querySelector(".pane-label")?.textContent ?? null,
        users: el.querySelectorAll(".entry.user").length,
        answers: el.querySelectorAll(".entry.assistant").length,
        status: el.querySelector("#status")?.textContent ?? null,
        notices: [...el.querySelectorAll(".notice")].map((n) => n.textContent),
      })),
    );
    return JSON.stringify({ connection: await page.locator("#connection").innerText(), hash: new URL(page.url()).hash, panes });
  } catch (err) {
    return `(unreadable: ${String(err)})`;
  }
}

async function until(page: Page, what: string, predicate: () => Promise<boolean>, ms = 30_000) {
  const deadline = Date.now() + ms;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; the page showed ${await shownState(page)}`);
    await page.waitForTimeout(100);
  }
}

/** The first pane's model from now on (the picker lists the configured models only). */
async function useModel(page: Page, model: string): Promise<void> {
  await page.evaluate(
    (m) =>
      (window as unknown as { threadline: { panes: { controller: { handle(m: unknown): Promise<void> } }[] } }).threadline.panes[0]!.controller.handle({
        type: "setModel",
        model: m,
      }),
    model,
  );
}

/** The app's page, connected; `errors` collects the page's uncaught errors. */
async function openApp(): Promise<{ page: Page; errors: string[] }> {
  const page = await context.newPage();
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(url);
  await page.locator("#connection", { hasText: "Connected" }).waitFor();
  return { page, errors };
}

test("another origin, a wrong token or a wrong Host is refused", async () => {
  const token = new URL(url).searchParams.get("token")!;
  const upgrade = {
    Connection: "Upgrade",
    Upgrade: "websocket",
    "Sec-WebSocket-Version": "13",
    "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
  };
  const host = `127.0.0.1:${port}`;
  assert.equal(await status(`/rpc?token=${token}`, { ...upgrade, Host: host, Origin: "http://evil.example" }), 403);
  assert.equal(await status(`/rpc?token=wrong`, { ...upgrade, Host: host, Origin: `http://${host}` }), 403);
  assert.equal(await status(`/rpc?token=${token}`, { ...upgrade, Host: "evil.example", Origin: "http://evil.example" }), 403);
  assert.equal(await status(`/rpc?token=${token}`, { ...upgrade, Host: host, Origin: `http://${host}` }), 101);

  // The page itself needs the token.
  const page = await context.newPage();
  assert.equal((await page.goto(`http://${host}/`))?.status(), 403, "the page needs the token");

  // A web page of another origin that knows the address cannot drive it either.
  await page.route("http://evil.test/**", (route) => route.fulfill({ contentType: "text/html", body: "<p>evil</p>" }));
  await page.goto("http://evil.test/");
  const outcome = await page.evaluate(
    (target) =>
      new Promise<string>((done) => {
        const ws = new WebSocket(target);
        ws.onopen = () => done("open");
        ws.onerror = () => done("refused");
      }),
    `ws://127.0.0.1:${port}/rpc?token=${token}`,
  );
  assert.equal(outcome, "refused");
  await page.close();
});

test("prompt, stream, interrupt, fork into the tree, compact, side by side, search, rename, archive", async () => {
  const { page, errors } = await openApp();
  const pane = page.locator(".pane").first();
  const status = () => pane.locator("#status").innerText();
  const ask = async (text: string) => {
    await pane.locator("#input").fill(text);
    await pane.locator("#input").press("Enter");
    await until(page, "the turn to start", async () => (await status()).includes("Generating"));
  };
  const idle = () => until(page, "the turn to end", async () => !(await status()).includes("Generating"));

  // Prompt and watch the answer grow.
  await ask("Name the primary colours.");
  await until(page, "text", async () => (await pane.locator(".entry.assistant").count()) > 0);
  const early = await pane.locator(".entry.assistant").last().innerText();
  await idle();
  const full = await pane.locator(".entry.assistant").last().innerText();
  assert.ok(full.length > early.length, "the answer streamed");
  assert.match(full, /secondary colour/);
  await until(page, "the session in the tree", async () => (await page.locator("#tree button.node").count()) === 1);

  // Interrupt.
  await ask("And the secondary ones?");
  await until(page, "streaming", async () => (await pane.locator(".entry.assistant").count()) === 2);
  await pane.locator("#interrupt").click();
  await idle();
  assert.equal(await pane.locator(".notice", { hasText: "Interrupted." }).count(), 1);
  await ask("Why three?");
  await idle();
  await ask("And tertiary colours?");
  await idle();
  await page.screenshot({ path: join(outDir, "desktop-chat.png") });

  // Compact: the context picture shows before and after.
  const firstSession = await page.locator("#tree button.node").first().getAttribute("data-session-id");
  await until(page, "a context picture", async () => (await pane.locator(".context-picture .row").count()) === 1);
  await pane.locator("#compact").click();
  await until(page, "the compaction", async () => (await pane.locator(".notice", { hasText: "Compacted" }).count()) === 1).catch(
    async (err: Error) => {
      throw new Error(`${err.message}; notices: ${(await pane.locator(".notice").allInnerTexts()).join(" | ")}`);
    },
  );
  await until(page, "before and after", async () => (await pane.locator(".context-picture .row").count()) === 2);
  const totals = await pane.locator(".context-picture .row-total").allInnerTexts();
  const n = (s: string) => Number(s.split("/")[0]!.replace(/\D/g, ""));
  assert.ok(n(totals[1]!) < n(totals[0]!), `the context did not shrink: ${totals}`);
  const summary = await pane.locator('.context-picture [data-row="after"] .seg.summary').getAttribute("data-tokens");
  assert.ok(Number(summary) > 0, "the summary has its part of the picture");
  const legend = await pane.locator(".context-picture .legend").innerText();
  assert.match(legend, /counted by the model's tokenizer/);
  assert.doesNotMatch(legend, /≈|estimat/, "every part is counted, none estimated");
  const tools = await pane.locator('.context-picture [data-row="after"] .seg.tools').getAttribute("data-tokens");
  assert.ok(tools !== null, "the tool definitions have a part of their own");
  await page.screenshot({ path: join(outDir, "desktop-compacted.png") });

  // Fork from the first answer: the branch appears under its parent in the tree.
  const answer = pane.locator(".entry.assistant").first();
  await answer.hover();
  await answer.locator(".fork").click();
  await until(page, "the fork in the tree", async () => (await page.locator("#tree li li button.node").count()) === 1);
  const branch = page.locator("#tree li li button.node");
  assert.match(await branch.innerText(), /branches at “Primary colours are red/);
  const parentRow = page.locator(`#tree > ul > li > button.node[data-session-id="${firstSession}"]`);
  assert.equal(await parentRow.count(), 1, "the fork hangs under its parent");
  assert.match(await pane.locator("#status").innerText(), /fork of “Name the primary colours\.”/);

  // Two sessions side by side: the original opens beside the fork.
  await parentRow.click({ modifiers: ["Shift"] });
  await until(page, "two panes", async () => (await page.locator(".pane").count()) === 2);
  const second = page.locator(".pane").nth(1);
  await until(page, "the original in the second pane", async () => (await second.locator(".entry.user").count()) === 4);
  assert.equal(await page.locator(".pane").first().locator(".entry.user").count(), 1);
  await second.locator("#input").fill("One more?");
  await second.locator("#input").press("Enter");
  await until(page, "an answer in the second pane", async () => (await second.locator(".entry.assistant").count()) >= 4, 30_000);
  await page.screenshot({ path: join(outDir, "desktop-side-by-side.png") });

  // Search (the server's, over every message): hits with their snippets replace the tree.
  await page.locator("#search").fill("secondary colour");
  await until(page, "text hits", async () => (await page.locator("#hits .hit").count()) > 0);
  assert.equal(await page.locator("#tree").isVisible(), false);
  const hit = page.locator("#hits .hit").first();
  // The matched words are marked, stemmed as the index stems them (colours, colour).
  const marked = (await hit.locator("mark").allInnerTexts()).map((t) => t.toLowerCase());
  assert.ok(marked.includes("secondary") && marked.includes("colour"), `marked: ${marked}`);
  assert.ok(marked.every((w) => /^(secondary|colours?)$/.test(w)), `marked: ${marked}`);
  assert.match(await hit.locator(".hit-snippet").innerText(), /gives a secondary colour/);
  assert.match(await hit.locator(".node-meta").innerText(), /^in an answer · \d{4}-\d\d-\d\d/);
  await page.screenshot({ path: join(outDir, "desktop-search.png") });
  // A hit opens in the focused pane, at its message.
  const hitSession = (await hit.getAttribute("data-session-id"))!;
  const hitMessage = (await hit.getAttribute("data-message-id"))!;
  await page.locator(".pane").first().locator("#input").click();
  await hit.click();
  const firstPane = page.locator(".pane").first();
  await until(page, "the hit in view", async () =>
    (await firstPane.locator(`.search-target[data-message-id="${hitMessage}"]`).count()) === 1,
  );
  assert.equal(await page.evaluate(() => (window as unknown as { threadline: { panes: { sessionId: string }[] } }).threadline.panes[0]!.sessionId), hitSession);
  await page.locator("#search").fill("no such words anywhere");
  await until(page, "no hits", async () => (await page.locator("#hits").innerText()).includes("No session matches."));
  assert.equal(await page.locator("#hits .hit").count(), 0);
  await page.locator("#search").fill("");
  await until(page, "the tree instead of hits", async () => !(await page.locator("#hits").isVisible()));
  assert.equal(await page.locator("#tree button.node:visible").count(), 2);

  // Rename in the tree: the panes showing the session take the new title too.
  const row = page.locator(`#tree button.node[data-session-id="${firstSession}"]`);
  await row.hover();
  await page.locator(`#tree li:has(> button.node[data-session-id="${firstSession}"]) > .node-actions .rename`).click();
  const titleInput = page.locator("#tree .rename-input");
  assert.equal(await titleInput.inputValue(), "Name the primary colours.");
  await titleInput.fill("Colour theory");
  await titleInput.press("Enter");
  await until(page, "the new title in the tree", async () => (await row.locator(".node-title").innerText()) === "Colour theory");
  await until(page, "the new title in the pane", async () =>
    (await page.locator(".pane").nth(1).locator("#title").innerText()) === "Colour theory",
  );
  await page.locator("#search").fill("colour theory");
  await until(page, "a title hit", async () => (await page.locator('#hits .hit .node-meta', { hasText: "in the title" }).count()) === 1);
  await page.locator("#search").fill("");
  await until(page, "the tree back", async () => await page.locator("#tree").isVisible());

  // Archive: the session (and the fork under it) leave the tree; "Show archived" lists it.
  await row.hover();
  await page.locator(`#tree li:has(> button.node[data-session-id="${firstSession}"]) > .node-actions .archive`).click();
  await until(page, "the session archived", async () => (await row.count()) === 0);
  await page.locator("#show-archived").click();
  await until(page, "the archived list", async () =>
    (await page.locator("#tree button.node").count()) === 1 && (await row.count()) === 1,
  );
  assert.equal(await page.locator("#show-archived").innerText(), "Show active");
  await page.screenshot({ path: join(outDir, "desktop-archived.png") });
  await row.hover();
  await page.locator(`#tree li:has(> button.node[data-session-id="${firstSession}"]) > .node-actions .archive`).click();
  await until(page, "no archived sessions", async () => (await page.locator("#tree").innerText()).includes("No archived sessions."));
  await page.locator("#show-archived").click();
  await until(page, "the whole tree again", async () => (await page.locator("#tree button.node").count()) === 2);
  await page.screenshot({ path: join(outDir, "desktop-tree.png") });
  assert.deepEqual(errors, []);
  await page.close();
});

test("two panes on one session, a summary, figures that agree, a lost sidecar, a reload, a narrow window", async () => {
  const { page, errors } = await openApp();
  assert.equal(await page.locator('link[rel="icon"]').count(), 1, "a favicon");
  const first = page.locator(".pane").first();
  const generating = async (pane: typeof first) => (await pane.locator("#status").innerText()).includes("Generating");
  const ask = async (pane: typeof first, text: string) => {
    await pane.locator("#input").fill(text);
    await pane.locator("#input").press("Enter");
    await until(page, "the turn to start", () => generating(pane));
  };
  const idle = (pane: typeof first) => until(page, "the turn to end", async () => !(await generating(pane)));

  // The tree names the session by its title while its first turn still runs.
  await ask(first, "Name three primary colours.");
  await until(page, "the title in the tree", async () =>
    (await page.locator("#tree").innerText()).includes("Name three primary colours."),
  );
  assert.ok(await generating(first), "still the first turn");
  assert.doesNotMatch(await page.locator("#tree").innerText(), /Untitled session|0 messages/);
  await idle(first);
  const sid = (await page.locator("#tree button.node").first().getAttribute("data-session-id"))!;

  // The same session beside it: the first pane shows each message once.
  await page.locator(`#tree button.node[data-session-id="${sid}"]`).click({ modifiers: ["Shift"] });
  await until(page, "two panes", async () => (await page.locator(".pane").count()) === 2);
  const second = page.locator(".pane").nth(1);
  await until(page, "the replay", async () => (await second.locator(".entry.assistant").count()) === 1);
  assert.deepEqual(await first.locator(".entry.user .body").allInnerTexts(), ["Name three primary colours."]);
  assert.equal(await first.locator(".entry.assistant").count(), 1);

  // A prompt in one pane shows in the other: the question, the answer, the figures.
  await ask(second, "And the secondary ones?");
  await until(page, "the prompt in the first pane", async () => (await first.locator(".entry.user").count()) === 2);
  assert.equal(await first.locator(".entry.user .body").last().innerText(), "And the secondary ones?");
  await idle(second);
  await until(page, "the answer in the first pane", async () => (await first.locator(".entry.assistant").count()) === 2);
  for (const word of ["Why three?", "And tertiary colours?"]) {
    await ask(first, word);
    await idle(first);
  }
  // The status line and the context bar say the same, in both panes.
  const figures = async (pane: typeof first) => {
    const status = /context ([\d,]+) \/ ([\d,]+) tokens/.exec(await pane.locator("#status").innerText());
    const bar = await pane.locator(".context-picture .row-total").last().innerText().catch(() => "");
    return { status: status ? `${status[1]} / ${status[2]}` : null, bar };
  };
  for (const pane of [first, second]) {
    await until(page, "the figures to agree", async () => {
      const f = await figures(pane);
      return f.status !== null && f.status === f.bar;
    });
  }

  // A compaction's summary is a summary (no Fork button, not an answer), live and reopened.
  await first.locator("#compact").click();
  await until(page, "the summary", async () => (await first.locator(".entry.summary").count()) === 1);
  const notice = await first.locator(".notice", { hasText: "Compacted" }).innerText();
  assert.match(notice, /^Compacted: \d+ older messages? summarised \([\d,]+ → [\d,]+ tokens\)\.$/);
  const isAnswer = async (pane: typeof first) =>
    (await pane.locator(".entry.assistant .body").allInnerTexts()).some((t) => t.includes("Colours were discussed."));
  assert.equal(await isAnswer(first), false);
  assert.equal(await first.locator(".entry.summary .fork").count(), 0);
  await until(page, "the summary in the second pane", async () => (await second.locator(".entry.summary").count()) === 1);
  await second.locator("#input").click(); // focus the second pane, and reopen the session there
  await second.locator(".entry.user").first().evaluate((e) => e.remove()); // what a reopen redraws
  await page.locator(`#tree button.node[data-session-id="${sid}"]`).first().click();
  await until(page, "the reopened pane", async () => (await second.locator(".entry.user").count()) === 4);
  await until(page, "the reopened summary", async () => (await second.locator(".entry.summary").count()) === 1);
  assert.equal(await isAnswer(second), false);
  await until(page, "dimmed messages", async () => (await second.locator(".entry.compacted").count()) > 0);
  await page.screenshot({ path: join(outDir, "desktop-two-panes.png") });

  // A fork has the window size in its status, and a count and a date in the tree.
  const answer = second.locator(".entry.assistant").first();
  await answer.hover();
  await answer.locator(".fork").click();
  await until(page, "the fork in the tree", async () => (await page.locator("#tree li li button.node").count()) >= 1);
  await until(page, "the fork's figures", async () => /context [\d,]+ \/ 8,192 tokens/.test(await second.locator("#status").innerText()));
  assert.match(await page.locator("#tree li li .node-meta").first().innerText(), /branches at “.*” · \d+ messages? · \d{4}-\d\d-\d\d/);

  // A reload keeps the panes and what they show.
  const shown = [await first.locator(".pane-label").innerText(), await second.locator(".pane-label").innerText()];
  await page.reload();
  await page.locator("#connection", { hasText: "Connected" }).waitFor();
  await until(page, "the panes back", async () => (await page.locator(".pane").count()) === 2);
  await until(page, "their sessions", async () =>
    (await page.locator(".pane").nth(1).locator(".entry.user").count()) > 0 &&
    JSON.stringify(await page.locator(".pane .pane-label").allInnerTexts()) === JSON.stringify(shown),
  );

  // A lost sidecar is said at once; Restart brings every pane back.
  const pids = await new Promise<string>((done) => {
    const ps = spawn("ps", ["-o", "pid=", "--ppid", String(server.pid)]);
    let out = "";
    ps.stdout.on("data", (b: Buffer) => (out += b.toString()));
    ps.on("exit", () => done(out));
  });
  const sidecars = pids.split(/\s+/).filter(Boolean);
  assert.equal(sidecars.length, 1, `one sidecar for the one page: ${pids}`);
  process.kill(Number(sidecars[0]), "SIGKILL");
  const banner = page.locator(".pane").first().locator("#sidecar-banner");
  await banner.waitFor({ state: "visible", timeout: 10_000 });
  assert.match(await banner.innerText(), /the sidecar exited/);
  await banner.locator("#restart-sidecar").click();
  await page.locator("#connection", { hasText: "Connected" }).waitFor();
  await banner.waitFor({ state: "hidden" });
  const revived = page.locator(".pane").first();
  await until(page, "the session again", async () => (await revived.locator(".entry.user").count()) > 0);
  await ask(revived, "Still there?");
  await idle(revived);
  assert.equal(await revived.locator(".notice.error").count(), 0);
  const other = page.locator(".pane").nth(1);
  await other.locator("#sidecar-banner").waitFor({ state: "hidden" });
  await until(page, "the other pane's session again", async () => (await other.locator(".entry.user").count()) > 0);
  assert.equal(await revived.locator(".entry.user .body").last().innerText(), "Still there?");

  // A narrow window: the page never scrolls sideways; the panes scroll in their area.
  await page.setViewportSize({ width: 800, height: 700 });
  const widths = await page.evaluate(() => ({ page: document.documentElement.scrollWidth, view: window.innerWidth }));
  assert.ok(widths.page <= widths.view, `the page scrolls sideways: ${JSON.stringify(widths)}`);
  await page.screenshot({ path: join(outDir, "desktop-800px.png") });
  assert.deepEqual(errors, []);
  await page.close();
});

test("typing while a turn runs: Enter queues (edited, removed), Ctrl+Enter steers; another tab's turn shows live", async () => {
  const { page, errors } = await openApp();
  const pane = page.locator(".pane").first();
  const input = pane.locator("#input");
  const users = () => pane.locator(".entry.user .body").allInnerTexts();
  const queued = () => pane.locator("#queue .queued-text").allInnerTexts();
  const generating = async () => (await pane.locator("#status").innerText()).includes("Generating");

  await input.fill("Name the primary colours.");
  await input.press("Enter");
  await until(page, "the turn to start", generating);
  assert.equal(await pane.locator("#send").innerText(), "Queue");
  assert.equal(await pane.locator("#steer").isVisible(), true);
  await input.fill("Mention mixing.");
  await input.press("Control+Enter");
  await until(page, "the steer shown", async () => (await users()).includes("Mention mixing."));
  await input.fill("Now the secondary ones.");
  await input.press("Enter");
  await input.fill("And tertiary?");
  await input.press("Enter");
  await until(page, "two queued", async () => (await queued()).length === 2).catch(async (err: Error) => {
    throw new Error(`${err.message}: users ${JSON.stringify(await users())}, queued ${JSON.stringify(await queued())}, notices ${JSON.stringify(await pane.locator(".notice").allInnerTexts())}, status ${await pane.locator("#status").innerText()}`);
  });
  assert.deepEqual(await queued(), ["Now the secondary ones.", "And tertiary?"]);
  await page.screenshot({ path: join(outDir, "desktop-queue.png") });
  await pane.locator("#queue .queued").nth(1).locator(".queued-remove").click();
  await until(page, "one queued", async () => (await queued()).length === 1);
  await pane.locator("#queue .queued-edit").click();
  await pane.locator("#queue .rename-input").fill("Now the secondary colours.");
  await pane.locator("#queue .rename-input").press("Enter");
  await until(page, "the edit", async () => (await queued())[0] === "Now the secondary colours.");
  await until(page, "the queue to run", async () => (await users()).length === 3 && !(await generating()), 60_000);
  assert.deepEqual(await users(), ["Name the primary colours.", "Mention mixing.", "Now the secondary colours."]);
  assert.equal(await pane.locator("#queue").isHidden(), true);
  assert.equal(await pane.locator("#send").innerText(), "Send");
  const answers = await pane.locator(".entry.assistant").count();

  // A second tab is a second sidecar on the same store: its turn shows here as it runs.
  await until(page, "the session in the tree", async () => (await page.locator("#tree button.node").count()) > 0);
  const sid = await page.evaluate(() => (window as unknown as { threadline: { panes: { sessionId: string }[] } }).threadline.panes[0]!.sessionId);
  const other = await openApp();
  await other.page.locator(`#tree button.node[data-session-id="${sid}"]`).click();
  const there = other.page.locator(".pane").first();
  await until(other.page, "the replay there", async () => (await there.locator(".entry.user").count()) === 3);
  await there.locator("#input").fill("Asked in the other tab.");
  await there.locator("#input").press("Enter");
  await until(page, "the other tab's prompt here", async () => (await users()).includes("Asked in the other tab."));
  await until(page, "shown as running there", async () => /in another window/.test(await pane.locator("#status").innerText()));
  assert.equal(await pane.locator("#interrupt").isEnabled(), true, "it can be interrupted from here");
  await page.screenshot({ path: join(outDir, "desktop-other-tab.png") });
  await until(page, "its answer here", async () => (await pane.locator(".entry.assistant").count()) === answers + 1, 60_000);
  await until(page, "idle here", async () => !/in another window/.test(await pane.locator("#status").innerText()));
  assert.match(await pane.locator(".entry.assistant").last().innerText(), /secondary colour/);
  assert.deepEqual(other.errors, []);
  assert.deepEqual(errors, []);
  await other.page.close();
  await page.close();
});

test("the agent's work on the desktop: plan checklist, an edit's coloured diff, a question form, the turn's diff, rewind and undo, the mode picker", async () => {
  const file = join(home, "calc.py");
  writeFileSync(file, "def add(a, b):\n    return a - b\n");
  const call = (name: string, args: Record<string, unknown>) => ({ tool_call: { name, arguments: args } });
  const script = join(home, "work.json");
  writeFileSync(
    script,
    JSON.stringify({
      rounds: [
        [call("update_plan", { entries: [{ content: "Fix add()", priority: "high", status: "in_progress" }, { content: "Run the tests", priority: "medium", status: "pending" }] })],
        [call("edit_file", { path: "calc.py", edits: [{ oldText: "a - b", newText: "a + b" }] })],
        [call("ask_user", { question: "Which colour should the button be?", choices: ["red", "blue"] })],
        [{ text: "Done: add() adds." }],
      ],
    }),
  );
  const { page, errors } = await openApp();
  const dialogs: string[] = [];
  page.on("dialog", (d) => {
    dialogs.push(d.message());
    void d.accept();
  });
  const pane = page.locator(".pane").first();
  // The pane's model: the work script (the picker lists the configured models only).
  await useModel(page, `scripted:${script}`);
  await pane.locator("#input").fill("Fix add() in calc.py");
  await pane.locator("#input").press("Enter");

  // The plan, above the input.
  await until(page, "the plan", async () => (await pane.locator("#plan .plan-text").count()) === 2);
  assert.deepEqual(await pane.locator("#plan .plan-text").allInnerTexts(), ["Fix add()", "Run the tests"]);

  // The edit asked first (code mode); its card shows the change as a coloured diff.
  const card = pane.locator(".entry.tool", { hasText: "calc.py" });
  await until(page, "the edit's card", async () => (await card.locator(".diff-line").count()) > 0);
  assert.deepEqual(await card.locator(".diff-line.del").allInnerTexts(), ["-    return a - b"]);
  assert.deepEqual(await card.locator(".diff-line.add").allInnerTexts(), ["+    return a + b"]);

  // The agent asks: a form in the pane.
  const form = pane.locator("#elicitation");
  await until(page, "the question", async () => await form.isVisible());
  assert.equal(await form.locator(".elicitation-question").innerText(), "Which colour should the button be?");
  await form.locator('select[name="answer"]').selectOption("blue");
  await page.screenshot({ path: join(outDir, "desktop-question.png") });
  await form.locator("button.primary").click();
  await until(page, "the answer", async () => (await pane.locator(".entry.assistant").last().innerText()).includes("Done: add() adds."));
  assert.equal(await form.isHidden(), true);
  assert.equal(await pane.locator(".entry.tool", { hasText: "The user answered: blue" }).count(), 1);
  assert.ok(dialogs.some((d) => /calc\.py/.test(d)), `the edit asked first: ${dialogs.join(" | ")}`);
  assert.equal(readFileSync(file, "utf8"), "def add(a, b):\n    return a + b\n");

  // The turn's diff: the file, its counts, its diff unfolded in colour.
  await until(page, "the turn's files", async () => (await pane.locator("#turn-diff .diff-file").count()) === 1);
  assert.equal(await pane.locator("#turn-diff .diff-path").innerText(), "calc.py");
  assert.equal(await pane.locator("#turn-diff .diff-counts").innerText(), "modified +1 −1");
  await pane.locator("#turn-diff details.diff-inline summary").click();
  assert.deepEqual(await pane.locator("#turn-diff .diff-line.add").allInnerTexts(), ["+    return a + b"]);
  await page.screenshot({ path: join(outDir, "desktop-work.png") });

  // Rewind to before the prompt, files too; then undo it.
  const user = pane.locator(".entry.user").last();
  await user.hover();
  await user.locator("button.rewind").click();
  await until(page, "the rewind", async () => (await pane.locator(".entry.user").count()) === 0);
  assert.equal(readFileSync(file, "utf8"), "def add(a, b):\n    return a - b\n");
  assert.match(await pane.locator(".notice").last().innerText(), /Rewound.*1 file restored/);
  await pane.locator("#turn-diff .undo-rewind").click();
  await until(page, "the undo", async () => (await pane.locator(".entry.user").count()) === 1);
  assert.equal(readFileSync(file, "utf8"), "def add(a, b):\n    return a + b\n");

  // The mode picker: the server's modes; a switch is kept with the session (a reload shows it).
  const mode = pane.locator("#mode");
  assert.equal(await mode.isVisible(), true);
  assert.deepEqual(await mode.locator("option").evaluateAll((o) => o.map((x) => (x as HTMLOptionElement).value)), ["ask", "plan", "code", "auto"]);
  assert.equal(await mode.inputValue(), "code");
  await mode.selectOption("plan");
  await until(page, "the switch", async () => (await mode.inputValue()) === "plan");
  await page.reload();
  await page.locator("#connection", { hasText: "Connected" }).waitFor();
  await until(page, "the session back", async () => (await page.locator(".pane").first().locator(".entry.user").count()) === 1);
  await until(page, "the mode back", async () => (await page.locator(".pane").first().locator("#mode").inputValue()) === "plan");
  assert.deepEqual(errors, []);
  await page.close();
});

/** A 40×20 PNG (left half blue, right half orange). */
const SHOT = "iVBORw0KGgoAAAANSUhEUgAAACgAAAAUCAIAAABwJOjsAAAAKUlEQVR4nGPgzLxFNvrQI0I2Yhi1eNTiUYtHLR61eNTiUYtHLR45FgMA5LJ3/dNCyq0AAAAASUVORK5CYII=";

test("a pasted image in the transcript; a delegate call's card opens its child session in a new pane; the tree shows the child as a branch", async () => {
  const child = `scripted:${JSON.stringify({ rounds: [[{ text: "three " }, { sleep: 0.5 }, { text: "files" }]] })}`;
  const script = join(home, "delegate.json");
  writeFileSync(
    script,
    JSON.stringify({
      rounds: [[{ tool_call: { name: "delegate", arguments: { task: "count the files", model: child } } }], [{ text: "Parent done." }]],
    }),
  );
  const { page, errors } = await openApp();
  const pane = page.locator(".pane").first();
  await useModel(page, `scripted:${script}`);
  // Paste a screenshot into the composer: a thumbnail waits over the input.
  await page.evaluate((base64) => {
    const data = new DataTransfer();
    data.items.add(new File([Uint8Array.from(atob(base64), (c) => c.charCodeAt(0))], "shot.png", { type: "image/png" }));
    const input = document.querySelectorAll(".pane")[0]!.querySelector("#input")!;
    input.dispatchEvent(new ClipboardEvent("paste", { clipboardData: data, bubbles: true, cancelable: true }));
  }, SHOT);
  await pane.locator("#attachments .attachment img").waitFor();
  await pane.locator("#input").fill("Count the files; and what is this picture?");
  await pane.locator("#input").press("Enter");

  // The prompt shows its image; the model (text-only) said so once.
  const shown = pane.locator(".entry.user img.thumb");
  await until(page, "the image in the transcript", async () => (await shown.count()) === 1);
  assert.equal(await shown.evaluate((img) => (img as HTMLImageElement).naturalWidth), 40);
  assert.equal(await pane.locator("#attachments").isHidden(), true);
  await until(page, "the warning", async () => (await pane.locator(".notice", { hasText: "cannot see images" }).count()) === 1);

  // The delegate call: a card with the child's progress and a button to open it.
  const card = pane.locator(".entry.tool.delegate");
  await until(page, "the delegate card", async () => (await card.count()) === 1);
  await until(page, "the parent's answer", async () => (await pane.locator(".entry.assistant").last().innerText()).includes("Parent done."));
  assert.match(await card.locator(".tool-output").innerText(), /three files/);
  const childId = (await card.getAttribute("data-child-session-id"))!;
  const parentId = await page.evaluate(
    () => (window as unknown as { threadline: { panes: { sessionId: string | null }[] } }).threadline.panes[0]!.sessionId,
  );
  assert.match(childId, /^sess_/);

  // The tree: the child is a branch of its parent, marked as a sub-agent.
  const branch = page.locator(`#tree li:has(> button.node[data-session-id="${parentId}"]) > ul button.node.child[data-session-id="${childId}"]`);
  await until(page, "the child under its parent in the tree", async () => (await branch.count()) === 1);
  assert.match(await branch.locator(".node-meta").innerText(), /sub-agent/);
  assert.equal(await branch.locator(".node-title").innerText(), "↳ count the files", "the server's title, marked once");

  // Open child session: a new pane beside the parent, showing the child's work.
  await card.locator("button.open-child").click();
  await until(page, "a second pane", async () => (await page.locator(".pane").count()) === 2);
  const second = page.locator(".pane").nth(1);
  await until(page, "the child's answer", async () => (await second.locator(".entry.assistant").allInnerTexts()).join("").includes("three files"));
  assert.match(await second.locator("#status").innerText(), /sub-agent of “Count the files; and what is this picture\?”/);
  assert.equal(await pane.locator(".entry.user img.thumb").count(), 1, "the parent's pane keeps its session");
  await page.screenshot({ path: join(outDir, "desktop-images-delegate.png") });
  // Its Parent button: the pane that shows the parent is focused (no third pane).
  assert.equal(await pane.locator("#open-parent").isHidden(), true, "the parent has no parent");
  await second.locator("#open-parent").click();
  await until(page, "the parent's pane focused", async () => (await pane.getAttribute("class"))!.split(" ").includes("focused"));
  assert.equal(await page.locator(".pane").count(), 2);
  assert.equal(await second.locator("#title").innerText(), "↳ count the files", "the child's pane keeps the child");

  // A reload replays the image from the store.
  await page.reload();
  await page.locator("#connection", { hasText: "Connected" }).waitFor();
  await until(page, "the image replayed", async () => (await page.locator(".pane").first().locator(".entry.user img.thumb").count()) === 1);
  assert.deepEqual(errors, []);
  await page.close();
});
