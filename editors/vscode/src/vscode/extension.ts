/**
 * Extension entry point: wires the sidecar, the chat view and the commands. Everything
 * with logic lives in src/core (no `vscode` import) and the webview; this file and its
 * siblings in src/vscode only adapt VS Code's API to them.
 */
import * as vscode from "vscode";
import { EditorTools } from "../core/editorTools";
import { ChatViewProvider, VIEW_ID } from "./chatViewProvider";
import { workspaceCwd } from "./config";
import { VsCodeEditorHost } from "./editorHost";
import { archiveCurrent, renameCurrent, resumeSession, searchSessions } from "./sessionPicks";
import { SidecarService, SidecarUnavailable } from "./sidecarService";

export function activate(context: vscode.ExtensionContext): void {
  const version = String((context.extension.packageJSON as { version?: string }).version ?? "0.0.0");
  const output = vscode.window.createOutputChannel("Threadline", { log: true });
  const host = new VsCodeEditorHost();
  const sidecar = new SidecarService(output, host, new EditorTools(host, workspaceCwd), version);
  const chat = new ChatViewProvider(context.extensionUri, sidecar);

  const command = (id: string, run: () => Promise<unknown>) =>
    vscode.commands.registerCommand(id, async () => {
      try {
        await run();
      } catch (err) {
        if (err instanceof SidecarUnavailable) return; // reported once, by the service
        void vscode.window.showErrorMessage(`Threadline: ${err instanceof Error ? err.message : String(err)}`);
      }
    });

  context.subscriptions.push(
    output,
    sidecar,
    chat,
    vscode.window.registerWebviewViewProvider(VIEW_ID, chat, {
      webviewOptions: { retainContextWhenHidden: true },
    }),
    command("threadline.newSession", async () => {
      await chat.reveal();
      await chat.dispatch({ type: "newSession" });
    }),
    command("threadline.interrupt", () => chat.dispatch({ type: "interrupt" })),
    command("threadline.compact", async () => {
      const instructions = await vscode.window.showInputBox({
        title: "Compact the session",
        prompt: "Optional instructions for the summary (what to keep)",
      });
      if (instructions === undefined) return;
      await chat.reveal();
      await chat.dispatch({ type: "compact", instructions: instructions || undefined });
    }),
    command("threadline.fork", async () => {
      await chat.reveal();
      await (await chat.chat()).forkLatest();
    }),
    command("threadline.pickModel", async () => {
      const controller = await chat.chat();
      const picked = await vscode.window.showQuickPick(
        controller.availableModels.map((m) => ({
          label: m.name,
          description: m.id === controller.currentModel ? "current" : m.id,
          detail: m.description ?? undefined,
          id: m.id,
        })),
        { title: "Threadline model", placeHolder: "Model for the next turn" },
      );
      if (picked) await chat.dispatch({ type: "setModel", model: picked.id });
    }),
    command("threadline.resumeSession", () => resumeSession(chat, sidecar)),
    command("threadline.searchSessions", () => searchSessions(chat, sidecar)),
    command("threadline.renameSession", () => renameCurrent(chat, sidecar)),
    command("threadline.archiveSession", () => archiveCurrent(chat)),
    command("threadline.restartServer", () => chat.dispatch({ type: "restartSidecar" })),
    command("threadline.showLog", async () => output.show()),
  );
}

export function deactivate(): void {
  // Disposables registered in activate() stop the sidecar (shutdown + exit).
}
