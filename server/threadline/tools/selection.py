"""Which tools one model call is offered: the few that matter for the request.

Every tool description costs prompt tokens, and a small model given a dozen of them
stops answering plain questions and picks the wrong tool (the embedded SmolLM2 model
answered 0 of 5 plain questions sensibly with the default tool set, 4 of 5 without).
So each model call is offered only the tools that match the request:

* every tool (its name, description, parameter names and descriptions) is a document
  in a BM25 index (the ``bm25s`` library, Snowball stemming by ``PyStemmer``);
* the query is the latest user message plus the turn's most recent tool results;
* a tool is *relevant* when the request's content words match it well enough
  (:data:`RELEVANCE`, in units of a unique word's weight, so the bar does not move as
  the tool list grows); everyday request words (:data:`REQUEST_WORDS`: "write",
  "list", "name"…) help rank relevant tools but never make one relevant on their own,
  or "Write a haiku" would offer ``write_file``;
* the call is offered the ``top_k`` most relevant tools, best first, without those
  far behind the best (both a property of the model,
  :class:`~threadline.providers.base.ToolOfferLimits`), plus those the client marked
  ``alwaysOffer`` and those ``find_tools`` found earlier in the turn; none at all when
  nothing is relevant, so a plain question gets a plain prompt;
* a model whose limits allow it is offered every tool while the list is short;
* when tools were left out, ``find_tools`` is offered too: it searches the rest, and
  what it finds is offered on the next round (as Anthropic's tool search does).
"""

from __future__ import annotations

import logging
import math
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..providers.base import ChatMessage, ToolOfferLimits, ToolSpec
from .base import ToolContext, ToolKind, ToolOutcome
from .registry import ToolRegistry

log = logging.getLogger(__name__)

FIND_TOOLS = "find_tools"

RELEVANCE = 0.65
"""Least content-word score (divided by the weight of a word found in one tool only)
that makes a tool relevant. Calibrated with the embedded model on the prompts of
``bench/toolprompts.py`` (``tests/e2e/test_tool_selection.py``): a prompt that needs a
tool scores 1.4-3.6 for it ("weather" against ``get_weather`` 1.9); one word that
several tools share scores 0.45-0.62 ("file" against a file tool, "py" against
``search_text``), and is not enough: "Write a Python function…" wants an answer."""

RECENT_RESULTS = 2
"""Tool results of the current turn that join the query (the latest ones)."""
RESULT_CHARS = 600
"""Characters of each tool result used in the query: enough for its gist."""
FOUND_MAX = 5
"""Most tools one ``find_tools`` call returns."""
FOUND_PREFIX = "Callable now: "

REQUEST_WORDS = frozenset(
    """
    a about an and any are as be can could do does for from give how i in into is it
    list make me my name of on or please say show some tell that the this to two three
    what which who why will with would write you your explain describe create get use
    need want like short brief long quick simple few many much
    """.split()  # noqa: SIM905 - a word list reads better as words
)
"""Words that start everyday requests ("Write a haiku", "List three colours", "Name
two fruits", "How many legs…"): they rank tools that are relevant anyway, never make
one relevant ("many" alone offered ``delegate``, whose description reads "read many
files", to "How many legs does a spider have?")."""

_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_SEPARATORS = re.compile(r"[_.\-/]+")


def _words(text: str) -> str:
    """Identifiers split into words: ``editor_get_selection``, ``startLine``."""
    return _SEPARATORS.sub(" ", _CAMEL.sub(r"\1 \2", text))


def tool_document(spec: ToolSpec) -> str:
    """What a tool is found by: name, description, parameter names and descriptions.
    The name counts twice: it says what the tool is, while a description may also
    name other tools."""
    parts = [_words(spec.name), _words(spec.name), spec.description]
    props = spec.parameters.get("properties")
    if isinstance(props, dict):
        for pname, schema in props.items():
            parts.append(_words(str(pname)))
            if isinstance(schema, dict) and isinstance(schema.get("description"), str):
                parts.append(schema["description"])
    return " ".join(parts)


