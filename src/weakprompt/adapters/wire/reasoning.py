"""The replay-to-issuer rule: which of a message's reasoning parts go back to which provider.

A provider wants its own reasoning back verbatim (Anthropic's signed
thinking blocks, OpenAI's encrypted reasoning items, Gemini's thought
signatures) and refuses, or cannot read, anyone else's. So every wire
module asks :func:`split_reasoning` for a message's reasoning: the parts
its provider issued, to send as they came, and the rest, which are dropped
or, with ``foreign_reasoning="text"``, sent as plain text the next model
can read (never as reasoning: only the issuer can verify that).
"""

from __future__ import annotations

from typing import Literal, TypeAlias

import attrs

from ...errors import ConfigurationError
from ...messages import Message
from ...parts import ReasoningPart

__all__ = [
    "FOREIGN_REASONING",
    "ForeignReasoning",
    "SplitReasoning",
    "check_foreign_reasoning",
    "issuer_of",
    "provider_of",
    "split_reasoning",
]

ForeignReasoning: TypeAlias = Literal["drop", "text"]
"""What an adapter does with reasoning another provider wrote: leave it out, or send its text as text."""

FOREIGN_REASONING: tuple[str, ...] = ("drop", "text")


def check_foreign_reasoning(adapter: str, value: object) -> ForeignReasoning:
    """An adapter's ``foreign_reasoning=`` option, refused by name when it is not one of the two."""
    if value == "drop":
        return "drop"
    if value == "text":
        return "text"
    raise ConfigurationError(f"{adapter}: foreign_reasoning must be 'drop' or 'text', got {value!r}")


def issuer_of(provider: str, model: str) -> str:
    """The ``issuer`` a provider's adapter writes on its reasoning parts: ``provider:model``."""
    return f"{provider}:{model}"


def provider_of(issuer: str) -> str:
    """The provider half of an issuer (``"anthropic:claude-x"`` -> ``"anthropic"``)."""
    return issuer.partition(":")[0]


@attrs.frozen
class SplitReasoning:
    """A message's reasoning as one provider sees it: its own parts, and the text of the others."""

    own: tuple[ReasoningPart, ...] = ()
    foreign_text: str = ""


def split_reasoning(message: Message, provider: str, foreign: ForeignReasoning = "drop") -> SplitReasoning:
    """The reasoning of an assistant ``message`` that ``provider`` takes back, in order.

    Only assistant messages replay reasoning. Parts issued by another
    provider are dropped, or, with ``foreign="text"``, their readable text
    (redacted or empty ones have none) is returned joined by blank lines.
    """
    if message.role != "assistant":
        return SplitReasoning()
    own: list[ReasoningPart] = []
    texts: list[str] = []
    for part in message.parts:
        if not isinstance(part, ReasoningPart):
            continue
        if provider_of(part.issuer) == provider:
            own.append(part)
        elif foreign == "text" and part.text and not part.redacted:
            texts.append(part.text)
    return SplitReasoning(tuple(own), "\n\n".join(texts))
