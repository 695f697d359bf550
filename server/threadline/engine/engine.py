"""The engine: every session operation the RPC layer exposes, one method each.

This is the engine's public edge: parameters come in as protocol models and results
leave as protocol models, made here from the engine's typed values and nowhere else.
Each operation is a few lines: the live session (`live.py`: loading, freshness,
leases, repair), the task it runs (`turn.py`, `compactor.py`, `commands.py`), the
answer. Sessions are loaded on first use and kept live until closed; a closed
session is only unloaded (it is durable), so any later call reloads it.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Awaitable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from threadline_protocol import catalog as cat
from threadline_protocol import methods as pm
from threadline_protocol import work as pw
from threadline_protocol.meta import (
    McpInfo,
)

from ..providers.registry import ProviderRegistry
from ..settings import DelegateLimits
from ..store.base import SessionStore
from ..store.blobs import BLOB_SCHEME
from . import capabilities, events, options, results
from . import modes as session_modes
from .catalog import Catalog
from .children import Children
from .commands import SLASH_COMMANDS
from .compactor import Compaction
from .config import SessionConfig
from .errors import InvalidParams
from .feed import Feed
from .forking import fork, fork_with_base
from .ids import new_id, now_iso
from .images import ClientImages, ImageRejected, accept_prompt, has_images, inline_raw
from .inbox import Inbox, Stored
from .link import ClientLink
from .listing import SessionPages
from .live import LiveSessions
from .measure import context_parts
from .outcomes import (
    Forked,
)
from .rewind import Files
from .session import Session
from .workspace import Workspaces

SetUp = TypeVar("SetUp", pm.NewSessionResult, pm.LoadSessionResult, pm.ForkResult)
"""The results that start a session's MCP servers (and so report their failures)."""


