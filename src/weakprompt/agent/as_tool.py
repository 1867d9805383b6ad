"""An ``Agent`` as a tool of another: ``child.as_tool(name=..., description=...)`` (``specs/SUBAGENTS.md``).

The tool's handler runs the child as a run of its own, through the one loop:
in its own session of the parent's store (its id derived from the parent's
session and the call id), charging a budget of its subtree that counts in
every budget above, its events streamed to the parent's listener tagged with
their path, its usage counted in the parent's. What the child comes to is
the call's result, through the one dispatcher: a child that fails is a
failed result the parent's model reads (and the parent's state is rolled
back); a child that pauses for decisions makes the call wait (a deferred
call), and the parent pauses with it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Generic, TypeVar, cast

import attrs

from ..budget import Budget
from ..errors import ConfigurationError, DeadlineExceededError, WeakpromptError
from ..runtime.child_runs import (
    SubtreeTracker,
    child_session_id,
    current_frame,
    forward_event,
    starting_child,
)
from ..safetext import describe_exception
from ..serde import Meta
from ..store.commit_rows import session_head
from ..tools import CallDeferred, Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from ..runtime import PromptResponse
    from ..store import Store
    from .agent import Agent
    from .options import RunOverrides

__all__ = ["AgentCall", "AgentInput", "agent_tool", "result_text", "session_taken"]

OutputT = TypeVar("OutputT")


@attrs.frozen
class AgentInput:
    """The arguments of an agent tool whose agent takes no params: the task, in words."""

    input: Annotated[str, Meta(description="The task for the agent, with everything it needs to know.")]


def session_taken(store: Store) -> Callable[[str], bool]:
    """Whether a session id already holds commits in ``store``."""

    def taken(session_id: str) -> bool:
        with store.read() as conn:
            return session_head(conn, session_id) is not None

    return taken


@attrs.frozen(eq=False)
class AgentCall(Generic[OutputT]):
    """The handler of an agent tool: runs ``agent`` as the child run of one call.

    Kept as an object (not a closure) so that resuming a paused parent can
    find the agent behind a waiting call (``agent.nested``).
    """

    agent: Agent[OutputT]
    name: str
    budget: Budget | None

    async def __call__(self, params: object, /, *, context: ToolContext) -> ToolResult[object]:
        frame = current_frame()
        if frame is None:
            raise ConfigurationError(
                f"agent tool {self.name!r}: an agent runs as a tool only inside a run (its parent's)"
            )
        call_id = context.call_id or "call"
        store = frame.store
        session_id = child_session_id(frame.session_id, self.name, call_id, session_taken(store))
        frame.link(call_id, session_id)
        # The subtree's own budget: as_tool's, else the agent's own default (a Budget; a shared tracker
        # of the agent's is not the subtree's).
        own_default = self.agent.budget if isinstance(self.agent.budget, Budget) else None
        tracker = SubtreeTracker(self.budget or own_default, context.budget_tracker)
        step = f"{self.name}:{call_id}"
        overrides: RunOverrides = {"store": store, "budget": tracker}
        if context.deadline is not None:
            overrides["deadline"] = context.deadline
        forward = forward_event(frame, step)
        if forward is not None:
            overrides["on_event"] = forward
        if self.agent.approve is None and frame.approve is not None:
            overrides["approve"] = frame.approve
        text, params_given = (params.input, ()) if isinstance(params, AgentInput) else (None, (params,))
        try:
            with starting_child((*frame.path, step)):
                response = await self.agent.run(text, params=params_given, session=session_id, **overrides)
        except WeakpromptError as exc:
            own = tracker.own_exceeded()
            if own:  # this subtree's budget: the call fails, the parent's model reads why
                spent = "; ".join(own)
                return ToolResult.error(f"Agent {self.name!r} stopped: its budget ran out ({spent}).")
            if isinstance(exc, DeadlineExceededError) or tracker.exceeded():
                raise  # a deadline or a budget above this subtree: the run that set it stops
            return ToolResult.error(f"Agent {self.name!r} failed: {describe_exception(exc)}")
        finally:
            frame.add_usage(tracker.usage)  # spent whatever came of it: the parent's usage counts it
        if response.paused is not None:
            raise CallDeferred(f"agent {self.name!r} waits for decisions in session {session_id!r}")
        return result_of(response)


def result_of(response: PromptResponse[OutputT]) -> ToolResult[object]:
    """A finished child's answer as its call's result: the typed output, or the text without one."""
    if response.output is None:
        # the model reads the answer as it was written, not as a JSON string
        return ToolResult(message=response.text, value=response.text, exclude_value_from_context=True)
    return ToolResult.ok(response.output)


def result_text(response: PromptResponse[OutputT]) -> str:
    """What the parent's model reads of a finished child's answer (a supplied result, on resume)."""
    return result_of(response).render()


def agent_tool(
    agent: Agent[OutputT], *, name: str, description: str, budget: Budget | None = None
) -> Tool[object, object]:
    """``Agent.as_tool``: the tool, its arguments the agent's params (or :class:`AgentInput`)."""
    params_types = agent.template.params_types
    if len(params_types) > 1:
        names = ", ".join(sorted(t.__qualname__ for t in params_types))
        raise ConfigurationError(
            f"Agent.as_tool({name!r}): the agent's prompt takes several params types ({names}); a tool "
            "takes one arguments object (give the agent one params type, or bind the others first)"
        )
    params_type: type[object] = next(iter(params_types)) if params_types else AgentInput
    output = agent.template.output_type
    handler = cast("AgentCall[object]", AgentCall(agent, name, budget))
    return Tool[object, object](
        name, description, handler, params_type=params_type, result_type=str if output is None else output
    )
