/**
 * Renders ChatState into the page. Entries are keyed and versioned, so streaming a
 * token re-renders one element, not the transcript. The static skeleton (toolbar,
 * composer) lives in media/chat.html; this module only fills it.
 */
import type { FileDiff } from "@threadline/client";
import { isBusy, type ChatState, type Entry, type ImageView, type ToolDiff } from "./state";
import { renderMarkdown } from "./markdown";
import { renderElicitation } from "./elicitation";
import { parseUnified, unifiedDiff, type DiffLine } from "./unifiedDiff";
import type { WebviewMessage } from "./messages";
import { editInPlace, snippetNodes } from "./find";
import { describeHit, describeSessions } from "./sessions";

export interface Elements {
  transcript: HTMLElement;
  modelSelect: HTMLSelectElement;
  modeSelect: HTMLSelectElement;
  toolsSelect: HTMLSelectElement;
  plan: HTMLElement;
  turnDiff: HTMLElement;
  queue: HTMLElement;
  elicitation: HTMLFormElement;
  interrupt: HTMLButtonElement;
  steer: HTMLButtonElement;
  send: HTMLButtonElement;
  input: HTMLTextAreaElement;
  /** The images pasted or dropped, waiting to be sent with the prompt. */
  attachments: HTMLElement;
  compact: HTMLButtonElement;
  sessionsButton: HTMLButtonElement;
  newSession: HTMLButtonElement;
  openParent: HTMLButtonElement;
  sessionsPanel: HTMLElement;
  status: HTMLElement;
  title: HTMLElement;
  banner: HTMLElement;
  restart: HTMLButtonElement;
  bannerText: HTMLElement;
}

/** The chat's elements inside `root` (the page in VS Code; one pane in the desktop app). */
export function findElements(root: ParentNode = document): Elements {
  const byId = <T extends HTMLElement>(id: string): T => {
    const el = root.querySelector(`#${id}`);
    if (!el) throw new Error(`chat.html lacks #${id}`);
    return el as T;
  };
  return {
    transcript: byId("transcript"),
    modelSelect: byId<HTMLSelectElement>("model"),
    modeSelect: byId<HTMLSelectElement>("mode"),
    toolsSelect: byId<HTMLSelectElement>("builtin-tools"),
    plan: byId("plan"),
    turnDiff: byId("turn-diff"),
    queue: byId("queue"),
    elicitation: byId<HTMLFormElement>("elicitation"),
    interrupt: byId<HTMLButtonElement>("interrupt"),
    steer: byId<HTMLButtonElement>("steer"),
    send: byId<HTMLButtonElement>("send"),
    input: byId<HTMLTextAreaElement>("input"),
    attachments: byId("attachments"),
    compact: byId<HTMLButtonElement>("compact"),
    sessionsButton: byId<HTMLButtonElement>("sessions"),
    newSession: byId<HTMLButtonElement>("new-session"),
    openParent: byId<HTMLButtonElement>("open-parent"),
    sessionsPanel: byId("sessions-panel"),
    status: byId("status"),
    title: byId("title"),
    banner: byId("sidecar-banner"),
    restart: byId<HTMLButtonElement>("restart-sidecar"),
    bannerText: byId("sidecar-banner-text"),
  };
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, className?: string, text?: string) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** Marked diff lines as a coloured block (`+` green, `-` red, hunk headers muted). */
export function diffBlock(lines: DiffLine[]): HTMLElement {
  const pre = el("pre", "diff-lines");
  const cls: Record<string, string> = { "+": "add", "-": "del", "@": "hunk", " ": "ctx" };
  pre.append(
    ...lines.map((line) => el("span", `diff-line ${cls[line.mark]}`, line.mark === "@" ? line.text : `${line.mark}${line.text}`)),
  );
  return pre;
}

/** An edit's diffs on its tool card: per file, its path and the unified diff. */
function toolDiffNodes(diffs: ToolDiff[]): HTMLElement[] {
  return diffs.flatMap((d) => [el("div", "tool-diff-path", d.oldText === null ? `${d.path} (new file)` : d.path), diffBlock(unifiedDiff(d.oldText, d.newText))]);
}

