"""The in-memory transcript: a fold of the session's mutations, never edited in place.

``history()`` is what clients see (every message, with ``compacted`` marks);
``working()`` is what the model sees (the latest compaction checkpoint applied).
``snapshot()`` and ``restore()`` carry a fold to a later process (``engine/folds.py``).
"""

from __future__ import annotations

import contextlib
import itertools
import operator
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from .blocks import cancelled_result_block, tool_message
from .mutations import (
    ContextSummary,
    ExperienceForget,
    ExperienceRemember,
    Mark,
    MessageMutation,
    Msg,
    Mutation,
    ToolCancelled,
    TranscriptReset,
    WorkspaceCheckpoint,
    from_event,
)
from .rawjson import RawJSON
from .snapshot import (
    COMPACTED,
    SNAPSHOT_FORMAT,
    Folded,
    KeptReplay,
    Snapshot,
    pieces,
    unpack,
)

__all__ = ["COMPACTED", "SNAPSHOT_FORMAT", "Checkpoint", "Folded", "Snapshot", "Transcript"]


@dataclass(slots=True)
class Checkpoint:
    summary_index: int
    up_to_index: int
    keep_ids: frozenset[str]


@dataclass(slots=True)
class Transcript:
    _messages: list[Msg] = field(default_factory=list[Msg])
    _unparsed: bool = False
    """A restored fold's messages are still JSON, parsed on first need: answering
    ``session/history`` or ``session/load`` from the kept JSON needs none of them."""
    _kept_array: tuple[bytes, Any, Any] | None = None
    """A restored fold's messages as kept: the history's JSON array, each message's
    size in it, and which of them carry a compaction mark there; cut into `_wire`
    only when something needs a message's own JSON."""
    _index: dict[str, int] = field(default_factory=dict[str, int])
    _kept_ids: bytes | None = None
    """A restored fold's message ids, one per line in message order, made into `index`
    on first need: answering ``session/history`` or ``session/load`` needs none (a
    dict of 100,000 ids: ~40 ms of a restore under load)."""
    experiences: dict[str, str] = field(default_factory=dict)
    checkpoint: Checkpoint | None = None
    working_start: int = 0
    turn_number: int = 0
    open_calls: dict[str, Msg] = field(default_factory=dict)
    """tool_use blocks still waiting for their result, by tool call id."""
    call_ids: set[str] = field(default_factory=set)
    """Every tool call id used so far: ids are unique for ever, whatever a provider says."""
    summaries: list[int] = field(default_factory=list[int])
    """Positions of summary messages, so which messages are compacted is known without
    parsing a restored fold's messages."""
    _wire: list[bytes] = field(default_factory=list[bytes])
    """Each message's JSON, made once (messages are never edited in place)."""
    _history: tuple[tuple[Any, ...], RawJSON] | None = None
    _replayed: list[tuple[tuple[bool, object], list[bytes]]] = field(
        default_factory=list[tuple[tuple[bool, object], list[bytes]]]
    )
    """Each message's replay updates as JSON, with the compacted mark and projection
    variant they were made for."""
    _replay_kept: KeptReplay | None = None
    """A restored fold's replay as kept, read and made into `_replayed` only when
    something needs it: ``session/load`` of an unchanged fold splices the pieces as
    they are, ``session/history`` reads none of it."""
    changes: int = 0
    """Mutations applied: a fold taken at one count is stale at another."""
    marks: list[Mark] = field(default_factory=list[Mark])
    """The workspace checkpoints, in order (``engine/workspace.py`` reads them)."""
    rewound: str | None = None
    """The rewind that ``session/unrewind`` may still undo (no message since)."""

    @classmethod
    def from_events(cls, events: Iterable[tuple[str, dict[str, Any]]]) -> Transcript:
        t = cls()
        for kind, payload in events:
            t.apply(from_event(kind, payload))
        return t

    @property
    def index(self) -> dict[str, int]:
        """Each message's position by its id."""
        kept = self._kept_ids
        if kept is not None:
            self._kept_ids = None
            ids = kept.decode().split("\n") if kept else []
            self._index = dict(zip(ids, range(len(ids)), strict=True))
        return self._index

    @index.setter
    def index(self, value: dict[str, int]) -> None:
        self._kept_ids = None
        self._index = value

    def position(self, message_id: str) -> int:
        """A message's position by its id (-1: none), found in a restored fold's kept
        ids without making `index` while they are still packed: the few ids a
        checkpoint keeps are looked up on every ``session/load`` (a dict of 10,000
        ids was ~3–10 ms of a first load under load; a search of the packed bytes is
        C code)."""
        kept = self._kept_ids
        if kept is None:
            return self._index.get(message_id, -1)
        return _line_of(kept, message_id.encode())

    @property
    def messages(self) -> list[Msg]:
        if self._unparsed:
            self._messages = orjson.loads(b"[" + b",".join(self._wires()) + b"]")
            self._unparsed = False
        return self._messages

    def _wires(self) -> list[bytes]:
        """`_wire`, cut from a restored fold's kept array on first need."""
        kept = self._kept_array
        if kept is not None:
            self._kept_array = None
            array, sizes, marked = kept
            wire = pieces(array, 1, sizes, 1)
            for i in marked:
                wire[i] = wire[i][: -len(COMPACTED)] + b"}"
            self._wire = wire
        return self._wire

    def _append(self, message: Msg) -> None:
        self.index[message["messageId"]] = len(self.messages)
        if _is_summary(message):
            self.summaries.append(len(self.messages))
        self.messages.append(message)
        self.rewound = None
        turn = message.get("turnId", "")
        if message["role"] == "user" and turn.startswith("u"):
            with contextlib.suppress(ValueError):
                self.turn_number = max(self.turn_number, int(turn[1:]))
        for block in message["content"]:
            t = block.get("type")
            if t == "tool_use":
                self.open_calls[block["id"]] = block
                self.call_ids.add(block["id"])
            elif t == "tool_result":
                self.open_calls.pop(block["toolUseId"], None)

    def apply(self, mutation: Mutation) -> None:
        self.changes += 1
        if isinstance(mutation, MessageMutation):
            self._append(mutation.message)
        elif isinstance(mutation, ContextSummary):
            up_to = self.index.get(mutation.up_to_message_id, -1)
            self._append(mutation.message)
            self.checkpoint = Checkpoint(
                summary_index=len(self.messages) - 1,
                up_to_index=up_to,
                keep_ids=frozenset(mutation.keep_message_ids),
            )
            for i, text in enumerate(mutation.remember):
                self.experiences[f"{mutation.message['messageId']}#{i}"] = text
        elif isinstance(mutation, ExperienceRemember):
            self.experiences[mutation.experience_id] = mutation.text
        elif isinstance(mutation, ExperienceForget):
            self.experiences.pop(mutation.experience_id, None)
        elif isinstance(mutation, WorkspaceCheckpoint):
            self.marks.append(Mark(len(self), mutation.trees, mutation.host, mutation.moment))
        elif isinstance(mutation, TranscriptReset):
            self._reset(mutation)
        else:
            start = len(self.messages)
            for m in mutation.messages:
                self._append(m)
            self.working_start = start
            self.checkpoint = None

    def _reset(self, reset: TranscriptReset) -> None:
        """Keep the first ``keep`` messages, append the reset's, take its state. Each
        kept message's JSON and replay stay; the history's cache goes."""
        keep = reset.keep
        kept = self.messages[:keep]
        replayed = self._made()[:keep]
        self._messages, self.index, self.open_calls, self.summaries = [], {}, {}, []
        for m in [*kept, *reset.messages]:
            self._append(m)
        self._wire = self._wires()[:keep]
        self._replayed = replayed
        self._history = None
        self.experiences = dict(reset.experiences)
        self.working_start = reset.working_start
        cp = reset.compaction
        self.checkpoint = None if cp is None else Checkpoint(cp[0], cp[1], frozenset(cp[2]))
        self.marks = list(reset.marks)
        self.rewound = reset.rewind_id

    # -- views ----------------------------------------------------------------------

    def __len__(self) -> int:
        if not self._unparsed:
            return len(self._messages)
        kept = self._kept_array
        return len(kept[1]) if kept is not None else len(self._wire)

    @property
    def last_message_id(self) -> str | None:
        """Known from the index while a restored fold's messages are still JSON (the
        feed asks on every ``session/load``: parsing 100,000 messages to answer it would
        cost more than the rest of the load)."""
        n = len(self)
        if n and self._kept_ids is not None:
            kept = self._kept_ids
            return kept[kept.rfind(b"\n") + 1 :].decode()
        if n and self._unparsed:
            last = next(reversed(self.index))
            if self.index[last] == n - 1:
                return last
        return self.messages[-1]["messageId"] if n else None

    def compacted_indexes(self) -> set[int]:
        """Positions of messages the latest checkpoint (or a replace) took out of the prompt."""
        out = set(range(self.working_start))
        cp = self.checkpoint
        if cp is not None:
            kept = {self.position(mid) for mid in cp.keep_ids}
            out |= set(range(self.working_start, cp.up_to_index + 1)) - kept
            out.update(i for i in self.summaries if i > cp.up_to_index and i != cp.summary_index)
        return out

    def history(self) -> list[Msg]:
        compacted = self.compacted_indexes()
        if not compacted:
            return list(self.messages)
        return [
            {**m, "compacted": True} if i in compacted else m for i, m in enumerate(self.messages)
        ]

    def history_json(self) -> RawJSON | list[Msg]:
        """`history` as one JSON array spliced from each message's JSON, made once, so
        a long session's ``session/history`` is a copy, not a serialisation; kept
        until the transcript changes. The plain list when a message is not orjson's
        to write (an integer beyond 64 bits): the stdlib writes the answer then."""
        cp = self.checkpoint
        key = (len(self), self.working_start, cp and (cp.summary_index, cp.up_to_index))
        if self._history is not None and self._history[0] == key:
            return self._history[1]
        try:
            self._make_wire()
        except TypeError:
            return self.history()
        compacted = self.compacted_indexes()
        parts = list(self._wires())
        for i in compacted:
            w = parts[i]
            parts[i] = (
                w[:-1] + COMPACTED
                if b'"compacted"' not in w
                else orjson.dumps({**self.messages[i], "compacted": True})
            )
        body = RawJSON(b"[" + b",".join(parts) + b"]")
        self._history = (key, body)
        return body

    def _make_wire(self) -> None:
        """Each message's JSON, for those that have none yet; `TypeError` when one is
        not orjson's to write."""
        wire = self._wires()
        if len(wire) < len(self):
            for m in self.messages[len(wire) :]:
                wire.append(_kept(orjson.dumps(m)))

    # -- carried to another process -------------------------------------------------------

    def snapshot(self) -> bytes | None:
        """The fold as one value `restore` reads (``engine/snapshot.py``: the messages
        as the JSON array `history_json` answers, compaction marks and all, then each
        message's replay updates as made so far), so restoring keeps every message's
        JSON and replay. ``None`` when something is not orjson's to write."""
        capture = self.capture()
        folded = None if capture is None else capture.assemble()
        return None if folded is None else folded.joined()

    def capture(self) -> Snapshot | None:
        """What `snapshot` writes, taken now: each message's JSON made (only the new
        ones'), the state and the pieces copied by reference, so `Snapshot.assemble`
        (the header's JSON and joining tens of megabytes) can run on another thread
        while the transcript moves on. ``None`` when a message is not orjson's to write."""
        cp = self.checkpoint
        try:
            self._make_wire()
        except TypeError:
            return None
        state: dict[str, Any] = {
            "format": SNAPSHOT_FORMAT,
            "experiences": dict(self.experiences),
            "checkpoint": cp and [cp.summary_index, cp.up_to_index, sorted(cp.keep_ids)],
            "workingStart": self.working_start,
            "turnNumber": self.turn_number,
            "openCalls": dict(self.open_calls),
            "callIds": sorted(self.call_ids),
            "summaries": list(self.summaries),
            "marks": [m.wire() for m in self.marks],
            "rewound": self.rewound,
        }
        ids = list(self.index) if len(self.index) == len(self) else self._ids()
        made = list(self._made())
        return Snapshot(state, ids, list(self._wire), made, self.compacted_indexes())

    def make_replay(
        self, project: Callable[[Msg], list[dict[str, Any]]], variant: object = None
    ) -> None:
        """Make the replay updates `replay_json` would and has not made yet (new
        messages, and ones a compaction marked since), so a kept fold carries them: a
        session grown by prompting is replayed after a restart without projecting a
        message."""
        compacted = self.compacted_indexes()
        made = self._made(variant)
        try:
            for i in range(len(self)):
                key = (i in compacted, variant)
                if i < len(made) and made[i][0] == key:
                    continue
                m = self.messages[i]
                updates = [
                    _kept(orjson.dumps(u))
                    for u in project({**m, "compacted": True} if key[0] else m)
                ]
                if i < len(made):
                    made[i] = (key, updates)
                else:
                    made.append((key, updates))
        except TypeError:
            return

    @classmethod
    def restore(
        cls, data: bytes, replay: Callable[[], bytes | None] | None = None
    ) -> Transcript | None:
        """The transcript a snapshot was taken of (``engine/snapshot.py``), its messages
        left as JSON until something needs them; its replay follows ``data`` (a
        `snapshot`) or is read by ``replay`` on first need (the store's, which
        ``session/history`` never needs). ``None`` for one of another format or one that
        does not hold together (then the log is folded instead)."""
        try:
            cut = data.index(b"\n")
            header = orjson.loads(data[:cut])
            if not isinstance(header, dict) or header.get("format") != SNAPSHOT_FORMAT:
                return None
            n: int = header["count"]
            at = cut + 1
            packed = header["ids"]
            if isinstance(packed, int):
                kept_ids = data[at : at + packed]
                at += packed
                named = kept_ids.count(b"\n") + 1 if n else len(kept_ids)
                index = {}
            else:
                kept_ids, named = None, len(packed)
                index = dict(zip(packed, range(n), strict=True))
            view = memoryview(data)
            sizes = unpack(view[at : at + 4 * n])
            at += 4 * n
            marked_count = header["marked"]
            marked = unpack(view[at : at + 4 * (marked_count or 0)])
            at += 4 * len(marked)
            end = at + header["arrayBytes"]
            body = data[at:end]
            if named != n or len(sizes) != n or any(i >= n for i in marked[-1:]):
                return None
            if body[:1] != b"[" or len(body) != sum(sizes) + max(n, 1) + 1:
                return None
            # Where each piece ends there must be a comma (a "]" after the last): the
            # sizes cut the array as written. Found without a Python step per message.
            ends = map(operator.add, itertools.accumulate(sizes), range(1, n + 1))
            after = bytes(map(body.__getitem__, ends))
            if (after != b"," * (n - 1) + b"]") if n else (body != b"[]"):
                return None
            rest = len(data) - end
            size: int = header["replayBytes"]
            if rest not in (0, size):
                return None
            cp = header["checkpoint"]
            t = cls(
                _index=index,
                _kept_ids=kept_ids,
                experiences=header["experiences"],
                checkpoint=cp and Checkpoint(cp[0], cp[1], frozenset(cp[2])),
                working_start=header["workingStart"],
                turn_number=header["turnNumber"],
                open_calls=header["openCalls"],
                call_ids=set(header["callIds"]),
                summaries=header["summaries"],
                marks=[Mark.from_wire(m) for m in header["marks"]],
                rewound=header["rewound"],
            )
        except (ValueError, KeyError, IndexError, TypeError):  # orjson's errors are ValueErrors
            return None
        t._unparsed = True
        t._kept_array = (body, sizes, marked)
        if marked_count is not None:  # the array is the history as answered
            cp = t.checkpoint
            key = (n, t.working_start, cp and (cp.summary_index, cp.up_to_index))
            t._history = (key, RawJSON(body))
        count: int = header["replayed"]
        if count and rest:
            inline = data[end:]
            t._replay_kept = KeptReplay(count, size, lambda: inline)
        elif count and replay is not None:
            t._replay_kept = KeptReplay(count, size, replay)
        return t

    def copy(self) -> Transcript:
        """Another transcript of the same fold, for a fork made in this process (a
        ``delegate`` child): it shares every message, its JSON and its replay pieces
        (none is ever edited in place) and copies only the lists and maps that grow,
        so the copy costs list copies, not a `snapshot` written and parsed again;
        a fold still kept as JSON (messages, ids, replay) stays JSON in both."""
        t = Transcript(
            _messages=list(self._messages),
            _unparsed=self._unparsed,
            _kept_array=self._kept_array,
            _index=dict(self._index),
            _kept_ids=self._kept_ids,
            experiences=dict(self.experiences),
            checkpoint=self.checkpoint,
            working_start=self.working_start,
            turn_number=self.turn_number,
            open_calls=dict(self.open_calls),
            call_ids=set(self.call_ids),
            summaries=list(self.summaries),
            _wire=list(self._wire),
            _history=self._history,
            _replayed=list(self._replayed),
            _replay_kept=self._replay_kept,
            changes=self.changes,
            marks=list(self.marks),
            rewound=self.rewound,
        )
        return t

    def _ids(self) -> list[str]:
        return [m["messageId"] for m in self.messages]

    @property
    def replayed(self) -> int:
        """Messages whose replay updates are made (and kept with a snapshot)."""
        kept = self._replay_kept
        return kept.count if kept is not None else len(self._replayed)

    def _made(self, variant: object = None) -> list[tuple[tuple[bool, object], list[bytes]]]:
        """`_replayed`, made from a restored fold's kept replay on first need (a
        variant kept as JSON that is ``variant`` as JSON is taken as ``variant``)."""
        kept = self._replay_kept
        if kept is not None:
            self._replay_kept = None
            self._replayed = kept.made(variant)
        return self._replayed

    def replay_json(
        self, project: Callable[[Msg], list[dict[str, Any]]], variant: object = None
    ) -> list[bytes] | None:
        """Every update ``project`` (the link's ``projection.replay``) makes of `history`, as JSON,
        each message's made once (again only when a compaction marks it, or for another
        ``variant`` of the projection, such as a client that shows compactions
        differently); ``None`` when one is not orjson's to write."""
        compacted = self.compacted_indexes()
        kept = self._replay_kept
        if kept is not None and kept.count == len(self):
            found = kept.matching(len(self), compacted, variant)
            if found is not None:
                return found  # a restored fold's replay, every message's as it was kept
        replayed = self._made(variant)
        out: list[bytes] = []
        try:
            for i in range(len(self)):
                mark = i in compacted
                key = (mark, variant)
                if i < len(replayed) and replayed[i][0] == key:
                    out += replayed[i][1]
                    continue
                m = self.messages[i]
                made = [
                    _kept(orjson.dumps(u)) for u in project({**m, "compacted": True} if mark else m)
                ]
                if i < len(replayed):
                    replayed[i] = (key, made)
                else:
                    replayed.append((key, made))
                out += made
        except TypeError:
            return None
        return out

    def working(self) -> list[Msg]:
        """Messages the next model request is built from, in prompt order."""
        cp = self.checkpoint
        messages = self.messages
        if cp is None:
            return messages[self.working_start :]
        # Found through the index and the summaries' positions, not by looking at every
        # compacted message: a turn of a long session costs what its prompt holds, not
        # what the session has ever said.
        first, last = self.working_start, cp.up_to_index
        found = (self.position(mid) for mid in cp.keep_ids)
        kept = [messages[i] for i in sorted(i for i in found if first <= i <= last)]
        skip = {cp.summary_index, *(i for i in self.summaries if i > last)}
        after = [m for i, m in enumerate(messages[last + 1 :], start=last + 1) if i not in skip]
        return [*kept, messages[cp.summary_index], *after]


