"""``check_tool``: a property test that the dispatcher contract holds for one tool.

The dispatcher promises a lot (see ``specs/TOOLS.md``), but some of it rests
on the tool: its params type must say everything the handler relies on, its
class must not refuse what its schema admits, and its state changes must go
through the session or a snapshotable resource so a failure can be undone.
``check_tool`` drives generated valid and invalid arguments through a real
``ToolDispatcher`` and says which promise broke, with the arguments that
broke it.
"""

from __future__ import annotations

import copy
import inspect
import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

import attrs
import hypothesis
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from weakprompt.errors import ToolValidationError
from weakprompt.events import ToolInvoked
from weakprompt.jsontypes import JSONObject, JSONValue
from weakprompt.messages import ToolCall
from weakprompt.resources import ResourceRegistry
from weakprompt.runtime import ToolCallPending, ToolDispatcher, ToolExecution
from weakprompt.runtime.redaction import default_redact, redacted
from weakprompt.runtime.tool_failures import once_per_defect
from weakprompt.safetext import safe_repr
from weakprompt.serde import SerdeError, StrictSchemaError, dump, parse
from weakprompt.session import Session
from weakprompt.tools import AnyTool, Tool, ToolContext, ToolResult, ToolReturn

from ._generate import json_for
from ._invalid import InvalidArguments, invalid_arguments_for
from ._jsonschema import SchemaValidator

__all__ = ["check_tool", "deep_copy", "state_of"]

R = TypeVar("R")

_CALL_ID = "check_tool"


def check_tool(
    tool: AnyTool,
    *,
    session_factory: Callable[[], Session] = Session,
    resources_factory: Callable[[], ResourceRegistry] | None = None,
    observe: Callable[[Session], object] | None = None,
    allow_handler_errors: bool = False,
    max_examples: int | None = None,
    settings: hypothesis.settings | None = None,
) -> None:
    """Check that the dispatcher contract holds for ``tool``; raise ``AssertionError`` if not.

    With generated arguments, each call on a fresh ``session_factory()``
    session (and ``resources_factory()`` registry, if given):

    - the JSON Schema and serde agree: what the schema admits parses, what it
      refuses does not (the strict schema too, where the type has one);
    - valid arguments are never refused, and the handler does not raise on
      them (``ToolValidationError`` is a deliberate refusal and allowed;
      ``allow_handler_errors=True`` allows any exception);
    - what the handler returns (a ``ToolResult`` or a plain value) is
      something the dispatcher can show the model (a value serde cannot
      dump, NaN or an infinity is a defect of the tool, found whatever
      ``allow_handler_errors`` says);
    - invalid arguments never reach the handler;
    - a failed call leaves the session's STATE slices, the resources and
      ``observe(session)`` (state you keep elsewhere) exactly as they were;
    - every call publishes exactly one ``ToolInvoked``.

    ``max_examples`` and ``settings`` tune hypothesis (the active profile is
    the default). The error names the broken promise and the arguments.
    """
    checker = _Checker(tool, session_factory, resources_factory, observe, allow_handler_errors)
    chosen = settings if settings is not None else hypothesis.settings()
    tuned = hypothesis.settings(
        chosen,
        max_examples=chosen.max_examples if max_examples is None else max_examples,
        deadline=None,
        database=None,
        suppress_health_check=[*chosen.suppress_health_check, HealthCheck.too_slow],
    )

    @tuned
    @given(data=json_for(tool.params_type), as_text=st.booleans())
    def valid_arguments_are_accepted(data: JSONValue, as_text: bool) -> None:
        checker.valid(data, as_text)

    @tuned
    @given(bad=invalid_arguments_for(tool))
    def invalid_arguments_are_refused(bad: InvalidArguments) -> None:
        checker.invalid(bad)

    with once_per_defect():  # one broken-tool warning per bug, not one per generated example
        valid_arguments_are_accepted()
        invalid_arguments_are_refused()


def state_of(session: Session) -> dict[type[object], tuple[object, ...]]:
    """A deep copy of the session's STATE slices, for before/after comparisons.

    Deep, so a handler that changed a value *inside* a slice (which a
    snapshot cannot undo) shows up as a difference.
    """
    return deep_copy(dict(session.state()))


