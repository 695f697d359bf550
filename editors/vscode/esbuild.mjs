// Bundles the extension host code (CommonJS for Node, `vscode` external) and the
// webview script (an IIFE for the browser). `--production` minifies and drops maps.
import * as esbuild from "esbuild";

const production = process.argv.includes("--production");

const common = {
  bundle: true,
  sourcemap: production ? false : "linked",
  minify: production,
  logLevel: "warning",
  legalComments: "none",
};

await Promise.all([
  esbuild.build({
    ...common,
    entryPoints: ["src/vscode/extension.ts"],
    outfile: "dist/extension.js",
    platform: "node",
    format: "cjs",
    target: "node20",
    external: ["vscode"],
  }),
  esbuild.build({
    ...common,
    entryPoints: ["webview/src/main.ts"],
    outfile: "dist/webview/chat.js",
    platform: "browser",
    format: "iife",
    target: "chrome120",
  }),
]);
console.log(`built dist/extension.js and dist/webview/chat.js${production ? " (production)" : ""}`);
