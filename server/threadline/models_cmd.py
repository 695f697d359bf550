"""``threadline models``: the configured models, and whether each is reachable now.

Each check is a cheap request that spends no tokens (``GET /models`` for HTTP
providers, the model file for the local model), all run concurrently under one
timeout. What an OpenAI-compatible server was found to do (tool calls not streamed,
tool results sent as user messages; see :mod:`.providers.traits`) is shown beside it.
Keys are never printed: only where a key comes from (``$OPENAI_API_KEY``).

Below the models, each shared local model server of this ``THREADLINE_HOME`` (see
:mod:`threadline.providers.modelserver`): state, pid, slots in use, restarts. Reading
them starts nothing. Last, whether checkpoints of files are on (off without a ``git``
binary: said here once, not as an error of each call).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, TextIO

import anyio

from .checkpoints import unavailable
from .providers.registry import DEFAULT_MODEL, ProviderRegistry, Reachability
from .redact import redact_urls
from .settings import Settings, data_dir
from .userconfig import ConfigError, UserConfig, load

if TYPE_CHECKING:
    from .providers.modelserver.status import ServerStatus


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument(
        "--timeout", type=float, default=5.0, help="seconds to wait for each server"
    )
    parser.add_argument(
        "--no-check", action="store_true", help="list only; do not contact any server"
    )


def main(args: argparse.Namespace, out: TextIO | None = None) -> int:
    stream: TextIO = out or sys.stdout
    try:
        config = load()
    except ConfigError as exc:
        print(f"threadline: {exc}", file=sys.stderr)
        return 2
    rows = anyio.run(_rows, config, args.timeout, not args.no_check)
    servers = local_servers()
    off = unavailable()
    if args.json:
        json.dump(
            {
                "config": str(config.path) if config.path else None,
                "models": rows,
                "servers": [asdict(s) for s in servers],
                "checkpoints": {"on": off is None, "reason": off},
            },
            stream,
        )
        stream.write("\n")
    else:
        stream.write(render(rows, config))
        stream.write(render_servers(servers))
        stream.write(f"\ncheckpoints of files: {'on' if off is None else 'off (' + off + ')'}\n")
    return 0


def local_servers() -> list[ServerStatus]:
    from .providers.modelserver.status import servers

    return servers(data_dir())


def render_servers(servers: list[ServerStatus]) -> str:
    if not servers:
        return ""
    header = ["LOCAL SERVER", "KIND", "STATE", "PID", "SLOTS IN USE", "RESTARTS", "RSS"]
    table = [header]
    for s in servers:
        table.append(
            [
                s.model,
                s.kind,
                s.state,
                str(s.pid or "-"),
                f"{s.slots_busy}/{s.slots}",
                str(s.restarts),
                f"{s.rss_kb / 1024:.0f} MB" if s.rss_kb else "-",
            ]
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in table]
    lines += [f"  {s.model}: {s.detail}" for s in servers if s.detail]
    return "\n" + "\n".join(line.rstrip() for line in lines) + "\n"


async def _rows(config: UserConfig, timeout: float, check: bool) -> list[dict[str, Any]]:
    # The default the sidecar uses: $THREADLINE_MODEL, else the config's, else embedded.
    registry = ProviderRegistry(Settings.from_env().default_model, config=config)
    models = [m["modelId"] for m in registry.available()]
    results: dict[str, Reachability] = {}

    async def probe(model: str) -> None:
        with anyio.move_on_after(timeout + 1):
            results[model] = await registry.reachable(model, timeout)
        results.setdefault(model, Reachability(False, f"no answer within {timeout:g} s"))

    if check:
        async with anyio.create_task_group() as tg:
            for model in models:
                tg.start_soon(probe, model)
    rows: list[dict[str, Any]] = []
    for model in models:
        row: dict[str, Any] = {"model": model, "default": model == registry.default_model}
        entry = config.resolve(model) if model != DEFAULT_MODEL else None
        if entry is None:
            row.update(provider="local", endpoint="embedded llama.cpp", key="-")
        else:
            p = entry.provider
            row.update(
                provider=f"{p.name} ({p.kind})",
                model_name=entry.model,
                endpoint=redact_urls(p.base_url) if p.base_url else "(default)",
                key=p.key_source,
            )
            if entry.server is not None:
                row.update(provider="local server", endpoint=entry.server.kind, key="-")
        if check:
            r = results[model]
            row.update(reachable=r.ok, detail=redact_urls(r.detail))
        row["learned"] = registry.learned(model)
        rows.append(row)
    return rows


def render(rows: list[dict[str, Any]], config: UserConfig) -> str:
    header = ["MODEL", "PROVIDER", "ENDPOINT", "KEY", "STATUS"]
    table = [header]
    for r in rows:
        name = r["model"] + (" *" if r["default"] else "")
        if "reachable" in r:
            status = ("reachable" if r["reachable"] else "unreachable") + f": {r['detail']}"
        else:
            status = "not checked"
        if r.get("learned"):
            status += f" ({r['learned']})"
        table.append([name, r["provider"], r["endpoint"], r["key"], status])
    widths = [max(len(row[i]) for row in table) for i in range(len(header) - 1)]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=True)) + "  " + row[-1]
        for row in table
    ]
    source = f"config: {config.path}" if config.path else "config: none (built-in providers only)"
    return "\n".join([*lines, "", "* default model; " + source]) + "\n"
