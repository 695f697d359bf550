/**
 * The sidecar's commands (`run_command` over ACP `terminal/*`) shown in VS Code's
 * Terminal panel: each terminal the client's host creates gets a pseudoterminal fed
 * with its output as it arrives and its exit status at the end. The process itself
 * belongs to the host (ChildProcessTerminals), which the sidecar kills and releases;
 * closing the panel's terminal only stops showing it.
 */
import * as vscode from "vscode";
import type { ChildProcessTerminals, TerminalExit } from "@threadline/client";

/** Terminal text wants CRLF; the command's output has bare LFs. */
function crlf(text: string): string {
  return text.replace(/\r?\n/g, "\r\n");
}

function exitLine(exit: TerminalExit): string {
  if (exit.signal) return `[stopped by ${exit.signal}]`;
  return `[exit code ${exit.exitCode ?? "?"}]`;
}

export function showTerminals(host: ChildProcessTerminals): vscode.Disposable {
  const writers = new Map<string, { fire(text: string): void; dispose(): void }>();
  const subscriptions = [
    host.onCreate((info) => {
      const write = new vscode.EventEmitter<string>();
      // VS Code ignores writes before open(): keep them until then.
      let pending: string[] | undefined = [];
      writers.set(info.terminalId, {
        fire: (text) => (pending ? pending.push(text) : write.fire(text)),
        dispose: () => write.dispose(),
      });
      const commandLine = info.command === "/bin/sh" && info.args[0] === "-c" ? info.args.slice(1).join(" ") : [info.command, ...info.args].join(" ");
      const pty: vscode.Pseudoterminal = {
        onDidWrite: write.event,
        open: () => {
          write.fire(`\x1b[2m${info.cwd ?? ""}\x1b[0m\r\n$ ${crlf(commandLine)}\r\n`);
          for (const text of pending ?? []) write.fire(text);
          pending = undefined;
        },
        close: () => writers.delete(info.terminalId),
      };
      const terminal = vscode.window.createTerminal({ name: `Threadline: ${commandLine.slice(0, 40)}`, pty });
      terminal.show(true);
    }),
    host.onOutput(({ terminalId, data }) => writers.get(terminalId)?.fire(crlf(data))),
    host.onExit(({ terminalId, ...exit }) => writers.get(terminalId)?.fire(`\r\n${exitLine(exit)}\r\n`)),
  ];
  return {
    dispose: () => {
      for (const s of subscriptions) s.dispose();
      for (const w of writers.values()) w.dispose();
      writers.clear();
    },
  };
}
