/** EditorHost and DocumentWriter over the VS Code API (the only place tools touch vscode). */
import * as vscode from "vscode";
import type { DiagnosticInfo, EditorHost, EditorSelection, OpenDocument, Severity, TextRange } from "../core/editorTools";
import type { DocumentWriter } from "../core/fileAccess";

const SEVERITY: Record<vscode.DiagnosticSeverity, Severity> = {
  [vscode.DiagnosticSeverity.Error]: "error",
  [vscode.DiagnosticSeverity.Warning]: "warning",
  [vscode.DiagnosticSeverity.Information]: "information",
  [vscode.DiagnosticSeverity.Hint]: "hint",
};

function range(r: vscode.Range): TextRange {
  return {
    start: { line: r.start.line, character: r.start.character },
    end: { line: r.end.line, character: r.end.character },
  };
}

function isFile(doc: vscode.TextDocument): boolean {
  return doc.uri.scheme === "file" || doc.uri.scheme === "untitled";
}

function findDocument(path: string): vscode.TextDocument | undefined {
  return vscode.workspace.textDocuments.find((d) => d.uri.scheme === "file" && d.uri.fsPath === path);
}

export class VsCodeEditorHost implements EditorHost, DocumentWriter {
  activeSelection(): EditorSelection | undefined {
    const editor = vscode.window.activeTextEditor;
    if (!editor) return undefined;
    const doc = editor.document;
    return {
      path: doc.uri.scheme === "file" ? doc.uri.fsPath : doc.uri.toString(),
      languageId: doc.languageId,
      isDirty: doc.isDirty,
      range: range(editor.selection),
      text: doc.getText(editor.selection),
    };
  }

  openDocuments(): OpenDocument[] {
    const active = vscode.window.activeTextEditor?.document;
    return vscode.workspace.textDocuments.filter(isFile).map((doc) => ({
      path: doc.uri.scheme === "file" ? doc.uri.fsPath : doc.uri.toString(),
      languageId: doc.languageId,
      isDirty: doc.isDirty,
      lineCount: doc.lineCount,
      isActive: doc === active,
    }));
  }

  diagnostics(path?: string): DiagnosticInfo[] {
    const entries: [vscode.Uri, readonly vscode.Diagnostic[]][] = path
      ? [[vscode.Uri.file(path), vscode.languages.getDiagnostics(vscode.Uri.file(path))]]
      : vscode.languages.getDiagnostics();
    return entries.flatMap(([uri, diags]) =>
      diags.map((d) => ({
        path: uri.fsPath,
        severity: SEVERITY[d.severity],
        message: d.message,
        range: range(d.range),
        ...(d.source ? { source: d.source } : {}),
        ...(d.code !== undefined ? { code: typeof d.code === "object" ? d.code.value : d.code } : {}),
      })),
    );
  }

  documentText(path: string): string | undefined {
    return findDocument(path)?.getText();
  }

  async writeOpenDocument(path: string, content: string): Promise<boolean> {
    const doc = findDocument(path);
    if (!doc) return false;
    const edit = new vscode.WorkspaceEdit();
    edit.replace(doc.uri, new vscode.Range(doc.positionAt(0), doc.positionAt(doc.getText().length)), content);
    if (!(await vscode.workspace.applyEdit(edit))) throw new Error(`the editor refused the edit to ${path}`);
    return true;
  }
}
