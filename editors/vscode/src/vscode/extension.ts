/**
 * Extension entry point: wires the sidecar, the chat view and the commands. Everything
 * with logic lives in src/core (no `vscode` import) and the webview; this file and its
 * siblings in src/vscode only adapt VS Code's API to them.
 */
import * as vscode from "vscode";
import type { ModelChoice } from "../../webview/src/messages";
import { EditorTools } from "../core/editorTools";
import { ChatViewProvider, VIEW_ID } from "./chatViewProvider";
import { workspaceCwd } from "./config";
import { DiffEditors } from "./diffEditors";
import { VsCodeEditorHost } from "./editorHost";
import { archiveCurrent, renameCurrent, resumeSession, searchSessions } from "./sessionPicks";
import { SidecarService, SidecarUnavailable } from "./sidecarService";

export function activate(context: vscode.ExtensionContext): void {
  const version = String((context.extension.packageJSON as { version?: string }).version ?? "0.0.0");
  const output = vscode.window.createOutputChannel("Threadline", { log: true });
  const host = new VsCodeEditorHost();
  const diffs = new DiffEditors();
  const sidecar = new SidecarService(output, host, new EditorTools(host, workspaceCwd), version, diffs);
  const chat = new ChatViewProvider(context.extensionUri, sidecar, diffs);

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
    diffs,
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
      const picked = await pickChoice(controller.availableModels, controller.currentModel, "Threadline model", "Model for the next turn");
      if (picked) await chat.dispatch({ type: "setModel", model: picked });
    }),
    command("threadline.pickMode", async () => {
      const controller = await chat.chat();
      const picked = await pickChoice(controller.availableModes, controller.currentMode, "Threadline mode", "What the agent may do without asking");
      if (picked) await chat.dispatch({ type: "setMode", mode: picked });
    }),
    command("threadline.resumeSession", () => resumeSession(chat, sidecar)),
    command("threadline.searchSessions", () => searchSessions(chat, sidecar)),
    command("threadline.renameSession", () => renameCurrent(chat, sidecar)),
    command("threadline.archiveSession", () => archiveCurrent(chat)),
    command("threadline.restartServer", () => chat.dispatch({ type: "restartSidecar" })),
    command("threadline.showLog", async () => output.show()),
  );
}

/** A quick pick over models or modes, the current one marked; resolves with the id picked. */
async function pickChoice(
  choices: readonly ModelChoice[],
  current: string | null,
  title: string,
  placeHolder: string,
): Promise<string | undefined> {
  const picked = await vscode.window.showQuickPick(
    choices.map((m) => ({
      label: m.name,
      description: m.id === current ? "current" : m.id,
      detail: m.description ?? undefined,
      id: m.id,
    })),
    { title, placeHolder },
  );
  return picked?.id;
}

export function deactivate(): void {
  // Disposables registered in activate() stop the sidecar (shutdown + exit).
}
