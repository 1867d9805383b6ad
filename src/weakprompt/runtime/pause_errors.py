"""The exceptions of pausing: a tool call waits for a decision; a resume is refused (specs/APPROVAL.md).

Apart from :mod:`~weakprompt.runtime.approval` because every run needs them
(the dispatcher raises ``ToolCallPending`` and the loop catches it) while the
pause records, tokens and decisions are needed only once a run pauses or
resumes: importing the loop does not build their classes.
"""

from __future__ import annotations

from ..errors import WeakpromptError
from ..events import PendingKind
from ..messages import ToolCall

__all__ = ["PendingKind", "ResumeError", "ToolCallPending"]


class ResumeError(WeakpromptError):
    """A resume was refused (a decision does not match, the run was resumed already...): nothing written."""


class ToolCallPending(WeakpromptError):
    """Control flow from the dispatcher to the loop: this call waits for a decision.

    Raised by :meth:`ToolDispatcher.execute` when a tool needs approval or
    its handler deferred; the call's ``ToolInvoked`` is published once it is decided.
    """

    def __init__(self, call: ToolCall, kind: PendingKind, note: str = "") -> None:
        super().__init__(f"tool call {call.id!r} ({call.name}) waits for {kind}")
        self.call = call
        self.kind: PendingKind = kind
        self.note = note
