"""What the engine needs from the connection to its client (implemented by ``rpc/``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from threadline_protocol import methods as pm
from threadline_protocol import work as pw
from threadline_protocol.rpc_error import RpcError

from .events import Event, ReplayProjection

ClientError = RpcError
"""The client answered a request with a JSON-RPC error."""


class ClientLink(Protocol):
    def announce(self, session_id: str, event: Event) -> None:
        """Show the client an engine event (projected as the link's client is shown
        it); never blocks (slow clients get coalesced deltas)."""
        ...

    @property
    def projection(self) -> ReplayProjection:
        """How this client is shown stored history on ``session/load``."""
        ...

    def notify_updates(self, session_id: str, updates: Sequence[dict[str, Any]]) -> None:
        """Queue many ``session/update``s at once, in order (a replay made by
        `projection`), with one lock."""
        ...

    def notify_updates_json(self, session_id: str, updates: Sequence[bytes]) -> None:
        """`notify_updates` for updates already written as JSON (orjson's bytes)."""
        ...

    # Requests to the client: each waits for the answer and is cancellable (the client
    # is told the request is withdrawn). A client's error answer raises
    # :class:`ClientError`; an answer that is not the method's result raises
    # pydantic's ``ValidationError``.

    async def request_permission(
        self, params: pm.RequestPermissionParams
    ) -> pm.RequestPermissionResult:
        """``session/request_permission``: ask the user before a tool runs."""
        ...

    async def read_text_file(self, params: pm.ReadTextFileParams) -> pm.ReadTextFileResult:
        """``fs/read_text_file``: the file as the editor has it, unsaved text included."""
        ...

    async def write_text_file(self, params: pm.WriteTextFileParams) -> None:
        """``fs/write_text_file``: any answer that is not an error means written."""
        ...

    async def call_tool(self, params: pm.ToolCallCall) -> pm.ToolCallCallResult:
        """``tool/call``: run a client-defined tool."""
        ...

    async def create_elicitation(
        self, params: pm.CreateElicitationParams
    ) -> pm.CreateElicitationResult:
        """``elicitation/create``: put a structured question to the user (only to a
        client that advertised ``elicitation.form``); waits as long as the user takes."""
        ...

    async def create_terminal(self, params: pw.CreateTerminalParams) -> pw.CreateTerminalResult:
        """``terminal/create``: run a command in the client's terminal."""
        ...

    async def terminal_output(self, params: pw.TerminalRef) -> pw.TerminalOutputResult:
        """``terminal/output``: its output so far (and exit status once exited)."""
        ...

    async def wait_for_terminal_exit(self, params: pw.TerminalRef) -> pw.WaitForExitResult:
        """``terminal/wait_for_exit``."""
        ...

    async def kill_terminal(self, params: pw.TerminalRef) -> None:
        """``terminal/kill``: stop the command; the terminal stays until released."""
        ...

    async def release_terminal(self, params: pw.TerminalRef) -> None:
        """``terminal/release``."""
        ...

    def client_capabilities(self) -> dict[str, Any]: ...
