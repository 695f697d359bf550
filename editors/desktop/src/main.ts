/**
 * The desktop app: the VS Code chat (the same webview code and the same controller)
 * in panes side by side, a tree of sessions where each fork branches from its parent
 * at the message it was forked at, search over titles and text, and a picture of each
 * pane's context. Talks to its own `threadline serve` through `threadline desktop`'s
 * WebSocket bridge.
 */
import type { CreateElicitationParams, Message, SearchHit, SessionInfo } from "@threadline/client";
import { ChatController } from "../../vscode/src/core/chatController";
import { mountChat, type MountedChat } from "../../vscode/webview/src/chat";
import { editInPlace, snippetNodes } from "../../vscode/webview/src/find";
import type { HostMessage, WebviewMessage } from "../../vscode/webview/src/messages";
import { describeHit, describeSessions } from "../../vscode/webview/src/sessions";
import { contextParts, renderPicture, type ContextParts } from "./context";
import { buildTree, type TreeNode } from "./tree";
import { WsClient } from "./wsClient";

const $ = <T extends HTMLElement>(selector: string, root: ParentNode = document) => {
  const el = root.querySelector(selector);
  if (!el) throw new Error(`index.html lacks ${selector}`);
  return el as T;
};

const cwd = document.querySelector<HTMLMetaElement>('meta[name="threadline-cwd"]')?.content ?? "";

class Pane {
  readonly root: HTMLElement;
  readonly chat: MountedChat;
  readonly controller: ChatController;
  private before: ContextParts | null = null;
  private after: ContextParts | null = null;

  constructor(
    private readonly app: App,
    client: WsClient,
  ) {
    const template = $<HTMLTemplateElement>("#pane-template");
    this.root = (template.content.firstElementChild as HTMLElement).cloneNode(true) as HTMLElement;
    this.chat = mountChat(this.root, (m) => {
      // The desktop app owns the sidecar's connection: Restart reconnects every pane.
      if (m.type === "restartSidecar") void app.restart();
      else void this.controller.handle(m as WebviewMessage);
    });
    this.controller = new ChatController(
      client,
      { post: (m) => this.receive(m) },
      {
        cwd: () => cwd,
        tools: () => [],
        defaultModel: () => undefined,
        confirm: async (question) => window.confirm(question),
        // A delegate call's child opens beside its parent, in a pane of its own.
        openChild: (sessionId) => app.open(sessionId, true),
        // Its Parent button: the pane that shows the parent, else a new one beside.
        openParent: (sessionId) => app.bringUp(sessionId),
      },
    );
    $<HTMLButtonElement>(".close-pane", this.root).addEventListener("click", () => app.closePane(this));
    this.root.addEventListener("focusin", () => app.focus(this));
    this.root.addEventListener("mousedown", () => app.focus(this));
  }

  get sessionId(): string | null {
    return this.chat.state.sessionId;
  }

  private receive(message: HostMessage): void {
    // The status line says what the context bar says: the server's count of the next
    // request (`session/context`), not a turn's last request or a stored figure.
    if (message.type === "context" && this.after) message = { type: "context", used: this.after.used, size: this.after.size };
    this.chat.receive(message);
    $(".pane-label", this.root).textContent = this.chat.state.title ?? "New session";
    switch (message.type) {
      case "session":
        this.before = null;
        this.after = null;
        this.app.refreshTree();
        this.app.remember();
        void this.measure();
        break;
      case "update":
        // A new title (the first prompt's) or a prompt stored: the tree says so at once.
        if (message.notification.update.sessionUpdate === "session_info_update") this.app.refreshTree();
        break;
      case "turnStarted":
        this.app.refreshTree();
        break;
      case "turnEnded":
        this.app.refreshTree();
        void this.measure();
        break;
      case "compacted":
        this.app.refreshTree();
        void this.measure(true);
        break;
    }
  }

  /** Redraw the context picture; after a compaction the previous one stays as "before". */
  private async measure(compacted = false): Promise<void> {
    const sid = this.sessionId;
    if (!sid) return this.draw();
    let parts: ContextParts;
    try {
      parts = contextParts(await this.app.client.context(sid));
    } catch {
      return;
    }
    if (compacted && this.after) this.before = this.after;
    else if (!compacted) this.before = null;
    this.after = parts;
    this.draw();
    this.chat.receive({ type: "context", used: parts.used, size: parts.size });
  }

  private draw(): void {
    renderPicture($(".context-picture .bars", this.root), this.before, this.after);
  }

