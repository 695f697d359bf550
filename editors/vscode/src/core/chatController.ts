/**
 * The chat's host side: turns webview requests into sidecar calls and sidecar updates
 * into webview messages, for one "current" session at a time. No `vscode` import: the
 * view is anything with `post`, so the whole flow runs in Node against a real sidecar.
 */
import type {
  CancellationToken,
  ContentBlock,
  CreateElicitationParams,
  CreateElicitationResult,
  Disposable,
  FileDiff,
  LoadSessionParams,
  LoadSessionResult,
  SessionConfigOption,
  SessionInfoUpdateInfo,
  SessionModeState,
  ThreadlineClient,
  ThreadlineSessionOptions,
  ToolDefinition,
} from "@threadline/client";
import type { HostMessage, ImageAttachment, ModeChoice, ModelChoice, WebviewMessage, WhileRunning } from "../../webview/src/messages";
import { pickerState, type BuiltinTools } from "../../webview/src/configOptions";
import { sessionTitle } from "../../webview/src/sessions";

export interface ChatSink {
  post(message: HostMessage): void;
}

export interface ChatControllerOptions {
  /** Workspace folder for new sessions (absolute). */
  cwd(): string;
  /** Client tools declared on every new session. */
  tools(): ToolDefinition[];
  /** The model for new sessions when the user has not picked one (undefined: server default). */
  defaultModel(): string | undefined;
  /** Extra `_meta.threadline` options for new sessions. */
  sessionOptions?(): Omit<ThreadlineSessionOptions, "model" | "tools">;
  /** Told whenever a turn starts or ends (VS Code shows the Interrupt button only then). */
  onRunning?(running: boolean): void;
  /** The session to show first (the one on screen before a sidecar restart). */
  initialSessionId?: string | null;
  /**
   * Last context figure per session. A replay carries none, so without this the figure
   * would vanish on resume; owned by the caller so it outlives a sidecar restart.
   */
  contextFigures?: Map<string, { used: number; size: number }>;
  /** Open a diff editor for a file of the last turn's diff (`cwd`: the session's folder). */
  openDiff?(file: FileDiff, cwd: string): Promise<void>;
  /** Ask before something that cannot be taken back lightly (a rewind with files). */
  confirm?(question: string): Promise<boolean>;
  /**
   * Open a `delegate` call's child session somewhere else (the desktop: a new pane).
   * Without it the child is shown here, in place of the parent.
   */
  openChild?(sessionId: string): Promise<void> | void;
  /**
   * Open the parent of the session shown (its **Parent** button) where it is shown
   * (VS Code: the chat view, beside a child's tab). Without it the parent is shown here.
   */
  openParent?(sessionId: string): Promise<void> | void;
}

/** The prompt as ACP blocks: the text (when there is any), then the images. */
export function promptBlocks(text: string, images: readonly ImageAttachment[] = []): ContentBlock[] {
  const blocks: ContentBlock[] = text ? [{ type: "text", text }] : [];
  for (const image of images) blocks.push({ type: "image", mimeType: image.mimeType, data: image.data });
  return blocks;
}

interface ThreadlineInfo {
  models?: { modelId: string; name: string; description?: string | null }[];
  defaultModel?: string;
}

/**
 * What the controller needs of a client: the stdio client in VS Code, a WebSocket
 * client in the desktop app (so this file only imports types, and runs in a browser).
 */
export type ChatClient = Pick<
  ThreadlineClient,
  | "serverInfo"
  | "onUpdate"
  | "newSession"
  | "prompt"
  | "interrupt"
  | "fork"
  | "compact"
  | "setModel"
  | "list"
  | "search"
  | "setTitle"
  | "archive"
> &
  Partial<
    Pick<ThreadlineClient, "history" | "setMode" | "setConfigOption" | "diff" | "rewind" | "unrewind" | "editQueued" | "removeQueued" | "resumeQueue">
  > & {
    /** `session/load`; its result carries the session's modes (a client may drop it). */
    load(params: LoadSessionParams): Promise<LoadSessionResult | void>;
  };

