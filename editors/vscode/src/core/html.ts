/**
 * Filling media/chat.html: the extension and the browser test both use this, so the
 * page under test is the page VS Code shows, CSP included.
 */
import { randomBytes } from "node:crypto";

export interface PageUris {
  /** The webview's `cspSource` (VS Code) or the test origin. */
  cspSource: string;
  scriptUri: string;
  styleUri: string;
  nonce?: string;
}

export function makeNonce(): string {
  return randomBytes(18).toString("base64url");
}

const escapeAttr = (s: string) => s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");

export function fillTemplate(template: string, uris: PageUris): string {
  const values: Record<string, string> = {
    cspSource: uris.cspSource,
    scriptUri: uris.scriptUri,
    styleUri: uris.styleUri,
    nonce: uris.nonce ?? makeNonce(),
  };
  return template.replace(/\{\{(\w+)\}\}/g, (whole, key: string) => {
    const value = values[key];
    if (value === undefined) throw new Error(`chat.html uses unknown placeholder ${whole}`);
    return escapeAttr(value);
  });
}
