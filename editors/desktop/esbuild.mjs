// Builds the page `threadline desktop` serves into the Python client package
// (threadline_client/desktop_static): app.js (this folder's src, which mounts the VS
// Code chat's own webview code in each pane), app.css (the chat's stylesheet, then
// the desktop layout) and index.html, whose pane template is the body of the VS Code
// chat page: one UI for both.
import * as esbuild from "esbuild";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "..", "..", "clients", "python", "threadline_client", "desktop_static");
const media = join(here, "..", "vscode", "media");
mkdirSync(out, { recursive: true });

await esbuild.build({
  entryPoints: [join(here, "src", "main.ts")],
  outfile: join(out, "app.js"),
  bundle: true,
  format: "iife",
  platform: "browser",
  target: "chrome120",
  minify: false,
  logLevel: "warning",
  legalComments: "none",
});

const chatPage = readFileSync(join(media, "chat.html"), "utf8");
const body = /<body>([\s\S]*?)<script/.exec(chatPage)?.[1];
if (!body) throw new Error("chat.html has no <body> before its <script>");
const page = readFileSync(join(here, "index.html"), "utf8").replace("<!-- chat pane -->", body.trim());
writeFileSync(join(out, "index.html"), page);
writeFileSync(
  join(out, "app.css"),
  readFileSync(join(media, "chat.css"), "utf8") + "\n" + readFileSync(join(here, "desktop.css"), "utf8"),
);
console.log(`built ${out}`);
