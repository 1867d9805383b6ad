"""Who must agree before a tool runs, and how a tool says its result comes later.

A tool (or a section, for all of its tools) carries an
:data:`ApprovalPolicy`: ``True`` when every call waits for a person, or a
predicate over the validated params and the :class:`ToolContext` when only
some calls do (``lambda p, ctx: p.path.startswith("/")``). The evaluation
loop pauses the run on such a call (``specs/APPROVAL.md``), unless the run
has an inline approver (``approve=``, ``runtime.InlineApprover``) to answer
it there: the policy says *whether* a call waits, the approver *what* it gets.

A handler whose result will come from outside (a webhook, a queue, a person)
raises or returns :class:`CallDeferred`; the run pauses the same way and the
result is supplied when it is resumed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias

from ..errors import WeakpromptError
from .context import ToolContext

__all__ = ["ApprovalPolicy", "CallDeferred", "needs_approval"]

ApprovalPolicy: TypeAlias = bool | Callable[[Any, ToolContext], bool]
"""``True`` / ``False``, or a predicate ``(params, context) -> bool`` deciding per call."""


class CallDeferred(WeakpromptError):
    """Raised (or returned) by a handler whose result will be supplied later.

    ``note`` tells whoever resumes the run what the call is waiting for.
    The call's state changes are rolled back, like a failed call's: the
    result supplied on resume is what the model sees.
    """

    def __init__(self, note: str = "") -> None:
        super().__init__(note or "the result of this call will be supplied later")
        self.note = note


def needs_approval(policy: ApprovalPolicy, params: object, context: ToolContext) -> bool:
    """Whether a call with ``params`` must wait for a decision under ``policy``.

    A predicate that raises counts as "needs approval": when in doubt, ask.
    """
    if isinstance(policy, bool):
        return policy
    try:
        return bool(policy(params, context))
    except Exception:
        return True
