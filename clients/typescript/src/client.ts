/**
 * ThreadlineClient: a typed JSON-RPC connection to a Threadline sidecar.
 *
 * vscode-jsonrpc does the wire work (Content-Length framing, id matching, full-duplex
 * requests, `$/cancelRequest` in both directions); this class adds the protocol's
 * vocabulary on top: one method per protocol method, `session/update` as typed events,
 * and slots for the requests the server sends (permission, `tool/call`, `fs/*`). It has
 * no editor dependency, so VS Code, a CLI or a test can all use it.
 */
import type { ChildProcess } from "node:child_process";
import {
  CancellationToken,
  Emitter,
  ErrorCodes as JsonRpcErrorCodes,
  ResponseError,
  StreamMessageReader,
  StreamMessageWriter,
  createMessageConnection,
  type Disposable,
  type Logger,
  type MessageConnection,
} from "vscode-jsonrpc/node";
import { spawnServer, waitForExit, type SpawnOptions } from "./spawn";
import { ChildProcessTerminals } from "./terminals";
import {
  ACP_PROTOCOL_VERSION,
  type BlobResult,
  type ClientRequestMethod,
  type CompactParams,
  type CompactResult,
  type ContentBlock,
  type ContextResult,
  type ExportParams,
  type ExportResult,
  type ImportParams,
  type ImportResult,
  type ForkParams,
  type ForkResult,
  type HistoryResult,
  type InitializeParams,
  type InitializeResult,
  type InterruptResult,
  type ListSessionsParams,
  type ListSessionsResult,
  type LoadSessionParams,
  type NewSessionParams,
  type NewSessionResult,
  type PromptResult,
  type QueueChangeResult,
  type QueueListResult,
  type QueueUpdateResult,
  type SearchParams,
  type SearchResult,
  type ReadTextFileParams,
  type ReadTextFileResult,
  type RequestPermissionParams,
  type RequestPermissionResult,
  type SessionNotification,
  type SessionUpdate,
  type SessionUpdateKind,
  type SetConfigOptionParams,
  type SetConfigOptionResult,
  type ThreadlineSessionOptions,
  type ToolCallCall,
  type ToolCallCallResult,
  type UpdateOf,
  type WriteTextFileParams,
  type WriteTextFileResult,
  type ParamsOf,
  type ResultOf,
  type CreateElicitationParams,
  type CreateElicitationResult,
  type CreateTerminalParams,
  type CreateTerminalResult,
  type EmptyResult,
  type TerminalOutputResult,
  type TerminalRef,
  type WaitForExitResult,
} from "./types";

/** Answers one server→client request; `token` fires when the server withdraws it. */
export type ServerRequestHandler<P, R> = (params: P, token: CancellationToken) => R | Promise<R>;

/** The server→client requests this client can answer, with their shapes. */
export interface ServerRequests {
  "session/request_permission": [RequestPermissionParams, RequestPermissionResult];
  "tool/call": [ToolCallCall, ToolCallCallResult];
  "fs/read_text_file": [ReadTextFileParams, ReadTextFileResult];
  "fs/write_text_file": [WriteTextFileParams, WriteTextFileResult];
  "terminal/create": [CreateTerminalParams, CreateTerminalResult];
  "terminal/output": [TerminalRef, TerminalOutputResult];
  "terminal/wait_for_exit": [TerminalRef, WaitForExitResult];
  "terminal/kill": [TerminalRef, EmptyResult];
  "terminal/release": [TerminalRef, EmptyResult];
  "elicitation/create": [CreateElicitationParams, CreateElicitationResult];
}
export type ServerRequestName = keyof ServerRequests;

const SERVER_REQUESTS: ServerRequestName[] = [
  "session/request_permission",
  "tool/call",
  "fs/read_text_file",
  "fs/write_text_file",
  "terminal/create",
  "terminal/output",
  "terminal/wait_for_exit",
  "terminal/kill",
  "terminal/release",
  "elicitation/create",
];

