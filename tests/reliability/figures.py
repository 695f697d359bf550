"""Figures the reliability suites measure (cases run, kill points, RSS, timings).

Each suite calls :func:`record`; the line is printed (visible with ``pytest -s`` or in
the captured output of a failure) and, when ``THREADLINE_FIGURES`` names a file,
appended to it as JSON so ``docs/reliability.md`` can be refreshed from a run.
"""

from __future__ import annotations

import json
import os
import platform
import time
from typing import Any


def record(suite: str, **values: Any) -> None:
    line = {"suite": suite, "at": time.strftime("%Y-%m-%d %H:%M:%S"), **values}
    print(f"FIGURES {json.dumps(line, sort_keys=True)}")
    path = os.environ.get("THREADLINE_FIGURES")
    if path:
        line["machine"] = f"{platform.machine()} {os.cpu_count()} cpu {platform.platform()}"
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(line, sort_keys=True) + "\n")
