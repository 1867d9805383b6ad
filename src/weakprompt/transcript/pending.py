"""A tool result on its way into the transcript, open to a hook handler.

The handler may change the content (``edit_result``, ``summarize``, as
often as it likes) and then decide once (``approve`` or ``reject``). A
handler that returns without deciding approves: the result is committed
with whatever content it has then. After a decision nothing can change,
and a second decision raises :class:`ToolResultHookError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal, TypeAlias

from ..errors import ConfigurationError
from ..jsontypes import JSONValue
from ..messages import Usage
from .hooks import ToolResultHookError, ToolResultHooks
from .summarize import SummaryAttempt

if TYPE_CHECKING:
    from ..model import ProviderAdapter
    from .transcript import Transcript

__all__ = ["PendingStatus", "PendingToolResult"]

PendingStatus: TypeAlias = Literal["pending", "approved", "rejected"]


class PendingToolResult:
    """A tool result that a ``tool_result`` hook handler sees before it is committed.

    ``content`` and ``token_count`` describe what will be committed now;
    ``original_content`` is the tool's own output once anything changed it
    (``None`` while unchanged). ``triggered_by`` is recorded on the commit;
    a handler may set it to say why it acted.
    """

    def __init__(
        self,
        *,
        transcript: Transcript,
        hooks: ToolResultHooks,
        tool_call_id: str,
        tool_name: str,
        content: str,
        is_error: bool,
        metadata: Mapping[str, JSONValue] | None,
        triggered_by: str,
    ) -> None:
        self._transcript = transcript
        self._hooks = hooks
        self._tool_call_id = tool_call_id
        self._tool_name = tool_name
        self._content = content
        self._token_count = transcript.token_counter.count(content)
        self._original: str | None = None
        self._is_error = is_error
        self._metadata: Mapping[str, JSONValue] = MappingProxyType(dict(metadata or {}))
        self._status: PendingStatus = "pending"
        self._reason = ""
        self._edited = False
        self._attempts: list[SummaryAttempt] = []
        self.triggered_by = triggered_by

    def __repr__(self) -> str:
        return (
            f"PendingToolResult(tool_call_id={self._tool_call_id!r}, tool_name={self._tool_name!r}, "
            f"token_count={self._token_count}, status={self._status!r})"
        )

    # -- what the handler can read ------------------------------------------------------------------

    @property
    def tool_call_id(self) -> str:
        return self._tool_call_id

    @property
    def tool_name(self) -> str:
        return self._tool_name

    @property
    def content(self) -> str:
        """The text that will be committed (changed by ``edit_result`` / ``summarize``)."""
        return self._content

    @property
    def token_count(self) -> int:
        """Tokens of ``content``, by the transcript's counter."""
        return self._token_count

    @property
    def original_content(self) -> str | None:
        """The tool's own output, kept once ``content`` was changed; None while unchanged."""
        return self._original

    @property
    def is_error(self) -> bool:
        """True when the tool call failed (the text is an error message)."""
        return self._is_error

    @property
    def metadata(self) -> Mapping[str, JSONValue]:
        """The metadata the caller passed to ``tool_result()`` (read-only)."""
        return self._metadata

    @property
    def transcript(self) -> Transcript:
        """The transcript the result is for (to look at earlier results, say)."""
        return self._transcript

    @property
    def status(self) -> PendingStatus:
        return self._status

    @property
    def rejection_reason(self) -> str:
        return self._reason

    @property
    def edited(self) -> bool:
        """``edit_result`` changed the content at least once."""
        return self._edited

    @property
    def summarized(self) -> bool:
        """At least one ``summarize`` call replaced the content."""
        return any(a.ok for a in self._attempts)

    @property
    def summary_attempts(self) -> tuple[SummaryAttempt, ...]:
        """Every ``summarize`` call so far, successful or not, in order."""
        return tuple(self._attempts)

    @property
    def summarization_error(self) -> str | None:
        """Why the latest ``summarize`` call left the content as it was (None if it worked)."""
        return self._attempts[-1].error if self._attempts else None

    @property
    def usage(self) -> Usage:
        """What the summarizer calls made for this result cost."""
        return sum((a.usage for a in self._attempts), Usage())

    # -- what the handler can do --------------------------------------------------------------------

    def approve(self) -> None:
        """Commit the result with its current content (also what happens if the handler decides nothing)."""
        self._decide("approved")

    def reject(self, reason: str = "") -> None:
        """Commit nothing; ``tool_result()`` then raises :class:`ToolResultRejected`."""
        if not isinstance(reason, str):
            raise ToolResultHookError(f"reject(reason=) takes a string, got {type(reason).__name__}")
        self._decide("rejected")
        self._reason = reason

    def edit_result(self, new_content: str) -> None:
        """Replace the text to commit; the tool's output stays in ``original_content``."""
        self._require_pending("edit_result")
        if not isinstance(new_content, str):
            raise ToolResultHookError(
                f"edit_result() takes the new text as a string, got {type(new_content).__name__}"
            )
        self._replace(new_content)
        self._edited = True

    def summarize(
        self,
        *,
        instructions: str | None = None,
        target_tokens: int | None = None,
        summarizer: ProviderAdapter | None = None,
    ) -> bool:
        """Replace the content with a model-written summary of it; True when that worked.

        The summarizer is ``summarizer``, else ``transcript.hooks.summarizer``,
        else the running evaluation's adapter (ConfigurationError if none).
        A failed call, an empty answer, a summary no shorter than the text, or
        an exhausted budget leave the content unchanged; the reason is kept in
        ``summarization_error`` and recorded on the commit.
        """
        self._require_pending("summarize")
        if instructions is not None and not isinstance(instructions, str):
            raise ConfigurationError(
                f"instructions must be a string or None, got {type(instructions).__name__}"
            )
        adapter = self._hooks.resolve_summarizer(summarizer)
        attempt = self._hooks.summarize_text(
            adapter,
            tool_name=self._tool_name,
            content=self._content,
            instructions=instructions,
            target_tokens=target_tokens,
            token_counter=self._transcript.token_counter,
        )
        self._attempts.append(attempt)
        if attempt.text is None:
            return False
        self._replace(attempt.text)
        return True

    # -- machinery ----------------------------------------------------------------------------------

    def _replace(self, text: str) -> None:
        if self._original is None:
            self._original = self._content
        self._content = text
        self._token_count = self._transcript.token_counter.count(text)

    def _require_pending(self, action: str) -> None:
        if self._status != "pending":
            raise ToolResultHookError(
                f"{action}() on the result of call {self._tool_call_id!r} ({self._tool_name}), which was "
                f"already {self._status}; a handler decides once and cannot change the result afterwards"
            )

    def _decide(self, status: PendingStatus) -> None:
        self._require_pending("approve" if status == "approved" else "reject")
        self._status = status

    def settle(self) -> None:
        """Approve when the handler decided nothing (called by the hook machinery)."""
        if self._status == "pending":
            self._status = "approved"
