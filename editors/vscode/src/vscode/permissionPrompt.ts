/**
 * `session/request_permission` as a VS Code modal dialog with the server's options. An
 * edit (`diff` content) is first opened in a diff editor, the file as it is beside the
 * file as it would be, so the user answers looking at the change; it is closed after.
 */
import * as vscode from "vscode";
import type { CancellationToken, RequestPermissionParams, RequestPermissionResult } from "@threadline/client";
import { describePermission, outcomeFor, proposedDiffs } from "../core/permissions";
import type { DiffEditors } from "./diffEditors";

export async function askPermission(
  params: RequestPermissionParams,
  token: CancellationToken,
  diffs?: DiffEditors,
): Promise<RequestPermissionResult> {
  const question = describePermission(params);
  const labels = question.choices.map((c) => c.label);
  const opened: vscode.Uri[] = [];
  for (const d of diffs ? proposedDiffs(params) : []) {
    const verb = d.oldText === undefined || d.oldText === null ? "create" : "edit";
    opened.push(await diffs!.show(d.path, d.oldText ?? "", d.newText, `Threadline wants to ${verb} ${vscode.workspace.asRelativePath(d.path)}`));
  }
  try {
    const picked = await vscode.window.showInformationMessage(
      question.message,
      { modal: true, detail: (opened.length ? "The change is open in a diff editor.\n\n" : "") + question.detail || undefined },
      ...labels,
    );
    return outcomeFor(question, picked, token.isCancellationRequested);
  } finally {
    for (const uri of opened) await diffs!.close(uri);
  }
}
