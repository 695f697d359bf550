from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from tests.pgserver import PASSWORD, PgServer
from tests.unit.conftest import Opener
from threadline.engine.ownership import LeaseKeeper
from threadline.store.base import NewEvent, Owner, SessionStore, StoreConflict, StoreError
from threadline.store.leases import STALE_OWNER_SECONDS
from threadline.store.owners import current_owner, hostname, lease_ttl
from threadline.store.postgres import SCHEMA_VERSION as PG_SCHEMA_VERSION
from threadline.store.sqlite import SCHEMA_VERSION, EventStore


def msg_event(mid: str) -> NewEvent:
    return NewEvent("user_message", {"message": {"messageId": mid}}, (mid,))


def ids(store: SessionStore, sid: str) -> list[str]:
    return [e.payload["message"]["messageId"] for e in store.load_events(sid)]


def test_append_and_load_in_order(open_store: Opener) -> None:
    store = open_store()
    row = store.create_session("s1", "/tmp", {"model": "m"}, "t0")
    assert row.message_count == 0
    store.append("s1", [msg_event("m1"), msg_event("m2")], "t1")
    store.append("s1", [msg_event("m3")], "t2")
    assert ids(store, "s1") == ["m1", "m2", "m3"]
    row2 = store.get_session("s1")
    assert row2 is not None and row2.message_count == 3 and row2.updated_at == "t2"


def test_fork_reads_the_parent_prefix_and_stays_isolated(open_store: Opener) -> None:
    store = open_store()
    parent = store.create_session("p", "/tmp", {}, "t0")
    store.append("p", [msg_event(f"m{i}") for i in range(5)], "t1")
    origin, seq, ordinal = store.locate_message("p", "m2") or ("", 0, 0)
    assert (origin, ordinal) == ("p", 3)
    child = store.fork_session("c", parent, origin, seq, ordinal, "m2", "/tmp", "t2")
    assert ids(store, "c") == ["m0", "m1", "m2"]
    assert child.message_count == 3 and child.parent_id == "p"
    store.append("c", [msg_event("c1")], "t3")
    store.append("p", [msg_event("p6")], "t3")
    assert ids(store, "c") == ["m0", "m1", "m2", "c1"]
    assert ids(store, "p")[-1] == "p6" and "c1" not in ids(store, "p")
    # the parent's later messages are not visible from the child
    assert store.locate_message("c", "m4") is None
    assert store.locate_message("c", "m1") is not None


def test_deleting_a_parent_keeps_children_readable(open_store: Opener) -> None:
    store = open_store()
    parent = store.create_session("p", "/tmp", {}, "t0")
    store.append("p", [msg_event("m0"), msg_event("m1")], "t1")
    store.fork_session("c", parent, "p", 2, 2, None, "/tmp", "t2")
    store.delete_session("p")
    assert store.get_session("p") is None
    assert store.list_session_ids() == ["c"]
    assert ids(store, "c") == ["m0", "m1"]
    store.delete_session("c")
    assert store.get_session("p", include_deleted=True) is None, "garbage collected"


def test_inflight_stream_journal(open_store: Opener) -> None:
    store = open_store()
    assert store.create_session("s", "/tmp", {}, "t0").streaming is False
    store.begin_stream("s", "a1", {"turnId": "a1"})
    store.append_chunks("s", [("text", "Hel"), ("thought", "hm"), ("text", "lo")])
    [inflight] = store.inflight_streams()
    assert (inflight.text, inflight.thought, inflight.meta) == ("Hello", "hm", {"turnId": "a1"})
    row = open_store().get_session("s")  # the row says so, read in the same statement
    assert row is not None and row.streaming is True
    assert (
        row == store.get_sessions(["s"])["s"] and store.get_sessions(["s"])["s"].streaming is None
    )
    store.append("s", [msg_event("a1")], "t1", end_stream=True)
    assert store.inflight_streams() == []
    row = store.get_session("s")
    assert row is not None and row.streaming is False


def test_corrupt_database_gives_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="THREADLINE_HOME"):
        EventStore(path)


# -- many processes on one store -------------------------------------------------------