/** `session/new` params with the Threadline options spelled out instead of `_meta`. */
export type NewSessionOptions = Omit<NewSessionParams, "mcpServers"> & {
  mcpServers?: NewSessionParams["mcpServers"];
  /** Merged into `_meta.threadline`. */
  threadline?: ThreadlineSessionOptions;
};

export interface ClientOptions {
  /** vscode-jsonrpc logger for transport-level problems. Default: silent. */
  logger?: Logger;
  /** `clientInfo` sent by `initialize`. */
  clientInfo?: { name: string; version: string };
  /**
   * Run the sidecar's commands (`run_command`) here, as ACP `terminal/*`: `true` for a
   * child-process host this client makes, or a host the app made (to show its output).
   * `initialize` then advertises `terminal: true`. Default: off (the sidecar runs them).
   */
  terminals?: boolean | ChildProcessTerminals;
}

const silentLogger: Logger = { error() {}, warn() {}, info() {}, log() {} };

export class ThreadlineClient implements Disposable {
  readonly connection: MessageConnection;
  /** The sidecar process when this client spawned it. */
  readonly process: ChildProcess | undefined;
  /** The `initialize` answer, once received. */
  serverInfo: InitializeResult | undefined;
  /** The `terminal/*` host, when the app opted in (`terminals` option or `useTerminals`). */
  terminals: ChildProcessTerminals | undefined;

  private readonly updates = new Emitter<SessionNotification>();
  private readonly closed = new Emitter<void>();
  private readonly handlers = new Map<ServerRequestName, ServerRequestHandler<never, unknown>>();
  private readonly clientInfo: { name: string; version: string };
  private isClosed = false;
  private disposing: Promise<number | null> | undefined;

  /** Spawn `threadline serve` (or `options.command`) and connect to its stdio. */
  static spawn(options: SpawnOptions & ClientOptions = {}): ThreadlineClient {
    const child = spawnServer(options);
    if (!child.stdout || !child.stdin) throw new Error("server process has no stdio pipes");
    return new ThreadlineClient(child.stdout, child.stdin, options, child);
  }

  /** Connect to a server already running behind these streams (socket, pipe, ssh…). */
  static connect(
    input: NodeJS.ReadableStream,
    output: NodeJS.WritableStream,
    options: ClientOptions = {},
  ): ThreadlineClient {
    return new ThreadlineClient(input, output, options);
  }

  private constructor(
    input: NodeJS.ReadableStream,
    output: NodeJS.WritableStream,
    options: ClientOptions,
    child?: ChildProcess,
  ) {
    this.process = child;
    this.clientInfo = options.clientInfo ?? { name: "threadline-ts-client", version: "0.1.0" };
    this.connection = createMessageConnection(
      new StreamMessageReader(input),
      new StreamMessageWriter(output),
      options.logger ?? silentLogger,
    );
    this.connection.onNotification("session/update", (params: SessionNotification) => {
      this.updates.fire(params);
    });
    for (const method of SERVER_REQUESTS) {
      this.connection.onRequest(method, (params: unknown, token: CancellationToken) =>
        this.dispatch(method, params, token),
      );
    }
    if (options.terminals) {
      this.useTerminals(options.terminals === true ? undefined : options.terminals);
    }
    this.connection.onClose(() => this.markClosed());
    child?.once("exit", () => this.markClosed());
    // A write to a dead process surfaces as EPIPE on the stream; the pending requests
    // are rejected by the connection, so the stream error itself needs no rethrow.
    output.on?.("error", () => this.markClosed());
    this.connection.listen();
  }

  // -- events ----------------------------------------------------------------------------

  /** Every `session/update` notification, for all sessions. */
  onUpdate(listener: (notification: SessionNotification) => void): Disposable {
    return this.updates.event(listener);
  }

  /** Updates of one session only. */
  onSessionUpdate(sessionId: string, listener: (update: SessionUpdate) => void): Disposable {
    return this.updates.event((n) => {
      if (n.sessionId === sessionId) listener(n.update);
    });
  }

