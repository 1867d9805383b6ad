"""What one evaluation hands back to its caller."""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, TypeVar

import attrs

from ..messages import FinishReason, Message, Usage
from .verdict import OK, RunVerdict

if TYPE_CHECKING:
    from ..prompt import RenderedPrompt
    from ..session import Session
    from .approval import PausedRun
    from .dispatcher import ToolExecution

__all__ = ["PromptResponse"]

OutputT = TypeVar("OutputT")


@attrs.frozen(kw_only=True, eq=False)
class PromptResponse(Generic[OutputT]):
    """The final answer of an evaluation and how it was reached.

    ``output`` is the parsed structured answer, typed ``T`` for a prompt with
    ``output_type=T``; a prompt without an output type is a ``Prompt[None]``,
    so its ``output`` is ``None`` (an answer that does not parse raises
    instead of giving ``None``). ``text`` is always the model's last reply.
    ``head`` is the transcript's last commit hash, so the whole conversation
    can be read back from the store with ``session_id``.
    """

    text: str
    output: OutputT
    usage: Usage
    turns: int
    """Model calls made by this evaluation (final answer included)."""
    head: str | None
    session_id: str
    transcript_id: str
    """Session id of the transcript the conversation was recorded in (usually ``session_id``)."""
    tool_executions: tuple[ToolExecution, ...]
    """Every tool call the dispatcher ran, in order (``open_sections`` requests excluded)."""
    rendered: RenderedPrompt[OutputT]
    """The last render the model saw (after any section expansions)."""
    finish_reason: FinishReason = "stop"
    expanded_sections: tuple[str, ...] = ()
    """Summarized sections the model opened during the evaluation, in order."""
    output_retries_used: int = 0
    paused: PausedRun | None = None
    """Set when the run stopped for decisions (``specs/APPROVAL.md``): ``output`` is ``None`` then,
    and :func:`~weakprompt.runtime.resume.resume_sync` continues the run."""
    session: Session | None = None
    """The :class:`~weakprompt.session.Session` the run used, in the state it ended in: the one
    given, or for a :func:`~weakprompt.runtime.resume.resume_sync` without ``session=`` the one made
    for it, holding the state restored from the pause (``None`` only for a response built by hand)."""
    messages: tuple[Message, ...] = ()
    """The whole conversation as stored when the run ended, without the system message: what a
    stateless caller passes as the next run's ``message_history``."""
    verdict: RunVerdict = OK
    """Whether every call of a ``required`` tool succeeded (its last call, after any retry); a run
    whose required tool failed has ``verdict.ok`` false, whatever its answer says."""
    new_messages: tuple[Message, ...] = ()
    """The messages of ``messages`` this run stored: its input, the replies, tool results and
    corrective turns (not the history it was given)."""

    @property
    def tool_calls(self) -> int:
        """How many tool calls were executed."""
        return len(self.tool_executions)

    @property
    def failed_tool_calls(self) -> int:
        """How many of them returned a failed result."""
        return sum(1 for execution in self.tool_executions if not execution.success)
