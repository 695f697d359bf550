"""The blob table under two connections at once (two sidecars on one store): a blob
some session references is never freed, whatever the interleaving, and the last
deletion frees it. Both stores (the ``backend`` parameter)."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from pathlib import Path

from tests.imagefiles import b64, png
from tests.unit.conftest import Opener
from threadline.store.base import Blob, NewEvent
from threadline.store.sqlite import SCHEMA_VERSION, EventStore

DATA = png(64, 32)
HASH = hashlib.sha256(DATA).hexdigest()
BLOB = Blob(HASH, "image/png", DATA, 64, 32)
ROUNDS = 60


def image_event(mid: str) -> NewEvent:
    block = {"type": "image", "mimeType": "image/png", "data": "", "uri": f"threadline-blob:{HASH}"}
    message = {"messageId": mid, "turnId": "u1", "role": "user", "content": [block]}
    return NewEvent("user_message", {"message": message}, (mid,), (BLOB,))


def test_adding_and_freeing_at_once_never_frees_a_referenced_blob(open_store: Opener) -> None:
    """One connection stores sessions that reference the same image while another
    deletes each as soon as it appears, so the blob is freed and added again and
    again, the two racing. After each append: if the session is still there (checked
    after reading the blob; deletion is for ever), its blob must have been there."""
    writer, deleter = open_store(), open_store()
    created: list[str] = []
    lost: list[str] = []
    done = threading.Event()

    def write() -> None:
        try:
            for i in range(ROUNDS):
                sid = f"s{i}"
                writer.create_session(sid, "/tmp", {}, "t0")
                created.append(sid)
                try:
                    writer.append(sid, [image_event(f"m{i}")], "t1")
                except KeyError:  # deleted before its first event: the other side won
                    continue
                there = writer.get_blob(HASH) is not None
                if not there and writer.get_session(sid) is not None:
                    lost.append(sid)
        finally:
            done.set()

    def delete() -> None:
        gone: set[str] = set()
        while True:
            finished = done.is_set()
            for sid in [s for s in list(created) if s not in gone]:
                deleter.delete_session(sid)
                gone.add(sid)
            if finished:
                return

    threads = [threading.Thread(target=write), threading.Thread(target=delete)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert len(created) == ROUNDS, "the writer stopped early"
    assert not lost, f"the blob was freed while {lost} referenced it"
    assert deleter.get_blob(HASH) is None, "the last deletion frees the blob"
    writer.create_session("kept", "/tmp", {}, "t2")
    writer.append("kept", [image_event("m-kept")], "t3")
    got = deleter.get_blob(HASH)
    assert got is not None and got[1] == DATA


def test_a_store_of_schema_5_gets_the_blob_tables_and_keeps_its_inline_images(
    tmp_path: Path,
) -> None:
    """A data folder written before blobs: opened, it gets the tables; an image its
    events hold inline stays as it was, and new images are stored as blobs."""
    path = tmp_path / "db.sqlite"
    store = EventStore(path)
    old = {"type": "image", "mimeType": "image/png", "data": b64(DATA)}
    message = {"messageId": "m0", "turnId": "u1", "role": "user", "content": [old]}
    store.create_session("s", "/tmp", {}, "t0")
    store.append("s", [NewEvent("user_message", {"message": message}, ("m0",))], "t1")
    store.close()
    db = sqlite3.connect(path)
    db.execute("DROP TABLE blob_refs")
    db.execute("DROP TABLE blobs")
    db.execute("UPDATE meta SET value='5' WHERE key='schema_version'")
    db.commit()
    db.close()
    store = EventStore(path)
    try:
        assert store.load_events("s")[0].payload["message"]["content"] == [old]
        store.append("s", [image_event("m1")], "t2")
        got = store.get_blob(HASH)
        assert got is not None and got[1] == DATA
    finally:
        store.close()
    db = sqlite3.connect(path)
    assert db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (
        str(SCHEMA_VERSION),
    )
    db.close()