  /** Updates of one kind, narrowed: `onUpdateOf("tool_call", u => u.toolCallId)`. */
  onUpdateOf<K extends SessionUpdateKind>(
    kind: K,
    listener: (update: UpdateOf<K>, sessionId: string) => void,
  ): Disposable {
    return this.updates.event((n) => {
      if (n.update.sessionUpdate === kind) listener(n.update as UpdateOf<K>, n.sessionId);
    });
  }

  /** Fires once when the connection or the process goes away. */
  onClose(listener: () => void): Disposable {
    return this.closed.event(listener);
  }

  get isConnected(): boolean {
    return !this.isClosed;
  }

  // -- server -> client requests ---------------------------------------------------------

  /**
   * Answer one kind of server request. Without a handler the server gets
   * MethodNotFound, which it treats as "not allowed" / a failed tool. Register the `fs/*`
   * handlers before `initialize` so the capabilities advertise them.
   */
  handle<M extends ServerRequestName>(
    method: M,
    handler: ServerRequestHandler<ServerRequests[M][0], ServerRequests[M][1]>,
  ): Disposable {
    this.handlers.set(method, handler as ServerRequestHandler<never, unknown>);
    return {
      dispose: () => {
        if (this.handlers.get(method) === handler) this.handlers.delete(method);
      },
    };
  }

  onRequestPermission(
    handler: ServerRequestHandler<RequestPermissionParams, RequestPermissionResult>,
  ): Disposable {
    return this.handle("session/request_permission", handler);
  }

  onToolCall(handler: ServerRequestHandler<ToolCallCall, ToolCallCallResult>): Disposable {
    return this.handle("tool/call", handler);
  }

  /**
   * Answer the agent's questions (ACP `elicitation/create`, form mode); register before
   * `initialize` so the capabilities advertise `elicitation: {form: {}}`.
   */
  onElicitation(handler: ServerRequestHandler<CreateElicitationParams, CreateElicitationResult>): Disposable {
    return this.handle("elicitation/create", handler);
  }

  onReadTextFile(handler: ServerRequestHandler<ReadTextFileParams, ReadTextFileResult>): Disposable {
    return this.handle("fs/read_text_file", handler);
  }

  onWriteTextFile(
    handler: ServerRequestHandler<WriteTextFileParams, WriteTextFileResult>,
  ): Disposable {
    return this.handle("fs/write_text_file", handler);
  }

  /**
   * Answer `terminal/*` with `host` (default: a new child-process host); call before
   * `initialize` so the capabilities advertise `terminal: true`. Returns the host.
   */
  useTerminals(host: ChildProcessTerminals = new ChildProcessTerminals()): ChildProcessTerminals {
    this.terminals = host;
    this.handle("terminal/create", (p) => host.create(p));
    this.handle("terminal/output", (p) => host.outputOf(p));
    this.handle("terminal/wait_for_exit", (p) => host.waitForExit(p));
    this.handle("terminal/kill", (p) => host.kill(p));
    this.handle("terminal/release", (p) => host.release(p));
    return host;
  }

  private async dispatch(method: ServerRequestName, params: unknown, token: CancellationToken) {
    const handler = this.handlers.get(method) as ServerRequestHandler<unknown, unknown> | undefined;
    if (!handler) {
      return new ResponseError(JsonRpcErrorCodes.MethodNotFound, `client does not handle ${method}`);
    }
    try {
      return await handler(params, token);
    } catch (err) {
      if (err instanceof ResponseError) return err;
      return new ResponseError(
        JsonRpcErrorCodes.InternalError,
        err instanceof Error ? err.message : String(err),
      );
    }
  }

  // -- generic access --------------------------------------------------------------------

  /** Any client→server request, typed from the generated method table. */
  request<M extends ClientRequestMethod>(
    method: M,
    params: ParamsOf<M>,
    token?: CancellationToken,
  ): Promise<ResultOf<M>> {
    return this.connection.sendRequest(method, params, token ?? CancellationToken.None);
  }

  // -- lifecycle -------------------------------------------------------------------------

