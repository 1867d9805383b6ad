"""The seam for changing what compile() returns without touching the chain.

``compile()`` first builds (or reuses, from its cache) the plain view: every
message as committed, edits applied. Each :class:`CompileTransform` in
:class:`CompileOptions` then gets that view and returns the context to send.
Transforms never alter stored data or the cache. This is where, for example,
old tool results can be swapped for slim references (a later
``load_tool_results=`` option is meant to be built as one).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import attrs

from ..errors import TranscriptError
from ..messages import Message
from ..model import CompiledContext
from ..tokens import TokenCounter
from .records import CommitInfo, message_tokens

__all__ = ["CompileOptions", "CompileTransform", "CompileView"]


@attrs.frozen
class CompileView:
    """A compiled context together with the commit behind each message.

    ``commits[i]`` produced ``context.messages[i]``; ``token_counter`` is the
    transcript's counter, for transforms that change message text.
    ``origins[i]``, when given, is the APPEND commit of that position (the
    same through any number of edits of it).
    """

    context: CompiledContext
    commits: tuple[CommitInfo, ...]
    token_counter: TokenCounter
    origins: tuple[str, ...] = ()

    def origin(self, index: int) -> str:
        """The APPEND commit behind position ``index`` (its own hash when origins are not known)."""
        if self.origins:
            return self.origins[index]
        commit = self.commits[index]
        return commit.edit_target or commit.hash

    def with_messages(self, messages: Sequence[Message]) -> CompileView:
        """Same positions, new messages; tokens are recounted for changed ones only."""
        if len(messages) != len(self.context.messages):
            raise TranscriptError(
                f"a compile transform must keep one message per position: got {len(messages)}, "
                f"expected {len(self.context.messages)}"
            )
        total = self.context.token_count
        for old, new, commit in zip(self.context.messages, messages, self.commits, strict=True):
            if new is not old:
                old_tokens = (
                    commit.token_count if old is commit.content else message_tokens(old, self.token_counter)
                )
                total += message_tokens(new, self.token_counter) - old_tokens
        context = attrs.evolve(self.context, messages=tuple(messages), token_count=total)
        return attrs.evolve(self, context=context)


class CompileTransform(Protocol):
    """Turns one compile view into another (e.g. shrinking old tool results)."""

    def __call__(self, view: CompileView) -> CompileView: ...


@attrs.frozen
class CompileOptions:
    """Keyword-only knobs for ``Transcript.compile``; transforms run in order.

    ``compacted=False`` shows every original, as if no compaction had been
    committed (``recall_history`` reads that view).
    """

    transforms: tuple[CompileTransform, ...] = ()
    compacted: bool = True
