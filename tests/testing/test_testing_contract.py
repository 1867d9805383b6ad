"""check_tool: it passes sound tools and finds the planted bugs, with readable reports."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Annotated, Any, cast

import pytest
from hypothesis import settings
from hypothesis import strategies as st

import weakprompt.testing._contract as contract
from testing_kit_support import EVERYTHING_TOOL
from weakprompt.errors import ToolValidationError
from weakprompt.events import ToolInvoked
from weakprompt.resources import Filesystem, InMemoryFilesystem, ResourceRegistry
from weakprompt.runtime import ToolDispatcher
from weakprompt.serde import Meta
from weakprompt.session import Session
from weakprompt.testing import InvalidArguments, check_tool, state_of
from weakprompt.tools import CallDeferred, NoParams, Tool, ToolContext, ToolResult

FEW = 40  # examples per property: every planted bug below is found well within this


@dataclasses.dataclass(frozen=True)
class Note:
    text: str


@dataclasses.dataclass(frozen=True)
class AddNote:
    text: Annotated[str, Meta(min_length=1, max_length=40)]
    pinned: bool = False


def add_note(params: AddNote, *, context: ToolContext) -> ToolResult[Note]:
    """Sound: the note reaches the session through the result value and a reducer."""
    if params.text.strip() == "":
        return ToolResult.error("a note needs some visible text")
    return ToolResult.ok(Note(params.text))


def notes_session() -> Session:
    session = Session()
    session.register_reducer(Note, Note, lambda notes, note: (*notes, note))
    return session


ADD_NOTE = Tool(name="add_note", description="Add a note.", handler=add_note)


def test_a_sound_tool_passes() -> None:
    check_tool(ADD_NOTE, session_factory=notes_session, max_examples=FEW)


def test_a_tool_with_every_kind_of_field_passes() -> None:
    check_tool(EVERYTHING_TOOL, max_examples=FEW)


def test_a_tool_without_arguments_passes() -> None:
    def ping(params: NoParams, *, context: ToolContext) -> ToolResult[str]:
        return ToolResult.ok("pong")

    check_tool(Tool(name="ping", description="Ping.", handler=ping), max_examples=10)


# -- rollback ----------------------------------------------------------------------------------------


def test_mutating_the_session_then_failing_is_undone_by_the_dispatcher() -> None:
    """Not a bug check_tool can report: the dispatcher restores the session's slice table."""

    def sloppy(params: AddNote, *, context: ToolContext) -> ToolResult[None]:
        context.session[Note].append(Note(params.text))
        return ToolResult.error("changed my mind") if params.pinned else ToolResult(message="kept")

    check_tool(Tool(name="sloppy", description="d", handler=sloppy), max_examples=FEW)


@dataclasses.dataclass
class Tally:
    """A mutable slice value: changing it in place escapes the snapshot."""

    counts: list[int]


@dataclasses.dataclass(frozen=True)
class Count:
    amount: Annotated[int, Meta(ge=0, le=10)]


def tally_session() -> Session:
    session = Session()
    session[Tally].seed([Tally([])])
    return session


def count_in_place(params: Count, *, context: ToolContext) -> ToolResult[None]:
    tally = context.session[Tally].latest()
    assert tally is not None
    tally.counts.append(params.amount)  # in place: the dispatcher's snapshot still points at this list
    if params.amount > 5:
        return ToolResult.error("too many at once")
    return ToolResult(message="counted")


def test_a_change_made_in_place_inside_a_slice_value_is_found() -> None:
    tool = Tool(name="count", description="Count.", handler=count_in_place)

    with pytest.raises(AssertionError) as failure:
        check_tool(tool, session_factory=tally_session, max_examples=FEW)

    message = str(failure.value)
    assert "check_tool('count'): a failed call left state changed" in message
    assert 'arguments: {"amount": 6}' in message  # shrunk to the smallest failing amount
    assert "result: too many at once" in message
    assert "counts=[]" in message and "counts=[6]" in message


EXTERNAL: list[str] = []


def remember_outside(params: AddNote, *, context: ToolContext) -> ToolResult[None]:
    EXTERNAL.append(params.text)
    return ToolResult.error("failed after writing elsewhere")


def test_state_kept_outside_the_session_is_checked_when_observed() -> None:
    tool = Tool(name="outside", description="d", handler=remember_outside)
    check_tool(tool, max_examples=5)  # invisible without an observer: nothing to compare

    with pytest.raises(AssertionError, match=r"observed state before: \[.*\]\n  observed state after"):
        check_tool(tool, observe=lambda session: list(EXTERNAL), max_examples=5)