  /**
   * The handshake. Capabilities default to what this client can actually do: `fs`
   * reads/writes are advertised only when a handler for them is registered.
   */
  async initialize(
    params: Partial<InitializeParams> = {},
    token?: CancellationToken,
  ): Promise<InitializeResult> {
    const full: InitializeParams = {
      protocolVersion: ACP_PROTOCOL_VERSION,
      clientCapabilities: {
        fs: {
          readTextFile: this.handlers.has("fs/read_text_file"),
          writeTextFile: this.handlers.has("fs/write_text_file"),
        },
        // Progress of compactions arrives as ACP's `compaction_update`.
        session: { compaction: {} },
        terminal: this.handlers.has("terminal/create"),
        // Form questions from `ask_user`, only when someone answers them.
        ...(this.handlers.has("elicitation/create") ? { elicitation: { form: {} } } : {}),
      },
      clientInfo: this.clientInfo,
      ...params,
    };
    this.serverInfo = await this.request("initialize", full, token);
    return this.serverInfo;
  }

  /** `shutdown`: the server finishes durable writes and answers null. */
  async shutdown(token?: CancellationToken): Promise<void> {
    await this.connection.sendRequest("shutdown", token ?? CancellationToken.None);
  }

  /** `exit` notification: the server process ends. */
  async exit(): Promise<void> {
    await this.connection.sendNotification("exit");
  }

  // -- sessions --------------------------------------------------------------------------

  newSession(options: NewSessionOptions, token?: CancellationToken): Promise<NewSessionResult> {
    const { threadline, _meta, mcpServers, ...rest } = options;
    const meta = threadline ? { ...(_meta ?? {}), threadline } : _meta;
    const params: NewSessionParams = { ...rest, mcpServers: mcpServers ?? [] };
    if (meta) params._meta = meta;
    return this.request("session/new", params, token);
  }

  /**
   * Run one turn. Updates stream through `onUpdate` while this is pending; it resolves
   * when the turn has ended (`stopReason: "cancelled"` after an interrupt). Cancelling
   * `token` sends `$/cancelRequest`; the promise then rejects with -32800.
   */
  prompt(
    sessionId: string,
    prompt: string | ContentBlock[],
    token?: CancellationToken,
    whileRunning?: "steer" | "queue" | "refuse",
  ): Promise<PromptResult> {
    const blocks: ContentBlock[] =
      typeof prompt === "string" ? [{ type: "text", text: prompt }] : prompt;
    const params: ParamsOf<"session/prompt"> = { sessionId, prompt: blocks };
    if (whileRunning) params._meta = { threadline: { whileRunning } };
    return this.request("session/prompt", params, token);
  }

  /**
   * A prompt for a session that is working (here or in another window): `steer` joins
   * the running turn at its next model call and resolves when that turn ends; `queue`
   * runs it as the next turn and resolves when its own turn ends.
   */
  send(
    sessionId: string,
    prompt: string | ContentBlock[],
    whileRunning: "steer" | "queue",
    token?: CancellationToken,
  ): Promise<PromptResult> {
    return this.prompt(sessionId, prompt, token, whileRunning);
  }

  /** Stop the running turn; resolves after it has fully stopped. Idempotent. What waits
   * in the queue stays, held (`clearQueue` removes it too). */
  interrupt(
    sessionId: string,
    token?: CancellationToken,
    clearQueue = false,
  ): Promise<InterruptResult> {
    const params: ParamsOf<"session/interrupt"> = { sessionId };
    if (clearQueue) params._meta = { threadline: { clearQueue: true } };
    return this.request("session/interrupt", params, token);
  }

  /** The prompts waiting while the session works, in the order they run. */
  queue(sessionId: string, token?: CancellationToken): Promise<QueueListResult> {
    return this.request("session/queue/list", { sessionId }, token);
  }

  /** Replace the content of a prompt that has not run yet. */
  editQueued(
    sessionId: string,
    id: string,
    prompt: string | ContentBlock[],
    token?: CancellationToken,
  ): Promise<QueueUpdateResult> {
    const blocks: ContentBlock[] =
      typeof prompt === "string" ? [{ type: "text", text: prompt }] : prompt;
    return this.request("session/queue/update", { sessionId, id, prompt: blocks }, token);
  }

