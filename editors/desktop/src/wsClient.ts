/**
 * The Threadline client for a browser page: JSON-RPC 2.0 over the WebSocket that
 * `threadline desktop` bridges to a `threadline serve` (one message per frame). It
 * offers what the chat controller uses (ChatClient) with the stdio client's
 * semantics, plus `history` for the fork points and `context` for the context picture.
 */
import type {
  ContentBlock,
  CompactParams,
  CompactResult,
  ContextResult,
  ForkParams,
  ForkResult,
  HistoryResult,
  InitializeResult,
  InterruptResult,
  ListSessionsParams,
  ListSessionsResult,
  LoadSessionParams,
  LoadSessionResult,
  NewSessionOptions,
  NewSessionParams,
  NewSessionResult,
  PromptResult,
  SearchParams,
  SearchResult,
  SessionNotification,
  SetConfigOptionResult,
  ParamsOf,
  QueueChangeResult,
  QueueUpdateResult,
  ResultOf,
} from "@threadline/client";
import type { ChatClient } from "../../vscode/src/core/chatController";

interface Disposable {
  dispose(): void;
}

/** A JSON-RPC error answer, with the server's code. */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

type ServerRequestHandler = (params: unknown) => Promise<unknown>;

export class WsClient implements ChatClient {
  serverInfo: InitializeResult | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly listeners = new Set<(n: SessionNotification) => void>();
  private readonly closeListeners = new Set<(why: string) => void>();
  private readonly handlers = new Map<string, ServerRequestHandler>();

  private constructor(
    private socket: WebSocket,
    private readonly url: string,
  ) {
    this.attach(socket);
  }

  private attach(socket: WebSocket): void {
    this.socket = socket;
    socket.addEventListener("message", (event) => this.receive(String(event.data)));
    socket.addEventListener("close", (event) => {
      if (this.socket !== socket) return;
      const why = event.reason || `connection closed (${event.code})`;
      for (const p of this.pending.values()) p.reject(new RpcError(-32099, why));
      this.pending.clear();
      for (const l of this.closeListeners) l(why);
    });
  }

  private static open(url: string): Promise<WebSocket> {
    return new Promise((resolve, reject) => {
      const socket = new WebSocket(url);
      socket.addEventListener("open", () => resolve(socket), { once: true });
      socket.addEventListener("error", () => reject(new Error(`cannot connect to ${url.split("?")[0]}`)), {
        once: true,
      });
    });
  }

  /** Open the socket; rejects when the server refuses it (wrong token or origin). */
  static async connect(url: string): Promise<WsClient> {
    return new WsClient(await WsClient.open(url), url);
  }

  /** A new socket (so a new sidecar) for the same listeners, initialized as before. */
  async reconnect(): Promise<void> {
    const old = this.socket;
    this.attach(await WsClient.open(this.url));
    old.close();
    await this.initialize();
  }

  onServerRequest(method: string, handler: ServerRequestHandler): void {
    this.handlers.set(method, handler);
  }

  onClose(listener: (why: string) => void): Disposable {
    this.closeListeners.add(listener);
    return { dispose: () => this.closeListeners.delete(listener) };
  }

