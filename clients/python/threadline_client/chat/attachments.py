"""``@image path.png`` in a chat line: the file is attached to the prompt as an image.

The chat reads the file itself and sends its bytes (base64 ``data``), so a screenshot
from anywhere on this machine can be attached, not only one inside the session's
folders (a ``uri`` the sidecar reads must be inside them). The sidecar checks the bytes
(PNG, JPEG, GIF, WebP; size limits) and answers -32602 when they are not an image.
"""

from __future__ import annotations

import base64
import re
import shlex
from pathlib import Path
from typing import Any

ATTACH = re.compile(r"(?:^|\s)@image\s+(\"[^\"]+\"|'[^']+'|\S+)")

MIME_BY_SUFFIX = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}


class AttachmentError(ValueError):
    """A named file that cannot be attached (the message says which and why)."""

    @property
    def message(self) -> str:
        return str(self)


def prompt_blocks(line: str, cwd: Path) -> list[dict[str, Any]]:
    """The prompt a chat line sends: its text (without the ``@image`` words), then each
    named image. A line without ``@image`` is one text block, as before."""
    paths = [shlex.split(m.group(1))[0] for m in ATTACH.finditer(line)]
    text = " ".join(ATTACH.sub(" ", line).split())
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text or not paths else []
    for name in paths:
        path = (cwd / Path(name).expanduser()).resolve()
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise AttachmentError(f"cannot attach {name}: {exc.strerror or exc}") from None
        mime = MIME_BY_SUFFIX.get(path.suffix.lower(), "image/png")
        blocks.append(
            {"type": "image", "mimeType": mime, "data": base64.b64encode(data).decode("ascii")}
        )
    return blocks
