"""A description of the machine and software a run measured, printed above the table.

Figures from a shared 2-core VM swing with whatever else runs, so the load average
at the start and end of the run is part of the description.
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path

PACKAGES = ("pygls", "lsprotocol", "pydantic", "agent-client-protocol", "llama_cpp_python")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def ram_gib() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024 / 1024
    except OSError:
        pass
    return float("nan")


def load_average() -> str:
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "n/a"
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f}"


def commit() -> str:
    root = Path(__file__).resolve().parent.parent
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.stdout.strip() or "unknown"


def versions() -> str:
    parts = []
    for name in PACKAGES:
        try:
            parts.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            parts.append(f"{name} (not installed)")
    return ", ".join(parts)


def describe() -> list[tuple[str, str]]:
    cores = os.cpu_count() or 0
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores
    return [
        ("date", datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")),
        ("cpu", f"{cpu_model()}, {cores} cores ({usable} usable)"),
        ("ram", f"{ram_gib():.1f} GiB"),
        ("os", f"{platform.system()} {platform.release()} ({platform.machine()})"),
        ("python", f"{platform.python_implementation()} {sys.version.split()[0]}"),
        ("packages", versions()),
        ("threadline commit", commit()),
        ("load average (1/5/15 min) at start", load_average()),
    ]


def render(items: list[tuple[str, str]]) -> str:
    return "\n".join(f"- {k}: {v}" for k, v in items)