  onUpdate(listener: (notification: SessionNotification) => void): Disposable {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  private send(message: object): void {
    this.socket.send(JSON.stringify({ jsonrpc: "2.0", ...message }));
  }

  request<T>(method: string, params: unknown): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.send({ id, method, params });
    });
  }

  private receive(text: string): void {
    let message: {
      id?: number | string;
      method?: string;
      params?: unknown;
      result?: unknown;
      error?: { code: number; message: string; data?: unknown };
    };
    try {
      message = JSON.parse(text);
    } catch {
      return;
    }
    if (message.method && message.id !== undefined) {
      void this.answer(message.id, message.method, message.params);
      return;
    }
    if (message.method === "session/update") {
      for (const l of this.listeners) l(message.params as SessionNotification);
      return;
    }
    if (typeof message.id === "number") {
      const pending = this.pending.get(message.id);
      if (!pending) return;
      this.pending.delete(message.id);
      if (message.error) pending.reject(new RpcError(message.error.code, message.error.message, message.error.data));
      else pending.resolve(message.result);
    }
  }

  private async answer(id: number | string, method: string, params: unknown): Promise<void> {
    const handler = this.handlers.get(method);
    if (!handler) {
      this.send({ id, error: { code: -32601, message: `the desktop app does not handle ${method}` } });
      return;
    }
    try {
      this.send({ id, result: await handler(params) });
    } catch (err) {
      this.send({ id, error: { code: -32603, message: err instanceof Error ? err.message : String(err) } });
    }
  }

  async initialize(): Promise<InitializeResult> {
    this.serverInfo = await this.request<InitializeResult>("initialize", {
      protocolVersion: 1,
      // `session.compaction`: a compaction's summary comes as `compaction_update`.
      // `elicitation.form`: the agent's questions are answered in a form in the pane.
      clientCapabilities: {
        fs: { readTextFile: false, writeTextFile: false },
        session: { compaction: {} },
        ...(this.handlers.has("elicitation/create") ? { elicitation: { form: {} } } : {}),
      },
      clientInfo: { name: "threadline-desktop", version: "0.1.0" },
    });
    return this.serverInfo;
  }

  newSession(options: NewSessionOptions): Promise<NewSessionResult> {
    const { threadline, _meta, mcpServers, ...rest } = options;
    const meta = threadline ? { ...(_meta ?? {}), threadline } : _meta;
    const params: NewSessionParams = { ...rest, mcpServers: mcpServers ?? [] };
    if (meta) params._meta = meta;
    return this.request("session/new", params);
  }

  /** `whileRunning`: a prompt for a session that works queues (`queue`) or joins the turn (`steer`). */
  prompt(
    sessionId: string,
    prompt: string | ContentBlock[],
    _token?: unknown,
    whileRunning?: "steer" | "queue" | "refuse",
  ): Promise<PromptResult> {
    const blocks = typeof prompt === "string" ? [{ type: "text", text: prompt }] : prompt;
    const params: Record<string, unknown> = { sessionId, prompt: blocks };
    if (whileRunning) params._meta = { threadline: { whileRunning } };
    return this.request("session/prompt", params);
  }

  /** `clearQueue`: the prompts waiting are removed too. */
  interrupt(sessionId: string, _token?: unknown, clearQueue = false): Promise<InterruptResult> {
    return this.request("session/interrupt", clearQueue ? { sessionId, _meta: { threadline: { clearQueue: true } } } : { sessionId });
  }

  editQueued(sessionId: string, id: string, prompt: string): Promise<QueueUpdateResult> {
    return this.request("session/queue/update", { sessionId, id, prompt: [{ type: "text", text: prompt }] });
  }

  removeQueued(sessionId: string, id?: string): Promise<QueueChangeResult> {
    return this.request("session/queue/remove", id ? { sessionId, id } : { sessionId });
  }

  resumeQueue(sessionId: string): Promise<QueueChangeResult> {
    return this.request("session/queue/resume", { sessionId });
  }

  setMode(sessionId: string, modeId: string): Promise<ResultOf<"session/set_mode">> {
    return this.request("session/set_mode", { sessionId, modeId });
  }

  diff(params: ParamsOf<"session/diff">): Promise<ResultOf<"session/diff">> {
    return this.request("session/diff", params);
  }

  rewind(params: ParamsOf<"session/rewind">): Promise<ResultOf<"session/rewind">> {
    return this.request("session/rewind", params);
  }

  unrewind(params: ParamsOf<"session/unrewind">): Promise<ResultOf<"session/unrewind">> {
    return this.request("session/unrewind", params);
  }

  fork(params: ForkParams): Promise<ForkResult> {
    return this.request("session/fork", params);
  }

  compact(params: CompactParams): Promise<CompactResult> {
    return this.request("session/compact", params);
  }

  setConfigOption(params: ParamsOf<"session/set_config_option">): Promise<SetConfigOptionResult> {
    return this.request("session/set_config_option", params);
  }

  setModel(sessionId: string, model: string): Promise<SetConfigOptionResult> {
    return this.setConfigOption({ sessionId, configId: "model", value: model });
  }

  list(params: ListSessionsParams = {}): Promise<ListSessionsResult> {
    return this.request("session/list", params);
  }

  /** `session/load`: the replay streams as updates; the result carries the session's modes. */
  load(params: LoadSessionParams): Promise<LoadSessionResult> {
    return this.request("session/load", { mcpServers: [], ...params });
  }

  history(sessionId: string): Promise<HistoryResult> {
    return this.request("session/history", { sessionId });
  }

  /** Full-text search over every session's title and messages, best first. */
  search(params: SearchParams): Promise<SearchResult> {
    return this.request("session/search", params);
  }

  async setTitle(sessionId: string, title: string): Promise<void> {
    await this.request("session/set_title", { sessionId, title });
  }

  /** `archived: false` unarchives. */
  async archive(sessionId: string, archived = true): Promise<void> {
    await this.request("session/archive", { sessionId, archived });
  }

  /** The next request's size by part, counted by the provider. */
  context(sessionId: string): Promise<ContextResult> {
    return this.request("session/context", { sessionId });
  }
}
