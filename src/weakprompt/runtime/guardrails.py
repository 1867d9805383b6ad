"""Guardrails: checks at four points of a run that pass, rewrite or stop it (``specs/GUARDRAILS.md``).

The points are the run's input (before the first model call, or beside it
when the guardrail says ``concurrent=True``), its final output (after
parsing), each tool call's arguments (after validation and any approval,
just before the handler: in the one dispatcher) and each tool result
(after redaction, before the ``tool_result`` hook and the model: in the
tool-result pipeline). A check returns ``None`` to pass, :class:`Rewrite`
to replace the value (named in the commit's metadata under
:data:`GUARDRAILS_KEY`), or :class:`Trip` to stop the run with
:class:`~weakprompt.errors.GuardrailTripped`; a check may be sync or async.

A trip never leaves half a turn: the turn in progress is not stored and the
session is put back as of the last stored turn (as for any error), and the
trip is recorded under :data:`GUARDRAIL_TRIP_KEY`: on the input commit (an
input trip), on the rejected answer's commit (an output trip: that turn is
complete and stored), or on an edit of the last stored commit, the same
message with the trip added to its metadata (a trip at a tool point, or a
concurrent input check).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar, cast, get_args

import attrs

from ..errors import ConfigurationError, GuardrailTripped
from ..parts import Content, Part, TextPart, as_parts, text_of
from ..safetext import type_name
from .blocking import block_on

if TYPE_CHECKING:
    from ..jsontypes import JSONObject
    from ..messages import AssistantTurn, ToolCall
    from ..session import Session
    from .evaluation import Evaluation

__all__ = [
    "GUARDRAILS_KEY",
    "GUARDRAIL_TRIP_KEY",
    "Guardrail",
    "GuardrailCheck",
    "GuardrailFunction",
    "GuardrailOutcome",
    "GuardrailPoint",
    "Rewrite",
    "ToolGuard",
    "Trip",
    "alongside",
    "check_input",
    "check_output",
    "final_reply",
    "raise_output_trip",
    "checked_guardrails",
    "recording_trips",
    "trip_record",
]

T = TypeVar("T")

GuardrailPoint: TypeAlias = Literal["input", "output", "tool_arguments", "tool_result"]
"""Where a guardrail looks: the run's input, its parsed output, a call's arguments, a call's result."""

POINTS: tuple[GuardrailPoint, ...] = get_args(GuardrailPoint)

GUARDRAILS_KEY = "guardrails"
"""Commit metadata: the rewrites guardrails made of what the commit holds, in order."""

GUARDRAIL_TRIP_KEY = "guardrail_trip"
"""Commit metadata: the trip that stopped the run (point, guardrail, reason, call)."""


@attrs.frozen
class Rewrite:
    """A guardrail's answer: go on with ``value`` in place of what it was shown (``reason`` is stored)."""

    value: object
    reason: str = ""


@attrs.frozen
class Trip:
    """A guardrail's answer: stop the run, saying ``reason``."""

    reason: str


GuardrailOutcome: TypeAlias = Rewrite | Trip | None
"""What a check returns: ``None`` passes."""


@attrs.frozen(kw_only=True)
class GuardrailCheck:
    """What a guardrail is shown.

    ``value`` is the input text (``"input"``), the parsed output, or the
    answer's text for a prompt without an output type (``"output"``), the
    call's validated params object (``"tool_arguments"``) or the result's
    text (``"tool_result"``, ``is_error`` set for a failed call). ``call``
    is the tool call at the two tool points.
    """

    point: GuardrailPoint
    value: object
    session: Session
    call: ToolCall | None = None
    is_error: bool = False


GuardrailFunction: TypeAlias = Callable[[GuardrailCheck], "GuardrailOutcome | Awaitable[GuardrailOutcome]"]
"""A check: sync or async, returning (or awaiting to) ``None``, a :class:`Rewrite` or a :class:`Trip`."""


def _point(_guard: object, _attribute: object, value: object) -> None:
    if value not in POINTS:
        raise ConfigurationError(
            f"Guardrail: point must be one of {', '.join(map(repr, POINTS))}, got {value!r}"
        )


def _check_callable(_guard: object, _attribute: object, value: object) -> None:
    if not callable(value):
        raise ConfigurationError(
            f"Guardrail: check must be a function of a GuardrailCheck, not {type_name(value)}"
        )


