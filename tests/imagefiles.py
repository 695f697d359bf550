"""Small real image files for the image tests, made with the stdlib (no Pillow)."""

from __future__ import annotations

import base64
import struct
import zlib


def png(width: int, height: int, shade: int = 0) -> bytes:
    """A valid RGB PNG of one colour (``shade`` makes different images of one size)."""
    row = b"\x00" + bytes((shade % 256, 0, 0)) * width
    raw = row * height

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def gif(width: int, height: int) -> bytes:
    """A GIF header with its logical screen size (what the server reads)."""
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00\x00\x00;"


def jpeg(width: int, height: int) -> bytes:
    """A JPEG's start: SOI, an APP0 segment, then the SOF0 frame header with the size."""
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + app0 + sof + b"\xff\xd9"


def webp(width: int, height: int) -> bytes:
    """A VP8X WebP header with its canvas size."""
    body = b"VP8X" + struct.pack("<I", 10) + b"\x00\x00\x00\x00"
    body += (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return b"RIFF" + struct.pack("<I", 4 + len(body)) + b"WEBP" + body


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def image_block(data: bytes, mime: str = "image/png") -> dict[str, str]:
    return {"type": "image", "mimeType": mime, "data": b64(data)}
