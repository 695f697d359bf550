/**
 * Owns the sidecar process for the window: started lazily on first use, restarted on
 * demand, and reported (with a Restart button) when it dies unexpectedly.
 */
import * as vscode from "vscode";
import type { ThreadlineClient, ToolCallCall, ToolCallCallResult } from "@threadline/client";
import type { EditorTools } from "../core/editorTools";
import { startSidecar } from "../core/sidecar";
import { settings, workspaceCwd } from "./config";
import type { VsCodeEditorHost } from "./editorHost";
import { askPermission } from "./permissionPrompt";

export class SidecarService implements vscode.Disposable {
  private current: Promise<ThreadlineClient> | undefined;
  private stopping = false;

  constructor(
    private readonly output: vscode.LogOutputChannel,
    private readonly host: VsCodeEditorHost,
    private readonly tools: EditorTools,
    private readonly version: string,
  ) {}

  client(): Promise<ThreadlineClient> {
    this.current ??= this.start();
    return this.current;
  }

  private async runTool(call: ToolCallCall): Promise<ToolCallCallResult> {
    if (this.tools.owns(call.name)) return this.tools.run(call);
    return { content: [{ type: "text", text: `VS Code has no tool named ${call.name}` }], isError: true };
  }

  private start(): Promise<ThreadlineClient> {
    const s = settings();
    this.output.info(`starting ${s.command} ${s.args.join(" ")}`);
    const started = startSidecar(
      {
        command: s.command,
        args: s.args,
        env: s.env,
        cwd: workspaceCwd(),
        log: (line) => this.output.info(line),
        clientInfo: { name: "threadline-vscode", version: this.version },
      },
      {
        permission: askPermission,
        toolCall: (call) => this.runTool(call),
        documents: this.host,
      },
    );
    started.then(
      (client) => {
        client.onClose(() => {
          if (this.current !== started || this.stopping) return;
          this.current = undefined;
          this.output.warn("the Threadline sidecar stopped");
          void vscode.window
            .showWarningMessage("The Threadline sidecar stopped.", "Restart", "Show Log")
            .then((choice) => {
              if (choice === "Restart") void this.client();
              if (choice === "Show Log") this.output.show();
            });
        });
      },
      (err: unknown) => {
        if (this.current === started) this.current = undefined;
        const message = err instanceof Error ? err.message : String(err);
        this.output.error(`could not start the sidecar: ${message}`);
        void vscode.window.showErrorMessage(
          `Threadline: could not start "${s.command}" (${message}). Set threadline.server.command.`,
        );
      },
    );
    return started;
  }

  async restart(): Promise<ThreadlineClient> {
    await this.stop();
    return this.client();
  }

  async stop(): Promise<void> {
    const old = this.current;
    this.current = undefined;
    if (!old) return;
    this.stopping = true;
    try {
      const client = await old.catch(() => undefined);
      await client?.stop(3000);
    } finally {
      this.stopping = false;
    }
  }

  dispose(): void {
    void this.stop();
  }
}
