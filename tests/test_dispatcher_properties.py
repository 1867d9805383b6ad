"""Property tests: rollback as a state machine, and fuzzed arguments."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from weakprompt.events import ToolInvoked
from weakprompt.jsontypes import JSONValue
from weakprompt.messages import ToolCall
from weakprompt.resources import Filesystem, InMemoryFilesystem, ResourceRegistry
from weakprompt.runtime import ToolDispatcher
from weakprompt.serde import SerdeError, parse
from weakprompt.session import Session
from weakprompt.testing import tool_calls_for
from weakprompt.tools import NoParams, Tool, ToolContext, ToolResult


@dataclass(frozen=True)
class Entry:
    text: str
    weight: int


@dataclass(frozen=True)
class Added:
    """The value a successful call returns; a session reducer folds it into Entry."""

    text: str
    weight: int


@dataclass
class AddParams:
    text: str
    weight: int = 1


@dataclass
class FailParams:
    mode: str
    text: str


def fold_added(state: tuple[Entry, ...], event: Added) -> tuple[Entry, ...]:
    """Keep entries sorted by weight then text: order depends on the whole history."""
    return tuple(sorted((*state, Entry(event.text, event.weight)), key=lambda e: (e.weight, e.text)))


def add(params: AddParams, *, context: ToolContext) -> ToolResult[Added]:
    fs = context.filesystem
    assert fs is not None
    fs.write_text(f"notes/{len(fs.list_dir('notes')) if fs.exists('notes') else 0}.txt", params.text)
    return ToolResult.ok(Added(params.text, params.weight))


def fail(params: FailParams, *, context: ToolContext) -> ToolResult[Added]:
    """Changes everything it can reach, then fails in the requested way."""
    context.session[Entry].append(Entry("poison-" + params.text, -1))
    context.session.dispatch(Added("poison-event", -2))
    fs = context.filesystem
    assert fs is not None
    fs.write_text("notes/poison.txt", params.text)
    if fs.exists("notes"):
        for name in fs.list_dir("notes")[:1]:
            fs.delete(f"notes/{name}")
    if params.mode == "result":
        return ToolResult(message="refused", value=Added("poison-value", -3), success=False)
    if params.mode == "type":
        raise TypeError(params.text)
    raise ValueError(params.text)


def make_dispatcher() -> tuple[Session, InMemoryFilesystem, ToolDispatcher, list[ToolInvoked]]:
    session = Session()
    session.register_reducer(Entry, Added, fold_added)
    fs = InMemoryFilesystem()
    events: list[ToolInvoked] = []
    session.dispatcher.subscribe(ToolInvoked, events.append)
    dispatcher = ToolDispatcher(
        [
            Tool(name="add", description="Add an entry.", handler=add),
            Tool(name="fail", description="Fail after mutating.", handler=fail),
        ],
        session=session,
        resources=ResourceRegistry({Filesystem: fs}),
    )
    return session, fs, dispatcher, events


texts = st.text(min_size=0, max_size=12)


class RollbackMachine(RuleBasedStateMachine):
    """Random successful and failing calls against one session."""

    @initialize()
    def setup(self) -> None:
        self.session, self.fs, self.dispatcher, self.events = make_dispatcher()
        self.successful: list[Added] = []
        self.calls = 0

    def expected_entries(self) -> tuple[Entry, ...]:
        state: tuple[Entry, ...] = ()
        for value in self.successful:
            state = fold_added(state, value)
        return state

    def call(self, name: str, arguments: str) -> ToolResult[object]:
        self.calls += 1
        return self.dispatcher.execute(ToolCall(id=str(self.calls), name=name, arguments=arguments)).result

    @rule(text=texts, weight=st.integers(-5, 5))
    def succeed(self, text: str, weight: int) -> None:
        result = self.call("add", json.dumps({"text": text, "weight": weight}))
        assert result.success
        self.successful.append(Added(text, weight))
        assert self.session[Entry].all() == self.expected_entries()

    @rule(mode=st.sampled_from(["raise", "type", "result"]), text=texts)
    def fail_after_mutating(self, mode: str, text: str) -> None:
        before = (dict(self.session.state()), self.fs.snapshot())
        result = self.call("fail", json.dumps({"mode": mode, "text": text}))
        assert not result.success
        assert (dict(self.session.state()), self.fs.snapshot()) == before

    @rule(
        name=st.sampled_from(["add", "fail", "missing"]),
        arguments=st.sampled_from(["{", "[]", "{}", '{"text": 1}', '{"text": "a", "extra": 0}']),
    )
    def model_mistake(self, name: str, arguments: str) -> None:
        before = (dict(self.session.state()), self.fs.snapshot())
        result = self.call(name, arguments)
        assert not result.success
        assert (dict(self.session.state()), self.fs.snapshot()) == before

    @invariant()
    def state_is_the_fold_of_successful_calls(self) -> None:
        assert self.session[Entry].all() == self.expected_entries()
        written = (
            sorted(self.fs.read_text(f"notes/{n}") for n in self.fs.list_dir("notes"))
            if self.fs.exists("notes")
            else []
        )
        assert written == sorted(value.text for value in self.successful)

    @invariant()
    def one_event_per_call(self) -> None:
        assert len(self.events) == self.calls
        assert len(self.session[ToolInvoked].all()) == self.calls


RollbackMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=25, deadline=None)
test_rollback_state_machine = RollbackMachine.TestCase


# -- fuzzing -----------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


def fuzz_dispatcher() -> tuple[ToolDispatcher, list[ToolInvoked]]:
    session, _fs, dispatcher, events = make_dispatcher()

    def nothing(params: NoParams, *, context: ToolContext) -> ToolResult[None]:
        return ToolResult(message="nothing", value=None)

    return (
        ToolDispatcher(
            [*dispatcher.tools.values(), Tool(name="nothing", description="d", handler=nothing)],
            session=session,
            resources=ResourceRegistry({Filesystem: InMemoryFilesystem()}),
        ),
        events,
    )


tool_names = st.sampled_from(["add", "fail", "nothing"]) | st.text(max_size=10)


@given(name=tool_names, value=json_values)
def test_arbitrary_json_arguments_never_raise(name: str, value: JSONValue) -> None:
    dispatcher, events = fuzz_dispatcher()
    text = json.dumps(value)
    execution = dispatcher.execute(ToolCall(id="f", name=name, arguments=text))
    assert isinstance(execution.message, str)
    assert events == [execution.event]
    if isinstance(value, dict):
        mapped = dispatcher.execute(ToolCall(id="g", name=name, arguments=value))
        assert mapped.result.success == execution.result.success or _has_non_finite(value)
        assert len(events) == 2


@given(name=tool_names, text=st.text())
def test_arbitrary_strings_as_arguments_never_raise(name: str, text: str) -> None:
    dispatcher, events = fuzz_dispatcher()
    execution = dispatcher.execute(ToolCall(id="f", name=name, arguments=text))
    assert events == [execution.event]
    if not execution.result.success:
        assert execution.message


@given(data=st.data())
def test_generated_calls_get_the_outcome_their_arguments_deserve(data: st.DataObject) -> None:
    """The testing kit's calls: valid ones run, invalid ones and unknown names are refused first."""
    dispatcher, events = fuzz_dispatcher()
    call = data.draw(tool_calls_for(dispatcher.tools.values()))
    execution = dispatcher.execute(call)

    assert events == [execution.event]
    tool = dispatcher.tools.get(call.name)
    if tool is None:
        assert not execution.success and "Unknown tool" in execution.message
        return
    try:
        arguments = json.loads(call.arguments) if isinstance(call.arguments, str) else call.arguments
        parse(tool.params_type, arguments)
    except (ValueError, SerdeError):
        assert not execution.success and execution.event.params is None
        return
    assert execution.event.params is not None
    assert execution.success == (call.name != "fail")


@pytest.mark.parametrize("junk", [object(), 42, None, ["a"]])
def test_arguments_of_the_wrong_python_type_are_a_failed_result(junk: object) -> None:
    dispatcher, events = fuzz_dispatcher()
    execution = dispatcher.execute(ToolCall(id="f", name="add", arguments=junk))  # type: ignore[arg-type]
    assert not execution.result.success and "must be a JSON object" in execution.message
    assert len(events) == 1


def _has_non_finite(value: JSONValue) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, list):
        return any(_has_non_finite(v) for v in value)
    if isinstance(value, dict):
        return any(_has_non_finite(v) for v in value.values())
    return False