def other_owner(pid: int, host: str = "", started: float = 0.0) -> Owner:
    return Owner(id=f"owner-{pid}", pid=pid, host=host or hostname(), started=started)


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_append_at_an_expected_sequence_refuses_a_stale_writer(open_store: Opener) -> None:
    store = open_store()
    store.create_session("s", "/tmp", {}, "t0")
    seq = store.append("s", [msg_event("m1")], "t1", expected_seq=0)
    assert seq == 1
    with pytest.raises(StoreConflict):
        store.append("s", [msg_event("m2")], "t2", expected_seq=0)
    assert ids(store, "s") == ["m1"]
    assert [e.seq for e in store.load_events("s", after_seq=0)] == [1]


def test_a_live_lease_is_refused_and_a_dead_one_taken_over(open_store: Opener) -> None:
    store = open_store()
    store.create_session("s", "/tmp", {}, "t0")
    me = current_owner()
    alive = other_owner(os.getppid())
    got = store.acquire_lease("s", alive, "turn", "a1", time.time())
    assert got.mine and got.took_over is None
    refused = store.acquire_lease("s", me, "turn", "a2", time.time())
    assert not refused.mine and refused.lease.owner.id == alive.id
    assert refused.lease.turn_id == "a1"
    store.release_lease("s", alive)
    dead = other_owner(dead_pid())
    store.acquire_lease("s", dead, "turn", "a3", time.time())
    taken = store.acquire_lease("s", me, "turn", "a4", time.time())
    assert taken.mine and taken.took_over is not None and taken.took_over.owner.id == dead.id


def test_a_lease_on_another_host_is_taken_over_only_when_its_heartbeat_is_stale(
    open_store: Opener,
) -> None:
    store = open_store()
    store.create_session("s", "/tmp", {}, "t0")
    me = current_owner()
    remote = Owner(id="remote", pid=1, host="elsewhere.example", started=0.0)
    now = time.time()
    store.acquire_lease("s", remote, "turn", None, now)
    assert not store.acquire_lease("s", me, "turn", None, now + 1).mine
    assert store.acquire_lease("s", me, "turn", None, now + lease_ttl() + 1).mine


def test_a_sender_is_gone_only_when_proven_dead(open_store: Opener) -> None:
    """What `LeaseKeeper.sender_gone` reads: a process that waits for prompts it sent
    is alive while its pid lives (same host) and its heartbeat is fresh (any host)."""
    store = open_store()
    me = current_owner()
    keeper = LeaseKeeper(store, me, lambda _: None)
    alive, dead = other_owner(os.getppid()), other_owner(dead_pid())
    remote = Owner(id="remote", pid=1, host="elsewhere.example", started=0.0)
    now = time.time()
    for owner in (alive, dead, remote):
        store.announce_owner(owner, now)
    assert keeper.sender_gone(me.id) is False
    assert keeper.sender_gone(alive.id) is False
    assert keeper.sender_gone(dead.id) is True
    assert keeper.sender_gone(remote.id) is False
    assert keeper.sender_gone("never-announced") is True
    # another host's sender: dead once its heartbeat is older than the lease lifetime,
    # alive again when it beats
    store.announce_owner(remote, now - lease_ttl() - 1)
    assert keeper.sender_gone(remote.id) is True
    store.heartbeat(remote, now, present=True)
    assert keeper.sender_gone(remote.id) is False
    store.forget_owner(remote)
    assert keeper.sender_gone(remote.id) is True
    # a row left by a process killed long ago goes when another announces itself
    store.announce_owner(remote, now - STALE_OWNER_SECONDS - 1)
    store.announce_owner(me, now)
    assert store.get_owner(remote.id) is None and store.get_owner(me.id) is not None


def test_heartbeat_carries_interrupt_requests_to_the_owner(open_store: Opener) -> None:
    store = open_store()
    store.create_session("s", "/tmp", {}, "t0")
    me = current_owner()
    store.acquire_lease("s", me, "turn", "a1", time.time())
    assert store.heartbeat(me, time.time()) == []
    lease = store.request_interrupt("s")
    assert lease is not None and lease.owner.id == me.id
    assert store.heartbeat(me, time.time()) == ["s"]
    store.release_lease("s", me)
    assert store.get_lease("s") is None
    assert store.request_interrupt("s") is None


def test_delete_is_refused_while_another_live_process_holds_the_session(open_store: Opener) -> None:
    store = open_store()
    store.create_session("s", "/tmp", {}, "t0")
    alive = other_owner(os.getppid())
    store.acquire_lease("s", alive, "turn", None, time.time())
    held = store.delete_session("s", current_owner(), time.time())
    assert held is not None and held.owner.id == alive.id
    assert store.get_session("s") is not None


