/**
 * The fork tree: sessions nested under the session they were forked from (or, for a
 * `delegate` call's child session, the session that delegated), newest
 * first among siblings. A filter keeps the sessions it accepts and the ancestors that
 * lead to them, so a session deep in the tree is still reached from its root.
 */
import type { SessionInfo } from "@threadline/client";

export interface TreeNode {
  session: SessionInfo;
  children: TreeNode[];
}

function parentOf(s: SessionInfo): string | null {
  return ((s._meta ?? {}) as { parentSessionId?: string | null }).parentSessionId ?? null;
}

export function buildTree(sessions: readonly SessionInfo[], keep: (s: SessionInfo) => boolean = () => true): TreeNode[] {
  const byId = new Map(sessions.map((s) => [s.sessionId, s]));
  const kept = new Set<string>();
  for (const s of sessions) {
    if (!keep(s)) continue;
    for (let cur: SessionInfo | undefined = s; cur && !kept.has(cur.sessionId); ) {
      kept.add(cur.sessionId);
      const parent = parentOf(cur);
      cur = parent ? byId.get(parent) : undefined;
    }
  }
  const nodes = new Map<string, TreeNode>();
  for (const s of sessions) if (kept.has(s.sessionId)) nodes.set(s.sessionId, { session: s, children: [] });
  const roots: TreeNode[] = [];
  for (const node of nodes.values()) {
    const parent = parentOf(node.session);
    const home = parent ? nodes.get(parent) : undefined;
    (home ? home.children : roots).push(node);
  }
  const order = (list: TreeNode[]) => {
    list.sort((a, b) => b.session.updatedAt.localeCompare(a.session.updatedAt));
    for (const n of list) order(n.children);
  };
  order(roots);
  return roots;
}