/** -32602: a query `session/search` refuses (blank, no words, too long). */
const INVALID_PARAMS = -32602;

function errorText(err: unknown): string {
  const rpc = err as { code?: unknown; message?: unknown } | null;
  if (rpc && typeof rpc.code === "number" && typeof rpc.message === "string") return `${rpc.message} (${rpc.code})`;
  return err instanceof Error ? err.message : String(err);
}

/**
 * The controllers that share one client (the desktop app's panes share its sidecar).
 * Two of them may show one session: a replay (`session/load`) is for the one that
 * asked, not for a pane already showing the session, and a turn, its end or a
 * compaction started in one is shown in the others too (the sidecar streams a turn's
 * updates to the connection, but only the asker knows its prompt and its end).
 */
class Peers {
  private static readonly byClient = new WeakMap<object, Peers>();
  readonly controllers = new Set<ChatController>();
  /** The controller replaying each session now. */
  readonly loading = new Map<string, ChatController>();

  static of(client: object): Peers {
    let peers = Peers.byClient.get(client);
    if (!peers) {
      peers = new Peers();
      Peers.byClient.set(client, peers);
    }
    return peers;
  }

  /** The other controllers showing `sessionId`. */
  others(self: ChatController, sessionId: string | null): ChatController[] {
    if (!sessionId) return [];
    return [...this.controllers].filter((c) => c !== self && c.currentSessionId === sessionId);
  }
}

export class ChatController implements Disposable {
  private sessionId: string | null = null;
  private parentSessionId: string | null = null;
  /** `child`: the session on screen is a `delegate` call's child session. */
  private kind: "session" | "child" = "session";
  private model: string | null = null;
  private models: ModelChoice[] = [];
  /** The session's built-in tools (`builtinTools` config option; null: not known yet). */
  private builtinTools: BuiltinTools | null = null;
  private modes: ModeChoice[] = [];
  private mode: string | null = null;
  /** The session's folder (diff paths are relative to it). */
  private sessionCwd: string | null = null;
  /** The last turn's diff, as shown (its files open diff editors). */
  private lastDiff: FileDiff[] = [];
  private running = false;
  /** The session's state as the server last said it (a turn in any window counts). */
  private sessionState: string = "idle";
  /** What `onRunning` last said. */
  private reportedBusy = false;
  /** A rewind this controller is making: its own `rewound` notice is not a reload. */
  private rewinding = false;
  /**
   * The replay in flight (`session/load` streams the history into the view). A prompt
   * typed meanwhile waits for it, so its turn lands after the history, not inside it.
   */
  private replay: Promise<unknown> = Promise.resolve();
  /** Questions the agent asks (`elicitation/create`) that wait for the user's form. */
  private readonly questions = new Map<number, { params: CreateElicitationParams; answer(result: CreateElicitationResult): void }>();
  private static questionIds = 0;
  /** The sessions list shows the archived sessions (toggled in the list). */
  private listArchived = false;
  private readonly subscription: Disposable;
  private readonly contextFigures: Map<string, { used: number; size: number }>;
  private readonly peers: Peers;