def test_change_token_moves_when_another_connection_commits(open_store: Opener) -> None:
    a = open_store()
    b = open_store()
    a.create_session("s", "/tmp", {}, "t0")
    before = a.change_token()
    a.append("s", [msg_event("m1")], "t1")
    assert a.change_token() == before, "own commits are already known"
    b.append("s", [msg_event("m2")], "t2")
    assert a.change_token() != before


def test_a_kept_fold_is_read_back_never_replaced_by_an_older_one_and_goes_with_the_session(
    open_store: Opener,
) -> None:
    a, b = open_store(), open_store()
    parent = a.create_session("p", "/tmp", {}, "t0")
    a.append("p", [msg_event(f"m{i}") for i in range(4)], "t1")
    assert b.load_fold("p") is None
    a.save_fold("p", 3, b"three \x00\xff")
    assert b.load_fold("p") == (3, b"three \x00\xff")
    b.save_fold("p", 2, b"older")
    assert a.load_fold("p") == (3, b"three \x00\xff"), "an older fold never replaces a newer"
    b.save_fold("p", 3, b"three, more of it")
    assert a.load_fold("p") == (3, b"three, more of it"), "the same point, kept again"
    b.save_fold("p", 4, b"four")
    assert a.load_fold("p") == (4, b"four")
    a.save_fold("p", 9, b"past the log")
    assert a.load_fold("p") == (4, b"four"), "a fold past the session's log is not kept"
    # a fork keeps its own (at its own sequence number 0: the base's prefix folded)
    a.fork_session("c", parent, "p", 4, 4, None, "/tmp", "t2")
    a.save_fold("c", 0, b"fork")
    assert b.load_fold("c") == (0, b"fork") and b.load_fold("p") == (4, b"four")
    a.delete_session("p")
    assert b.load_fold("p") is None and b.load_fold("c") == (0, b"fork")
    a.save_fold("p", 5, b"deleted")
    assert b.load_fold("p") is None, "none is kept for a deleted session"
    a.delete_session("c")
    assert b.load_fold("c") is None


def test_a_folds_replay_is_kept_beside_it_and_read_only_for_that_fold(
    open_store: Opener,
) -> None:
    """``session/history`` reads only the messages (`load_fold`); the replay is read
    apart, and only while the fold it was kept with is still the store's."""
    a, b = open_store(), open_store()
    a.create_session("p", "/tmp", {}, "t0")
    a.append("p", [msg_event(f"m{i}") for i in range(4)], "t1")
    a.save_fold("p", 3, b"messages", b"replay \x00\xff")
    assert b.load_fold("p") == (3, b"messages")
    assert b.load_fold_replay("p", 3) == b"replay \x00\xff"
    b.save_fold("p", 4, b"four")
    assert a.load_fold("p") == (4, b"four") and a.load_fold_replay("p", 4) is None
    assert a.load_fold_replay("p", 3) is None, "not the replay of a fold no longer kept"


def _schema_7_folds(db: sqlite3.Connection) -> None:
    db.execute("DROP TABLE folds")
    db.execute("CREATE TABLE folds(session_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, data BLOB)")
    db.execute("INSERT INTO folds VALUES('s', 1, x'00')")
    db.execute("UPDATE meta SET value='7' WHERE key='schema_version'")


def test_a_store_of_schema_7_gets_the_replay_column_and_drops_older_folds(
    tmp_path: Path,
) -> None:
    path = tmp_path / "db.sqlite"
    store = EventStore(path)
    store.create_session("s", "/tmp", {}, "t0")
    store.append("s", [msg_event("m1")], "t1")
    store.close()
    with sqlite3.connect(path) as db:
        _schema_7_folds(db)
    store = EventStore(path)
    try:
        assert store.load_fold("s") is None, "a fold of the older format is dropped"
        store.save_fold("s", 1, b"kept", b"its replay")
        assert store.load_fold("s") == (1, b"kept") and ids(store, "s") == ["m1"]
        assert store.load_fold_replay("s", 1) == b"its replay"
    finally:
        store.close()


