"""The requirements the conformance suite checks, each with its tier, as ACP's
conformance kit (agentclientprotocol/acp-tck) tiers them:

* ``MANDATORY``: a MUST of the specification; failing it is non-conformance.
* ``CAPABILITY``: applies only when the agent advertised the capability it depends on
  at ``initialize`` (the test reads the advertisement and skips, "not applicable",
  when it is absent); advertised, it must work as a MUST does.
* ``ADVISORY``: a SHOULD; reported with its tier so a reader can tell it from a MUST.

Every test of ``tests/conformance`` names the requirement it checks
(``@pytest.mark.requirement("…")``); ``test_registry.py`` keeps this table and the
tests in step (every id used, every use a known id). The ids are Threadline's own;
``cite`` names the upstream text (agentclientprotocol/agent-client-protocol at
b7f0005) each comes from.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Tier(StrEnum):
    MANDATORY = "MANDATORY"
    CAPABILITY = "CAPABILITY"
    ADVISORY = "ADVISORY"


@dataclass(frozen=True, slots=True)
class Requirement:
    id: str
    tier: Tier
    text: str
    cite: str
    capability: str | None = None
    """For ``CAPABILITY``: the advertisement it depends on (a path in the
    ``initialize`` result)."""


M, C, A = Tier.MANDATORY, Tier.CAPABILITY, Tier.ADVISORY
V2_DOCS = "docs/protocol/v2/"
V1_DOCS = "docs/protocol/v1/"
SESSION = "capabilities.session"

REQUIREMENTS: dict[str, Requirement] = {
    r.id: r
    for r in (
        # -- both versions ----------------------------------------------------------------
        Requirement(
            "TL-SCHEMA-001",
            M,
            "Every message the agent sends validates against the schema of the version the "
            "connection negotiated (v1: ACP's vendored schema and protocol/schema.json; v2: "
            "threadline_protocol.acp_v2), with no top-level key that schema does not define.",
            "schema/v1/schema.json; schema/v2/schema.json; " + V2_DOCS + "extensibility.mdx",
        ),
        Requirement(
            "TL-SCHEMA-002",
            M,
            "Every message the test client sends validates against the same schema (the "
            "suite's own requests are what the protocol defines, so a pass means something).",
            "schema/v2/schema.json",
        ),
        # -- v1 -------------------------------------------------------------------------------
        Requirement(
            "TL-V1-INIT-001",
            M,
            "initialize with protocolVersion 1 answers v1's shape (agentCapabilities, "
            "agentInfo) with protocolVersion 1: v1 clients are unchanged by v2.",
            V1_DOCS + "initialization.mdx",
        ),
        Requirement(
            "TL-V1-PROMPT-001",
            M,
            "On v1 the session/prompt answer ends the turn with its stopReason, and no v2 "
            "update kind (state_update, user_message, plan_update…) is ever sent.",
            V1_DOCS + "prompt-turn.mdx",
        ),
        # -- v2: initialize -------------------------------------------------------------------
        Requirement(
            "TL-V2-INIT-001",
            M,
            "initialize with protocolVersion 2 answers protocolVersion 2 with the required "
            "info (name, version) and capabilities whose markers are objects, never booleans.",
            V2_DOCS + "initialization.mdx; " + V2_DOCS + "migration.mdx#support-markers",
        ),
        Requirement(
            "TL-V2-INIT-002",
            M,
            "Version negotiation: a client asking for a later version than 2 is answered 2 "
            "(the agent's latest), one asking for 1 gets v1.",
            V2_DOCS + "migration.mdx#version-negotiation",
        ),
        # -- v2: sessions ------------------------------------------------------------------------
        Requirement(
            "TL-V2-SESSION-001",
            C,
            "session/new answers a sessionId and configOptions; modes are a config option "
            "of category mode (no modes field, no session/set_mode).",
            V2_DOCS + "session-setup.mdx; " + V2_DOCS + "session-config-options.mdx",
            SESSION,
        ),
        Requirement(
            "TL-V2-SESSION-002",
            C,
            "session/resume with replayFrom {type: start} replays the history as "
            "session/update upserts before answering; without replayFrom it replays nothing.",
            V2_DOCS + "session-setup.mdx#resuming-sessions",
            SESSION,
        ),
        Requirement(
            "TL-V2-SESSION-003",
            C,
            "session/set_config_option answers the full updated configOptions; the session's "
            "clients get config_option_update.",
            V2_DOCS + "session-config-options.mdx",
            SESSION,
        ),
        Requirement(
            "TL-V2-SESSION-004",
            C,
            "session/list and session/close are served (the baseline), close answers {}.",
            V2_DOCS + "session-list.mdx; " + V2_DOCS + "session-setup.mdx",
            SESSION,
        ),
        # -- v2: the prompt lifecycle -----------------------------------------------------------
        Requirement(
            "TL-V2-PROMPT-001",
            C,
            "session/prompt is answered {} on acceptance, before the work ends.",
            V2_DOCS + "prompt-lifecycle.mdx#2-prompt-accepted",
            SESSION,
        ),
        Requirement(
            "TL-V2-PROMPT-002",
            C,
            "The accepted prompt is reported as a user_message upsert whose messageId is "
            "the id the message is stored under.",
            V2_DOCS + "prompt-lifecycle.mdx#2-prompt-accepted",
            SESSION,
        ),
        Requirement(
            "TL-V2-STATE-001",
            C,
            "Foreground work is shown as state_update running before its output, and ends "
            "with one idle state_update carrying the stop reason (end_turn).",
            V2_DOCS + "prompt-lifecycle.mdx#session-states",
            SESSION,
        ),
        Requirement(
            "TL-V2-STATE-002",
            C,
            "session/cancel is confirmed by an idle state_update with stopReason cancelled.",
            V2_DOCS + "cancellation.mdx",
            SESSION,
        ),
        Requirement(
            "TL-V2-STATE-003",
            A,
            "While a permission request waits the state is requires_action, then running "
            "again once it is answered.",
            V2_DOCS + "prompt-lifecycle.mdx (SHOULD report requires_action)",
            SESSION,
        ),
        Requirement(
            "TL-V2-PROMPT-003",
            C,
            "A prompt sent while work runs contributes to that work: accepted at once, shown "
            "as its own user_message, and the work ends with one idle.",
            V2_DOCS + "prompt-lifecycle.mdx (a prompt starts or contributes to work)",
            SESSION,
        ),
        # -- v2: updates -------------------------------------------------------------------------
        Requirement(
            "TL-V2-UPDATE-001",
            M,
            "Every message chunk and message upsert carries a messageId.",
            V2_DOCS + "migration.mdx#message-ids-are-required",
        ),
        Requirement(
            "TL-V2-UPDATE-002",
            C,
            "Tool calls are created and patched by tool_call_update (no tool_call), a running "
            "call's growing output is appended with tool_call_content_chunk, plans are "
            "plan_update with a planId.",
            V2_DOCS + "tool-calls.mdx; " + V2_DOCS + "agent-plan.mdx",
            SESSION,
        ),
        Requirement(
            "TL-V2-TERMINAL-001",
            C,
            "A command the agent runs itself is an agent-owned terminal: the call's content "
            "references it ({type: terminal, terminalId}), terminal_update gives the command, "
            "its absolute cwd and an output snapshot, terminal_output_chunk appends "
            "independently base64-encoded bytes, and a terminal_update with exitStatus marks "
            "its end (with the exit code when known).",
            V2_DOCS + "tool-calls.mdx#display-only-terminals",
            SESSION,
        ),
        Requirement(
            "TL-V2-DIRS-001",
            C,
            "additionalDirectories on session/new, session/resume and the fork is honoured "
            "(the session's extra roots; session/list reports them) when "
            "capabilities.session.additionalDirectories is advertised.",
            V2_DOCS + "session-setup.mdx; schema/v2 SessionAdditionalDirectoriesCapabilities",
            SESSION + ".additionalDirectories",
        ),
        Requirement(
            "TL-USAGE-001",
            M,
            "usage_update.cost, on v1 and v2, is the session's cumulative cost {amount, "
            "currency: USD} when its model has a price (each answer at its own model's "
            "price, counted from the stored history so it survives a restart), and absent "
            "when no answer came from a priced model.",
            "schema/v1 and schema/v2 UsageUpdate, Cost",
        ),
        Requirement(
            "TL-V1-KEYS-001",
            M,
            "A v1 result carries no top-level key the v1 schema does not define except the "
            "ones docs/protocol.md names and explains: models (session/new), usage "
            "(session/prompt), parentSessionId and forkedAtMessageId (session/fork).",
            "schema/v1 (1.21) NewSessionResponse, PromptResponse, ForkSessionResponse (unstable)",
        ),
        Requirement(
            "TL-V2-AUTH-001",
            M,
            "An agent that needs no authentication advertises no authMethods (so a client "
            "never calls auth/login or auth/logout, which are not offered: -32601) and never "
            "answers a session request with auth_required.",
            V2_DOCS + "authentication.mdx#advertising-authentication",
        ),
        Requirement(
            "TL-V2-PERMISSION-001",
            C,
            "session/request_permission carries a title and a tool_call subject (no bare "
            "toolCall).",
            V2_DOCS + "migration.mdx#permission-requests",
            SESSION,
        ),
        Requirement(
            "TL-V2-ELICIT-001",
            M,
            "elicitation/create is sent only to a client that advertised "
            "capabilities.elicitation.form (form mode, scoped to the session and the asking "
            "tool call), and its answer is the tool's result; a client without it is never "
            "asked (the question ends the turn).",
            V2_DOCS + "elicitation.mdx",
        ),
        Requirement(
            "TL-V2-BATCH-001",
            M,
            "A JSON-RPC batch is accepted on stdio: its entries are served as if sent alone "
            "and answered in one array (no answer to a notification, a -32600 for an "
            "invalid entry); on v1 a batch is one -32600, as before.",
            V2_DOCS + "transports.mdx; " + V2_DOCS + "migration.mdx#transports",
        ),
        # -- v2: extensibility -------------------------------------------------------------------
        Requirement(
            "TL-V2-EXT-001",
            M,
            "Threadline's own methods are _threadline/… (fork, compact… answer as on v1); v1 "
            "names and removed v1 methods (session/load, session/set_mode, session/fork) "
            "answer -32601; an unknown _-prefixed request answers -32601.",
            V2_DOCS + "extensibility.mdx#extension-methods; " + V2_DOCS + "migration.mdx",
        ),
        Requirement(
            "TL-V2-EXT-002",
            A,
            "Threadline's _meta data is under _meta._threadline on v2 (no un-prefixed custom "
            "key at _meta's root).",
            V2_DOCS + "extensibility.mdx#the-_meta-field",
        ),
    )
}