  constructor(
    private readonly client: ChatClient,
    private readonly sink: ChatSink,
    private readonly options: ChatControllerOptions,
  ) {
    this.contextFigures = options.contextFigures ?? new Map();
    this.sessionId = options.initialSessionId ?? null;
    this.peers = Peers.of(client);
    this.peers.controllers.add(this);
    this.subscription = client.onUpdate((notification) => {
      const u = notification.update;
      if (u.sessionUpdate === "usage_update") this.contextFigures.set(notification.sessionId, { used: u.used, size: u.size });
      if (u.sessionUpdate === "current_mode_update" && notification.sessionId === this.sessionId) {
        this.mode = u.currentModeId;
      }
      // Model, mode or built-in tools changed here or in another window: the pickers
      // follow (the page reads the same update; this keeps the host's copy true).
      if (u.sessionUpdate === "config_option_update" && notification.sessionId === this.sessionId) {
        this.takeConfig(u.configOptions);
      }
      const loader = this.peers.loading.get(notification.sessionId);
      if (loader && loader !== this) return; // another pane's replay: this one shows it already
      if (notification.sessionId !== this.sessionId) return;
      sink.post({ type: "update", notification });
      if (u.sessionUpdate === "session_info_update") this.follow(u._meta?.threadline ?? null);
    });
    const meta = client.serverInfo?.agentCapabilities?._meta as { threadline?: ThreadlineInfo } | null | undefined;
    const info = meta?.threadline ?? {};
    this.models = (info.models ?? []).map((m) => ({ id: m.modelId, name: m.name, description: m.description ?? null }));
    this.model = options.defaultModel() ?? info.defaultModel ?? null;
  }

  get currentSessionId(): string | null {
    return this.sessionId;
  }

  get isRunning(): boolean {
    return this.running;
  }

  get availableModels(): readonly ModelChoice[] {
    return this.models;
  }

  get currentModel(): string | null {
    return this.model;
  }

  get availableModes(): readonly ModeChoice[] {
    return this.modes;
  }

  get currentMode(): string | null {
    return this.mode;
  }

  dispose(): void {
    this.subscription.dispose();
    this.peers.controllers.delete(this);
  }

  /**
   * What another window did to the session on screen (the server's standing
   * subscription): its state (a turn running elsewhere shows as running here), a model
   * change, a rewind (the transcript is replayed again) and a deletion.
   */
  private follow(info: SessionInfoUpdateInfo | null): void {
    if (!info) return;
    if (info.state) {
      this.sessionState = info.state;
      this.reportRunning();
    }
    if (info.model) this.model = info.model;
    const sessionId = this.sessionId;
    if (!sessionId) return;
    if (info.deleted) {
      this.newSession();
      this.notice("info", "That session was deleted in another window; this is a new one.");
    } else if (typeof info.rewound === "number" && !this.rewinding && !this.peers.loading.has(sessionId)) {
      void this.show(sessionId)
        .then(() => this.notice("info", "The session was rewound in another window."))
        .catch((err: unknown) => this.notice("error", errorText(err)));
    }
  }

  /** The session works (a turn here or in another window, a compaction): prompts queue or steer. */
  private get busy(): boolean {
    return this.running || this.sessionState !== "idle";
  }

  /** Tell the other controllers showing this session (`turnStarted`, `turnEnded`…). */
  private toPeers(message: HostMessage, sessionId: string | null = this.sessionId): void {
    for (const peer of this.peers.others(this, sessionId)) peer.sink.post(message);
  }

  /** Handle one webview message; failures become an error notice in the chat. */
  async handle(message: WebviewMessage): Promise<void> {
    try {
      switch (message.type) {
        case "ready":
          return await this.ready();
        case "prompt":
          return await this.prompt(message.text, message.whileRunning, message.images);
        case "openChild":
          return await this.openChild(message.sessionId);
        case "openParent":
          return await this.openParent(message.sessionId);
        case "interrupt":
          return await this.interrupt(message.clearQueue);
        case "queueEdit":
          return await this.editQueued(message.id, message.text);
        case "queueRemove":
          return await this.removeQueued(message.id);
        case "queueResume":
          return await this.resumeQueue();
        case "unrewind":
          return await this.unrewind(message.rewindId);
        case "elicitationAnswer":
          return this.answer(message.id, message.result);
        case "fork":
          return await this.fork(message.messageId);
        case "compact":
          return await this.compact(message.instructions);
        case "setModel":
          return await this.setModel(message.model);
        case "setMode":
          return await this.setMode(message.mode);
        case "setBuiltinTools":
          return await this.setBuiltinTools(message.value);
        case "rewind":
          return await this.rewind(message.messageId);
        case "openDiff":
          return await this.openDiff(message.path);
        case "listSessions":
          return await this.listSessions(message.archived);
        case "resume":
          return await this.resume(message.sessionId);
        case "search":
          return await this.search(message.query);
        case "open":
          return await this.open(message.sessionId, message.messageId);
        case "rename":
          return await this.rename(message.sessionId, message.title, message.relist);
        case "archive":
          return await this.archive(message.sessionId, message.archived, message.relist);
        case "newSession":
          return this.newSession();
        case "restartSidecar":
          return; // the editor's business (it owns the process)
      }
    } catch (err) {
      this.notice("error", errorText(err));
    }
  }

