/**
 * Records the webview's input from a real session: `npm run record-fixture` drives the
 * extension's ChatController against a real sidecar (scripted model) and writes every
 * host→webview message to test/fixtures/chat-stream.json, which the Chromium test
 * replays. Re-record when the protocol or the controller changes.
 *
 * The session: turn 1 thinks, says something, calls the client tool `get_weather`, then
 * answers with Markdown (bold, inline code, a fenced block, and markup that must stay
 * text); turn 2 streams a little and hangs until it is interrupted. `marks.interruptAt`
 * is the index of the first message after the interrupt was requested.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { ThreadlineClient } from "@threadline/client";
import { ChatController } from "../src/core/chatController";
import { startSidecar } from "../src/core/sidecar";
import { threadlineCommand, waitFor } from "./sidecar";
import type { HostMessage } from "../webview/src/messages";

export const FIXTURE = resolve(__dirname, "../../test/fixtures/chat-stream.json");

const ANSWER =
  "It is **18°C** and sunny in Paris.\n\n" +
  "```json\n{\"city\": \"Paris\", \"temperature\": 18}\n```\n\n" +
  "Use `get_weather` again later. <b>This tag is text.</b>";

const TURN1 = {
  rounds: [
    [
      { thought: "The user asks about the weather, so I should call get_weather for Paris." },
      { text: "Let me check the weather." },
      { tool_call: { name: "get_weather", arguments: { city: "Paris" } } },
      { usage: { input_tokens: 120, output_tokens: 30 } },
    ],
    [
      // Short pauses keep the deltas apart, as a real model's would be.
      ...ANSWER.match(/.{1,12}/gs)!.flatMap((text) => [{ text }, { sleep: 0.015 }]),
      { usage: { input_tokens: 180, output_tokens: 42 } },
    ],
  ],
};

const TURN2 = {
  rounds: [[{ text: "Writing a long " }, { sleep: 0.05 }, { text: "story about " }, { hang: true }]],
};

export interface Recording {
  recordedWith: string;
  marks: { interruptAt: number };
  messages: HostMessage[];
}

/** Record the session described above (a fresh sidecar and home, removed afterwards). */
export async function record(): Promise<Recording> {
  const home = mkdtempSync(join(tmpdir(), "threadline-record-"));
  let client: ThreadlineClient | undefined;
  try {
    client = await startSidecar(
      {
        command: threadlineCommand(),
        args: ["serve"],
        env: { THREADLINE_HOME: home },
        log: () => undefined,
        clientInfo: { name: "threadline-vscode-recorder", version: "0.0.0" },
      },
      {
        permission: async () => ({ outcome: { outcome: "cancelled" } }),
        toolCall: async (call) => ({
          content: [{ type: "text", text: `18°C, sunny in ${String(call.arguments.city)}` }],
        }),
        documents: { documentText: () => undefined, writeOpenDocument: async () => false },
      },
    );
    const messages: HostMessage[] = [];
    const chat = new ChatController(client, { post: (m) => messages.push(structuredClone(m)) }, {
      cwd: () => "/home/user/project",
      tools: () => [
        {
          name: "get_weather",
          description: "Current weather for a city",
          inputSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
        },
      ],
      defaultModel: () => `scripted:${JSON.stringify(TURN1)}`,
    });
    await chat.handle({ type: "ready" });
    await chat.handle({ type: "prompt", text: "What's the weather in Paris?" });
    await chat.handle({ type: "setModel", model: `scripted:${JSON.stringify(TURN2)}` });
    const turn2 = chat.handle({ type: "prompt", text: "Now tell me a long story." });
    const before = messages.length;
    const turn2Text = () =>
      messages
        .slice(before)
        .map((m) =>
          m.type === "update" &&
          m.notification.update.sessionUpdate === "agent_message_chunk" &&
          m.notification.update.content.type === "text"
            ? m.notification.update.content.text
            : "",
        )
        .join("");
    // Chunks may be coalesced, so wait for the text, not for a number of updates.
    await waitFor(() => turn2Text() === "Writing a long story about ", 10_000, "turn 2 text");
    const interruptAt = messages.length;
    await chat.handle({ type: "interrupt" });
    await turn2;
    await chat.handle({ type: "listSessions" });
    const version = String((client.serverInfo?.agentInfo as { version?: string } | undefined)?.version ?? "?");
    return { recordedWith: `threadline ${version}`, marks: { interruptAt }, messages };
  } finally {
    await client?.stop(5000);
    rmSync(home, { recursive: true, force: true });
  }
}

if (require.main === module) {
  record().then((recording) => {
    writeFileSync(FIXTURE, JSON.stringify(recording, null, 1) + "\n");
    console.log(`recorded ${recording.messages.length} messages into ${FIXTURE}`);
  }).catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