def _line_of(lines: bytes, line: bytes) -> int:
    """The number of the line of ``lines`` (one per ``\\n``) that is exactly ``line``;
    -1 when none is (or ``line`` holds a newline, which no packed id does)."""
    if not lines or b"\n" in line:
        return -1
    at = 0 if lines.startswith(line + b"\n") or lines == line else -1
    if at < 0:
        found = lines.find(b"\n" + line + b"\n")
        if found < 0 and lines.endswith(b"\n" + line):
            found = len(lines) - len(line) - 1
        if found < 0:
            return -1
        at = found + 1
    return lines.count(b"\n", 0, at)


def _kept(data: bytes) -> bytes:
    """A right-sized copy: orjson's small results keep their ~4 KB write buffer, ten
    times the JSON, for as long as they live (measured with ``tracemalloc``)."""
    return bytes(memoryview(data))


def _is_summary(message: Msg) -> bool:
    content = message["content"]
    return bool(content) and content[0].get("type") == "summary"


def cancelled_results(
    transcript: Transcript, reason: str, turn_id: str | None = None
) -> list[ToolCancelled]:
    """A cancelled result for every open tool call, so each ``tool_use`` has one."""
    turn = turn_id or f"a{transcript.turn_number}"
    return [
        ToolCancelled(
            tool_message(turn, cancelled_result_block(call_id, block.get("name"), reason))
        )
        for call_id, block in transcript.open_calls.items()
    ]
