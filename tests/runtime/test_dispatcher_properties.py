"""Property tests: rollback as a state machine, and fuzzed arguments."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from weakprompt.errors import (
    BudgetExceededError,
    DeadlineExceededError,
    PromptEvaluationError,
    ToolValidationError,
    VisibilityExpansionRequired,
)
from weakprompt.events import ToolInvoked
from weakprompt.jsontypes import JSONValue
from weakprompt.messages import ToolCall
from weakprompt.resources import Filesystem, InMemoryFilesystem, ResourceRegistry
from weakprompt.runtime import ToolDispatcher
from weakprompt.runtime.redaction import lone_surrogate
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
    session.bus.subscribe(ToolInvoked, events.append)
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
        # text and mapping follow the same rules (NaN and the infinities are refused either way)
        mapped = dispatcher.execute(ToolCall(id="g", name=name, arguments=value))
        assert mapped.result.success == execution.result.success
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


# -- hostile fuzzing: arguments no JSON decoder would produce, handlers that misbehave -------------
#
# Properties, for every call: nothing escapes execute() but the exceptions the contract
# re-raises (and only when the handler ran and raised one); exactly one ToolInvoked; a
# failed call leaves session and filesystem as they were; every text the call produced can
# be stored (no lone surrogates). The "fuzz" profile (tests/conftest.py) runs 10,000
# examples of each under CI.


class HostileText(str):
    def __str__(self) -> str:
        raise RuntimeError("str of a str subclass")


class HostileNumber(int):
    def __repr__(self) -> str:
        raise RuntimeError("repr of an int subclass")


class BadRepr:
    def __repr__(self) -> str:
        raise RuntimeError("repr exploded")


class RaisingMapping(Mapping[str, object]):
    def __getitem__(self, key: str) -> object:
        raise RuntimeError("getitem exploded")

    def __iter__(self) -> Iterator[str]:
        return iter(["x"])

    def __len__(self) -> int:
        return 1


def _nested(depth: int, as_list: bool) -> object:
    node: object = 0
    for _ in range(depth):
        node = [node] if as_list else {"a": node}
    return node


any_code_point = st.characters(exclude_categories=()) | st.characters(categories=["Cs"])
any_text = st.text(any_code_point, max_size=12)
odd_keys = (
    any_text | st.integers() | st.tuples(st.integers()) | st.builds(BadRepr) | st.just(HostileText("k"))
)
hostile_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(4301, 6000).map(lambda digits: -(10**digits))  # too long to write as JSON
    | st.floats()  # NaN and the infinities included
    | any_text
    | st.builds(BadRepr)
    | st.builds(object)
    | st.binary(max_size=4)
    | st.builds(HostileText, any_text)
    | st.builds(HostileNumber, st.integers())  # built, not sampled: hypothesis would repr a sample
    | st.builds(RaisingMapping)
    | st.frozensets(st.integers(), max_size=2)
    | st.builds(_nested, st.integers(95, 1100), st.booleans()),
    lambda children: (
        st.lists(children, max_size=3)
        | st.tuples(children, children)
        | st.dictionaries(odd_keys, children, max_size=3)
    ),
    max_leaves=8,
)
hostile_arguments = (
    st.builds(lambda value: {"x": value}, hostile_values)
    | st.dictionaries(odd_keys, hostile_values, max_size=3)
    | st.just(RaisingMapping())
)
# Text: any code points, and JSON documents carrying the tokens and shapes the dispatcher refuses.
non_standard_json = st.builds(
    lambda token, key: f'{{"x": {token}, "{key}": 1, "{key}": 2}}',
    st.sampled_from(
        ["NaN", "Infinity", "-Infinity", "1e999", "9" * 4400, '"\\ud800"', "1", "[" * 120 + "]" * 120]
    ),
    st.sampled_from(["x", "y"]),
)
hostile_texts = (
    st.text(any_code_point) | non_standard_json | st.builds(json.dumps, json_values.map(lambda v: {"x": v}))
)


def _exception_class(base: type[BaseException], str_mode: str, repr_mode: str) -> type[BaseException]:
    def text(mode: str, fallback: object) -> object:
        def method(self: BaseException) -> object:
            if mode == "raise":
                raise RuntimeError("describing exploded")
            if mode == "non-str":
                return 42
            if mode == "recurse":
                return str(self)
            if mode == "subclass":
                return HostileText("a hostile message")
            return fallback(self)  # type: ignore[operator]

        return method

    namespace = {"__str__": text(str_mode, base.__str__), "__repr__": text(repr_mode, base.__repr__)}
    return type(f"Hostile{base.__name__}", (base,), namespace)


# Exceptions the dispatcher re-raises by contract (after rollback and the event), and as what.
ESCAPES: dict[type[BaseException], type[BaseException]] = {
    VisibilityExpansionRequired: VisibilityExpansionRequired,
    PromptEvaluationError: PromptEvaluationError,
    DeadlineExceededError: PromptEvaluationError,
    BudgetExceededError: PromptEvaluationError,
    KeyboardInterrupt: KeyboardInterrupt,
}
exception_bases = st.sampled_from(
    [ValueError, TypeError, KeyError, RuntimeError, RecursionError, ToolValidationError, *ESCAPES]
)
describe_modes = st.sampled_from(["ok", "raise", "non-str", "recurse", "subclass"])


def _make_exception(base: type[BaseException], str_mode: str, repr_mode: str, message: str) -> BaseException:
    cls = _exception_class(base, str_mode, repr_mode)
    if issubclass(cls, VisibilityExpansionRequired):
        return cls([message])
    return cls(message)


hostile_exceptions = st.builds(_make_exception, exception_bases, describe_modes, describe_modes, any_text)


class IntRender:
    def render(self) -> int:
        return 5


class RaisingRender:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def render(self) -> str:
        raise self.exc


odd_results = st.sampled_from(
    [
        ToolResult.ok(IntRender()),
        ToolResult(message=5, value=None),  # type: ignore[arg-type]
        ToolResult(message="m", success="yes"),  # type: ignore[arg-type]
        ToolResult.ok({"mean": float("nan")}),
        ToolResult(message="text \udc80"),
        ToolResult.error("failed \udc80 with sk-ant-api03-0123456789abcdefghij"),
        "not a ToolResult",
        None,
    ]
) | st.builds(lambda exc: ToolResult.ok(RaisingRender(exc)), hostile_exceptions)


@dataclass
class Plan:
    """What the hostile handler does once it has changed state: return this, or raise it."""

    outcome: object
    raises: bool


plans = st.builds(
    Plan, odd_results | st.just(ToolResult(message="fine", value=None)), st.just(False)
) | st.builds(Plan, hostile_exceptions, st.just(True))


@dataclass
class Free:
    x: object = None


class HostileRig:
    """A fresh session, filesystem and dispatcher around the one hostile tool, which follows the plan."""

    current: HostileRig | None = None  # the rig whose call is running: the tool is built only once

    def __init__(self) -> None:
        self.session = Session()
        self.fs = InMemoryFilesystem()
        self.events: list[ToolInvoked] = []
        self.session.bus.subscribe(ToolInvoked, self.events.append)
        self.plan = Plan(ToolResult(message="fine", value=None), raises=False)
        self.handler_ran = False
        self.dispatcher = ToolDispatcher(
            [HOSTILE_TOOL], session=self.session, resources=ResourceRegistry({Filesystem: self.fs})
        )

    def state(self) -> tuple[object, object]:
        return dict(self.session.state()), self.fs.snapshot()

    def check(self, call: ToolCall, plan: Plan) -> None:
        self.plan, self.handler_ran = plan, False
        HostileRig.current = self
        before = self.state()
        escaped: BaseException | None = None
        try:
            execution = self.dispatcher.execute(call)
        except BaseException as exc:  # checked against the contract just below
            escaped = exc
        assert len(self.events) == 1, "exactly one ToolInvoked per call"
        event = self.events[0]
        if escaped is not None:
            expected = _contract_escape(plan)
            assert self.handler_ran and expected is not None, f"escaped: {type(escaped).__name__}"
            assert isinstance(escaped, expected)
            assert not event.success
        else:
            assert execution.event is event
            assert isinstance(execution.message, str) and lone_surrogate(execution.message) is None
        assert isinstance(event.arguments, str) and isinstance(event.result.message, str)
        assert lone_surrogate(event.result.message) is None
        if event.success:
            assert self.handler_ran and self.state() != before
        else:
            assert self.state() == before, "a failed call must leave no trace"


def _hostile(params: Free, *, context: ToolContext) -> ToolResult[None]:
    rig = HostileRig.current
    assert rig is not None
    rig.handler_ran = True
    context.session[Entry].append(Entry("half-done", 0))
    fs = context.filesystem
    assert fs is not None
    fs.write_text("half-done.txt", "x")
    if rig.plan.raises:
        raise rig.plan.outcome  # type: ignore[misc]
    return rig.plan.outcome  # type: ignore[return-value]


HOSTILE_TOOL = Tool(name="hostile", description="Does what the plan says.", handler=_hostile)


def _contract_escape(plan: Plan) -> type[BaseException] | None:
    """What the contract lets out of execute() for this plan, if anything."""
    if plan.raises:
        return next(ESCAPES[base] for base in ESCAPES if isinstance(plan.outcome, base))
    value = plan.outcome.value if isinstance(plan.outcome, ToolResult) else None
    if isinstance(value, RaisingRender) and not isinstance(value.exc, Exception):
        return KeyboardInterrupt  # an interrupt while rendering is still an interrupt
    return None


@pytest.fixture(scope="module")
def quiet_dispatcher_logs() -> Iterator[None]:
    """Formatting 10,000 tracebacks would dominate the run; the hostile unit tests keep logging on."""
    logger = logging.getLogger("weakprompt.runtime")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    yield
    logger.setLevel(level)


@settings(settings.get_profile("fuzz"))
@given(arguments=hostile_arguments | hostile_texts, plan=plans, name=st.just("hostile") | any_text)
def test_hostile_mapping_and_text_arguments_never_escape(
    quiet_dispatcher_logs: None, arguments: object, plan: Plan, name: str
) -> None:
    HostileRig().check(ToolCall(id="h", name=name, arguments=arguments), plan)  # type: ignore[arg-type]


@settings(settings.get_profile("fuzz"))
@given(plan=plans, value=st.none() | st.integers() | any_text)
def test_hostile_handlers_never_escape_and_always_roll_back(
    quiet_dispatcher_logs: None, plan: Plan, value: object
) -> None:
    HostileRig().check(ToolCall(id="h", name="hostile", arguments={"x": value}), plan)  # type: ignore[dict-item]
