/**
 * Owns the sidecar process for the window: started lazily on first use, restarted on
 * demand, and reported (with a Restart button) when it dies unexpectedly or cannot
 * start: one toast per failure, and the chat is told through `onState` so it can say
 * the sidecar is down next to the transcript.
 */
import * as vscode from "vscode";
import {
  ChildProcessTerminals,
  type CancellationToken,
  type CreateElicitationParams,
  type CreateElicitationResult,
  type ThreadlineClient,
  type ToolCallCall,
  type ToolCallCallResult,
} from "@threadline/client";
import type { EditorTools } from "../core/editorTools";
import { startSidecar } from "../core/sidecar";
import { settings, workspaceCwd } from "./config";
import type { VsCodeEditorHost } from "./editorHost";
import type { DiffEditors } from "./diffEditors";
import { askPermission } from "./permissionPrompt";
import { showTerminals } from "./terminalView";

/** The sidecar could not start; the failure has been reported to the user already. */
export class SidecarUnavailable extends Error {}

export class SidecarService implements vscode.Disposable {
  private current: Promise<ThreadlineClient> | undefined;
  private stopping = false;
  private readonly stateListeners = new Set<(down: string | null) => void>();
  /** Who answers the agent's questions (the chat view's form). */
  private questions: ((params: CreateElicitationParams, token: CancellationToken) => Promise<CreateElicitationResult>) | undefined;

  constructor(
    private readonly output: vscode.LogOutputChannel,
    private readonly host: VsCodeEditorHost,
    private readonly tools: EditorTools,
    private readonly version: string,
    private readonly diffs: DiffEditors,
  ) {}

  client(): Promise<ThreadlineClient> {
    this.current ??= this.start();
    return this.current;
  }

  /** Route the agent's questions (`elicitation/create`) to `answer` (the chat's form). */
  answerQuestions(answer: (params: CreateElicitationParams, token: CancellationToken) => Promise<CreateElicitationResult>): void {
    this.questions = answer;
  }

  /** `down` is why the sidecar is not running, or null once it runs. */
  onState(listener: (down: string | null) => void): vscode.Disposable {
    this.stateListeners.add(listener);
    return { dispose: () => this.stateListeners.delete(listener) };
  }

  private emit(down: string | null): void {
    for (const listener of this.stateListeners) listener(down);
  }

  private offerRestart(kind: "warning" | "error", message: string): void {
    const show = kind === "warning" ? vscode.window.showWarningMessage : vscode.window.showErrorMessage;
    void show(message, "Restart", "Show Log").then((choice) => {
      if (choice === "Restart") void this.restart().catch(() => undefined);
      if (choice === "Show Log") this.output.show();
    });
  }

  private async runTool(call: ToolCallCall): Promise<ToolCallCallResult> {
    if (this.tools.owns(call.name)) return this.tools.run(call);
    return { content: [{ type: "text", text: `VS Code has no tool named ${call.name}` }], isError: true };
  }

  private start(): Promise<ThreadlineClient> {
    const s = settings();
    this.output.info(`starting ${s.command} ${s.args.join(" ")}`);
    const terminals = s.terminals ? new ChildProcessTerminals() : undefined;
    const shown = terminals ? showTerminals(terminals) : undefined;
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
        permission: (params, token) => askPermission(params, token, this.diffs),
        toolCall: (call) => this.runTool(call),
        documents: this.host,
        terminals,
        elicitation: async (params, token) => (this.questions ? this.questions(params, token) : { action: "decline" }),
      },
    );
    void started.then(
      (client) => client.onClose(() => shown?.dispose()),
      () => shown?.dispose(),
    );
    const reported = started.then(
      (client) => {
        this.emit(null);
        client.onClose(() => {
          if (this.current !== reported || this.stopping) return;
          this.current = undefined;
          this.output.warn("the Threadline sidecar stopped");
          this.emit("it stopped unexpectedly (see Threadline: Show Log).");
          this.offerRestart("warning", "The Threadline sidecar stopped.");
        });
        return client;
      },
      (err: unknown) => {
        if (this.current === reported) this.current = undefined;
        const message = err instanceof Error ? err.message : String(err);
        this.output.error(`could not start the sidecar: ${message}`);
        this.emit(`could not start "${s.command}" (${message}). Set threadline.server.command.`);
        this.offerRestart("error", `Threadline: could not start "${s.command}" (${message}). Set threadline.server.command.`);
        throw new SidecarUnavailable(message);
      },
    );
    return reported;
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
