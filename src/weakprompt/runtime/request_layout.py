"""The request's layout by volatility: the stable prefix, then the conversation, then the turn text.

The system message holds the stable and session sections only (committed
once, edited only when that text changes), so it and every earlier message
stay byte-identical from one request to the next. The turn sections'
text is rendered again for every request and sent as one trailing user
message marked :data:`~weakprompt.model.TURN_CONTEXT_KEY`; it is never a
commit (the assistant commit records it under :data:`TURN_CONTEXT_KEY`), so
the next request drops it and the prefix before it is unchanged
(``specs/CACHING.md``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from ..messages import Message
from ..model import TURN_CONTEXT_KEY, CacheHints, CompiledContext

if TYPE_CHECKING:
    from ..prompt import Prompt, RenderedPrompt
    from ..session import Session

__all__ = ["TURN_CONTEXT_KEY", "laid_out", "turn_context_message"]

_OPEN = "<turn-context>\n"  # short: it is evaluated again on every request
_CLOSE = "\n</turn-context>"


def turn_context_message(text: str) -> Message:
    """The trailing user message that carries the turn sections' text, clearly delimited."""
    return Message("user", f"{_OPEN}{text}{_CLOSE}", metadata={TURN_CONTEXT_KEY: True})


def laid_out(
    context: CompiledContext, prompt: Prompt[Any], rendered: RenderedPrompt[Any], session: Session
) -> tuple[CompiledContext, CacheHints, str]:
    """The context to send, its cache hints and the turn text sent with it ("" when none)."""
    first = context.messages[0] if context.messages else None
    own_system = first is not None and first.role == "system" and first.content == rendered.text
    hints = CacheHints(rendered.cache_key, rendered.stable_chars if own_system else None)
    if not prompt.template.has_turn_sections:
        return context, hints, ""
    turn_text = prompt.render(session).turn_text  # turn text reads the state as of this request
    if not turn_text:
        return context, hints, ""
    messages = (*context.messages, turn_context_message(turn_text))
    return attrs.evolve(context, messages=messages), hints, turn_text
