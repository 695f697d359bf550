"""A ``>`` line typed while the chat's turn seems to run, but sent after the sidecar
ended that turn, does not join it: the sidecar runs it as a turn of its own. The chat
shows that turn (its line, its answer, its usage line) instead of dropping it."""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from threadline_client import ThreadlineClient
from threadline_client.chat.controller import Chat
from threadline_client.chat.input import LineInput

pytestmark = pytest.mark.timeout(60)

ECHO = "scripted:" + json.dumps({"rounds": [[{"echo": True}, {"text": " (answered)"}]]})


async def test_a_steer_too_late_for_the_turn_is_shown_as_its_own_turn(
    home: Path, tmp_path: Path
) -> None:
    client = await ThreadlineClient.spawn(
        env={"THREADLINE_HOME": str(home)}, stderr=subprocess.DEVNULL
    )
    typed, keyboard = os.pipe()
    out = io.StringIO()
    console = Console(file=out, width=100, color_system=None, force_terminal=False)
    chat = Chat(
        client,
        console,
        LineInput(typed),
        cwd=str(tmp_path),
        session_options={"builtinTools": False},
        tools=[],
    )
    client.on_update(chat.on_update)
    try:
        await client.initialize()
        await chat.new_session(ECHO)
        sid = chat.session_id

        async def answered_late() -> dict[str, Any]:
            """The turn ended on the sidecar; the chat hears so only once the line typed
            meanwhile went out as a steer (as when the answer is still on its way)."""
            result = await client.prompt(sid, "first question")
            os.write(keyboard, b"> a late thought\n")
            for _ in range(500):
                if chat.steering:
                    break
                await asyncio.sleep(0.01)
            return result

        await chat.follow_turns(asyncio.get_running_loop().create_task(answered_late()))
        shown = out.getvalue()
        assert "steering: a late thought" in shown
        assert "❯ a late thought" in shown
        answer = re.search(r"^a late thought\s+\(answered\)", shown, re.MULTILINE)
        assert answer is not None, shown
        assert shown.index("❯ a late thought") < answer.start(), shown
        assert re.search(r"^first question\s+\(answered\)\s+↳ end_turn", shown, re.MULTILINE), shown
        assert shown.count("end_turn") == 2, shown
        turns = [m["turnId"] for m in await client.history(sid) if m["role"] == "user"]
        assert len(turns) == 2 and turns[0] != turns[1], "the steer ran as a turn of its own"
    finally:
        os.close(keyboard)
        await client.close()
        os.close(typed)
