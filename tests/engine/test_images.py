"""What an image is, read from its own bytes, and what it costs and reads as."""

from __future__ import annotations

import struct

import pytest

from tests.imagefiles import b64, gif, jpeg, png, webp
from threadline.engine.images import (
    ImageRejected,
    ImageRules,
    anthropic_tokens,
    externalize,
    openai_tokens,
    placeholder,
    sniff,
)
from threadline.providers.base import ImagePart
from threadline.providers.vision import ANTHROPIC, OPENAI


@pytest.mark.parametrize(
    ("data", "mime", "size"),
    [
        (png(64, 32), "image/png", (64, 32)),
        (jpeg(1280, 720), "image/jpeg", (1280, 720)),
        (gif(10, 20), "image/gif", (10, 20)),
        (webp(300, 200), "image/webp", (300, 200)),
    ],
)
def test_type_and_size_come_from_the_bytes(data: bytes, mime: str, size: tuple[int, int]) -> None:
    facts = sniff(data)
    assert (facts.mime_type, (facts.width, facts.height), facts.size) == (mime, size, len(data))


def test_what_is_not_an_image_or_too_large_is_refused_with_why() -> None:
    with pytest.raises(ImageRejected, match="not a PNG, JPEG, GIF or WebP"):
        sniff(b"%PDF-1.7 not an image")
    with pytest.raises(ImageRejected, match="not a PNG"):
        sniff(png(4, 4)[:20])  # cut inside the header
    with pytest.raises(ImageRejected, match="at most 16384 a side"):
        sniff(gif(20_000, 10))
    with pytest.raises(ImageRejected, match="megapixels"):
        sniff(webp(10_000, 9_000))
    with pytest.raises(ImageRejected, match=r"25\.0 MB"):
        sniff(png(1, 1) + b"\0" * (25 * 1024 * 1024 - len(png(1, 1))))
    header = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">II", 0, 5)
    with pytest.raises(ImageRejected, match="gives no size"):
        sniff(header + b"\0" * 5)


def test_documented_token_costs() -> None:
    assert anthropic_tokens(1000, 1000) == 1334  # 1,000,000 / 750
    assert anthropic_tokens(3136, 3136) == anthropic_tokens(1568, 1568)  # scaled first
    assert openai_tokens(512, 512) == 85 + 170
    assert openai_tokens(1024, 1024) == 85 + 170 * 4  # short side 768: 2×2 tiles
    assert openai_tokens(4096, 2048) == 85 + 170 * 6  # 2048×1024 → 1536×768: 3×2


def test_a_stored_block_names_its_blob_and_reads_as_a_placeholder() -> None:
    shot = png(1280, 720)
    [block], [blob] = externalize([{"type": "image", "mimeType": "image/jpeg", "data": b64(shot)}])
    assert blob.data == shot and blob.mime_type == "image/png"
    assert block["uri"] == f"threadline-blob:{blob.hash}" and block["data"] == ""
    kb = round(len(shot) / 1024)
    assert placeholder(block) == f"[image: 1280×720 PNG, {kb} KB — this model cannot see images]"
    [broken], none = externalize([{"type": "image", "mimeType": "image/png", "data": "AAAA"}])
    assert none == [] and broken["type"] == "text" and "not kept" in broken["text"]


def test_an_image_beyond_the_providers_limits_reads_as_a_placeholder() -> None:
    wide = {"type": "image", "mimeType": "image/gif", "data": b64(gif(9000, 10))}
    small = {"type": "image", "mimeType": "image/png", "data": b64(png(8, 8))}
    rules = ImageRules(ANTHROPIC, lambda _hash: None)
    assert rules.part(wide) == "[image: GIF — too large for this model]"
    part = rules.part(small)
    assert isinstance(part, ImagePart) and part.tokens == anthropic_tokens(8, 8)
    assert ImageRules(OPENAI, lambda _hash: None).part(wide) != rules.part(wide)


def test_a_replay_naming_no_stored_image_is_passed_on_as_it_is() -> None:
    """A ``session/load`` replay is looked at in one search: the same list when no
    update names a stored image (even when the scheme's text runs across two), and
    only the updates that name one get the bytes back."""
    import orjson

    from threadline.engine.images import ClientImages
    from threadline.store.base import BlobInfo

    shot = png(4, 3)
    [block], [blob] = externalize([{"type": "image", "mimeType": "image/png", "data": b64(shot)}])
    info = BlobInfo(blob.hash, "image/png", len(shot), 4, 3)
    images = ClientImages(lambda h: (info, shot) if h == blob.hash else None)
    chunk = {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi"}}
    plain = [orjson.dumps(chunk) for _ in range(3)]
    split = [b'{"t":"threadline-b', b'lob:x"}']  # the scheme's text across two updates
    assert images.updates_json(plain) is plain and list(images.updates_json(split)) == split
    named = orjson.dumps({"sessionUpdate": "user_message_chunk", "content": block})
    out = images.updates_json([*plain, named])
    assert list(out[:3]) == plain and out[0] is plain[0]
    assert orjson.loads(out[3])["content"]["data"] == b64(shot)
