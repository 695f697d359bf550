/**
 * Diff editors for texts that are not files: a proposed edit (the permission prompt)
 * and a file as it was before the last turn. The texts are served by a read-only
 * content provider under the `threadline-diff` scheme; VS Code's own `vscode.diff`
 * shows them.
 */
import * as path from "node:path";
import * as vscode from "vscode";

export const DIFF_SCHEME = "threadline-diff";

export class DiffEditors implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly texts = new Map<string, string>();
  private next = 1;
  private readonly registration: vscode.Disposable;

  constructor() {
    this.registration = vscode.workspace.registerTextDocumentContentProvider(DIFF_SCHEME, this);
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? "";
  }

  /** A read-only document holding `text`, named like `file` (so it is highlighted alike). */
  private document(text: string, file: string, side: string): vscode.Uri {
    const uri = vscode.Uri.from({ scheme: DIFF_SCHEME, path: `/${this.next++}/${side}/${path.basename(file)}` });
    this.texts.set(uri.toString(), text);
    return uri;
  }

  /** Open a diff editor: `before` on the left, `after` (a text or a file's uri) on the right. */
  async show(file: string, before: string, after: string | vscode.Uri, title: string): Promise<vscode.Uri> {
    const left = this.document(before, file, "before");
    const right = typeof after === "string" ? this.document(after, file, "after") : after;
    await vscode.commands.executeCommand("vscode.diff", left, right, title, { preview: false });
    return right;
  }

  /** Close the diff editors whose right side is `right`, and forget their texts. */
  async close(right: vscode.Uri): Promise<void> {
    const tabs = vscode.window.tabGroups.all
      .flatMap((g) => g.tabs)
      .filter((t) => t.input instanceof vscode.TabInputTextDiff && t.input.modified.toString() === right.toString());
    for (const tab of tabs) {
      if (tab.input instanceof vscode.TabInputTextDiff) this.texts.delete(tab.input.original.toString());
    }
    this.texts.delete(right.toString());
    if (tabs.length) await vscode.window.tabGroups.close(tabs);
  }

  dispose(): void {
    this.registration.dispose();
    this.texts.clear();
  }
}
