"""``python -m threadline``: ``serve`` runs the sidecar; the rest is the ``threadline`` command.

The sidecar does not import the commands built on top of it (the client, the terminal
chat): it runs whatever the installation declares as the ``threadline`` script, so
``python -m threadline ask ...`` is ``threadline ask ...`` with this interpreter.
"""

import sys

if sys.argv[1:] == ["serve"]:
    from .rpc.boot import serve

    raise SystemExit(serve())

from importlib.metadata import entry_points

_scripts = entry_points(group="console_scripts", name="threadline")
if not _scripts:
    sys.exit("threadline: only `serve` runs without the installed `threadline` command")
raise SystemExit(next(iter(_scripts)).load()())
