"""The scale figure's pairing of chunks read by two windows that coalesce differently."""

from __future__ import annotations

from bench.figures.scale import _followed  # pyright: ignore[reportPrivateUsage]


def test_each_owner_chunk_is_paired_with_the_first_follower_read_that_reaches_it() -> None:
    owner = [(3, 1_000_000), (6, 2_000_000), (9, 3_000_000)]
    follower = [(6, 4_000_000), (9, 5_000_000)]  # the first two words in one chunk
    assert _followed(owner, follower) == [3.0, 2.0, 2.0]
    assert _followed(owner, follower[:1]) == [3.0, 2.0]  # the last never read: not paired
