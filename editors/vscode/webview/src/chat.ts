/**
 * One chat, mounted on a root element: the state, its rendering and the controls'
 * events. The VS Code webview mounts one on its page (main.ts); the desktop app mounts
 * one per pane. Returns the function that feeds it host messages.
 */
import type { HostMessage, WebviewMessage, WhileRunning } from "./messages";
import { initialState, isBusy, reduce, type ChatState } from "./state";
import { ChatView, findElements } from "./view";
import { Attachments, filesOf } from "./attachments";

export interface MountedChat {
  receive(message: HostMessage): void;
  readonly state: ChatState;
}

export function mountChat(root: ParentNode, post: (message: WebviewMessage) => void): MountedChat {
  const els = findElements(root);
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

  /**
   * Send what was typed. While the session works (a turn here or in another window, a
   * compaction) it is queued as the next turn, or with `steer` given to the running turn.
   */
  const attachments = new Attachments(els.attachments, (text) => {
    reduce(state, { type: "notice", level: "error", text });
    schedule();
  });
  const submit = (gesture: WhileRunning = "queue") => {
    const text = els.input.value.trim();
    if ((!text && !attachments.pending.length) || state.sidecarDown !== null) return;
    const images = attachments.take();
    const extra = images.length ? { images } : {};
    post(isBusy(state) ? { type: "prompt", text, whileRunning: gesture, ...extra } : { type: "prompt", text, ...extra });
    els.input.value = "";
  };
  // Images pasted into the input or dropped on the composer wait as thumbnails.
  els.input.addEventListener("paste", (event) => {
    const files = filesOf(event.clipboardData);
    if (!files.length) return;
    event.preventDefault();
    void attachments.add(files);
  });
  const composer = els.input.closest<HTMLElement>(".composer") ?? els.input;
  composer.addEventListener("dragover", (event) => {
    if (![...(event.dataTransfer?.types ?? [])].includes("Files")) return;
    event.preventDefault();
    composer.classList.add("dragging");
  });
  composer.addEventListener("dragleave", () => composer.classList.remove("dragging"));
  composer.addEventListener("drop", (event) => {
    composer.classList.remove("dragging");
    const files = filesOf(event.dataTransfer);
    if (!files.length) return;
    event.preventDefault();
    void attachments.add(files);
  });
  els.send.addEventListener("click", () => submit("queue"));
  els.steer.addEventListener("click", () => submit("steer"));
  els.input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      // Enter queues; Ctrl/Cmd+Enter steers the running turn.
      submit(event.ctrlKey || event.metaKey ? "steer" : "queue");
    }
  });
  els.interrupt.addEventListener("click", () => post({ type: "interrupt" }));
  els.compact.addEventListener("click", () => post({ type: "compact" }));
  els.newSession.addEventListener("click", () => post({ type: "newSession" }));
  els.openParent.addEventListener("click", () => {
    const sessionId = els.openParent.dataset.sessionId;
    if (sessionId) post({ type: "openParent", sessionId });
  });
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
  els.modeSelect.addEventListener("change", () => {
    post({ type: "setMode", mode: els.modeSelect.value });
  });
  els.toolsSelect.addEventListener("change", () => {
    post({ type: "setBuiltinTools", value: els.toolsSelect.value === "off" ? "off" : "on" });
  });
  view.render(state);

  return {
    state,
    receive(message) {
      reduce(state, message);
      schedule();
    },
  };
}
