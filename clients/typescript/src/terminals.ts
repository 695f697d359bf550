/**
 * The client side of ACP's `terminal/*`: the sidecar asks the client to run a command
 * (`run_command` with a client that advertised `terminal: true`), and the client owns
 * the process. This host runs each terminal as a child process in its own process group
 * (so a kill reaches what the command started too), keeps its output within the
 * requested byte limit, and fires events so an editor can show the output live (a VS
 * Code pseudoterminal, a chat panel). It has no editor dependency.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { Emitter, type Disposable, type Event } from "vscode-jsonrpc/node";
import type {
  CreateTerminalParams,
  CreateTerminalResult,
  TerminalOutputResult,
  TerminalRef,
  WaitForExitResult,
} from "./types";

/** How a terminal's command ended. */
export interface TerminalExit {
  exitCode: number | null;
  signal: string | null;
}

/** A terminal as the embedding app sees it (for showing it). */
export interface TerminalInfo {
  terminalId: string;
  sessionId: string;
  command: string;
  args: string[];
  cwd: string | undefined;
}

interface Terminal extends TerminalInfo {
  child: ChildProcess;
  /** Output kept so far (at most `limit` bytes, oldest cut first). */
  chunks: Buffer[];
  bytes: number;
  limit: number | undefined;
  truncated: boolean;
  exit: TerminalExit | undefined;
  exited: Promise<TerminalExit>;
}

/** Grace between SIGTERM and SIGKILL when a terminal's command is killed. */
const KILL_GRACE_MS = 400;

export class ChildProcessTerminals implements Disposable {
  private readonly terminals = new Map<string, Terminal>();
  private next = 1;
  private readonly created = new Emitter<TerminalInfo>();
  private readonly output = new Emitter<{ terminalId: string; data: string }>();
  private readonly exited = new Emitter<{ terminalId: string } & TerminalExit>();
  private readonly released = new Emitter<string>();

  /** A terminal was created (its command has been started). */
  readonly onCreate: Event<TerminalInfo> = this.created.event;
  /** A chunk of a terminal's output (stdout and stderr interleaved as they came). */
  readonly onOutput: Event<{ terminalId: string; data: string }> = this.output.event;
  /** A terminal's command exited (or was killed). */
  readonly onExit: Event<{ terminalId: string } & TerminalExit> = this.exited.event;
  /** The server released a terminal; it no longer exists. */
  readonly onRelease: Event<string> = this.released.event;

  /** The ids of the terminals not yet released. */
  get ids(): string[] {
    return [...this.terminals.keys()];
  }

