"""Images in the transcript: what a sent image is (its bytes, not its declared type),
how it is kept (a blob named by its hash), and what a model that cannot see it reads.

A prompt's ``image`` block (base64 ``data``, or a ``uri`` of a file inside the
session's folders) and a tool's image result are checked here: PNG, JPEG, GIF or WebP
by their first bytes, their width and height read from the headers, within the size and
pixel limits. A stored block names its blob (``threadline-blob:<sha256>``, with the
dimensions in ``_meta.threadline.image``) and never holds the bytes, which live once in
the store (`store.blobs`); clients get them back inline (base64, the default) or as the
reference, fetched with ``session/blob``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import math
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import orjson

from ..providers.base import TEXT_ONLY, ImagePart, ImageSupport
from ..store.base import Blob, BlobInfo
from ..store.blobs import BLOB_SCHEME
from .rawjson import RawJSON

Block = dict[str, Any]

MAX_IMAGE_BYTES = 20 * 1024 * 1024
"""The largest image accepted (OpenAI's limit; larger ones are refused, not cut)."""
MAX_PIXELS = 50_000_000
"""The most pixels an image may have (width × height)."""
MAX_SIDE = 16_384
"""The longest side an image may have, in pixels."""

MIME_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


BlobReader = Callable[[str], tuple[BlobInfo, bytes] | None]
"""The store's `get_blob`: an image's facts and bytes by hash."""


class ImageRejected(ValueError):
    """Why an image cannot be taken (the message is the -32602 reason)."""


@dataclass(frozen=True, slots=True)
class ImageFacts:
    mime_type: str
    width: int
    height: int
    size: int


# -- what the bytes are -----------------------------------------------------------------


def _png(data: bytes) -> tuple[int, int] | None:
    if data[:8] != b"\x89PNG\r\n\x1a\n" or len(data) < 24 or data[12:16] != b"IHDR":
        return None
    w, h = struct.unpack(">II", data[16:24])
    return int(w), int(h)


def _gif(data: bytes) -> tuple[int, int] | None:
    if data[:6] not in (b"GIF87a", b"GIF89a") or len(data) < 10:
        return None
    w, h = struct.unpack("<HH", data[6:10])
    return int(w), int(h)


_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


def _jpeg(data: bytes) -> tuple[int, int] | None:
    if data[:3] != b"\xff\xd8\xff":
        return None
    i = 2
    while i + 4 <= len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            i += 2
            continue
        (length,) = struct.unpack(">H", data[i + 2 : i + 4])
        if marker in _SOF:
            if i + 9 > len(data):
                return None
            h, w = struct.unpack(">HH", data[i + 5 : i + 9])
            return int(w), int(h)
        i += 2 + length
    return None


def _webp(data: bytes) -> tuple[int, int] | None:
    if data[:4] != b"RIFF" or data[8:12] != b"WEBP" or len(data) < 30:
        return None
    chunk = data[12:16]
    if chunk == b"VP8 " and data[23:26] == b"\x9d\x01\x2a":
        w, h = struct.unpack("<HH", data[26:30])
        return int(w) & 0x3FFF, int(h) & 0x3FFF
    if chunk == b"VP8L" and data[20] == 0x2F:
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":
        w = int.from_bytes(data[24:27], "little") + 1
        h = int.from_bytes(data[27:30], "little") + 1
        return w, h
    return None


_READERS: tuple[tuple[str, Callable[[bytes], tuple[int, int] | None]], ...] = (
    ("image/png", _png),
    ("image/jpeg", _jpeg),
    ("image/gif", _gif),
    ("image/webp", _webp),
)


def sniff(data: bytes) -> ImageFacts:
    """The image's type and size from its own bytes; `ImageRejected` when it is not a
    PNG, JPEG, GIF or WebP whose header says how large it is, or is over the limits."""
    if len(data) > MAX_IMAGE_BYTES:
        raise ImageRejected(
            f"the image is {len(data) / 1048576:.1f} MB; at most "
            f"{MAX_IMAGE_BYTES // 1048576} MB is accepted"
        )
    for mime, read in _READERS:
        try:
            dims = read(data)
        except (struct.error, IndexError):
            dims = None
        if dims is None:
            continue
        w, h = dims
        if w <= 0 or h <= 0:
            raise ImageRejected(f"the {mime} image's header gives no size ({w}×{h})")
        if max(w, h) > MAX_SIDE or w * h > MAX_PIXELS:
            raise ImageRejected(
                f"the image is {w}×{h} pixels; at most {MAX_SIDE} a side and "
                f"{MAX_PIXELS // 1_000_000} megapixels are accepted"
            )
        return ImageFacts(mime, w, h, len(data))
    raise ImageRejected(
        "the image's bytes are not a PNG, JPEG, GIF or WebP image (whatever its mimeType says)"
    )


def decode_base64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ImageRejected(f"the image's data is not valid base64 ({exc})") from None


def read_uri(uri: str, roots: Sequence[Path]) -> bytes:
    """The bytes of an image named by a ``file:`` URI (or a path) inside ``roots``."""
    parsed = urlparse(uri)
    if parsed.scheme not in ("", "file"):
        raise ImageRejected(f"an image uri must be a file inside the workspace, not {uri!r}")
    raw = Path(unquote(parsed.path) if parsed.scheme else uri)
    path = raw if raw.is_absolute() or not roots else roots[0] / raw
    try:
        real = path.resolve(strict=True)
    except OSError:
        raise ImageRejected(f"no image file at {uri!r}") from None
    if not any(real.is_relative_to(r.resolve()) for r in roots):
        raise ImageRejected(f"the image {uri!r} is outside the session's workspace folders")
    if not real.is_file():
        raise ImageRejected(f"{uri!r} is not a file")
    if real.stat().st_size > MAX_IMAGE_BYTES:
        sniff(b"\0" * (MAX_IMAGE_BYTES + 1))  # the same refusal as for data
    return real.read_bytes()


def accept_prompt(content: list[Block], roots: Sequence[Path], read: BlobReader) -> list[Block]:
    """A prompt's blocks with each image checked and carrying its bytes (a ``uri`` of a
    file in ``roots`` read, a ``threadline-blob:`` one taken from the store), its
    ``mimeType`` the one its bytes say; `ImageRejected` (-32602) names what is wrong,
    before anything is stored."""
    out: list[Block] = []
    for n, block in enumerate(content):
        if block.get("type") != "image":
            out.append(block)
            continue
        data_text, uri = block.get("data"), block.get("uri")
        try:
            if data_text:
                data = decode_base64(str(data_text))
            elif isinstance(uri, str) and uri.startswith(BLOB_SCHEME):
                got = read(uri[len(BLOB_SCHEME) :])
                if got is None:
                    raise ImageRejected(f"no stored image {uri!r}")
                data = got[1]
            elif isinstance(uri, str) and uri:
                data = read_uri(uri, roots)
            else:
                raise ImageRejected("an image needs base64 data or a uri")
            facts = sniff(data)
        except ImageRejected as exc:
            raise ImageRejected(f"prompt block {n}: {exc}") from None
        kept = {k: v for k, v in block.items() if k != "uri" or not str(v).startswith(BLOB_SCHEME)}
        kept["mimeType"] = facts.mime_type
        kept["data"] = data_text if data_text else base64.b64encode(data).decode("ascii")
        out.append(kept)
    return out


# -- stored blocks ----------------------------------------------------------------------


def blob_of(data: bytes) -> tuple[Blob, ImageFacts]:
    facts = sniff(data)
    return Blob(
        hashlib.sha256(data).hexdigest(), facts.mime_type, data, facts.width, facts.height
    ), facts


def stored_block(blob: Blob, size: int, source: str | None = None) -> Block:
    """The block a transcript keeps for an image: its blob, never its bytes."""
    facts: dict[str, Any] = {
        "blob": blob.hash,
        "width": blob.width,
        "height": blob.height,
        "size": size,
    }
    if source:
        facts["source"] = source
    return {
        "type": "image",
        "mimeType": blob.mime_type,
        "data": "",
        "uri": BLOB_SCHEME + blob.hash,
        "_meta": {"threadline": {"image": facts}},
    }


def facts_of(block: Block) -> dict[str, Any] | None:
    """``_meta.threadline.image`` of a stored image block (None for an old inline one)."""
    meta = block.get("_meta")
    tl = meta.get("threadline") if isinstance(meta, dict) else None
    facts = tl.get("image") if isinstance(tl, dict) else None
    return facts if isinstance(facts, dict) else None


def blob_hash(block: Block) -> str | None:
    uri = block.get("uri")
    if block.get("type") == "image" and isinstance(uri, str) and uri.startswith(BLOB_SCHEME):
        return uri[len(BLOB_SCHEME) :]
    return None


def externalize(content: list[Block]) -> tuple[list[Block], list[Blob]]:
    """``content`` with each image that carries its bytes replaced by its stored block,
    and the blobs to store with it. An image that is not one (a tool's broken output)
    becomes a text block saying why, so nothing unreadable is kept."""
    out: list[Block] = []
    blobs: list[Blob] = []
    for block in content:
        if block.get("type") == "tool_result" and has_images(block.get("content", [])):
            inner, found = externalize(block["content"])
            blobs += found
            kept = {**block, "content": inner}
            if "rawOutput" in kept:  # the tool's own dump repeats the bytes: keep hashes
                kept["rawOutput"] = without_bytes(kept["rawOutput"])
            out.append(kept)
            continue
        if block.get("type") != "image" or not block.get("data"):
            out.append(block)
            continue
        try:
            data = decode_base64(str(block["data"]))
            blob, facts = blob_of(data)
        except ImageRejected as exc:
            out.append({"type": "text", "text": f"[image not kept: {exc}]"})
            continue
        blobs.append(blob)
        out.append(stored_block(blob, facts.size, block.get("uri")))
    return out, blobs


def without_bytes(value: Any) -> Any:
    """``value`` with every image's base64 ``data`` replaced by its blob's name."""
    if isinstance(value, list):
        items: list[Any] = value
        return [without_bytes(v) for v in items]
    if not isinstance(value, dict):
        return value
    obj: dict[str, Any] = value
    data = obj.get("data")
    if obj.get("type") == "image" and isinstance(data, str) and data:
        try:
            digest = hashlib.sha256(decode_base64(data)).hexdigest()
        except ImageRejected:
            return {**obj, "data": ""}
        return {**obj, "data": "", "uri": BLOB_SCHEME + digest}
    return {k: without_bytes(v) for k, v in obj.items()}


def has_images(content: Sequence[Block]) -> bool:
    """Whether any block is an image, or a tool result holding one."""
    return any(
        b.get("type") == "image"
        or (b.get("type") == "tool_result" and has_images(b.get("content", [])))
        for b in content
    )


def describe(block: Block) -> str:
    """An image in words: ``1280×720 PNG, 84 KB`` (``PNG`` for an old inline block)."""
    facts = facts_of(block)
    kind = str(block.get("mimeType", "image/?")).rpartition("/")[2].upper()
    if facts is None:
        return kind
    kb = max(1, round(int(facts.get("size", 0)) / 1024))
    return f"{facts.get('width')}×{facts.get('height')} {kind}, {kb} KB"


def placeholder(block: Block, why: str = "this model cannot see images") -> str:
    """What a model reads for an image it is not sent: ``[image: 1280×720 PNG, 84 KB —
    this model cannot see images]``."""
    return f"[image: {describe(block)} — {why}]"


# -- token cost -------------------------------------------------------------------------


def anthropic_tokens(width: int, height: int) -> int:
    """Anthropic's documented cost: width × height / 750, after scaling the image to
    at most 1568 pixels on its long side."""
    scale = min(1.0, 1568 / max(width, height))
    return max(1, math.ceil(width * scale * height * scale / 750))


def openai_tokens(width: int, height: int) -> int:
    """OpenAI's documented cost at ``detail: high``: the image fit in 2048×2048, its
    short side scaled to 768, then 170 tokens per 512-pixel tile plus 85."""
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    short = min(w, h)
    if short > 768:
        w, h = w * 768 / short, h * 768 / short
    return 85 + 170 * math.ceil(w / 512) * math.ceil(h / 512)


COSTS: dict[str, Callable[[int, int], int]] = {
    "anthropic": anthropic_tokens,
    "openai": openai_tokens,
}


# -- what the model is sent -------------------------------------------------------------

CANNOT_SEE = "this model cannot see images"


@dataclass(frozen=True, slots=True)
class ImageRules:
    """How one model takes images (`ImageSupport`) and where their bytes are read."""

    support: ImageSupport
    read: BlobReader
    why: str = CANNOT_SEE
    """What the placeholder says when the model is not sent the image."""

    def compacted(self) -> ImageRules:
        """For messages a compaction kept before its summary (the task message): their
        images are placeholders from then on, so an old screenshot stops costing."""
        return ImageRules(TEXT_ONLY, self.read, "compacted")

    def part(self, block: Block) -> ImagePart | str:
        """An image block as the model gets it: its bytes and token cost, or the
        placeholder it reads instead (a text-only model, bytes no longer stored)."""
        if not self.support.sees:
            return placeholder(block, self.why)
        h = blob_hash(block)
        if h is not None:
            got = self.read(h)
            if got is None:
                return placeholder(block, "no longer stored")
            info, data = got
            mime, w, ht, b64 = info.mime_type, info.width, info.height, None
        else:
            try:
                data = decode_base64(str(block.get("data", "")))
                facts = sniff(data)
            except ImageRejected as exc:
                return f"[image not sent: {exc}]"
            mime, w, ht, b64 = facts.mime_type, facts.width, facts.height, block.get("data")
        limit, side = self.support.max_bytes, self.support.max_side
        if (limit is not None and len(data) > limit) or (side is not None and max(w, ht) > side):
            return placeholder(block, "too large for this model")
        encoded = b64 if isinstance(b64, str) else base64.b64encode(data).decode("ascii")
        return ImagePart(mime, encoded, w, ht, COSTS[self.support.cost](w, ht))


# -- what clients get back ---------------------------------------------------------------


def inline(value: Any, read: BlobReader) -> Any:
    """``value`` (an update, a message, a list of them) with every stored image block's
    bytes put back as base64 ``data`` (its ``uri`` dropped): what a client that did not
    ask for references is shown. Unchanged objects are returned as they are."""
    if isinstance(value, list):
        items: list[Any] = value
        changed = [inline(v, read) for v in items]
        return changed if any(a is not b for a, b in zip(changed, items, strict=True)) else value
    if not isinstance(value, dict):
        return value
    obj: dict[str, Any] = value
    h = blob_hash(obj)
    if h is not None:
        got = read(h)
        if got is None:
            return obj
        out = {k: v for k, v in obj.items() if k != "uri"}
        out["data"] = base64.b64encode(got[1]).decode("ascii")
        return out
    new = {k: inline(v, read) for k, v in obj.items()}
    return new if any(new[k] is not obj[k] for k in obj) else obj


def inline_json(raw: bytes, read: BlobReader) -> bytes:
    """`inline` for JSON text: parsed and written again only when it names a blob."""
    if BLOB_SCHEME.encode() not in raw:
        return raw
    return orjson.dumps(inline(orjson.loads(raw), read))


def inline_raw(value: RawJSON | list[Any], read: BlobReader) -> RawJSON | list[Any]:
    """`inline` for what ``Transcript.history_json`` gives (spliced JSON or a list)."""
    if isinstance(value, RawJSON):
        made = inline_json(value.data, read)
        return value if made is value.data else RawJSON(made)
    return inline(value, read)


SHOWS_IMAGES = (
    "user_message_chunk",
    "tool_call",
    "tool_call_update",
    "user_message",
    "tool_call_content_chunk",
)
"""The updates that may hold a stored image (ACP v1's, and v2's whole messages and
content chunks)."""


class ClientImages:
    """What a connection whose client did not ask for references does to each update
    it sends: stored images get their bytes back (`inline`)."""

    def __init__(self, read: BlobReader) -> None:
        self.read = read

    def update(self, update: dict[str, Any]) -> dict[str, Any]:
        if update.get("sessionUpdate") not in SHOWS_IMAGES:
            return update
        made: dict[str, Any] = inline(update, self.read)
        return made

    def update_json(self, raw: bytes) -> bytes:
        return inline_json(raw, self.read)

    def updates_json(self, raws: Sequence[bytes]) -> Sequence[bytes]:
        """`update_json` of each; the same list when none names a stored image (a
        replay of 100,000 updates is looked at in one search of them joined, not one
        Python step each: ~1 ms instead of ~2.4 at 10,000 updates)."""
        marker = BLOB_SCHEME.encode()
        if marker not in b"".join(raws):  # found across two updates: looked at each below
            return raws
        return [inline_json(raw, self.read) if marker in raw else raw for raw in raws]
