"""The policy knobs of one provider entry, validated from the user's config."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True, slots=True)
class PolicySettings:
    """Per provider (or per model) policy knobs; ``[providers.X.policies]`` in the config."""

    retries: int = 3
    """Retries after the first attempt (0 disables retrying)."""
    retry_base: float = 1.0
    """First backoff delay in seconds; doubles on each retry."""
    retry_max: float = 30.0
    """Cap on one backoff delay."""
    jitter: float = 0.5
    """Fraction of each backoff delay that is randomized (0 = none, 1 = full jitter)."""
    max_retry_after: float = 120.0
    """A server asking to wait longer than this fails the call instead."""
    requests_per_period: int | None = None
    tokens_per_period: int | None = None
    period: float = 60.0
    """Length of the rate-limit window in seconds."""
    idle_timeout: float | None = 120.0
    """Longest silence between two stream events (the first one included)."""
    total_timeout: float | None = 900.0
    """Longest whole call, retries and waits included."""

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> PolicySettings:
        """Validated settings from a config table; unknown keys are an error."""
        known = {f.name: f for f in fields(cls)}
        unknown = set(data) - set(known)
        if unknown:
            raise ValueError(
                f"unknown policy keys: {', '.join(sorted(unknown))} "
                f"(known: {', '.join(sorted(known))})"
            )
        values: dict[str, Any] = {}
        for key, value in data.items():
            if key.endswith("_timeout") and (value is False or value == 0):
                values[key] = None  # 0 or false turns a timeout off
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"policy {key} must be a number")
            if value < 0:
                raise ValueError(f"policy {key} must not be negative")
            integral = key == "retries" or key.endswith("_per_period")
            values[key] = (
                (int(value) or None)
                if key.endswith("_per_period")
                else (int(value) if integral else float(value))
            )
        settings = cls(**values)
        if settings.period <= 0:
            raise ValueError("policy period must be positive")
        return settings