def _older_schema(pg_url: str, version: int, *changes: str) -> str:
    """A database with one session ``s`` (event m1) taken back to schema ``version`` by
    ``changes``, and a team role of that version's grants (docs/teams.md) that may not
    create tables; returns the team role's URL."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from threadline.store.postgres import PostgresStore

    owner = PostgresStore(pg_url)
    owner.create_session("s", "/tmp", {}, "t0")
    owner.append("s", [msg_event("m1")], "t1")
    owner.close()
    dbname = str(conninfo_to_dict(pg_url)["dbname"])
    role = f"threadline_team{version}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for change in changes:
            conn.execute(change)  # pyright: ignore[reportArgumentType]
        conn.execute("UPDATE tl_meta SET value=%s WHERE key='schema_version'", (str(version),))
        conn.execute(f"DROP ROLE IF EXISTS {role}")  # pyright: ignore[reportArgumentType]
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'team-pw'")  # pyright: ignore[reportArgumentType]
        conn.execute(f"GRANT CONNECT ON DATABASE {dbname} TO {role}")  # pyright: ignore[reportArgumentType]
        conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        conn.execute(
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}"  # pyright: ignore[reportArgumentType]
        )
    params = conninfo_to_dict(pg_url)
    params.update(user=role, password="team-pw")
    return make_conninfo("", **params)


def test_postgres_schema_6_gets_the_replay_column_and_a_team_role_keeps_folds_without(
    pg_url: str,
) -> None:
    """The owner's sidecar adds ``tl_folds.replay``; until then a team role (which may
    not) keeps folds without their replay."""
    import psycopg

    from threadline.store.postgres import PostgresStore

    team = PostgresStore(
        _older_schema(
            pg_url,
            6,
            "ALTER TABLE tl_folds DROP COLUMN replay",
            "INSERT INTO tl_folds VALUES('s', 1, '\\x00')",
        )
    )
    try:
        team.save_fold("s", 1, b"team", b"no column for it")
        assert team.load_fold("s") == (1, b"team") and team.load_fold_replay("s", 1) is None
    finally:
        team.close()
    owner = PostgresStore(pg_url)
    try:
        assert owner.load_fold("s") is None, "a fold of the older format is dropped"
        owner.save_fold("s", 1, b"kept", b"its replay")
        assert owner.load_fold_replay("s", 1) == b"its replay"
    finally:
        owner.close()
    with psycopg.connect(pg_url) as conn:
        version = conn.execute("SELECT value FROM tl_meta WHERE key='schema_version'").fetchone()
        assert version == (str(PG_SCHEMA_VERSION),)
        compression = conn.execute(
            "SELECT attname, attcompression FROM pg_attribute WHERE attrelid="
            "'tl_folds'::regclass AND attname IN ('data', 'replay') ORDER BY attname"
        ).fetchall()
        assert compression == [("data", "l"), ("replay", "l")], "kept folds compressed by lz4"


def test_a_store_of_schema_2_gets_the_folds_table(tmp_path: Path) -> None:
    """An older store is brought up to this version on open, its sessions intact."""
    path = tmp_path / "db.sqlite"
    store = EventStore(path)
    store.create_session("s", "/tmp", {}, "t0")
    store.append("s", [msg_event("m1")], "t1")
    store.close()
    db = sqlite3.connect(path)
    db.execute("DROP TABLE folds")
    db.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
    db.commit()
    db.close()
    store = EventStore(path)
    try:
        store.save_fold("s", 1, b"kept")
        assert store.load_fold("s") == (1, b"kept") and ids(store, "s") == ["m1"]
    finally:
        store.close()
    db = sqlite3.connect(path)
    version = db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    assert version == (str(SCHEMA_VERSION),)
    db.close()


def test_a_store_from_a_newer_threadline_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    EventStore(path).close()
    db = sqlite3.connect(path)
    db.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="newer Threadline"):
        EventStore(path)


# -- PostgreSQL only ---------------------------------------------------------------------


def test_postgres_refuses_a_newer_schema_and_writes_nothing(pg_url: str) -> None:
    import psycopg

    from threadline.store.postgres import PostgresStore

    PostgresStore(pg_url).close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE tl_meta SET value='99' WHERE key='schema_version'")
        conn.execute("CREATE TABLE tl_probe AS SELECT count(*) AS n FROM tl_sessions")
    with pytest.raises(StoreError, match="newer Threadline") as err:
        PostgresStore(pg_url)
    assert PASSWORD not in str(err.value)
    with psycopg.connect(pg_url) as conn:
        version = conn.execute("SELECT value FROM tl_meta WHERE key='schema_version'").fetchone()
        assert version == ("99",)


def test_postgres_unreachable_names_the_host_never_the_password() -> None:
    from threadline.store.postgres import PostgresStore

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(StoreError) as err:
        PostgresStore(f"postgresql://alice:{PASSWORD}@127.0.0.1:{port}/team")
    assert time.monotonic() - started < 5
    message = str(err.value)
    assert f"127.0.0.1:{port}" in message and "alice@" in message
    assert PASSWORD not in message and "\n" not in message


def test_postgres_pool_is_made_and_primed_at_start_up(pg_url: str) -> None:
    """A fresh sidecar's first request does not wait for a connection to be made, nor
    read a long session's fold on a connection that never carried megabytes: the
    pool's first connection is made at start-up, having named the tables a session's
    opening reads (`store.pgpool`), its last statement as the server shows it."""
    import psycopg

    from threadline.store.pgpool import MIN_SIZE, PRIME
    from threadline.store.postgres import CHANNEL, PostgresStore

    store = PostgresStore(pg_url)
    try:
        store.ready(10)
        with psycopg.connect(pg_url, autocommit=True) as db:
            rows = db.execute(
                "SELECT query FROM pg_stat_activity WHERE datname = current_database() "
                "AND application_name = 'threadline'"
            ).fetchall()
        assert sorted(q for (q,) in rows) == sorted([f"LISTEN {CHANNEL}", *[PRIME] * MIN_SIZE])
        store.create_session("s", "/tmp", {}, "t0")
        assert store.get_session("s") is not None
    finally:
        store.close()


def test_postgres_priming_a_connection_never_fails_it(pg_url: str) -> None:
    """Tables missing (a database not set up yet) or not granted leave a pooled
    connection unprimed but usable."""
    import psycopg

    from threadline.store.pgpool import PRIME, prime

    with (
        psycopg.connect(pg_url, autocommit=True) as conn,
        psycopg.connect(pg_url, autocommit=True) as other,
    ):
        prime(conn)  # no tl_ table exists in a fresh database
        last = other.execute(
            "SELECT query FROM pg_stat_activity WHERE pid = %s", (conn.info.backend_pid,)
        ).fetchone()
        assert last == (PRIME,)
        assert conn.execute("SELECT 1").fetchone() == (1,)


@pytest.mark.realpart("postgresql")
def test_postgres_journal_waits_in_memory_through_an_outage() -> None:
    """The server goes away mid-answer: chunks keep being accepted, and the next write
    after it is back stores them in order; a write that cannot get through fails."""
    from threadline.store.postgres import PostgresStore

    server = PgServer()
    try:
        store = PostgresStore(server.new_database())
        store.create_session("s", "/tmp", {}, "t0")
        store.begin_stream("s", "a1", {"turnId": "a1"})
        store.append_chunks("s", [("text", "one ")])
        server.stop()
        store.append_chunks("s", [("text", "two ")])
        store.append_chunks("s", [("thought", "hm")])
        os.environ["THREADLINE_STORE_RETRY"] = "0.5"
        try:
            with pytest.raises(StoreError, match="lost the session store"):
                store.append("s", [msg_event("m1")], "t1")
        finally:
            del os.environ["THREADLINE_STORE_RETRY"]
        server.start()
        store.append_chunks("s", [("text", "three")])
        stream = store.inflight_stream("s")
        assert stream is not None
        assert (stream.text, stream.thought) == ("one two three", "hm")
        assert ids(store, "s") == [], "the failed append was not written"
        store.close()
    finally:
        server.close()


def test_postgres_works_with_the_grants_docs_teams_md_names(pg_url: str) -> None:
    """A team role with table privileges only (no CREATE) runs sessions on tables an
    owner created."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from threadline.store.postgres import PostgresStore

    PostgresStore(pg_url).close()
    dbname = str(conninfo_to_dict(pg_url)["dbname"])
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS threadline_team")
        conn.execute("CREATE ROLE threadline_team LOGIN PASSWORD 'team-pw'")
        conn.execute(f"GRANT CONNECT ON DATABASE {dbname} TO threadline_team")  # pyright: ignore[reportArgumentType]
        conn.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC")
        conn.execute(
            "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO threadline_team"
        )
    params = conninfo_to_dict(pg_url)
    params.update(user="threadline_team", password="team-pw")
    store = PostgresStore(make_conninfo("", **params))
    try:
        store.create_session("s", "/tmp", {}, "t0")
        store.begin_stream("s", "a1", {})
        store.append_chunks("s", [("text", "hi")])
        got = store.acquire_lease("s", current_owner(), "turn", None, time.time())
        assert got.mine
        store.append("s", [msg_event("m1")], "t1", end_stream=True, expected_seq=0)
        assert ids(store, "s") == ["m1"] and store.inflight_stream("s") is None
    finally:
        store.close()