def _name_of(guard: Guardrail) -> str:
    check = guard.check
    return str(getattr(check, "__qualname__", None) or type(check).__qualname__)


def _tool_names(value: Iterable[str] | None) -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return frozenset((value,))
    return frozenset(value)


@attrs.frozen
class Guardrail:
    """One check at one point: ``Guardrail("tool_result", check, tools={"fetch"})``.

    ``name`` (default: the check's qualified name) is what the transcript,
    the error and the trace call it. ``tools`` limits a tool-point
    guardrail to calls of those tools (the per-tool form). ``concurrent``
    (input only) lets the first model call start while the check runs: a
    trip cancels that call and discards its turn; such a check may pass or
    trip, not rewrite (the model already has the input).
    """

    point: GuardrailPoint = attrs.field(validator=_point)
    check: GuardrailFunction = attrs.field(validator=_check_callable)
    name: str = attrs.field(default=attrs.Factory(_name_of, takes_self=True), kw_only=True)
    tools: frozenset[str] | None = attrs.field(default=None, converter=_tool_names, kw_only=True)
    concurrent: bool = attrs.field(default=False, kw_only=True)

    def __attrs_post_init__(self) -> None:
        if self.concurrent and self.point != "input":
            raise ConfigurationError(
                f"Guardrail {self.name!r}: concurrent=True is for the input point only (got {self.point!r})"
            )
        if self.tools is not None and self.point not in ("tool_arguments", "tool_result"):
            raise ConfigurationError(
                f"Guardrail {self.name!r}: tools= scopes a tool_arguments or tool_result guardrail, "
                f"not one at the {self.point!r} point"
            )

    def applies(self, point: GuardrailPoint, tool: str | None) -> bool:
        return self.point == point and (self.tools is None or tool in self.tools)


def checked_guardrails(value: Sequence[Guardrail]) -> tuple[Guardrail, ...]:
    """The run's guardrails as a tuple, each checked to be a :class:`Guardrail`."""
    if isinstance(value, Guardrail) or not isinstance(value, (tuple, list)):
        raise ConfigurationError(
            f"evaluate: guardrails must be a sequence of Guardrail, got {type_name(value)} "
            "(one guardrail: guardrails=(Guardrail(...),))"
        )
    for index, guard in enumerate(cast("Sequence[object]", value)):
        if not isinstance(guard, Guardrail):
            raise ConfigurationError(
                f"evaluate: guardrails[{index}] is a {type_name(guard)}, not a Guardrail "
                "(wrap a check as Guardrail('input', check))"
            )
    return tuple(value)


def trip_record(trip: GuardrailTripped) -> JSONObject:
    """How the transcript records a trip (:data:`GUARDRAIL_TRIP_KEY`)."""
    record: JSONObject = {"point": trip.point, "guardrail": trip.guardrail, "reason": trip.reason}
    if trip.call_id is not None:
        record["call_id"] = trip.call_id
        record["tool"] = trip.tool
    return record


# -- running the checks ------------------------------------------------------------------------


def _judged(guard: Guardrail, check: GuardrailCheck, outcome: object, notes: list[JSONObject]) -> object:
    """The value after ``guard``'s ``outcome``: the same, its rewrite (noted), or the trip raised."""
    if outcome is None:
        return check.value
    call = check.call
    if isinstance(outcome, Trip):
        raise GuardrailTripped(
            check.point,
            guard.name,
            outcome.reason,
            call_id=None if call is None else call.id,
            tool=None if call is None else call.name,
        )
    if not isinstance(outcome, Rewrite):
        raise ConfigurationError(
            f"guardrail {guard.name!r} returned {type_name(outcome)}; a check returns None (pass), "
            "Rewrite(value) or Trip(reason)"
        )
    if guard.concurrent:
        raise ConfigurationError(
            f"guardrail {guard.name!r} runs concurrently with the model call, so it cannot rewrite the "
            "input (the model has it already): return Trip(reason) or None"
        )
    old, new = check.value, outcome.value
    if type(new) is not type(old):
        raise ConfigurationError(
            f"guardrail {guard.name!r} rewrote a {type_name(old)} at the {check.point} point as a "
            f"{type_name(new)}; a rewrite keeps the type"
        )
    notes.append({"point": check.point, "guardrail": guard.name, "reason": outcome.reason})
    return new


