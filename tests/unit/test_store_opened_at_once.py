"""Editor windows started at once on a fresh home: every sidecar opens the store. On a
new file the switch to write-ahead logging takes an exclusive lock that SQLite does not
wait for, and the second window's sidecar used to exit with "database is locked"."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

OPEN_AT_THE_SIGNAL = """
import sys, time
from pathlib import Path
from threadline.store.sqlite import EventStore
folder = Path(sys.argv[1])
(folder / f"ready-{sys.argv[2]}").touch()
while not (folder / "go").exists():
    time.sleep(0.001)
EventStore(folder / "threadline.db").close()
"""


def test_sidecars_started_at_once_on_a_fresh_home_all_open_the_store(tmp_path: Path) -> None:
    openers = 3
    for trial in range(15):
        folder = tmp_path / str(trial)
        folder.mkdir()
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", OPEN_AT_THE_SIGNAL, str(folder), str(i)],
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(openers)
        ]
        deadline = time.monotonic() + 60
        while len(list(folder.glob("ready-*"))) < openers and time.monotonic() < deadline:
            time.sleep(0.005)
        (folder / "go").touch()
        for p in procs:
            _, err = p.communicate(timeout=60)
            assert p.returncode == 0, f"trial {trial}: {err[-600:]}"