  private notice(level: "info" | "error", text: string): void {
    this.sink.post({ type: "notice", level, text });
  }

  private postSession(title?: string | null, parentTitle?: string | null): void {
    this.sink.post({
      type: "session",
      sessionId: this.sessionId,
      title: title ?? null,
      parentSessionId: this.parentSessionId,
      parentTitle: parentTitle ?? null,
      kind: this.kind,
      models: this.models,
      currentModel: this.model,
      modes: this.modes,
      currentMode: this.mode,
      builtinTools: this.builtinTools,
    });
  }

  /** Take the pickers' state from a session's config options. */
  private takeConfig(options: readonly SessionConfigOption[] | null | undefined): void {
    const picked = pickerState(options);
    if (picked.currentModel !== undefined) this.model = picked.currentModel;
    if (picked.currentMode !== undefined) this.mode = picked.currentMode;
    if (picked.modes && !this.modes.length) this.modes = picked.modes;
    if (picked.builtinTools !== undefined) this.builtinTools = picked.builtinTools;
  }

  /** Take the mode picker's state from a session result (`modes`). */
  private takeModes(state: SessionModeState | null | undefined): void {
    if (!state) return;
    this.modes = state.availableModes.map((m) => ({ id: m.id, name: m.name, description: m.description ?? null }));
    this.mode = state.currentModeId;
  }

  private setRunning(running: boolean): void {
    this.running = running;
    this.reportRunning();
  }

  /** Tell the editor when the session starts or stops working (a turn here or elsewhere). */
  private reportRunning(): void {
    const busy = this.busy;
    if (busy === this.reportedBusy) return;
    this.reportedBusy = busy;
    this.options.onRunning?.(busy);
  }

  /** The webview (re)loaded: send the picker state and replay the current session. */
  private async ready(): Promise<void> {
    if (this.sessionId) {
      await this.show(this.sessionId);
    } else {
      this.sink.post({ type: "reset" });
      this.postSession();
    }
  }

  private async ensureSession(): Promise<string> {
    if (this.sessionId) return this.sessionId;
    const threadline: ThreadlineSessionOptions = {
      ...(this.options.sessionOptions?.() ?? {}),
      tools: this.options.tools(),
    };
    if (this.model) threadline.model = this.model;
    const result = await this.client.newSession({ cwd: this.options.cwd(), threadline });
    this.sessionId = result.sessionId;
    this.sessionCwd = this.options.cwd();
    this.parentSessionId = null;
    this.kind = "session";
    this.takeModes(result.modes);
    this.builtinTools = null;
    this.takeConfig(result.configOptions);
    const state = result.models;
    if (state) {
      this.model = state.currentModelId;
      const known = new Set(this.models.map((m) => m.id));
      for (const m of state.availableModels) {
        if (!known.has(m.modelId)) this.models.push({ id: m.modelId, name: m.name, description: m.description ?? null });
      }
    }
    this.postSession();
    return this.sessionId;
  }

