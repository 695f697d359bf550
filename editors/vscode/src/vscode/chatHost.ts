/**
 * One chat page (media/chat.html in a webview) and the ChatController behind it, bound
 * to the current sidecar client: the chat view in the side bar and each child
 * session's tab beside the editor are one of these. After a sidecar restart a new
 * controller picks up the session that was on screen, so the chat reloads instead of
 * emptying.
 */
import { readFileSync } from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import type { FileDiff, ThreadlineClient } from "@threadline/client";
import type { HostMessage, WebviewMessage } from "../../webview/src/messages";
import { ChatController, type ChatControllerOptions } from "../core/chatController";
import { EDITOR_TOOLS } from "../core/editorTools";
import { oldTextFromDiff } from "../core/diffText";
import { fillTemplate } from "../core/html";
import type { DiffEditors } from "./diffEditors";
import { settings, workspaceCwd } from "./config";
import { SidecarUnavailable, type SidecarService } from "./sidecarService";

/** Put the chat page into a webview (a view's or a panel's). */
export function loadChatPage(webview: vscode.Webview, extensionUri: vscode.Uri): void {
  const media = vscode.Uri.joinPath(extensionUri, "media");
  const scripts = vscode.Uri.joinPath(extensionUri, "dist", "webview");
  webview.options = { enableScripts: true, localResourceRoots: [media, scripts] };
  const template = readFileSync(vscode.Uri.joinPath(media, "chat.html").fsPath, "utf8");
  webview.html = fillTemplate(template, {
    cspSource: webview.cspSource,
    scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(scripts, "chat.js")).toString(),
    styleUri: webview.asWebviewUri(vscode.Uri.joinPath(media, "chat.css")).toString(),
  });
}

/** What every chat page of the window shares. */
export interface ChatShared {
  sidecar: SidecarService;
  diffs: DiffEditors;
  /** Last context figure per session (outlives a sidecar restart). */
  contextFigures: Map<string, { used: number; size: number }>;
}

export class ChatHost implements vscode.Disposable {
  private controller: ChatController | undefined;
  private controllerClient: ThreadlineClient | undefined;

  constructor(
    private readonly shared: ChatShared,
    private readonly post: (message: HostMessage) => void,
    /** Where this page opens a child or a parent session, and what it shows first. */
    private readonly placing: Pick<ChatControllerOptions, "openChild" | "openParent" | "onRunning" | "initialSessionId">,
  ) {}

  /** The controller for the live sidecar, created (or re-created) as needed. */
  async chat(): Promise<ChatController> {
    const client = await this.shared.sidecar.client();
    if (!this.controller || this.controllerClient !== client) {
      const shown = this.controller?.currentSessionId ?? this.placing.initialSessionId ?? null;
      this.controller?.dispose();
      this.controllerClient = client;
      this.controller = new ChatController(
        client,
        { post: (m) => this.post(m) },
        {
          ...this.placing,
          cwd: workspaceCwd,
          tools: () => (settings().editorTools ? EDITOR_TOOLS : []),
          defaultModel: () => settings().model,
          sessionOptions: () => {
            const prompt = settings().systemPrompt;
            return prompt ? { systemPrompt: prompt } : {};
          },
          initialSessionId: shown,
          contextFigures: this.shared.contextFigures,
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
        await this.shared.sidecar.restart();
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
    if (file.status === "deleted") await this.shared.diffs.show(file.path, before, "", title);
    else await this.shared.diffs.show(file.path, before, uri, title);
  }

  dispose(): void {
    this.controller?.dispose();
    this.controller = undefined;
  }
}