  /** Remove one waiting prompt, or (no `id`) all of them. */
  removeQueued(sessionId: string, id?: string, token?: CancellationToken): Promise<QueueChangeResult> {
    return this.request("session/queue/remove", id ? { sessionId, id } : { sessionId }, token);
  }

  /** Let held prompts run (after a crash, an interrupt or a failure). */
  resumeQueue(sessionId: string, token?: CancellationToken): Promise<QueueChangeResult> {
    return this.request("session/queue/resume", { sessionId }, token);
  }

  /** ACP's `session/cancel` notification: interrupt without waiting for an answer. */
  async cancel(sessionId: string): Promise<void> {
    await this.connection.sendNotification("session/cancel", { sessionId });
  }

  /** Branch a session at a message (inclusive); the parent is untouched. */
  fork(params: ForkParams, token?: CancellationToken): Promise<ForkResult> {
    return this.request("session/fork", params, token);
  }

  /** Summarise older history; progress arrives as `compaction_update` updates. */
  compact(params: CompactParams, token?: CancellationToken): Promise<CompactResult> {
    return this.request("session/compact", params, token);
  }

  history(sessionId: string, token?: CancellationToken): Promise<HistoryResult> {
    return this.request("session/history", { sessionId }, token);
  }

  /** The next request's size by part (system, tools, history, summary), in tokens. */
  context(sessionId: string, token?: CancellationToken): Promise<ContextResult> {
    return this.request("session/context", { sessionId }, token);
  }

  /** A stored image's bytes (base64) by its `threadline-blob:<sha256>` reference: what a
   * client that said `imageReferences` is shown instead of inline `data`. */
  blob(sessionId: string, uri: string, token?: CancellationToken): Promise<BlobResult> {
    return this.request("session/blob", { sessionId, uri }, token);
  }

  /** ACP `session/load`: the history is replayed as updates before this resolves (with the
   * session's `modes` and config options). */
  load(params: LoadSessionParams, token?: CancellationToken): Promise<ResultOf<"session/load">> {
    return this.request("session/load", { mcpServers: [], ...params }, token);
  }

  /** Reattach to a stored session without replay. */
  async resume(params: LoadSessionParams, token?: CancellationToken): Promise<void> {
    await this.request("session/resume", params, token);
  }

  list(params: ListSessionsParams = {}, token?: CancellationToken): Promise<ListSessionsResult> {
    return this.request("session/list", params, token);
  }

  async close(sessionId: string, token?: CancellationToken): Promise<void> {
    await this.request("session/close", { sessionId }, token);
  }

  async delete(sessionId: string, token?: CancellationToken): Promise<void> {
    await this.request("session/delete", { sessionId }, token);
  }

  /**
   * `session/list` with Threadline's filters spelled out: `archived: true` lists only
   * the archived sessions (default: only those not archived), `tag` only those tagged.
   */
  listFiltered(
    params: ListSessionsParams & { archived?: boolean; tag?: string },
    token?: CancellationToken,
  ): Promise<ListSessionsResult> {
    const { archived, tag, _meta, ...rest } = params;
    const filter: { archived?: boolean; tag?: string } = {};
    if (archived !== undefined) filter.archived = archived;
    if (tag !== undefined) filter.tag = tag;
    const meta = Object.keys(filter).length ? { ...(_meta ?? {}), threadline: filter } : _meta;
    return this.list(meta ? { ...rest, _meta: meta } : rest, token);
  }

  /** Rename a session (one line, 1–200 characters); this connection gets a `session_info_update`. */
  async setTitle(sessionId: string, title: string, token?: CancellationToken): Promise<void> {
    await this.request("session/set_title", { sessionId, title }, token);
  }

  /** Archive a session (`archived: false` unarchives); it stays loadable and searchable. */
  async archive(sessionId: string, archived = true, token?: CancellationToken): Promise<void> {
    await this.request("session/archive", { sessionId, archived }, token);
  }

  /** Replace a session's tags (an empty list removes them). */
  async setTags(sessionId: string, tags: string[], token?: CancellationToken): Promise<void> {
    await this.request("session/set_tags", { sessionId, tags }, token);
  }