  /**
   * Send a prompt. While the session works (here or in another window) it is queued as
   * the next turn (the default) or, with `steer`, joins the running turn; the server
   * shows either to every window (`queue` in `session_info_update`, a user message).
   */
  async prompt(text: string, whileRunning?: WhileRunning, images: ImageAttachment[] = []): Promise<void> {
    const blocks = promptBlocks(text, images);
    await this.replay;
    if (this.sessionId && this.busy) return this.promptWhileRunning(this.sessionId, text, blocks, whileRunning ?? "queue");
    this.setRunning(true);
    try {
      const sessionId = await this.ensureSession();
      const started: HostMessage = { type: "turnStarted", text, ...(images.length ? { images } : {}) };
      this.sink.post(started);
      this.toPeers(started);
      let ended: HostMessage;
      try {
        const result = await this.client.prompt(sessionId, blocks);
        const meta = result._meta as { threadline?: { messageId?: string; userMessageId?: string } } | null | undefined;
        ended = {
          type: "turnEnded",
          stopReason: result.stopReason,
          usage: result.usage ?? null,
          messageId: meta?.threadline?.messageId ?? null,
          userMessageId: meta?.threadline?.userMessageId ?? null,
        };
      } catch (err) {
        this.notice("error", errorText(err));
        ended = { type: "turnEnded", stopReason: "error" };
      }
      // The view may show another session by now (a delegate call's child, opened from
      // its card while the turn ran): the end and the diff are the parent's.
      this.toPeers(ended, sessionId);
      if (this.sessionId === sessionId) {
        this.sink.post(ended);
        await this.postTurnDiff(sessionId);
      }
    } finally {
      this.setRunning(false);
    }
  }

  private async promptWhileRunning(
    sessionId: string,
    text: string,
    blocks: ContentBlock[],
    whileRunning: WhileRunning,
  ): Promise<void> {
    const result = await this.client.prompt(sessionId, blocks, undefined, whileRunning);
    const meta = (result._meta as { threadline?: { queue?: string; userMessageId?: string } } | null | undefined)?.threadline;
    // Removed from the queue, or held by an interrupt: the queue box said so already.
    // (If the work ended just before it arrived, it ran at once as a turn of this
    // window's; the server showed it here all the same, as a user message.)
    if (meta?.queue || sessionId !== this.sessionId) return;
    if (result.stopReason !== "end_turn" && result.stopReason !== "cancelled") {
      this.notice("info", `The turn that ran “${text.slice(0, 40)}” stopped: ${result.stopReason}.`);
    }
    if (!this.running) await this.postTurnDiff(sessionId);
  }

  async editQueued(id: string, text: string): Promise<void> {
    if (this.sessionId && this.client.editQueued) await this.client.editQueued(this.sessionId, id, text);
  }

  async removeQueued(id?: string): Promise<void> {
    if (this.sessionId && this.client.removeQueued) await this.client.removeQueued(this.sessionId, id);
  }

  async resumeQueue(): Promise<void> {
    if (this.sessionId && this.client.resumeQueue) await this.client.resumeQueue(this.sessionId);
  }

  /**
   * The agent asks the user (`elicitation/create`): the form is shown in this chat and
   * the answer returned; the server withdrawing it (an interrupt) closes the form.
   */
  elicit(params: CreateElicitationParams, token?: CancellationToken): Promise<CreateElicitationResult> {
    const id = ++ChatController.questionIds;
    return new Promise((resolve) => {
      const done = (result: CreateElicitationResult) => {
        if (!this.questions.delete(id)) return;
        listener?.dispose();
        this.sink.post({ type: "elicitation", request: this.pendingQuestion() });
        resolve(result);
      };
      this.questions.set(id, { params, answer: done });
      const listener = token?.onCancellationRequested(() => done({ action: "cancel" }));
      this.sink.post({ type: "elicitation", request: { id, params } });
    });
  }

  private answer(id: number, result: CreateElicitationResult): void {
    this.questions.get(id)?.answer(result);
  }

  /** The oldest question still waiting for the session on screen (null: none). */
  private pendingQuestion(): { id: number; params: CreateElicitationParams } | null {
    for (const [id, q] of this.questions) if (q.params.sessionId === this.sessionId) return { id, params: q.params };
    return null;
  }