_T = TypeVar("_T")


def deep_copy(value: _T) -> _T:
    """A deep copy where one can be made; the value itself otherwise."""
    try:
        return copy.deepcopy(value)
    except Exception:  # values that cannot be copied are compared as they are
        return value


@attrs.define
class _Recorder:
    """Wraps the handler to see whether it ran and what it raised."""

    calls: int = 0
    raised: BaseException | None = None
    returned: object = None

    def wrap(self, handler: Callable[..., ToolReturn[R]]) -> Callable[..., ToolReturn[R]]:
        def recording(params: object, /, *, context: ToolContext) -> ToolReturn[R]:
            self.calls += 1
            try:
                outcome = handler(params, context=context)
            except BaseException as exc:
                self.raised = exc
                raise
            if not inspect.isawaitable(outcome):
                self.returned = outcome
                return outcome
            return self._awaited(outcome)

        return recording

    async def _awaited(self, outcome: Awaitable[ToolResult[R] | R]) -> ToolResult[R] | R:
        try:
            result = await outcome
        except BaseException as exc:
            self.raised = exc
            raise
        self.returned = result
        return result


@attrs.frozen
class _Run:
    execution: ToolExecution
    events: tuple[ToolInvoked, ...]
    recorder: _Recorder
    changed: str | None
    deferred: bool


