"""``edit_file`` round trip through an editor, beside the plain write it is built on.

An ACP client that advertises ``fs.readTextFile`` and ``fs.writeTextFile`` (the bench
client, answering from and writing to the disk as an editor does its buffers) and a
workspace of 200 source files; the scripted model calls ``edit_file`` on one of them,
a 1,000-line, ~50 KB file, changing one line in its middle. Timed from the client
reading the call's ``tool_call`` to (a) the client having written the new text, asked
with ``fs/write_text_file``, and (b) the client reading the call's result
(``tool_call_update`` completed). On the way: the tool reads the buffer
(``fs/read_text_file``), plans the edit, asks the user with the diff (default ``code``
mode: the client answers ``allow_once`` at once), writes through the editor, and the
turn checkpoints the workspace before and after (what a user meets in that mode);
``auto`` mode, which applies workspace edits unasked, is shown too.

Same-run peers, alternated rep by rep on the same file: ``write_file`` with the whole
new text (the sidecar's plain ``fs/write_text_file`` path: no read, no edit applied,
the same permission, checkpoints and write), and the floor: the bench client making
the same edit itself (read, replace, write), no sidecar at all. The file is put back
(untimed) before every rep.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from ..context import Context
from ..report import Row, verdict
from ..servers import INITIALIZE, THREADLINE, prompt_params, spawn
from ..stats import ms, ms_spread, summarize
from ..wire import Connection

FIGURE = "editfile"
TARGET_MS = 50.0
"""``edit_file``'s round trip (call shown → result shown), every mode."""
OVER_MS = 10.0
"""...and at most this over ``write_file``'s of the same change, same mode."""
FILES = 200
LINES = 1_000
EDITED = "src/pkg/module_100.py"
FS_CAPS = {"fs": {"readTextFile": True, "writeTextFile": True}}


def _source(i: int) -> str:
    """A plausible Python module of ``LINES`` lines (~50 KB)."""
    out = [
        f'"""Module {i}: generated for the bench."""',
        "",
        "from __future__ import annotations",
        "",
    ]
    n = 0
    while len(out) < LINES:
        out += [
            f"def handler_{n}(request: dict[str, object], retries: int = 3) -> list[str]:",
            f'    """Handle request number {n} of module {i}, retrying up to ``retries``."""',
            f"    values = [str(request.get(key)) for key in sorted(request) if key != 'skip_{n}']",
            f"    return values[: retries + {n % 7}]",
            "",
        ]
        n += 1
    return "\n".join(out[:LINES]) + "\n"


def _workspace(root: Path) -> tuple[Path, str]:
    for i in range(FILES):
        path = root / "src" / "pkg" / f"module_{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_source(i))
    target = root / EDITED
    return target, target.read_text()


def _edit(original: str) -> tuple[str, str, str]:
    """(oldText, newText, the whole new file): one line in the middle changed."""
    old = "def handler_100(request: dict[str, object], retries: int = 3) -> list[str]:"
    new = "def handler_100(request: dict[str, object], retries: int = 5) -> list[str]:"
    assert original.count(old) == 1
    return old, new, original.replace(old, new)


def _model(name: str, arguments: dict[str, Any]) -> str:
    rounds = [[{"tool_call": {"name": name, "arguments": arguments}}], [{"text": "done"}]]
    return "scripted:" + json.dumps({"rounds": rounds})


class _Editor:
    """The client's side: answers reads from the disk, writes to it, allows at once,
    and stamps the moments the figure measures (``perf_counter_ns``)."""

    def __init__(self, conn: Connection, root: Path) -> None:
        self.root = root
        self.shown = 0
        self.written = 0
        self.result = 0
        self.asked = 0
        self.done = threading.Event()
        conn.on_request["fs/read_text_file"] = self._read
        conn.on_request["fs/write_text_file"] = self._write
        conn.on_request["session/request_permission"] = self._allow
        conn.on_update = self._update

    def reset(self) -> None:
        self.shown = self.written = self.result = self.asked = 0
        self.done.clear()

    def _read(self, params: dict[str, Any], _t: int) -> dict[str, Any]:
        return {"content": Path(params["path"]).read_text()}

    def _write(self, params: dict[str, Any], _t: int) -> None:
        Path(params["path"]).write_text(params["content"])
        self.written = time.perf_counter_ns()

    def _allow(self, _params: dict[str, Any], _t: int) -> dict[str, Any]:
        self.asked += 1
        return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}

    def _update(self, params: dict[str, Any], t: int) -> None:
        update = params.get("update") or {}
        kind = update.get("sessionUpdate")
        if kind == "tool_call" and not self.shown:
            self.shown = t
        elif kind == "tool_call_update" and update.get("status") == "completed":
            self.result = t
            self.done.set()


