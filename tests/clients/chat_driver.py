"""Runs ``chat()`` with options the command line does not have, for the pty tests.

``python chat_driver.py CONFIG_JSON`` where the config may hold ``model``,
``session_options`` and ``marker``: a file path that the ``deploy`` tool (which needs
the user's permission) writes its arguments to when it really runs.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from threadline_client.chat import ChatTool, chat


def main() -> int:
    config: dict[str, Any] = json.loads(sys.argv[1])
    tools: list[ChatTool] = []
    marker = config.get("marker")
    if marker:

        async def deploy(arguments: dict[str, Any]) -> dict[str, Any]:
            await asyncio.to_thread(Path(marker).write_text, json.dumps(arguments))
            return {"content": [{"type": "text", "text": f"deployed to {arguments.get('to')}"}]}

        tools.append(
            ChatTool(
                name="deploy",
                description="Deploy the app",
                handler=deploy,
                input_schema={"type": "object", "properties": {"to": {"type": "string"}}},
                needs_approval=True,
            )
        )
    return asyncio.run(
        chat(
            model=config.get("model"),
            session_options=config.get("session_options") or {},
            tools=tools,
        )
    )


if __name__ == "__main__":
    raise SystemExit(main())
