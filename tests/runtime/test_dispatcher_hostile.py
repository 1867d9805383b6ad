"""Hostile exceptions, hostile arguments and odd tool results: never an escape, always one event.

Each test names one way a model or a tool could still break a run (issue
"Hardening"), and checks the three promises of the dispatcher: no
exception out of ``execute()``, state rolled back on failure, exactly one
``ToolInvoked``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import pytest

from weakprompt.errors import DeadlineExceededError, PromptEvaluationError, VisibilityExpansionRequired
from weakprompt.events import ToolInvoked
from weakprompt.jsontypes import JSONValue
from weakprompt.messages import ToolCall
from weakprompt.runtime import ToolDispatcher, ToolExecution
from weakprompt.runtime.redaction import MAX_ERROR_TEXT
from weakprompt.session import Session
from weakprompt.tools import AnyTool, NoParams, Tool, ToolContext, ToolResult


@dataclass(frozen=True)
class Note:
    text: str


@dataclass
class Free:
    """Params that take any JSON value, so arguments reach the handler unfiltered by the schema."""

    x: object = None


class BadStr(Exception):
    def __str__(self) -> str:
        raise RuntimeError("str exploded")


class NonStrStr(Exception):
    def __str__(self) -> str:
        return 7  # type: ignore[return-value]  # noqa: PLE0307


class RecursiveStr(Exception):
    def __str__(self) -> str:
        return str(self)


class BadStrAndRepr(Exception):
    def __str__(self) -> str:
        raise RuntimeError("str exploded")

    def __repr__(self) -> str:
        raise RuntimeError("repr exploded")


class BadRepr:
    def __repr__(self) -> str:
        raise RuntimeError("repr exploded")


class RaisingMapping(Mapping[str, JSONValue]):
    """A mapping whose items cannot be read."""

    def __getitem__(self, key: str) -> JSONValue:
        raise RuntimeError("getitem exploded")

    def __iter__(self) -> Iterator[str]:
        return iter(["x"])

    def __len__(self) -> int:
        return 1


class Liar:
    """An object whose type cannot even be checked: isinstance() raises on it."""

    @property
    def __class__(self) -> type:  # type: ignore[override]
        raise RuntimeError("no class")


class Harness:
    def __init__(self, *tools: AnyTool, **kwargs: object) -> None:
        self.session = Session(session_id="s")
        self.events: list[ToolInvoked] = []
        self.session.bus.subscribe(ToolInvoked, self.events.append)

        def free(params: Free, *, context: ToolContext) -> ToolResult[None]:
            context.session[Note].append(Note("kept"))
            return ToolResult(message="ok", value=None)

        self.dispatcher = ToolDispatcher(
            [Tool(name="free", description="Anything.", handler=free), *tools],
            session=self.session,
            **kwargs,  # type: ignore[arg-type]
        )

    def execute(self, name: str, arguments: object) -> ToolExecution:
        """Runs one call; the test fails if anything at all escapes."""
        before = len(self.events)
        execution = self.dispatcher.execute(ToolCall(id="c", name=name, arguments=arguments))  # type: ignore[arg-type]
        assert self.events[before:] == [execution.event]
        assert isinstance(execution.message, str)
        return execution


def raising(exc: BaseException) -> AnyTool:
    def handler(params: NoParams, *, context: ToolContext) -> ToolResult[None]:
        context.session[Note].append(Note("half"))
        raise exc

    return Tool(name="raising", description="Half-done, then raises.", handler=handler)


def returning(result: object) -> AnyTool:
    def handler(params: NoParams, *, context: ToolContext) -> ToolResult[None]:
        context.session[Note].append(Note("half"))
        return result  # type: ignore[return-value]

    return Tool(name="returning", description="Half-done, then returns.", handler=handler)


# -- A: exceptions whose __str__ / __repr__ misbehave ----------------------------------------------


@pytest.mark.parametrize(
    "exc", [BadStr(), NonStrStr(), RecursiveStr(), BadStrAndRepr()], ids=lambda e: type(e).__name__
)
def test_handler_exception_with_hostile_str_is_rolled_back_and_reported_once(exc: Exception) -> None:
    harness = Harness(raising(exc))
    execution = harness.execute("raising", "{}")
    assert not execution.result.success
    assert execution.message == f"Tool 'raising' failed: {type(exc).__name__}: <unprintable>"
    assert harness.session[Note].all() == ()


def test_pass_through_exception_with_hostile_str_is_rolled_back_reported_and_reraised() -> None:
    class HostileExpansion(VisibilityExpansionRequired):
        def __str__(self) -> str:
            raise RuntimeError("str exploded")

    exc = HostileExpansion(["a"])
    harness = Harness(raising(exc))
    with pytest.raises(HostileExpansion):
        harness.dispatcher.execute(ToolCall(id="c", name="raising", arguments="{}"))
    assert harness.session[Note].all() == ()
    assert len(harness.events) == 1 and "HostileExpansion: <unprintable>" in harness.events[0].result.message


def test_limit_exception_with_hostile_str_becomes_a_readable_evaluation_error() -> None:
    class HostileDeadline(DeadlineExceededError):
        def __str__(self) -> str:
            raise RuntimeError("str exploded")

    harness = Harness(raising(HostileDeadline()))
    with pytest.raises(PromptEvaluationError, match="HostileDeadline: <unprintable>"):
        harness.dispatcher.execute(ToolCall(id="c", name="raising", arguments="{}"))
    assert harness.session[Note].all() == () and len(harness.events) == 1


def test_interrupt_with_hostile_str_is_rolled_back_reported_and_reraised() -> None:
    class HostileInterrupt(KeyboardInterrupt):
        def __str__(self) -> str:
            raise RuntimeError("str exploded")

    harness = Harness(raising(HostileInterrupt()))
    with pytest.raises(HostileInterrupt):
        harness.dispatcher.execute(ToolCall(id="c", name="raising", arguments="{}"))
    assert harness.session[Note].all() == () and len(harness.events) == 1


def test_failed_rollback_with_hostile_exception_is_still_an_evaluation_error() -> None:
    harness = Harness(raising(ValueError("x")))

    def broken_restore(snapshot: object) -> None:
        raise BadStr()

    harness.session.restore = broken_restore  # type: ignore[method-assign]
    with pytest.raises(PromptEvaluationError, match="could not be rolled back: BadStr: <unprintable>"):
        harness.dispatcher.execute(ToolCall(id="c", name="raising", arguments="{}"))
    assert len(harness.events) == 1


def test_state_that_cannot_be_snapshotted_stops_before_the_handler_runs() -> None:
    harness = Harness(raising(ValueError("x")))

    def broken_snapshot() -> object:
        raise BadStr()

    harness.session.snapshot = broken_snapshot  # type: ignore[method-assign,assignment]
    with pytest.raises(PromptEvaluationError, match="saving state failed: BadStr: <unprintable>"):
        harness.dispatcher.execute(ToolCall(id="c", name="raising", arguments="{}"))
    assert harness.session[Note].all() == ()
    assert len(harness.events) == 1 and "was not run" in harness.events[0].result.message


# -- B: mapping arguments that cannot be rendered or read ------------------------------------------


def _nested(depth: int) -> dict[str, JSONValue]:
    root: dict[str, JSONValue] = {}
    node = root
    for _ in range(depth):
        child: dict[str, JSONValue] = {}
        node["a"] = child
        node = child
    return root


@pytest.mark.parametrize("name", ["nope", "free"])
@pytest.mark.parametrize(
    ("arguments", "where", "problem"),
    [
        ({"x": 10**5000}, "$.x", "an integer of more than 4300 digits"),
        (_nested(1000), "$.a.a.a", "nested more than 100 levels deep"),
        ({"x": BadRepr()}, "$.x", "a BadRepr is not a JSON value"),
        (RaisingMapping(), "$", "a mapping that could not be read (RuntimeError: getitem exploded)"),
        ({"x": [1, {"y": RaisingMapping()}]}, "$.x[1].y", "could not be read"),
        ({"x": float("nan")}, "$.x", "nan is not a JSON number"),
        ({"x": [float("-inf")]}, "$.x[0]", "-inf is not a JSON number"),
        ({1: "one"}, "$", "an object key must be a string, got int 1"),
        ({"x": {("a", 1): 1}}, "$.x", "got tuple ('a', 1)"),
        ({"x": {1, 2}}, "$.x", "a set is not a JSON value"),
        ({"x": b"bytes"}, "$.x", "a bytes is not a JSON value"),
        ({"x": "a\udc80"}, "$.x", "lone surrogate (\\udc80) at character 1"),
        ({"k\ud800": 1}, "$", "the key holds a lone surrogate"),
    ],
)
def test_hostile_mapping_arguments_are_a_failed_result_with_one_event(
    name: str, arguments: object, where: str, problem: str
) -> None:
    harness = Harness()
    execution = harness.execute(name, arguments)
    assert not execution.result.success
    assert harness.session[Note].all() == ()
    if name == "free":
        assert f"refused at {where}" in execution.message or f"(at {where}" in execution.message
        assert problem in execution.message
    assert isinstance(execution.event.arguments, str)


def test_mapping_arguments_of_subclassed_types_are_read_as_plain_json() -> None:
    class Text(str):
        def __str__(self) -> str:
            raise RuntimeError("never called")

    class Number(int):
        pass

    seen: list[object] = []

    def capture(params: Free, *, context: ToolContext) -> ToolResult[None]:
        seen.append(params.x)
        return ToolResult(message="ok", value=None)

    harness = Harness(Tool(name="capture", description="d", handler=capture))
    execution = harness.execute("capture", {Text("x"): [Text("a"), Number(3), 1.5, (True, None)]})
    assert execution.result.success
    assert seen == [["a", 3, 1.5, [True, None]]]
    assert [type(v) for v in seen[0]] == [str, int, float, list]  # type: ignore[union-attr]
    assert json.loads(execution.event.arguments) == {"x": ["a", 3, 1.5, [True, None]]}


def test_values_whose_type_cannot_be_checked_are_refused_with_their_path() -> None:
    harness = Harness()
    nested = harness.execute("free", {"x": [1, Liar()]})
    assert "refused at $.x[1]: a value that could not be read (RuntimeError: no class)" in nested.message
    in_object = harness.execute("free", {"x": {"y": Liar()}})
    assert "refused at $.x.y: a value that could not be read" in in_object.message
    as_key = harness.execute("free", {"x": {Liar(): 1}})
    assert "refused at $.x: a key that could not be read (RuntimeError: no class)" in as_key.message
    whole = harness.execute("free", Liar())
    assert "refused at $: the arguments could not be read (RuntimeError: no class)" in whole.message
    assert whole.event.arguments.startswith("<") and "Liar" in whole.event.arguments
    named = harness.dispatcher.execute(ToolCall(id="c", name=Liar(), arguments="{}"))  # type: ignore[arg-type]
    assert named.message.startswith("Unknown tool '<") and len(harness.events) == 5


def test_argument_text_of_a_str_subclass_is_read_as_plain_text() -> None:
    class Text(str):
        def __str__(self) -> str:
            raise RuntimeError("never called")

    harness = Harness()
    execution = harness.execute("free", Text('{"x": 1}'))
    assert execution.result.success and execution.event.arguments == '{"x": 1}'
    assert not harness.execute("free", Text('{"x": ')).result.success


def test_duplicate_keys_after_reading_subclassed_keys_are_refused() -> None:
    class Twin(str):
        def __hash__(self) -> int:
            return id(self)

        def __eq__(self, other: object) -> bool:
            return self is other

    harness = Harness()
    execution = harness.execute("free", {Twin("x"): 1, Twin("x"): 2})
    assert 'refused at $: the key "x" appears more than once' in execution.message


def test_arguments_of_a_successful_call_are_recorded_even_when_the_event_text_is_odd() -> None:
    harness = Harness()
    execution = harness.execute("free", {"x": "é"})
    assert execution.result.success and execution.event.arguments == '{"x":"é"}'
    assert harness.session[Note].all() == (Note("kept"),)


# -- C: odd values from a tool, and non-standard JSON ------------------------------------------------


class IntRender:
    def render(self) -> int:
        return 5


@pytest.mark.parametrize(
    ("result", "problem"),
    [
        (ToolResult.ok(IntRender()), "its result rendered as int, not as text"),
        (ToolResult(message=5, value=None), "its result's message is int, not a str"),  # type: ignore[arg-type]
        (ToolResult(message="m", success="yes"), "its result's success is str, not a bool"),  # type: ignore[arg-type]
        (ToolResult(message="bad \udc80"), "lone surrogate (\\udc80) at character 4"),
        (ToolResult.ok({"mean": math.nan}), "could not be rendered: ValueError: Out of range float"),
    ],
    ids=["render-int", "message-int", "success-str", "surrogate", "nan-value"],
)
def test_a_result_the_model_cannot_be_shown_is_a_failed_result_and_rolled_back(
    result: object, problem: str
) -> None:
    harness = Harness(returning(result))
    execution = harness.execute("returning", "{}")
    assert not execution.result.success
    assert problem in execution.message and "a defect in the tool" in execution.message
    assert harness.session[Note].all() == ()


@pytest.mark.parametrize(
    ("text", "where", "problem"),
    [
        ('{"x": NaN}', "$.x", "NaN is not a JSON number"),
        ('{"x": [1, Infinity]}', "$.x[1]", "Infinity is not a JSON number"),
        ('{"x": {"y": -Infinity}}', "$.x.y", "-Infinity is not a JSON number"),
        ('{"x": 1e999}', "$.x", "the number 1e999 is too large: it would read as infinity"),
        ('{"x": 1, "x": 2}', "$", 'the key "x" appears more than once'),
        ('{"x": {"a": 1, "b": 2, "a": 3}}', "$.x", 'the key "a" appears more than once'),
        ('{"x": "\\ud800"}', "$.x", "the string holds a lone surrogate (\\ud800) at character 0"),
        ('{"x": ' + "[" * 150 + "]" * 150 + "}", "$.x", "nested more than 100 levels deep"),
    ],
)
def test_non_standard_json_text_is_refused_naming_the_problem_and_path(
    text: str, where: str, problem: str
) -> None:
    harness = Harness()
    execution = harness.execute("free", text)
    assert not execution.result.success
    assert f"refused at {where}: {problem}" in execution.message or (
        problem in execution.message and f"(at {where}" in execution.message
    )
    assert execution.event.arguments == text


def test_nesting_is_accepted_up_to_one_hundred_levels() -> None:
    harness = Harness()
    assert harness.execute("free", '{"x": ' + "[" * 99 + "]" * 99 + "}").result.success
    assert harness.execute("free", {"x": _nested(98)}).result.success
    too_deep = harness.execute("free", '{"x": ' + "[" * 100 + "]" * 100 + "}")
    assert "nested more than 100 levels deep" in too_deep.message


def test_standard_json_with_large_and_escaped_values_is_accepted() -> None:
    harness = Harness()
    text = '{"x": [' + "9" * 4300 + ', -0, 1e308, "\\ud83d\\ude00", "\\u0000", {}]}'
    assert harness.execute("free", text).result.success


# -- D: model-given text is echoed only in part ----------------------------------------------------------


def test_a_huge_unknown_tool_name_is_echoed_cut() -> None:
    harness = Harness()
    execution = harness.execute("n" * 10_000_000, "{}")
    assert len(execution.message) < 300
    assert "(10000000 characters)" in execution.message


def test_the_list_of_known_tools_is_bounded() -> None:
    def nothing(params: NoParams, *, context: ToolContext) -> ToolResult[None]:
        return ToolResult(message="", value=None)

    many = [Tool(name=f"tool_{i:03d}", description="d", handler=nothing) for i in range(300)]
    execution = Harness(*many).execute("missing", "{}")
    assert "tool_000" in execution.message and "tool_299" not in execution.message
    assert "and 261 more" in execution.message


def test_huge_keys_and_values_in_arguments_are_echoed_cut() -> None:
    harness = Harness()
    key = "k" * 1_000_000
    for arguments in ({key: 1}, json.dumps({key: 1}), {"x": {key: float("nan")}}, {"x": "v" * 1_000_000}):
        execution = harness.execute("free", arguments)
        assert len(execution.message) <= MAX_ERROR_TEXT


def test_invalid_json_and_extra_fields_are_echoed_cut() -> None:
    harness = Harness()
    assert len(harness.execute("free", "{" + "x" * 1_000_000).message) < 400
    many_extras = {f"extra_{i}_" + "z" * 1000: i for i in range(100)}
    assert len(harness.execute("free", many_extras).message) <= MAX_ERROR_TEXT