def _turn(
    conn: Connection, editor: _Editor, sid: str, target: Path, original: str, new: str
) -> tuple[float, float]:
    """One prompt whose model makes the change: ms to the file written, to the result."""
    target.write_text(original)
    editor.reset()
    conn.call("session/prompt", prompt_params(sid, "change it"), timeout=120)
    if not (editor.done.is_set() and editor.written and editor.shown):
        raise RuntimeError("the tool call did not complete with a write")
    if target.read_text() != new:
        raise RuntimeError("the file was not changed as asked")
    return (editor.written - editor.shown) / 1e6, (editor.result - editor.shown) / 1e6


def _by_hand(target: Path, original: str, old: str, new_line: str) -> float:
    """The floor: the client reads, replaces and writes the file itself."""
    target.write_text(original)
    t0 = time.perf_counter_ns()
    text = target.read_text()
    target.write_text(text.replace(old, new_line, 1))
    return (time.perf_counter_ns() - t0) / 1e6


def run(ctx: Context) -> list[Row]:
    reps = ctx.n(30, 5)
    home = ctx.scratch.home(FIGURE)
    root = home / "workspace"
    target, original = _workspace(root)
    old, new_line, new = _edit(original)
    rel = str(target.relative_to(root))
    models = {
        "edit_file": _model(
            "edit_file", {"path": rel, "edits": [{"oldText": old, "newText": new_line}]}
        ),
        "write_file": _model("write_file", {"path": rel, "content": new}),
    }
    conn = spawn(THREADLINE, home, initialize=False)
    rows: list[Row] = []
    try:
        conn.call("initialize", {**INITIALIZE, "clientCapabilities": FS_CAPS}, timeout=60)
        editor = _Editor(conn, root)
        sessions: dict[tuple[str, str], str] = {}
        for mode in ("code", "auto"):
            for tool, model in models.items():
                params = {
                    "cwd": str(root),
                    "mcpServers": [],
                    "_meta": {"threadline": {"model": model}},
                }
                sid = str(conn.call("session/new", params, timeout=60)["sessionId"])
                conn.call("session/set_mode", {"sessionId": sid, "modeId": mode}, timeout=60)
                _turn(conn, editor, sid, target, original, new)  # warm-up, not counted
                sessions[(mode, tool)] = sid
        written: dict[tuple[str, str], list[float]] = {k: [] for k in sessions}
        results: dict[tuple[str, str], list[float]] = {k: [] for k in sessions}
        asked: dict[tuple[str, str], int] = {k: 0 for k in sessions}
        floor: list[float] = []
        ctx.log(f"{FIGURE}: {reps} reps of {len(sessions)} cases and the floor")
        for _ in range(reps):
            for key, sid in sessions.items():
                w, r = _turn(conn, editor, sid, target, original, new)
                written[key].append(w)
                results[key].append(r)
                asked[key] += editor.asked
            floor.append(_by_hand(target, original, old, new_line))
        low = summarize(floor)
        size = len(original.encode())
        for mode in ("code", "auto"):
            edit = summarize(results[(mode, "edit_file")])
            plain = summarize(results[(mode, "write_file")])
            over = edit.p50 - plain.p50
            ask = "asks (diff), allowed at once" if asked[(mode, "edit_file")] else "no question"
            for tool in ("edit_file", "write_file"):
                r = summarize(results[(mode, tool)])
                w = summarize(written[(mode, tool)])
                own = tool == "edit_file"
                rows.append(
                    Row(
                        FIGURE,
                        f"{tool}, {mode} mode ({ask}), {LINES:,} lines / {size / 1024:.0f} KB: "
                        "tool_call shown → result shown",
                        f"{ms(r.p50)} (file written at {ms(w.p50)})",
                        ms_spread(r),
                        (f"− write_file {ms(over)}; " if own else "")
                        + f"floor (client edits the file itself) {ms(low.p50)}",
                        f"< {ms(TARGET_MS)}, ≤ write_file + {ms(OVER_MS)}" if own else "",
                        verdict(r.p50 < TARGET_MS and over <= OVER_MS) if own else "",
                    )
                )
        rows.append(
            Row(
                FIGURE,
                "floor: the client reads, replaces, writes the file",
                ms(low.p50),
                ms_spread(low),
            )
        )
    finally:
        conn.close()
    return rows