class Engine:
    def __init__(
        self,
        store: SessionStore,
        providers: ProviderRegistry,
        link: ClientLink,
        workspaces: Workspaces | None = None,
    ) -> None:
        """``workspaces``: where checkpoints of files are kept; none, none are."""
        self.store = store
        self.images = ClientImages(store.get_blob)
        """Puts stored images' bytes back into what a client is shown (`rpc/server.py`)."""
        self.providers = providers
        self.link = link
        self.live = LiveSessions(store, providers, link, workspaces)
        self.live.delegator = Children(self.live, DelegateLimits.from_env())
        self.files = Files(self.live)
        self.feed = Feed(self.live)
        self.inbox = Inbox(self.live, self.feed, self._fork)
        self._pages = SessionPages(store)
        self.catalog = Catalog(store, link, self.live.open, self.live.sessions.get)

    def get(self, session_id: str) -> Session:
        """The live session (loaded, caught up, repaired)."""
        return self.live.open(session_id)

    def recover(self) -> int:
        """At start: finish restores of files a killed process left, and record what
        crashed turns left; returns how many turns."""
        self.live.workspaces.recover()
        return self.live.recover()

    # -- lifecycle --------------------------------------------------------------------

    def initialize_result(self, server_version: str) -> pm.InitializeResult:
        """The same answer ``rpc/boot.py`` gives before pydantic is imported, as a model."""
        return pm.InitializeResult.model_validate(
            capabilities.initialize_result(server_version, self.providers)
        )

    async def shutdown(self) -> None:
        """Interrupt every running turn so its partial state is recorded."""
        await self.inbox.aclose()
        self.feed.stop()
        await self.live.aclose()
        await self.providers.aclose()

    # -- sessions ---------------------------------------------------------------------

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
            roots=list(params.additional_directories),
        )
        row = self.store.create_session(new_id("sess"), params.cwd, config.to_json(), now_iso())
        session = self.live.load(row)
        session.make_tools()  # a new session is prompted next: its tools are made now
        self.feed.subscribe(session)
        # After the response, so clients already know the session the update is for.
        asyncio.get_running_loop().call_soon(
            session.announce, events.AvailableCommands(SLASH_COMMANDS)
        )
        models = options.models(self.providers, config.model)
        result = pm.NewSessionResult(
            session_id=row.id,
            modes=session_modes.mode_state(config.mode),
            models=pm.SessionModelState(current_model_id=config.model, available_models=models),
            config_options=self._config_options(session),
        )
        if not params.mcp_servers:
            return self._with_checkpoints(result)
        return self._with_mcp(session, params.mcp_servers, self._with_checkpoints(result))

    async def prompt(
        self, params: pm.PromptParams, accepted: Stored | None = None
    ) -> pm.PromptResult:
        """Run a turn, or, while the session works, steer it, queue behind it or
        refuse (``whileRunning``; `inbox.py`). ``accepted`` is told the prompt's message
        id once it is stored or waits (a client that is answered on acceptance)."""
        session = self.live.open(params.session_id)
        asked = params.threadline().while_running
        mode = asked or self._client_default()
        content = self._with_images(session, [b.wire() for b in params.prompt])
        outcome = await self.inbox.prompt(
            session, content, mode, accepted=self.feed.subscribe, stored=accepted, show=bool(asked)
        )
        return results.prompt_result(outcome)

    def _with_images(self, session: Session, content: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The prompt with its images checked and carrying their bytes (-32602 names a
        bad one; nothing is stored)."""
        if not has_images(content):
            return content
        roots = [Path(r) for r in session.roots]
        try:
            return accept_prompt(content, roots, lambda h: self.store.session_blob(session.id, h))
        except ImageRejected as exc:
            raise InvalidParams(str(exc), {"reason": "image"}) from None

    def _client_default(self) -> str:
        """What the client said a prompt does while the session works; ``refuse``
        (ACP v1's rule) unless it said otherwise."""
        caps = pm.ClientCapabilities.model_validate(self.link.client_capabilities())
        return caps.threadline().while_running or "refuse"

    async def interrupt(self, params: pm.InterruptParams) -> pm.InterruptResult:
        """Stop the running turn; what waits in the queue stays (held), unless
        ``clearQueue`` removes it too."""
        session = self.live.open(params.session_id)
        if params.threadline().clear_queue:
            self.inbox.remove(session, None)
        return results.interrupt_result(await self.live.interrupt(session))

    def cancel(self, params: pm.InterruptParams) -> None:
        if params.threadline().clear_queue:
            self.inbox.remove(self.live.open(params.session_id), None)
        self.live.cancel(params.session_id)

    # -- the queue ----------------------------------------------------------------------

    def queue_list(self, session_id: str) -> pm.QueueListResult:
        session = self.live.open(session_id)
        return pm.QueueListResult(prompts=[results.queued(p) for p in self.inbox.listed(session)])

    def queue_update(self, params: pm.QueueUpdateParams) -> pm.QueueUpdateResult:
        session = self.live.open(params.session_id)
        content = self._with_images(session, [b.wire() for b in params.prompt])
        return pm.QueueUpdateResult(
            prompt=results.queued(self.inbox.edit(session, params.id, content))
        )

    def queue_remove(self, params: pm.QueueRemoveParams) -> pm.QueueChangeResult:
        session = self.live.open(params.session_id)
        return pm.QueueChangeResult(ids=self.inbox.remove(session, params.id))

    async def queue_resume(self, session_id: str) -> pm.QueueChangeResult:
        session = self.live.open(session_id)
        self.feed.subscribe(session)
        return pm.QueueChangeResult(ids=self.inbox.resume(session))

    def fork(self, params: pm.ForkParams) -> pm.ForkResult | Awaitable[pm.ForkResult]:
        """Synchronous, unless the fork's files are asked for (restored or written into
        its new folder) or MCP servers must start: then the result comes from the
        returned awaitable. The fork has its parent's extra roots unless
        ``additionalDirectories`` names others."""
        if params.materialize_files and params.cwd is None:
            raise InvalidParams("materializeFiles needs the fork's new cwd", {})
        forked, base = fork_with_base(self.live, params.session_id, params.message_id, params.cwd)
        self._forked(forked)
        plain = not (params.restore_files or params.materialize_files or params.mcp_servers)
        row = self.live.store.get_session(forked.session_id)
        if base is None and plain and params.additional_directories is None and row:
            # At an earlier message: the child is folded from the log when it is first
            # used (its prompt or load subscribes this client), not to answer the fork.
            return results.fork_result(
                self.providers, SessionConfig.from_json(row.config), forked, None
            )
        child = self.live.open_fork(forked.session_id, base)
        if params.additional_directories is not None:
            options.set_roots(child, params.additional_directories)
        self.feed.subscribe(child)
        if plain:
            return results.fork_result(self.providers, child.config, forked, None)
        return self._fork_files(child, forked, params)

    async def _fork_files(
        self, child: Session, forked: Forked, params: pm.ForkParams
    ) -> pm.ForkResult:
        files = None
        if params.restore_files or params.materialize_files:
            files = await self.files.fork_files(
                forked,
                restore_files=params.restore_files,
                materialize_files=params.materialize_files,
                force=params.force,
            )
        result = results.fork_result(self.providers, child.config, forked, files)
        return await self._with_mcp(child, params.mcp_servers, result)

    async def diff(self, params: pm.DiffParams) -> pm.DiffResult:
        got = await self.files.diff(params.session_id, params.from_message_id, params.to_message_id)
        return results.diff_result(got)

    async def rewind(self, params: pm.RewindParams) -> pm.RewindResult:
        got = await self.files.rewind(
            params.session_id,
            params.before_message_id,
            restore_files=params.restore_files,
            force=params.force,
        )
        assert got.rewind_id is not None
        return pm.RewindResult(
            rewind_id=got.rewind_id,
            message_count=got.message_count,
            files=results.files_result(got),
        )

    async def unrewind(self, params: pm.UnrewindParams) -> pm.UnrewindResult:
        got = await self.files.unrewind(
            params.session_id,
            params.rewind_id,
            restore_files=params.restore_files,
            force=params.force,
        )
        return pm.UnrewindResult(message_count=got.message_count, files=results.files_result(got))

    def _fork(self, session_id: str, message_id: str | None) -> Forked:
        return self._forked(fork(self.live, session_id, message_id, None))

    def _forked(self, forked: Forked) -> Forked:
        """A fork made here is shown to this client at once (before the answer)."""
        parent = self.live.sessions.get(forked.parent_session_id)
        if parent is not None:
            self.feed.refresh(parent)
        return forked

    async def compact(self, params: pm.CompactParams) -> pm.CompactResult:
        session = self.live.open(params.session_id)
        task = Compaction(session, params.instructions, params.keep_turns)
        result = results.compact_result(await self.live.run(session, task))
        self.inbox.drain_soon(session)  # what was queued behind the compaction
        return result

    def history(self, session_id: str) -> pm.HistoryResult:
        """Built without validation: the messages are the stored ones, as the JSON the
        transcript keeps of each (``Prewritten``: spliced, not serialised again)."""
        messages = self.live.open(session_id).transcript.history_json()
        if not self.image_references():
            messages = inline_raw(messages, self.store.get_blob)
        return pm.HistoryResult.model_construct(messages=messages)

    def image_references(self) -> bool:
        """Whether this client is shown stored images as ``threadline-blob:`` references
        (it said ``imageReferences``), else with their bytes (`images.inline`)."""
        caps = pm.ClientCapabilities.model_validate(self.link.client_capabilities())
        return bool(caps.threadline().image_references)

    def blob(self, params: pm.BlobParams) -> pm.BlobResult:
        """A stored image's bytes: one the session (or a base its fork reads) holds."""
        sid, uri = self.live.open(params.session_id).id, params.uri
        if (got := self.store.session_blob(sid, uri.removeprefix(BLOB_SCHEME))) is None:
            raise InvalidParams(f"session {sid} holds no image {uri}", {"uri": uri})
        info, data = got
        return pm.BlobResult(
            uri=params.uri,
            mime_type=info.mime_type,
            data=base64.b64encode(data).decode("ascii"),
            size=info.size,
            width=info.width,
            height=info.height,
        )

    async def context(self, session_id: str) -> pm.ContextResult:
        """The next request's size by part (system, tools, history, summary)."""
        session = self.live.open(session_id)
        use = context_parts(session, await session.provider())
        return pm.ContextResult(
            used=use.used,
            size=use.size,
            parts=pm.ContextParts(
                system=use.system, tools=use.tools, history=use.history, summary=use.summary
            ),
        )

    def load(
        self, params: pm.LoadSessionParams
    ) -> pm.LoadSessionResult | Awaitable[pm.LoadSessionResult]:
        """ACP replay: every message as updates, then the mode and options."""
        session = self.live.open(params.session_id)
        options.set_roots(session, params.additional_directories)
        projection = self.link.projection
        made = session.transcript.replay_json(projection.replay, variant=projection.variant)
        if made is not None:
            session.link.notify_updates_json(session.id, made)
        else:
            history = session.transcript.history()
            replayed = [u for m in history for u in projection.replay(m)]
            session.link.notify_updates(session.id, replayed)
        session.shown.seen_all()
        session.announce(events.AvailableCommands(SLASH_COMMANDS))
        self.feed.subscribe(session)
        return self._set_up(session, params.mcp_servers)

    def resume(
        self, params: pm.LoadSessionParams
    ) -> pm.LoadSessionResult | Awaitable[pm.LoadSessionResult]:
        session = self.live.open(params.session_id)
        options.set_roots(session, params.additional_directories)
        self.feed.subscribe(session)
        return self._set_up(session, params.mcp_servers)

    def list_sessions(self, params: pm.ListSessionsParams) -> pm.ListSessionsResult:
        rows, next_cursor = self._pages.page(params.cwd, params.cursor, params.threadline())
        out = pm.ListSessionsResult(sessions=[results.listed(r) for r in rows])
        if next_cursor is not None:
            out.next_cursor = next_cursor
        return out

    async def close(self, session_id: str) -> pm.EmptyResult:
        self.feed.unsubscribe(session_id)
        await self.live.close(self.live.open(session_id))
        return pm.EmptyResult()

    async def delete(self, session_id: str) -> pm.EmptyResult:
        await self.live.delete(session_id)
        self.feed.unsubscribe(session_id)
        self.store.remove_pending(session_id)  # what waited answers "removed" everywhere
        return pm.EmptyResult()

    # -- the catalog: one line each (engine/catalog.py) --------------------------------------

    def set_title(self, params: cat.SetTitleParams) -> pm.EmptyResult:
        return self.catalog.set_title(params)

    def archive(self, params: cat.ArchiveParams) -> pm.EmptyResult:
        return self.catalog.archive(params)

    def set_tags(self, params: cat.SetTagsParams) -> pm.EmptyResult:
        return self.catalog.set_tags(params)

    def search(self, params: cat.SearchParams) -> cat.SearchResult:
        return self.catalog.search(params)

    def export(self, params: cat.ExportParams) -> cat.ExportResult:
        return self.catalog.export(params)

    def import_log(self, params: cat.ImportParams) -> cat.ImportResult:
        return self.catalog.import_log(params)

    def set_config_option(self, params: pm.SetConfigOptionParams) -> pm.SetConfigOptionResult:
        """Change one option; every client of the session, here and in other windows,
        is sent ``config_option_update`` (and ``current_mode_update`` for the mode)."""
        session = self.live.open(params.session_id)
        self.feed.subscribe(session)
        options.set_option(
            self.providers, session, params.config_id, params.value, self.live.leases.check_free
        )
        self.feed.refresh(session)
        return pm.SetConfigOptionResult(config_options=self._config_options(session))

    def set_mode(self, params: pw.SetModeParams) -> pw.SetModeResult:
        session = self.live.open(params.session_id)
        self.feed.subscribe(session)
        session_modes.change_mode(session, params.mode_id)
        self.feed.refresh(session)
        return pw.SetModeResult()

    # -- options and MCP servers, as the results show them -----------------------------

    def config_options(self, session_id: str) -> list[pm.SessionConfigOption]:
        """A session's options as they are now (model, mode)."""
        return self._config_options(self.live.open(session_id))

    def _config_options(self, session: Session) -> list[pm.SessionConfigOption]:
        return options.config_options(self.providers, session.config)

    def _validated_model(self, model: str | None) -> str:
        return options.validated_model(self.providers, model)

    def _set_up(
        self, session: Session, servers: Sequence[pm.McpServer]
    ) -> pm.LoadSessionResult | Awaitable[pm.LoadSessionResult]:
        """The session's mode and options at once, or once the MCP servers asked for
        have started."""
        result = pm.LoadSessionResult(
            modes=session_modes.mode_state(session.config.mode),
            config_options=self._config_options(session),
        )
        result = self._with_checkpoints(result)
        return self._with_mcp(session, servers, result) if servers else result

    def _with_checkpoints(self, result: SetUp) -> SetUp:
        """Checkpoints that are off are said on every session's set-up (once, never as
        an error of each call that would have taken one)."""
        ws = self.live.workspaces
        off = ws.off_reason if ws.data_dir is not None else None  # (an embedded engine)
        if off is not None:
            meta = result.meta or pm.McpMeta()
            info = meta.threadline or McpInfo()
            info.checkpoints, info.checkpoints_reason = "off", off
            meta.threadline = info
            result.meta = meta
        return result

    async def _with_mcp(
        self, session: Session, servers: Sequence[pm.McpServer], result: SetUp
    ) -> SetUp:
        """Start the session's MCP servers; one that fails is reported, not fatal."""
        if not servers:
            return result
        await session.toolset.add_mcp_servers([s.wire() for s in servers])
        failures = session.toolset.failures
        if failures:
            meta = result.meta or pm.McpMeta()
            info = meta.threadline or McpInfo()
            info.mcp_failures = dict(failures)
            meta.threadline = info
            result.meta = meta
        return result
