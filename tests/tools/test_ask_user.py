"""The pure parts of ``ask_user``: which clients can be asked, the form a question
becomes, and how it reads as a message for a client that cannot ask."""

from __future__ import annotations

from threadline.tools.ask import answer_text, form_schema, supports_form, written_out
from threadline_protocol import methods as pm


def test_form_elicitation_only_when_advertised_and_not_null() -> None:
    assert supports_form({"elicitation": {"form": {}}})
    assert supports_form({"elicitation": {"form": {}, "url": None}})
    for caps in [{}, {"elicitation": None}, {"elicitation": {}}, {"elicitation": {"form": None}}]:
        assert not supports_form(caps), caps
    assert not supports_form({"elicitation": {"url": {}}}), "Threadline asks in form mode only"


def test_a_question_with_fields_as_a_form_and_as_a_message() -> None:
    arguments = {
        "question": "Deploy where?",
        "fields": [
            {"name": "target", "choices": ["staging", "prod"], "description": "environment"},
            {"name": "replicas", "type": "integer"},
            {"name": "dry_run", "type": "boolean"},
        ],
    }
    schema = form_schema(arguments)
    assert schema.required == ["target", "replicas", "dry_run"]
    assert schema.properties["target"] == {
        "title": "target",
        "type": "string",
        "enum": ["staging", "prod"],
        "description": "environment",
    }
    assert written_out(arguments) == (
        "Deploy where?\n\n- target: environment (staging / prod)\n- replicas\n- dry_run"
    )
    accepted = pm.CreateElicitationResult(
        action="accept", content={"target": "prod", "replicas": 3, "dry_run": False}
    )
    said = answer_text(accepted, schema)
    assert not said.is_error
    assert said.content[0]["text"] == (
        "The user answered:\n- target: prod\n- replicas: 3\n- dry_run: false"
    )
    missing = answer_text(pm.CreateElicitationResult(action="accept", content={}), schema)
    assert missing.is_error and "'target' is a required property" in missing.content[0]["text"]


def test_a_free_question_is_one_required_string() -> None:
    schema = form_schema({"question": "Why?"})
    assert schema.wire() == {
        "type": "object",
        "properties": {"answer": {"type": "string", "title": "Answer"}},
        "required": ["answer"],
    }
    assert written_out({"question": "  Why?  "}) == "Why?"


def test_ask_user_is_offered_only_when_the_request_is_to_ask() -> None:
    """BM25 selection with the bench's editor session (every built-in tool, ask_user
    included): no prompt of ``bench/toolprompts.py`` is offered ask_user, so the small
    model's choices there are unchanged; a request to ask is."""
    from bench.figures.toolchoice import registry
    from bench.toolprompts import PLAIN_QUESTIONS, TOOL_PROMPTS
    from threadline.providers.base import SMALL_MODEL_TOOLS, ChatMessage
    from threadline.tools.selection import ToolSelector

    selector = ToolSelector(registry())

    def offered(text: str) -> list[str]:
        return [
            s.name for s in selector.offer([ChatMessage("user", text)], SMALL_MODEL_TOOLS).specs
        ]

    for prompt in [p for p, _ in TOOL_PROMPTS] + [q for q, _ in PLAIN_QUESTIONS]:
        assert "ask_user" not in offered(prompt), prompt
    assert offered("Ask me which colour I want for the button.")[0] == "ask_user"
