/**
 * Test harness: a real `threadline serve` per test (own THREADLINE_HOME), started through
 * the extension's own `startSidecar`, and a sink that records what the webview would get.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { TestContext } from "node:test";
import type {
  CancellationToken,
  ChildProcessTerminals,
  CreateElicitationParams,
  CreateElicitationResult,
  RequestPermissionParams,
  RequestPermissionResult,
  ThreadlineClient,
  ToolCallCall,
  ToolCallCallResult,
} from "@threadline/client";
import { startSidecar } from "../src/core/sidecar";
import type { DocumentSource, DocumentWriter } from "../src/core/fileAccess";
import type { HostMessage } from "../webview/src/messages";

const repoRoot = resolve(__dirname, "../../../..");

export function threadlineCommand(): string {
  const fromEnv = process.env.THREADLINE_COMMAND;
  if (fromEnv) return fromEnv;
  const venv = join(repoRoot, ".venv", "bin", "threadline");
  if (!existsSync(venv)) throw new Error(`no sidecar at ${venv}; set THREADLINE_COMMAND`);
  return venv;
}

export interface TestHandlers {
  permission?: (p: RequestPermissionParams) => Promise<RequestPermissionResult>;
  toolCall?: (p: ToolCallCall) => Promise<ToolCallCallResult>;
  documents?: DocumentSource & DocumentWriter;
  terminals?: ChildProcessTerminals;
  elicitation?: (p: CreateElicitationParams, token: CancellationToken) => Promise<CreateElicitationResult>;
}

const noDocuments: DocumentSource & DocumentWriter = {
  documentText: () => undefined,
  writeOpenDocument: async () => false,
};

/** Start a sidecar for this test; it is stopped and its home removed afterwards. */
export async function sidecar(
  t: TestContext,
  handlers: TestHandlers = {},
  home = mkdtempSync(join(tmpdir(), "threadline-vscode-")),
): Promise<{ client: ThreadlineClient; home: string; log: () => string }> {
  let log = "";
  const client = await startSidecar(
    {
      command: threadlineCommand(),
      args: ["serve"],
      env: { THREADLINE_HOME: home },
      log: (line) => {
        log += line + "\n";
      },
      clientInfo: { name: "threadline-vscode-test", version: "0.0.0" },
    },
    {
      permission: handlers.permission ?? (async () => ({ outcome: { outcome: "cancelled" } })),
      toolCall:
        handlers.toolCall ??
        (async (p) => ({ content: [{ type: "text", text: `no tool ${p.name}` }], isError: true })),
      documents: handlers.documents ?? noDocuments,
      terminals: handlers.terminals,
      elicitation: handlers.elicitation,
    },
  );
  t.after(async () => {
    await client.stop(5000);
    rmSync(home, { recursive: true, force: true });
  });
  return { client, home, log: () => log };
}

/** A ChatSink that keeps every message. */
export class RecordingSink {
  readonly messages: HostMessage[] = [];
  post(message: HostMessage): void {
    this.messages.push(structuredClone(message));
  }
  of<T extends HostMessage["type"]>(type: T): Extract<HostMessage, { type: T }>[] {
    return this.messages.filter((m): m is Extract<HostMessage, { type: T }> => m.type === type);
  }
  /** Concatenated agent text of the recorded updates, per message id. */
  agentText(): Map<string, string> {
    const out = new Map<string, string>();
    for (const m of this.of("update")) {
      const u = m.notification.update;
      if (u.sessionUpdate === "agent_message_chunk" && u.content.type === "text") {
        const id = u.messageId ?? "";
        out.set(id, (out.get(id) ?? "") + u.content.text);
      }
    }
    return out;
  }
}

export function scripted(script: { rounds: unknown[][]; summary?: unknown[]; images?: boolean }): string {
  return `scripted:${JSON.stringify(script)}`;
}

export async function waitFor(predicate: () => boolean, ms = 5000, what = "condition") {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