  open(sessionId: string, messageId: string | null = null): Promise<void> {
    return messageId
      ? this.controller.handle({ type: "open", sessionId, messageId })
      : this.controller.handle({ type: "resume", sessionId });
  }
}

class App {
  readonly panes: Pane[] = [];
  private focused: Pane | null = null;
  private sessions: SessionInfo[] = [];
  private refreshing = false;
  private again = false;
  /** The tree lists the archived sessions instead of the others. */
  private archived = false;
  private searchTimer: ReturnType<typeof setTimeout> | undefined;
  /** Bumped per search, so a slow answer to an older query is dropped. */
  private searchSeq = 0;

  constructor(readonly client: WsClient) {
    $<HTMLButtonElement>("#open-pane").addEventListener("click", () => this.addPane());
    $<HTMLInputElement>("#search").addEventListener("input", () => {
      clearTimeout(this.searchTimer);
      this.searchTimer = setTimeout(() => void this.search(), 150);
    });
    const toggle = $<HTMLButtonElement>("#show-archived");
    toggle.addEventListener("click", () => {
      this.archived = !this.archived;
      toggle.setAttribute("aria-pressed", String(this.archived));
      toggle.textContent = this.archived ? "Show active" : "Show archived";
      this.refreshTree();
    });
  }

  /**
   * `session/search` over every session (archived ones too): the hits, best first, with
   * their snippets, take the tree's place until the box is cleared.
   */
  private async search(): Promise<void> {
    const query = $<HTMLInputElement>("#search").value.trim();
    const seq = ++this.searchSeq;
    const box = $("#hits");
    if (!query) {
      box.hidden = true;
      box.replaceChildren();
      $("#tree").hidden = false;
      return;
    }
    let hits: SearchHit[] = [];
    let problem: string | null = null;
    try {
      hits = (await this.client.search({ query, limit: 50 })).hits;
    } catch (err) {
      problem = err instanceof Error ? err.message : String(err);
    }
    if (seq !== this.searchSeq) return;
    const note = document.createElement("p");
    note.className = "node-meta";
    note.textContent = problem ?? (hits.length ? `Found in ${hits.length} place${hits.length === 1 ? "" : "s"}` : "No session matches.");
    box.replaceChildren(note, ...hits.map((hit) => this.hitButton(hit)));
    box.hidden = false;
    $("#tree").hidden = true;
  }

  private hitButton(hit: SearchHit): HTMLButtonElement {
    const row = describeHit(hit);
    const button = document.createElement("button");
    button.className = "hit";
    button.dataset.sessionId = hit.sessionId;
    if (hit.messageId) button.dataset.messageId = hit.messageId;
    button.title = "Click: open at this message · Shift+click: open beside";
    const snippet = textSpan("hit-snippet", "");
    snippet.append(...snippetNodes(hit.snippet));
    button.append(textSpan("node-title", row.label), textSpan("node-meta", row.detail), snippet);
    button.addEventListener("click", (e) => void this.open(hit.sessionId, e.shiftKey, hit.messageId));
    return button;
  }

  /** Rename in place (Enter keeps the new title, Escape or leaving the field not). */
  private rename(button: HTMLElement, session: SessionInfo): void {
    editInPlace(button.parentElement!, button, session.title ?? "", async (title) => {
      try {
        await this.client.setTitle(session.sessionId, title);
      } catch (err) {
        window.alert(`Not renamed: ${err instanceof Error ? err.message : String(err)}`);
      }
      this.refreshTree();
    });
  }

  /** Archive (or, in the archived list, unarchive) a session; panes showing it keep it. */
  private async archive(session: SessionInfo): Promise<void> {
    await this.client.archive(session.sessionId, !this.archived);
    this.refreshTree();
  }

  /** Keep the panes' sessions in the address (`#panes=…`), so a reload reopens them. */
  remember(): void {
    const ids = this.panes.map((p) => p.sessionId ?? "").join(",");
    history.replaceState(null, "", `${location.pathname}${location.search}#panes=${ids}`);
  }