class ToolIndex:
    """A BM25 index over tool documents; scores come back per tool name."""

    def __init__(self, specs: Sequence[ToolSpec]) -> None:
        import bm25s

        # bm25s sets its logger to DEBUG when imported (a line per index built); the
        # sidecar's log level is the user's choice, so keep the library's to warnings.
        logging.getLogger("bm25s").setLevel(logging.WARNING)
        self.names = [s.name for s in specs]
        self._retriever: Any = None
        self.unit = 1.0
        if not specs:
            return
        corpus = [self._tokens(tool_document(s)) for s in specs]
        self._retriever = bm25s.BM25()
        self._retriever.index(corpus, show_progress=False)
        n = len(specs)
        # The score of one word that only one tool has, once, in a document of
        # average length (bm25s' Lucene variant): the scale relevance is measured in.
        k1 = float(self._retriever.k1)
        self.unit = math.log(1 + (n - 0.5) / 1.5) / (1 + k1)

    @staticmethod
    def _tokens(text: str) -> list[str]:
        import bm25s
        from bm25s.stopwords import STOPWORDS_EN_PLUS

        tokens = bm25s.tokenize(
            [_words(text)],
            stopwords=list(STOPWORDS_EN_PLUS),
            stemmer=_stemmer(),
            return_ids=False,
            show_progress=False,
        )
        return [str(t) for t in tokens[0]] if tokens else []

    def scores(self, text: str, *, content_only: bool = False) -> dict[str, float]:
        """Each tool's score for ``text``, divided by :attr:`unit`."""
        if self._retriever is None:
            return {}
        words = self._tokens(text)
        if content_only:
            plain = set(_stem_all(REQUEST_WORDS))
            words = [w for w in words if w not in plain]
        ids = self._retriever.get_tokens_ids(words)
        if not ids:
            return dict.fromkeys(self.names, 0.0)
        raw = self._retriever.get_scores(ids)
        return {name: float(raw[i]) / self.unit for i, name in enumerate(self.names)}

    def relevant(self, text: str, *, threshold: float = RELEVANCE) -> list[tuple[str, float]]:
        """Tools whose content-word score reaches ``threshold``, best first (ranked by
        the whole request, request words included)."""
        gate = self.scores(text, content_only=True)
        rank = self.scores(text)
        chosen = [n for n in self.names if gate.get(n, 0.0) >= threshold]
        return sorted(((n, rank[n]) for n in chosen), key=lambda p: -p[1])


_stemmer_lock = threading.Lock()
_stemmer_obj: Any = None


def _stemmer() -> Any:
    """One Snowball stemmer for the process (building one loads its tables)."""
    global _stemmer_obj
    with _stemmer_lock:
        if _stemmer_obj is None:
            import Stemmer

            _stemmer_obj = Stemmer.Stemmer("english")
        return _stemmer_obj


_stemmed: dict[frozenset[str], frozenset[str]] = {}


def _stem_all(words: frozenset[str]) -> frozenset[str]:
    out = _stemmed.get(words)
    if out is None:
        out = frozenset(_stemmer().stemWords(sorted(words)))
        _stemmed[words] = out
    return out


# -- the request ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Request:
    """What the tools are chosen for: the words of the request, and the tools that
    ``find_tools`` found since the latest user message."""

    text: str
    found: frozenset[str] = frozenset()


def request_of(messages: Sequence[ChatMessage]) -> Request:
    """The latest user message plus the turn's latest tool results."""
    last_user = -1
    for i, m in enumerate(messages):
        if m.role == "user" and not m.ephemeral:
            last_user = i
    if last_user < 0:
        return Request("")
    results = [m for m in messages[last_user + 1 :] if m.role == "tool"]
    found: set[str] = set()
    for m in results:
        if m.tool_name == FIND_TOOLS and m.content.startswith(FOUND_PREFIX):
            line = m.content.splitlines()[0][len(FOUND_PREFIX) :]
            found.update(n.strip() for n in line.split(",") if n.strip())
    recent = [m.content[:RESULT_CHARS] for m in results[-RECENT_RESULTS:]]
    return Request("\n".join([messages[last_user].content, *recent]), frozenset(found))


# -- the offer --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Offer:
    """The tools one model call gets, and why (for ``_meta`` and logs)."""

    specs: list[ToolSpec]
    left_out: list[str] = field(default_factory=list)
    scores: dict[str, float] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.specs]