async def run_checks(
    guards: Iterable[Guardrail],
    point: GuardrailPoint,
    value: T,
    session: Session,
    *,
    call: ToolCall | None = None,
    is_error: bool = False,
) -> tuple[T, list[JSONObject]]:
    """Run every guardrail of ``point`` in order on ``value``: the value to go on with, and the rewrites."""
    notes: list[JSONObject] = []
    current: object = value
    tool = None if call is None else call.name
    for guard in guards:
        if not guard.applies(point, tool):
            continue
        check = GuardrailCheck(point=point, value=current, session=session, call=call, is_error=is_error)
        outcome = guard.check(check)
        if isinstance(outcome, Awaitable):
            outcome = await outcome
        current = _judged(guard, check, outcome, notes)
    return cast("T", current), notes


def run_checks_sync(
    guards: Iterable[Guardrail],
    point: GuardrailPoint,
    value: T,
    session: Session,
    *,
    call: ToolCall | None = None,
    is_error: bool = False,
) -> tuple[T, list[JSONObject]]:
    """:func:`run_checks` from blocking code: an async check is run to completion (``block_on``)."""
    notes: list[JSONObject] = []
    current: object = value
    tool = None if call is None else call.name
    for guard in guards:
        if not guard.applies(point, tool):
            continue
        check = GuardrailCheck(point=point, value=current, session=session, call=call, is_error=is_error)
        outcome = guard.check(check)
        if isinstance(outcome, Awaitable):
            outcome = block_on(functools.partial(_awaited, outcome))
        current = _judged(guard, check, outcome, notes)
    return cast("T", current), notes


async def _awaited(outcome: Awaitable[GuardrailOutcome]) -> GuardrailOutcome:
    return await outcome


class ToolGuard:
    """The guardrails of a run's two tool points, for the dispatcher and the tool-result pipeline.

    The rewrites of a call's arguments wait here, by call id, for the
    commit of the call's result, which names them.
    """

    def __init__(self, guards: Sequence[Guardrail], session: Session) -> None:
        self.arguments = tuple(g for g in guards if g.point == "tool_arguments")
        self.results = tuple(g for g in guards if g.point == "tool_result")
        self.session = session
        self.rewrites: dict[str, list[JSONObject]] = {}

    def check_arguments(self, call: ToolCall, params: object, *, approved: bool) -> object:
        """The params the handler gets (rewritten, or as they were); a trip raises."""
        params, notes = run_checks_sync(self.arguments, "tool_arguments", params, self.session, call=call)
        return self._noted(call, params, notes, approved=approved)

    async def check_arguments_async(self, call: ToolCall, params: object, *, approved: bool) -> object:
        params, notes = await run_checks(self.arguments, "tool_arguments", params, self.session, call=call)
        return self._noted(call, params, notes, approved=approved)

    def _noted(self, call: ToolCall, params: object, notes: list[JSONObject], *, approved: bool) -> object:
        if notes and approved:  # a person approved exactly the call they saw: it is not changed after
            raise GuardrailTripped(
                "tool_arguments",
                str(notes[0]["guardrail"]),
                "it rewrote the arguments of a call a person approved (an approved call runs as approved)",
                call_id=call.id,
                tool=call.name,
            )
        if notes:
            self.rewrites.setdefault(call.id, []).extend(notes)
        return params

    def check_result(self, call: ToolCall, text: str, *, is_error: bool) -> tuple[str, JSONObject]:
        """The result's text the model sees, and the metadata naming the rewrites (a trip raises)."""
        notes = self.rewrites.pop(call.id, [])
        if self.results:
            text, more = run_checks_sync(
                self.results, "tool_result", text, self.session, call=call, is_error=is_error
            )
            notes.extend(more)
        return text, ({GUARDRAILS_KEY: list(notes)} if notes else {})


# -- the loop's points -------------------------------------------------------------------------


