"""A session's config options as ACP shows them (``configOptions``), and changing one.

The options are ``model`` (the configured models), ``mode`` (`modes.py`) and
``builtinTools`` (the built-in workspace tools, on or off). Every session result
carries them; ``session/set_config_option`` changes one and answers all of them; and
every client of the session, in this window and in others, is sent
``config_option_update`` with all of them when one changed (`feed.py` compares what
each client was last shown, so a change is shown once wherever it was made).

``builtinTools`` is a select of ``on`` and ``off`` rather than ACP's boolean option:
every ACP client shows a select (a boolean only when it advertised
``session.configOptions.boolean``), and the typed clients read every option's
``currentValue`` as a string. ``session/set_config_option`` takes ``true``/``false``
(ACP's boolean form) as well as ``"on"``/``"off"``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from threadline_protocol import methods as pm

from ..providers.registry import ProviderRegistry, UnknownModel
from . import modes as session_modes
from .config import SessionConfig
from .errors import InvalidParams
from .ids import now_iso
from .session import Session

BUILTIN_TOOLS = "builtinTools"


def _on_off(value: object) -> bool | None:
    """``true``/``false`` (ACP's boolean form) or ``"on"``/``"off"`` (the select's)."""
    if isinstance(value, bool):
        return value
    return {"on": True, "off": False}.get(value) if isinstance(value, str) else None


def models(providers: ProviderRegistry, current: str) -> list[pm.ModelInfo]:
    """The configured models, and the session's own if it is no longer one of them."""
    found = [pm.ModelInfo.model_validate(m) for m in providers.available()]
    if all(m.model_id != current for m in found):
        found.append(pm.ModelInfo(model_id=current, name=current))
    return found


def config_options(
    providers: ProviderRegistry, config: SessionConfig
) -> list[pm.SessionConfigOption]:
    current = config.model
    model = pm.SessionConfigOption(
        id="model",
        name="Model",
        type="select",
        category="model",
        current_value=current,
        options=[
            pm.ConfigSelectOption(value=m.model_id, name=m.name) for m in models(providers, current)
        ],
    )
    tools = pm.SessionConfigOption(
        id=BUILTIN_TOOLS,
        name="Built-in tools",
        type="select",
        description="The workspace tools (read, edit, search, run commands…); "
        "the editor's and MCP servers' tools stay either way.",
        current_value="on" if config.options_shown()[2] else "off",
        options=[
            pm.ConfigSelectOption(value="on", name="On"),
            pm.ConfigSelectOption(value="off", name="Off"),
        ],
    )
    return [model, session_modes.mode_option(config.mode), tools]


def validated_model(providers: ProviderRegistry, model: str | None) -> str:
    """A model that cannot answer for want of a key is refused when it is chosen
    (session/new, a model change), not discovered at the next prompt."""
    try:
        valid = providers.validate(model or providers.default_model)
    except UnknownModel as exc:
        raise InvalidParams(str(exc), {"model": model}) from exc
    if problem := providers.key_problem(valid):
        raise InvalidParams(problem, {"model": valid, "reason": "no_api_key"})
    return valid


def set_option(
    providers: ProviderRegistry,
    session: Session,
    config_id: str,
    value: object,
    check_free: Callable[[str], None],
) -> None:
    """Change one option and store it; the caller shows every client the result.
    ``check_free``: refuses while another window works on the session (the model and
    the tools are not changed under a running turn; the mode is, from the next call)."""
    if config_id == "mode":
        session_modes.change_mode(session, value)
        return
    if config_id == BUILTIN_TOOLS:
        enabled = _on_off(value)
        if enabled is None:
            raise InvalidParams("builtinTools must be on or off (true or false)", {"value": value})
        session.check_idle("change the tools")
        check_free(session.id)
        session.set_builtin_tools(enabled)
    elif config_id == "model":
        if not isinstance(value, str):
            raise InvalidParams("model must be a string", {"value": value})
        session.check_idle("change the model")
        check_free(session.id)
        session.config.model = session.shown.model = validated_model(providers, value)
    else:
        raise InvalidParams(f"unknown config option {config_id!r}", {"configId": config_id})
    session.store.update_session(session.id, config=session.config.to_json(), now=now_iso())


def set_roots(session: Session, roots: Sequence[str]) -> None:
    """ACP's ``additionalDirectories``: the session's extra workspace roots from now on
    (the complete list; empty: none), stored with its config. The tools may read and
    write under them as under ``cwd`` (the sandbox's roots), and checkpoints cover
    them."""
    if list(roots) != session.config.roots:
        session.config.roots = list(roots)
        session.save_config()
