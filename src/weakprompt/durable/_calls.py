"""Model and tool calls as DBOS steps, replayed by what they are rather than by position.

DBOS matches a workflow's steps by position: the n-th step a recovered
workflow calls gets the n-th recorded output. A recovered evaluation does
not call the same steps again, though: it continues from the transcript
(``runtime.resume``), so the calls of turns already stored are not made.
So every call is recorded by the one step function, :func:`_record`, whose
output is an :class:`Envelope` naming the call it recorded. A
workflow first replays its whole log (calling the step until one runs
fresh and records ``end``), keeps the envelopes by key, and then serves a
call from its envelope when it has one, recording a new step only for a
call that never finished. Keys:

- a model call: the transcript commits its request shows (and how many
  calls this attempt made on that same context before it);
- a tool call: the model call whose reply asked for it, its place among
  that reply's handler calls, its tool and a hash of its arguments.
"""

from __future__ import annotations

import asyncio
import inspect
import pickle
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal, cast

import attrs
from dbos import DBOS

from ..canonical import content_hash
from ..errors import WeakpromptError
from ..messages import AssistantTurn
from ..model import ModelEvent, ModelRequest, complete_async, turn_events
from ..serde import dump
from ..session import PersistedState, persist_state, restore_state
from ..tools import is_async_handler

if TYPE_CHECKING:
    from ..model import ProviderAdapter
    from ..tokens import TokenCounter
    from ..tools import AnyTool, ToolContext

__all__ = ["CallLog", "DurableAdapter", "DurableCallError", "Envelope"]

Kind = Literal["model", "tool", "end"]


class DurableCallError(WeakpromptError):
    """Stands in for a call's exception that cannot be stored as it is (it does not pickle)."""


@attrs.frozen
class Envelope:
    """One recorded call: what it was (``key``) and how it ended."""

    kind: Kind
    key: str
    value: object = None
    error: BaseException | None = None
    state: PersistedState | None = None
    """Tool calls: the session state after the handler, so a replay reproduces its changes."""

    def unwrap(self) -> object:
        if self.error is not None:
            raise self.error
        return self.value


def _storable(exc: Exception) -> Exception:
    """``exc``, or a stand-in with its text when it cannot be pickled back as it is."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return DurableCallError(f"{type(exc).__name__}: {exc}")
    return exc


@DBOS.step(name="weakprompt.durable.call")
def _record(envelope: Envelope) -> Envelope:
    """The one step: records ``envelope``, or gives back the one recorded at this place in the log."""
    return envelope


async def _recorded_call(work: Callable[[], Awaitable[Envelope]]) -> Envelope:
    """Run ``work`` and record the envelope it returns as the workflow's next step.

    The call runs first and the step after, on one worker thread: DBOS's
    check for a recorded output and its write of the new one (two
    transactions) then cost one hop off the event loop, not two, and the
    loop never waits on the database. A step at a place the log already
    holds returns that record and drops ``work``'s envelope; only the
    reading of the log (``CallLog.replay``) calls at such places, with a
    ``work`` that does nothing but make its mark.
    """
    envelope = await work()
    return await asyncio.to_thread(_record, envelope)


def _run_and_record(work: Callable[[], Envelope]) -> Envelope:
    return _record(work())


async def _recorded_sync_call(work: Callable[[], Envelope]) -> Envelope:
    """:func:`_recorded_call` for a call that runs on a worker thread anyway (a sync tool handler).

    The handler and the step share one hop.
    """
    return await asyncio.to_thread(_run_and_record, work)


async def _awaited(awaitable: Awaitable[object]) -> object:
    return await awaitable


def _arguments_hash(params: object) -> str:
    """A hash of a call's validated arguments (their repr for a params type serde cannot dump)."""
    try:
        return content_hash(dump(params))
    except Exception:
        return content_hash(repr(params))


