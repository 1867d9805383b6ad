"""What a durable evaluation leaves as its workflow's result."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from ..jsontypes import JSONValue
from ..runtime.approval import PausedRun
from ..serde import dump

if TYPE_CHECKING:
    from ..runtime.response import PromptResponse

__all__ = ["DurableResult"]


@attrs.frozen(kw_only=True)
class DurableResult:
    """The end of a durable evaluation, as DBOS stores it (plain data: it is read in other processes).

    ``output`` is the prompt's typed output dumped to JSON (``None`` for a
    prompt without an output type, or a paused run); ``paused`` is set when
    the run waits for decisions (:meth:`DurableApp.decide` continues it).
    The conversation itself is in the transcript of ``session_id``.
    """

    session_id: str
    text: str
    output: JSONValue
    head: str | None
    turns: int
    paused: PausedRun | None = None

    @classmethod
    def from_response(cls, response: PromptResponse[Any]) -> DurableResult:
        return cls(
            session_id=response.session_id,
            text=response.text,
            output=None if response.output is None else dump(response.output),
            head=response.head,
            turns=response.turns,
            paused=response.paused,
        )
