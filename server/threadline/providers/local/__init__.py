"""Local provider: SmolLM2-135M-Instruct (Q4_1 GGUF) run on the CPU with llama-cpp-python.

One module per job: :mod:`.model` finds, loads and shares the model;
:mod:`.chatml` renders the prompt; :mod:`.generation` runs cancellable completions;
:mod:`.tool_calls` drives the function-calling protocol; :mod:`.provider` is the
Provider, a worker thread per request.
"""

from __future__ import annotations

from .model import LocalModel, LocalModelError, find_model_path
from .provider import LocalProvider

__all__ = ["LocalModel", "LocalModelError", "LocalProvider", "find_model_path"]