@pytest.mark.realpart("postgresql")
def test_postgres_journal_past_the_memory_bound_fails_and_stays_recoverable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from threadline.store import postgres

    monkeypatch.setattr(postgres, "CHUNK_BUFFER_BYTES", 1000)
    server = PgServer()
    try:
        store = postgres.PostgresStore(server.new_database())
        store.create_session("s", "/tmp", {}, "t0")
        store.begin_stream("s", "a1", {"turnId": "a1"})
        server.stop()
        shown = ""
        with pytest.raises(StoreError, match="unreachable") as err:
            for i in range(100):
                store.append_chunks("s", [("text", f"{i:03d}" * 20)])
                shown += f"{i:03d}" * 20
        assert PASSWORD not in str(err.value)
        server.start()
        store.clear_stream("other")  # any write that gets through writes what waited
        stream = store.inflight_stream("s")
        assert stream is not None and stream.text.startswith(shown) and len(stream.text) > 1000
        store.close()
    finally:
        server.close()


def test_postgres_sidecars_starting_at_once_create_the_schema_once(pg_url: str) -> None:
    import threading

    from threadline.store.postgres import PostgresStore

    opened: list[PostgresStore] = []
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            opened.append(PostgresStore(pg_url))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    try:
        assert not errors and len(opened) == 6
        opened[0].create_session("s", "/tmp", {}, "t0")
        assert all(store.get_session("s") is not None for store in opened)
    finally:
        for store in opened:
            store.close()


