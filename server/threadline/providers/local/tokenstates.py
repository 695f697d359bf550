"""Evaluated model states kept under the tokens they hold, bounded by their bytes.

Both prompt caches keep llama.cpp states this way: the embedded model's
(`prefixcache.PrefixCache`, a sequence's KV state copied out before another session's
prompt overwrites it) and the shared ``llama_cpp.server``'s
(`modelserver.keptstates.KeptStates`, the state llama-cpp-python saves after each
completion). What differs is what a state is and when a new one makes an old one
useless; the bound, the order of dropping and the longest-prefix lookup are these.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from typing import Generic, TypeVar

V = TypeVar("V")

Tokens = tuple[int, ...]


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class KeptByTokens(Generic[V]):
    """At most ``capacity`` bytes of states, least recently kept (or `touch`ed) dropped
    first; a state larger than the whole bound is not kept."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._kept: OrderedDict[Tokens, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self.dropped = 0
        """States dropped to stay within the bound (not those a newer one superseded)."""

    @property
    def size(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._kept)

    def __contains__(self, tokens: object) -> bool:
        return tokens in self._kept

    def __iter__(self) -> Iterator[Tokens]:
        return iter(self._kept)

    def __getitem__(self, tokens: Tokens) -> V:
        return self._kept[tokens][0]

    def longest(self, prompt: Sequence[int]) -> tuple[Tokens, int] | None:
        """The kept tokens sharing the longest prefix with ``prompt`` (at least one
        token), and how many they share."""
        best: tuple[Tokens, int] | None = None
        for tokens in self._kept:
            n = common_prefix(tokens, prompt)
            if n > (best[1] if best else 0):
                best = (tokens, n)
        return best

    def touch(self, tokens: Tokens) -> None:
        """Used just now: dropped last (a state dropped meanwhile stays dropped)."""
        if tokens in self._kept:
            self._kept.move_to_end(tokens)

    def keep(
        self, tokens: Tokens, value: V, nbytes: int, superseded: Callable[[Tokens], bool]
    ) -> None:
        """Keep ``value`` for ``tokens`` after dropping every state ``superseded`` says
        the new one makes useless; then the oldest beyond the bound."""
        for old in [k for k in self._kept if superseded(k)]:
            self._drop(old)
        if nbytes <= self.capacity:
            self._kept[tokens] = (value, nbytes)
            self._bytes += nbytes
        while self._bytes > self.capacity and self._kept:
            self._drop(next(iter(self._kept)))
            self.dropped += 1

    def _drop(self, tokens: Tokens) -> None:
        self._bytes -= self._kept.pop(tokens)[1]
