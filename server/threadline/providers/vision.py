"""Which models see images: known per provider and model, set in ``threadline.toml``.

A model's ``images`` option (``true`` or ``false``) decides; without it, Anthropic's
models see images (every Claude model the API serves does, in prompts and in tool
results), OpenAI's API models of the families that do (GPT-4o, GPT-4.1, GPT-5, the o
series) see them in user messages, and any other OpenAI-compatible server is taken as
text-only (a self-hosted model rarely sees images; ``images = true`` says it does). The
embedded model is text-only; a scripted model (tests) sees images when its script says
``"images": true`` (and in tool results with ``"toolResultImages": true``).
"""

from __future__ import annotations

import re
from typing import Any

from ..userconfig import ModelEntry
from .base import TEXT_ONLY, ImageSupport

OPENAI_VISION = re.compile(r"^(gpt-4o|chatgpt-4o|gpt-4\.1|gpt-4-turbo|gpt-4\.5|gpt-5|o1|o3|o4)")
"""OpenAI API model names that take images."""

ANTHROPIC = ImageSupport(
    sees=True, in_tool_results=True, cost="anthropic", max_bytes=5 * 1024 * 1024, max_side=8000
)
"""The Messages API's documented limits: 5 MB and 8000 pixels a side per image."""
OPENAI = ImageSupport(sees=True, in_tool_results=False, cost="openai")


def image_support(entry: ModelEntry) -> ImageSupport:
    """A configured model's support: its ``images`` option, else its provider's rule."""
    said: Any = entry.option("images")
    anthropic = entry.provider.kind == "anthropic"
    known = ANTHROPIC if anthropic else OPENAI
    if isinstance(said, bool):
        return known if said else TEXT_ONLY
    if anthropic:
        return ANTHROPIC
    base = entry.provider.base_url
    official = base is None or base.rstrip("/") == "https://api.openai.com/v1"
    return OPENAI if official and OPENAI_VISION.match(entry.model) else TEXT_ONLY


def scripted_support(spec: str) -> ImageSupport:
    """A scripted model's support, as its script marks it (text-only unless marked)."""
    from .scripted import load_script

    try:
        script = load_script(spec)
    except (OSError, ValueError):
        return TEXT_ONLY
    if not script.get("images"):
        return TEXT_ONLY
    in_results = bool(script.get("toolResultImages"))
    return ImageSupport(
        sees=True, in_tool_results=in_results, cost="anthropic" if in_results else "openai"
    )