def test_resources_are_compared_too() -> None:
    def write_then_fail(params: AddNote, *, context: ToolContext) -> ToolResult[None]:
        fs = context.filesystem
        assert fs is not None
        fs.write_text("note.txt", params.text)
        return ToolResult.error("no")

    tool = Tool(name="write", description="d", handler=write_then_fail)
    # The in-memory filesystem is snapshotable, so the dispatcher restores it.
    check_tool(
        tool, resources_factory=lambda: ResourceRegistry({Filesystem: InMemoryFilesystem()}), max_examples=10
    )


def test_state_of_is_a_deep_copy() -> None:
    session = tally_session()
    before = state_of(session)
    latest = session[Tally].latest()
    assert latest is not None
    latest.counts.append(1)

    assert before == {Tally: (Tally([]),)}
    assert state_of(session) == {Tally: (Tally([1]),)}


# -- params that do not say what the handler relies on ------------------------------------------------


@dataclasses.dataclass(frozen=True)
class SetVolume:
    percent: int  # the handler relies on 0..100, but the type does not say so


def set_volume(params: SetVolume, *, context: ToolContext) -> ToolResult[None]:
    if not 0 <= params.percent <= 100:
        raise ValueError(f"volume out of range: {params.percent}")
    return ToolResult(message="ok")


def test_a_handler_raising_on_a_value_the_schema_admits_is_found() -> None:
    tool = Tool(name="set_volume", description="Set the volume.", handler=set_volume)

    with pytest.raises(AssertionError) as failure:
        check_tool(tool, max_examples=FEW)

    message = str(failure.value)
    assert "the handler raised ValueError on arguments the schema accepts" in message
    assert "Meta(ge=..., le=...)" in message
    assert 'arguments: {"percent": -1}' in message
    assert "volume out of range: -1" in message


def test_handler_errors_can_be_allowed() -> None:
    tool = Tool(name="set_volume", description="Set the volume.", handler=set_volume)
    check_tool(tool, allow_handler_errors=True, max_examples=FEW)


def test_a_deliberate_refusal_is_not_a_bug() -> None:
    def refuse(params: SetVolume, *, context: ToolContext) -> ToolResult[None]:
        if params.percent < 0:
            raise ToolValidationError("negative volume")
        if params.percent > 100:
            return ToolResult.error("too loud")
        return ToolResult(message="ok")

    check_tool(Tool(name="set_volume", description="d", handler=refuse), max_examples=FEW)


# -- a schema and a parser that disagree --------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Even:
    """A custom type whose own check the schema cannot express."""

    number: int

    def __post_init__(self) -> None:
        if self.number % 2:
            raise ValueError(f"{self.number} is odd")


@dataclasses.dataclass(frozen=True)
class Pair:
    left: Even


def test_a_schema_that_admits_what_the_parser_refuses_is_found() -> None:
    def take(params: Pair, *, context: ToolContext) -> ToolResult[None]:
        return ToolResult(message="ok")

    with pytest.raises(AssertionError) as failure:
        check_tool(Tool(name="pair", description="d", handler=take), max_examples=FEW)

    message = str(failure.value)
    assert "the JSON Schema accepts arguments that serde refuses" in message
    assert 'arguments: {"left": {"number": 1}}' in message
    assert "1 is odd" in message


# -- one event per call --------------------------------------------------------------------------------


def test_a_handler_publishing_its_own_tool_invoked_is_found() -> None:
    def echo_event(params: NoParams, *, context: ToolContext) -> ToolResult[None]:
        now = context.session.clock.now()
        context.session.dispatch(
            ToolInvoked(
                prompt_name="",
                adapter="",
                name="echo",
                params=None,
                result=ToolResult(message="fake"),
                call_id="fake",
                session_id=context.session.session_id,
                started_at=now,
                finished_at=now,
            )
        )
        return ToolResult(message="ok")

    with pytest.raises(
        AssertionError, match="one call published 2 ToolInvoked events instead of exactly one"
    ):
        check_tool(Tool(name="echo", description="d", handler=echo_event), max_examples=5)


# -- the checker's own safety nets -----------------------------------------------------------------------


class LeakyDispatcher:
    """A broken dispatcher that runs the handler whatever the arguments were."""

    def __init__(self, tools: list[Tool[Any, Any]], *, session: Session, resources: object) -> None:
        self.inner = ToolDispatcher(tools, session=session)
        self.tool = tools[0]
        self.session = session

    def execute(self, call: Any, *, approved: bool = False) -> Any:
        try:
            self.tool.handler(AddNote("x"), context=ToolContext(session=self.session))
        except Exception:
            pass
        return self.inner.execute(call, approved=approved)


