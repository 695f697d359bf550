/**
 * Turning ACP `session/request_permission` into a question for the user and the user's
 * answer back into an ACP outcome. The prompt itself (a VS Code dialog) is injected.
 */
import type {
  DiffToolCallContent,
  PermissionOption,
  RequestPermissionParams,
  RequestPermissionResult,
} from "@threadline/client";

export interface PermissionQuestion {
  message: string;
  detail: string;
  /** Button labels in the server's order, each mapped to its option. */
  choices: { label: string; option: PermissionOption }[];
}

function summarise(value: unknown, max = 400): string {
  if (value === undefined || value === null) return "";
  let s: string;
  try {
    s = typeof value === "string" ? value : JSON.stringify(value, null, 2);
  } catch {
    s = String(value);
  }
  return s.length > max ? `${s.slice(0, max)}…` : s;
}

export function describePermission(params: RequestPermissionParams): PermissionQuestion {
  const call = params.toolCall;
  const title = call.title || call.toolCallId;
  const kind = call.kind && call.kind !== "other" ? ` (${call.kind})` : "";
  const input = summarise(call.rawInput);
  const locations = (call.locations ?? []).map((l) => (l.line ? `${l.path}:${l.line}` : l.path));
  const detail = [input && `Input:\n${input}`, locations.length ? `Files: ${locations.join(", ")}` : ""]
    .filter(Boolean)
    .join("\n\n");
  return {
    message: `Threadline wants to run ${title}${kind}.`,
    detail,
    choices: params.options.map((option) => ({ label: option.name, option })),
  };
}

/**
 * The outcome for the label the user picked. Dismissing the prompt rejects once (the
 * tool does not run, the turn goes on); `cancelled` is for a withdrawn request.
 */
export function outcomeFor(
  question: PermissionQuestion,
  picked: string | undefined,
  withdrawn = false,
): RequestPermissionResult {
  if (withdrawn) return { outcome: { outcome: "cancelled" } };
  const choice =
    question.choices.find((c) => c.label === picked) ??
    question.choices.find((c) => c.option.kind === "reject_once");
  if (!choice) return { outcome: { outcome: "cancelled" } };
  return { outcome: { outcome: "selected", optionId: choice.option.optionId } };
}

/**
 * The file changes a permission request proposes (an `edit_file` or `write_file` call
 * carries ACP `diff` content: whole texts), so the editor can show them as diffs.
 */
export function proposedDiffs(params: RequestPermissionParams): DiffToolCallContent[] {
  return (params.toolCall.content ?? []).filter((c): c is DiffToolCallContent => c.type === "diff");
}