class CallLog:
    """The calls one workflow attempt has recorded, and the recording of new ones."""

    def __init__(self, recorded: list[Envelope], start: str | None, *, attempts: int = 1) -> None:
        self._by_key = {e.key: e for e in recorded if e.kind in ("model", "tool")}
        self.start = start
        """The transcript head when the workflow's first attempt began."""
        self.attempts = attempts
        """The attempts of the workflow that began, this one included (1: this is the first)."""
        models = [e.key for e in recorded if e.kind == "model"]
        tools = [e for e in recorded if e.kind == "tool" and e.state is not None]
        self.last_state: PersistedState | None = tools[-1].state if tools else None
        # Tool calls after a crash may come before any model call of this attempt (a reply the
        # journal kept): they belong to the last model call recorded.
        self._anchor = models[-1] if models else "start"
        self._tool_index = 0
        self._seen: dict[str, int] = {}
        self.replayed = 0
        self.made = 0

    @classmethod
    async def replay(cls, head: str | None) -> CallLog:
        """Read this workflow's log back: step after step, until one runs fresh (and records ``end``).

        Each attempt's ``end`` mark keeps the transcript ``head`` it found;
        the first attempt's is where the run started.
        """
        recorded: list[Envelope] = []
        starts: list[str | None] = []
        token = uuid.uuid4().hex

        async def end() -> Envelope:
            return Envelope("end", token, head)

        while True:
            envelope = await _recorded_call(end)
            if envelope.kind == "end":
                starts.append(cast("str | None", envelope.value))
                if envelope.key == token:  # this one ran now: the log ends here
                    return cls(recorded, starts[0], attempts=len(starts))
            else:
                recorded.append(envelope)

    def _served(self, key: str) -> Envelope | None:
        """The envelope recorded for ``key`` by an earlier attempt (served once), if any."""
        found = self._by_key.pop(key, None)
        if found is not None:
            self.replayed += 1
        else:
            self.made += 1
        return found

    async def model_call(self, request: ModelRequest, inner: ProviderAdapter) -> AssistantTurn:
        context = request.context
        shown = content_hash({"commits": list(context.commit_hashes), "messages": len(context.messages)})
        seen = self._seen.get(shown, 0)
        self._seen[shown] = seen + 1
        key = f"model:{shown}:{seen}"
        self._anchor, self._tool_index = key, 0

        async def work() -> Envelope:
            try:
                return Envelope("model", key, await complete_async(inner, request))
            except Exception as exc:
                return Envelope("model", key, error=_storable(exc))

        envelope = self._served(key) or await _recorded_call(work)
        return cast("AssistantTurn", envelope.unwrap())

    async def tool_call(
        self,
        tool: AnyTool,
        handler: Callable[..., object],
        params: object,
        context: ToolContext,
    ) -> object:
        index = self._tool_index
        self._tool_index += 1
        key = f"tool:{self._anchor}:{index}:{tool.name}:{_arguments_hash(params)}"

        found = self._served(key)
        if found is not None:  # recorded by an earlier attempt: its outcome, and the state it left
            assert found.state is not None, "a tool call's record keeps the session state"
            restore_state(context.session, found.state)
            return found.unwrap()

        def ended(outcome: object, error: Exception | None) -> Envelope:
            # the state the handler left is the session's own: recorded, not restored
            state = persist_state(context.session)
            if error is not None:
                return Envelope("tool", key, error=_storable(error), state=state)
            return Envelope("tool", key, outcome, state=state)

        if is_async_handler(handler):

            async def work() -> Envelope:
                try:
                    outcome = await cast("Awaitable[object]", handler(params, context=context))
                except Exception as exc:
                    return ended(None, exc)
                return ended(outcome, None)

            return (await _recorded_call(work)).unwrap()
        loop = asyncio.get_running_loop()

        def work_sync() -> Envelope:
            try:
                outcome = handler(params, context=context)
                if inspect.isawaitable(outcome):  # a sync callable that handed back a coroutine
                    outcome = asyncio.run_coroutine_threadsafe(_awaited(outcome), loop).result()
            except Exception as exc:
                return ended(None, exc)
            return ended(outcome, None)

        return (await _recorded_sync_call(work_sync)).unwrap()

    def wrap_tool(self, tool: AnyTool) -> AnyTool:
        """``tool`` with its handler called through this log (and marked idempotent: a replay is safe)."""
        inner = cast("Callable[..., object]", tool.handler)
        log = self

        async def handler(params: Any, *, context: ToolContext) -> object:
            return await log.tool_call(tool, inner, params, context)

        return attrs.evolve(
            tool,
            handler=handler,
            params_type=tool.params_type,
            result_type=tool.result_type,
            idempotent=True,
        )

    def adapter(self, inner: ProviderAdapter) -> DurableAdapter:
        return DurableAdapter(inner, self)


class DurableAdapter:
    """``inner`` with each streamed reply made (or replayed) as a recorded call of ``log``.

    The reply reaches the loop whole: a recorded call has no stream to
    replay. ``complete`` (used outside the loop, e.g. by summaries) is not
    recorded.
    """

    def __init__(self, inner: ProviderAdapter, log: CallLog) -> None:
        self.inner = inner
        self.log = log
        self.name: str = inner.name
        self.model: str = inner.model
        self.context_window: int | None = inner.context_window
        self.token_counter: TokenCounter | None = inner.token_counter

    def complete(self, request: ModelRequest) -> AssistantTurn:
        return self.inner.complete(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        turn = await self.log.model_call(request, self.inner)
        for event in turn_events(turn):
            yield event