  /** The files the last turn changed, listed under the transcript (checkpoints on). */
  private async postTurnDiff(sessionId: string): Promise<void> {
    if (!this.client.diff) return;
    try {
      const { files, notice } = await this.client.diff({ sessionId });
      this.lastDiff = files;
      // A turn that changed nothing posts nothing: the view cleared the list at its start.
      if (files.length) this.sink.post({ type: "turnDiff", files, notice: notice ?? null });
    } catch {
      // No checkpoints for this session (an old server, another host's checkpoint):
      // the turn itself went fine, so there is just no list.
      this.lastDiff = [];
    }
  }

  async setMode(mode: string): Promise<void> {
    if (!this.sessionId) {
      this.notice("info", "Send a first message, then pick the mode.");
      return;
    }
    if (!this.client.setMode) return;
    await this.client.setMode(this.sessionId, mode);
    this.mode = mode;
    this.postSession();
  }

  /** The built-in tools picker: `builtinTools` on or off for the session's next turn. */
  async setBuiltinTools(value: BuiltinTools): Promise<void> {
    if (!this.sessionId) {
      this.notice("info", "Send a first message, then switch the built-in tools.");
      return;
    }
    if (!this.client.setConfigOption) return;
    const result = await this.client.setConfigOption({ sessionId: this.sessionId, configId: "builtinTools", value });
    this.builtinTools = value;
    this.takeConfig(result.configOptions);
    this.postSession();
  }

  /**
   * "Rewind to here (files too)": the session ends just before this prompt and the files
   * it changed since go back; the cut turns stay in a new session (the notice names it).
   */
  async rewind(messageId: string): Promise<void> {
    if (!this.sessionId || !this.client.rewind) return;
    if (this.running) {
      this.notice("info", "A turn is running: interrupt it first.");
      return;
    }
    const ok = (await this.options.confirm?.("Rewind the session to before this message, and its files too?")) ?? true;
    if (!ok) return;
    const sessionId = this.sessionId;
    this.rewinding = true;
    let result;
    try {
      result = await this.client.rewind({ sessionId, beforeMessageId: messageId, restoreFiles: true });
      await this.show(sessionId);
    } finally {
      this.rewinding = false;
    }
    const restored = (result.files.written?.length ?? 0) + (result.files.deleted?.length ?? 0);
    this.lastDiff = [];
    this.sink.post({ type: "turnDiff", files: [] });
    if (this.client.unrewind) this.sink.post({ type: "rewound", rewindId: result.rewindId });
    this.notice(
      "info",
      `Rewound to before that message: ${restored} file${restored === 1 ? "" : "s"} restored. The later turns are kept in the session “… · rewound” until “Undo rewind” or the next prompt.`,
    );
  }

  /** "Undo rewind": the cut turns come back, and their files, until the next prompt. */
  async unrewind(rewindId: string): Promise<void> {
    if (!this.sessionId || !this.client.unrewind) return;
    const sessionId = this.sessionId;
    this.rewinding = true;
    let result;
    try {
      result = await this.client.unrewind({ sessionId, rewindId, restoreFiles: true });
      await this.show(sessionId);
    } finally {
      this.rewinding = false;
    }
    const restored = (result.files.written?.length ?? 0) + (result.files.deleted?.length ?? 0);
    this.notice("info", `Rewind undone: ${result.messageCount} messages, ${restored} file${restored === 1 ? "" : "s"} back.`);
  }

  async openDiff(path: string): Promise<void> {
    const file = this.lastDiff.find((f) => f.path === path);
    if (!file || !this.options.openDiff) return;
    await this.options.openDiff(file, this.sessionCwd ?? this.options.cwd());
  }

