"""``initialize``: what the client says about itself, and what the server offers."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from .base import StrictWireModel, WireModel, meta_field
from .meta import ThreadlineBlock
from .versions import PROTOCOL_VERSION


class FileSystemCapability(WireModel):
    read_text_file: bool = False
    write_text_file: bool = False


class ThreadlineClientCapabilities(StrictWireModel):
    """``clientCapabilities._meta.threadline``: what a client says about itself."""

    cancel_method: Literal["$/cancel_request", "$/cancelRequest"] | None = None
    """How the server withdraws its requests to this client. Unset: by the framing
    (newline-delimited → ACP's ``$/cancel_request``, ``Content-Length`` → LSP's
    ``$/cancelRequest``)."""
    while_running: Literal["steer", "queue", "refuse"] | None = None
    """What a ``session/prompt`` that names no ``whileRunning`` does while the session
    works: ``queue`` (run it next), ``steer`` (join the running turn) or ``refuse``
    (-32010, ACP v1's rule). Unset: ``refuse``, since an ACP client that has not said it
    shows a queue would otherwise have prompts run that it never shows as waiting."""
    image_references: bool | None = None
    """``true``: images in ``session/history``, ``session/load``'s replay and live updates
    come as ``threadline-blob:<sha256>`` references (``data`` empty), fetched with
    ``session/blob``. Unset: inline, base64 ``data``."""


class ClientSessionCapabilities(WireModel):
    compaction: dict[str, Any] | None = None
    """ACP's ``session.compaction`` (unstable): ``{}`` when the client shows
    ``compaction_update``. Without it a compaction shows only its summary, as an agent
    message."""
    notices: dict[str, Any] | None = None
    """``session.notices`` (the ACP SDK's unstable schema): ``{}`` when the client shows
    ``notice`` updates. Without it a provider's status notice is only
    ``session_info_update`` ``_meta.threadline.status``."""
    config_options: dict[str, Any] | None = None
    """ACP's ``session.configOptions`` (``boolean``: the client shows boolean options)."""


class ElicitationCapabilities(WireModel):
    """ACP's ``elicitation``: a mode is supported only when its key is present and not
    null (``{}`` advertises no mode)."""

    form: dict[str, Any] | None = None
    url: dict[str, Any] | None = None


class ClientCapabilities(WireModel):
    fs: FileSystemCapability = Field(default_factory=FileSystemCapability)
    terminal: bool = False
    session: ClientSessionCapabilities | None = None
    elicitation: ElicitationCapabilities | None = None
    """Set when the client can put a structured question to the user
    (``elicitation/create``); Threadline asks in form mode only."""
    meta: dict[str, Any] | None = meta_field()

    def threadline(self) -> ThreadlineClientCapabilities:
        raw = (self.meta or {}).get("threadline") or {}
        return ThreadlineClientCapabilities.model_validate(raw)


class Implementation(WireModel):
    name: str
    version: str | None = None
    title: str | None = None


class InitializeParams(StrictWireModel):
    """ACP ``InitializeRequest``; LSP-style keys are accepted too."""

    protocol_version: int = PROTOCOL_VERSION
    client_capabilities: ClientCapabilities = Field(default_factory=ClientCapabilities)
    client_info: Implementation | None = None
    process_id: int | None = None
    capabilities: dict[str, Any] | None = None
    initialization_options: dict[str, Any] | None = None
    meta: dict[str, Any] | None = meta_field()


class PromptCapabilities(WireModel):
    image: bool = False
    audio: bool = False
    embedded_context: bool = True


class McpCapabilities(WireModel):
    http: bool = False
    sse: bool = False


class ModelInfo(WireModel):
    model_id: str
    name: str
    description: str | None = None
    images: bool = False
    """The model sees images (in prompts; tool results too where its API takes them).
    A session on a model that does not still takes ``image`` blocks: the image is kept,
    and the model reads a placeholder (the session warns once). ``promptCapabilities
    .image`` is whether any model does."""


class ThreadlineCapabilities(ThreadlineBlock):
    """Threadline's extension block under ``agentCapabilities._meta.threadline``.

    Every key is always sent (``engine/capabilities.py``), so none is optional here."""

    protocol_version: str
    """Threadline's own protocol version (``THREADLINE_PROTOCOL_VERSION``)."""
    interrupt: bool
    """``session/interrupt`` is served."""
    compact: bool
    """``session/compact`` is served."""
    history: bool
    """``session/history`` is served."""
    fork: bool
    """``session/fork`` is served."""
    models: list[ModelInfo]
    """The models ``session/new`` accepts (``_meta.threadline.model``)."""
    default_model: str
    """The model a session gets when it names none."""
    prompt_queueing: bool
    """A prompt sent while the session works may steer the running turn or wait in the
    session's queue (``_meta.threadline.whileRunning``; ``session/queue/*``)."""


class AgentCapabilitiesMeta(WireModel):
    threadline: ThreadlineCapabilities | None = None


class SessionCapabilities(WireModel):
    list: dict[str, Any] | None = None
    resume: dict[str, Any] | None = None
    close: dict[str, Any] | None = None
    delete: dict[str, Any] | None = None
    fork: dict[str, Any] | None = None
    additional_directories: dict[str, Any] | None = None
    """``{}``: ``additionalDirectories`` is honoured on new, load, resume and fork."""


class AgentCapabilities(WireModel):
    load_session: bool = True
    prompt_capabilities: PromptCapabilities = Field(default_factory=PromptCapabilities)
    mcp_capabilities: McpCapabilities = Field(default_factory=McpCapabilities)
    session_capabilities: SessionCapabilities = Field(default_factory=SessionCapabilities)
    meta: AgentCapabilitiesMeta | None = meta_field()


class InitializeResult(WireModel):
    protocol_version: int = PROTOCOL_VERSION
    agent_capabilities: AgentCapabilities
    auth_methods: list[dict[str, Any]] = Field(default_factory=list)
    agent_info: Implementation
    """Who answers (ACP's ``agentInfo``; an LSP-style ``serverInfo`` is not sent: ACP's
    schema does not define it, and ``agentInfo`` says the same)."""
