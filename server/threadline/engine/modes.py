"""The session's mode and kept approvals, as the wire sees them: ``session/set_mode``,
the ``mode`` config option, ``modes`` in session results, ``session/approvals`` and
``session/remove_approval``. What a mode allows is ``tools/modes.py``'s; this module
stores the choice with the session (its config: restarts keep it, forks inherit it)
and tells the session's clients (``current_mode_update``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from threadline_protocol import methods as pm
from threadline_protocol import work as pw

from ..tools.modes import MODES
from .errors import InvalidParams

if TYPE_CHECKING:
    from .session import Session


class Sessions(Protocol):
    """What these operations need of the engine (its live sessions, loaded on demand)."""

    def get(self, session_id: str) -> Session: ...


def mode_state(mode: str) -> pw.SessionModeState:
    return pw.SessionModeState(
        current_mode_id=mode,
        available_modes=[
            pw.SessionMode(id=m.id, name=m.name, description=m.description) for m in MODES.values()
        ],
    )


def mode_option(mode: str) -> pm.SessionConfigOption:
    """The mode as a config option of category ``mode`` (ACP's newer shape)."""
    return pm.SessionConfigOption(
        id="mode",
        name="Mode",
        type="select",
        category="mode",
        current_value=mode,
        options=[
            pm.ConfigSelectOption(value=m.id, name=m.name, description=m.description)
            for m in MODES.values()
        ],
    )


def change_mode(session: Session, mode_id: object) -> None:
    """Switch and store; the next tool call is decided under the new mode (a running
    turn included). Every client of the session is shown it (`feed.py`:
    ``current_mode_update`` and ``config_option_update``)."""
    if not isinstance(mode_id, str) or mode_id not in MODES:
        raise InvalidParams(
            f"unknown mode {mode_id!r}; the modes are {', '.join(MODES)}", {"modeId": mode_id}
        )
    session.config.mode = mode_id
    session.save_config()


def approvals(engine: Sessions, params: pm.SessionRef) -> pw.ApprovalsResult:
    session = engine.get(params.session_id)
    return pw.ApprovalsResult.model_validate({"rules": session.permissions.approvals.rules})


def remove_approval(engine: Sessions, params: pw.RemoveApprovalParams) -> pw.ApprovalsResult:
    session = engine.get(params.session_id)
    if not session.permissions.approvals.remove(params.rule_id):
        raise InvalidParams(f"no kept approval {params.rule_id!r}", {"ruleId": params.rule_id})
    return approvals(engine, pm.SessionRef(session_id=session.id))
