/**
 * Test harness: every test gets a real `threadline serve` with its own THREADLINE_HOME,
 * started through the client under test and stopped (then the home removed) when the
 * test ends. The scripted model keeps answers deterministic.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { TestContext } from "node:test";
import { ThreadlineClient, type SessionNotification } from "../src/index";

const repoRoot = resolve(__dirname, "../../../..");

/** The sidecar executable: `$THREADLINE_COMMAND`, else the repo's virtualenv. */
export function threadlineCommand(): string {
  const fromEnv = process.env.THREADLINE_COMMAND;
  if (fromEnv) return fromEnv;
  const venv = join(repoRoot, ".venv", "bin", "threadline");
  if (!existsSync(venv)) {
    throw new Error(`no sidecar at ${venv}; set THREADLINE_COMMAND`);
  }
  return venv;
}

export interface Harness {
  client: ThreadlineClient;
  home: string;
  /** Everything the server wrote to stderr, for failure messages. */
  stderr: () => string;
  /** Every notification received so far, in order. */
  notifications: SessionNotification[];
}

/** Spawn a sidecar for this test; `initialize` unless told not to. */
export async function startServer(
  t: TestContext,
  opts: {
    initialize?: boolean;
    setup?: (client: ThreadlineClient) => void;
    /** Reuse another harness's home (a restart); it is then not removed by this one. */
    home?: string;
  } = {},
): Promise<Harness> {
  const home = opts.home ?? mkdtempSync(join(tmpdir(), "threadline-ts-"));
  let log = "";
  const client = ThreadlineClient.spawn({
    command: threadlineCommand(),
    env: { THREADLINE_HOME: home },
    stderr: (chunk) => {
      log += chunk;
    },
  });
  const notifications: SessionNotification[] = [];
  client.onUpdate((n) => notifications.push(n));
  t.after(async () => {
    const code = await client.stop(5000);
    if (!opts.home) rmSync(home, { recursive: true, force: true });
    if (code !== 0 && code !== null && process.env.THREADLINE_TEST_VERBOSE) {
      console.error(`server exited ${code}:\n${log}`);
    }
  });
  opts.setup?.(client);
  if (opts.initialize ?? true) await client.initialize();
  return { client, home, stderr: () => log, notifications };
}

/** The model string for an inline scripted-provider script. */
export function scripted(script: { rounds: unknown[][]; summary?: unknown[] }): string {
  return `scripted:${JSON.stringify(script)}`;
}

/** A session/new cwd: absolute, and a real directory. */
export const CWD = tmpdir();

/** Concatenated `agent_message_chunk` text of one session, by message id. */
export function streamedText(notifications: SessionNotification[], sessionId: string) {
  const byMessage = new Map<string, string>();
  for (const n of notifications) {
    if (n.sessionId !== sessionId) continue;
    const u = n.update;
    if (u.sessionUpdate === "agent_message_chunk" && u.content.type === "text") {
      const id = u.messageId ?? "";
      byMessage.set(id, (byMessage.get(id) ?? "") + u.content.text);
    }
  }
  return byMessage;
}

/** A temporary folder, removed when the test ends. */
export function tempDir(t: TestContext, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Whether a process is still there. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Resolves when `predicate` holds, polling; rejects after `ms`. */
export async function waitFor(predicate: () => boolean, ms = 5000, what = "condition") {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