  /** Full-text search over every session's title and messages, best first, with snippets. */
  search(params: SearchParams, token?: CancellationToken): Promise<SearchResult> {
    return this.request("session/search", params, token);
  }

  /** A session as Markdown (a transcript) or JSONL (its event log, for `importSession`). */
  exportSession(params: ExportParams, token?: CancellationToken): Promise<ExportResult> {
    return this.request("session/export", params, token);
  }

  /** A new session from a JSONL export. */
  importSession(params: ImportParams, token?: CancellationToken): Promise<ImportResult> {
    return this.request("session/import", params, token);
  }

  setConfigOption(
    params: SetConfigOptionParams,
    token?: CancellationToken,
  ): Promise<SetConfigOptionResult> {
    return this.request("session/set_config_option", params, token);
  }

  /** Switch a session's model (`set_config_option` with `configId: "model"`). */
  setModel(sessionId: string, model: string, token?: CancellationToken) {
    return this.setConfigOption({ sessionId, configId: "model", value: model }, token);
  }

  /** Switch a session's mode (`ask`, `plan`, `code`, `auto`); its clients get `current_mode_update`. */
  setMode(
    sessionId: string,
    modeId: string,
    token?: CancellationToken,
  ): Promise<ResultOf<"session/set_mode">> {
    return this.request("session/set_mode", { sessionId, modeId }, token);
  }

  /** The session's kept "always allow" / "always reject" answers. */
  approvals(sessionId: string, token?: CancellationToken): Promise<ResultOf<"session/approvals">> {
    return this.request("session/approvals", { sessionId }, token);
  }

  /** Forget one kept answer; resolves with the rules left. */
  removeApproval(
    sessionId: string,
    ruleId: string,
    token?: CancellationToken,
  ): Promise<ResultOf<"session/remove_approval">> {
    return this.request("session/remove_approval", { sessionId, ruleId }, token);
  }

  /** The files a session changed between two of its messages (default: its last turn). */
  diff(params: ParamsOf<"session/diff">, token?: CancellationToken): Promise<ResultOf<"session/diff">> {
    return this.request("session/diff", params, token);
  }

  /** End the session just before a prompt (files too with `restoreFiles`); the result's
   * `rewindId` undoes it until the next prompt. */
  rewind(params: ParamsOf<"session/rewind">, token?: CancellationToken): Promise<ResultOf<"session/rewind">> {
    return this.request("session/rewind", params, token);
  }

  /** Bring back what a rewind cut (and its files). */
  unrewind(
    params: ParamsOf<"session/unrewind">,
    token?: CancellationToken,
  ): Promise<ResultOf<"session/unrewind">> {
    return this.request("session/unrewind", params, token);
  }

  // -- teardown --------------------------------------------------------------------------

  /**
   * Graceful stop: `shutdown` + `exit`, wait for the process (killed after
   * `timeoutMs`), then release the connection. Resolves with the exit code when this
   * client spawned the process. Safe to call twice.
   */
  stop(timeoutMs = 5000): Promise<number | null> {
    this.disposing ??= this.doStop(timeoutMs);
    return this.disposing;
  }

  dispose(): void {
    void this.stop();
  }

  private async doStop(timeoutMs: number): Promise<number | null> {
    if (!this.isClosed) {
      try {
        await withTimeout(this.shutdown(), timeoutMs);
        await withTimeout(this.exit(), timeoutMs);
      } catch {
        // The server is gone or stuck; the process handling below settles it.
      }
    }
    await this.terminals?.releaseAll();
    let code: number | null = null;
    const child = this.process;
    if (child) {
      child.stdin?.end();
      const exited = await withTimeout(waitForExit(child), timeoutMs).catch(() => undefined);
      if (exited === undefined) {
        child.kill("SIGKILL");
        await waitForExit(child);
      }
      code = child.exitCode;
    }
    this.connection.dispose();
    this.markClosed();
    return code;
  }

  private markClosed(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.closed.fire();
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
    promise.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(timer);
        reject(e);
      },
    );
  });
}
