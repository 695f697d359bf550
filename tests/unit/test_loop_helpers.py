from __future__ import annotations

from threadline.engine.loopguard import RepeatedLineDetector
from threadline.engine.toolcalls import parse_fallback_call


def test_repeated_long_lines_trigger_short_ones_do_not() -> None:
    d = RepeatedLineDetector()
    assert not any(d.feed("}\n") for _ in range(500))
    d = RepeatedLineDetector()
    line = "I will now check the weather again for you.\n"
    hits = [d.feed(line[:10]) or d.feed(line[10:]) for _ in range(20)]
    assert hits.index(True) == 11


def test_varied_lines_never_trigger() -> None:
    d = RepeatedLineDetector()
    assert not any(d.feed(f"line number {i} is different\n") for i in range(1000))


def test_fallback_call_parsed_and_stripped() -> None:
    text = 'Let me check.\n```json\n{"tool": "get_weather", "arguments": {"city": "Paris"}}\n```'
    parsed = parse_fallback_call(text)
    assert parsed is not None
    call, rest = parsed
    assert (call.name, call.arguments, rest) == ("get_weather", {"city": "Paris"}, "Let me check.")
    bare = parse_fallback_call('{"name": "f", "arguments": "{\\"a\\": 1}"} done')
    assert bare is not None and bare[0].arguments == {"a": 1} and bare[1] == "done"


def test_plain_json_answers_are_not_calls() -> None:
    assert parse_fallback_call('Here is data: {"name": "Bob", "age": 3}') is None
    assert parse_fallback_call("no json here") is None
    assert parse_fallback_call('{"tool": "x", "arguments": [1]}') is None
