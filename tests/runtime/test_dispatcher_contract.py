"""The dispatcher's contract, one named test per rule of issue 4.

Every failing path must: not raise (unless the rule says so), leave session
and snapshotable resources as they were, and publish exactly one ToolInvoked.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import attrs
import pytest

from weakprompt.budget import Budget, BudgetTracker
from weakprompt.clock import FakeClock
from weakprompt.deadlines import Deadline
from weakprompt.errors import (
    BudgetExceededError,
    ConfigurationError,
    DeadlineExceededError,
    MaxTurnsExceededError,
    PromptEvaluationError,
    PromptValidationError,
    ToolValidationError,
    VisibilityExpansionRequired,
)
from weakprompt.events import ToolInvoked
from weakprompt.jsontypes import JSONObject
from weakprompt.messages import AssistantTurn, ToolCall
from weakprompt.resources import Filesystem, InMemoryFilesystem, ResourceRegistry
from weakprompt.runtime import ModelRequest, ToolDispatcher, ToolExecution, default_redact
from weakprompt.serde import SerdeTypeError
from weakprompt.session import Session
from weakprompt.tools import AnyTool, NoParams, Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from weakprompt.tokens import TokenCounter


@dataclass(frozen=True)
class Note:
    text: str


@dataclass
class AddNote:
    text: str
    times: int = 1


@dataclass
class Nested:
    note: AddNote
    tags: list[str]


class FakeAdapter:
    """Just enough of a ProviderAdapter for the event's ``adapter`` field."""

    name = "fake"
    model = "fake-1"
    context_window: int | None = None
    token_counter: TokenCounter | None = None

    def complete(self, request: ModelRequest) -> AssistantTurn:
        raise AssertionError("the dispatcher never calls the model")


@attrs.define
class Harness:
    session: Session
    fs: InMemoryFilesystem
    resources: ResourceRegistry
    clock: FakeClock
    events: list[ToolInvoked]
    handler_calls: list[object]
    dispatcher: ToolDispatcher

    def execute(self, name: str, arguments: object) -> ToolExecution:
        return self.dispatcher.execute(ToolCall(id="call-1", name=name, arguments=arguments))  # type: ignore[arg-type]

    def state(self) -> tuple[dict[type[object], tuple[object, ...]], object]:
        return dict(self.session.state()), self.fs.snapshot()


def make_harness(*extra_tools: AnyTool, deadline_seconds: float | None = None, **kwargs: object) -> Harness:
    clock = FakeClock()
    session = Session(clock=clock, session_id="s-1")
    fs = InMemoryFilesystem({"seed.txt": "original"})
    resources = ResourceRegistry({Filesystem: fs})
    events: list[ToolInvoked] = []
    session.bus.subscribe(ToolInvoked, events.append)
    calls: list[object] = []

    def add_note(params: AddNote, *, context: ToolContext) -> ToolResult[Note]:
        calls.append(params)
        for _ in range(params.times):
            context.session[Note].append(Note(params.text))
        return ToolResult.ok(Note(params.text), message=f"added {params.text}")

    def nested(params: Nested, *, context: ToolContext) -> ToolResult[None]:
        calls.append(params)
        return ToolResult(message="ok", value=None)

    tools: list[AnyTool] = [
        Tool(name="add_note", description="Add a note.", handler=add_note),
        Tool(name="nested", description="Nested params.", handler=nested),
        *extra_tools,
    ]
    deadline = Deadline.after(deadline_seconds, clock=clock) if deadline_seconds is not None else None
    dispatcher = ToolDispatcher(
        tools,
        session=session,
        resources=resources,
        deadline=deadline,
        adapter=FakeAdapter(),
        prompt_name="demo",
        **kwargs,  # type: ignore[arg-type]
    )
    return Harness(session, fs, resources, clock, events, calls, dispatcher)


def mutate_then(action: Callable[[], ToolResult[None]]) -> Callable[..., ToolResult[None]]:
    """A handler that changes the session and the filesystem, then fails via ``action``."""

    def handler(params: NoParams, *, context: ToolContext) -> ToolResult[None]:
        context.session[Note].append(Note("must be rolled back"))
        fs = context.filesystem
        assert fs is not None
        fs.write_text("seed.txt", "clobbered")
        fs.write_text("new.txt", "created")
        return action()

    return handler


def failing_tool(name: str, exc: BaseException) -> AnyTool:
    def action() -> ToolResult[None]:
        raise exc

    return Tool(
        name=name,
        description="Mutates state, then raises.",
        handler=mutate_then(action),
        params_type=NoParams,
        result_type=None,
    )


