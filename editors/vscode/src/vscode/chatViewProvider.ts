/**
 * The chat view: hosts media/chat.html in a webview and connects it to a ChatController
 * bound to the current sidecar client. After a sidecar restart a new controller picks
 * up the session that was on screen, so the chat reloads instead of emptying.
 */
import { readFileSync } from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import type { FileDiff, ThreadlineClient } from "@threadline/client";
import type { HostMessage, WebviewMessage } from "../../webview/src/messages";
import { ChatController } from "../core/chatController";
import { EDITOR_TOOLS } from "../core/editorTools";
import { oldTextFromDiff } from "../core/diffText";
import { fillTemplate } from "../core/html";
import type { DiffEditors } from "./diffEditors";
import { settings, workspaceCwd } from "./config";
import { SidecarUnavailable, type SidecarService } from "./sidecarService";

export const VIEW_ID = "threadline.chat";

export class ChatViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  private controller: ChatController | undefined;
  private controllerClient: ThreadlineClient | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly contextFigures = new Map<string, { used: number; size: number }>();

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly sidecar: SidecarService,
    private readonly diffs: DiffEditors,
  ) {
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
      }),
    );
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const media = vscode.Uri.joinPath(this.extensionUri, "media");
    const scripts = vscode.Uri.joinPath(this.extensionUri, "dist", "webview");
    view.webview.options = { enableScripts: true, localResourceRoots: [media, scripts] };
    const template = readFileSync(vscode.Uri.joinPath(media, "chat.html").fsPath, "utf8");
    view.webview.html = fillTemplate(template, {
      cspSource: view.webview.cspSource,
      scriptUri: view.webview.asWebviewUri(vscode.Uri.joinPath(scripts, "chat.js")).toString(),
      styleUri: view.webview.asWebviewUri(vscode.Uri.joinPath(media, "chat.css")).toString(),
    });
    this.disposables.push(
      view.webview.onDidReceiveMessage((message: WebviewMessage) => void this.dispatch(message)),
      view.onDidDispose(() => {
        if (this.view === view) this.view = undefined;
      }),
    );
  }

  private post(message: HostMessage): void {
    void this.view?.webview.postMessage(message);
  }

  /** The controller for the live sidecar, created (or re-created) as needed. */
  async chat(): Promise<ChatController> {
    const client = await this.sidecar.client();
    if (!this.controller || this.controllerClient !== client) {
      const shown = this.controller?.currentSessionId ?? null;
      this.controller?.dispose();
      this.controllerClient = client;
      this.controller = new ChatController(
        client,
        { post: (m) => this.post(m) },
        {
          cwd: workspaceCwd,
          tools: () => (settings().editorTools ? EDITOR_TOOLS : []),
          defaultModel: () => settings().model,
          sessionOptions: () => {
            const prompt = settings().systemPrompt;
            return prompt ? { systemPrompt: prompt } : {};
          },
          onRunning: (running) => void setRunning(running),
          initialSessionId: shown,
          contextFigures: this.contextFigures,
          openDiff: (file, cwd) => this.openDiff(file, cwd),
          confirm: async (question) =>
            (await vscode.window.showWarningMessage(question, { modal: true }, "Rewind")) === "Rewind",
        },
      );
    }
    return this.controller;
  }

  async dispatch(message: WebviewMessage): Promise<void> {
    try {
      if (message.type === "restartSidecar") {
        await this.sidecar.restart();
        message = { type: "ready" };
      }
      await (await this.chat()).handle(message);
    } catch (err) {
      // A sidecar that cannot start has its toast and the chat's banner already.
      if (err instanceof SidecarUnavailable) return;
      this.post({ type: "notice", level: "error", text: err instanceof Error ? err.message : String(err) });
    }
  }

  /** A file of the last turn's diff: before the turn (rebuilt from the hunks) beside it now. */
  private async openDiff(file: FileDiff, cwd: string): Promise<void> {
    const uri = vscode.Uri.file(path.resolve(cwd, file.path));
    if (file.binary || file.truncated || !file.diff) {
      void vscode.window.showInformationMessage(`Threadline: no text diff for ${file.path} (${file.binary ? "binary" : "too large"}).`);
      return;
    }
    let now = "";
    if (file.status !== "deleted") now = new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
    const before = oldTextFromDiff(now, file.diff);
    const title = `${file.path} (before the last turn ↔ now)`;
    if (file.status === "deleted") await this.diffs.show(file.path, before, "", title);
    else await this.diffs.show(file.path, before, uri, title);
  }

  /** Show the view, then act (commands from the palette go through here). */
  async reveal(): Promise<void> {
    await vscode.commands.executeCommand(`${VIEW_ID}.focus`);
  }

  dispose(): void {
    this.controller?.dispose();
    for (const d of this.disposables) d.dispose();
  }
}

/** The `threadline.running` context key: the view's red Interrupt button shows only then. */
function setRunning(running: boolean): Thenable<unknown> {
  return vscode.commands.executeCommand("setContext", "threadline.running", running);
}