async def check_input(
    evaluation: Evaluation[Any], input: Content | None
) -> tuple[Content | None, GuardrailTripped | None]:
    """The input's sequential checks, before the run stores it: the input to store, or the trip.

    Input guardrails read the input's text; a rewrite of input made of parts
    replaces its text parts with the new text, ahead of its images and
    documents. What the input's commit records (the rewrites, or the trip)
    is left on ``evaluation.input_metadata``. The concurrent checks are
    started on the event loop (``evaluation.input_check``), for :func:`alongside`.
    """
    guards = evaluation.settings.guardrails
    if input is None or not guards:
        return input, None
    sequential = [g for g in guards if g.point == "input" and not g.concurrent]
    concurrent = [g for g in guards if g.point == "input" and g.concurrent]
    parts: tuple[Part, ...] | None = None
    if isinstance(input, str):
        text = input
    else:
        parts = as_parts(input)
        text = text_of(parts)
    try:
        checked, notes = await run_checks(sequential, "input", text, evaluation.session)
    except GuardrailTripped as trip:
        evaluation.input_metadata = {GUARDRAIL_TRIP_KEY: trip_record(trip)}
        return input, trip
    if notes:
        evaluation.input_metadata = {GUARDRAILS_KEY: list(notes)}
        if parts is None:
            input = checked
        else:
            input = [checked, *(part for part in parts if not isinstance(part, TextPart))]
    if concurrent:
        import asyncio

        evaluation.input_check = asyncio.ensure_future(
            run_checks(concurrent, "input", checked, evaluation.session)
        )
    return input, None


async def alongside(evaluation: Evaluation[Any], model_call: Coroutine[Any, Any, T]) -> T:
    """Await ``model_call`` while the input's concurrent checks run; a trip cancels the call."""
    pending = evaluation.input_check
    if pending is None:
        return await model_call
    import asyncio

    evaluation.input_check = None
    model = asyncio.ensure_future(model_call)
    try:
        await asyncio.wait((pending, model), return_when=asyncio.FIRST_COMPLETED)
        await pending  # a trip raises here, first, even when the model has answered already
        return await model
    finally:
        for task in (pending, model):
            if not task.done():
                task.cancel()
        await asyncio.gather(pending, model, return_exceptions=True)


async def check_output(evaluation: Evaluation[Any], value: T) -> tuple[T, JSONObject]:
    """The answer's checks: the output to hand back, and what the reply's commit records.

    A trip is not raised here: the answer is stored with it (a complete
    turn) and :func:`raise_output_trip` raises it after the turn's write.
    """
    try:
        value, notes = await run_checks(evaluation.settings.guardrails, "output", value, evaluation.session)
    except GuardrailTripped as trip:
        evaluation.output_trip = trip
        return value, {GUARDRAIL_TRIP_KEY: trip_record(trip)}
    return value, ({GUARDRAILS_KEY: list(notes)} if notes else {})


def final_reply(evaluation: Evaluation[Any], reply: AssistantTurn) -> AssistantTurn:
    """The text answer the response hands back: as a guardrail rewrote it, if one did."""
    text = evaluation.answer_text
    if text is None or text == reply.text:
        return reply
    return attrs.evolve(reply, text=text, parts=())


def raise_output_trip(evaluation: Evaluation[Any]) -> None:
    """Raise the output's trip, once the answer it judged is stored."""
    trip = evaluation.output_trip
    if trip is not None:
        evaluation.output_trip = None
        trip.recorded = True
        raise trip


async def recording_trips(evaluation: Evaluation[Any], work: Awaitable[T]) -> T:
    """Await ``work`` (a turn); a trip that stopped it is recorded on an edit of the last stored commit."""
    try:
        return await work
    except GuardrailTripped as trip:
        if not trip.recorded:
            head = evaluation.head
            assert head is not None  # the run's start stored its system message
            await evaluation.io(functools.partial(_record_trip, evaluation, head, trip))
        trip.recorded = True
        raise


def _record_trip(evaluation: Evaluation[Any], head: str, trip: GuardrailTripped) -> None:
    """Store the trip as an edit of ``head``: its message unchanged, the trip added to its metadata."""
    transcript = evaluation.transcript
    commit = transcript.get(head)
    stored = transcript.commit(
        commit.content,
        operation=type(commit.operation).EDIT,  # the transcript's own operation kind, not imported here
        edit_target=commit.edit_target or commit.hash,
        metadata={**commit.metadata, GUARDRAIL_TRIP_KEY: trip_record(trip)},
        message=f"guardrail {trip.guardrail} tripped",
    )
    evaluation.head = stored.hash
    evaluation.written.add(stored.hash)
