/**
 * Entry point of the chat webview. Wires the page to the extension host through
 * `acquireVsCodeApi` when it exists; without it (a plain browser, tests) messages go
 * to the console so the page still works and can be driven by `window.postMessage`.
 */
import type { HostMessage, WebviewMessage } from "./messages";
import { initialState, reduce } from "./state";
import { ChatView, findElements } from "./view";

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
  const post = (message: WebviewMessage) => api.postMessage(message);
  const els = findElements();
  const state = initialState();
  const view = new ChatView(els, post);
  let scheduled = false;
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(() => {
      scheduled = false;
      view.render(state);
    });
  };

  window.addEventListener("message", (event: MessageEvent) => {
    const message = event.data as HostMessage | undefined;
    if (!message || typeof message !== "object" || typeof message.type !== "string") return;
    reduce(state, message);
    schedule();
  });

  const submit = () => {
    const text = els.input.value.trim();
    if (!text || state.running || state.compacting || state.sidecarDown !== null) return;
    post({ type: "prompt", text });
    els.input.value = "";
  };
  els.send.addEventListener("click", submit);
  els.input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      submit();
    }
  });
  els.interrupt.addEventListener("click", () => post({ type: "interrupt" }));
  els.compact.addEventListener("click", () => post({ type: "compact" }));
  els.newSession.addEventListener("click", () => post({ type: "newSession" }));
  els.restart.addEventListener("click", () => post({ type: "restartSidecar" }));
  els.sessionsButton.addEventListener("click", () => {
    if (!els.sessionsPanel.hidden) {
      els.sessionsPanel.hidden = true;
      return;
    }
    post({ type: "listSessions" });
  });
  els.modelSelect.addEventListener("change", () => {
    post({ type: "setModel", model: els.modelSelect.value });
  });

  view.render(state);
  post({ type: "ready" });
}

start();
