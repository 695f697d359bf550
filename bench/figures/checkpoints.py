"""Checkpoints of a workspace (``threadline.checkpoints``): a snapshot of a 10,000-file,
200 MB workspace with 3 files changed, and a restore of 3 files, each beside the plain
git commands it is built on, in the same run and on the same folder.

The peer of a checkpoint is ``git add -A && git write-tree`` with the same shadow
repository, index and environment (what a checkpoint adds: the file-count and size
checks, the excludes, the lock). The peer of a restore is ``git checkout-index -f`` of
the same 3 files from a tree read into a scratch index (what the restore adds: the
comparison of each named file with the tree, the journal, the atomic writes with
fsync, and the tree it leaves, recorded without a walk).
Both start from a warm shadow index (the first checkpoint of a workspace reads every
file once; that one is shown apart).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from threadline.checkpoints import ShadowRepo
from threadline.checkpoints.restore import restore

from ..context import Context
from ..report import Row, verdict
from ..stats import ms, ms_spread, ratio, summarize

FIGURE = "checkpoints"
TARGET_MS = 150.0


def _workspace(root: Path, files: int, total_bytes: int) -> list[Path]:
    size = total_bytes // files
    paths: list[Path] = []
    for i in range(files):
        folder = root / f"pkg{i // 100:03}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"mod{i % 100:02}.txt"
        line = f"module {i} " + "x" * 60 + "\n"
        path.write_text(line * max(1, size // len(line)))
        paths.append(path)
    return paths


def run(ctx: Context) -> list[Row]:
    files = ctx.n(10_000, 500)
    total = ctx.n(200 << 20, 10 << 20)
    rounds = ctx.n(15, 3)
    base = ctx.scratch.home("checkpoints")
    root = base / "ws"
    ctx.log(f"{FIGURE}: writing {files} files, {total >> 20} MB")
    paths = _workspace(root, files, total)
    repo = ShadowRepo.for_root(base / "data", str(root))
    t0 = time.perf_counter()
    first = repo.snapshot().tree
    cold = (time.perf_counter() - t0) * 1000
    git = repo.git
    snaps: list[float] = []
    plain: list[float] = []
    restores: list[float] = []
    peers: list[float] = []
    for r in range(rounds):
        changed = paths[r * 3 : r * 3 + 3]
        for p in changed:
            p.write_text(p.read_text() + f"change {r}\n")
        t0 = time.perf_counter()
        after = repo.snapshot().tree
        snaps.append((time.perf_counter() - t0) * 1000)
        for p in changed:
            p.write_text(p.read_text() + f"again {r}\n")
        t0 = time.perf_counter()
        git.run(["add", "-A"])
        git.run(["write-tree"])
        plain.append((time.perf_counter() - t0) * 1000)
        # restore the 3 files to the checkpoint `after` (a rewind names the files the
        # session changed, as here), then the same with plain git
        rel = [os.path.relpath(p, root) for p in changed]
        t0 = time.perf_counter()
        done = restore(repo, after, rel)
        restores.append((time.perf_counter() - t0) * 1000)
        assert len(done.written) == 3, done
        for p in changed:
            p.write_text(p.read_text() + f"third {r}\n")
        index = base / "peer.index"
        env = git.env(index=index)
        t0 = time.perf_counter()
        git.run(["read-tree", after], env=env)
        git.run(["checkout-index", "-f", "--", *rel], env=env)
        peers.append((time.perf_counter() - t0) * 1000)
        index.unlink(missing_ok=True)
    del first
    s_snap, s_plain = summarize(snaps), summarize(plain)
    s_rest, s_peer = summarize(restores), summarize(peers)
    case = f"{files} files, {total >> 20} MB, 3 changed"
    return [
        Row(
            FIGURE,
            f"checkpoint: {case}",
            ms(s_snap.p50),
            ms_spread(s_snap),
            f"git add -A && write-tree {ms(s_plain.p50)} ({ratio(s_snap.ratio(s_plain))})",
            f"< {ms(TARGET_MS)}",
            verdict(s_snap.p50 < TARGET_MS),
        ),
        Row(
            FIGURE,
            f"restore 3 files: {case}",
            ms(s_rest.p50),
            ms_spread(s_rest),
            f"read-tree + checkout-index {ms(s_peer.p50)} ({ratio(s_rest.ratio(s_peer))})",
            f"< {ms(TARGET_MS)}",
            verdict(s_rest.p50 < TARGET_MS),
        ),
        Row(FIGURE, f"first checkpoint (every file read): {case}", ms(cold)),
    ]
