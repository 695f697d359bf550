"""What server to run for a configured GGUF model, and how to start it.

A :class:`ServerSpec` is everything that makes two servers the same server: the kind,
the file, the slots, the context, the threads, the extra arguments. Its hash names
the server's folder in the home, so every sidecar configured alike finds the same
server, and a config change means a different server (which is also how a server
that crash-looped gets a fresh start once the config changes).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import shutil
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ...userconfig import LocalServer, ServerKind, Supervision

DEFAULT_CONTEXT = 4096
DEFAULT_PROMPT_CACHE_MB = 1024
"""llama_cpp.server's kept prompts when the entry sets no ``prompt_cache_mb``: about
18,000 tokens of a 7B model with grouped-query attention (57 KB a token), 45,000 of
SmolLM2-135M (23 KB)."""
WARM_MODULE = "threadline.providers.modelserver.warmserver"

HEALTH_PATHS: dict[ServerKind, str] = {
    # llama_cpp.server loads the model before it listens, so any answer means ready.
    "llama_cpp.server": "/v1/models",
    # llama-server listens at once and answers 503 on /health until the model is loaded.
    "llama-server": "/health",
}


OVERRIDING_ENV = frozenset({"HOST", "PORT", "CONFIG_FILE", "API_KEY", "LLAMA_API_KEY"})


SERVER_MODULES = ("llama_cpp.server", "fastapi", "uvicorn", "sse_starlette", "pydantic_settings")
"""What ``python -m llama_cpp.server`` imports beyond llama-cpp-python itself."""


def _find(module: str) -> object:
    try:
        return importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None


class SpecError(ValueError):
    """The server cannot be started as configured (no binary, no file)."""


@dataclass(frozen=True, slots=True)
class ServerSpec:
    kind: ServerKind
    gguf: str
    slots: int = 1
    context_window: int = DEFAULT_CONTEXT
    """Tokens of context per slot."""
    threads: int | None = None
    chat_format: str | None = None
    binary: str | None = None
    args: tuple[str, ...] = ()
    alias: str = "local"
    prompt_cache_mb: int | None = None
    """None: `DEFAULT_PROMPT_CACHE_MB` for llama_cpp.server, llama-server's default."""
    python: str = field(default_factory=lambda: sys.executable)
    """The interpreter that runs llama_cpp.server (the sidecar's own)."""
    supervision: Supervision = field(default_factory=Supervision)

    @classmethod
    def from_config(cls, server: LocalServer, context_window: int | None) -> ServerSpec:
        return cls(
            kind=server.kind,
            gguf=str(server.gguf),
            slots=server.slots,
            context_window=context_window or DEFAULT_CONTEXT,
            threads=server.threads,
            chat_format=server.chat_format,
            binary=server.binary,
            args=server.args,
            alias=server.gguf.stem,
            prompt_cache_mb=server.prompt_cache_mb,
            supervision=server.supervision,
        )

    @property
    def path(self) -> Path:
        return Path(self.gguf)

    @property
    def health_path(self) -> str:
        return HEALTH_PATHS[self.kind]

    def identity(self) -> dict[str, Any]:
        """The fields that define the server (the sidecar-side waits are not among them)."""
        data = asdict(self)
        sup = data.pop("supervision")
        data["supervision"] = {
            k: v for k, v in sup.items() if k not in ("stall_timeout", "slot_wait")
        }
        return data

    @property
    def key(self) -> str:
        digest = hashlib.sha256(json.dumps(self.identity(), sort_keys=True).encode()).hexdigest()
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", self.path.stem)[:40] or "model"
        return f"{stem}-{digest[:10]}"

    def fingerprint(self) -> list[int] | None:
        """Size and modification time of the model file (None if it is missing)."""
        try:
            st = self.path.stat()
        except OSError:
            return None
        return [st.st_size, st.st_mtime_ns]

    def preflight(self) -> None:
        """Refuse, with what to install, a server that cannot start (before any attempt:
        a missing package would otherwise show up only as a crash loop)."""
        if self.kind == "llama_cpp.server":
            missing = [m for m in SERVER_MODULES if _find(m) is None]
            if missing:
                raise SpecError(
                    f"llama_cpp.server needs {', '.join(missing)}: "
                    "pip install 'llama-cpp-python[server]'"
                )
        self.command(0)

    def command(self, port: int) -> list[str]:
        """The server's argv, listening on loopback ``port``."""
        if self.kind == "llama_cpp.server":
            cache_mb = (
                DEFAULT_PROMPT_CACHE_MB if self.prompt_cache_mb is None else self.prompt_cache_mb
            )
            # With a cache: llama_cpp.server's app, given a cache whose bound holds.
            module = [WARM_MODULE, "--prompt_cache_mb", str(cache_mb)] if cache_mb else []
            argv = [
                self.python,
                "-m",
                *(module or ["llama_cpp.server"]),
                "--model",
                self.gguf,
                "--model_alias",
                self.alias,
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--n_ctx",
                str(self.context_window),
                # The slot queue decides who runs; a newcomer must not cut one short.
                "--interrupt_requests",
                "False",
                # Its default computes and keeps the logits of every prompt token (for
                # logprobs, which Threadline never asks for): a fifth more work for a
                # small model, and n_ctx × n_vocab floats of memory.
                "--logits_all",
                "False",
            ]
            if self.threads:
                # Prompts too: its batch default is every core, and two threads that
                # wait on each other at every layer crawl when the cores are busy
                # (measured: 7 to 280 ms a prompt token, the same tokens, load 9–14).
                argv += ["--n_threads", str(self.threads), "--n_threads_batch", str(self.threads)]
            if self.chat_format:
                argv += ["--chat_format", self.chat_format]
            return argv + list(self.args)
        binary = self.binary or shutil.which("llama-server")
        if not binary:
            raise SpecError(
                "llama-server is not on PATH: install llama.cpp or set server_binary "
                "in threadline.toml"
            )
        argv = [
            binary,
            "--model",
            self.gguf,
            "--alias",
            self.alias,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--parallel",
            str(self.slots),
            # llama-server splits its context among the slots: give each one the window.
            "--ctx-size",
            str(self.context_window * self.slots),
        ]
        if self.threads:
            argv += ["--threads", str(self.threads)]
        if self.prompt_cache_mb is not None:  # else its default (builds before 2025-10
            argv += ["--cache-ram", str(self.prompt_cache_mb)]  # lack the option)
        return argv + list(self.args)

    def environment(self, api_key: str, base: Mapping[str, str]) -> dict[str, str]:
        """The server's environment: ``base`` without the variables llama_cpp.server
        would take over its arguments (``HOST``, ``PORT``, ``CONFIG_FILE``), plus the key
        that keeps other local users' programs off the server (an argument would show
        in ``ps``)."""
        env = {k: v for k, v in base.items() if k.upper() not in OVERRIDING_ENV}
        env["API_KEY" if self.kind == "llama_cpp.server" else "LLAMA_API_KEY"] = api_key
        return env

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> ServerSpec:
        data = json.loads(text)
        data["args"] = tuple(data.get("args", ()))
        data["supervision"] = Supervision(**data.get("supervision", {}))
        return cls(**data)