def test_postgres_schema_1_is_upgraded_by_the_owner_and_used_as_is_by_a_team_role(
    pg_url: str,
) -> None:
    """A database of schema 1 (before kept folds): a role that may not create tables
    still runs sessions on it, without kept folds; the owner's next sidecar upgrades it."""
    import psycopg

    from threadline.store.postgres import PostgresStore

    team_url = _older_schema(pg_url, 1, "DROP TABLE tl_folds")
    team = PostgresStore(team_url)
    try:
        team.append("s", [msg_event("m2")], "t2")
        team.save_fold("s", 2, b"not kept")
        assert team.load_fold("s") is None and ids(team, "s") == ["m1", "m2"]
    finally:
        team.close()
    owner = PostgresStore(pg_url)
    try:
        owner.save_fold("s", 2, b"kept")
        assert owner.load_fold("s") == (2, b"kept")
    finally:
        owner.close()
    with psycopg.connect(pg_url) as conn:
        version = conn.execute("SELECT value FROM tl_meta WHERE key='schema_version'").fetchone()
        assert version == (str(PG_SCHEMA_VERSION),)
    # not granted the new table yet: still works, deletes included, without kept folds
    team = PostgresStore(team_url)
    try:
        assert team.load_fold("s") is None
        team.create_session("t", "/tmp", {}, "t3")
        team.delete_session("t")
        assert team.get_session("t") is None
    finally:
        team.close()


def test_postgres_watch_in_one_statement_reads_what_the_snapshot_reads(pg_url: str) -> None:
    """``watch`` on PostgreSQL is one statement (rows as JSON arrays); what it reads must
    be what the shared snapshot of four queries reads: rows, leases, prompts, forks."""
    import dataclasses

    from threadline.store.owners import current_owner
    from threadline.store.postgres import PostgresStore

    store = PostgresStore(pg_url)
    try:
        a = store.create_session("wa", "/tmp", {"model": "m", "n": 1.5}, "t0")
        store.create_session("wb", "/tmp", {}, "t0")
        store.fork_session("wc", a, "wa", 0, 0, None, "/tmp", "t1", title="fork")
        store.acquire_lease("wa", current_owner(), "turn", "a1", 1764180000.123456)
        store.add_pending("wa", "p1", "queue", [{"type": "text", "text": "é"}], "o", "t2")
        store.add_pending("wa", "p2", "steer", [{"type": "text", "text": "2"}], "o", "t3")
        ids = ["wa", "wb", "wc", "gone"]
        one = store.watch(ids)
        plain = dataclasses.replace(store.dialect, json_rows=False)
        store.dialect = plain  # the shared path: a snapshot of four queries
        assert store.watch(ids) == one
        assert one["wa"].lease is not None and [p.id for p in one["wa"].pending] == ["p1", "p2"]
        assert one["wa"].forks == (("wc", None),) and one["gone"].row is None
    finally:
        store.close()
