/** `session/request_permission` as a VS Code modal dialog with the server's options. */
import * as vscode from "vscode";
import type { CancellationToken, RequestPermissionParams, RequestPermissionResult } from "@threadline/client";
import { describePermission, outcomeFor } from "../core/permissions";

export async function askPermission(
  params: RequestPermissionParams,
  token: CancellationToken,
): Promise<RequestPermissionResult> {
  const question = describePermission(params);
  const labels = question.choices.map((c) => c.label);
  const picked = await vscode.window.showInformationMessage(
    question.message,
    { modal: true, detail: question.detail || undefined },
    ...labels,
  );
  return outcomeFor(question, picked, token.isCancellationRequested);
}
