/** The extension's settings (`threadline.*`), read fresh each time they are needed. */
import * as os from "node:os";
import * as vscode from "vscode";

export interface ThreadlineSettings {
  command: string;
  args: string[];
  env: Record<string, string>;
  model: string | undefined;
  systemPrompt: string | undefined;
  editorTools: boolean;
  terminals: boolean;
}

export function settings(): ThreadlineSettings {
  const c = vscode.workspace.getConfiguration("threadline");
  const model = c.get<string>("model")?.trim();
  const systemPrompt = c.get<string>("systemPrompt")?.trim();
  return {
    command: c.get<string>("server.command")?.trim() || "threadline",
    args: c.get<string[]>("server.args") ?? ["serve"],
    env: c.get<Record<string, string>>("server.env") ?? {},
    model: model || undefined,
    systemPrompt: systemPrompt || undefined,
    editorTools: c.get<boolean>("editorTools.enabled") ?? true,
    terminals: c.get<boolean>("terminals.enabled") ?? true,
  };
}

/** The folder new sessions run in: the first workspace folder, else the home directory. */
export function workspaceCwd(): string {
  const folder = vscode.workspace.workspaceFolders?.[0];
  return folder?.uri.scheme === "file" ? folder.uri.fsPath : os.homedir();
}
