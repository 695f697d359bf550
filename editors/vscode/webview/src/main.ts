/**
 * Entry point of the chat webview. Wires the page to the extension host through
 * `acquireVsCodeApi` when it exists; without it (a plain browser, tests) messages go
 * to the console so the page still works and can be driven by `window.postMessage`.
 */
import { mountChat } from "./chat";
import type { HostMessage, WebviewMessage } from "./messages";

interface VsCodeApi {
  postMessage(message: unknown): void;
}
declare const acquireVsCodeApi: undefined | (() => VsCodeApi);

function hostApi(): VsCodeApi {
  if (typeof acquireVsCodeApi === "function") return acquireVsCodeApi();
  return { postMessage: (message) => console.debug("[threadline] no VS Code host:", message) };
}

function start(): void {
  const api = hostApi();
  const chat = mountChat(document, (message: WebviewMessage) => api.postMessage(message));
  window.addEventListener("message", (event: MessageEvent) => {
    const message = event.data as HostMessage | undefined;
    if (!message || typeof message !== "object" || typeof message.type !== "string") return;
    chat.receive(message);
  });
  api.postMessage({ type: "ready" } satisfies WebviewMessage);
}

start();
