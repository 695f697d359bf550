/**
 * The chat view in the side bar, and a tab beside the editor for each child session
 * (a `delegate` call's, opened from its card): each is a chat page with its own
 * controller (`ChatHost`) on the one sidecar. A child's tab has a **Parent** button
 * that brings up the page showing its parent (the chat view, or the parent's own tab).
 */
import * as vscode from "vscode";
import type { HostMessage } from "../../webview/src/messages";
import type { ChatController } from "../core/chatController";
import { ChatHost, loadChatPage, type ChatShared } from "./chatHost";
import type { DiffEditors } from "./diffEditors";
import type { SidecarService } from "./sidecarService";

export const VIEW_ID = "threadline.chat";
/** The webview panels (editor tabs) that show a child session. */
export const CHILD_PANEL = "threadline.childSession";

interface ChildTab {
  panel: vscode.WebviewPanel;
  host: ChatHost;
}

export class ChatViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  private readonly host: ChatHost;
  private readonly shared: ChatShared;
  /** The child sessions open in tabs, by session id. */
  private readonly children = new Map<string, ChildTab>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    sidecar: SidecarService,
    diffs: DiffEditors,
  ) {
    this.shared = { sidecar, diffs, contextFigures: new Map() };
    this.host = new ChatHost(this.shared, (m) => this.post(m), {
      onRunning: (running) => void setRunning(running),
      openChild: (sessionId) => this.openChild(sessionId),
    });
    // The agent's questions are answered in the chat's form: the view is brought up first.
    sidecar.answerQuestions(async (params, token) => {
      const chat = await this.chat();
      await this.reveal().catch(() => undefined);
      return chat.elicit(params, token);
    });
    this.disposables.push(
      sidecar.onState((down) => {
        if (down !== null) void setRunning(false);
        this.post({ type: "sidecar", down });
        for (const child of this.children.values()) void child.panel.webview.postMessage({ type: "sidecar", down });
      }),
    );
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    loadChatPage(view.webview, this.extensionUri);
    this.disposables.push(
      view.webview.onDidReceiveMessage((message) => void this.host.dispatch(message)),
      view.onDidDispose(() => {
        if (this.view === view) this.view = undefined;
      }),
    );
  }

  private post(message: HostMessage): void {
    void this.view?.webview.postMessage(message);
  }

  /** The chat view's controller for the live sidecar. */
  chat(): Promise<ChatController> {
    return this.host.chat();
  }

  dispatch(...args: Parameters<ChatHost["dispatch"]>): Promise<void> {
    return this.host.dispatch(...args);
  }

  /**
   * A child session in its own tab beside the editor (brought up again if it is open
   * already), so the parent stays on screen in the chat view.
   */
  async openChild(sessionId: string): Promise<void> {
    const open = this.children.get(sessionId);
    if (open) {
      open.panel.reveal(vscode.ViewColumn.Beside);
      return;
    }
    const panel = vscode.window.createWebviewPanel(
      CHILD_PANEL,
      "Threadline: sub-agent",
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: false },
      { retainContextWhenHidden: true },
    );
    const post = (message: HostMessage) => {
      if (message.type === "session" && message.sessionId === sessionId && message.title) panel.title = message.title;
      void panel.webview.postMessage(message);
    };
    const host = new ChatHost(this.shared, post, {
      initialSessionId: sessionId,
      openChild: (id) => this.openChild(id),
      openParent: (id) => this.openParent(id),
    });
    this.children.set(sessionId, { panel, host });
    const received = panel.webview.onDidReceiveMessage((message) => void host.dispatch(message));
    panel.onDidDispose(() => {
      received.dispose();
      host.dispose();
      if (this.children.get(sessionId)?.panel === panel) this.children.delete(sessionId);
    });
    loadChatPage(panel.webview, this.extensionUri);
  }

  /**
   * A child tab's **Parent** button: the parent's own tab when it is a child shown in
   * one, else the chat view, which is made to show the parent if it shows another session.
   */
  async openParent(sessionId: string): Promise<void> {
    const tab = this.children.get(sessionId);
    if (tab) {
      tab.panel.reveal();
      return;
    }
    await this.reveal();
    const chat = await this.chat();
    if (chat.currentSessionId !== sessionId) await chat.resume(sessionId);
  }

  /** Show the view, then act (commands from the palette go through here). */
  async reveal(): Promise<void> {
    await vscode.commands.executeCommand(`${VIEW_ID}.focus`);
  }

  dispose(): void {
    for (const child of this.children.values()) child.panel.dispose();
    this.host.dispose();
    for (const d of this.disposables) d.dispose();
  }
}

/** The `threadline.running` context key: the view's red Interrupt button shows only then. */
function setRunning(running: boolean): Thenable<unknown> {
  return vscode.commands.executeCommand("setContext", "threadline.running", running);
}
