"""The ``threadline`` command's output, as a person runs it (a real process each time)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

from tests.clients.stored import with_sidecar
from tests.support import scripted
from threadline_client import ThreadlineClient

THREADLINE = [sys.executable, "-m", "threadline"]


def run(
    home: Path, *args: str, cwd: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    full = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_API_KEY") and k not in ("THREADLINE_MODEL", "THREADLINE_CONFIG")
    }
    full.update(THREADLINE_HOME=str(home), THREADLINE_LOG_LEVEL="WARNING", **env)
    return subprocess.run(
        [*THREADLINE, *args], env=full, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def test_version_and_help(home: Path) -> None:
    version = run(home, "--version")
    assert version.returncode == 0, version.stderr
    assert re.fullmatch(r"threadline \d+\.\d+\.\d+\n", version.stdout)
    helptext = run(home, "--help")
    assert helptext.returncode == 0
    assert "``" not in helptext.stdout
    assert "threadline serve" in helptext.stdout
    for command in ("ask", "chat", "sessions", "history", "models"):
        assert command in helptext.stdout


def test_a_model_without_its_key_is_refused_before_anything_is_stored(home: Path) -> None:
    result = run(home, "ask", "--model", "openai:gpt-4o-mini", "hello there")
    assert result.returncode == 1
    assert result.stderr == (
        "threadline: no API key for openai:gpt-4o-mini: set $OPENAI_API_KEY\n"
    )  # in words, no code
    assert run(home, "sessions").stdout.strip() in ("", "no sessions")


def test_an_unknown_model_is_refused_with_the_models_a_person_can_pick(home: Path) -> None:
    result = run(home, "ask", "--model", "nope:x", "hello there")
    assert result.returncode == 1
    assert "threadline: unknown model 'nope:x': use 'local:smollm2-135m'" in result.stderr
    assert "scripted" not in result.stderr  # test models are not offered


def test_a_failed_prompt_prints_the_session_and_stores_no_empty_reply(home: Path) -> None:
    down = scripted([{"error": {"message": "the server is down", "reason": "server_error"}}])
    result = run(home, "ask", "--model", down, "hello there")
    assert result.returncode == 1
    assert "threadline: model call failed: the server is down" in result.stderr
    assert "-32011" not in result.stderr  # in words
    sid = re.search(r"session: (sess_\w+)", result.stderr)
    assert sid, result.stderr
    history = run(home, "history", sid.group(1))
    assert history.returncode == 0, history.stderr
    assert history.stdout == "[u1 user] hello there\n"


def test_history_shows_tool_calls_and_their_results(home: Path, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("the secret is 42\n")
    model = scripted(
        [{"tool_call": {"name": "read_file", "arguments": {"path": "notes.txt"}}}],
        [{"tool_call": {"name": "read_file", "arguments": {}}}],
        [{"text": "It is 42."}],
    )
    asked = run(home, "ask", "--tools", "--model", model, "what is the secret?", cwd=tmp_path)
    assert asked.returncode == 0, asked.stderr
    sid = re.search(r"session: (sess_\w+)", asked.stderr)
    assert sid, asked.stderr
    lines = run(home, "history", sid.group(1)).stdout.splitlines()
    assert lines[0] == "[u1 user] what is the secret?"
    assert '[a1 tool call] read_file {"path": "notes.txt"}' in lines
    assert any(
        line.startswith("[a1 tool result] read_file completed:") and "the secret is 42" in line
        for line in lines
    ), lines
    assert "[a1 tool call] read_file {}" in lines
    assert any(
        line.startswith("[a1 tool result] read_file failed: invalid arguments") for line in lines
    ), lines
    assert lines[-1] == "[a1 assistant] It is 42."
    assert all(not re.fullmatch(r"\[\w+ \w+\] ?", line) for line in lines), lines


def test_models_marks_the_default_that_threadline_model_names(home: Path) -> None:
    result = run(home, "models", "--no-check", "--json", THREADLINE_MODEL="openai:gpt-4o-mini")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["models"]
    assert [r["model"] for r in rows if r["default"]] == ["openai:gpt-4o-mini"]
    plain = run(home, "models", "--no-check")
    assert re.search(r"local:smollm2-135m \*", plain.stdout), plain.stdout


def test_history_marks_a_compaction_summary(home: Path, tmp_path: Path) -> None:
    model = "scripted:" + json.dumps(
        {
            "rounds": [[{"repeat": {"text": "lorem ", "count": 40}}]],
            "summary": [{"text": "Goal: test the summary."}],
        }
    )

    async def make(client: ThreadlineClient) -> str:
        sid = await client.new_session(str(tmp_path), model=model)
        for i in range(3):
            await client.prompt(sid, f"question {i}")
        await client.request("session/compact", {"sessionId": sid, "keepTurns": 1})
        return sid

    sid = with_sidecar(home, make)
    lines = run(home, "history", sid).stdout.splitlines()
    summaries = [line for line in lines if "compaction summary" in line]
    assert len(summaries) == 1, lines
    assert re.fullmatch(r"\[a\d+ compaction summary\] Goal: test the summary\.", summaries[0])
    assert not any("assistant] Goal" in line for line in lines), lines


def test_export_import_and_search_from_the_command_line(home: Path, tmp_path: Path) -> None:
    asked = run(
        home,
        "ask",
        "--model",
        scripted([{"text": "Descale it with citric acid."}]),
        "How do I clean a kettle?",
    )
    assert asked.returncode == 0, asked.stderr
    sid = re.search(r"session: (sess_\w+)", asked.stderr)
    assert sid, asked.stderr
    markdown = run(home, "export", sid.group(1))
    assert markdown.returncode == 0, markdown.stderr
    assert markdown.stdout.startswith("# How do I clean a kettle?\n")
    assert "## You\n\nHow do I clean a kettle?" in markdown.stdout
    assert "## Assistant\n\nDescale it with citric acid." in markdown.stdout
    log = run(home, "export", sid.group(1), "--format", "jsonl")
    assert log.returncode == 0, log.stderr
    (tmp_path / "kettle.jsonl").write_text(log.stdout)
    imported = run(home, "import", str(tmp_path / "kettle.jsonl"))
    assert imported.returncode == 0, imported.stderr
    new = re.fullmatch(r"(sess_\w+)  \(2 messages\)\n", imported.stdout)
    assert new and new.group(1) != sid.group(1), imported.stdout
    found = run(home, "search", "citric")
    assert found.returncode == 0, found.stderr
    lines = found.stdout.splitlines()
    assert {line.split()[0] for line in lines} == {sid.group(1), new.group(1)}
    assert all("assistant: Descale it with [citric] acid." in line for line in lines), lines
    broken = log.stdout.splitlines()
    (tmp_path / "bad.jsonl").write_text("\n".join([broken[0], broken[1], "{oops"]) + "\n")
    bad = run(home, "import", str(tmp_path / "bad.jsonl"))
    assert bad.returncode == 1
    assert bad.stderr.startswith("threadline: line 3: not JSON"), bad.stderr
    assert "nothing was imported" in bad.stderr
    missing = run(home, "import", str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 1 and "No such file" in missing.stderr


def test_history_marks_an_interrupted_answer_as_interrupted_not_as_an_error(home: Path) -> None:
    hang = scripted([{"text": "partial "}, {"text": "answer"}, {"hang": True}])

    async def interrupted(client: ThreadlineClient) -> str:
        sid = await client.new_session(model=hang)
        streamed = asyncio.Event()
        client.on_update(lambda _sid, u: streamed.set() if "content" in u else None)
        turn = asyncio.create_task(client.prompt(sid, "tell me"))
        await asyncio.wait_for(streamed.wait(), 30)
        await client.interrupt(sid)
        assert (await turn)["stopReason"] == "cancelled"
        return sid

    sid = with_sidecar(home, interrupted)
    lines = run(home, "history", sid).stdout.splitlines()
    assert lines[0] == "[u1 user] tell me"
    assert lines[1].startswith("[a1 assistant (interrupted)] partial"), lines
    assert not any("error" in line for line in lines), lines
