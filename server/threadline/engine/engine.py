"""The engine: every session operation the RPC layer exposes, one method each.

Sessions are loaded from the store on first use and kept live until closed; a
closed session is only unloaded (it is durable), so any later call reloads it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Generator, Sequence
from typing import Any, TypeVar

import anyio

from threadline_protocol import methods as pm
from threadline_protocol.meta import McpInfo, PromptResultInfo

from ..providers.registry import ProviderRegistry, UnknownModel
from ..store.base import InflightStream, SessionRow, SessionStore
from ..store.owners import current_owner
from . import capabilities, events
from . import modes as session_modes
from .config import SessionConfig
from .errors import InvalidParams, SessionBusy, SessionNotFound
from .folds import FoldCache
from .ids import new_id, now_iso
from .link import ClientLink
from .measure import context_parts
from .mutations import AssistantTruncated, Msg, Mutation
from .ownership import LeaseKeeper, busy_error
from .session import Session
from .transcript import Transcript, cancelled_results
from .watch import RemoteTurnWatcher

log = logging.getLogger(__name__)

SLASH_COMMANDS: tuple[tuple[str, str, str | None], ...] = (
    ("compact", "Summarise older history to free context", "optional instructions"),
    ("fork", "Branch this session into a new one", "optional message id"),
)

LIST_PAGE = 50
LIST_SNAPSHOTS = 32
"""Page walks of ``session/list`` remembered at once (each is a list of ids)."""
REMOTE_INTERRUPT_WAIT = 10.0
"""Seconds ``session/interrupt`` waits for another process to end the turn."""

SetUp = TypeVar("SetUp", pm.NewSessionResult, pm.LoadSessionResult)
"""The results that start a session's MCP servers (and so report their failures)."""


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
    def __init__(self, store: SessionStore, providers: ProviderRegistry, link: ClientLink) -> None:
        self.store = store
        self.providers = providers
        self.link = link
        self.sessions: dict[str, Session] = {}
        self.owner = current_owner()
        self.leases = LeaseKeeper(store, self.owner, self._interrupt_requested)
        self._token = store.change_token()
        self._generation = 0
        self._pages: OrderedDict[str, list[str]] = OrderedDict()
        self._watchers: dict[str, RemoteTurnWatcher] = {}
        self._folds = FoldCache(store)

    # -- loading and freshness ------------------------------------------------------------

    def _load(self, row: SessionRow) -> Session:
        transcript, seq = self._folds.open(row)  # kept, or folded from the log
        session = Session(row, transcript, self.store, self.providers, self.link, seq)
        session.checked = self._generation
        self.sessions[row.id] = session
        if transcript.open_calls or self.store.inflight_stream(row.id) is not None:
            self._repair(session)
        return session

    def _repair(self, session: Session) -> None:
        """Record what a dead process left unfinished (a cut-off answer, calls that will
        never get a result). Never touches a live process's turn: it holds the lease."""
        if session.turn is not None or session.busy is not None:
            return
        if session.id in self.leases.held:
            return
        try:
            self.leases.acquire(session.id, "repair")
        except SessionBusy:
            return
        try:
            self._sync(session)
            self._recover_stream(session)
            if session.transcript.open_calls:
                session.commit(list(cancelled_results(session.transcript, "the sidecar stopped")))
        finally:
            self.leases.release(session.id)

    def _recover_stream(self, session: Session) -> None:
        """Turn a dead owner's journaled answer into a truncated message."""
        inflight = self.store.inflight_stream(session.id)
        if inflight is None:
            return
        mutations: list[Mutation] = []
        if inflight.message_id not in session.transcript.index:
            mutations.append(AssistantTruncated(_truncated_from(inflight, session.transcript)))
        turn_id = str(inflight.meta.get("turnId") or f"a{session.transcript.turn_number}")
        mutations.extend(cancelled_results(session.transcript, "the sidecar stopped", turn_id))
        if mutations:
            session.commit(mutations, end_stream=True)
        else:
            self.store.clear_stream(session.id)

    def _sync(self, session: Session) -> Session:
        """Fold in what other processes committed; one cheap look when nothing did."""
        token = self.store.change_token()
        if token != self._token:
            self._token = token
            self._generation += 1
        if session.checked == self._generation:
            return session
        row = self.store.get_session(session.id)
        if row is None:
            self._forget(session)
            raise SessionNotFound(session.id)
        if row.last_seq != session.seq:
            session.catch_up(self.store.load_events(session.id, after_seq=session.seq), row)
        else:
            session.catch_up([], row)
        session.checked = self._generation
        return session

    def _forget(self, session: Session) -> None:
        """Drop a session another process deleted."""
        self.sessions.pop(session.id, None)
        with contextlib.suppress(RuntimeError):
            asyncio.get_running_loop().create_task(session.toolset.aclose())

    def get(self, session_id: str) -> Session:
        session = self.sessions.get(session_id)
        if session is not None:
            self._sync(session)
            if (
                session.turn is None
                and session.busy is None
                and _mid_turn(session.transcript)
                and self.leases.live_holder(session.id) is None
                and (
                    session.transcript.open_calls
                    or self.store.inflight_stream(session.id) is not None
                )
            ):
                # A turn another sidecar ran stopped mid-way in what we hold, and that
                # sidecar is gone (dying writes nothing): what it left is ours to record.
                self._repair(session)
            return session
        row = self.store.get_session(session_id)
        if row is None:
            self._folds.drop(session_id)
            raise SessionNotFound(session_id)
        return self._load(row)

    @contextlib.contextmanager
    def _leased(self, session: Session, kind: str, turn_id: str | None = None) -> Generator[None]:
        """Hold the session's lease around work that writes to it."""
        session.check_idle("prompt" if kind == "turn" else kind)
        got = self.leases.acquire(session.id, kind, turn_id)
        try:
            self._sync(session)
            if got.took_over is not None or self.store.inflight_stream(session.id) is not None:
                # A dead owner's journal, or ours from a turn whose last record could
                # not be written (a full disk): kept until it is a stored message.
                self._recover_stream(session)
            if session.transcript.open_calls and session.turn is None:
                session.commit(list(cancelled_results(session.transcript, "the sidecar stopped")))
            yield
        finally:
            self.leases.release(session.id)

    def _interrupt_requested(self, session_id: str) -> None:
        """Another process asked (through the store) to stop a turn we run."""
        session = self.sessions.get(session_id)
        if session is not None:
            session.request_interrupt()

    def recover(self) -> int:
        """Turn answers cut off by a crash into truncated messages; returns how many.
        Streams whose owner is alive (another sidecar on this home) are left alone."""
        recovered = 0
        for inflight in self.store.inflight_streams():
            sid = inflight.session_id
            loaded_here = sid not in self.sessions
            try:
                session = self.sessions.get(sid)
                if session is None:
                    session = self.get(sid)  # loading repairs what a dead owner left
                else:
                    self._repair(session)
            except SessionNotFound:
                self.store.clear_stream(sid)  # the journal of a deleted session
                continue
            except Exception:
                log.exception("could not recover the interrupted turn of %s", sid)
                continue
            if self.store.inflight_stream(sid) is None:
                recovered += 1
            elif loaded_here:
                # A live owner's turn: not ours to keep loaded, or a read after that
                # owner dies would not load (and so repair) it again.
                self.sessions.pop(sid, None)
        return recovered

    # -- lifecycle --------------------------------------------------------------------

    def initialize_result(self, server_version: str) -> pm.InitializeResult:
        """The same answer ``rpc/boot.py`` gives before pydantic is imported, as a model."""
        return pm.InitializeResult.model_validate(
            capabilities.initialize_result(server_version, self.providers)
        )

    async def shutdown(self) -> None:
        """Interrupt every running turn so its partial state is recorded."""
        running = [s for s in self.sessions.values() if s.turn is not None]
        if running:
            async with anyio.create_task_group() as tg:
                for s in running:
                    tg.start_soon(s.interrupt)
        for watcher in list(self._watchers.values()):
            watcher.stop()
        async with anyio.create_task_group() as tg:
            for s in self.sessions.values():
                tg.start_soon(s.toolset.aclose)
        await self.leases.aclose()
        await self.providers.aclose()

    # -- sessions ---------------------------------------------------------------------

    def _models(self, current: str) -> list[pm.ModelInfo]:
        """The configured models, and the session's own if it is no longer one of them."""
        models = [pm.ModelInfo.model_validate(m) for m in self.providers.available()]
        if all(m.model_id != current for m in models):
            models.append(pm.ModelInfo(model_id=current, name=current))
        return models

    @staticmethod
    def _model_config_option(
        current: str, models: list[pm.ModelInfo]
    ) -> list[pm.SessionConfigOption]:
        return [
            pm.SessionConfigOption(
                id="model",
                name="Model",
                type="select",
                category="model",
                current_value=current,
                options=[pm.ConfigSelectOption(value=m.model_id, name=m.name) for m in models],
            )
        ]

    def _warning(self, model: str) -> pm.McpMeta | None:
        """A model that cannot answer for want of a key is said when it is chosen, not
        at the first prompt."""
        warning = self.providers.key_problem(model)
        return None if warning is None else pm.McpMeta(threadline=McpInfo(warning=warning))

    def _validated_model(self, model: str | None) -> str:
        try:
            return self.providers.validate(model or self.providers.default_model)
        except UnknownModel as exc:
            raise InvalidParams(str(exc), {"model": model}) from exc

    def new_session(
        self, params: pm.NewSessionParams
    ) -> pm.NewSessionResult | Awaitable[pm.NewSessionResult]:
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
            mode=opts.mode,
        )
        session_id = new_id("sess")
        row = self.store.create_session(session_id, params.cwd, config.to_json(), now_iso())
        session = self._load(row)
        # After the response, so clients already know the session the update is for.
        asyncio.get_running_loop().call_soon(
            session.announce, events.AvailableCommands(SLASH_COMMANDS)
        )
        models = self._models(config.model)
        result = pm.NewSessionResult(
            session_id=session_id,
            modes=session_modes.mode_state(config.mode),
            models=pm.SessionModelState(current_model_id=config.model, available_models=models),
            config_options=self._config_options(session),
        )
        if meta := self._warning(config.model):
            result.meta = meta
        if not params.mcp_servers:
            return result
        return self._with_mcp(session, params.mcp_servers, result)

    async def _with_mcp(
        self, session: Session, servers: Sequence[pm.McpServer], result: SetUp
    ) -> SetUp:
        """Start the session's MCP servers; one that fails is reported, not fatal."""
        await session.toolset.add_mcp_servers([s.wire() for s in servers])
        failures = session.toolset.failures
        if failures:
            meta = result.meta or pm.McpMeta()
            info = meta.threadline or McpInfo()
            info.mcp_failures = dict(failures)
            meta.threadline = info
            result.meta = meta
        return result

    async def prompt(self, params: pm.PromptParams) -> pm.PromptResult:
        session = self.get(params.session_id)
        blocks = [b.wire() for b in params.prompt]
        command = slash_command(blocks)
        if command is not None:
            return await self._run_command(session, *command)
        with self._leased(session, "turn", f"a{session.transcript.turn_number + 1}"):
            return pm.PromptResult.model_validate(await session.prompt(blocks))

    async def _run_command(self, session: Session, name: str, arg: str) -> pm.PromptResult:
        """``/compact`` and ``/fork`` typed in a prompt (ACP's slash commands)."""
        if name == "compact":
            with self._leased(session, "compact"):
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
            text = f"Forked into session {forked.session_id}."
        turn_id = f"a{session.transcript.turn_number}"
        session.announce(events.MessageChunk(new_id("msg"), turn_id, text))
        return pm.PromptResult(
            stop_reason="end_turn",
            meta=pm.PromptResultMeta(threadline=PromptResultInfo(command=name)),
        )

    async def interrupt(self, session_id: str) -> pm.InterruptResult:
        session = self.get(session_id)
        if session.turn is not None:
            return pm.InterruptResult.model_validate(await session.interrupt())
        lease = self.leases.live_holder(session_id)
        if lease is None or lease.kind != "turn":
            return pm.InterruptResult(interrupted=False)
        self.store.request_interrupt(session_id)
        # The owner sees the request at its next heartbeat and records what was left.
        with anyio.move_on_after(REMOTE_INTERRUPT_WAIT):
            while True:
                now = self.store.get_lease(session_id)
                if now is None or now.owner.id != lease.owner.id or now.since != lease.since:
                    break
                await anyio.sleep(0.02)
        self._sync(session)
        return pm.InterruptResult(interrupted=True, turn_id=lease.turn_id)

    def cancel(self, session_id: str) -> None:
        session = self.sessions.get(session_id)
        if session is not None and session.turn is not None:
            session.request_interrupt()
            return
        lease = self.leases.live_holder(session_id)
        if lease is not None and lease.kind == "turn":
            self.store.request_interrupt(session_id)

    # -- fork and compact ------------------------------------------------------------------

    def fork(self, params: pm.ForkParams) -> pm.ForkResult:
        """One new row pointing at the parent's log; a running turn is snapshotted as if
        interrupted, in the child only, while the parent's turn keeps running."""
        live = self.get(params.session_id)
        parent_row = self.store.get_session(live.id)
        if parent_row is None:
            raise SessionNotFound(live.id)
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
            forked_at = live.transcript.last_message_id
            if live.turn is not None:
                snapshot = live.turn.snapshot()
            elif self.leases.live_holder(parent_row.id) is not None:
                snapshot = self._remote_snapshot(live)
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
        return pm.ForkResult(
            session_id=child.id, parent_session_id=parent_row.id, forked_at_message_id=forked_at
        )

    def _remote_snapshot(self, parent: Session) -> list[Mutation]:
        """A fork of a turn running in another process: its partial answer (from the
        journal) as a truncated message, and its open calls cancelled, in the child."""
        out: list[Mutation] = []
        inflight = self.store.inflight_stream(parent.id)
        if inflight is not None and inflight.message_id not in parent.transcript.index:
            msg = _truncated_from(inflight, parent.transcript)
            msg["messageId"] = new_id("msg")
            msg["error"] = "forked while the answer was streaming"
            out.append(AssistantTruncated(msg))
        out.extend(cancelled_results(parent.transcript, "not finished when forked"))
        return out

    async def compact(self, params: pm.CompactParams) -> pm.CompactResult:
        session = self.get(params.session_id)
        with self._leased(session, "compact"):
            return pm.CompactResult.model_validate(
                await session.compact(params.instructions, params.keep_turns)
            )

    def history(self, session_id: str) -> pm.HistoryResult:
        """Built without validation: the messages are the stored ones, as the JSON the
        transcript keeps of each (``Prewritten``: spliced, not serialised again)."""
        return pm.HistoryResult.model_construct(
            messages=self.get(session_id).transcript.history_json()
        )

    async def context(self, session_id: str) -> pm.ContextResult:
        """The next request's size by part (system, tools, history, summary)."""
        session = self.get(session_id)
        return context_parts(session, await session.provider())

    def load(
        self, params: pm.LoadSessionParams
    ) -> pm.LoadSessionResult | Awaitable[pm.LoadSessionResult]:
        """ACP replay: every message as updates, then ``{}``."""
        session = self.get(params.session_id)
        projection = self.link.projection
        made = session.transcript.replay_json(projection.replay, variant=projection.variant)
        if made is not None:
            session.link.notify_updates_json(session.id, made)
        else:
            history = session.transcript.history()
            replayed = [u for m in history for u in projection.replay(m)]
            session.link.notify_updates(session.id, replayed)
        lease = self.leases.live_holder(session.id)
        if lease is not None and lease.kind == "turn" and session.turn is None:
            self._watch(session, lease.owner.id)
        session.announce(events.AvailableCommands(SLASH_COMMANDS))
        return self._set_up(session, params.mcp_servers)

    def _watch(self, session: Session, owner_id: str) -> None:
        """Stream a turn that runs in another process to this client, as it goes."""
        old = self._watchers.get(session.id)
        if old is not None and not old.done:
            return
        watcher = RemoteTurnWatcher(
            session,
            owner_id,
            store=self.store,
            sync=self._new_messages,
        )
        self._watchers[session.id] = watcher
        watcher.start()

    def _new_messages(self, session: Session) -> list[Msg]:
        before = len(session.transcript)
        self._sync(session)
        return session.transcript.messages[before:]

    def resume(
        self, params: pm.LoadSessionParams
    ) -> pm.LoadSessionResult | Awaitable[pm.LoadSessionResult]:
        return self._set_up(self.get(params.session_id), params.mcp_servers)

    def _set_up(
        self, session: Session, servers: Sequence[pm.McpServer]
    ) -> pm.LoadSessionResult | Awaitable[pm.LoadSessionResult]:
        """The session's mode and options at once, or once the MCP servers asked for
        have started."""
        result = pm.LoadSessionResult(
            modes=session_modes.mode_state(session.config.mode),
            config_options=self._config_options(session),
        )
        return self._with_mcp(session, servers, result) if servers else result

    def list_sessions(self, params: pm.ListSessionsParams) -> pm.ListSessionsResult:
        """Pages are cut from one snapshot of the ordering, taken at the first page, so
        a walk lists every session once even while other processes move them to the
        top; rows themselves are read fresh (and a session deleted meanwhile is left
        out)."""
        ids, offset = self._page_walk(params.cwd, params.cursor)
        wanted = ids[offset : offset + LIST_PAGE]
        found = self.store.get_sessions(wanted)
        page = [found[i] for i in wanted if i in found]
        out = pm.ListSessionsResult(
            sessions=[
                pm.SessionInfo(
                    session_id=r.id,
                    cwd=r.cwd,
                    title=r.title,
                    updated_at=r.updated_at,
                    meta=pm.SessionInfoMeta(
                        parent_session_id=r.parent_id,
                        forked_at_message_id=r.forked_at_message_id,
                        message_count=r.message_count,
                        model=r.config.get("model"),
                    ),
                )
                for r in page
            ]
        )
        end = offset + LIST_PAGE
        if end < len(ids):
            token = params.cursor.split(":")[1] if params.cursor else new_id("page")
            self._pages[token] = ids
            self._pages.move_to_end(token)
            while len(self._pages) > LIST_SNAPSHOTS:
                self._pages.popitem(last=False)
            out.next_cursor = f"page:{token}:{end}"
        return out

    def _page_walk(self, cwd: str | None, cursor: str | None) -> tuple[list[str], int]:
        if cursor is None:
            return self.store.list_session_ids(cwd), 0
        parts = cursor.split(":")
        if len(parts) == 3 and parts[0] == "page" and parts[2].isdigit():
            ids = self._pages.get(parts[1])
            if ids is not None:
                return ids, int(parts[2])
        raise InvalidParams(
            "this list cursor has expired or is not one this sidecar gave; list again "
            "from the first page",
            {"cursor": cursor},
        )

    async def close(self, session_id: str) -> pm.EmptyResult:
        session = self.get(session_id)
        watcher = self._watchers.pop(session_id, None)
        if watcher is not None:
            watcher.stop()
        await session.interrupt()
        await session.toolset.aclose()
        if self.sessions.pop(session_id, None) is session:
            self._folds.put(session_id, session.transcript, session.seq)
        return pm.EmptyResult()

    async def delete(self, session_id: str) -> pm.EmptyResult:
        session = self.sessions.get(session_id)
        if session is None and self.store.get_session(session_id) is None:
            raise SessionNotFound(session_id)
        self.leases.check_free(session_id)
        self._folds.drop(session_id)
        if session is not None:
            await session.interrupt()
        held = self.store.delete_session(session_id, self.owner, time.time())
        if held is not None:
            raise busy_error(session_id, held)
        if session is not None:
            self.sessions.pop(session_id, None)
            await session.toolset.aclose()
        return pm.EmptyResult()

    def set_config_option(self, params: pm.SetConfigOptionParams) -> pm.SetConfigOptionResult:
        session = self.get(params.session_id)
        if params.config_id == "mode":
            session_modes.change_mode(session, params.value)
            return pm.SetConfigOptionResult(config_options=self._config_options(session))
        if params.config_id == "builtinTools":
            if not isinstance(params.value, bool):
                raise InvalidParams("builtinTools must be true or false", {"value": params.value})
            session.check_idle("change the tools")
            self.leases.check_free(session.id)
            session.set_builtin_tools(params.value)
            self.store.update_session(session.id, config=session.config.to_json(), now=now_iso())
            return pm.SetConfigOptionResult(config_options=self._config_options(session))
        if params.config_id != "model":
            raise InvalidParams(
                f"unknown config option {params.config_id!r}", {"configId": params.config_id}
            )
        if not isinstance(params.value, str):
            raise InvalidParams("model must be a string", {"value": params.value})
        session.check_idle("change the model")
        self.leases.check_free(session.id)
        session.config.model = self._validated_model(params.value)
        self.store.update_session(session.id, config=session.config.to_json(), now=now_iso())
        result = pm.SetConfigOptionResult(config_options=self._config_options(session))
        if meta := self._warning(session.config.model):  # as at session/new
            result.meta = meta
        return result

    def _config_options(self, session: Session) -> list[pm.SessionConfigOption]:
        current = session.config.model
        options = self._model_config_option(current, self._models(current))
        return [*options, session_modes.mode_option(session.config.mode)]


def _truncated_from(inflight: InflightStream, transcript: Transcript) -> Msg:
    """The truncated assistant message a journaled, unfinished answer becomes."""
    content: list[dict[str, Any]] = []
    if inflight.thought:
        content.append({"type": "thought", "text": inflight.thought})
    if inflight.text:
        content.append({"type": "text", "text": inflight.text})
    return {
        "messageId": inflight.message_id,
        "turnId": str(inflight.meta.get("turnId") or f"a{transcript.turn_number}"),
        "role": "assistant",
        "content": content,
        "createdAt": now_iso(),
        "model": inflight.meta.get("model"),
        "truncated": True,
        "error": "the sidecar stopped before the answer finished",
    }


def _mid_turn(transcript: Transcript) -> bool:
    """Whether the transcript stops inside a turn: a call without its result, or a
    prompt or tool result that no answer follows yet."""
    if transcript.open_calls:
        return True
    last = transcript.messages[-1] if transcript.messages else None
    return last is not None and last["role"] in ("user", "tool")
