"""Summaries of repeated measurements, and the formatting the table uses."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Summary:
    n: int
    p50: float
    p90: float
    p99: float
    min: float
    max: float

    def ratio(self, other: Summary) -> float:
        """This median over the other's; ``nan`` when the other is zero."""
        return self.p50 / other.p50 if other.p50 else math.nan


def percentile(ordered: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (``q`` in 0..100) of sorted data."""
    if not ordered:
        return math.nan
    k = (len(ordered) - 1) * q / 100
    lo, hi = math.floor(k), math.ceil(k)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def summarize(values: Iterable[float]) -> Summary:
    v = sorted(values)
    if not v:
        return Summary(0, math.nan, math.nan, math.nan, math.nan, math.nan)
    return Summary(len(v), percentile(v, 50), percentile(v, 90), percentile(v, 99), v[0], v[-1])


def ms(value: float) -> str:
    """A duration given in milliseconds, with sensible precision."""
    if math.isnan(value):
        return "n/a"
    if value >= 10_000:
        return f"{value / 1000:.1f} s"
    if value >= 1000:
        return f"{value / 1000:.2f} s"
    if value >= 100:
        return f"{value:.0f} ms"
    if value >= 10:
        return f"{value:.1f} ms"
    return f"{value:.2f} ms"


def rate(per_second: float, unit: str = "/s") -> str:
    if math.isnan(per_second):
        return "n/a"
    if per_second >= 1e6:
        return f"{per_second / 1e6:.2f} M{unit}"
    if per_second >= 1e3:
        return f"{per_second / 1e3:.1f} k{unit}"
    return f"{per_second:.1f}{unit}"


def kib(value_kb: float) -> str:
    if math.isnan(value_kb):
        return "n/a"
    if abs(value_kb) >= 10 * 1024:
        return f"{value_kb / 1024:.1f} MB"
    return f"{value_kb:.1f} KB"


def ratio(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.2f}×"


def ms_spread(s: Summary) -> str:
    """``p90 · min–max`` for a summary of milliseconds."""
    return f"p90 {ms(s.p90)} · {ms(s.min)}–{ms(s.max)} (n={s.n})"


def rate_spread(s: Summary, unit: str = "/s") -> str:
    return f"{rate(s.min, unit)}–{rate(s.max, unit)} (n={s.n})"
