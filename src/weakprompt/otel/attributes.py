"""The names weakprompt's spans use: GenAI semantic conventions, plus a few of our own.

The ``gen_ai.*`` names follow the OpenTelemetry GenAI conventions
(development status); the ``weakprompt.*`` names cover what they do not
say: why a model call was made, and the rollbacks and handles of a run.
"""

from __future__ import annotations

__all__ = [
    "AGENT_NAME",
    "CACHE_CREATION_INPUT_TOKENS",
    "CACHE_READ_INPUT_TOKENS",
    "CONTENT_ATTRIBUTES",
    "CONVERSATION_ID",
    "ERROR_TYPE",
    "EVENT_GUARDRAIL_TRIPPED",
    "EVENT_CACHE_BUSTED",
    "EVENT_COMPACTED",
    "EVENT_HANDLE",
    "EVENT_RETRY",
    "EVENT_RUN_ROLLED_BACK",
    "EVENT_TOOL_ROLLED_BACK",
    "FINISH_REASONS",
    "GUARDRAIL_NAME",
    "GUARDRAIL_POINT",
    "GUARDRAIL_REASON",
    "INPUT_MESSAGES",
    "INPUT_TOKENS",
    "OPERATION",
    "OUTPUT_MESSAGES",
    "OUTPUT_TOKENS",
    "PROVIDER",
    "PURPOSE",
    "REQUEST_MAX_TOKENS",
    "RETRY_ATTEMPT",
    "RETRY_DELAY",
    "REQUEST_MODEL",
    "RESPONSE_MODEL",
    "TOOL_ARGUMENTS",
    "TOOL_CALL_ID",
    "TOOL_NAME",
    "TOOL_RESULT",
    "TOOL_TYPE",
    "TURNS",
]

OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
AGENT_NAME = "gen_ai.agent.name"
CONVERSATION_ID = "gen_ai.conversation.id"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
RESPONSE_MODEL = "gen_ai.response.model"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
CACHE_READ_INPUT_TOKENS = "gen_ai.usage.cache_read.input_tokens"
"""Input tokens the provider served from its prompt cache (a part of ``gen_ai.usage.input_tokens``)."""
CACHE_CREATION_INPUT_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
"""Input tokens the provider wrote to its prompt cache (a part of ``gen_ai.usage.input_tokens``)."""
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
ERROR_TYPE = "error.type"

# content: recorded only with capture_content=True, always redacted
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"
CONTENT_ATTRIBUTES = frozenset({INPUT_MESSAGES, OUTPUT_MESSAGES, TOOL_ARGUMENTS, TOOL_RESULT})
"""Every attribute that holds content: absent unless content capture is on."""

PURPOSE = "weakprompt.model_call.purpose"
"""On a ``chat`` span made for the run's pipeline: ``summarization`` or ``extraction``."""
TURNS = "weakprompt.turns"
"""On the ``invoke_agent`` span: the model calls the run made."""

EVENT_TOOL_ROLLED_BACK = "weakprompt.tool.rolled_back"
"""Span event: a failed tool call's state changes were undone."""
EVENT_RUN_ROLLED_BACK = "weakprompt.run.rolled_back"
"""Span event: a failed run put the session back as of its last stored turn."""
EVENT_HANDLE = "weakprompt.tool_result.handle"
"""Span event: the result was stored behind a handle (attributes: handle, reason, size)."""
EVENT_GUARDRAIL_TRIPPED = "weakprompt.guardrail.tripped"
"""Span event on the ``invoke_agent`` span (and a tool call's): a guardrail stopped the run
(attributes: point, guardrail, reason, and the call id and tool at the tool points)."""
GUARDRAIL_POINT = "weakprompt.guardrail.point"
GUARDRAIL_NAME = "weakprompt.guardrail.name"
GUARDRAIL_REASON = "weakprompt.guardrail.reason"
EVENT_RETRY = "weakprompt.model_call.retry"
"""Span event on a ``chat`` span: the adapter retried the request (attributes: attempt, error type, delay)."""
EVENT_CACHE_BUSTED = "weakprompt.cache.busted"
"""Span event on a ``chat`` span: the request's prefix differs from the last one's (attributes:
``weakprompt.cache.*``, what differs first and why; see ``specs/CACHING.md``)."""
EVENT_COMPACTED = "weakprompt.compaction.compacted"
"""Span event on the ``invoke_agent`` span: a tier compacted the history before a request
(attributes: ``weakprompt.compaction.*``: tier, commit, covered count, tokens before and after,
window; see ``specs/COMPACTION.md``)."""
RETRY_ATTEMPT = "weakprompt.retry.attempt"
RETRY_DELAY = "weakprompt.retry.delay_seconds"