  /** The sessions the address names, one per pane ("" for a new chat). */
  static remembered(): string[] {
    const found = /(?:^#|&)panes=([^&]*)/.exec(location.hash);
    return found ? found[1]!.split(",") : [];
  }

  /** After the sidecar was lost: a new connection (and sidecar), every pane reloaded. */
  async restart(): Promise<void> {
    const status = $("#connection");
    status.textContent = "Reconnecting…";
    try {
      await this.client.reconnect();
    } catch (err) {
      status.textContent = `Not connected: ${err instanceof Error ? err.message : String(err)}`;
      return;
    }
    status.textContent = connectedText(this.client);
    status.classList.remove("error");
    // Each pane takes prompts again once its session is back on screen.
    for (const pane of this.panes) {
      const sid = pane.sessionId;
      await (sid ? pane.open(sid) : pane.controller.handle({ type: "ready" }));
      pane.chat.receive({ type: "sidecar", down: null });
    }
    this.refreshTree();
  }

  addPane(): Pane {
    const pane = new Pane(this, this.client);
    this.panes.push(pane);
    $("#panes").append(pane.root);
    pane.chat.receive({ type: "reset" });
    void pane.controller.handle({ type: "ready" });
    this.focus(pane);
    return pane;
  }

  closePane(pane: Pane): void {
    if (this.panes.length === 1) return;
    pane.controller.dispose();
    pane.root.remove();
    this.panes.splice(this.panes.indexOf(pane), 1);
    if (this.focused === pane) this.focus(this.panes[0]!);
    this.remember();
  }

  focus(pane: Pane): void {
    this.focused = pane;
    for (const p of this.panes) p.root.classList.toggle("focused", p === pane);
  }

  /** The pane that shows `sessionId`, focused and scrolled into view; else it opens beside. */
  async bringUp(sessionId: string): Promise<void> {
    const pane = this.panes.find((p) => p.sessionId === sessionId);
    if (!pane) return this.open(sessionId, true);
    this.focus(pane);
    pane.root.scrollIntoView({ block: "nearest", inline: "nearest" });
  }

  /** The pane that answers a question about `sessionId`: one showing it, else the focused one. */
  paneFor(sessionId: string): Pane | null {
    return this.panes.find((p) => p.sessionId === sessionId) ?? this.focused ?? this.panes[0] ?? null;
  }

  /** Open a session in the focused pane, or beside it in a new one (at a search hit's message). */
  async open(sessionId: string, beside: boolean, messageId: string | null = null): Promise<void> {
    const pane = beside || !this.focused ? this.addPane() : this.focused;
    await pane.open(sessionId, messageId);
  }

  refreshTree(): void {
    if (this.refreshing) {
      this.again = true;
      return;
    }
    this.refreshing = true;
    void (async () => {
      try {
        do {
          this.again = false;
          const filter = this.archived ? { _meta: { threadline: { archived: true } } } : {};
          this.sessions = (await this.client.list(filter)).sessions;
          await this.renderTree();
        } while (this.again);
      } finally {
        this.refreshing = false;
      }
    })();
  }

  private async renderTree(): Promise<void> {
    const rows = describeSessions(this.sessions);
    const open = new Set(this.panes.map((p) => p.sessionId));
    const forkPoints = await this.forkPoints();
    const list = (nodes: TreeNode[]): HTMLUListElement => {
      const ul = document.createElement("ul");
      for (const node of nodes) {
        const li = document.createElement("li");
        li.setAttribute("role", "treeitem");
        const button = document.createElement("button");
        button.className = "node";
        button.dataset.sessionId = node.session.sessionId;
        button.classList.toggle("open", open.has(node.session.sessionId));
        button.title = "Click: open here · Shift+click: open beside";
        const title = document.createElement("span");
        title.className = "node-title";
        title.textContent = rows.get(node.session.sessionId)?.label ?? node.session.sessionId;
        const meta = document.createElement("span");
        meta.className = "node-meta";
        const at = forkPoints.get(node.session.sessionId);
        // "N messages · date", and for a fork where it branches (nested: the parent is above).
        const facts = (rows.get(node.session.sessionId)?.detail ?? "").split(" · ").slice(0, 2).join(" · ");
        // A delegate call's child is a branch of the session that delegated.
        const child = ((node.session._meta ?? {}) as { kind?: string }).kind === "child";
        button.classList.toggle("child", child);
        const where = [child ? "sub-agent" : "", at ? `branches at “${at}”` : ""].filter(Boolean).join(", ");
        meta.textContent = where ? `${where} · ${facts}` : facts;
        button.append(title, meta);
        button.addEventListener("click", (e) => void this.open(node.session.sessionId, e.shiftKey));
        const rename = actionButton("rename", "✎", "Rename this session");
        rename.addEventListener("click", () => this.rename(button, node.session));
        const archive = this.archived
          ? actionButton("archive", "↩", "Unarchive: put this session back in the tree")
          : actionButton("archive", "🗄", "Archive: take this session out of the tree (it stays searchable)");
        archive.addEventListener("click", () => void this.archive(node.session));
        const actions = document.createElement("span");
        actions.className = "node-actions";
        actions.append(rename, archive);
        li.append(button, actions);
        if (node.children.length) li.append(list(node.children));
        ul.append(li);
      }
      return ul;
    };
    const tree = buildTree(this.sessions);
    $("#tree").replaceChildren(tree.length ? list(tree) : emptyNote(this.archived));
  }

  /** For each fork, a snippet of the parent's message it branches after. */
  private async forkPoints(): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    const byParent = new Map<string, { child: string; at: string }[]>();
    for (const s of this.sessions) {
      const meta = (s._meta ?? {}) as { parentSessionId?: string | null; forkedAtMessageId?: string | null };
      if (meta.parentSessionId && meta.forkedAtMessageId) {
        const list = byParent.get(meta.parentSessionId) ?? [];
        list.push({ child: s.sessionId, at: meta.forkedAtMessageId });
        byParent.set(meta.parentSessionId, list);
      }
    }
    for (const [parent, forks] of byParent) {
      let messages: Message[];
      try {
        messages = (await this.client.history(parent)).messages;
      } catch {
        continue;
      }
      for (const { child, at } of forks) {
        const message = messages.find((m) => m.messageId === at);
        if (message) out.set(child, snippet(messageText(message), 40));
      }
    }
    return out;
  }
}

