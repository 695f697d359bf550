"""``ask_user``: the model puts a question to the user, and the answer is its result.

A client that advertised ``clientCapabilities.elicitation.form`` gets ACP's
``elicitation/create`` (form mode, scoped to the session and this tool call): a free
answer, one of a few ``choices``, or a small form (``fields``). The call waits for
the user as long as it takes; an interrupt withdraws the request. The client's answer
(accept with the form's content, decline, cancel) is the tool's result, stored like
any other.

A client without form elicitation cannot ask, so the call ends the turn instead: the
question (with its choices or fields written out) becomes the turn's final message,
and the user's next prompt is the answer (``ToolOutcome.final_message``).
"""

from __future__ import annotations

import json
from typing import Any, Literal

import jsonschema

from threadline_protocol import methods as pm

from .base import ToolContext, ToolKind, ToolOutcome

ASK_USER = "ask_user"
WAIT = 24 * 3600.0
"""Seconds the call waits for the user: a person may step away; an interrupt ends it."""
MAX_CHOICES = 20
MAX_FIELDS = 8
_FIELD_TYPES = ("string", "number", "integer", "boolean")
_ANSWER = "answer"

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "description": "The question for the user."},
        "choices": {
            "type": "array",
            "items": {"type": "string"},
            "maxItems": MAX_CHOICES,
            "description": "Answers to pick from (optional).",
        },
        "fields": {
            "type": "array",
            "maxItems": MAX_FIELDS,
            "description": "A small form instead (optional): one item per value wanted.",
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]{0,39}$"},
                    "description": {"type": "string"},
                    "type": {"type": "string", "enum": list(_FIELD_TYPES)},
                    "choices": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["name"],
            },
        },
    },
    "required": ["question"],
}


def supports_form(client_capabilities: dict[str, Any]) -> bool:
    """ACP: form elicitation is supported only when ``elicitation.form`` is present and
    not null (``elicitation: {}`` advertises no mode)."""
    elicitation = client_capabilities.get("elicitation")
    return isinstance(elicitation, dict) and elicitation.get("form") is not None


def form_schema(arguments: dict[str, Any]) -> pm.ElicitationSchema:
    """The ``requestedSchema`` of the question: each field as one of ACP's property
    schemas (choices as a string ``enum``), or a single ``answer`` (one of the choices
    when there are some). Every field is required: the model asked for it."""
    properties: dict[str, dict[str, Any]] = {}
    for field in arguments.get("fields") or []:
        prop: dict[str, Any] = {"type": field.get("type") or "string"}
        if field.get("choices"):
            prop = {"type": "string", "enum": list(field["choices"])}
        if field.get("description"):
            prop["description"] = field["description"]
        properties[field["name"]] = {"title": field["name"], **prop}
    if not properties:
        answer: dict[str, Any] = {"type": "string", "title": "Answer"}
        if arguments.get("choices"):
            answer["enum"] = list(arguments["choices"])
        properties[_ANSWER] = answer
    return pm.ElicitationSchema(type="object", properties=properties, required=list(properties))


def written_out(arguments: dict[str, Any]) -> str:
    """The question as a message, for a client that cannot show a form."""
    lines = [str(arguments["question"]).strip()]
    if arguments.get("fields"):
        lines.append("")
        for field in arguments["fields"]:
            about = field.get("description") or ""
            options = field.get("choices")
            if options:
                about = f"{about} ({' / '.join(options)})".strip()
            lines.append(f"- {field['name']}" + (f": {about}" if about else ""))
    elif arguments.get("choices"):
        lines.append("")
        lines += [f"{n}. {choice}" for n, choice in enumerate(arguments["choices"], 1)]
    return "\n".join(lines)


def answer_text(result: pm.CreateElicitationResult, schema: pm.ElicitationSchema) -> ToolOutcome:
    """What the model is told of the user's answer (the client's answer kept as the
    call's raw output). An accepted form is checked against the schema again, as ACP
    asks of agents."""
    raw = result.wire()
    if result.action == "decline":
        return ToolOutcome.text("The user declined to answer.", raw=raw)
    if result.action == "cancel":
        return ToolOutcome.text("The user dismissed the question without answering.", raw=raw)
    content = dict(result.content or {})
    try:
        jsonschema.validate(content, schema.wire())
    except jsonschema.ValidationError as exc:
        return ToolOutcome.text(
            f"The user's answer does not fit the question's form: {exc.message}",
            is_error=True,
            raw=raw,
        )
    if list(content) == [_ANSWER]:
        return ToolOutcome.text(f"The user answered: {_show(content[_ANSWER])}", raw=raw)
    lines = [f"- {name}: {_show(value)}" for name, value in content.items()]
    return ToolOutcome.text("The user answered:\n" + "\n".join(lines), raw=raw)


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


class AskUser:
    """The ``ask_user`` tool (see the module docstring). Not parallel with others: a
    question is a barrier, and what follows it may depend on the answer."""

    name = ASK_USER
    description = (
        "Ask the user a question and wait for the reply: for a decision or a fact only "
        "the user can give. Offer choices when there are a few."
    )
    parameters = PARAMETERS
    kind: ToolKind = "other"
    parallelizable = False
    needs_permission = False
    timeout = WAIT

    def title(self, arguments: dict[str, Any]) -> str:
        question = str(arguments.get("question") or "").strip()
        return f"Ask: {question[:80]}" if question else "Ask the user"

    def locations(self, arguments: dict[str, Any], ctx: ToolContext) -> list[dict[str, Any]]:
        return []

    async def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        if not supports_form(ctx.link.client_capabilities()):
            return ToolOutcome.text(
                "This editor cannot show the question while you wait, so it is now your "
                "final message of this turn; the user's next message is the answer.",
                final_message=written_out(arguments),
            )
        schema = form_schema(arguments)
        mode: Literal["form"] = "form"
        params = pm.CreateElicitationParams(
            session_id=ctx.session_id,
            tool_call_id=ctx.tool_call_id,
            mode=mode,
            message=str(arguments["question"]),
            requested_schema=schema,
        )
        with ctx.asking():
            answer = await ctx.link.create_elicitation(params)
        return answer_text(answer, schema)
