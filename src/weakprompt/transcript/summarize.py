"""Asking a model to condense one tool result.

The summarizer is any :class:`weakprompt.model.ProviderAdapter`: the model
contract sits in the core layer, so the transcript is handed a model (by
the caller, or by a running evaluation) and never imports the runtime.

A failed attempt never raises: it comes back as a :class:`SummaryAttempt`
with ``error`` set, so the caller can keep the original text and say why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from ..messages import Message, Usage
from ..model import CompiledContext, ModelRequest, ProviderAdapter

if TYPE_CHECKING:
    from ..tokens import TokenCounter

__all__ = [
    "TOOL_SUMMARY_SYSTEM_PROMPT",
    "SummaryAttempt",
    "build_summary_request_text",
    "check_target_tokens",
    "request_summary",
    "summarizer_label",
]

TOOL_SUMMARY_SYSTEM_PROMPT = """\
You shorten the raw output of a tool so that an AI agent can continue its \
work from the short version alone; the full output will not be shown to it.

Keep everything the agent could need for its next step: names, identifiers, \
file paths with line numbers, numbers and units, dates, error messages and \
their causes, and any part that answers the request that produced the output. \
Keep exact values exact: copy them, do not round or paraphrase them.

Leave out repetition, boilerplate, decoration and lines that carry nothing new. \
If many lines share one pattern, say so once and give the count.

Write only what the output contains. Add no advice, no commentary and no \
introduction, and do not say that this is a summary. If the output is empty \
or says nothing useful, reply with one short sentence saying that."""
"""System prompt of every tool-result summary (what to keep, what to drop, no commentary)."""

_OUTPUT_OPEN = "<tool_output>"
_OUTPUT_CLOSE = "</tool_output>"


@attrs.frozen
class SummaryAttempt:
    """The outcome of one summary request: ``text`` on success, ``error`` on failure.

    ``usage`` is what the summarizer reported (at least one model call when
    it answered), ready to be charged to the evaluation's budget.
    """

    text: str | None
    error: str | None
    usage: Usage
    summarizer: str

    @property
    def ok(self) -> bool:
        return self.text is not None


def summarizer_label(adapter: ProviderAdapter) -> str:
    """``provider:model``, recorded as provenance next to each summary."""
    return f"{adapter.name}:{adapter.model}"


def build_summary_request_text(
    tool_name: str, content: str, *, instructions: str | None, target_tokens: int | None
) -> str:
    """The user message: which tool, the caller's guidance, the length goal, then the output."""
    lines = [f"Tool: {tool_name}"]
    if instructions:
        lines.append(f"What to keep: {instructions.strip()}")
    if target_tokens is not None:
        lines.append(f"Length: at most about {target_tokens} tokens.")
    lines += ["", "Output to shorten:", _OUTPUT_OPEN, content, _OUTPUT_CLOSE]
    return "\n".join(lines)


def check_target_tokens(target_tokens: int | None) -> None:
    """ValueError unless ``target_tokens`` is None or a positive int."""
    if target_tokens is None:
        return
    if isinstance(target_tokens, bool) or not isinstance(target_tokens, int) or target_tokens < 1:
        raise ValueError(f"target_tokens must be a positive int or None, got {target_tokens!r}")


def _output_cap(target_tokens: int | None) -> int | None:
    """Room for the answer: twice the goal (a goal, not a hard cut), never below 64 tokens."""
    return None if target_tokens is None else max(64, 2 * target_tokens)


def request_summary(
    adapter: ProviderAdapter,
    *,
    tool_name: str,
    content: str,
    instructions: str | None = None,
    target_tokens: int | None = None,
    token_counter: TokenCounter,
) -> SummaryAttempt:
    """Ask ``adapter`` for a summary of ``content``; any failure is returned, not raised.

    Failures: the adapter raised, or answered with no text (tool calls alone
    count as no text). ``ValueError`` for a bad ``target_tokens`` is raised,
    since that is the caller's mistake, not the model's.
    """
    check_target_tokens(target_tokens)
    user = Message(
        "user",
        build_summary_request_text(
            tool_name, content, instructions=instructions, target_tokens=target_tokens
        ),
    )
    return ask_for_summary(
        adapter, TOOL_SUMMARY_SYSTEM_PROMPT, user.content, _output_cap(target_tokens), token_counter
    )


def ask_for_summary(
    adapter: ProviderAdapter,
    system_prompt: str,
    text: str,
    max_output_tokens: int | None,
    token_counter: TokenCounter,
) -> SummaryAttempt:
    """One summarizing call: ``system_prompt`` and ``text`` in, the answer or why there is none out.

    Failures (the adapter raised, or answered with no text; tool calls alone
    count as no text) come back in the attempt, never raised: every caller
    falls back to something else.
    """
    label = summarizer_label(adapter)
    system, user = Message("system", system_prompt), Message("user", text)
    context = CompiledContext(
        messages=(system, user),
        token_count=token_counter.count(system.content) + token_counter.count(user.content),
    )
    request = ModelRequest(context=context, tool_choice="none", max_output_tokens=max_output_tokens)
    try:
        reply = adapter.complete(request)
    except Exception as exc:
        return SummaryAttempt(
            text=None,
            error=f"summarizer {label} raised {type(exc).__name__}: {exc}",
            usage=Usage(),
            summarizer=label,
        )
    usage = reply.usage if reply.usage.model_calls else reply.usage + Usage(model_calls=1)
    answer = reply.text.strip()
    if not answer:
        return SummaryAttempt(
            text=None, error=f"summarizer {label} returned an empty answer", usage=usage, summarizer=label
        )
    return SummaryAttempt(text=answer, error=None, usage=usage, summarizer=label)
