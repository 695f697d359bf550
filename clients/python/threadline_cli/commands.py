"""The ``threadline`` commands for people, and ``serve`` when it comes with options."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from threadline import __version__, models_cmd, store_cmd
from threadline_client import RpcError, ask, desktop
from threadline_client import chat as chat_cli

DESCRIPTION = """\
Threadline keeps LLM agent sessions for editors. `threadline serve` is what an editor
starts; `ask`, `chat`, `sessions`, `search`, `history`, `export`, `import` and `models`
are for people."""


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="threadline",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    top.add_argument("--version", action="version", version=f"threadline {__version__}")
    sub = top.add_subparsers(dest="command", required=True)
    sub.add_parser("serve", help="run the sidecar on stdio (what editors start)")
    p_ask = sub.add_parser("ask", help="ask one question and stream the answer")
    p_ask.add_argument("prompt", nargs="+")
    p_ask.add_argument("--model", help="model id, e.g. local:smollm2-135m")
    p_ask.add_argument("--session", help="continue this session instead of starting one")
    p_ask.add_argument("--tools", action="store_true", help="let the model use the workspace tools")
    chat_cli.add_arguments(sub.add_parser("chat", help="interactive terminal chat"))
    desktop.add_arguments(
        sub.add_parser("desktop", help="the chat as a local web app (fork tree, side by side)")
    )
    sub.add_parser("sessions", help="list stored sessions")
    models_cmd.add_arguments(
        sub.add_parser("models", help="list configured models and whether each is reachable")
    )
    store_cmd.add_arguments(sub.add_parser("store", help="manage where sessions are stored"))
    p_hist = sub.add_parser("history", help="print a session's transcript")
    p_hist.add_argument("session")
    p_exp = sub.add_parser(
        "export", help="print a session as Markdown, or as its event log (jsonl) to import"
    )
    p_exp.add_argument("session")
    p_exp.add_argument("--format", choices=("markdown", "jsonl"), default="markdown")
    p_imp = sub.add_parser("import", help="a new session from a `threadline export --format jsonl`")
    p_imp.add_argument("file")
    p_find = sub.add_parser("search", help="search every session's titles and messages")
    p_find.add_argument("query", nargs="+")
    return top


def run(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    if args.command == "serve":
        from threadline.rpc.boot import serve

        return serve()
    if args.command == "models":
        return models_cmd.main(args)
    if args.command == "store":
        return store_cmd.main(args)
    if args.command == "chat":
        return chat_cli.run(args)
    if args.command == "desktop":
        return desktop.run(args)
    try:
        if args.command == "ask":
            return asyncio.run(
                ask.ask(
                    " ".join(args.prompt),
                    model=args.model,
                    session_id=args.session,
                    tools=args.tools,
                )
            )
        if args.command == "sessions":
            return asyncio.run(ask.sessions())
        if args.command == "export":
            return asyncio.run(ask.export(args.session, args.format))
        if args.command == "import":
            return asyncio.run(ask.import_log(Path(args.file).read_text(encoding="utf-8")))
        if args.command == "search":
            return asyncio.run(ask.search(" ".join(args.query)))
        return asyncio.run(ask.history(args.session))
    except KeyboardInterrupt:
        return 130
    except RpcError as exc:
        print(f"threadline: {exc.message}", file=sys.stderr)  # in words; the code is logged
        return 1
    except OSError as exc:  # the sidecar could not be reached, or a file read
        print(f"threadline: {exc}", file=sys.stderr)
        return 1
