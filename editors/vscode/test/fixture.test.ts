/**
 * The webview test replays a recorded stream; this re-records it from the current
 * sidecar and checks that the recording still says the same thing (chunking may differ,
 * the content may not), so the fixture cannot silently go stale.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import type { HostMessage } from "../webview/src/messages";
import { FIXTURE, record, type Recording } from "./recordFixture";

function summary(messages: HostMessage[]) {
  const text = new Map<string, string>();
  const kinds = new Set<string>();
  const tools: string[] = [];
  const flow: string[] = [];
  let msgIndex = 0;
  const ids = new Map<string, number>();
  for (const m of messages) {
    if (m.type !== "update") {
      flow.push(m.type === "turnEnded" ? `turnEnded:${m.stopReason}` : m.type);
      continue;
    }
    const u = m.notification.update;
    kinds.add(u.sessionUpdate);
    if (u.sessionUpdate === "tool_call") tools.push(`${u.title}:${JSON.stringify(u.rawInput)}`);
    if ((u.sessionUpdate === "agent_message_chunk" || u.sessionUpdate === "agent_thought_chunk") && u.content.type === "text") {
      // Message ids are random: name them by order of first appearance.
      const id = u.messageId ?? "";
      if (!ids.has(id)) ids.set(id, msgIndex++);
      const key = `${u.sessionUpdate}#${ids.get(id)}`;
      text.set(key, (text.get(key) ?? "") + u.content.text);
    }
  }
  return { flow, kinds: [...kinds].sort(), tools, text: Object.fromEntries(text) };
}

test("the recorded chat stream matches what the current sidecar produces", async () => {
  const stored = JSON.parse(readFileSync(FIXTURE, "utf8")) as Recording;
  const fresh = await record();
  assert.deepEqual(summary(fresh.messages), summary(stored.messages), "re-run `npm run record-fixture`");
  const flow = (r: Recording) => r.messages.slice(0, r.marks.interruptAt).filter((m) => m.type !== "update").length;
  assert.equal(flow(fresh), flow(stored), "the interrupt mark sits at the same point of the flow");
});