@pytest.fixture
def harness() -> Iterator[Harness]:
    yield make_harness()


# -- model mistakes before the handler --------------------------------------------------


def test_unknown_tool_returns_failed_result_naming_tool_and_listing_available(harness: Harness) -> None:
    execution = harness.execute("delete_everything", "{}")
    assert not execution.result.success
    assert "'delete_everything'" in execution.message
    assert "Available tools: add_note, nested." in execution.message
    assert execution.event.name == "delete_everything" and execution.event.params is None
    assert harness.handler_calls == []
    # the run goes on: the next call works
    assert harness.execute("add_note", '{"text": "after"}').result.success


def test_unknown_tool_with_no_tools_says_none_are_available() -> None:
    session = Session()
    execution = ToolDispatcher([], session=session).execute(ToolCall(id="c", name="x", arguments="{}"))
    assert "no tools are available" in execution.message


@pytest.mark.parametrize(
    ("arguments", "where"),
    [
        ('{"text": "a" "times": 2}', "line 1, column 14"),
        ('{"text": ', "line 1, column 10"),
        ("{'text': 1}", "column 2"),
    ],
)
def test_non_json_arguments_fail_saying_where_the_json_broke(
    harness: Harness, arguments: str, where: str
) -> None:
    execution = harness.execute("add_note", arguments)
    assert not execution.result.success
    assert "not valid JSON" in execution.message
    assert where in execution.message
    assert "<HERE>" in execution.message
    assert harness.handler_calls == []
    assert execution.event.arguments == arguments


@pytest.mark.parametrize(
    ("arguments", "kind"),
    [
        ("[1, 2]", "an array"),
        ("3", "a number"),
        ('"text"', "a string"),
        ("null", "null"),
        ("true", "a boolean"),
    ],
)
def test_non_object_arguments_fail_naming_the_expected_fields(
    harness: Harness, arguments: str, kind: str
) -> None:
    execution = harness.execute("add_note", arguments)
    assert not execution.result.success
    assert f"must be a JSON object; got {kind}" in execution.message
    assert "text, times" in execution.message
    assert harness.handler_calls == []


def test_missing_field_fails_with_json_path(harness: Harness) -> None:
    execution = harness.execute("add_note", '{"times": 2}')
    assert not execution.result.success
    assert "$.text" in execution.message and "expected" in execution.message
    assert harness.handler_calls == []


def test_wrong_type_fails_with_json_path_and_expected_type(harness: Harness) -> None:
    execution = harness.execute("nested", '{"note": {"text": "a", "times": "two"}, "tags": ["x", 3]}')
    assert not execution.result.success
    assert "$.note.times" in execution.message and "integer" in execution.message
    assert "$.tags[1]" in execution.message
    assert harness.handler_calls == []


def test_extra_key_fails_with_its_path(harness: Harness) -> None:
    execution = harness.execute("add_note", '{"text": "a", "colour": "red"}')
    assert not execution.result.success
    assert "colour" in execution.message
    assert harness.handler_calls == []


def test_mapping_arguments_skip_json_decoding(harness: Harness) -> None:
    execution = harness.execute("add_note", {"text": "from a mapping", "times": 2})
    assert execution.result.success
    assert harness.session[Note].all() == (Note("from a mapping"),) * 2
    assert json.loads(execution.event.arguments) == {"text": "from a mapping", "times": 2}


def test_empty_argument_string_means_an_empty_object() -> None:
    def ping(params: NoParams, *, context: ToolContext) -> ToolResult[str]:
        return ToolResult.ok("pong")

    harness = make_harness(Tool(name="ping", description="Ping.", handler=ping))
    assert harness.execute("ping", "").message == '"pong"'
    assert harness.execute("ping", "  ").result.success
    assert harness.execute("ping", "{}").result.success
    assert not harness.execute("ping", '{"x": 1}').result.success


def test_pathological_json_is_a_failed_result_not_a_crash(harness: Harness) -> None:
    too_deep = "[" * 100_000 + "]" * 100_000
    assert "nested too deeply" in harness.execute("add_note", too_deep).message
    too_long = '{"text": "a", "times": ' + "9" * 5000 + "}"
    execution = harness.execute("add_note", too_long)
    assert not execution.result.success
    assert "refused at $.times: an integer of 5000 digits; at most 4300" in execution.message
    assert len(harness.events) == 2


# -- handler failures roll back --------------------------------------------------------------