def test_check_tool_notices_invalid_arguments_reaching_the_handler(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(contract, "ToolDispatcher", LeakyDispatcher)

    with pytest.raises(AssertionError, match="invalid arguments reached the handler"):
        check_tool(ADD_NOTE, session_factory=notes_session, max_examples=10)


def _fake_invalid(arguments: str, kind: str = "wrong_type") -> Any:
    return lambda tool: st.just(InvalidArguments(text=arguments, kind=kind, reason="planted", path="$"))  # type: ignore[arg-type]


def test_check_tool_notices_a_schema_that_accepts_invalid_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(contract, "invalid_arguments_for", _fake_invalid('{"text": "fine"}'))

    with pytest.raises(AssertionError, match=r"the JSON Schema accepts invalid arguments \(wrong_type\)"):
        check_tool(ADD_NOTE, max_examples=5)


def test_check_tool_notices_serde_accepting_what_the_schema_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    # An integral float is an integer to serde; a schema saying "maximum 10" refuses 11.0 only by value.
    class LaxValidator:
        def __init__(self, schema: object) -> None:
            self.calls = 0

        def errors(self, instance: object) -> list[str]:
            return ["planted refusal"] if instance == {"text": "fine"} else []

    monkeypatch.setattr(contract, "SchemaValidator", LaxValidator)
    monkeypatch.setattr(contract, "invalid_arguments_for", _fake_invalid('{"text": "fine"}'))

    with pytest.raises(AssertionError, match="serde accepts arguments the JSON Schema refuses"):
        check_tool(ADD_NOTE, max_examples=5)


@dataclasses.dataclass(frozen=True)
class CallCount:
    calls: int


def count_every_call(state: tuple[CallCount, ...], event: ToolInvoked) -> tuple[CallCount, ...]:
    return (CallCount(len(state) + 1),)


def test_a_reducer_that_records_failed_calls_in_state_is_found() -> None:
    def counting_session() -> Session:
        session = Session()
        session.register_reducer(CallCount, ToolInvoked, count_every_call)  # a STATE slice
        return session

    def ping(params: NoParams, *, context: ToolContext) -> ToolResult[str]:
        return ToolResult.ok("pong")  # never fails, so only refused calls can be at fault

    with pytest.raises(AssertionError, match="a refused call changed state"):
        check_tool(
            Tool(name="ping", description="d", handler=ping),
            session_factory=counting_session,
            max_examples=10,
        )


def test_check_tool_reports_its_own_generator_bugs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(contract, "json_for", lambda tp: st.just({"text": ""}))

    with pytest.raises(AssertionError, match=r"generated arguments the schema refuses \(please report\)"):
        check_tool(ADD_NOTE, max_examples=5)


def test_check_tool_checks_the_strict_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(contract, "dump", lambda value: {"pinned": None})

    with pytest.raises(AssertionError, match="the strict schema refuses a valid value"):
        check_tool(ADD_NOTE, max_examples=5)


def test_settings_are_honoured() -> None:
    seen: list[str] = []

    def count(params: AddNote, *, context: ToolContext) -> ToolResult[None]:
        seen.append(params.text)
        return ToolResult(message="ok")

    check_tool(
        Tool(name="count", description="d", handler=count),
        settings=settings(max_examples=7, derandomize=True),
    )
    assert 1 <= len(seen) <= 7
    assert json.dumps(seen)


def test_check_tool_notices_valid_arguments_being_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    def offering_nothing(tools: list[Tool[Any, Any]], **kwargs: Any) -> ToolDispatcher:
        return ToolDispatcher([], **kwargs)  # every call is to an unknown tool: refused before parsing

    monkeypatch.setattr(contract, "ToolDispatcher", offering_nothing)

    with pytest.raises(AssertionError, match="valid arguments were refused before the handler ran"):
        check_tool(ADD_NOTE, max_examples=5)


# -- results the model cannot be shown -----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Measure:
    size: Annotated[int, Meta(ge=0, le=100)]


def measuring(bad: object) -> Tool[Measure, object]:
    """A tool whose result is ``bad`` from size 7 on, and a plain number below."""

    def measure(params: Measure, *, context: ToolContext) -> ToolResult[object]:
        return ToolResult.ok(bad if params.size >= 7 else params.size)

    return Tool(name="measure", description="Measure.", handler=measure)


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        (object(), "cannot dump a value of type object"),
        ({1, 2}, "cannot dump a value of type set"),
        (math.nan, "Out of range float values are not JSON compliant"),
        ([1.0, -math.inf], "Out of range float values are not JSON compliant"),
    ],
    ids=["object", "set", "nan", "infinity"],
)
def test_check_tool_reports_a_result_that_cannot_be_rendered(bad: object, problem: str) -> None:
    with pytest.raises(AssertionError) as failure:
        check_tool(measuring(bad), max_examples=FEW)

    message = str(failure.value)
    assert message.startswith("check_tool('measure'): the handler's result cannot be shown to the model")
    assert 'arguments: {"size": 7}' in message  # shrunk to the first size that returns it
    assert "could not be rendered" in message
    assert problem in message


