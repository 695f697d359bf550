"""``python -m llama_cpp.server`` with a prompt cache whose bound holds.

``python -m threadline.providers.modelserver.warmserver --prompt_cache_mb N <args>``
takes every argument of ``llama_cpp.server`` (its own parser, built from its settings
models), builds its app (``create_app``), gives the loaded model a
:class:`~.keptstates.KeptStates` of N MiB (``Llama.set_cache``), and serves it with
uvicorn as ``llama_cpp.server`` does; after each chat answer it evaluates the next turn's
opening ahead (:mod:`.ahead`). The keeper runs it for a ``llama_cpp.server``
entry whose ``prompt_cache_mb`` is above 0; with 0 it runs ``llama_cpp.server``
itself. Only llama-cpp-python's public API is used: the model is taken from the
app's own dependency (``get_llama_proxy``), as its routes take it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from .ahead import Ahead
from .keptstates import KeptStates

if TYPE_CHECKING:
    from llama_cpp import Llama

MIB = 1 << 20


async def _model() -> Llama:
    from llama_cpp.server.app import get_llama_proxy

    async with contextlib.asynccontextmanager(get_llama_proxy)() as proxy:
        assert proxy is not None
        return proxy()  # the default (only) model, loaded by create_app


def main(argv: Sequence[str] | None = None) -> None:
    import uvicorn
    from llama_cpp.server.app import create_app
    from llama_cpp.server.cli import add_args_from_model, parse_model_from_args
    from llama_cpp.server.settings import ModelSettings, ServerSettings, Settings

    parser = argparse.ArgumentParser(prog="threadline-warmserver", description=__doc__)
    add_args_from_model(parser, Settings)
    parser.add_argument(
        "--prompt_cache_mb",
        type=float,
        required=True,
        help="MiB of evaluated prompts kept (every byte counted); 0: none",
    )
    args = parser.parse_args(argv)
    # (typed as returning the class; it returns an instance)
    server = cast(ServerSettings, parse_model_from_args(ServerSettings, args))
    model = cast(ModelSettings, parse_model_from_args(ModelSettings, args))
    app = create_app(server_settings=server, model_settings=[model])
    capacity = int(args.prompt_cache_mb * MIB)
    if capacity > 0:
        llm = asyncio.run(_model())
        cache = KeptStates(capacity, keep_logits=model.logits_all)
        cache.after = Ahead(llm, cache).after
        llm.set_cache(cache)
    uvicorn.run(
        app,
        host=server.host,
        port=server.port,
        ssl_keyfile=server.ssl_keyfile,
        ssl_certfile=server.ssl_certfile,
    )


if __name__ == "__main__":
    main()
