// `prepare`: build dist/ whenever npm installs this package, including as the
// `file:../../clients/typescript` dependency of editors/vscode. npm runs a linked
// package's prepare script there but never installs the package's own dependencies, so
// a fresh clone would have no compiler: install them first (without scripts, which
// would re-enter this one), then compile.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const npm = process.env.npm_execpath;
/** @param {string[]} args */
const run = (args) =>
  npm
    ? execFileSync(process.execPath, [npm, ...args], { cwd: root, stdio: "inherit" })
    : execFileSync("npm", args, { cwd: root, stdio: "inherit" });

if (!existsSync(join(root, "node_modules", "typescript", "package.json"))) {
  run(["ci", "--ignore-scripts", "--no-audit", "--no-fund"]);
}
execFileSync(join(root, "node_modules", ".bin", "tsc"), ["-p", "tsconfig.json"], { cwd: root, stdio: "inherit" });