/** A file of the turn's diff, unfolded in place: its unified diff in colour. */
function inlineDiff(file: FileDiff): HTMLElement[] {
  if (!file.diff) return [];
  const details = el("details", "diff-inline");
  details.dataset.path = file.path;
  details.append(el("summary", undefined, "Show the diff"), diffBlock(parseUnified(file.diff)));
  return [details];
}

/** Images as thumbnails (a click shows one full width); a reference without bytes as its label. */
export function imageNodes(images: readonly ImageView[]): HTMLElement[] {
  return images.map((image) => {
    if (!image.src) return el("span", "image-ref", `[${image.label}]`);
    const img = el("img", "thumb");
    img.src = image.src;
    img.alt = image.label;
    img.title = `${image.label} (click to enlarge)`;
    img.addEventListener("click", () => img.classList.toggle("enlarged"));
    return img;
  });
}

/** Fill `box` with the images (once per change of them); hidden when there are none. */
function showImages(box: HTMLElement, images: readonly ImageView[] | undefined): void {
  const list = images ?? [];
  const signature = list.map((i) => `${i.label}:${i.src?.length ?? 0}:${i.src?.slice(-16) ?? ""}`).join("|");
  box.hidden = list.length === 0;
  if (box.dataset.signature === signature) return;
  box.dataset.signature = signature;
  box.replaceChildren(...imageNodes(list));
}