class _Checker:
    def __init__(
        self,
        tool: Tool[Any, Any],
        session_factory: Callable[[], Session],
        resources_factory: Callable[[], ResourceRegistry] | None,
        observe: Callable[[Session], object] | None,
        allow_handler_errors: bool,
    ) -> None:
        self.tool = tool
        self.session_factory = session_factory
        self.resources_factory = resources_factory
        self.observe = observe
        self.allow_handler_errors = allow_handler_errors
        self.validator = SchemaValidator(tool.parameters_schema())
        try:
            strict = tool.parameters_schema(strict=True)
        except StrictSchemaError:
            self.strict: SchemaValidator | None = None
        else:
            self.strict = SchemaValidator(strict)

    def fail(self, promise: str, arguments: object, *details: str) -> AssertionError:
        shown = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
        lines = [f"check_tool({self.tool.name!r}): {promise}", f"  arguments: {shown}"]
        lines.extend(f"  {detail}" for detail in details)
        return AssertionError("\n".join(lines))

    # -- the two properties ---------------------------------------------------------------------

    def valid(self, data: JSONValue, as_text: bool) -> None:
        assert isinstance(data, dict)
        errors = self.validator.errors(data)
        if errors:  # the generator follows the schema; this is a weakprompt bug
            raise self.fail("generated arguments the schema refuses (please report)", data, *errors)
        try:
            params = parse(self.tool.params_type, data)
        except SerdeError as exc:
            raise self.fail(
                "the JSON Schema accepts arguments that serde refuses; the params class checks "
                "something its schema cannot express (move the rule into Meta(...) bounds, or "
                "into the handler as ToolResult.error)",
                data,
                f"serde says: {exc}",
            ) from None
        if self.strict is not None:
            full = dump(params)
            strict_errors = self.strict.errors(full)
            if strict_errors:
                raise self.fail("the strict schema refuses a valid value", full, *strict_errors)
        run = self.run(json.dumps(data) if as_text else data)
        execution = run.execution
        if execution.event.params is None and not run.deferred:  # an answered deferral has no params
            raise self.fail(
                "valid arguments were refused before the handler ran", data, f"message: {execution.message}"
            )
        raised = None if run.deferred else run.recorder.raised
        if (
            raised is not None
            and not self.allow_handler_errors
            and not isinstance(raised, ToolValidationError)
        ):
            raise self.fail(
                f"the handler raised {type(raised).__name__} on arguments the schema accepts; "
                "tighten the params type (e.g. Meta(ge=..., le=...)) so the model is told, or "
                "return ToolResult.error(...) for an expected refusal",
                data,
                f"raised: {type(raised).__name__}: {raised}",
            ) from raised
        if (
            run.recorder.raised is None
            and not run.deferred
            and not _kept(run.recorder.returned, execution.result)
        ):
            raise self.fail(
                "the handler's result cannot be shown to the model, so every such call fails as a "
                "defect in the tool (return values serde can dump, with finite numbers, or give the "
                "value a render() method)",
                data,
                f"returned: {safe_repr(run.recorder.returned)}",
                f"the model is told: {execution.message}",
            )
        if not execution.success and run.changed is not None:
            raise self.fail(
                "a failed call left state changed (the dispatcher restores the session's slice table "
                "and snapshotable resources; changes made in place inside slice values, or "
                "anywhere else, are not undone)",
                data,
                f"result: {execution.message}",
                run.changed,
            )

    def invalid(self, bad: InvalidArguments) -> None:
        try:
            decoded: object = json.loads(bad.text)
        except ValueError:
            decoded = _BROKEN
        if decoded is not _BROKEN:
            if not self.validator.errors(decoded):
                raise self.fail(
                    f"the JSON Schema accepts invalid arguments ({bad.kind})", bad.text, bad.reason
                )
            try:
                parse(self.tool.params_type, decoded)
            except SerdeError:
                pass
            else:
                raise self.fail(
                    f"serde accepts arguments the JSON Schema refuses ({bad.kind})", bad.text, bad.reason
                )
        run = self.run(bad.text)
        if run.recorder.calls:
            raise self.fail(
                f"invalid arguments reached the handler ({bad.kind} at {bad.path})", bad.text, bad.reason
            )
        if run.changed is not None:
            raise self.fail("a refused call changed state", bad.text, run.changed)

    # -- one call on a fresh session ---------------------------------------------------------------

    def run(self, arguments: str | JSONObject) -> _Run:
        session = self.session_factory()
        resources = self.resources_factory() if self.resources_factory is not None else None
        recorder = _Recorder()
        tool = attrs.evolve(self.tool, handler=recorder.wrap(self.tool.handler))
        events: list[ToolInvoked] = []
        session.bus.subscribe(ToolInvoked, events.append)
        # the contract is the handler's: a call its approval policy would hold runs as approved
        dispatcher = ToolDispatcher([tool], session=session, resources=resources)
        before = self.fingerprint(session, resources)
        call = ToolCall(id=_CALL_ID, name=tool.name, arguments=arguments)
        deferred = False
        try:
            execution = dispatcher.execute(call, approved=True)
        except ToolCallPending as pending:  # a deferred result: the call ends unanswered here
            execution = dispatcher.answer(call, ToolResult.error(f"deferred: {pending.note}"))
            deferred = True
        after = self.fingerprint(session, resources)
        if len(events) != 1 or events[0] is not execution.event or events[0].call_id != _CALL_ID:
            raise self.fail(
                f"one call published {len(events)} ToolInvoked events instead of exactly one",
                arguments,
            )
        return _Run(execution, tuple(events), recorder, _difference(before, after), deferred)

    def fingerprint(self, session: Session, resources: ResourceRegistry | None) -> dict[str, object]:
        found: dict[str, object] = {"session state": state_of(session)}
        if resources is not None:
            found["resources"] = resources.snapshot()
        if self.observe is not None:
            found["observed state"] = deep_copy(self.observe(session))
        return found


_BROKEN = object()


def _kept(returned: object, settled: ToolResult[object]) -> bool:
    """Whether the dispatcher kept the handler's result, rather than reporting it as a defect.

    The dispatcher renders each result exactly as a real call does; a result
    it cannot render is replaced by a failure naming the defect. A plain
    value is kept as a success carrying it. A failure the tool reported itself
    is kept with its message redacted, so that is compared as the dispatcher writes it.
    """
    if settled is returned:
        return True
    if not isinstance(returned, ToolResult):
        return settled.success and settled.value is returned
    kept = cast("ToolResult[object]", returned)
    return (
        kept.success is False
        and isinstance(kept.message, str)  # a tool's value: not always the declared str
        and settled.message == redacted(kept.message, default_redact)
        and settled.value is kept.value
        and settled.exclude_value_from_context == kept.exclude_value_from_context
    )


def _difference(before: dict[str, object], after: dict[str, object]) -> str | None:
    for name, old in before.items():
        new = after[name]
        if old != new:
            return f"{name} before: {old!r}\n  {name} after:  {new!r}"
    return None
