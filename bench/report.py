"""The results table: one row per measured case, rendered as Markdown."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(slots=True)
class Row:
    """One line of the table. ``verdict`` is ``met``, ``MISSED``, ``n/a``, ``error`` or
    empty for a row that only gives context (a peer's figure, a detail)."""

    figure: str
    case: str
    result: str
    spread: str = ""
    compare: str = ""
    target: str = ""
    verdict: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def verdict(ok: bool | None) -> str:
    if ok is None:
        return "n/a"
    return "met" if ok else "MISSED"


HEADERS = ("figure", "case", "result (median)", "spread", "same-run comparison", "target", "")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(rows: list[Row]) -> str:
    lines = [
        "| " + " | ".join(HEADERS) + " |",
        "|" + "---|" * len(HEADERS),
    ]
    for r in rows:
        cells = (r.figure, r.case, r.result, r.spread, r.compare, r.target, r.verdict)
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines)
