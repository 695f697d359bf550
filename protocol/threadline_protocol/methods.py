"""The method table: each method's direction, params and result models, and how the
server serves it.

The models live by domain (``initialize``, ``sessions``, ``client_requests``); they are
re-exported here, so ``threadline_protocol.methods`` stays the one place a caller
imports a method's params and results from.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, model_validator

from . import catalog as cat
from .blobs import BlobParams, BlobResult
from .checkpoints import (
    CheckpointUnavailableData,
    DiffParams,
    DiffResult,
    FileDiff,
    RestoredFiles,
    RewindParams,
    RewindResult,
    UnrewindParams,
    UnrewindResult,
    WorkspaceChangedData,
)
from .client_requests import (
    CancelRequestParams,
    CreateElicitationParams,
    CreateElicitationResult,
    ElicitationSchema,
    LspCancelParams,
    PermissionCancelled,
    PermissionOption,
    PermissionSelected,
    PermissionToolCall,
    ReadTextFileParams,
    ReadTextFileResult,
    RequestPermissionParams,
    RequestPermissionResult,
    ToolCallCall,
    ToolCallCallResult,
    WriteTextFileParams,
)
from .content import ContentBlock
from .initialize import (
    AgentCapabilities,
    AgentCapabilitiesMeta,
    ClientCapabilities,
    ClientSessionCapabilities,
    ElicitationCapabilities,
    FileSystemCapability,
    Implementation,
    InitializeParams,
    InitializeResult,
    McpCapabilities,
    ModelInfo,
    PromptCapabilities,
    SessionCapabilities,
    ThreadlineCapabilities,
    ThreadlineClientCapabilities,
)
from .messages import Message, StopReason, Usage
from .meta import CompactResultMeta, McpMeta, PromptResultMeta, ThreadlineBlock
from .sessions import (
    CompactParams,
    CompactResult,
    ConfigSelectOption,
    ContextParts,
    ContextResult,
    EmptyResult,
    EnvVariable,
    ForkParams,
    ForkResult,
    HistoryResult,
    HttpHeader,
    InterruptParams,
    InterruptResult,
    ListSessionsParams,
    ListSessionsResult,
    LoadSessionParams,
    LoadSessionResult,
    McpServer,
    McpServerHttp,
    McpServerStdio,
    NewSessionParams,
    NewSessionResult,
    PromptParams,
    PromptResult,
    QueueChangeResult,
    QueueListResult,
    QueueRemoveParams,
    QueueUpdateParams,
    QueueUpdateResult,
    SessionConfigOption,
    SessionInfo,
    SessionInfoMeta,
    SessionModelState,
    SessionRef,
    SetConfigOptionParams,
    SetConfigOptionResult,
    ThreadlineInterruptOptions,
    ThreadlinePromptOptions,
    ThreadlineSessionOptions,
    ToolDefinition,
    WhileRunning,
)
from .updates import SessionNotification, ToolCallLocation
from .versions import PROTOCOL_VERSION, THREADLINE_PROTOCOL_VERSION
from .work import (
    ApprovalsResult,
    CreateTerminalParams,
    CreateTerminalResult,
    RemoveApprovalParams,
    SetModeParams,
    SetModeResult,
    TerminalOutputResult,
    TerminalRef,
    WaitForExitResult,
)

__all__ = [
    "METHODS",
    "PROTOCOL_VERSION",
    "THREADLINE_PROTOCOL_VERSION",
    "AgentCapabilities",
    "AgentCapabilitiesMeta",
    "BlobParams",
    "BlobResult",
    "CancelRequestParams",
    "CheckpointUnavailableData",
    "ClientCapabilities",
    "ClientSessionCapabilities",
    "CompactParams",
    "CompactResult",
    "CompactResultMeta",
    "ConfigSelectOption",
    "ContentBlock",
    "ContextParts",
    "ContextResult",
    "CreateElicitationParams",
    "CreateElicitationResult",
    "DiffParams",
    "DiffResult",
    "Dispatch",
    "ElicitationCapabilities",
    "ElicitationSchema",
    "EmptyResult",
    "EnvVariable",
    "FileDiff",
    "FileSystemCapability",
    "ForkParams",
    "ForkResult",
    "HistoryResult",
    "HttpHeader",
    "Implementation",
    "InitializeParams",
    "InitializeResult",
    "InterruptParams",
    "InterruptResult",
    "ListSessionsParams",
    "ListSessionsResult",
    "LoadSessionParams",
    "LoadSessionResult",
    "LspCancelParams",
    "McpCapabilities",
    "McpMeta",
    "McpServer",
    "McpServerHttp",
    "McpServerStdio",
    "Message",
    "MethodSpec",
    "ModelInfo",
    "NewSessionParams",
    "NewSessionResult",
    "PermissionCancelled",
    "PermissionOption",
    "PermissionSelected",
    "PermissionToolCall",
    "PromptCapabilities",
    "PromptParams",
    "PromptResult",
    "PromptResultMeta",
    "QueueChangeResult",
    "QueueListResult",
    "QueueRemoveParams",
    "QueueUpdateParams",
    "QueueUpdateResult",
    "ReadTextFileParams",
    "ReadTextFileResult",
    "RequestPermissionParams",
    "RequestPermissionResult",
    "RestoredFiles",
    "RewindParams",
    "RewindResult",
    "SessionCapabilities",
    "SessionConfigOption",
    "SessionInfo",
    "SessionInfoMeta",
    "SessionModelState",
    "SessionNotification",
    "SessionRef",
    "SetConfigOptionParams",
    "SetConfigOptionResult",
    "StopReason",
    "ThreadlineBlock",
    "ThreadlineCapabilities",
    "ThreadlineClientCapabilities",
    "ThreadlineInterruptOptions",
    "ThreadlinePromptOptions",
    "ThreadlineSessionOptions",
    "ToolCallCall",
    "ToolCallCallResult",
    "ToolCallLocation",
    "ToolDefinition",
    "UnrewindParams",
    "UnrewindResult",
    "Usage",
    "WhileRunning",
    "WorkspaceChangedData",
    "WriteTextFileParams",
]


Dispatch = Literal["inline", "task", "notification", "connection"]
"""How the server serves a client→server method:

* ``inline``: answered as its frame is read, so pipelined requests are answered in
  the order they came (``session/new`` then ``session/prompt`` in one write);
* ``task``: run in a task of its own that sends its own answer, so a later request is
  not held up behind it, and ``session/interrupt`` is answered only after the prompt
  it stopped;
* ``notification``: handled as it is read; never answered;
* ``connection``: handled by the connection itself (``exit``, withdrawing requests),
  not by the engine."""


class MethodSpec(BaseModel):
    """One row of the method table: direction, params and result models, and how the
    server serves it (``dispatch``, for client→server methods only)."""

    name: str
    direction: Literal["client_to_server", "server_to_client"]
    kind: Literal["request", "notification"]
    params: type[BaseModel] | None
    result: type[BaseModel] | None
    description: str
    dispatch: Dispatch | None = None

    @model_validator(mode="after")
    def _dispatch_fits(self) -> MethodSpec:
        if self.direction == "server_to_client":
            if self.dispatch is not None and self.dispatch != "connection":
                raise ValueError(f"{self.name}: the server does not serve its own requests")
        elif self.dispatch is None:
            raise ValueError(f"{self.name}: a client→server method needs a dispatch")
        elif (self.kind == "notification") != (self.dispatch in ("notification", "connection")):
            raise ValueError(f"{self.name}: a {self.kind} cannot be dispatched {self.dispatch}")
        return self


def _m(
    name: str,
    params: type[BaseModel] | None,
    result: type[BaseModel] | None,
    description: str,
    *,
    dispatch: Dispatch | None = None,
    kind: Literal["request", "notification"] = "request",
    direction: Literal["client_to_server", "server_to_client"] = "client_to_server",
) -> MethodSpec:
    return MethodSpec(
        name=name,
        direction=direction,
        kind=kind,
        params=params,
        result=result,
        description=description,
        dispatch=dispatch,
    )


method_spec = _m
"""One row of a method table (the v2 table, ``acp_v2_methods.py``, is made the same way)."""


METHODS: dict[str, MethodSpec] = {
    m.name: m
    for m in (
        _m(
            "initialize",
            InitializeParams,
            InitializeResult,
            "Handshake; must come first.",
            dispatch="inline",
        ),
        _m("shutdown", None, None, "Prepare to exit; answers null.", dispatch="task"),
        _m("exit", None, None, "End the process.", kind="notification", dispatch="connection"),
        _m("session/new", NewSessionParams, NewSessionResult, "Open a session.", dispatch="inline"),
        _m(
            "session/prompt",
            PromptParams,
            PromptResult,
            "Run one turn; streams updates.",
            dispatch="task",
        ),
        _m(
            "session/interrupt",
            InterruptParams,
            InterruptResult,
            "Stop the running turn (the queue stays, held; clearQueue empties it).",
            dispatch="task",
        ),
        _m(
            "session/cancel",
            InterruptParams,
            None,
            "ACP's interrupt.",
            kind="notification",
            dispatch="notification",
        ),
        _m(
            "session/fork",
            ForkParams,
            ForkResult,
            "Branch a session at a message.",
            dispatch="inline",
        ),
        _m(
            "session/diff",
            DiffParams,
            DiffResult,
            "The files a stretch of the session changed (default: the last turn).",
            dispatch="task",
        ),
        _m(
            "session/rewind",
            RewindParams,
            RewindResult,
            "End the session before a prompt; the files too, if asked.",
            dispatch="task",
        ),
        _m(
            "session/unrewind",
            UnrewindParams,
            UnrewindResult,
            "Undo the last rewind (files too), until the next prompt.",
            dispatch="task",
        ),
        _m(
            "session/compact",
            CompactParams,
            CompactResult,
            "Summarise older history.",
            dispatch="task",
        ),
        _m(
            "session/history",
            SessionRef,
            HistoryResult,
            "The whole transcript.",
            dispatch="inline",
        ),
        _m(
            "session/blob",
            BlobParams,
            BlobResult,
            "A stored image's bytes, by its threadline-blob: reference.",
            dispatch="inline",
        ),
        _m(
            "session/context",
            SessionRef,
            ContextResult,
            "The next request's size by part (system, tools, history, summary).",
            dispatch="task",
        ),
        _m(
            "session/load",
            LoadSessionParams,
            LoadSessionResult,
            "Replay history as updates.",
            dispatch="inline",
        ),
        _m(
            "session/resume",
            LoadSessionParams,
            LoadSessionResult,
            "Reattach without replay.",
            dispatch="inline",
        ),
        _m(
            "session/list",
            ListSessionsParams,
            ListSessionsResult,
            "Sessions, newest first.",
            dispatch="inline",
        ),
        _m(
            "session/close",
            SessionRef,
            EmptyResult,
            "Free a session's live state.",
            dispatch="task",
        ),
        _m("session/delete", SessionRef, EmptyResult, "Delete a session.", dispatch="task"),
        _m(
            "session/set_config_option",
            SetConfigOptionParams,
            SetConfigOptionResult,
            "Change a session option such as the model.",
            dispatch="inline",
        ),
        _m(
            "session/queue/list",
            SessionRef,
            QueueListResult,
            "The prompts waiting while the session works, in order.",
            dispatch="inline",
        ),
        _m(
            "session/queue/update",
            QueueUpdateParams,
            QueueUpdateResult,
            "Edit a prompt that has not run yet.",
            dispatch="inline",
        ),
        _m(
            "session/queue/remove",
            QueueRemoveParams,
            QueueChangeResult,
            "Remove one waiting prompt, or all of them.",
            dispatch="inline",
        ),
        _m(
            "session/queue/resume",
            SessionRef,
            QueueChangeResult,
            "Let held prompts run (after a crash, an interrupt or a failure).",
            dispatch="task",
        ),
        _m(
            "session/set_mode",
            SetModeParams,
            SetModeResult,
            "Switch the session's mode (ask, plan, code, auto).",
            dispatch="inline",
        ),
        _m(
            "session/approvals",
            SessionRef,
            ApprovalsResult,
            'The session\'s kept "always" answers.',
            dispatch="inline",
        ),
        _m(
            "session/remove_approval",
            RemoveApprovalParams,
            ApprovalsResult,
            'Forget one kept "always" answer.',
            dispatch="inline",
        ),
        _m(
            "session/set_title",
            cat.SetTitleParams,
            EmptyResult,
            "Rename a session.",
            dispatch="inline",
        ),
        _m(
            "session/archive",
            cat.ArchiveParams,
            EmptyResult,
            "Archive (or, archived: false, unarchive) a session.",
            dispatch="inline",
        ),
        _m(
            "session/set_tags",
            cat.SetTagsParams,
            EmptyResult,
            "Replace a session's tags.",
            dispatch="inline",
        ),
        _m(
            "session/search",
            cat.SearchParams,
            cat.SearchResult,
            "Full-text search over titles and messages, ranked, with snippets.",
            dispatch="inline",
        ),
        _m(
            "session/export",
            cat.ExportParams,
            cat.ExportResult,
            "A session as Markdown or as its event log (JSON lines).",
            dispatch="inline",
        ),
        _m(
            "session/import",
            cat.ImportParams,
            cat.ImportResult,
            "A new session from an exported event log.",
            dispatch="inline",
        ),
        _m(
            "session/update",
            SessionNotification,
            None,
            "Streamed session updates.",
            kind="notification",
            direction="server_to_client",
        ),
        _m(
            "session/request_permission",
            RequestPermissionParams,
            RequestPermissionResult,
            "Ask the user before a tool runs.",
            direction="server_to_client",
        ),
        _m(
            "fs/read_text_file",
            ReadTextFileParams,
            ReadTextFileResult,
            "Read a file as the editor has it (unsaved text included).",
            direction="server_to_client",
        ),
        _m(
            "fs/write_text_file",
            WriteTextFileParams,
            EmptyResult,
            "Write a file through the editor.",
            direction="server_to_client",
        ),
        _m(
            "terminal/create",
            CreateTerminalParams,
            CreateTerminalResult,
            "Run a command in the client's terminal (clients that advertised terminal).",
            direction="server_to_client",
        ),
        _m(
            "terminal/output",
            TerminalRef,
            TerminalOutputResult,
            "A client terminal's output so far, and its exit status once it exited.",
            direction="server_to_client",
        ),
        _m(
            "terminal/wait_for_exit",
            TerminalRef,
            WaitForExitResult,
            "Wait until a client terminal's command exits.",
            direction="server_to_client",
        ),
        _m(
            "terminal/kill",
            TerminalRef,
            EmptyResult,
            "Kill a client terminal's command; the terminal stays until released.",
            direction="server_to_client",
        ),
        _m(
            "terminal/release",
            TerminalRef,
            EmptyResult,
            "Free a client terminal (killing its command if it still runs).",
            direction="server_to_client",
        ),
        _m(
            "tool/call",
            ToolCallCall,
            ToolCallCallResult,
            "Run a client-defined tool.",
            direction="server_to_client",
        ),
        _m(
            "elicitation/create",
            CreateElicitationParams,
            CreateElicitationResult,
            "Ask the user a structured question (the ask_user tool).",
            direction="server_to_client",
        ),
        _m(
            "$/cancel_request",
            CancelRequestParams,
            None,
            "Withdraw a request (to ACP clients; accepted from any client).",
            kind="notification",
            direction="server_to_client",
            dispatch="connection",
        ),
        _m(
            "$/cancelRequest",
            LspCancelParams,
            None,
            "Withdraw a request (to LSP clients; accepted from any client).",
            kind="notification",
            direction="server_to_client",
            dispatch="connection",
        ),
    )
}