function pretty(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

const STATUS_LABEL: Record<string, string> = {
  pending: "pending",
  in_progress: "running",
  completed: "done",
  failed: "failed",
};

export class ChatView {
  private readonly rendered = new Map<string, { node: HTMLElement; version: number }>();
  private lastRevision = -1;
  private sessionsRevision: unknown = undefined;
  private searchRevision: unknown = undefined;
  private revealed = 0;
  private panelParts: { list: HTMLElement; results: HTMLElement; search: HTMLInputElement; toggle: HTMLButtonElement } | null =
    null;

  constructor(
    private readonly els: Elements,
    private readonly post: (message: WebviewMessage) => void,
  ) {}

  render(state: ChatState): void {
    if (state.revision === this.lastRevision) return;
    this.lastRevision = state.revision;
    this.renderEntries(state.entries);
    this.renderToolbar(state);
    this.renderPlan(state);
    this.renderTurnDiff(state);
    this.renderQueue(state);
    renderElicitation(this.els.elicitation, state.elicitation, this.post);
    this.renderSessions(state);
    this.renderReveal(state);
  }

  /** Scroll a search hit's message (or tool call) into view and mark it for a moment. */
  private renderReveal(state: ChatState): void {
    const target = state.reveal;
    if (!target || target.seq === this.revealed) return;
    const { transcript } = this.els;
    const node = target.toolCallId
      ? transcript.querySelector<HTMLElement>(`[data-tool-call-id="${CSS.escape(target.toolCallId)}"]`)
      : target.messageId
        ? transcript.querySelector<HTMLElement>(`[data-message-id="${CSS.escape(target.messageId)}"]`)
        : null;
    // The replay may still be arriving: try again at the next render.
    if (!node) return;
    this.revealed = target.seq;
    for (const old of transcript.querySelectorAll(".search-target")) old.classList.remove("search-target");
    node.classList.add("search-target");
    node.scrollIntoView({ block: "center" });
  }

  private renderEntries(entries: Entry[]): void {
    const { transcript } = this.els;
    const live = new Set(entries.map((e) => e.key));
    for (const [key, { node }] of this.rendered) {
      if (!live.has(key)) {
        node.remove();
        this.rendered.delete(key);
      }
    }
    const stick = transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 40;
    let previous: HTMLElement | null = null;
    for (const entry of entries) {
      let slot = this.rendered.get(entry.key);
      if (!slot) {
        slot = { node: this.create(entry), version: -1 };
        this.rendered.set(entry.key, slot);
      }
      if (slot.version !== entry.version) {
        this.fill(slot.node, entry);
        slot.version = entry.version;
      }
      const expectedNext: ChildNode | null = previous ? previous.nextSibling : transcript.firstChild;
      if (expectedNext !== slot.node) transcript.insertBefore(slot.node, expectedNext);
      previous = slot.node;
    }
    if (stick) transcript.scrollTop = transcript.scrollHeight;
  }

  private create(entry: Entry): HTMLElement {
    switch (entry.kind) {
      case "thought": {
        const details = el("details", "entry thought");
        details.append(el("summary", undefined, "Thinking"), el("div", "body"));
        return details;
      }
      case "tool": {
        const card = el("div", "entry tool");
        card.dataset.toolCallId = entry.toolCallId;
        const head = el("div", "tool-head");
        head.append(el("span", "tool-icon", "⚙"), el("span", "tool-title"), el("span", "badge"));
        const input = el("details", "tool-input");
        input.append(el("summary", undefined, "Input"), el("pre", "json"));
        card.append(head, input, el("div", "tool-diff"), el("pre", "tool-output"), el("div", "images tool-images"));
        return card;
      }
      case "notice":
        return el("div", `entry notice ${entry.level}`);
      case "note": {
        const node = el("div", "entry note");
        node.append(el("div", "role", "Threadline → model"), el("div", "body"));
        node.title = "The engine told the model this for one request; it is not part of the history";
        return node;
      }
      case "summary": {
        const details = el("details", "entry summary");
        details.open = true;
        details.append(el("summary", undefined, "Summary of the earlier conversation"), el("div", "body"));
        details.title = "Written by a compaction: the model sees this instead of the older messages";
        return details;
      }
      default: {
        const node = el("div", `entry ${entry.kind}`);
        node.append(el("div", "role", entry.kind === "user" ? "You" : "Assistant"), el("div", "body"));
        if (entry.kind === "user") node.append(el("div", "images"));
        return node;
      }
    }
  }

  private fill(node: HTMLElement, entry: Entry): void {
    switch (entry.kind) {
      case "thought":
        node.querySelector(".body")!.textContent = entry.text;
        return;
      case "tool": {
        node.querySelector(".tool-title")!.textContent = entry.title;
        const badge = node.querySelector<HTMLElement>(".badge")!;
        const status = entry.cancelled ? "cancelled" : entry.status;
        badge.textContent = STATUS_LABEL[status] ?? status;
        node.dataset.status = status;
        node.querySelector(".tool-input pre")!.textContent = pretty(entry.input);
        const output = node.querySelector<HTMLElement>(".tool-output")!;
        output.textContent = entry.output;
        output.hidden = entry.output === "";
        const diff = node.querySelector<HTMLElement>(".tool-diff")!;
        const signature = JSON.stringify(entry.diffs);
        if (diff.dataset.signature !== signature) {
          diff.dataset.signature = signature;
          diff.replaceChildren(...toolDiffNodes(entry.diffs));
        }
        diff.hidden = entry.diffs.length === 0;
        showImages(node.querySelector<HTMLElement>(".tool-images")!, entry.images);
        if (entry.childSessionId) this.childControls(node, entry.childSessionId, entry.status === "in_progress" || entry.status === "pending");
        return;
      }
      case "notice":
        node.textContent = entry.text;
        return;
      case "note":
        node.querySelector(".body")!.textContent = entry.text;
        return;
      case "summary":
        renderMarkdown(node.querySelector<HTMLElement>(".body")!, entry.text);
        return;
      case "user":
        node.querySelector(".body")!.textContent = entry.text;
        showImages(node.querySelector<HTMLElement>(".images")!, entry.images);
        if (entry.messageId) node.dataset.messageId = entry.messageId;
        this.markCompacted(node, entry.compacted);
        this.forkButton(node, entry.messageId);
        this.rewindButton(node, entry.messageId);
        return;
      case "assistant":
        renderMarkdown(node.querySelector<HTMLElement>(".body")!, entry.text);
        if (entry.messageId) node.dataset.messageId = entry.messageId;
        this.markCompacted(node, entry.compacted);
        this.forkButton(node, entry.messageId);
        return;
    }
  }

  /**
   * A `delegate` call's card: the child's progress (then its answer) in a fold the user
   * can close, and a button that opens the child session. Made once; the text keeps
   * being filled.
   */
  private childControls(card: HTMLElement, childSessionId: string, running: boolean): void {
    card.classList.add("delegate");
    card.dataset.childSessionId = childSessionId;
    let fold = card.querySelector<HTMLDetailsElement>("details.child-progress");
    if (!fold) {
      fold = el("details", "child-progress");
      fold.open = true;
      const summary = el("summary");
      summary.append(el("span", "child-label"));
      const open = el("button", "open-child", "Open child session");
      open.title = "Open the child session this call runs (its whole transcript; live while it runs)";
      open.addEventListener("click", (event) => {
        event.preventDefault();
        this.post({ type: "openChild", sessionId: card.dataset.childSessionId! });
      });
      summary.append(open);
      fold.append(summary, card.querySelector(".tool-output")!);
      card.append(fold);
    }
    fold.dataset.running = String(running);
    fold.querySelector(".child-label")!.textContent = running ? "The sub-agent's progress" : "What the sub-agent did";
  }

  private markCompacted(node: HTMLElement, compacted: boolean | undefined): void {
    node.classList.toggle("compacted", compacted === true);
    if (compacted) node.title = "Summarised by a compaction: the model no longer sees this message";
  }

  /** "Fork from here": needs the message id the server gave the message. */
  private forkButton(node: HTMLElement, messageId: string | null): void {
    this.messageButton(node, messageId, "fork", "Fork from here", "Start a new session that branches after this message");
  }

  /** "Rewind to here (files too)": on the user's prompts, which a rewind ends before. */
  private rewindButton(node: HTMLElement, messageId: string | null): void {
    this.messageButton(
      node,
      messageId,
      "rewind",
      "Rewind to here",
      "End the session before this message and put the files it changed since back (the later turns are kept in a new session)",
    );
  }

  /** A button beside a message's role that posts `{type: action, messageId}` (once per node). */
  private messageButton(node: HTMLElement, messageId: string | null, action: "fork" | "rewind", label: string, title: string): void {
    if (!messageId || node.querySelector(`.${action}`)) return;
    const button = el("button", action, label);
    button.title = title;
    button.addEventListener("click", () => this.post({ type: action, messageId }));
    node.querySelector(".role")?.append(button);
  }

  /** The agent's plan as a checklist above the input. */
  private renderPlan(state: ChatState): void {
    const { plan } = this.els;
    const signature = JSON.stringify(state.plan);
    if (plan.dataset.signature === signature) return;
    plan.dataset.signature = signature;
    plan.hidden = state.plan.length === 0;
    const mark: Record<string, string> = { pending: "☐", in_progress: "◐", completed: "☑" };
    plan.replaceChildren(
      ...state.plan.map((entry) => {
        const status = entry.status ?? "pending";
        const item = el("li", `plan-entry ${status}`);
        item.dataset.status = status;
        item.dataset.priority = entry.priority ?? "medium";
        item.append(el("span", "plan-mark", mark[status] ?? "☐"), el("span", "plan-text", entry.content));
        item.title = `${status.replace("_", " ")}, ${entry.priority ?? "medium"} priority`;
        return item;
      }),
    );
  }

  /** The last turn's changed files; each opens a diff editor. */
  private renderTurnDiff(state: ChatState): void {
    const box = this.els.turnDiff;
    const diff = state.turnDiff;
    const signature = JSON.stringify([diff, state.rewindId]);
    if (box.dataset.signature === signature) return;
    box.dataset.signature = signature;
    const rewindId = state.rewindId;
    const undo = rewindId ? [this.undoRewindButton(rewindId)] : [];
    box.hidden = (!diff || diff.files.length === 0) && !rewindId;
    if (!diff || diff.files.length === 0) {
      box.replaceChildren(...undo);
      return;
    }
    const n = diff.files.length;
    const heading = el("div", "turn-diff-heading", `The last turn changed ${n} file${n === 1 ? "" : "s"}`);
    const files = diff.files.map((file) => {
      const button = el("button", "diff-file");
      button.dataset.path = file.path;
      button.dataset.status = file.status;
      const counts = file.binary ? "binary" : `+${file.additions ?? 0} −${file.deletions ?? 0}`;
      button.append(el("span", "diff-path", file.path), el("span", "diff-counts", `${file.status} ${counts}`));
      button.title = "Open a diff editor: the file before the turn and now";
      button.addEventListener("click", () => this.post({ type: "openDiff", path: file.path }));
      return [button, ...inlineDiff(file)];
    });
    box.replaceChildren(...undo, heading, ...files.flat());
  }

  private undoRewindButton(rewindId: string): HTMLButtonElement {
    const button = el("button", "undo-rewind", "Undo rewind");
    button.title = "Bring back the turns the rewind cut, and their files (until the next prompt)";
    button.addEventListener("click", () => this.post({ type: "unrewind", rewindId }));
    return button;
  }

  /**
   * The prompts waiting while the session works, in the order they run: each can be
   * edited in place or removed; held ones (after an interrupt or a crash) can be resumed.
   */
  private renderQueue(state: ChatState): void {
    const box = this.els.queue;
    const signature = JSON.stringify([state.queue, state.running, state.sessionState]);
    if (box.dataset.signature === signature) return;
    box.dataset.signature = signature;
    // A steer waiting for the turn's next step is in the transcript already (the server
    // shows it there when it is sent): the box lists what runs as turns of its own.
    const waiting = state.queue.filter((q) => q.state !== "taken" && q.mode === "queue");
    box.hidden = waiting.length === 0;
    if (!waiting.length) {
      box.replaceChildren();
      return;
    }
    const heading = el("div", "queue-heading");
    const held = waiting.some((q) => q.state === "held");
    heading.append(el("span", undefined, held ? `Held (${waiting.length}): run them with Resume` : `Queued (${waiting.length})`));
    if (held) {
      const resume = el("button", "queue-resume", "Resume");
      resume.title = "Run the held prompts, in order";
      resume.addEventListener("click", () => this.post({ type: "queueResume" }));
      heading.append(resume);
    }
    const clear = el("button", "queue-clear", "Clear");
    clear.title = "Remove every waiting prompt (the running turn goes on)";
    clear.addEventListener("click", () => this.post({ type: "queueRemove" }));
    heading.append(clear);
    if (state.running || state.sessionState === "running" || state.sessionState === "requires_action") {
      const stop = el("button", "queue-stop", "Stop all");
      stop.title = "Interrupt the running turn and clear the queue";
      stop.addEventListener("click", () => this.post({ type: "interrupt", clearQueue: true }));
      heading.append(stop);
    }
    const rows = waiting.map((q) => {
      const row = el("div", `queued ${q.state}`);
      row.dataset.id = q.id;
      const text = el("span", "queued-text", q.prompt.map((b) => (b.type === "text" ? b.text : `[${b.type}]`)).join("\n"));
      const mode = el("span", "queued-mode", q.state);
      const edit = el("button", "queued-edit", "Edit");
      edit.title = "Change this prompt before it runs";
      edit.addEventListener("click", () =>
        editInPlace(row, text, text.textContent ?? "", (value) => this.post({ type: "queueEdit", id: q.id, text: value })),
      );
      const remove = el("button", "queued-remove", "Remove");
      remove.title = "Take this prompt out of the queue";
      remove.addEventListener("click", () => this.post({ type: "queueRemove", id: q.id }));
      row.append(text, mode, edit, remove);
      return row;
    });
    box.replaceChildren(heading, ...rows);
  }

  private renderToolbar(state: ChatState): void {
    const { modelSelect, interrupt, send, steer, compact, status, title, banner, bannerText } = this.els;
    banner.hidden = state.sidecarDown === null;
    bannerText.textContent = state.sidecarDown ? `The Threadline sidecar is not running: ${state.sidecarDown}` : "";
    const busy = isBusy(state);
    // A turn runs (here or in another window): it can be interrupted and steered.
    const turn = state.running || state.sessionState === "running" || state.sessionState === "requires_action";
    const options = state.models.map((m) => {
      const option = el("option", undefined, m.name);
      option.value = m.id;
      if (m.description) option.title = m.description;
      return option;
    });
    if (state.currentModel && !state.models.some((m) => m.id === state.currentModel)) {
      const option = el("option", undefined, state.currentModel);
      option.value = state.currentModel;
      options.push(option);
    }
    const signature = options.map((o) => o.value).join("\n");
    if (modelSelect.dataset.signature !== signature) {
      modelSelect.replaceChildren(...options);
      modelSelect.dataset.signature = signature;
    }
    if (state.currentModel) modelSelect.value = state.currentModel;
    modelSelect.disabled = busy;

    const { modeSelect } = this.els;
    const modeSignature = state.modes.map((m) => m.id).join("\n");
    if (modeSelect.dataset.signature !== modeSignature) {
      modeSelect.replaceChildren(
        ...state.modes.map((m) => {
          const option = el("option", undefined, m.name);
          option.value = m.id;
          if (m.description) option.title = m.description;
          return option;
        }),
      );
      modeSelect.dataset.signature = modeSignature;
    }
    modeSelect.hidden = state.modes.length === 0;
    if (state.currentMode) modeSelect.value = state.currentMode;
    modeSelect.disabled = busy || !state.sessionId;

    const { toolsSelect } = this.els;
    toolsSelect.hidden = state.builtinTools === null;
    if (state.builtinTools) toolsSelect.value = state.builtinTools;
    toolsSelect.disabled = busy || !state.sessionId;

    interrupt.disabled = !turn;
    interrupt.classList.toggle("active", turn);
    // Typing never stops: while the session works, Send queues and Steer joins the turn.
    send.disabled = state.sidecarDown !== null;
    send.textContent = busy ? "Queue" : "Send";
    send.title = busy ? "Run this after the current work (Enter)" : "Send (Enter)";
    steer.hidden = !turn;
    steer.disabled = state.sidecarDown !== null;
    compact.disabled = busy || !state.sessionId;
    (this.els.transcript.parentElement ?? document.body).classList.toggle("running", turn);

    title.textContent = state.title ?? (state.sessionId ? "Untitled session" : "New session");
    title.title = state.sessionId ?? "";

    const parts: string[] = [];
    const owner = state.owner;
    if (owner && !owner.here && state.sessionState !== "idle") {
      parts.push(`${state.sessionState.replace("_", " ")} in another window (pid ${owner.pid}${owner.host ? ` on ${owner.host}` : ""})`);
    } else if (state.sessionState === "requires_action") parts.push("Waiting for you…");
    else if (turn) parts.push("Generating…");
    if (state.compacting) parts.push("Compacting…");
    if (state.contextUsed !== null) {
      const size = state.contextSize ? ` / ${state.contextSize.toLocaleString("en-US")}` : "";
      parts.push(`context ${state.contextUsed.toLocaleString("en-US")}${size} tokens`);
    }
    const used = state.lastUsage;
    if (used && ((used.inputTokens ?? 0) > 0 || (used.outputTokens ?? 0) > 0)) {
      parts.push(`last turn ${used.inputTokens ?? 0} in · ${used.outputTokens ?? 0} out`);
    }
    if (!state.compacting && state.compaction?.status === "in_progress") parts.push("Compacting…");
    if (state.parentSessionId) {
      const parent = `“${state.parentTitle ?? "an untitled session"}”`;
      parts.push(state.kind === "child" ? `sub-agent of ${parent}` : `fork of ${parent}`);
    }
    status.textContent = parts.join(" · ");
    // The way back: a sub-agent's (or a fork's) parent session.
    this.els.openParent.hidden = !state.parentSessionId;
    this.els.openParent.dataset.sessionId = state.parentSessionId ?? "";
    this.els.openParent.title = state.parentSessionId
      ? `Open ${state.kind === "child" ? "the session that delegated to this sub-agent" : "the session this was forked from"}: “${state.parentTitle ?? "an untitled session"}”`
      : "";
  }

  /**
   * The sessions panel: a search box over every message (hits with their snippets),
   * the list with Rename and Archive on each row, and a switch to the archived ones.
   * The box and the switch are made once, so typing is never interrupted by a redraw.
   */
  private panel(): NonNullable<ChatView["panelParts"]> {
    if (this.panelParts) return this.panelParts;
    const panel = this.els.sessionsPanel;
    const search = el("input", "session-search");
    search.type = "search";
    search.placeholder = "Search every session…";
    search.setAttribute("aria-label", "Search sessions");
    let timer: ReturnType<typeof setTimeout> | undefined;
    search.addEventListener("input", () => {
      clearTimeout(timer);
      timer = setTimeout(() => this.post({ type: "search", query: search.value.trim() }), 150);
    });
    const toggle = el("button", "toggle-archived");
    toggle.addEventListener("click", () =>
      this.post({ type: "listSessions", archived: toggle.dataset.archived !== "true" }),
    );
    const head = el("div", "panel-head");
    head.append(search, toggle);
    this.panelParts = { list: el("div", "session-list"), results: el("div", "search-results"), search, toggle };
    panel.replaceChildren(head, this.panelParts.results, this.panelParts.list);
    return this.panelParts;
  }

  private renderSessions(state: ChatState): void {
    if (this.sessionsRevision === state.sessions && this.searchRevision === state.search) return;
    this.sessionsRevision = state.sessions;
    this.searchRevision = state.search;
    const panel = this.els.sessionsPanel;
    if (!state.sessions && !state.search) {
      panel.hidden = true;
      return;
    }
    const parts = this.panel();
    parts.toggle.dataset.archived = String(state.sessionsArchived);
    parts.toggle.textContent = state.sessionsArchived ? "Show active" : "Show archived";
    parts.toggle.title = state.sessionsArchived ? "List the sessions not archived" : "List the archived sessions";
    this.renderHits(state, parts.results);
    parts.list.hidden = state.search !== null;
    const sessions = state.sessions ?? [];
    const rows = describeSessions(sessions);
    const items = sessions.map((s) => {
      const row = rows.get(s.sessionId)!;
      const line = el("div", "session-row");
      line.dataset.sessionId = s.sessionId;
      const button = el("button", "session");
      button.dataset.sessionId = s.sessionId;
      button.append(el("span", "session-title", row.label), el("span", "session-meta", row.detail));
      if (s.sessionId === state.sessionId) button.classList.add("current");
      button.addEventListener("click", () => {
        this.post({ type: "resume", sessionId: s.sessionId });
        panel.hidden = true;
      });
      const rename = el("button", "rename", "Rename");
      rename.title = "Give this session another title";
      rename.addEventListener("click", () =>
        editInPlace(line, button, s.title ?? "", (title) =>
          this.post({ type: "rename", sessionId: s.sessionId, title, relist: true }),
        ),
      );
      const archived = state.sessionsArchived;
      const archive = el("button", "archive", archived ? "Unarchive" : "Archive");
      archive.title = archived
        ? "Put this session back in the list"
        : "Take this session out of the list (it stays searchable and can be opened)";
      archive.addEventListener("click", () => this.post({ type: "archive", sessionId: s.sessionId, archived: !archived, relist: true }));
      const actions = el("span", "session-actions");
      actions.append(rename, archive);
      line.append(button, actions);
      return line;
    });
    const empty = state.sessionsArchived ? "No archived sessions" : "No sessions yet";
    const heading = el("div", "panel-heading", sessions.length ? (state.sessionsArchived ? "Archived sessions" : "Sessions") : empty);
    parts.list.replaceChildren(heading, ...items);
    panel.hidden = false;
  }

  private renderHits(state: ChatState, results: HTMLElement): void {
    const search = state.search;
    results.hidden = search === null;
    if (!search) {
      results.replaceChildren();
      return;
    }
    const heading = el(
      "div",
      "panel-heading",
      search.error ?? (search.hits.length ? `Found in ${search.hits.length} place${search.hits.length === 1 ? "" : "s"}` : "Nothing found"),
    );
    const hits = search.hits.map((hit) => {
      const row = describeHit(hit);
      const button = el("button", "hit");
      button.dataset.sessionId = hit.sessionId;
      if (hit.messageId) button.dataset.messageId = hit.messageId;
      const snippet = el("span", "hit-snippet");
      snippet.append(...snippetNodes(hit.snippet));
      button.append(el("span", "session-title", row.label), el("span", "session-meta", row.detail), snippet);
      button.addEventListener("click", () => {
        this.post({ type: "open", sessionId: hit.sessionId, messageId: hit.messageId });
        this.els.sessionsPanel.hidden = true;
      });
      return button;
    });
    results.replaceChildren(heading, ...hits);
  }
}
