// Writes the user settings of the in-VS-Code test to stdout, and the scripted model's
// script next to them. VS Code's own distractions (welcome page, AI chat, update
// checks, trust prompt) are turned off so screenshots show what the extension shows.
//
// The script answers every turn the same way: a first model call that asks the editor
// for its selection, a second that repeats the call (the engine answers it itself and
// nudges the model), then an answer streamed over about four seconds (long enough to
// interrupt). Compaction requests get a fixed summary.
import { writeFileSync } from "node:fs";
import { join } from "node:path";

const [work, repo] = process.argv.slice(2);
if (!work || !repo) throw new Error("usage: settings.mjs WORK REPO");

const words = "Primary colours are red, yellow and blue; mixing them gives the secondary colours orange, green and purple."
  .split(" ");
const answer = words.flatMap((w) => [{ text: `${w} ` }, { sleep: 0.2 }]);
const script = {
  rounds: [
    [{ text: "Let me look at your selection first." }, { tool_call: { name: "editor_get_selection", arguments: {} } }],
    [{ tool_call: { name: "editor_get_selection", arguments: {} } }],
    [...answer, { usage: { input_tokens: 1200, output_tokens: 60 } }],
  ],
  summary: [{ sleep: 1.5 }, { text: "The user asked about colours; the assistant read the editor selection and explained primary colours." }],
};
const scriptPath = join(work, "script.json");
writeFileSync(scriptPath, JSON.stringify(script, null, 1));

const settings = {
  "threadline.server.command": join(repo, ".venv", "bin", "threadline"),
  "threadline.server.args": ["serve"],
  "threadline.server.env": { THREADLINE_HOME: join(work, "home"), THREADLINE_LOG_LEVEL: "INFO" },
  "threadline.model": `scripted:${scriptPath}`,
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "workbench.enableExperiments": false,
  "workbench.secondarySideBar.defaultVisibility": "hidden",
  "chat.disableAIFeatures": true,
  "chat.commandCenter.enabled": false,
  "security.workspace.trust.enabled": false,
  "telemetry.telemetryLevel": "off",
  "update.mode": "none",
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "extensions.ignoreRecommendations": true,
  "window.commandCenter": false,
  "editor.minimap.enabled": false,
};
process.stdout.write(JSON.stringify(settings, null, 2) + "\n");