  /** Stop the turn (wherever it runs); `clearQueue` removes the waiting prompts too. */
  async interrupt(clearQueue = false): Promise<void> {
    if (!this.sessionId) return;
    await this.client.interrupt(this.sessionId, undefined, clearQueue);
  }

  async fork(messageId?: string): Promise<void> {
    if (!this.sessionId) {
      this.notice("info", "Nothing to fork yet.");
      return;
    }
    const result = await this.client.fork({ sessionId: this.sessionId, ...(messageId ? { messageId } : {}) });
    const parentTitle = await this.show(result.sessionId, result.parentSessionId);
    this.notice("info", `Forked from “${parentTitle}”: this is a new session; the original is unchanged.`);
  }

  /** Fork after the newest message (the editor command has no message to point at). */
  async forkLatest(): Promise<void> {
    if (!this.sessionId) {
      this.notice("info", "Nothing to fork yet.");
      return;
    }
    await this.fork(undefined);
  }

  async compact(instructions?: string): Promise<void> {
    if (!this.sessionId) {
      this.notice("info", "Nothing to compact yet.");
      return;
    }
    if (this.running) {
      this.notice("info", "A turn is running: compact after it ends.");
      return;
    }
    this.sink.post({ type: "compacting", active: true });
    try {
      const result = await this.client.compact({ sessionId: this.sessionId, ...(instructions ? { instructions } : {}) });
      this.sink.post({ type: "compacted", result });
      this.toPeers({ type: "compacted", result });
    } finally {
      this.sink.post({ type: "compacting", active: false });
    }
  }

  async setModel(model: string): Promise<void> {
    if (this.sessionId) {
      const result = await this.client.setModel(this.sessionId, model);
      this.model = model;
      this.takeConfig(result.configOptions);
    } else {
      this.model = model;
    }
    this.postSession();
  }

  async listSessions(archived = this.listArchived): Promise<void> {
    this.listArchived = archived;
    const params = archived ? { cwd: this.options.cwd(), _meta: { threadline: { archived: true } } } : { cwd: this.options.cwd() };
    const { sessions } = await this.client.list(params);
    this.sink.post({ type: "sessions", sessions, archived });
  }

  /**
   * `session/search` over the workspace's sessions (archived ones too: their hits say
   * so). A query the server refuses (no words, too long) is said beside the search box,
   * not as a notice in the transcript.
   */
  async search(query: string): Promise<void> {
    if (!query.trim()) {
      this.sink.post({ type: "searchResults", query: "", hits: [] });
      return;
    }
    try {
      const { hits } = await this.client.search({ query, cwd: this.options.cwd(), limit: 50 });
      this.sink.post({ type: "searchResults", query, hits });
    } catch (err) {
      if ((err as { code?: unknown } | null)?.code !== INVALID_PARAMS) throw err;
      this.sink.post({ type: "searchResults", query, hits: [], error: errorText(err) });
    }
  }

  /**
   * Open a session at a search hit: replay it, then bring the message into view. A hit
   * in a tool result is shown at its tool call (the transcript shows results there).
   */
  async open(sessionId: string, messageId: string | null): Promise<void> {
    await this.show(sessionId);
    if (!messageId) return;
    let toolCallId: string | null = null;
    if (this.client.history) {
      const { messages } = await this.client.history(sessionId);
      const message = messages.find((m) => m.messageId === messageId);
      if (message?.role === "tool") {
        const result = message.content.find((b) => b.type === "tool_result");
        toolCallId = result && result.type === "tool_result" ? result.toolUseId : null;
      }
    }
    this.sink.post({ type: "reveal", messageId, toolCallId });
  }

  /**
   * Rename a session. The server tells this connection (`session_info_update`), which
   * reaches the view when the session is on screen; with `relist` the list is drawn again.
   */
  async rename(sessionId: string, title: string, relist = false): Promise<void> {
    await this.client.setTitle(sessionId, title);
    if (relist) await this.listSessions();
  }