def test_a_result_that_cannot_be_rendered_is_found_even_when_handler_errors_are_allowed() -> None:
    with pytest.raises(AssertionError, match="cannot be shown to the model"):
        check_tool(measuring(math.nan), allow_handler_errors=True, max_examples=FEW)


def test_an_async_handler_returning_a_result_that_cannot_be_rendered_is_found() -> None:
    async def measure(params: Measure, *, context: ToolContext) -> ToolResult[object]:
        return ToolResult.ok({"sizes": {params.size}})

    with pytest.raises(AssertionError) as failure:
        check_tool(Tool(name="measure", description="d", handler=measure), max_examples=FEW)

    assert 'arguments: {"size": 0}' in str(failure.value)
    assert "cannot dump a value of type set" in str(failure.value)


def test_check_tool_accepts_a_handler_returning_a_plain_value() -> None:
    def measure(params: Measure, *, context: ToolContext) -> int:
        return params.size

    check_tool(Tool(name="measure", description="d", handler=measure), max_examples=FEW)


def test_check_tool_reports_a_plain_value_that_cannot_be_rendered() -> None:
    def measure(params: Measure, *, context: ToolContext) -> float:
        return math.nan if params.size >= 7 else float(params.size)

    with pytest.raises(AssertionError) as failure:
        check_tool(Tool(name="measure", description="d", handler=measure), max_examples=FEW)

    message = str(failure.value)
    assert "cannot be shown to the model" in message
    assert "returned: nan" in message


def test_check_tool_reports_a_failed_result_whose_message_is_not_text() -> None:
    def measure(params: Measure, *, context: ToolContext) -> ToolResult[None]:
        return ToolResult(message=cast(str, params.size), success=False)

    with pytest.raises(AssertionError) as failure:
        check_tool(Tool(name="measure", description="d", handler=measure), max_examples=FEW)

    assert "its result's message is int, not a str" in str(failure.value)


def test_results_the_dispatcher_keeps_are_not_reported() -> None:
    def measure(params: Measure, *, context: ToolContext) -> ToolResult[object]:
        if params.size > 50:  # a failure with a value and a secret-looking message: kept, redacted
            return ToolResult(message="token sk-abcdefghijklmnopqrstuvwx", value=[params.size], success=False)
        return ToolResult.ok(Sized(params.size), message="measured")

    check_tool(Tool(name="measure", description="d", handler=measure), max_examples=FEW)


def test_a_tool_that_defers_its_result_passes_check_tool() -> None:
    def measure(params: Measure, *, context: ToolContext) -> ToolResult[int]:
        if params.size > 60:
            raise CallDeferred("a person measures this one")
        if params.size > 30:
            return cast(Any, CallDeferred("returned rather than raised"))
        return ToolResult.ok(params.size)

    check_tool(Tool(name="measure", description="d", handler=measure), max_examples=FEW)


@dataclasses.dataclass(frozen=True)
class Sized:
    """A value that renders itself (a float NaN inside would not matter: render() decides)."""

    size: int
    ratio: float = math.nan

    def render(self) -> str:
        return f"size {self.size}"


def test_an_async_handler_raising_on_a_value_the_schema_admits_is_found() -> None:
    async def measure(params: Measure, *, context: ToolContext) -> ToolResult[int]:
        if params.size > 20:
            raise ValueError(f"too big: {params.size}")
        return ToolResult.ok(params.size)

    with pytest.raises(AssertionError) as failure:
        check_tool(Tool(name="measure", description="d", handler=measure), max_examples=FEW)

    assert "the handler raised ValueError" in str(failure.value)
    assert 'arguments: {"size": 21}' in str(failure.value)
