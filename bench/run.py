"""``python -m bench``: run every figure, then print the machine and the results table.

Each figure runs in turn (never two at once: the machine has two cores); one that
breaks prints an ``error`` row and the rest still run. The exit status is 0 whatever
the figures say: benchmarks report, they do not pass or fail.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from . import machine
from .context import Context
from .figures import (
    backpressure,
    checkpoints,
    coldstart,
    concurrency,
    delegate,
    editfile,
    forkload,
    interrupt,
    latency,
    live,
    localmodel,
    memory,
    modelserver,
    promptcache,
    restart,
    scale,
    search,
    sessionlist,
    sharing,
    stores,
    throughput,
    toolchoice,
)
from .report import Row, render
from .servers import Scratch

FIGURES: dict[str, Callable[[Context], list[Row]]] = {
    "coldstart": coldstart.run,
    "throughput": throughput.run,
    "latency": latency.run,
    "interrupt": interrupt.run,
    "forkload": forkload.run,
    "sessionlist": sessionlist.run,
    "concurrency": concurrency.run,
    "localmodel": localmodel.run,
    "modelserver": modelserver.run,
    "memory": memory.run,
    "backpressure": backpressure.run,
    "sharing": sharing.run,
    "toolchoice": toolchoice.run,
    "stores": stores.run,
    "search": search.run,
    "live": live.run,
    "checkpoints": checkpoints.run,
    "restart": restart.run,
    "promptcache": promptcache.run,
    "scale": scale.run,
    "delegate": delegate.run,
    "editfile": editfile.run,
}
OPT_IN = {"scale"}
"""Figures run only when named with ``--only`` (51 processes at full size)."""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    p.add_argument("--quick", action="store_true", help="small counts: a smoke run for CI")
    p.add_argument(
        "--only",
        metavar="NAMES",
        help="comma-separated subset of: " + ", ".join(FIGURES),
    )
    p.add_argument("--json", metavar="PATH", type=Path, help="also write the rows as JSON")
    p.add_argument("--keep", action="store_true", help="keep the scratch folder (logs, stores)")
    p.add_argument(
        "--scale",
        metavar="SxN",
        help="the scale figure's size: S sidecars x N sessions each (default 50x20)",
    )
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    names = [n for n in FIGURES if n not in OPT_IN]
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in names if n not in FIGURES]
        if unknown:
            print(f"unknown figure(s): {', '.join(unknown)}", file=sys.stderr)
            return 2
    described = machine.describe()
    scratch = Scratch(keep=args.keep)
    ctx = Context(quick=args.quick, scratch=scratch)
    if args.scale:
        sidecars, _, per = args.scale.lower().partition("x")
        ctx.scale = (int(sidecars), int(per))
    rows: list[Row] = []
    timings: list[tuple[str, float]] = []
    try:
        for name in names:
            ctx.log(f"{name}: starting")
            t0 = time.monotonic()
            try:
                rows += FIGURES[name](ctx)
            except Exception as exc:
                traceback.print_exc(file=sys.stderr)
                rows.append(
                    Row(
                        name,
                        "the benchmark itself failed",
                        f"{type(exc).__name__}: {exc}",
                        verdict="error",
                    )
                )
            timings.append((name, time.monotonic() - t0))
    finally:
        if args.keep:
            ctx.log(f"scratch kept in {scratch.root}")
        scratch.cleanup()
    described.append(("load average (1/5/15 min) at end", machine.load_average()))
    described.append(("mode", "quick (smoke run; small counts)" if args.quick else "full"))
    described.append(
        (
            "wall time",
            ", ".join(f"{n} {s:.0f} s" for n, s in timings)
            + f"; total {sum(s for _, s in timings):.0f} s",
        )
    )
    print("## Machine\n")
    print(machine.render(described))
    print("\n## Results\n")
    print(render(rows))
    if args.json:
        args.json.write_text(
            json.dumps({"machine": dict(described), "rows": [r.as_dict() for r in rows]}, indent=2)
        )
    return 0