  /** Archive or unarchive a session; it stays loadable (and open, if it is on screen). */
  async archive(sessionId: string, archived: boolean, relist = false): Promise<void> {
    await this.client.archive(sessionId, archived);
    if (relist) await this.listSessions();
  }

  async resume(sessionId: string): Promise<void> {
    await this.show(sessionId);
  }

  /** A `delegate` call's "Open child session": where the editor opens it, or here. */
  async openChild(sessionId: string): Promise<void> {
    if (this.options.openChild) return await this.options.openChild(sessionId);
    await this.show(sessionId);
  }

  async openParent(sessionId: string): Promise<void> {
    if (this.options.openParent) return await this.options.openParent(sessionId);
    await this.show(sessionId);
  }

  newSession(): void {
    this.sessionId = null;
    this.parentSessionId = null;
    this.kind = "session";
    this.mode = null;
    this.lastDiff = [];
    this.sessionState = "idle";
    this.reportRunning();
    this.sink.post({ type: "reset" });
    this.postSession();
  }

  /**
   * Make `sessionId` current and replay its history into the view (`session/load`).
   * Returns the parent's title (forks name their parent by title, never by raw id).
   */
  private show(sessionId: string, parentSessionId: string | null = null): Promise<string> {
    const shown = this.replayInto(sessionId, parentSessionId);
    this.replay = shown.catch(() => undefined);
    return shown;
  }

  private async replayInto(sessionId: string, parentSessionId: string | null): Promise<string> {
    const { sessions } = await this.client.list({});
    let info = sessions.find((s) => s.sessionId === sessionId);
    if (!info) {
      // An archived session (opened from a search hit or the archived list).
      const archived = await this.client.list({ _meta: { threadline: { archived: true } } });
      info = archived.sessions.find((s) => s.sessionId === sessionId);
      if (info) sessions.push(...archived.sessions);
    }
    const meta = (info?._meta ?? {}) as { model?: string; parentSessionId?: string | null; kind?: string };
    this.sessionId = sessionId;
    this.parentSessionId = parentSessionId ?? meta.parentSessionId ?? null;
    this.kind = meta.kind === "child" ? "child" : "session";
    const parentTitle = this.parentSessionId
      ? sessionTitle(sessions.find((s) => s.sessionId === this.parentSessionId))
      : null;
    if (meta.model) this.model = meta.model;
    this.builtinTools = null;
    this.sink.post({ type: "reset" });
    this.sessionState = "idle";
    this.reportRunning();
    this.postSession(info?.title, parentTitle);
    const question = this.pendingQuestion();
    if (question) this.sink.post({ type: "elicitation", request: question });
    this.peers.loading.set(sessionId, this);
    this.sessionCwd = info?.cwd ?? this.options.cwd();
    this.lastDiff = [];
    try {
      const loaded = await this.client.load({ sessionId, cwd: this.sessionCwd });
      if (loaded?.modes || loaded?.configOptions) {
        this.takeModes(loaded.modes);
        this.takeConfig(loaded.configOptions);
        this.postSession(info?.title, parentTitle);
      }
    } finally {
      if (this.peers.loading.get(sessionId) === this) this.peers.loading.delete(sessionId);
    }
    const figure = this.contextFigures.get(sessionId) ?? (await this.storedFigure(sessionId));
    if (figure) this.sink.post({ type: "context", ...figure });
    return parentTitle ?? sessionTitle(info);
  }

  /**
   * The context figure of a session this window has not seen run: the usage of its
   * last model call, as the server stored it (the window size is not stored).
   */
  private async storedFigure(sessionId: string): Promise<{ used: number; size: number | null } | undefined> {
    if (!this.client.history) return undefined;
    const { messages } = await this.client.history(sessionId);
    for (let i = messages.length - 1; i >= 0; i--) {
      const usage = messages[i]!.usage;
      if (usage) return { used: (usage.inputTokens ?? 0) + (usage.outputTokens ?? 0), size: null };
    }
    return undefined;
  }
}
