/**
 * Finding a session from the command palette: the Resume list (with Rename and Archive
 * on each row and a switch to the archived sessions), search over every message (hits
 * with their snippets, opened at the hit), and rename / archive of the session on
 * screen. The work is the chat controller's (src/core); this file only asks VS Code.
 */
import * as vscode from "vscode";
import type { SessionInfo } from "@threadline/client";
import { describeHit, describeSessions, snippetText } from "../../webview/src/sessions";
import type { ChatViewProvider } from "./chatViewProvider";
import { workspaceCwd } from "./config";
import type { SidecarService } from "./sidecarService";

interface SessionItem extends vscode.QuickPickItem {
  session: SessionInfo;
}

const RENAME: vscode.QuickInputButton = { iconPath: new vscode.ThemeIcon("edit"), tooltip: "Rename" };
const ARCHIVE: vscode.QuickInputButton = { iconPath: new vscode.ThemeIcon("archive"), tooltip: "Archive" };
const UNARCHIVE: vscode.QuickInputButton = { iconPath: new vscode.ThemeIcon("inbox"), tooltip: "Unarchive" };
const SHOW_ARCHIVED: vscode.QuickInputButton = {
  iconPath: new vscode.ThemeIcon("archive"),
  tooltip: "Show archived sessions",
};
const SHOW_ACTIVE: vscode.QuickInputButton = { iconPath: new vscode.ThemeIcon("list-flat"), tooltip: "Show active sessions" };
const SEARCH: vscode.QuickInputButton = { iconPath: new vscode.ThemeIcon("search"), tooltip: "Search every message" };

/** Ask for a new title (the current one filled in); undefined when dismissed. */
export function askTitle(current: string | null | undefined): Thenable<string | undefined> {
  return vscode.window.showInputBox({
    title: "Rename the Threadline session",
    value: current ?? "",
    prompt: "One line, up to 200 characters",
    validateInput: (v) => (v.trim() ? (v.length > 200 ? "At most 200 characters" : undefined) : "A title is needed"),
  });
}

/** The Resume list: pick a session to open; each row can be renamed or archived in place. */
export async function resumeSession(chat: ChatViewProvider, sidecar: SidecarService): Promise<void> {
  const client = await sidecar.client();
  const pick = vscode.window.createQuickPick<SessionItem>();
  pick.title = "Resume a Threadline session";
  pick.matchOnDetail = true;
  let archived = false;
  const load = async () => {
    pick.busy = true;
    const params = archived ? { _meta: { threadline: { archived: true } } } : {};
    const { sessions } = await client.list({ cwd: workspaceCwd(), ...params });
    const rows = describeSessions(sessions);
    pick.title = archived ? "Archived Threadline sessions" : "Resume a Threadline session";
    pick.placeholder = sessions.length ? "Type to filter by title" : archived ? "No archived sessions" : "No sessions yet";
    pick.buttons = [SEARCH, archived ? SHOW_ACTIVE : SHOW_ARCHIVED];
    pick.items = sessions.map((s) => ({
      label: rows.get(s.sessionId)!.label,
      description: rows.get(s.sessionId)!.detail,
      detail: ((s._meta ?? {}) as { preview?: string | null }).preview ?? undefined,
      buttons: [RENAME, archived ? UNARCHIVE : ARCHIVE],
      session: s,
    }));
    pick.busy = false;
  };
  const done = new Promise<void>((resolve) => pick.onDidHide(() => resolve()));
  pick.onDidTriggerButton(async (button) => {
    if (button === SEARCH) {
      pick.hide();
      await searchSessions(chat, sidecar);
      return;
    }
    archived = button === SHOW_ARCHIVED;
    await load();
  });
  pick.onDidTriggerItemButton(async ({ button, item }) => {
    const sessionId = item.session.sessionId;
    if (button === RENAME) {
      pick.hide();
      const title = await askTitle(item.session.title);
      if (title !== undefined) await chat.dispatch({ type: "rename", sessionId, title });
      return;
    }
    await chat.dispatch({ type: "archive", sessionId, archived: button === ARCHIVE });
    await load();
  });
  pick.onDidAccept(async () => {
    const item = pick.selectedItems[0];
    pick.hide();
    if (!item) return;
    await chat.reveal();
    await chat.dispatch({ type: "resume", sessionId: item.session.sessionId });
  });
  pick.show();
  await load();
  await done;
  pick.dispose();
}

/**
 * Search every session of the workspace (`session/search`): ask for the words, then
 * pick a hit (its snippet below it, the matched words «marked»); the session opens
 * with the hit's message in view.
 */
export async function searchSessions(chat: ChatViewProvider, sidecar: SidecarService, query?: string): Promise<void> {
  const words =
    query ??
    (await vscode.window.showInputBox({
      title: "Search Threadline sessions",
      prompt: "Words to find in titles, prompts, answers and tool results (all of them)",
    }));
  if (!words?.trim()) return;
  const client = await sidecar.client();
  let hits;
  try {
    ({ hits } = await client.search({ query: words, cwd: workspaceCwd(), limit: 50 }));
  } catch (err) {
    void vscode.window.showWarningMessage(`Threadline search: ${err instanceof Error ? err.message : String(err)}`);
    return;
  }
  if (!hits.length) {
    void vscode.window.showInformationMessage(`Threadline: nothing found for “${words}”.`);
    return;
  }
  const picked = await vscode.window.showQuickPick(
    hits.map((hit) => {
      const row = describeHit(hit);
      return { label: row.label, description: row.detail, detail: snippetText(hit.snippet, "«", "»"), hit };
    }),
    { title: `Threadline: ${hits.length} hit${hits.length === 1 ? "" : "s"} for “${words}”`, matchOnDetail: true },
  );
  if (!picked) return;
  await chat.reveal();
  await chat.dispatch({ type: "open", sessionId: picked.hit.sessionId, messageId: picked.hit.messageId });
}

/** Rename the session on screen. */
export async function renameCurrent(chat: ChatViewProvider, sidecar: SidecarService): Promise<void> {
  const controller = await chat.chat();
  const sessionId = controller.currentSessionId;
  if (!sessionId) {
    void vscode.window.showInformationMessage("Threadline: no session on screen to rename.");
    return;
  }
  const { sessions } = await (await sidecar.client()).list({});
  const title = await askTitle(sessions.find((s) => s.sessionId === sessionId)?.title);
  if (title !== undefined) await chat.dispatch({ type: "rename", sessionId, title });
}

/** Archive the session on screen (it stays open; the Resume list's archived view brings it back). */
export async function archiveCurrent(chat: ChatViewProvider): Promise<void> {
  const sessionId = (await chat.chat()).currentSessionId;
  if (!sessionId) {
    void vscode.window.showInformationMessage("Threadline: no session on screen to archive.");
    return;
  }
  await chat.dispatch({ type: "archive", sessionId, archived: true });
  void vscode.window.showInformationMessage(
    "Threadline: session archived (it stays searchable; Resume → Show archived lists it).",
  );
}
