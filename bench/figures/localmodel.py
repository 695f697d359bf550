"""Local model overhead: tokens/s through the sidecar vs llama-cpp-python called directly.

Same GGUF file (the default model, SmolLM2-135M), same load settings, same ChatML
prompt tokens (the session gets a system prompt and no tools, so the sidecar's prompt
is exactly system + user), greedy sampling (temperature 0) so both produce the very same
tokens, same ``max_tokens``. The sidecar's rate is output tokens / (``session/prompt``
sent → answered) on a fresh session each rep; the direct rate is output tokens /
(``create_completion`` called → last token). Both run a warm-up generation first, so
both start each rep with the prompt already in llama.cpp's prefix cache. Reps
alternate between the two, and only one generates at a time.
Both use the sidecar's own thread count (``DEFAULT_N_THREADS``) and generate on a
worker thread, as the sidecar does.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from ..context import Context
from ..report import Row, verdict
from ..servers import PEERS, THREADLINE, answer, new_session, spawn
from ..stats import rate, ratio, summarize
from ..wire import Connection

FIGURE = "local model overhead"
SYSTEM = "You are a helpful assistant."
PROMPT = "Write a short poem about the sea."


class Direct:
    """The ``llama_direct.py`` peer process."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(PEERS / "llama_direct.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.ready = self._read()

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("llama_direct.py exited")
        return json.loads(line)

    def generate(self, max_tokens: int) -> dict[str, Any]:
        assert self.proc.stdin is not None
        req = {"system": SYSTEM, "prompt": PROMPT, "max_tokens": max_tokens, "temperature": 0.0}
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _sidecar(conn: Connection, max_tokens: int) -> dict[str, Any]:
    sid = new_session(
        conn, systemPrompt=SYSTEM, maxTokens=max_tokens, temperature=0.0, builtinTools=False
    )
    said = answer(conn, sid, PROMPT)
    usage = said.result.get("usage") or {}
    return {
        "tokens": int(usage.get("outputTokens", 0)),
        "prompt_tokens": int(usage.get("inputTokens", 0)),
        "seconds": said.seconds,
        "text": said.text,
    }


def _pass(
    ctx: Context, max_tokens: int, reps: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Reps alternating sidecar / direct."""
    conn = spawn(THREADLINE, ctx.scratch.home("localmodel"))
    direct = Direct()
    via: list[dict[str, Any]] = []
    ref: list[dict[str, Any]] = []
    try:
        _sidecar(conn, max_tokens)  # warm-up: loads the model, fills the prefix cache
        direct.generate(max_tokens)
        for _ in range(reps):
            via.append(_sidecar(conn, max_tokens))
            ref.append(direct.generate(max_tokens))
    finally:
        conn.close()
        direct.close()
    return via, ref


def _rows(max_tokens: int, via: list[dict[str, Any]], ref: list[dict[str, Any]]) -> list[Row]:
    v = summarize(r["tokens"] / r["seconds"] for r in via)
    d = summarize(r["tokens"] / r["seconds"] for r in ref)
    per_rep = summarize(
        (a["tokens"] / a["seconds"]) / (b["tokens"] / b["seconds"])
        for a, b in zip(via, ref, strict=True)
    )
    same = all(a["text"] == b["text"] for a, b in zip(via, ref, strict=True))
    same_prompt = all(
        a["prompt_tokens"] == b["prompt_tokens"] for a, b in zip(via, ref, strict=True)
    )
    check = (
        f"{'same' if same else 'DIFFERENT'} output text, "
        f"{'same' if same_prompt else 'different'} prompt token count "
        f"({via[0]['prompt_tokens']} vs {ref[0]['prompt_tokens']}), {via[0]['tokens']} tokens"
    )
    return [
        Row(
            FIGURE,
            f"through the sidecar, {max_tokens} max tokens, greedy",
            rate(v.p50, " tok/s"),
            f"{rate(v.min)}–{rate(v.max)} (n={v.n})",
            f"{ratio(per_rep.p50)} direct (per-rep {ratio(per_rep.min)}–{ratio(per_rep.max)})",
            "≥ 0.97× direct",
            verdict(per_rep.p50 >= 0.97 and same),
        ),
        Row(
            FIGURE,
            "llama-cpp-python directly (same file, prompt, settings)",
            rate(d.p50, " tok/s"),
            f"{rate(d.min)}–{rate(d.max)} (n={d.n})",
            check,
        ),
    ]


def run(ctx: Context) -> list[Row]:
    max_tokens = ctx.n(64, 8)
    reps = ctx.n(9, 1)
    via, ref = _pass(ctx, max_tokens, reps)
    return _rows(max_tokens, via, ref)
