/**
 * Starting the sidecar process. Kept apart from the client so an editor can start the
 * server its own way (a remote shell, a container) and only hand over the streams.
 */
import { spawn, type ChildProcess } from "node:child_process";

export interface SpawnOptions {
  /** Executable to run. Default: `$THREADLINE_COMMAND`, else `threadline` on PATH. */
  command?: string;
  /** Arguments. Default: `["serve"]`. */
  args?: string[];
  /** Extra environment, merged over `process.env` (e.g. `THREADLINE_HOME`). */
  env?: Record<string, string | undefined>;
  cwd?: string;
  /**
   * Where the server's stderr (its log) goes: a callback per chunk, `"inherit"`, or
   * `"ignore"` (default). stdout is never shared: it carries the protocol.
   */
  stderr?: "inherit" | "ignore" | ((chunk: string) => void);
}

export function defaultCommand(): string {
  return process.env.THREADLINE_COMMAND || "threadline";
}

/** Spawn `threadline serve` with piped stdio; rejects early failures through `error`. */
export function spawnServer(options: SpawnOptions = {}): ChildProcess {
  const stderr = options.stderr ?? "ignore";
  const child = spawn(options.command ?? defaultCommand(), options.args ?? ["serve"], {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ["pipe", "pipe", typeof stderr === "function" ? "pipe" : stderr],
    windowsHide: true,
  });
  if (typeof stderr === "function" && child.stderr) {
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk: string) => stderr(chunk));
  }
  return child;
}

/** Resolves with the exit code once the process has exited (null when killed). */
export function waitForExit(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve(child.exitCode);
  }
  return new Promise((resolve) => {
    child.once("exit", (code) => resolve(code));
  });
}
