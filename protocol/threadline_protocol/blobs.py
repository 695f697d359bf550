"""``session/blob``: the bytes of a stored image, for a client that asked for references.

A client that says ``imageReferences`` (``clientCapabilities._meta.threadline``) is
shown stored images as ``threadline-blob:<sha256>`` URIs with empty ``data``, so
replaying a long session with many screenshots costs nothing until one is looked at;
it fetches each with this method.
"""

from __future__ import annotations

from pydantic import Field

from .base import StrictWireModel, WireModel


class BlobParams(StrictWireModel):
    session_id: str = Field(min_length=1)
    """A session whose transcript (or a fork's base) holds the image."""
    uri: str = Field(pattern=r"^threadline-blob:[0-9a-f]{64}$")
    """The image's ``threadline-blob:<sha256>`` reference."""


class BlobResult(WireModel):
    uri: str
    mime_type: str
    data: str
    """The bytes, base64."""
    size: int
    """Bytes (before base64)."""
    width: int
    height: int