class ToolSelector:
    """Chooses each model call's tools from one session's registry, and is the
    ``find_tools`` tool that searches what was left out."""

    def __init__(self, registry: ToolRegistry) -> None:
        self.registry = registry
        self.find_tool = FindTools(self)
        registry.add_hidden(self.find_tool)
        self._key: tuple[tuple[str, str, str], ...] | None = None
        self._index: ToolIndex | None = None

    def index(self) -> ToolIndex:
        """The index of the registry's tools, rebuilt only when they changed."""
        specs = self.registry.specs()
        key = tuple((s.name, s.description, repr(s.parameters)) for s in specs)
        if self._index is None or key != self._key:
            self._index = ToolIndex(specs)
            self._key = key
        return self._index

    def offer(self, messages: Sequence[ChatMessage], limits: ToolOfferLimits) -> Offer:
        specs = self.registry.specs()
        if not specs:
            return Offer([])
        if len(specs) <= limits.offer_all_up_to:
            return Offer(specs)
        request = request_of(messages)
        relevant = self.index().relevant(request.text)
        best = relevant[0][1] if relevant else 0.0
        ranked = [n for n, score in relevant if score >= best * limits.close_to_best]
        chosen = ranked[: limits.top_k]
        by_name = {s.name: s for s in specs}
        extra = self.registry.always_offer | (request.found & set(by_name))
        chosen += [s.name for s in specs if s.name in extra and s.name not in chosen]
        # Best first: a small model leans towards the first tool it is shown.
        offered = [by_name[n] for n in chosen]
        left_out = [s.name for s in specs if s.name not in chosen]
        scores = {name: round(score, 2) for name, score in relevant}
        searchable = left_out and self.registry.get(FIND_TOOLS) is self.find_tool
        if searchable and (offered or not limits.plain_when_irrelevant):
            offered.append(self.find_tool.spec)
        log.debug("offered %s of %d tools; relevance %s", chosen, len(specs), scores)
        return Offer(offered, left_out, scores)


class FindTools:
    """``find_tools``: searches every tool by what it does; what it finds is offered
    on the model's next call (the selector reads the result back from the turn)."""

    name = FIND_TOOLS
    description = (
        "Find more tools: search the tools not offered right now by what they do. "
        "The tools found can be called in your next step."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "what the tool should do, in a few words"}
        },
        "required": ["query"],
    }
    kind: ToolKind = "search"
    parallelizable = True
    needs_permission = False
    timeout = 10.0

    def __init__(self, selector: ToolSelector) -> None:
        self._selector = selector

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.parameters)

    def title(self, arguments: dict[str, Any]) -> str:
        return f"Find tools: {arguments.get('query', '')}"

    def locations(self, arguments: dict[str, Any], ctx: ToolContext) -> list[dict[str, Any]]:
        return []

    def search(self, query: str) -> list[ToolSpec]:
        index = self._selector.index()
        ranked = index.relevant(query, threshold=RELEVANCE / 2)
        by_name = {s.name: s for s in self._selector.registry.specs()}
        return [by_name[n] for n, _ in ranked[:FOUND_MAX] if n in by_name]

    async def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        query = str(arguments.get("query") or "").strip()
        if not query:
            return ToolOutcome.text("query is empty: say what the tool should do", is_error=True)
        found = self.search(query)
        if not found:
            names = ", ".join(s.name for s in self._selector.registry.specs())
            return ToolOutcome.text(f"No tool matches {query!r}. All tools: {names}")
        lines = [FOUND_PREFIX + ", ".join(s.name for s in found)]
        lines += [f"- {s.name}: {s.description}" for s in found]
        return ToolOutcome.text("\n".join(lines), raw={"found": [s.name for s in found]})


def offer_meta(offered: Sequence[ToolSpec], registry: ToolRegistry) -> dict[str, Any]:
    """One model call's entry in ``_meta.threadline.toolOffers``: the tools it was
    offered, and how many of the session's tools it was not."""
    names = [t.name for t in offered]
    return {"offered": names, "leftOut": len({s.name for s in registry.specs()} - set(names))}
