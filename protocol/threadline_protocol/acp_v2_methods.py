"""The method table of a v2 connection: ACP v2's methods with the v2 models
(``acp_v2.py``), and Threadline's own verbs under ``_threadline/…`` with the models
they have on v1 (they are Threadline's own on both versions; only their names and the
``_meta`` key move, see ``docs/protocol.md``).

A v2 connection is served from this table alone: ``session/load``, ``session/set_mode``,
``fs/*`` and ``terminal/*`` are not v2 methods, and the un-prefixed Threadline verbs
(``session/fork``…) are v1 names.
"""

from __future__ import annotations

from . import acp_v2 as v2
from . import methods as v1
from .methods import METHODS, MethodSpec, method_spec

OWN = "_threadline/"
"""The prefix of Threadline's own methods on v2."""

VERBS: dict[str, str] = {
    "interrupt": "session/interrupt",
    "fork": "session/fork",
    "compact": "session/compact",
    "history": "session/history",
    "context": "session/context",
    "blob": "session/blob",
    "diff": "session/diff",
    "rewind": "session/rewind",
    "unrewind": "session/unrewind",
    "queue/list": "session/queue/list",
    "queue/update": "session/queue/update",
    "queue/remove": "session/queue/remove",
    "queue/resume": "session/queue/resume",
    "approvals": "session/approvals",
    "remove_approval": "session/remove_approval",
    "set_title": "session/set_title",
    "archive": "session/archive",
    "set_tags": "session/set_tags",
    "search": "session/search",
    "export": "session/export",
    "import": "session/import",
    "tool/call": "tool/call",
}
"""``_threadline/<verb>`` → the v1 method it is (same params and result)."""


SAME = ("elicitation/create",)
"""ACP methods whose v2 shape is v1's (``elicitation/create``: form mode, scoped to the
session and the asking tool call), served with v1's models."""


def _own(verb: str, v1_name: str) -> MethodSpec:
    spec = METHODS[v1_name]
    return spec.model_copy(update={"name": OWN + verb})


METHODS_V2: dict[str, MethodSpec] = {
    m.name: m
    for m in (
        method_spec(
            "initialize",
            v2.InitializeRequestV2,
            v2.InitializeResponseV2,
            "Handshake (protocolVersion 2).",
            dispatch="inline",
        ),
        METHODS["shutdown"],
        METHODS["exit"],
        method_spec(
            "session/new",
            v2.NewSessionRequestV2,
            v2.NewSessionResponseV2,
            "Open a session.",
            dispatch="inline",
        ),
        method_spec(
            "session/prompt",
            v2.PromptRequestV2,
            v2.EmptyResponseV2,
            "Answered {} once the prompt is accepted; the work is reported by updates.",
            dispatch="task",
        ),
        method_spec(
            "session/cancel",
            v2.SessionRefV2,
            None,
            "Stop the foreground work (confirmed by an idle state_update, cancelled).",
            kind="notification",
            dispatch="notification",
        ),
        method_spec(
            "session/resume",
            v2.ResumeSessionRequestV2,
            v2.ResumeSessionResponseV2,
            "Reattach; replayFrom {type: start} replays history first.",
            dispatch="inline",
        ),
        method_spec(
            "session/list",
            v2.ListSessionsRequestV2,
            v2.ListSessionsResponseV2,
            "Sessions, newest first.",
            dispatch="inline",
        ),
        method_spec(
            "session/close",
            v2.SessionRefV2,
            v2.EmptyResponseV2,
            "Free a session's live state.",
            dispatch="task",
        ),
        method_spec(
            "session/delete",
            v2.SessionRefV2,
            v2.EmptyResponseV2,
            "Delete a session.",
            dispatch="task",
        ),
        method_spec(
            "session/set_config_option",
            v2.SetConfigOptionRequestV2,
            v2.SetConfigOptionResponseV2,
            "Change a session option (model, mode, builtinTools).",
            dispatch="inline",
        ),
        method_spec(
            "session/update",
            v2.SessionNotificationV2,
            None,
            "Session updates (upserts, chunks, state).",
            kind="notification",
            direction="server_to_client",
        ),
        method_spec(
            "session/request_permission",
            v2.RequestPermissionRequestV2,
            v1.RequestPermissionResult,
            "Ask the user before a tool runs.",
            direction="server_to_client",
        ),
        METHODS["$/cancel_request"],
        *(METHODS[name] for name in SAME),
        *(_own(verb, name) for verb, name in VERBS.items()),
    )
}
