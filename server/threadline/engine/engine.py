"""The engine: every session operation the RPC layer exposes, one method each.

Sessions are loaded from the store on first use and kept live until closed; a
closed session is only unloaded (it is durable), so any later call reloads it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Sequence
from typing import Any

import anyio

from threadline_protocol import methods as pm

from ..providers.registry import ProviderRegistry, UnknownModel
from ..store.sqlite import EventStore, InflightStream, SessionRow
from . import updates
from .config import SessionConfig
from .errors import InvalidParams, SessionNotFound
from .ids import new_id, now_iso
from .link import ClientLink
from .mutations import AssistantTruncated, Mutation
from .session import Session
from .transcript import Transcript, cancelled_results

log = logging.getLogger(__name__)

SLASH_COMMANDS: list[tuple[str, str, str | None]] = [
    ("compact", "Summarise older history to free context", "optional instructions"),
    ("fork", "Branch this session into a new one", "optional message id"),
]

LIST_PAGE = 50


def slash_command(blocks: list[dict[str, Any]]) -> tuple[str, str] | None:
    """``("compact", "instructions")`` for a prompt that is just a slash command."""
    if len(blocks) != 1 or blocks[0].get("type") != "text":
        return None
    text = str(blocks[0].get("text", "")).strip()
    for name, _, _ in SLASH_COMMANDS:
        if text == f"/{name}" or text.startswith(f"/{name} "):
            return name, text[len(name) + 1 :].strip()
    return None


class Engine:
    def __init__(self, store: EventStore, providers: ProviderRegistry, link: ClientLink) -> None:
        self.store = store
        self.providers = providers
        self.link = link
        self.sessions: dict[str, Session] = {}

    # -- loading ----------------------------------------------------------------------

    def _load(self, row: SessionRow) -> Session:
        events = self.store.load_events(row.id)
        transcript = Transcript.from_events((e.kind, e.payload) for e in events)
        session = Session(row, transcript, self.store, self.providers, self.link)
        if transcript.open_calls:
            # Calls left open by a crash: no turn is running now, so none will finish.
            session.commit(list(cancelled_results(transcript, "the sidecar stopped")))
        self.sessions[row.id] = session
        return session

    def get(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is not None:
            return session
        row = self.store.get_session(session_id)
        if row is None:
            raise SessionNotFound(session_id)
        return self._load(row)

    def recover(self) -> int:
        """Turn answers cut off by a crash into truncated messages; returns how many."""
        recovered = 0
        for inflight in self.store.inflight_streams():
            try:
                self._recover_one(inflight)
                recovered += 1
            except Exception:
                log.exception("could not recover the interrupted turn of %s", inflight.session_id)
        return recovered

    def _recover_one(self, inflight: InflightStream) -> None:
        row = self.store.get_session(inflight.session_id, include_deleted=True)
        if row is None:
            self.store.clear_stream(inflight.session_id)
            return
        events = self.store.load_events(row.id)
        transcript = Transcript.from_events((e.kind, e.payload) for e in events)
        turn_id = str(inflight.meta.get("turnId") or f"a{transcript.turn_number}")
        content: list[dict[str, Any]] = []
        if inflight.thought:
            content.append({"type": "thought", "text": inflight.thought})
        if inflight.text:
            content.append({"type": "text", "text": inflight.text})
        mutations: list[Mutation] = []
        if inflight.message_id not in transcript.index:
            mutations.append(
                AssistantTruncated(
                    {
                        "messageId": inflight.message_id,
                        "turnId": turn_id,
                        "role": "assistant",
                        "content": content,
                        "createdAt": now_iso(),
                        "model": inflight.meta.get("model"),
                        "truncated": True,
                        "error": "the sidecar stopped before the answer finished",
                    }
                )
            )
        mutations.extend(cancelled_results(transcript, "the sidecar stopped", turn_id))
        self.store.append(row.id, [m.to_event() for m in mutations], now_iso(), end_stream=True)

    # -- lifecycle --------------------------------------------------------------------

    def initialize_result(self, server_version: str) -> dict[str, Any]:
        info = {"name": "threadline", "title": "Threadline", "version": server_version}
        return {
            "protocolVersion": pm.PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": True,
                "promptCapabilities": {"image": False, "audio": False, "embeddedContext": True},
                "mcpCapabilities": {"http": False, "sse": False},
                "sessionCapabilities": {
                    "list": {},
                    "resume": {},
                    "close": {},
                    "delete": {},
                    "fork": {},
                },
                "_meta": {
                    "threadline": {
                        "protocolVersion": pm.THREADLINE_PROTOCOL_VERSION,
                        "interrupt": True,
                        "compact": True,
                        "history": True,
                        "fork": True,
                        "models": self.providers.available(),
                        "defaultModel": self.providers.default_model,
                    }
                },
            },
            "authMethods": [],
            "agentInfo": info,
            "serverInfo": {"name": "threadline", "version": server_version},
        }

    async def shutdown(self) -> None:
        """Interrupt every running turn so its partial state is recorded."""
        running = [s for s in self.sessions.values() if s.turn is not None]
        if running:
            async with anyio.create_task_group() as tg:
                for s in running:
                    tg.start_soon(s.interrupt)
        async with anyio.create_task_group() as tg:
            for s in self.sessions.values():
                tg.start_soon(s.toolset.aclose)
        await self.providers.aclose()

    # -- sessions ---------------------------------------------------------------------

    def _model_options(self, current: str) -> dict[str, Any]:
        models = self.providers.available()
        ids = [m["modelId"] for m in models]
        if current not in ids:
            models = [*models, {"modelId": current, "name": current}]
        return {
            "models": {"currentModelId": current, "availableModels": models},
            "configOptions": [self._model_config_option(current, models)],
        }

    @staticmethod
    def _model_config_option(current: str, models: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "id": "model",
            "name": "Model",
            "type": "select",
            "category": "model",
            "currentValue": current,
            "options": [{"value": m["modelId"], "name": m["name"]} for m in models],
        }

    def _validated_model(self, model: str | None) -> str:
        try:
            return self.providers.validate(model or self.providers.default_model)
        except UnknownModel as exc:
            raise InvalidParams(str(exc), {"model": model}) from exc

    def new_session(
        self, params: pm.NewSessionParams
    ) -> dict[str, Any] | Awaitable[dict[str, Any]]:
        """Synchronous (so a pipelined prompt finds the session), unless MCP servers
        must start: then the result comes from the returned awaitable."""
        opts = params.threadline()
        names = [t.name for t in opts.tools] + [t.name for t in opts.exit_tools]
        if len(set(names)) != len(names):
            raise InvalidParams("tool names must be unique", {"tools": names})
        config = SessionConfig(
            model=self._validated_model(opts.model),
            system_prompt=opts.system_prompt,
            tools=[t.wire() for t in opts.tools],
            exit_tools=[t.wire() for t in opts.exit_tools],
            tool_budget=opts.tool_budget,
            auto_compact=opts.auto_compact,
            strict_tools=opts.strict_tools,
            builtin_tools=opts.builtin_tools,
            max_tokens=opts.max_tokens,
            temperature=opts.temperature,
        )
        session_id = new_id("sess")
        row = self.store.create_session(session_id, params.cwd, config.to_json(), now_iso())
        session = self._load(row)
        # After the response, so clients already know the session the update is for.
        asyncio.get_running_loop().call_soon(
            session.announce, updates.available_commands(SLASH_COMMANDS)
        )
        result: dict[str, Any] = {"sessionId": session_id, **self._model_options(config.model)}
        # A model that cannot answer for want of a key is said now, not at the first prompt.
        if warning := self.providers.key_problem(config.model):
            result["_meta"] = {"threadline": {"warning": warning}}
        if not params.mcp_servers:
            return result
        return self._with_mcp(session, params.mcp_servers, result)

    async def _with_mcp(
        self, session: Session, servers: Sequence[pm.McpServer], result: dict[str, Any]
    ) -> dict[str, Any]:
        """Start the session's MCP servers; one that fails is reported, not fatal."""
        await session.toolset.add_mcp_servers([s.wire() for s in servers])
        failures = session.toolset.failures
        if failures:
            result.setdefault("_meta", {}).setdefault("threadline", {})["mcpFailures"] = failures
        return result

    async def prompt(self, params: pm.PromptParams) -> dict[str, Any]:
        session = self.get(params.session_id)
        blocks = [b.wire() for b in params.prompt]
        command = slash_command(blocks)
        if command is not None:
            return await self._run_command(session, *command)
        return await session.prompt(blocks)

    async def _run_command(self, session: Session, name: str, arg: str) -> dict[str, Any]:
        """``/compact`` and ``/fork`` typed in a prompt (ACP's slash commands)."""
        if name == "compact":
            result = await session.compact(arg or None, 2)
            text = (
                f"Compacted {result['messagesBefore']} messages into "
                f"{result['messagesAfter']} ({result['tokensBefore']} → "
                f"{result['tokensAfter']} tokens)."
                if result["summary"]
                else "Nothing to compact yet."
            )
        else:
            forked = self.fork(
                pm.ForkParams(sessionId=session.id, messageId=arg or None)  # type: ignore[call-arg]
            )
            text = f"Forked into session {forked['sessionId']}."
        turn_id = f"a{session.transcript.turn_number}"
        session.announce(updates.message_chunk("agent_message_chunk", new_id("msg"), turn_id, text))
        return {"stopReason": "end_turn", "_meta": {"threadline": {"command": name}}}

    async def interrupt(self, session_id: str) -> dict[str, Any]:
        return await self.get(session_id).interrupt()

    def cancel(self, session_id: str) -> None:
        session = self.sessions.get(session_id)
        if session is not None:
            session.request_interrupt()

    # -- fork and compact ------------------------------------------------------------------

    def fork(self, params: pm.ForkParams) -> dict[str, Any]:
        """One new row pointing at the parent's log; a running turn is snapshotted as if
        interrupted, in the child only, while the parent's turn keeps running."""
        parent_row = self.store.get_session(params.session_id)
        if parent_row is None:
            raise SessionNotFound(params.session_id)
        live = self.sessions.get(parent_row.id)
        snapshot: list[Mutation] = []
        if params.message_id is not None:
            where = self.store.locate_message(parent_row.id, params.message_id)
            if where is None:
                raise InvalidParams(
                    f"message {params.message_id} is not in session {parent_row.id}",
                    {"messageId": params.message_id},
                )
            base_id, base_seq, base_count = where
            forked_at: str | None = params.message_id
        else:
            base_id, base_seq, base_count = (
                parent_row.id,
                parent_row.last_seq,
                parent_row.message_count,
            )
            forked_at = (
                live.transcript.last_message_id
                if live
                else self.store.last_message_id(parent_row.id)
            )
            if live is not None and live.turn is not None:
                snapshot = live.turn.snapshot()
        child = self.store.fork_session(
            new_id("sess"),
            parent_row,
            base_id,
            base_seq,
            base_count,
            forked_at,
            params.cwd or parent_row.cwd,
            now_iso(),
        )
        if snapshot:
            self.store.append(child.id, [m.to_event() for m in snapshot], now_iso())
        # Named apart from its parent, so the two differ in every session list.
        self.store.update_session(
            child.id, title=f"{parent_row.title or 'session ' + parent_row.id} · fork"
        )
        return {
            "sessionId": child.id,
            "parentSessionId": parent_row.id,
            "forkedAtMessageId": forked_at,
        }

    async def compact(self, params: pm.CompactParams) -> dict[str, Any]:
        session = self.get(params.session_id)
        return await session.compact(params.instructions, params.keep_turns)

    def history(self, session_id: str) -> dict[str, Any]:
        return {"messages": self.get(session_id).transcript.history()}

    def load(self, params: pm.LoadSessionParams) -> dict[str, Any] | Awaitable[dict[str, Any]]:
        """ACP replay: every message as updates, then ``{}``."""
        session = self.get(params.session_id)
        for message in session.transcript.history():
            self._replay(session, message)
        session.announce(updates.available_commands(SLASH_COMMANDS))
        return self._with_mcp(session, params.mcp_servers, {}) if params.mcp_servers else {}

    def _replay(self, session: Session, message: dict[str, Any]) -> None:
        mid, turn, role = message["messageId"], message["turnId"], message["role"]
        for block in message["content"]:
            t = block.get("type")
            if role == "user" and t not in ("tool_result",):
                session.announce(updates.content_chunk("user_message_chunk", mid, turn, block))
            elif t == "text":
                session.announce(
                    updates.message_chunk("agent_message_chunk", mid, turn, block["text"])
                )
            elif t == "thought":
                session.announce(
                    updates.message_chunk("agent_thought_chunk", mid, turn, block["text"])
                )
            elif t == "summary":
                session.announce(
                    updates.message_chunk("agent_message_chunk", mid, turn, block["text"])
                )
            elif t == "tool_use":
                session.announce(
                    updates.tool_call(block["id"], block["name"], "other", block.get("input"), turn)
                )
            elif t == "exit_signal":
                session.announce(
                    updates.tool_call(
                        block.get("id") or new_id("call"),
                        block["name"],
                        "other",
                        block.get("arguments"),
                        turn,
                        status="completed",
                        exit_signal=True,
                    )
                )
            elif t == "tool_result":
                status = block.get("status", "completed")
                session.announce(
                    updates.tool_call_update(
                        block["toolUseId"],
                        "completed" if status == "completed" else "failed",
                        content=block.get("content", []),
                        cancelled=status == "cancelled",
                    )
                )

    def resume(self, params: pm.LoadSessionParams) -> dict[str, Any] | Awaitable[dict[str, Any]]:
        session = self.get(params.session_id)
        return self._with_mcp(session, params.mcp_servers, {}) if params.mcp_servers else {}

    def list_sessions(self, params: pm.ListSessionsParams) -> dict[str, Any]:
        rows = self.store.list_sessions(params.cwd, params.cursor, LIST_PAGE + 1)
        page = rows[:LIST_PAGE]
        out: dict[str, Any] = {
            "sessions": [
                {
                    "sessionId": r.id,
                    "cwd": r.cwd,
                    "title": r.title,
                    "updatedAt": r.updated_at,
                    "_meta": {
                        "parentSessionId": r.parent_id,
                        "messageCount": r.message_count,
                        "model": r.config.get("model"),
                    },
                }
                for r in page
            ]
        }
        if len(rows) > LIST_PAGE:
            last = page[-1]
            out["nextCursor"] = f"{last.updated_at}|{last.id}"
        return out

    async def close(self, session_id: str) -> None:
        session = self.get(session_id)
        await session.interrupt()
        await session.toolset.aclose()
        self.sessions.pop(session_id, None)

    async def delete(self, session_id: str) -> None:
        session = self.sessions.get(session_id)
        if session is not None:
            await session.interrupt()
            await session.toolset.aclose()
            self.sessions.pop(session_id, None)
        elif self.store.get_session(session_id) is None:
            raise SessionNotFound(session_id)
        self.store.delete_session(session_id)

    def set_config_option(self, params: pm.SetConfigOptionParams) -> dict[str, Any]:
        session = self.get(params.session_id)
        if params.config_id == "builtinTools":
            if not isinstance(params.value, bool):
                raise InvalidParams("builtinTools must be true or false", {"value": params.value})
            session.check_idle("change the tools")
            session.set_builtin_tools(params.value)
            self.store.update_session(session.id, config=session.config.to_json(), now=now_iso())
            return {"configOptions": self._model_options(session.config.model)["configOptions"]}
        if params.config_id != "model":
            raise InvalidParams(
                f"unknown config option {params.config_id!r}", {"configId": params.config_id}
            )
        if not isinstance(params.value, str):
            raise InvalidParams("model must be a string", {"value": params.value})
        session.check_idle("change the model")
        session.config.model = self._validated_model(params.value)
        self.store.update_session(session.id, config=session.config.to_json(), now=now_iso())
        return {"configOptions": self._model_options(session.config.model)["configOptions"]}
