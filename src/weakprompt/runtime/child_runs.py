"""What a run hands the agents it runs as tools: its store, its place in the tree, its usage and stream.

An agent used as a tool (``weakprompt.agent.as_tool``) runs as a run of its
own inside the handler of one of its parent's calls. It needs what the
handler's :class:`~weakprompt.tools.ToolContext` does not carry: the store
the parent writes to, the parent's session id (its own is derived from it),
the path from the root run, the parent's usage counter and event listener,
and its inline approver. Each run sets its :class:`RunFrame` for the
code it runs (a context variable, so concurrent calls each see their run's);
the handler reads it with :func:`current_frame` (``specs/SUBAGENTS.md``).
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, cast

import attrs

from ..budget import Budget, BudgetTracker
from ..events import ChildEvent
from ..jsontypes import JSONObject
from ..usage import Usage

if TYPE_CHECKING:
    from ..messages import ToolCall
    from ..store import Store
    from .approval import InlineApprover
    from .run_events import EventCallback

__all__ = [
    "CHILD_SESSION_KEY",
    "RunFrame",
    "SubtreeTracker",
    "child_link",
    "child_session_id",
    "current_frame",
    "current_path",
    "entered",
    "forward_event",
    "frame_of",
    "latest_child_session",
    "prelinked",
    "starting_child",
]

CHILD_SESSION_KEY = "child_session"
"""Commit metadata of a parent's tool result: the session id of the child run the call made."""

_FRAME: contextvars.ContextVar[RunFrame | None] = contextvars.ContextVar("weakprompt_run_frame", default=None)
# The path of the run about to start: set by the handler that starts a child, read by its run's scope.
_PATH: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("weakprompt_run_path", default=())
# Child sessions a resumed run's supplied calls ran, by call id: set by the resume, read by its scope.
_PRELINKED: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "weakprompt_prelinked", default=None
)


@attrs.frozen(eq=False)
class RunFrame:
    """One running run, as the agents it calls see it."""

    store: Store
    session_id: str
    path: tuple[str, ...]
    """The steps from the root run to this one (``"tool:call_id"`` each); empty for a root."""
    add_usage: Callable[[Usage], None]
    """Counts a child's usage in this run's (its response's ``usage``)."""
    on_event: EventCallback | None
    approve: InlineApprover | None
    budget: BudgetTracker | None = None
    """The run's budget tracker: a check run on its behalf (an agent guardrail) charges it."""
    links: dict[str, str] = attrs.field(factory=dict[str, str])
    """Child session ids by the call id that made them, for the call's result commit."""
    lock: threading.Lock = attrs.field(factory=threading.Lock)

    def link(self, call_id: str, child_session: str) -> None:
        with self.lock:
            self.links[call_id] = child_session

    def linked(self, call_id: str) -> str | None:
        with self.lock:
            return self.links.pop(call_id, None)


def frame_of(
    store: Store,
    session_id: str,
    add_usage: Callable[[Usage], None],
    on_event: EventCallback | None,
    approve: InlineApprover | None,
    *,
    budget: BudgetTracker | None = None,
) -> RunFrame:
    """The frame of a run starting here: a root, or the child whose handler set its path."""
    links = dict(_PRELINKED.get() or {})
    return RunFrame(store, session_id, _PATH.get(), add_usage, on_event, approve, budget, links)


@contextlib.contextmanager
def starting_child(path: tuple[str, ...]) -> Generator[None]:
    """Runs started inside are the child at ``path`` (its handler wraps its run in this)."""
    token = _PATH.set(path)
    try:
        yield
    finally:
        _PATH.reset(token)


@contextlib.contextmanager
def prelinked(links: dict[str, str]) -> Generator[None]:
    """The run resumed inside links these calls' results to their child sessions (supplied on resume)."""
    token = _PRELINKED.set(links)
    try:
        yield
    finally:
        _PRELINKED.reset(token)


def current_path() -> tuple[str, ...]:
    """The path of a run started here (empty for a root run)."""
    return _PATH.get()


def current_frame() -> RunFrame | None:
    """The frame of the run whose code is running here (``None`` outside a run)."""
    return _FRAME.get()


@contextlib.contextmanager
def entered(frame: RunFrame) -> Generator[None]:
    """Make ``frame`` the current run's for the code run inside (put the previous back after)."""
    token = _FRAME.set(frame)
    try:
        yield
    finally:
        _FRAME.reset(token)


def child_link(call: ToolCall) -> JSONObject:
    """The metadata linking the result commit of ``call`` to the child session it ran (or nothing)."""
    frame = _FRAME.get()
    linked = None if frame is None else frame.linked(call.id)
    return {} if linked is None else {CHILD_SESSION_KEY: linked}


def child_session_id(parent_session: str, tool: str, call_id: str, taken: Callable[[str], bool]) -> str:
    """The session id of the child run of ``call_id``: derived from the parent's, the tool and the call.

    ``parent/tool:call_id``; a model that reuses call ids from turn to turn
    (``call_0``) gets ``#2``, ``#3`` ... for the later calls, so a new call
    never continues an earlier call's conversation (``taken`` says which
    ids already hold a session).
    """
    base = f"{parent_session}/{tool}:{call_id}"
    if not taken(base):
        return base
    number = 2
    while taken(f"{base}#{number}"):
        number += 1
    return f"{base}#{number}"


def latest_child_session(parent_session: str, tool: str, call_id: str, taken: Callable[[str], bool]) -> str:
    """The last session :func:`child_session_id` made for ``call_id`` (the one a pause waits on)."""
    base = f"{parent_session}/{tool}:{call_id}"
    last, number = base, 2
    while taken(f"{base}#{number}"):
        last, number = f"{base}#{number}", number + 1
    return last


class SubtreeTracker(BudgetTracker):
    """A child's budget: counts the child's subtree, and everything it counts counts above it too.

    ``check()`` refuses when this subtree's budget or any budget above is
    exceeded; :meth:`own_exceeded` tells the two apart (a child's own budget
    fails that call; a budget above stops the run that set it).
    """

    def __init__(self, budget: Budget | None, parent: BudgetTracker | None) -> None:
        super().__init__(budget if budget is not None else Budget())
        self._parent = parent

    def record(self, usage: Usage) -> None:
        super().record(usage)
        if self._parent is not None:
            self._parent.record(usage)

    def take_tool_calls(self, count: int) -> None:
        super().take_tool_calls(count)
        if self._parent is not None:
            self._parent.take_tool_calls(count)

    def exceeded(self) -> tuple[str, ...]:
        above = () if self._parent is None else self._parent.exceeded()
        return super().exceeded() + above

    def own_exceeded(self) -> tuple[str, ...]:
        """What this subtree's own budget exceeds (empty when only a budget above is exceeded)."""
        return super().exceeded()

    def remaining_tokens(self) -> int | None:
        mine = super().remaining_tokens()
        above = None if self._parent is None else self._parent.remaining_tokens()
        if mine is None:
            return above
        return mine if above is None else min(mine, above)


def forward_event(frame: RunFrame, step: str) -> EventCallback | None:
    """The child's ``on_event``: each of its events reaches the parent's listener tagged with its path.

    An event a grandchild already tagged passes through as it is (its path is whole).
    """
    listener = frame.on_event
    if listener is None:
        return None
    path = (*frame.path, step)

    def forward(event: object) -> object:
        tagged = event if isinstance(event, ChildEvent) else ChildEvent(path=path, event=event)
        return listener(cast("Any", tagged))

    return forward
