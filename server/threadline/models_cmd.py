"""``threadline models``: the configured models, and whether each is reachable now.

Each check is a cheap request that spends no tokens (``GET /models`` for HTTP
providers, the model file for the local model), all run concurrently under one
timeout. Keys are never printed: only where a key comes from (``$OPENAI_API_KEY``).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

import anyio

from .providers.registry import DEFAULT_MODEL, ProviderRegistry, Reachability
from .redact import redact_urls
from .userconfig import ConfigError, UserConfig, load


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
    if args.json:
        json.dump({"config": str(config.path) if config.path else None, "models": rows}, stream)
        stream.write("\n")
    else:
        stream.write(render(rows, config))
    return 0


async def _rows(config: UserConfig, timeout: float, check: bool) -> list[dict[str, Any]]:
    registry = ProviderRegistry(config=config)
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
        if check:
            r = results[model]
            row.update(reachable=r.ok, detail=redact_urls(r.detail))
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
        table.append([name, r["provider"], r["endpoint"], r["key"], status])
    widths = [max(len(row[i]) for row in table) for i in range(len(header) - 1)]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=True)) + "  " + row[-1]
        for row in table
    ]
    source = f"config: {config.path}" if config.path else "config: none (built-in providers only)"
    return "\n".join([*lines, "", "* default model; " + source]) + "\n"


if __name__ == "__main__":
    _parser = argparse.ArgumentParser(prog="threadline models", description=__doc__)
    add_arguments(_parser)
    raise SystemExit(main(_parser.parse_args()))
