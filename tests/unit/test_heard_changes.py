"""`store.pgchanges`: which sessions other processes changed, from the notifications'
payloads; anything it cannot tell means every session."""

from __future__ import annotations

from threadline.store.pgchanges import KEPT, PAYLOAD_BYTES, HeardChanges, payload


def test_a_payload_names_the_writer_then_its_sessions_once() -> None:
    assert payload("me") == "me"
    assert payload("me", ["s1"]) == "me s1"
    assert payload("me", ["s1", "s2", "s1"]) == "me s1 s2"


def test_a_payload_too_long_for_postgresql_names_no_session() -> None:
    many = [f"session-{i:06d}" for i in range(PAYLOAD_BYTES // 10)]
    assert payload("me", many) == "me"


def test_own_notifications_are_not_counted() -> None:
    heard = HeardChanges("me")
    heard.hear("me s1")
    heard.hear("me")
    assert heard.token == 0
    assert heard.since(0) == frozenset()


def test_sessions_named_since_a_token() -> None:
    heard = HeardChanges("me")
    heard.hear("other s1")
    first = heard.token
    heard.hear("other s2 s3")
    heard.hear("third s1")
    assert heard.token == 3
    assert heard.since(0) == {"s1", "s2", "s3"}
    assert heard.since(first) == {"s1", "s2", "s3"}
    assert heard.since(2) == {"s1"}
    assert heard.since(3) == frozenset()


def test_a_notification_naming_nothing_means_anything_changed() -> None:
    heard = HeardChanges("me")
    heard.hear("other s1")
    heard.hear("other")
    assert heard.since(0) is None
    assert heard.since(1) is None
    heard.hear("other s2")
    assert heard.since(2) == {"s2"}


def test_missed_notifications_mean_anything_changed() -> None:
    heard = HeardChanges("me")
    heard.hear("other s1")
    heard.missed()
    assert heard.token == 2
    assert heard.since(1) is None
    assert heard.since(2) == frozenset()


def test_past_the_sessions_kept_the_next_look_reads_everything() -> None:
    heard = HeardChanges("me")
    for i in range(KEPT):
        heard.hear(f"other s{i}")
    assert heard.since(0) is not None
    heard.hear("other one-more")
    assert heard.since(0) is None
    heard.hear("other s1")
    assert heard.since(heard.token - 1) == {"s1"}