  /** `terminal/create`: start the command; answers at once with the terminal's id. */
  create(params: CreateTerminalParams): CreateTerminalResult {
    const terminalId = `term-${this.next++}`;
    const args = params.args ?? [];
    const cwd = params.cwd ?? undefined;
    const env: NodeJS.ProcessEnv = { ...process.env };
    // ACP passes extra variables as [{name, value}]; the generated type leaves it open.
    const extra = (params as { env?: { name: string; value: string }[] }).env;
    for (const v of extra ?? []) env[v.name] = v.value;
    const child = spawn(params.command, args, {
      cwd,
      env,
      stdio: ["ignore", "pipe", "pipe"],
      detached: process.platform !== "win32",
      windowsHide: true,
    });
    const limit = params.outputByteLimit ?? undefined;
    let settle!: (exit: TerminalExit) => void;
    const term: Terminal = {
      terminalId,
      sessionId: params.sessionId,
      command: params.command,
      args,
      cwd,
      child,
      chunks: [],
      bytes: 0,
      limit,
      truncated: false,
      exit: undefined,
      exited: new Promise<TerminalExit>((resolve) => (settle = resolve)),
    };
    const finish = (exit: TerminalExit) => {
      if (term.exit) return;
      term.exit = exit;
      settle(exit);
      this.exited.fire({ terminalId, ...exit });
    };
    const onData = (chunk: Buffer) => {
      this.keep(term, chunk);
      this.output.fire({ terminalId, data: chunk.toString("utf8") });
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    // The status is the command's; "close" (both pipes ended) makes the output whole.
    // A background job still holding the pipes is stopped with its group, as the
    // sidecar does when it runs a command itself.
    let status: TerminalExit | undefined;
    child.once("exit", (code, signal) => {
      status = { exitCode: code, signal: signal ?? null };
      void this.signalGroup(term);
    });
    child.once("close", (code, signal) =>
      finish(status ?? { exitCode: code, signal: signal ?? null }),
    );
    child.once("error", (err) => {
      this.keep(term, Buffer.from(`${err.message}\n`));
      finish({ exitCode: 127, signal: null });
    });
    this.terminals.set(terminalId, term);
    this.created.fire({ terminalId, sessionId: params.sessionId, command: params.command, args, cwd });
    return { terminalId };
  }

  /** `terminal/output`: the output kept so far, and the exit status once exited. */
  outputOf(ref: TerminalRef): TerminalOutputResult {
    const term = this.get(ref);
    const result: TerminalOutputResult = {
      output: Buffer.concat(term.chunks).toString("utf8"),
      truncated: term.truncated,
    };
    if (term.exit) result.exitStatus = { ...term.exit };
    return result;
  }

  /** `terminal/wait_for_exit`: resolves when the command has exited. */
  async waitForExit(ref: TerminalRef): Promise<WaitForExitResult> {
    return { ...(await this.get(ref).exited) };
  }

  /** `terminal/kill`: stop the command (its whole process group); the terminal stays. */
  async kill(ref: TerminalRef): Promise<Record<string, never>> {
    await this.stop(this.get(ref));
    return {};
  }

  /** `terminal/release`: kill the command if it still runs and forget the terminal. */
  async release(ref: TerminalRef): Promise<Record<string, never>> {
    const term = this.get(ref);
    this.terminals.delete(term.terminalId);
    await this.stop(term);
    this.released.fire(term.terminalId);
    return {};
  }

  /** Kill every terminal still held (the client is going away). */
  async releaseAll(): Promise<void> {
    const all = [...this.terminals.values()];
    this.terminals.clear();
    await Promise.all(all.map((t) => this.stop(t)));
    for (const t of all) this.released.fire(t.terminalId);
  }

  dispose(): void {
    void this.releaseAll();
    this.created.dispose();
    this.output.dispose();
    this.exited.dispose();
    this.released.dispose();
  }

  private get(ref: TerminalRef): Terminal {
    const term = this.terminals.get(ref.terminalId);
    if (!term || term.sessionId !== ref.sessionId) {
      throw new Error(`no terminal ${ref.terminalId} in session ${ref.sessionId}`);
    }
    return term;
  }

  /** Keep a chunk, cutting the oldest bytes past the limit (at a character boundary). */
  private keep(term: Terminal, chunk: Buffer): void {
    term.chunks.push(chunk);
    term.bytes += chunk.length;
    if (term.limit === undefined || term.bytes <= term.limit) return;
    let all = Buffer.concat(term.chunks);
    let start = all.length - term.limit;
    // Skip UTF-8 continuation bytes so the kept text starts on a whole character.
    while (start < all.length && (all[start]! & 0xc0) === 0x80) start++;
    all = all.subarray(start);
    term.chunks = [all];
    term.bytes = all.length;
    term.truncated = true;
  }

  /** SIGTERM to the process group, SIGKILL after a grace; resolves once it exited. */
  private async stop(term: Terminal): Promise<void> {
    if (term.exit) return;
    await this.signalGroup(term);
  }

  private async signalGroup(term: Terminal): Promise<void> {
    const send = (sig: NodeJS.Signals) => {
      const pid = term.child.pid;
      if (pid === undefined) return;
      try {
        if (process.platform === "win32") term.child.kill(sig);
        else process.kill(-pid, sig);
      } catch {
        // Already gone.
      }
    };
    send("SIGTERM");
    const timer = setTimeout(() => send("SIGKILL"), KILL_GRACE_MS);
    await term.exited;
    clearTimeout(timer);
  }
}