@pytest.mark.parametrize(
    "exc",
    [
        ToolValidationError("title must not be empty"),
        ValueError("bad value"),
        KeyError("missing"),
        RuntimeError("boom"),
        ZeroDivisionError("division by zero"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_handler_exception_after_mutating_state_is_rolled_back(exc: Exception) -> None:
    harness = make_harness(failing_tool("explode", exc))
    harness.execute("add_note", '{"text": "kept"}')
    before = harness.state()
    execution = harness.execute("explode", "{}")
    assert harness.state() == before
    assert harness.fs.read_text("seed.txt") == "original" and not harness.fs.exists("new.txt")
    assert harness.session[Note].all() == (Note("kept"),)
    assert not execution.result.success and execution.result.value is None
    assert f"{type(exc).__name__}: {exc}" in execution.message
    assert "Traceback" not in execution.message and "File " not in execution.message


def test_wrong_handler_signature_type_error_is_rolled_back_and_explained() -> None:
    def no_context(params: NoParams) -> ToolResult[None]:
        return ToolResult.ok(None)

    harness = make_harness(
        Tool(name="no_context", description="Wrong signature.", handler=no_context, params_type=NoParams)  # type: ignore[arg-type]
    )
    before = harness.state()
    execution = harness.execute("no_context", "{}")
    assert harness.state() == before
    assert not execution.result.success
    assert "TypeError" in execution.message and "context" in execution.message
    assert "defect in the tool" in execution.message


def test_type_error_inside_handler_is_not_called_a_signature_problem() -> None:
    harness = make_harness(failing_tool("typed", TypeError("unsupported operand")))
    before = harness.state()
    execution = harness.execute("typed", "{}")
    assert harness.state() == before
    assert "TypeError: unsupported operand" in execution.message
    assert "defect in the tool" not in execution.message


def test_failed_result_after_mutating_state_is_rolled_back() -> None:
    tool = Tool(
        name="refuse",
        description="Mutates then reports failure.",
        handler=mutate_then(lambda: ToolResult.error("cannot do that")),
        params_type=NoParams,
        result_type=None,
    )
    harness = make_harness(tool)
    before = harness.state()
    execution = harness.execute("refuse", "{}")
    assert harness.state() == before
    assert execution.message == "cannot do that" and not execution.result.success


def test_a_handler_returning_a_plain_value_succeeds_with_it_and_keeps_its_changes() -> None:
    tool = Tool(
        name="plain",
        description="Returns a string.",
        handler=mutate_then(lambda: "done"),  # type: ignore[arg-type,return-value]
        params_type=NoParams,
        result_type=str,
    )
    harness = make_harness(tool)
    before = harness.state()
    execution = harness.execute("plain", "{}")
    assert harness.state() != before
    assert execution.result == ToolResult.ok("done")
    assert execution.message == '"done"' and execution.event.success


def test_value_that_cannot_be_rendered_fails_the_call_and_rolls_back() -> None:
    class Broken:
        def render(self) -> str:
            raise RuntimeError("render exploded")

    tool = Tool(
        name="broken",
        description="Value fails to render.",
        handler=mutate_then(lambda: ToolResult.ok(Broken())),  # type: ignore[arg-type,return-value]
        params_type=NoParams,
        result_type=None,
    )
    harness = make_harness(tool)
    before = harness.state()
    execution = harness.execute("broken", "{}")
    assert harness.state() == before
    assert "RuntimeError: render exploded" in execution.message


def test_redaction_hook_decides_the_error_text() -> None:
    harness = make_harness(
        failing_tool("leaky", RuntimeError("internal host db-7.corp failed")),
        redact=lambda text: text.replace("db-7.corp", "[host]"),
    )
    execution = harness.execute("leaky", "{}")
    assert execution.message == "Tool 'leaky' failed: RuntimeError: internal host [host] failed"
    assert execution.event.result.message == execution.message


def test_default_redaction_is_type_and_message_and_cuts_long_text() -> None:
    assert default_redact(ValueError("x")) == "ValueError: x"
    assert default_redact(ValueError()) == "ValueError"
    long = default_redact(ValueError("y" * 5000))
    assert len(long) == 2000 and long.endswith("(truncated)")


# -- deadline and budget --------------------------------------------------------------------------


def test_expired_deadline_means_handler_not_called_and_failed_result() -> None:
    harness = make_harness(deadline_seconds=5)
    harness.clock.advance(5)
    execution = harness.execute("add_note", '{"text": "late"}')
    assert not execution.result.success
    assert "deadline" in execution.message
    assert harness.handler_calls == []
    assert harness.session[Note].all() == ()
    assert len(harness.events) == 1


def test_deadline_exceeded_inside_handler_becomes_prompt_evaluation_error() -> None:
    harness = make_harness(
        failing_tool("slow", DeadlineExceededError("deadline passed")), deadline_seconds=60
    )
    before = harness.state()
    with pytest.raises(PromptEvaluationError, match="hit a limit") as raised:
        harness.execute("slow", "{}")
    assert isinstance(raised.value.__cause__, DeadlineExceededError)
    assert harness.state() == before
    assert len(harness.events) == 1 and not harness.events[0].success


def test_budget_exceeded_inside_handler_becomes_prompt_evaluation_error() -> None:
    tracker = BudgetTracker(Budget(max_total_tokens=1))
    harness = make_harness(
        failing_tool("spendy", BudgetExceededError("token budget used up")), budget_tracker=tracker
    )
    before = harness.state()
    with pytest.raises(PromptEvaluationError) as raised:
        harness.execute("spendy", "{}")
    assert isinstance(raised.value.__cause__, BudgetExceededError)
    assert harness.state() == before
    assert len(harness.events) == 1


# -- exceptions that belong to the evaluation loop -------------------------------------------------------


@pytest.mark.parametrize(
    "exc",
    [
        VisibilityExpansionRequired(["tools.advanced"], reason="need it"),
        PromptEvaluationError("stop"),
        MaxTurnsExceededError(3),
    ],
    ids=lambda e: type(e).__name__,
)
def test_loop_exceptions_are_reraised_after_rollback_and_one_event(exc: Exception) -> None:
    harness = make_harness(failing_tool("escalate", exc))
    before = harness.state()
    with pytest.raises(type(exc)) as raised:
        harness.execute("escalate", "{}")
    assert raised.value is exc
    assert harness.state() == before
    assert len(harness.events) == 1
    assert not harness.events[0].success and type(exc).__name__ in harness.events[0].result.message


def test_keyboard_interrupt_rolls_back_publishes_and_propagates() -> None:
    harness = make_harness(failing_tool("interrupted", KeyboardInterrupt()))
    before = harness.state()
    with pytest.raises(KeyboardInterrupt):
        harness.execute("interrupted", "{}")
    assert harness.state() == before
    assert len(harness.events) == 1 and "interrupted" in harness.events[0].result.message


# -- events --------------------------------------------------------------------------------


ALL_PATHS: list[tuple[str, str, type[BaseException] | None]] = [
    ("add_note", '{"text": "ok"}', None),
    ("nope", "{}", None),
    ("add_note", "{not json", None),
    ("add_note", "[]", None),
    ("add_note", "{}", None),
    ("add_note", '{"text": 1}', None),
    ("add_note", '{"text": "a", "x": 1}', None),
    ("raises", "{}", None),
    ("refuses", "{}", None),
    ("escalates", "{}", VisibilityExpansionRequired),
    ("times_out", "{}", PromptEvaluationError),
]


@pytest.mark.parametrize(("name", "arguments", "raises"), ALL_PATHS)
def test_exactly_one_tool_invoked_per_call_on_every_path(
    name: str, arguments: str, raises: type[BaseException] | None
) -> None:
    harness = make_harness(
        failing_tool("raises", ValueError("x")),
        Tool(
            name="refuses",
            description="d",
            handler=mutate_then(lambda: ToolResult.error("no")),
            params_type=NoParams,
            result_type=None,
        ),
        failing_tool("escalates", VisibilityExpansionRequired(["a"])),
        failing_tool("times_out", DeadlineExceededError("late")),
    )
    counted: list[object] = []
    harness.session.bus.subscribe(ToolInvoked, counted.append)
    if raises is None:
        execution = harness.execute(name, arguments)
        assert counted == [execution.event]
    else:
        with pytest.raises(raises):
            harness.execute(name, arguments)
    assert len(counted) == 1
    # the session records the call once, never twice
    assert len(harness.session[ToolInvoked].all()) == 1


def test_expired_deadline_path_also_publishes_one_event() -> None:
    harness = make_harness(deadline_seconds=0)
    harness.execute("add_note", '{"text": "late"}')
    assert len(harness.events) == 1


def test_event_records_the_call(harness: Harness) -> None:
    start = harness.clock.now()
    execution = harness.execute("add_note", '{"text": "hello", "times": 1}')
    event = execution.event
    assert (event.prompt_name, event.adapter, event.name, event.call_id, event.session_id) == (
        "demo",
        "fake",
        "add_note",
        "call-1",
        "s-1",
    )
    assert event.params == AddNote("hello", 1)
    assert event.result is execution.result and event.success
    assert event.arguments == '{"text": "hello", "times": 1}'
    assert event.started_at == start and event.finished_at == start
    assert execution.message == '{"text":"hello"}'
    assert execution.success and execution.subscriber_errors == ()


def test_subscriber_errors_are_surfaced_on_the_execution(harness: Harness) -> None:
    def broken_subscriber(event: ToolInvoked) -> None:
        raise RuntimeError("reducer bug")

    harness.session.bus.subscribe(ToolInvoked, broken_subscriber)
    execution = harness.execute("add_note", '{"text": "a"}')
    assert execution.result.success
    assert len(execution.subscriber_errors) == 1
    assert str(execution.subscriber_errors[0].exception) == "reducer bug"
    assert harness.session[Note].all() == (Note("a"),)


def test_failed_rollback_stops_the_evaluation() -> None:
    class Unrestorable:
        def snapshot(self) -> object:
            return object()

        def restore(self, snapshot: object, /) -> None:
            raise OSError("disk gone")

    harness = make_harness(failing_tool("explode", ValueError("x")))
    harness.resources.register(Unrestorable, Unrestorable())
    with pytest.raises(PromptEvaluationError, match="could not be rolled back: OSError: disk gone"):
        harness.execute("explode", "{}")
    assert len(harness.events) == 1
    assert harness.fs.read_text("seed.txt") == "original"  # the other resources were still restored


# -- wiring ----------------------------------------------------------------------------------


def test_duplicate_tool_names_are_a_configuration_error() -> None:
    tool = failing_tool("twice", ValueError("x"))
    with pytest.raises(ConfigurationError, match="'twice'"):
        ToolDispatcher([tool, tool], session=Session())


def test_handler_receives_a_context_with_the_dispatchers_collaborators() -> None:
    seen: list[ToolContext] = []

    def inspect_context(params: NoParams, *, context: ToolContext) -> ToolResult[None]:
        seen.append(context)
        return ToolResult(message="seen", value=None)

    tracker = BudgetTracker(Budget(max_total_tokens=100))
    harness = make_harness(
        Tool(name="inspect", description="d", handler=inspect_context),
        budget_tracker=tracker,
        deadline_seconds=30,
    )
    assert harness.execute("inspect", "{}").message == "seen"
    (context,) = seen
    assert context.session is harness.session
    assert context.resources is harness.resources
    assert context.filesystem is harness.fs
    assert context.budget_tracker is tracker
    assert context.deadline is not None and not context.deadline.expired()
    assert isinstance(context.adapter, FakeAdapter)
    assert set(harness.dispatcher.tools) == {"add_note", "nested", "inspect"}


# -- defects outside the model's control ----------------------------------------------------


@dataclass
class Unmappable:
    value: complex


def test_params_type_serde_cannot_read_is_refused_where_the_tool_is_defined() -> None:
    def handler(params: Unmappable, *, context: ToolContext) -> ToolResult[None]:
        raise AssertionError("never called")

    with pytest.raises(PromptValidationError, match=r"tool 'odd': params field 'value' \(complex\)"):
        Tool(name="odd", description="d", handler=handler, params_type=Unmappable, result_type=None)


class _UnreadableArguments(Tool[NoParams, None]):
    """A tool whose own argument reading is broken (as a mounted tool's validator could be)."""

    def parse_arguments(self, arguments: JSONObject) -> NoParams:
        raise SerdeTypeError("serde cannot map complex to JSON")


def test_arguments_the_tool_cannot_read_are_a_failed_result_blaming_the_tool() -> None:
    def handler(params: NoParams, *, context: ToolContext) -> ToolResult[None]:
        raise AssertionError("never called")

    harness = make_harness(_UnreadableArguments(name="odd", description="d", handler=handler))
    execution = harness.execute("odd", '{"value": 1}')
    assert not execution.result.success
    assert "could not check its arguments" in execution.message and "complex" in execution.message
    assert len(harness.events) == 1


def test_failed_session_restore_still_restores_resources_and_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    harness = make_harness(failing_tool("explode", ValueError("x")))

    def broken_restore(snapshot: object) -> None:
        raise RuntimeError("session restore broke")

    monkeypatch.setattr(harness.session, "restore", broken_restore)
    with pytest.raises(PromptEvaluationError, match="RuntimeError: session restore broke") as raised:
        harness.execute("explode", "{}")
    assert isinstance(raised.value.__cause__, RuntimeError)
    assert harness.fs.read_text("seed.txt") == "original"
    assert len(harness.events) == 1


def test_mapping_arguments_that_are_not_json_still_get_recorded(harness: Harness) -> None:
    odd = {("a", 1): 1}
    execution = harness.execute("add_note", odd)
    assert not execution.result.success
    assert execution.event.arguments == repr(odd)