function emptyNote(archived: boolean): HTMLElement {
  const p = document.createElement("p");
  p.className = "node-meta";
  p.textContent = archived ? "No archived sessions." : "No sessions yet: type in a pane to start one.";
  return p;
}

function textSpan(className: string, text: string): HTMLSpanElement {
  const span = document.createElement("span");
  span.className = className;
  span.textContent = text;
  return span;
}

function actionButton(className: string, icon: string, title: string): HTMLButtonElement {
  const button = document.createElement("button");
  button.className = className;
  button.textContent = icon;
  button.title = title;
  button.setAttribute("aria-label", title);
  return button;
}

function snippet(text: string, length: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > length ? `${flat.slice(0, length - 1)}…` : flat;
}

function messageText(message: Message): string {
  return message.content
    .map((b) => {
      const block = b as { type: string; text?: string };
      return block.type === "text" || block.type === "summary" ? (block.text ?? "") : "";
    })
    .filter(Boolean)
    .join("\n");
}

function connectedText(client: WsClient): string {
  return `Connected to threadline ${client.serverInfo?.agentInfo?.version ?? ""}`;
}

async function start(): Promise<void> {
  const status = $("#connection");
  const token = new URLSearchParams(location.search).get("token") ?? "";
  let client: WsClient;
  let app: App | undefined;
  try {
    client = await WsClient.connect(`ws://${location.host}/rpc?token=${encodeURIComponent(token)}`);
    // The agent's questions (`ask_user`) are answered in a form in the pane showing the
    // session; registered before `initialize`, which then advertises form elicitation.
    client.onServerRequest("elicitation/create", async (params) => {
      const p = params as CreateElicitationParams;
      const pane = app?.paneFor(p.sessionId);
      return pane ? pane.controller.elicit(p) : { action: "decline" };
    });
    await client.initialize();
  } catch (err) {
    status.textContent = `Not connected: ${err instanceof Error ? err.message : String(err)}`;
    status.classList.add("error");
    return;
  }
  status.textContent = connectedText(client);
  // Said at once (the bridge closes the socket when the sidecar exits), in every pane,
  // whose banner's Restart reconnects.
  client.onClose((why) => {
    status.textContent = `Disconnected: ${why}. Press Restart in a pane to reconnect.`;
    status.classList.add("error");
    for (const pane of app?.panes ?? []) pane.chat.receive({ type: "sidecar", down: why });
  });
  client.onServerRequest("session/request_permission", async (params) => {
    const p = params as { toolCall?: { title?: string }; options: { optionId: string; kind: string; name: string }[] };
    const allow = window.confirm(`Allow ${p.toolCall?.title ?? "this tool call"}?`);
    const option = p.options.find((o) => o.kind === (allow ? "allow_once" : "reject_once"));
    return option ? { outcome: { outcome: "selected", optionId: option.optionId } } : { outcome: { outcome: "cancelled" } };
  });
  const shown = new App(client);
  app = shown;
  (window as unknown as { threadline: App }).threadline = shown;
  const remembered = App.remembered();
  if (!remembered.length) shown.addPane();
  for (const sessionId of remembered) {
    const pane = shown.addPane();
    if (sessionId) await pane.open(sessionId).catch(() => undefined);
  }
  shown.remember();
  shown.refreshTree();
}

void start();
